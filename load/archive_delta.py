"""The archive layers' rows of the conversations changed since a target's last load, instead of all of them.

Without this the archive layers (Conversation, Message, HAS_MESSAGE, NEXT, BRANCH) are read whole and every row
hashed to find what changed: O(archive) per load (523 s at 1M messages for 1k new ones). Instead each finished
load records where the archive stood (a mark, staging/archive_changes.py; kept per target in
staging/archive_loaded.py), and the next load asks archive.db which conversations changed since that mark: new
rows by rowid, updates and deletions from the triggers' log. Every row of these layers belongs to one
conversation (a message's, or an edge's message end: HAS_MESSAGE and BRANCH end at a child message, NEXT joins two
messages of one conversation), so a row that differs from the manifest is a row of a changed conversation, or
one that vanished from it. The load reads those conversations' rows (`SCOPED[...].rows`: the layer's SQL
restricted to them) and looks up in the manifest their keys and the keys that may have vanished: for nodes the
ids in scope, for edges every manifest key whose `src` is in scope (a key range: `["src",...`). What it then
sends equals a full diff's (tests/test_load_archive_delta.py compares the graph with a fresh full load).

Diffing everything, as before, when: the target has no mark for these layers' SQL (first load, a load that did
not finish with every row recorded, a changed layer), the previous load did not finish (it may have committed
batches it never recorded, of any conversation it was reading), the manifest's counts are not those recorded with
the mark (cleared, edited, another staging.db), the graph lost nodes of an archive layer, the archive is
not the one the mark was taken of (`archive_changes.comparable`), or more than `FULL_SHARE` of the conversations
changed (reading them all in key order is then cheaper). Known gap: a BRANCH edge whose parent lies in another
conversation (an id collision left a child pointing across) and whose child's parent_id later changed keeps its
old edge until the next full diff; the archive never deletes a message, so no node vanishes from these layers.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from load.layers import BRANCH, CONVERSATIONS, HAS_MESSAGE, MESSAGES, NEXT, Layer
from load.scoped import SCOPE, SCOPE_IDS, IdScope, Scoped
from load.scoped import manifest_rows as _manifest_rows
from staging import archive_changes, archive_loaded
from staging.archive_changes import Mark

FULL_SHARE = 0.3
"""Above this share of the archive's conversations changed, diff everything (a streaming read in key order)."""

_SCOPE_IDS = SCOPE_IDS
_SCOPE_MESSAGES = f"SELECT uuid FROM messages WHERE conversation_id IN {SCOPE}"

SCOPED: dict[str, Scoped] = {
    CONVERSATIONS.name: Scoped(f"{CONVERSATIONS.sql} WHERE id IN {SCOPE}", _SCOPE_IDS),
    MESSAGES.name: Scoped(f"{MESSAGES.sql} WHERE conversation_id IN {SCOPE}", _SCOPE_MESSAGES),
    HAS_MESSAGE.name: Scoped(f"{HAS_MESSAGE.sql} WHERE conversation_id IN {SCOPE}", _SCOPE_IDS),
    # message_chronology (the view NEXT reads) over the scope's messages only: same window, same partitions
    NEXT.name: Scoped(
        "SELECT prev_id AS src, uuid AS dst FROM (SELECT uuid, LAG(uuid) OVER"
        " (PARTITION BY conversation_id ORDER BY seq) AS prev_id FROM messages"
        f" WHERE is_active = 1 AND conversation_id IN {SCOPE}) WHERE prev_id IS NOT NULL",
        _SCOPE_MESSAGES,
    ),
    BRANCH.name: Scoped(
        f"{BRANCH.sql} AND child.conversation_id IN {SCOPE}",
        f"{_SCOPE_MESSAGES} UNION SELECT parent_id FROM messages WHERE conversation_id IN {SCOPE}"
        " AND parent_id IS NOT NULL",
    ),
}


class ArchiveDelta(IdScope):
    """The conversations changed since the mark the target's manifest equals (load/scoped.py reads them)."""

    def __init__(self, since: Mark, conversations: list[str]) -> None:
        super().__init__(conversations, SCOPED)
        self.since = since


def fingerprint(layers: Sequence[Layer]) -> str:
    """What the archive layers' rows are made of: a mark recorded under other SQL is no mark.

    The text cap (load/layers.py TEXT_CAP_BYTES) is not in it: a message a Neo4j target already holds whole (loaded
    before the cap) stays whole until its conversation changes or a full diff meets it, rather than every archive
    row being read and hashed again on the upgrade (~500 s at 1M messages) to cut a few texts that are not wrong."""
    parts = sorted(f"{layer.name}:{layer.sql}:{layer.booleans}" for layer in layers if layer.source == "archive")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


@dataclass
class Plan:
    """The delta (None: diff everything), the mark to record when the load finishes, and why (for the notes)."""

    delta: ArchiveDelta | None
    mark: Mark | None
    layers: str
    note: str


def manifest_rows(staging: sqlite3.Connection, target: str, layers: Sequence[Layer]) -> dict[str, int]:
    """The manifest's row count of each archive layer (a primary-key range each)."""
    return _manifest_rows(staging, target, (layer for layer in layers if layer.source == "archive"))


def record(staging: sqlite3.Connection, data_dir: Path, target: str, layers: Sequence[Layer], found: Plan) -> None:
    """After a load that finished with every row recorded: the manifest equals the archive as of the plan's mark."""
    if found.mark is not None:
        archive_loaded.record(data_dir, target, found.mark, found.layers, manifest_rows(staging, target, layers))


def plan(
    archive: sqlite3.Connection,
    staging: sqlite3.Connection,
    data_dir: Path,
    target: str,
    layers: Sequence[Layer],
    lost: Sequence[Layer],
    *,
    previous_finished: bool,
) -> Plan:
    """Decide how this load reads the archive layers, and record it first: a load that diffs everything clears
    the target's mark before its first batch, so that a kill leaves no mark that the manifest no longer equals."""
    ours = [layer for layer in layers if layer.source == "archive"]
    layers_fp = fingerprint(ours)
    if not ours or not archive_changes.tracked(archive):
        return Plan(None, None, layers_fp, "")
    now = archive_changes.mark(archive)
    since = archive_loaded.loaded_mark(data_dir, target, layers_fp, manifest_rows(staging, target, ours))
    why = ""
    if not previous_finished:
        why = "the previous load did not finish"
    elif since is None:
        why = "no mark of an earlier finished load of this manifest"
    elif any(layer in lost for layer in ours):
        why = "the graph lost archive nodes"
    elif not all(layer.name in SCOPED for layer in ours):
        why = "a layer without a scoped read"
    elif not archive_changes.comparable(archive, since):
        why = "the archive is not the one the mark was taken of"
    if not why and since is not None:
        changed = list(archive_changes.changed_since(archive, since))
        total = int(archive.execute("SELECT COUNT(*) FROM conversations").fetchone()[0])
        if len(changed) <= FULL_SHARE * max(total, 1):
            note = f"archive layers: only the {len(changed)} conversation(s) changed since the last load were read"
            return Plan(ArchiveDelta(since, changed), now, layers_fp, note)
        why = f"{len(changed)} of {total} conversations changed"
    archive_loaded.record(data_dir, target, None, layers_fp)
    return Plan(None, now, layers_fp, f"archive layers: diffed whole ({why})")
