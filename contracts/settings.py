"""Settings: one pydantic-settings object with a section per stage.

Nothing reads the environment at import time: call `Settings()` (or `load_settings`) when you need values.
Environment variables use the prefix `CHATMEM_` and `__` between section and field, for example
`CHATMEM_INGEST__BATCH_SIZE=5000`; `CHATMEM_DATA_DIR` sets the data directory.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from pydantic_settings import BaseSettings, SettingsConfigDict

DEFAULT_DATA_DIR = Path(".chatmem")


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
    max_raw_quarantine_bytes: int = Field(
        default=1_000_000,
        ge=1024,
        description="Raw text kept per quarantine row; larger records are truncated with a marker.",
    )


class PipelineSettings(BaseModel):
    """How the Prefect pipeline runs."""

    model_config = ConfigDict(extra="forbid")

    quiet: bool = Field(default=False, description="Hide progress bars and default announcements.")


class Settings(BaseSettings):
    """All of chatmem's settings."""

    model_config = SettingsConfigDict(
        env_prefix="CHATMEM_", env_nested_delimiter="__", extra="forbid", validate_default=True
    )

    data_dir: Path = Field(
        default=DEFAULT_DATA_DIR,
        description="Directory holding archive.db and staging.db (env CHATMEM_DATA_DIR).",
    )
    ingest: IngestSettings = Field(default_factory=IngestSettings, description="Ingest stage settings.")
    pipeline: PipelineSettings = Field(default_factory=PipelineSettings, description="Pipeline settings.")

    @property
    def archive_path(self) -> Path:
        return self.data_dir / "archive.db"

    @property
    def staging_path(self) -> Path:
        return self.data_dir / "staging.db"

    def public_dump(self) -> dict[str, Any]:
        """Settings as JSON-able data for the run ledger. Secret fields (none yet) must be excluded here."""
        return self.model_dump(mode="json")
