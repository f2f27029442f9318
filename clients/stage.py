"""The stage contract: a stage is a function of a `StageContext` and returns an `Outcome`.

    outcome = module.run(ctx)          # the stage: reads, computes, validates, writes, counts
    flows/stage_runner.py              # the runner: everything else

The runner (flows/stage_runner.py) opens the stage run in the ledger, computes the stage's one input fingerprint
(its code, its declared settings sections, the state of what it reads: flows/fingerprint.py), skips the stage
when that matches its last success, builds the context, calls the stage, and records what it returns or raises.
A stage module never writes the ledger and never computes a fingerprint (an import-linter contract in
pyproject.toml keeps staging.ledger and staging.stage_run out of every stage package).

The context's settings hold only the sections the stage declares in its registry entry (flows/registry.py,
`settings_sections`): any other section reads as an `UndeclaredSection`, which fails on first use naming the
stage and the section, so the fingerprint cannot miss a setting the stage's output depends on. The top-level
paths (data_dir and what derives from it) and the `runner` section (where batches run, never what they compute)
are always there.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import NoReturn

from pydantic import BaseModel

from clients.batches import MapBatches
from clients.progress import ProgressFactory
from contracts.results import StageRecord
from contracts.settings import Settings

ALWAYS = ("runner", "pipeline")
"""Sections every stage may read without declaring them: how the pipeline runs, never what a stage computes."""


class UndeclaredSettingsError(Exception):
    """A stage read a settings section its registry entry does not declare (a bug in the stage or its entry)."""


class UndeclaredSection:
    """Stands in for a settings section a stage did not declare: any attribute read fails, naming both."""

    def __init__(self, stage: str, section: str) -> None:
        object.__setattr__(self, "_where", (stage, section))

    def __getattr__(self, name: str) -> NoReturn:
        if name.startswith("__"):  # copy, pickle and repr probe dunders: those are not settings reads
            raise AttributeError(name)
        stage, section = object.__getattribute__(self, "_where")
        raise UndeclaredSettingsError(
            f"stage {stage!r} read settings.{section}.{name}, but its registry entry (flows/registry.py) does not"
            f" declare the {section!r} settings section: add it to settings_sections, so that the stage's"
            " fingerprint covers it"
        )

    def __repr__(self) -> str:
        stage, section = object.__getattribute__(self, "_where")
        return f"<settings section {section!r}: not declared by stage {stage!r}>"


def sections_of(settings: Settings) -> tuple[str, ...]:
    """The names of the Settings fields that are sections (pydantic models), in declaration order."""
    return tuple(name for name in type(settings).model_fields if isinstance(getattr(settings, name), BaseModel))


def declared_only(settings: Settings, stage: str, declared: Iterable[str]) -> Settings:
    """A copy of `settings` in which every section `stage` does not declare (nor ALWAYS) is an UndeclaredSection."""
    keep = {*declared, *ALWAYS}
    hidden = {name: UndeclaredSection(stage, name) for name in sections_of(settings) if name not in keep}
    return settings.model_copy(update=hidden)


@dataclass(frozen=True)
class StageContext:
    """What a stage is handed: who it is, its declared settings, the two databases, and its helpers."""

    stage: str
    run_id: str
    settings: Settings = field(repr=False)  # declared sections only (declared_only)
    archive: sqlite3.Connection = field(repr=False)
    staging: sqlite3.Connection = field(repr=False)
    stage_run_id: int = 0  # this stage run's ledger row: what some rows are keyed by (ingest's files, load's batches)
    progress: ProgressFactory | None = None  # set for a stage declared with a progress unit
    map_batches: MapBatches | None = None  # set for a stage declared with batches, when a runner is configured
    exports: tuple[Path, ...] = ()  # the run's export files (a stage declared with exports)
    force_format: str | None = None
    force: bool = False  # --force: the stage redoes what its own caches would skip (ingest's sha256, segment's)
    # the command that finishes the run from this stage (the runner reads it from the ledger: staging.liveness.
    # finish_command); a stage does not know the run's other stages
    finish: str = ""

    @property
    def rerun(self) -> str:
        """The command to give in a hint: the one that finishes the run (this stage and the later ones it
        selected), or this stage alone for a context built without it (a test's)."""
        return self.finish or f"chatmem stage {self.stage} --run-id {self.run_id}"


@dataclass(frozen=True, slots=True)
class History:
    """What the ledger says since the stage's last success: what its module's `large_run(ctx, history) -> str`
    guesses the run's size from (flows/stage_size.py builds it; a stage never reads the ledger itself)."""

    last: StageRecord  # the stage's last success
    since: tuple[StageRecord, ...]  # every stage run after it but skipped ones (this run's too), oldest first
    latest: Mapping[str, StageRecord]  # each stage's newest success

    def added_since(self, stage: str, *counts: str) -> int:
        """The sum of these counts over `stage`'s runs since the last success of this stage (a failed run's too:
        one whose items partly failed wrote the rest)."""
        return sum(done.counts.get(name, 0) for done in self.since if done.stage == stage for name in counts)

    def latest_count(self, stage: str, count: str) -> int:
        """`count` in `stage`'s newest success (0 when it has none)."""
        found = self.latest.get(stage)
        return found.counts.get(count, 0) if found is not None else 0


@dataclass
class Outcome:
    """What a stage returns; the runner records it as the stage run's row and turns it into a StageResult.

    `skipped`: there was nothing to do (recorded as skipped). `error`: some items failed after the stage wrote
    every other one; the stage run is recorded failed with these counts, the CLI exits 1 with `hint` (default:
    the re-run command), and the next run retries them. `unfinished`: work left for later (a budget); the stage
    succeeded, but the next run must not skip it as unchanged."""

    rows_in: int = 0
    rows_out: int = 0
    counts: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    skipped: bool = False
    error: str | None = None
    hint: str | None = None
    unfinished: bool = False
