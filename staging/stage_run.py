"""The runner's bookkeeping around one stage run: open its ledger row, close it with counts or with the failure.

Only the runner (flows/stage_runner.py) uses it: a stage module never touches the ledger (an import-linter
contract in pyproject.toml says so); it returns an Outcome (clients/stage.py) and the runner records it here.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from contracts.errors import ChatmemError, StageError
from contracts.version import code_version
from staging.db import describe_storage_failure, is_storage_error
from staging.ledger import StageRun
from staging.liveness import finish_command, interrupt_error


class ItemsFailed(Exception):
    """Raised inside `stage_run` by the runner when a stage returned an error after writing every item it could
    (segments the LLM refused, files that could not be read): the stage run is recorded failed with its counts,
    the CLI exits 1 with the hint, and the next run, which skips no failed stage, retries those items (the ones
    that succeeded are cached and cost nothing)."""

    def __init__(
        self,
        message: str,
        *,
        rows_in: int,
        rows_out: int,
        counts: Mapping[str, int],
        notes: list[str],
        hint: str | None = None,
    ):
        super().__init__(message)
        self.rows_in, self.rows_out, self.counts, self.notes = rows_in, rows_out, dict(counts), list(notes)
        self.hint = hint


@contextmanager
def stage_run(
    staging: sqlite3.Connection, *, stage: str, run_id: str, fingerprint: str, settings: Mapping[str, Any]
) -> Iterator[StageRun]:
    """Open the stage run; on any failure record it with the command that finishes the run and raise a StageError.

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
    # what finishes the run (this stage and every later one it selected), not this stage alone: re-run alone, a
    # failed first stage would leave the run failed, its later stages never run
    hint = finish_command(staging, run_id, stage)
    try:
        yield run
    except StageError as exc:  # the stage's own words: its cause and its hint, as the CLI prints them
        if not exc.hint_given:
            exc.rehint(hint)
        run.fail(exc.cause, exc.rerun_hint)
        raise
    except ChatmemError as exc:
        run.fail(str(exc), hint)
        raise
    except ItemsFailed as exc:
        said = exc.hint or hint
        run.fail(str(exc), said, rows_in=exc.rows_in, rows_out=exc.rows_out, counts=exc.counts, notes=exc.notes)
        raise StageError(stage, run_id, str(exc), said) from None
    except Exception as exc:
        cause = describe_storage_failure(exc, staging) if is_storage_error(exc) else f"{type(exc).__name__}: {exc}"
        try:
            run.fail(cause, hint)
        except sqlite3.Error:
            pass  # a full disk cannot take the ledger row either; the row shows as interrupted once we exit
        raise StageError(stage, run_id, cause, hint) from exc
    except BaseException as exc:
        run.fail(interrupt_error(exc) if isinstance(exc, KeyboardInterrupt) else f"{type(exc).__name__}: {exc}", hint)
        raise
