"""What `chatmem run` decides before Prefect starts (Prefect's start-up costs seconds to tens of seconds):

    refuse_bad_exports(paths, settings, force_format)   every export unreadable -> one ExportError line, exit 1
    finish_if_unchanged(settings, paths, stages)        every stage unchanged -> the run recorded, no Prefect
    with announce_start(data_dir): ...                  a run is starting here (`starting(data_dir)` reads it)

A missing path is an unreadable export like any other: alone, it is refused here; among readable exports, the
run goes ahead, the ingest stage records it as failed (`PATH: no such file`) and the command exits 1.

Between the command and the run's first ledger row pass the checks, Prefect's import and its server's start
(seconds to tens of seconds on a busy machine), during which a first run has no staging.db at all. The command
holds `<data_dir>/run.starting` (an flock, released by the kernel however the process ends) for that time and
the whole run, so that `chatmem staging runs` says a run is starting instead of "nothing in the data dir".

The second applies the runner's one skip rule (flows/stage_runner.py: same input fingerprint as the stage's
latest attempt, which succeeded or was skipped) to every selected stage in order, before any runs. Each skipped
stage leaves the state the next one's fingerprint reads exactly as it was, so "every stage would be skipped"
is known up front. Then the run is written to the ledger as the pipeline would write it (a runs row, one
skipped stage run per stage with its note, closed as succeeded) under the data dir's lock, and no flow runs:
Prefect's UI does not show such a run, `chatmem staging runs` does. Anything else (a stage to run, --force, a
resumed run whose stages are not all done) goes to the pipeline, which decides again stage by stage. A re-run of
stages of a run R that are all done there and unchanged is such a no-op run too: R's own row and figures stay.
"""

from __future__ import annotations

import fcntl
import json
import os
import sqlite3
from collections.abc import Iterator
from contextlib import closing, contextmanager, suppress
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from contracts.errors import ExportError, ExportsError
from flows.export_paths import absolute

if TYPE_CHECKING:
    from contracts.results import StageResult
    from contracts.settings import Settings
    from flows.registry import StageSpec
    from staging.ledger import Attempt


def refuse_bad_exports(
    paths: list[str | Path],
    settings: Settings,
    force_format: str | None,
    nothing_found: dict[str | Path, str] | None = None,
) -> None:
    """Raise an ExportError when no export can be read at all (empty, not an export, a zip with no conversations
    file, ...), naming each file with why (ExportsError: the first 10, then how many more): nothing is started or
    written for such a run. With one readable export the
    run goes ahead and the ingest stage reports the others (the rest of a run still arrives). A folder in
    `nothing_found` (one given in which the search found no export) is refused with what the search said."""
    from ingest.detect import detect_format
    from ingest.sources import open_export, read_head

    errors: list[ExportError] = []
    for path in paths:
        if nothing_found and path in nothing_found:
            errors.append(ExportError(str(path), nothing_found[path]))
            continue
        try:
            opened = open_export(
                Path(path),
                max_member_bytes=settings.ingest.max_zip_member_bytes,
                max_ratio=settings.ingest.max_zip_ratio,
                digest=False,
            )
            if force_format is None:
                detect_format(read_head(opened), name=opened.path)
            else:
                _refuse_other_format(read_head(opened), opened.path, force_format)
        except ExportError as exc:
            errors.append(exc)
        else:
            return
    if len(errors) > 1:  # each named with why: all can be fixed before the next try, not one per try
        raise ExportsError(errors)
    if errors:
        raise errors[0]


# The keys that make a detected format certain (ingest/detect.py's first-record keys): a file that holds them is
# that format, and read as another it yields nothing (every record quarantined).
_CERTAIN_KEYS = {
    "chatgpt": (b'"mapping"', b'"current_node"'),
    "claude": (b'"chat_messages"',),
    "librechat": (b'"conversationId"',),
}


def _refuse_other_format(head: bytes, path: str, force_format: str) -> None:
    """--format names one format and detection is certain the file is another: the same line the ingest stage
    would end with, before Prefect starts. Anything less certain (no format recognised, a guess from weaker keys,
    an empty list) is left to the ingest stage, as before."""
    from ingest.detect import detect_format

    try:
        detected = detect_format(head, name=path)
    except ExportError:
        return
    keys = _CERTAIN_KEYS.get(detected, ())
    if detected != force_format and any(key in head for key in keys):
        raise ExportError(
            path,
            f"nothing could be read as {force_format} (its first record is a {detected} conversation);"
            f" it looks like {detected}: run with --format {detected} (or without --format)",
        )


@dataclass(frozen=True)
class Unchanged:
    stage: StageSpec
    fingerprint: str
    latest: Attempt


def _plan(
    settings: Settings, exports: list[str], stages: list[str], force_format: str | None = None
) -> list[Unchanged] | None:
    """Every selected stage with its fingerprint and the attempt it matches, or None when one would run."""
    from flows.fingerprint import input_fingerprint
    from flows.registry import STAGES
    from flows.stage_runner import unchanged
    from staging.archive import open_archive
    from staging.ledger import latest_attempt, open_staging

    specs = {s.name: s for s in STAGES}
    plan: list[Unchanged] = []
    with closing(open_archive(settings.archive_path)) as archive, closing(open_staging(settings.staging_path)) as db:
        for name in stages:
            stage = specs[name]
            fingerprint = input_fingerprint(stage, settings, archive, db, exports, force_format)
            latest = latest_attempt(db, name)
            if latest is None or not unchanged(latest, fingerprint):
                return None
            plan.append(Unchanged(stage, fingerprint, latest))
    return plan


def finish_if_unchanged(
    settings: Settings,
    exports: list[str | Path],
    stages: list[str],
    force_format: str | None = None,
    *,
    rerun_of: str | None = None,
) -> tuple[str, list[StageResult]] | None:
    """(run id, the skipped stages' results) when every stage is unchanged, the run recorded; else None.

    `rerun_of`: a re-run of stages of that run (`chatmem stage X --run-id R`, `chatmem run --run-id R`). When each
    of them is done in R already (its latest stage run there succeeded or was skipped) and unchanged, re-running
    them would change nothing but R's row: its status, finish time and stage figures would become the no-op's. So
    R is left as it was and the check is recorded as a no-op run of its own, as a no-op `chatmem run` is (`staging
    runs` folds those). A stage not done in R yet goes to the pipeline: skipped or not, it finishes R."""
    if not (settings.archive_path.exists() and settings.staging_path.exists()):
        return None  # a first run: everything runs
    from contracts.version import code_version
    from flows.stage_runner import record_unchanged
    from staging.ledger import close_run, new_run_id, open_run, open_staging, stages_done
    from staging.lock import data_dir_lock

    paths = [str(absolute(p)) for p in exports]  # as run_pipeline records them
    run_id = new_run_id()
    with data_dir_lock(settings.data_dir, run_id, wait_s=settings.pipeline.lock_wait_s):
        try:
            if rerun_of is not None:
                with closing(open_staging(settings.staging_path)) as staging:
                    if not stages_done(staging, rerun_of, stages):
                        return None
            plan = _plan(settings, paths, stages, force_format)
        except sqlite3.Error:
            return None  # the pipeline meets the same problem and reports it with its own words
        if plan is None:
            return None
        with closing(open_staging(settings.staging_path)) as staging:
            open_run(
                staging,
                stages=stages,
                exports=paths,
                settings=settings.public_dump(),
                code_version=code_version(),
                run_id=run_id,
            )
            results = [record_unchanged(staging, p.stage, run_id, settings, p.fingerprint, p.latest) for p in plan]
            close_run(staging, run_id)
    return run_id, results


STARTING_NAME = "run.starting"


@contextmanager
def announce_start(data_dir: Path) -> Iterator[None]:
    """Hold `<data_dir>/run.starting` (pid, since) for the block; quietly nothing when it cannot be written or
    another command holds it (the data dir's own lock decides which run goes ahead)."""
    path = data_dir / STARTING_NAME
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError:
        yield
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            yield  # another command is starting a run here
            return
        with suppress(OSError):
            info = {"pid": os.getpid(), "since": datetime.now(UTC).isoformat(timespec="seconds")}
            os.ftruncate(fd, 0)
            os.pwrite(fd, json.dumps(info).encode(), 0)
        try:
            yield
        finally:
            with suppress(OSError):
                path.unlink()  # under the lock: a reader that opened it before finds it unlocked, i.e. not starting
    finally:
        os.close(fd)


def starting(data_dir: Path) -> dict[str, object] | None:
    """What `announce_start` says while a command holds it ({"pid", "since"}), else None."""
    try:
        fd = os.open(data_dir / STARTING_NAME, os.O_RDONLY)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            try:
                return dict(json.loads(os.pread(fd, 4096, 0) or b"{}"))
            except (OSError, ValueError, TypeError):
                return {}
        except OSError:
            return None
        return None
    finally:
        os.close(fd)


def describe_starting(info: dict[str, object]) -> str:
    """`a run is starting (pid P, since T)`."""
    since = str(info.get("since") or "")[:19].replace("T", " ")
    parts = (f"pid {info['pid']}" if info.get("pid") else "", f"since {since} UTC" if since else "")
    about = ", ".join(part for part in parts if part)
    return f"a run is starting{f' ({about})' if about else ''}"
