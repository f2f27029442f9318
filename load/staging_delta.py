"""The staging layers' rows that changed since a target's last load, instead of all of them: segments, evidence,
concepts.

Without this the Segment, Concept nodes and the CONTAINS_MESSAGE, EVIDENCE_FOR edges are read whole and every row
hashed at every load: 535k rows at 250k messages, for the few conversations a daily re-export touches. Triggers log
what changed in staging.db (staging/staging_changes.py), each finished load records where the log stood (a mark,
kept per target and kind in staging/staging_loaded.py), and the next load reads the rows of the ids logged since
(load/scoped.py), one kind per group of layers:

- `segment`, by conversation: Segment nodes and CONTAINS_MESSAGE edges. A segment and its memberships belong to
  one conversation, and a segment retired by a newer segmentation keeps its row, so the keys that vanished from
  the graph are found by the conversation too;
- `evidence`, by message: EVIDENCE_FOR edges (key: message, concept), logged for a changed evidence row and for
  every message of a concept that appeared, went or changed state (merged and split concepts leave the graph);
- `concept`, by concept: Concept nodes.

What the load then sends equals a full diff's (tests/test_load_staging_delta.py compares the graph with a fresh
full load). A group is diffed whole, as before, when: the target has no mark for its layers' SQL (first load, a
load that did not finish with every row recorded, a changed layer), the previous load did not finish, the
manifest's counts are not those recorded with the mark, the graph lost nodes of its layers, staging.db is not the
one the mark was taken of or its log went back, a change could not be traced to an id (`staging_changes.ALL`), or
more than `FULL_SHARE` of its ids changed.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from load.layers import CONCEPTS, CONTAINS_MESSAGE, EVIDENCE_FOR, LIVE_CONCEPT, SEGMENTS, Layer
from load.scoped import SCOPE, SCOPE_IDS, IdScope, Scoped, manifest_rows
from staging import staging_changes, staging_loaded
from staging.staging_changes import CONCEPT, EVIDENCE, SEGMENT, Mark

FULL_SHARE = 0.3
"""Above this share of a group's ids changed, diff it whole (a streaming read in key order)."""

_SCOPE_SEGMENTS = f"SELECT segment_id FROM segments WHERE conversation_id IN {SCOPE}"
"""Every segment of the scope, retired ones included: a retired segment's node and edges are deleted."""


@dataclass(frozen=True)
class Group:
    """Layers read by the ids of one kind of staging_changes."""

    kind: str
    scoped: dict[str, Scoped]
    total: str
    """How many ids the kind has (the share of them changed decides a whole diff)."""
    ids: str
    """What the ids are, for the notes."""


GROUPS: tuple[Group, ...] = (
    Group(
        SEGMENT,
        {
            SEGMENTS.name: Scoped(f"{SEGMENTS.sql} WHERE conversation_id IN {SCOPE}", _SCOPE_SEGMENTS),
            CONTAINS_MESSAGE.name: Scoped(
                f"{CONTAINS_MESSAGE.sql} WHERE s.conversation_id IN {SCOPE}", _SCOPE_SEGMENTS
            ),
        },
        "SELECT COUNT(*) FROM segment_conversations",
        "conversation(s) re-segmented",
    ),
    Group(
        EVIDENCE,
        {
            # EVIDENCE_FOR's SQL with the scope's messages only, before its GROUP BY
            EVIDENCE_FOR.name: Scoped(
                "SELECT e.message_id AS src, e.concept_id AS dst, MAX(e.confidence) AS confidence, e.text,"
                " COUNT(*) AS spans FROM concept_evidence AS e JOIN concepts AS c ON c.concept_id = e.concept_id"
                f" WHERE c.{LIVE_CONCEPT} AND e.message_id IN {SCOPE} GROUP BY e.message_id, e.concept_id",
                SCOPE_IDS,
            ),
        },
        "SELECT COUNT(*) FROM concept_evidence",
        "message(s) whose concept evidence changed",
    ),
    Group(
        CONCEPT,
        {CONCEPTS.name: Scoped(f"{CONCEPTS.sql} AND concept_id IN {SCOPE}", SCOPE_IDS)},
        "SELECT COUNT(*) FROM concepts",
        "concept(s) changed",
    ),
)


class StagingDelta(IdScope):
    """The ids of one kind changed since the mark the target's manifest equals."""

    def __init__(self, since: Mark, ids: list[str], group: Group) -> None:
        super().__init__(ids, group.scoped)
        self.since = since


def fingerprint(layers: Sequence[Layer]) -> str:
    """What a group's rows are made of: a mark recorded under other SQL is no mark."""
    parts = sorted(f"{layer.name}:{layer.sql}:{layer.booleans}" for layer in layers)
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


@dataclass
class Plan:
    """One group's delta (None: diff it whole), the mark to record when the load finishes, and why (notes)."""

    group: Group
    layers: list[Layer]
    delta: StagingDelta | None
    mark: Mark | None
    fingerprint: str
    note: str


def record(staging: sqlite3.Connection, data_dir: Path, target: str, plans: Sequence[Plan]) -> None:
    """After a load that finished with every row recorded: the manifest equals each group's rows as of the mark."""
    for found in plans:
        if found.mark is not None:
            rows = manifest_rows(staging, target, found.layers)
            staging_loaded.record(data_dir, target, found.group.kind, found.mark, found.fingerprint, rows)


def forget(data_dir: Path, target: str, plans: Sequence[Plan]) -> None:
    """After a load that left rows out of the manifest: the next one diffs these layers whole."""
    for found in plans:
        staging_loaded.record(data_dir, target, found.group.kind, None, found.fingerprint)


def plan(
    staging: sqlite3.Connection,
    data_dir: Path,
    target: str,
    layers: Sequence[Layer],
    lost: Sequence[Layer],
    *,
    previous_finished: bool,
) -> list[Plan]:
    """Decide how this load reads each group's layers, and record it first: a load that diffs a group whole clears
    the target's mark for it before its first batch, so that a kill leaves no mark that the manifest no longer
    equals. Groups whose layers are not loaded now are left out."""
    if not staging_changes.tracked(staging):
        return []
    now = staging_changes.mark(staging)
    plans = []
    for group in GROUPS:
        ours = [layer for layer in layers if layer.name in group.scoped]
        if ours:
            plans.append(_plan(staging, data_dir, target, group, ours, lost, now, previous_finished))
    return plans


def _plan(
    staging: sqlite3.Connection,
    data_dir: Path,
    target: str,
    group: Group,
    ours: list[Layer],
    lost: Sequence[Layer],
    now: Mark,
    previous_finished: bool,
) -> Plan:
    layers_fp = fingerprint(ours)
    since = staging_loaded.loaded_mark(data_dir, target, group.kind, layers_fp, manifest_rows(staging, target, ours))
    why = ""
    if not previous_finished:
        why = "the previous load did not finish"
    elif since is None:
        why = "no mark of an earlier finished load of this manifest"
    elif any(layer in lost for layer in ours):
        why = "the graph lost nodes"
    elif not staging_changes.comparable(staging, since):
        why = "staging.db is not the one the mark was taken of"
    label = f"{', '.join(layer.name for layer in ours)}:"
    if not why and since is not None:
        changed = list(staging_changes.changed_since(staging, group.kind, since))
        total = int(staging.execute(group.total).fetchone()[0])
        if staging_changes.ALL in changed:
            why = "a change could not be traced to its rows"
        elif len(changed) <= FULL_SHARE * max(total, 1):
            note = f"{label} only the {len(changed)} {group.ids} since the last load were read"
            return Plan(group, ours, StagingDelta(since, changed, group), now, layers_fp, note)
        else:
            why = f"{len(changed)} of {total} changed"
    staging_loaded.record(data_dir, target, group.kind, None, layers_fp)
    return Plan(group, ours, None, now, layers_fp, f"{label} diffed whole ({why})")
