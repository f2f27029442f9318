"""The segment layers' rows of the conversations re-segmented since a target's last load, instead of all of them.

Without this the Segment nodes and CONTAINS_MESSAGE edges are read whole and every row hashed at every load: 279k
rows at 250k messages, for the few conversations a daily re-export touches. Each finished load records where
staging.db's segment log stood (a mark, staging/segment_changes.py; kept per target in
staging/segments_loaded.py), and the next load reads the rows of the conversations logged since (load/scoped.py):
a segment and its memberships belong to one conversation, and a segment retired by a newer segmentation keeps its
row, so the keys that vanished from the graph's layers are found by the conversation too. What the load then sends
equals a full diff's (tests/test_load_segment_delta.py compares the graph with a fresh full load).

Diffing these layers whole, as before, when: the target has no mark for these layers' SQL (first load, a load that
did not finish with every row recorded, a changed layer), the previous load did not finish, the manifest's counts
are not those recorded with the mark, the graph lost Segment nodes, staging.db is not the one the mark was taken of
or its log went back, a change could not be traced to a conversation (`segment_changes.ALL`), or more than
`FULL_SHARE` of the segmented conversations changed.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from load.layers import CONTAINS_MESSAGE, SEGMENTS, Layer
from load.scoped import SCOPE, ConversationScope, Scoped, manifest_rows
from staging import segment_changes, segments_loaded
from staging.segment_changes import Mark

FULL_SHARE = 0.3
"""Above this share of the segmented conversations changed, diff everything (a streaming read in key order)."""

_SCOPE_SEGMENTS = f"SELECT segment_id FROM segments WHERE conversation_id IN {SCOPE}"
"""Every segment of the scope, retired ones included: a retired segment's node and edges are deleted."""

SCOPED: dict[str, Scoped] = {
    SEGMENTS.name: Scoped(f"{SEGMENTS.sql} WHERE conversation_id IN {SCOPE}", _SCOPE_SEGMENTS),
    CONTAINS_MESSAGE.name: Scoped(f"{CONTAINS_MESSAGE.sql} WHERE s.conversation_id IN {SCOPE}", _SCOPE_SEGMENTS),
}


class SegmentDelta(ConversationScope):
    """The conversations whose segment rows changed since the mark the target's manifest equals."""

    def __init__(self, since: Mark, conversations: list[str]) -> None:
        super().__init__(conversations, SCOPED)
        self.since = since


def fingerprint(layers: Sequence[Layer]) -> str:
    """What the segment layers' rows are made of: a mark recorded under other SQL is no mark."""
    parts = sorted(f"{layer.name}:{layer.sql}:{layer.booleans}" for layer in _ours(layers))
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def _ours(layers: Sequence[Layer]) -> list[Layer]:
    return [layer for layer in layers if layer.name in SCOPED]


@dataclass
class Plan:
    """The delta (None: diff everything), the mark to record when the load finishes, and why (for the notes)."""

    delta: SegmentDelta | None
    mark: Mark | None
    layers: str
    note: str


def record(staging: sqlite3.Connection, data_dir: Path, target: str, layers: Sequence[Layer], found: Plan) -> None:
    """After a load that finished with every row recorded: the manifest equals the segment tables as of the mark."""
    if found.mark is not None:
        rows = manifest_rows(staging, target, _ours(layers))
        segments_loaded.record(data_dir, target, found.mark, found.layers, rows)


def forget(data_dir: Path, target: str, found: Plan) -> None:
    """After a load that left rows out of the manifest: the next one diffs these layers whole."""
    segments_loaded.record(data_dir, target, None, found.layers)


def plan(
    staging: sqlite3.Connection,
    data_dir: Path,
    target: str,
    layers: Sequence[Layer],
    lost: Sequence[Layer],
    *,
    previous_finished: bool,
) -> Plan:
    """Decide how this load reads the segment layers, and record it first: a load that diffs them whole clears
    the target's mark before its first batch, so that a kill leaves no mark that the manifest no longer equals."""
    ours = _ours(layers)
    layers_fp = fingerprint(ours)
    if not ours or not segment_changes.tracked(staging):
        return Plan(None, None, layers_fp, "")
    now = segment_changes.mark(staging)
    since = segments_loaded.loaded_mark(data_dir, target, layers_fp, manifest_rows(staging, target, ours))
    why = ""
    if not previous_finished:
        why = "the previous load did not finish"
    elif since is None:
        why = "no mark of an earlier finished load of this manifest"
    elif any(layer in lost for layer in ours):
        why = "the graph lost segment nodes"
    elif not segment_changes.comparable(staging, since):
        why = "staging.db is not the one the mark was taken of"
    if not why and since is not None:
        changed = list(segment_changes.changed_since(staging, since))
        total = int(staging.execute("SELECT COUNT(*) FROM segment_conversations").fetchone()[0])
        if segment_changes.ALL in changed:
            why = "a segment row was deleted"
        elif len(changed) <= FULL_SHARE * max(total, 1):
            note = f"segment layers: only the {len(changed)} conversation(s) re-segmented since the last load were read"
            return Plan(SegmentDelta(since, changed), now, layers_fp, note)
        else:
            why = f"{len(changed)} of {total} conversations re-segmented"
    segments_loaded.record(data_dir, target, None, layers_fp)
    return Plan(None, now, layers_fp, f"segment layers: diffed whole ({why})")
