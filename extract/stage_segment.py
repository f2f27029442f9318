"""The segment stage: each conversation's visible active path in archive.db, cut into segments in staging.db.

The steps (the runner, flows/stage_runner.py, keeps the ledger): read each conversation's active path without
texts (only the conversations archive.db logged as changed since the last run's mark: staging/archive_changes.py,
the mark in `segment_mark`; all of them on a first run, with --force, or when the mark cannot be compared) and
compare its fingerprint with the one it was last segmented from (unchanged: no re-work); for the
changed ones read the texts and segment them (pure, `extract.segment`); check the invariants (every visible
message in exactly one segment, in order); write whole conversations per transaction (idempotent upserts keyed
by segment id); return the counts.
"""

from __future__ import annotations

import logging
import sqlite3
from collections import Counter
from collections.abc import Sequence

from clients.stage import Outcome, StageContext
from contracts.errors import StageError
from extract.segment import PathMessage, SegmentDraft, SegmentParams, path_fingerprint, segment_conversation
from staging import archive_changes
from staging import segments as store

log = logging.getLogger(__name__)

STAGE = "segment"
BATCH_MESSAGES = 5000  # changed conversations are written once this many of their messages are pending
CUTS_AND_ROWS = ("cuts_budget", "cuts_topic", "segments_written", "segments_unchanged", "segments_retired")


def run(ctx: StageContext) -> Outcome:
    """Segment every conversation whose active path changed since it was last segmented (`ctx.force`: every
    one; the same rows come out, written as unchanged)."""
    archive, staging, run_id = ctx.archive, ctx.staging, ctx.run_id
    params = SegmentParams(**ctx.settings.segment.model_dump())
    mark = archive_changes.mark(archive) if archive_changes.tracked(archive) else None  # before the reads
    scope = None if ctx.force else _changed_since_last(archive, staging, repr(params))
    if scope is None:  # a full read rewrites under a new state: a run stopped part-way must not leave the old mark
        store.clear_mark(staging)
    known = {} if ctx.force else store.stored_fingerprints(staging, scope)
    counts: Counter[str] = Counter()
    pending: list[tuple[str, str, list[store.SegmentRow]]] = []
    pending_messages = 0
    for conversation_id, metas in store.iter_active_paths(archive, scope):
        counts["conversations_read"] += 1
        blank = [PathMessage(m.uuid, m.role, "", m.created_at, m.content_hash) for m in metas]
        path_key = path_fingerprint(blank, params)
        if known.get(conversation_id) == path_key:
            continue
        texts = store.message_texts(archive, conversation_id)
        path = [PathMessage(m.uuid, m.role, texts.get(m.uuid, ""), m.created_at, m.content_hash) for m in metas]
        drafts = segment_conversation(conversation_id, path, params)
        _check(run_id, conversation_id, path, drafts)
        counts["conversations_segmented"] += 1
        counts["messages_segmented"] += len(path)
        counts.update(f"cuts_{d.boundary}" for d in drafts if d.boundary != "start")
        pending.append((conversation_id, path_key, [_row(d) for d in drafts]))
        pending_messages += len(path)
        if pending_messages >= BATCH_MESSAGES:
            _flush(staging, run_id, pending, counts)
            pending, pending_messages = [], 0
    _flush(staging, run_id, pending, counts)
    if mark is not None:  # after the last write: a run killed before it reads the same changes again
        store.write_mark(staging, mark.as_json(), repr(params))
    read = counts.pop("conversations_read", 0)
    total = read if scope is None else store.count_conversations(archive)  # those not read did not change
    counts = Counter(
        {
            "conversations": total,
            "conversations_read": read,
            "conversations_unchanged": total - counts["conversations_segmented"],
            **counts,
        }
    )
    counts["segments_current"] = store.count_current(staging)
    for name in ("conversations_segmented", "messages_segmented", *CUTS_AND_ROWS):
        counts.setdefault(name, 0)
    log.info("segment - %s", dict(counts))
    return Outcome(
        rows_in=counts["messages_segmented"],
        rows_out=counts["segments_written"] + counts["segments_retired"],
        counts=dict(counts),
        skipped=counts["conversations_segmented"] == 0,
    )


def _changed_since_last(archive: sqlite3.Connection, staging: sqlite3.Connection, params: str) -> list[str] | None:
    """The conversations archive.db logged as changed since the segments were last brought up to date (a path that
    did not change keeps its fingerprint: reading it would find it unchanged), or None to read every one: no mark
    yet, other parameters, or an archive that does not log its changes or is not the one the mark was taken of."""
    if not archive_changes.tracked(archive):
        return None
    last = store.read_mark(staging)
    if last is None or last[1] != params:
        return None
    since = archive_changes.Mark.from_json(last[0])
    if since is None or not archive_changes.comparable(archive, since):
        return None
    return list(archive_changes.changed_since(archive, since))


def _flush(
    staging: sqlite3.Connection,
    run_id: str,
    pending: Sequence[tuple[str, str, Sequence[store.SegmentRow]]],
    counts: Counter[str],
) -> None:
    if not pending:
        return
    written = store.write_conversations(staging, run_id, pending)
    counts["segments_written"] += written.written
    counts["segments_unchanged"] += written.unchanged
    counts["segments_retired"] += written.retired


def _row(draft: SegmentDraft) -> store.SegmentRow:
    return store.SegmentRow(
        segment_id=draft.segment_id,
        conversation_id=draft.conversation_id,
        ordinal=draft.ordinal,
        boundary=draft.boundary,
        token_estimate=draft.token_estimate,
        content_hash=draft.content_hash,
        first_time=draft.first_time,
        last_time=draft.last_time,
        message_ids=draft.message_ids,
    )


def _check(run_id: str, conversation_id: str, path: list[PathMessage], drafts: list[SegmentDraft]) -> None:
    """Step 4: the segments cover the path exactly once, in order, with distinct ids (else a bug: fail)."""
    covered = [m for d in drafts for m in d.message_ids]
    ids = [d.segment_id for d in drafts]
    if covered != [m.uuid for m in path] or len(set(ids)) != len(ids):
        raise StageError(STAGE, run_id, f"conversation {conversation_id}: segments do not cover its path once")
