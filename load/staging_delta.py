"""The staging layers' rows that changed since a target's last load, instead of all of them: segments, evidence,
concepts, topics.

Without this the Segment, Concept, Topic nodes and the CONTAINS_MESSAGE, EVIDENCE_FOR, BELONGS_TO edges are read
whole and every row hashed at every load: 535k rows at 250k messages (and 77k of the topic layers), for the few
conversations a daily re-export touches. Triggers log what changed in staging.db (staging/staging_changes.py), each
finished load records where the log stood (a mark, kept per target and group in staging/staging_loaded.py), and the
next load reads the rows of the ids changed since (load/scoped.py), one group of layers per kind of id:

- `segment`, by conversation: Segment nodes and CONTAINS_MESSAGE edges. A segment and its memberships belong to
  one conversation, and a segment retired by a newer segmentation keeps its row, so the keys that vanished from
  the graph are found by the conversation too;
- `evidence`, by message: EVIDENCE_FOR edges (key: message, concept), logged for a changed evidence row and for
  every message of a concept that appeared, went or changed state (merged and split concepts leave the graph);
- `concept`, by concept: Concept nodes;
- `topic`, by topic uid: Topic nodes, the newest cluster run's topics. The mark names the newest cluster run then
  (M); a cluster run's rows stay as they are while it is kept, so the topics that changed are the rows of M and of
  the newest run that differ (the layer's own SQL at each run, EXCEPT both ways);
- `segment_topic`, by segment, and `concept_topic`, by concept: the BELONGS_TO edges of the newest cluster run.
  Their rows change with a link written or retired after M (`staging_changes.topic_links_changed`: an incremental
  cluster run writes a few hundred, a full fit all of them) and with the item itself: a segment retired or current
  again (the segments of the conversations logged as `segment`), a concept that left or joined the live ones
  (logged as `concept`).

What the load then sends equals a full diff's (tests/test_load_staging_delta.py and test_load_topic_delta.py
compare the graph with a fresh full load). A group is diffed whole, as before, when: the target has no mark for
its layers' SQL (first load, a load that did not finish with every row recorded, a changed layer), the previous
load did not finish, the manifest's counts are not those recorded with the mark, the graph lost nodes of its
layers, staging.db is not the one the mark was taken of or its log went back, a change could not be traced to an
id (`staging_changes.ALL`), the topic groups' cluster run M is gone or was re-run since (logged as `cluster`), or
more than `FULL_SHARE` of its ids changed (a full cluster fit: every link and most topics).
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from load.layers import (
    CONCEPT_TOPIC,
    CONCEPTS,
    CONTAINS_MESSAGE,
    EVIDENCE_FOR,
    LATEST_CLUSTER_RUN,
    LIVE_CONCEPT,
    SEGMENT_TOPIC,
    SEGMENTS,
    TOPICS,
    Layer,
)
from load.scoped import SCOPE, SCOPE_IDS, IdScope, Scoped, manifest_rows
from staging import staging_changes, staging_loaded
from staging.staging_changes import CLUSTER, CONCEPT, EVIDENCE, SEGMENT, Mark

TOPIC, SEGMENT_TOPICS, CONCEPT_TOPICS = "topic", "segment_topic", "concept_topic"
"""The topic groups' names (their marks' keys in load-staging.json): not kinds of the log, read otherwise."""

FULL_SHARE = 0.3
"""Above this share of a group's ids changed, diff it whole (a streaming read in key order)."""

_SCOPE_SEGMENTS = f"SELECT segment_id FROM segments WHERE conversation_id IN {SCOPE}"
"""Every segment of the scope, retired ones included: a retired segment's node and edges are deleted."""


class Untraced(Exception):
    """What changed cannot be told from the ids: the group is diffed whole (the message says why)."""


Changed = Callable[[sqlite3.Connection, Mark], list[str]]
"""The ids of a group changed since a mark (raises Untraced)."""


def _logged(kind: str) -> Changed:
    def changed(conn: sqlite3.Connection, since: Mark) -> list[str]:
        found = list(staging_changes.changed_since(conn, kind, since))
        if staging_changes.ALL in found:
            raise Untraced("a change could not be traced to its rows")
        return found

    return changed


@dataclass(frozen=True)
class Group:
    """Layers read by the ids of one kind: those of staging_changes, by default."""

    kind: str
    scoped: dict[str, Scoped]
    total: str
    """How many ids the kind has (the share of them changed decides a whole diff)."""
    ids: str
    """What the ids are, for the notes."""
    changed: Changed | None = field(default=None, compare=False)
    """How the ids changed since a mark are found; None: those logged as `kind`."""

    def changed_since(self, conn: sqlite3.Connection, since: Mark) -> list[str]:
        return (self.changed or _logged(self.kind))(conn, since)


def _cluster_run(conn: sqlite3.Connection, since: Mark) -> str:
    """The cluster run the mark names, when its rows are still those the marked load read (else Untraced)."""
    run = since.cluster_run
    if run is None:
        raise Untraced("the mark names no cluster run")
    if (
        run in _logged(CLUSTER)(conn, since)
        or conn.execute("SELECT 1 FROM cluster_runs WHERE run_id = ?", (run,)).fetchone() is None
    ):
        raise Untraced(f"cluster run {run} was re-run or pruned since the last load")
    return run


TOPICS_AT = TOPICS.sql.replace(LATEST_CLUSTER_RUN, ":run")
"""The Topic layer's rows at cluster run :run (the same SQL: a test checks the replacement took)."""


def _topics_changed(conn: sqlite3.Connection, since: Mark) -> list[str]:
    """Topic uids whose row (the layer's own columns) differs between the marked cluster run and the newest."""
    params = {"run": _cluster_run(conn, since)}
    rows = conn.execute(
        f"SELECT id FROM ({TOPICS.sql} EXCEPT {TOPICS_AT}) UNION SELECT id FROM ({TOPICS_AT} EXCEPT {TOPICS.sql})",
        params,
    )
    return sorted({str(row[0]) for row in rows})


def _links_changed(kind: str, item: Changed, items_of: str) -> Changed:
    """Items whose links changed since the marked cluster run, and those the log names for the item itself
    (`items_of`: their ids, from the logged ids in :scope)."""

    def changed(conn: sqlite3.Connection, since: Mark) -> list[str]:
        found = set(staging_changes.topic_links_changed(conn, kind, _cluster_run(conn, since)))
        logged = item(conn, since)
        if logged:
            found.update(str(row[0]) for row in conn.execute(items_of, {"scope": json.dumps(logged)}))
        return sorted(found)

    return changed


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
    Group(
        TOPIC,
        {TOPICS.name: Scoped(f"{TOPICS.sql} AND topic_uid IN {SCOPE}", SCOPE_IDS)},
        f"SELECT COUNT(*) FROM topics WHERE run_id = {LATEST_CLUSTER_RUN}",
        "topic(s) changed",
        _topics_changed,
    ),
    Group(
        SEGMENT_TOPICS,
        {SEGMENT_TOPIC.name: Scoped(f"{SEGMENT_TOPIC.sql} AND l.item_id IN {SCOPE}", SCOPE_IDS)},
        "SELECT COUNT(*) FROM current_segments",
        "segment(s) whose topic links may have changed",
        # a segment retired or current again: every segment of the conversations logged (the retired ones too)
        _links_changed("segment", _logged(SEGMENT), _SCOPE_SEGMENTS),
    ),
    Group(
        CONCEPT_TOPICS,
        {CONCEPT_TOPIC.name: Scoped(f"{CONCEPT_TOPIC.sql} AND l.item_id IN {SCOPE}", SCOPE_IDS)},
        "SELECT COUNT(*) FROM concepts",
        "concept(s) whose topic links may have changed",
        _links_changed("concept", _logged(CONCEPT), SCOPE_IDS),
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
        try:
            changed = group.changed_since(staging, since)
        except Untraced as exc:
            why = str(exc)
        else:
            total = int(staging.execute(group.total).fetchone()[0])
            if len(changed) <= FULL_SHARE * max(total, 1):
                note = f"{label} only the {len(changed)} {group.ids} since the last load were read"
                return Plan(group, ours, StagingDelta(since, changed, group), now, layers_fp, note)
            why = f"{len(changed)} of {total} changed"
    staging_loaded.record(data_dir, target, group.kind, None, layers_fp)
    return Plan(group, ours, None, now, layers_fp, f"{label} diffed whole ({why})")
