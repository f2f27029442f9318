"""What a stage returns when it finishes."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

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


@dataclass(frozen=True, slots=True)
class StageRecord:
    """A finished or stopped stage run as the ledger records it (not a skipped one): what the runner's guess at the
    size of a stage's next run reads (flows/stage_size.py, clients.stage.History)."""

    id: int  # the stage run's ledger row: later rows are later runs
    stage: str
    run_id: str
    status: str  # succeeded, failed, interrupted, or running (still, or killed)
    counts: dict[str, int] = field(default_factory=dict)  # none for a run that stopped without recording them
    settings: Any = None  # its declared settings sections as recorded (JSON-decoded, secrets redacted)
    code_version: str = ""
