"""Steps 1 and 6 of every stage: open a stage run in the ledger, and close it with counts or with the failure."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from contracts.errors import ChatmemError, StageError
from contracts.results import StageResult
from contracts.version import code_version
from staging.db import describe_storage_failure, is_storage_error
from staging.ledger import StageRun


class ItemsFailed(Exception):
    """Raised by a stage inside `stage_run` once it has written every item it could, when some items failed
    (segments the LLM refused, answered with bad JSON, or a 401): the stage run is recorded failed with its
    counts, the CLI exits 1 saying how many, and the next run, which skips no failed stage, retries those
    items (the ones that succeeded are cached and cost nothing)."""

    def __init__(self, message: str, *, rows_in: int, rows_out: int, counts: Mapping[str, int], notes: list[str]):
        super().__init__(message)
        self.rows_in, self.rows_out, self.counts, self.notes = rows_in, rows_out, dict(counts), list(notes)


@contextmanager
def stage_run(
    staging: sqlite3.Connection, *, stage: str, run_id: str, fingerprint: str, settings: Mapping[str, Any]
) -> Iterator[StageRun]:
    """Open the stage run; on any failure record it with the re-run command and raise a StageError.

    Chatmem's own errors (a ConfigError keeps exit code 2) and KeyboardInterrupt pass through as they are,
    after being recorded: the ledger must never say 'running' for a stage that stopped.
    """
    run = StageRun(
        staging,
        run_id=run_id,
        stage=stage,
        input_fingerprint=fingerprint,
        settings=settings,
        code_version=code_version(),
    )
    hint = f"chatmem stage {stage} --run-id {run_id}"
    try:
        yield run
    except ChatmemError as exc:
        run.fail(str(exc), hint)
        raise
    except ItemsFailed as exc:
        run.fail(str(exc), hint, rows_in=exc.rows_in, rows_out=exc.rows_out, counts=exc.counts, notes=exc.notes)
        raise StageError(stage, run_id, str(exc), hint) from None
    except Exception as exc:
        cause = describe_storage_failure(exc, staging) if is_storage_error(exc) else f"{type(exc).__name__}: {exc}"
        try:
            run.fail(cause, hint)
        except sqlite3.Error:
            pass  # a full disk cannot take the ledger row either; the row shows as interrupted once we exit
        raise StageError(stage, run_id, cause, hint) from exc
    except BaseException as exc:
        run.fail(f"{type(exc).__name__}: {str(exc) or 'stopped'}", hint)
        raise


def finish(
    run: StageRun,
    *,
    rows_in: int,
    rows_out: int,
    counts: Mapping[str, int],
    notes: list[str] | None = None,
    skipped: bool = False,
) -> StageResult:
    """Close the stage run with its counts and return the same facts as a StageResult."""
    run.succeed(rows_in=rows_in, rows_out=rows_out, counts=counts, notes=notes, skipped=skipped)
    return StageResult(
        stage=run.stage,
        run_id=run.run_id,
        status="skipped" if skipped else "succeeded",
        rows_in=rows_in,
        rows_out=rows_out,
        counts=dict(counts),
        notes=list(notes or []),
    )
