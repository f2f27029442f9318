"""The ingest stage: export files in, archive.db rows out, every file's outcome in the ledger.

The steps (the runner, flows/stage_runner.py, keeps the ledger): read the inputs (the export files, hashed);
compute (parse, pure); validate (parsers build contract models); write in batches of whole conversations
(idempotent upserts), and each file's outcome (`ingest_files`); return the counts, and the files that could not
be read. A file that failed beside one that arrived does not fail the stage (the run goes on, the CLI exits 1
naming it, and the next run reads it again: `unfinished`); when nothing arrived, the stage is an error naming them
(the runner records it failed, with the hint to fix or remove them).

A file whose bytes were already ingested completely (same sha256) is skipped at no cost. A file that breaks
partway (truncated JSON) keeps every complete conversation before the break and gets a quarantine row for
the rest; a file that cannot be read at all is a one-line error naming it, and the other files still arrive.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from clients.progress import ProgressFactory, bar
from clients.stage import Outcome, StageContext
from contracts.errors import ExportError, MalformedExportError
from contracts.records import ExportSource, QuarantineRecord
from contracts.settings import Settings
from ingest.batches import Batch, BatchStats, iter_batches
from ingest.detect import detect_format
from ingest.jsonl import continued
from ingest.overlap import prefetched
from ingest.raw_skip import RawLookup
from ingest.sources import OpenedExport, file_sha256, open_export, read_head
from ingest.supersede import superseded
from ingest.timestamps import describe_dropped
from ingest.utf8_repair import latin1_hint
from staging.archive import END_OF_FILE, ArchiveWriter
from staging.archive_rows import to_rows
from staging.archive_update import WriteCounts
from staging.ingest_files import REMOVED, failed_before, record_ingest_file

log = logging.getLogger(__name__)

STAGE = "ingest"


@dataclass
class FileOutcome:
    path: str
    status: str
    sha256: str | None = None
    format: str | None = None
    messages_read: int = 0
    counts: WriteCounts = field(default_factory=WriteCounts)
    known_by_bytes: int = 0  # conversations the archive held as these bytes: counted, not parsed
    detail: str | None = None
    timestamps_dropped: Counter[str] = field(default_factory=Counter)
    items: int = 0  # what the parser yielded and was written (a second pass over the same bytes skips them)
    taken: int = 0  # messages whose id another conversation of the archive holds: quarantined, not written
    utf8_replaced: int = 0  # invalid UTF-8 sequences the second pass replaced with U+FFFD
    utf8_first_bad: bytes = b""  # the bytes around the first of them
    delivered: set[str] = field(default_factory=set)  # the conversation ids it held (ingest/supersede.py)


EMPTY_EXPORT = "no conversation in it (an empty export)"


def run(ctx: StageContext) -> Outcome:
    """Ingest the run's exports into archive.db. `ctx.force` (`chatmem run --force`) reads a dump again even
    when its bytes were already ingested (after a parser fix: idempotent upserts)."""
    writer = ArchiveWriter(ctx.archive)
    outcomes: list[FileOutcome] = []
    writer.begin_bulk()  # an empty archive: indexes built once at the end (a killed run: on the next open)
    cut_before = writer.partial_sources()  # files cut short, as they stood before this run wrote
    for path in ctx.exports:
        if not path.exists() and failed_before(ctx.staging, ctx.run_id, str(path)):
            # The re-run hint says "fix or remove the file": removed, it is left out of this run, not failed.
            outcome = FileOutcome(str(path), "skipped", detail=REMOVED)
        else:
            outcome = _ingest_one(writer, path, ctx.settings, ctx.force_format, ctx.progress, ctx.force)
        outcomes.append(outcome)
        _record(ctx, outcome)
    whole = [(o.path, o.delivered) for o in outcomes if o.status == "ingested"]
    given = {o.path for o in outcomes} | {str(p) for p in ctx.exports}
    for cut, detail in superseded(ctx.staging, cut_before, whole, given):
        # a file cut short that a whole re-export read now holds entirely: said, and no longer a failure to list
        _record(ctx, FileOutcome(cut, "skipped", detail=detail))
    writer.end_bulk()
    return _outcome(ctx, outcomes, len(writer.written))


def _record(ctx: StageContext, outcome: FileOutcome) -> None:
    record_ingest_file(
        ctx.staging,
        run_id=ctx.run_id,
        stage_run_id=ctx.stage_run_id,
        path=outcome.path,
        sha256=outcome.sha256,
        format=outcome.format,
        status=outcome.status,
        conversations=outcome.counts.conversations,
        messages_read=outcome.messages_read,
        messages_inserted=outcome.counts.inserted,
        messages_updated=outcome.counts.updated,
        messages_unchanged=outcome.counts.unchanged,
        messages_retired=outcome.counts.retired,
        quarantined=outcome.counts.quarantined,
        detail=outcome.detail,
    )


def _outcome(ctx: StageContext, outcomes: list[FileOutcome], written: int) -> Outcome:
    """The stage's counts and notes over every file. A file that failed does not hold the others back: the run goes
    on with what arrived (the summary names the failed file and the command exits 1, flows/cli_run_summary.py; `serve
    --watch` tries it again next time). Only when every file failed is the stage an error: there is nothing to go
    on with. `written`: the distinct conversations written, not the files' counts summed (a conversation two files
    hold is written by each)."""
    total = WriteCounts()
    for outcome in outcomes:
        total.add(outcome.counts)
    counts = {
        "files": len(outcomes),
        "files_skipped": sum(o.status == "skipped" for o in outcomes),
        "files_failed": sum(o.status == "failed" for o in outcomes),
        "files_partial": sum(o.status == "partial" for o in outcomes),
        "conversations_written": written,
        "messages_read": sum(o.messages_read for o in outcomes),
        "conversations_known_by_bytes": sum(o.known_by_bytes for o in outcomes),
        "messages_inserted": total.inserted,
        "messages_updated": total.updated,
        "messages_unchanged": total.unchanged,
        "messages_retired": total.retired,
        "quarantined": total.quarantined,
        "timestamps_dropped": sum(sum(o.timestamps_dropped.values()) for o in outcomes),
    }
    notes = [f"{o.path}: {o.detail}" for o in outcomes if o.detail]
    notes += [f"{o.path}: {describe_dropped(o.timestamps_dropped)}" for o in outcomes if o.timestamps_dropped]
    failed = [o for o in outcomes if o.status == "failed"]
    # Nothing arrived: every file failed, or failed with the rest removed after failing (the hint's "remove the
    # file"): a stage of nothing would send the run on with no data while a file still fails
    stuck = bool(failed) and all(o.status == "failed" or o.detail == REMOVED for o in outcomes)
    return Outcome(
        rows_in=counts["messages_read"],
        rows_out=total.inserted + total.updated + total.retired,
        counts=counts,
        notes=notes,
        skipped=all(o.status == "skipped" for o in outcomes),
        error="; ".join(f"{o.detail}" for o in failed) if stuck else None,
        hint=f"fix or remove {_named(failed)}, then: {ctx.rerun}" if stuck else None,
        # The failed files, and those cut short, are read again by the next run, not skipped as unchanged: a damage
        # that stands is said (and exits 1) at every run, as a cron job sees it, not only at the first
        unfinished=bool(failed) or any(o.status == "partial" for o in outcomes),
    )


def _named(failed: list[FileOutcome]) -> str:
    """The file(s) a re-run hint asks to fix: run again unchanged, they would only fail again."""
    return failed[0].path if len(failed) == 1 else f"the {len(failed)} files named"


def _ingest_one(
    writer: ArchiveWriter,
    path: Path,
    settings: Settings,
    force_format: str | None,
    progress: ProgressFactory | None,
    force: bool = False,
) -> FileOutcome:
    opened: OpenedExport | None = None
    try:
        opened = open_export(
            path,
            max_member_bytes=settings.ingest.max_zip_member_bytes,
            max_ratio=settings.ingest.max_zip_ratio,
        )
        fmt = force_format or detect_format(read_head(opened), name=opened.path)
        # The skip is keyed by the bytes and the format they were read as: read with a wrong --format, a file
        # is read again when the right format (or detection) names another.
        done = writer.source_status(opened.sha256) == "complete" and writer.source_format(opened.sha256) == fmt
        if done and not force:
            log.info("ingest - %s already ingested (same sha256, read as %s), skipped", opened.path, fmt)
            return FileOutcome(opened.path, "skipped", opened.sha256, detail=None)
    except ExportError as exc:
        log.error("ingest - %s", exc)
        # The bytes' sha256 all the same (a zip cut short, a corrupt one), as `serve --watch` reads them to wait for
        # a change: the opened export's (an unzipped export folder's has the sha256 of its conversations file)
        sha256 = opened.sha256 if opened is not None else file_sha256(path)
        return FileOutcome(str(path), "failed", sha256=sha256, detail=str(exc))

    source = ExportSource(path=opened.path, sha256=opened.sha256, format=fmt, size_bytes=opened.size_bytes)
    source_id = writer.begin_source(source)
    outcome = FileOutcome(opened.path, "ingested", opened.sha256, fmt)
    notes = [f"side files present, not parsed: {', '.join(opened.side_files)}"] if opened.side_files else []
    try:
        _parse_and_write(writer, opened, source_id, fmt, settings, outcome, progress, repair=False, force=force)
    except MalformedExportError as exc:
        if getattr(exc, "invalid_utf8", False):
            # Second pass over the whole file with invalid bytes replaced. What the first pass wrote (the records
            # before the bad bytes) is stored and counted in `outcome`: the second pass reads past it, so that the
            # file's counts are those of one read (the archive would be the same either way: upserts).
            whole = False
            try:
                _parse_and_write(writer, opened, source_id, fmt, settings, outcome, progress, repair=True, force=force)
                whole = True
            except MalformedExportError as again:
                exc = again  # cut short as well: the note stays beside why the rest is unreadable
            notes.append(_replaced_note(outcome))
            if whole:
                writer.finish_source(source_id, partial=False, notes=notes)
                outcome.detail = "; ".join(notes) or None
                return outcome
        if outcome.messages_read == 0 and outcome.counts.conversations == 0 and outcome.counts.unchanged == 0:
            detail = str(exc) + _other_format(opened, fmt, force_format)
            writer.finish_source(source_id, partial=True, notes=[*notes, detail])
            return FileOutcome(opened.path, "failed", opened.sha256, fmt, detail=detail)
        rest = QuarantineRecord(locator=END_OF_FILE, reason=f"unreadable remainder: {exc.problem}", raw="")
        counts, _ = writer.write_batch(source_id, fmt, [], [rest])
        outcome.counts.add(counts)
        outcome.status = "partial"
        notes.append(f"partial: {exc.problem}")
        writer.finish_source(source_id, partial=True, notes=notes)
        outcome.detail = "; ".join(notes)
        return outcome
    except ExportError as exc:
        detail = str(exc) + _other_format(opened, fmt, force_format)
        writer.finish_source(source_id, partial=True, notes=[*notes, detail])
        return FileOutcome(opened.path, "failed", opened.sha256, fmt, detail=detail)
    if opened.part_problems:
        # Parts of a split export that could not be read: each quarantined with its reason, the rest arrived
        left = [
            QuarantineRecord(locator=name, reason=f"part not read: {why}", raw="") for name, why in opened.part_problems
        ]
        counts, _ = writer.write_batch(source_id, fmt, [], left)
        outcome.counts.add(counts)
        notes.append("parts not read: " + "; ".join(f"{name} ({why})" for name, why in opened.part_problems))
        if not _nothing_read(outcome):
            outcome.status = "partial"
            writer.finish_source(source_id, partial=True, notes=notes)
            outcome.detail = "; ".join(notes)
            return outcome
    if _nothing_read(outcome):
        # Every record quarantined: not an ingested file. Its quarantine rows stay (`staging failures`), the
        # source stays unfinished so that a re-run reads it again, and the file counts as failed (exit 1).
        detail = _nothing_read_reason(opened, fmt, force_format, outcome.counts.quarantined)
        writer.finish_source(source_id, partial=True, notes=[*notes, detail])
        return FileOutcome(opened.path, "failed", opened.sha256, fmt, counts=outcome.counts, detail=detail)
    if outcome.taken:
        notes.append(_taken_note(outcome))
    if _empty(outcome):
        notes.append(EMPTY_EXPORT)  # a valid file of no conversation ("[]"): said, so a wrong file is noticed
    writer.finish_source(source_id, partial=False, notes=notes)
    outcome.detail = "; ".join(notes) or None
    return outcome


def _replaced_note(outcome: FileOutcome) -> str:
    """`2 invalid UTF-8 byte sequence(s) replaced with U+FFFD`, and for a file saved in Latin-1 what it is and what
    to do: the cold try's Latin-1 file got the count alone ("München" arrived as "M?nchen", and why was not said)."""
    said = f"{outcome.utf8_replaced} invalid UTF-8 byte sequence(s) replaced with U+FFFD"
    hint = latin1_hint(outcome.utf8_first_bad)
    return f"{said}: {hint}" if hint else said


def _empty(outcome: FileOutcome) -> bool:
    counts = outcome.counts
    return outcome.messages_read == 0 and outcome.known_by_bytes == 0 and not any(vars(counts).values())


def _nothing_read(outcome: FileOutcome) -> bool:
    """Every record quarantined by the parser: the wrong --format, or no export. Messages quarantined because their ids
    are taken were read (`_taken_note`)."""
    counts = outcome.counts
    nothing = counts.conversations == 0 and counts.unchanged == 0 and counts.updated == 0
    return counts.quarantined > 0 and nothing and not outcome.taken


def _taken_note(outcome: FileOutcome) -> str:
    """Messages whose ids already belong to other conversations (the same messages under another conversation id):
    quarantined, never overwritten. When that is all the file held, it says so: nothing new, not a failure."""
    counts = outcome.counts
    if counts.conversations or counts.inserted or counts.updated or counts.retired or counts.unchanged:
        return (
            f"{outcome.taken} message(s) already in the archive under other conversation ids: quarantined, not written"
        )
    return (
        f"nothing new written: all {outcome.taken} message(s) are already in the archive under other conversation ids"
        " (quarantined, not written again)"
    )


def _nothing_read_reason(opened: OpenedExport, fmt: str, force_format: str | None, quarantined: int) -> str:
    """One line: nothing could be read as `fmt`, and the --format to use when detection names another."""
    reason = f"{opened.path}: nothing could be read as {fmt} ({quarantined} record(s) quarantined)"
    return reason + _other_format(opened, fmt, force_format)


def _other_format(opened: OpenedExport, fmt: str, force_format: str | None) -> str:
    """'; it looks like jsonl: run with --format jsonl (or without --format)' for a file that failed read as the
    `--format` given while detection names another (a JSONL file read with --format chatgpt failed as JSON
    "trailing garbage", nothing more); '' without --format or when detection agrees."""
    if force_format is None:
        return ""
    try:
        detected = detect_format(read_head(opened), name=opened.path)
    except ExportError:
        return f"; is --format {force_format} right for this file?"
    if detected != fmt:
        return f"; it looks like {detected}: run with --format {detected} (or without --format)"
    return ""


def _parse_and_write(
    writer: ArchiveWriter,
    opened: OpenedExport,
    source_id: int,
    fmt: str,
    settings: Settings,
    outcome: FileOutcome,
    progress: ProgressFactory | None,
    *,
    repair: bool,
    force: bool = False,
) -> None:
    """Parse one stream and write it in batches; the UTF-8 replacements made go to `outcome.utf8_replaced`.

    Conversations whose bytes the archive already holds as rows are counted, not parsed (ingest/raw_skip.py),
    unless `force` (a dump read again on purpose is parsed whole)."""
    stats = BatchStats()
    lookup = None if force else RawLookup(fmt, writer.known_raw())
    skip = outcome.items  # read and written by a first pass over the same bytes

    def batches() -> Iterator[Batch]:
        return iter_batches(
            opened, fmt, batch_size=settings.ingest.batch_size, repair=repair, stats=stats, lookup=lookup, skip=skip
        )

    try:
        _write_batches(writer, batches, opened, source_id, fmt, outcome, progress)
    finally:  # also when the repaired bytes fail further on (a file cut short): the note says them all the same
        outcome.utf8_replaced, outcome.utf8_first_bad = stats.utf8_replacements, stats.utf8_first_bad


def _write_batches(
    writer: ArchiveWriter,
    batches: Callable[[], Iterator[Batch]],
    opened: OpenedExport,
    source_id: int,
    fmt: str,
    outcome: FileOutcome,
    progress: ProgressFactory | None,
) -> None:
    with bar(progress, opened.path, opened.size_bytes) as advance:
        reported = 0
        # The next batch is parsed in a thread while this one is written (ingest/overlap.py).
        for batch, dropped in prefetched(batches):
            joined = [to_rows(continued(part, writer.stored_conversation(part.id)), fmt) for part in batch.parts]
            counts, taken = writer.write_batch(
                source_id, fmt, [*batch.conversations, *joined], batch.quarantined, raw=batch.raw
            )
            outcome.taken += len(taken)
            counts.unchanged += batch.unchanged
            outcome.counts.add(counts)
            outcome.messages_read += batch.messages
            outcome.known_by_bytes += batch.skipped  # per batch: a pass stopped by bad bytes keeps its count
            outcome.delivered.update([*(c.id for c in batch.conversations), *(p.id for p in batch.parts)])
            outcome.delivered.update(batch.skipped_ids)
            outcome.items += batch.items
            advance(batch.bytes_read - reported)
            reported = batch.bytes_read
            outcome.timestamps_dropped.update(dropped)
