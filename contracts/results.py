"""What a stage returns when it finishes."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from contracts.base import StrictBase


class StageResult(StrictBase):
    """The outcome of one stage run, as recorded in the ledger."""

    stage: str = Field(description="Stage name, one of STAGE_ORDER.")
    run_id: str = Field(description="The pipeline run this stage run belongs to.")
    status: Literal["succeeded", "skipped"] = Field(description="skipped: nothing new to do.")
    rows_in: int = Field(ge=0, description="Input records read.")
    rows_out: int = Field(ge=0, description="Rows written (inserted or updated).")
    counts: dict[str, int] = Field(default_factory=dict, description="Stage-specific counters.")
    notes: list[str] = Field(default_factory=list, description="Warnings a user should see.")
