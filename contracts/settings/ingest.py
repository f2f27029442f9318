"""The ingest stage's settings."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class IngestSettings(BaseModel):
    """How export files are read and written to the archive."""

    model_config = ConfigDict(extra="forbid")

    batch_size: int = Field(default=2000, ge=1, description="Conversations written to archive.db per transaction.")
    max_zip_member_bytes: int = Field(
        default=8 * 1024**3,
        ge=1,
        description="Largest uncompressed size accepted for one zip member (zip-bomb guard).",
    )
    max_zip_ratio: float = Field(
        default=200.0,
        gt=1,
        description="Largest accepted uncompressed/compressed ratio for a zip member (zip-bomb guard).",
    )
