"""What an incremental cues run starts from: the state saved with each cues run, and the plan that compares it with
the archive as it is now.

    <data_dir>/cues-state/<run_id>.pickle   the frozen global counts of the last full build (memory.graph.
                                            FrozenCounts), a digest per conversation of everything its rows are
                                            built from, the conversations changed since that full build, the
                                            messages added or removed since then, the topic run and the settings
                                            digest; then, a second object in the same
                                            file, what the digests were taken of (`DigestIndex`: the archive's
                                            change mark and a digest per message of its concept evidence)

The conversation digests of the next run are recomputed only for the conversations that may have changed since
(`digests_since`): those archive.db logged as changed after the mark (staging/archive_changes.py: new rows by
rowid, updates by triggers) and those holding a message whose concept evidence differs; every other digest is the
base run's. That equals digesting every conversation again (tests/test_cues_digests.py), at the cost of what
changed plus one pass over the evidence in memory. Without a usable index (a state written before it, another
archive, a VACUUM that renumbered rows, an archive without the change log) every conversation is digested.

A run rebuilds only the conversations whose digest changed (new, changed or gone, and those whose messages' topic
links differ between the two cluster runs). It builds everything instead (the full path) with no usable state, when
those conversations are `memory.rebuild_share` of all conversations or more (one large change: a full build costs
less), or when the messages added and removed since the last full build reach that share of the full build's
message count: the global counts an incremental run keeps frozen (the message count behind every IDF, the hubs)
then no longer describe the archive. The drift is counted exactly, per rebuilt or gone conversation: the messages
in the archive now or in the base run's memory, not in both (an edit that keeps a message's id counts nothing).
So a schedule that adds a little every day, some of it to old conversations, builds in full once the archive has
grown by that share (+300 messages a day over 250k: every ~80 days), not once that share of its conversations
has been touched.
The file is written once the run is done, its keys embedded included, and only a run whose cues stage succeeded
is a base: a killed or failed run leaves the previous state and the previous run's rows, never a half one.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import os
import pickle
import sqlite3
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from contracts.settings import Settings
from memory import wordnet
from memory.graph import FrozenCounts
from memory.names import NAMED_ROLES
from staging import archive_changes, staging_changes
from staging import memory as store
from staging import memory_inputs as inputs
from staging.archive_changes import Mark
from staging.db import IN_VALUES, json_values
from staging.memory_inputs import Head

log = logging.getLogger(__name__)

FORMAT = 5  # bump when the state's layout or what a digest covers changes: every run then builds in full once
# (3: a content row's keys and token cost are of the text recall shows, clients/shown.py; 4: which cuts a long code
# block of any message as it cuts an artifact's code; 5: CJK text's terms are its two-character pieces, memory/text.py,
# so the concepts said in a Chinese message are found again: a carried conversation would keep the old links)
DIRECTORY = "cues-state"
NOT_GRAPH_SETTINGS = ("rebuild_share", "prune_runs")  # how runs are made, not what the graph is
SCOPE_CHUNK = 5_000  # conversations (or messages) per scoped read


@dataclass(slots=True)
class CuesState:
    run_id: str
    full_run: str
    settings: str
    topic_run: str | None
    frozen: FrozenCounts
    conversations: dict[str, str]
    changed: set[str] = field(default_factory=set)
    drift: int = 0  # messages added or removed since the full build (the plan's rule)
    format: int = FORMAT


@dataclass(slots=True)
class DigestIndex:
    """What a run's conversation digests were taken of: the archive's change mark (read before the digests) and a
    digest per message of its concept evidence (messages with evidence only). Pickled after the CuesState in the
    same file: a reader of FORMAT 1 without it stops at the state."""

    mark: tuple[Any, ...] | None  # Mark fields in order (fewer in an index written before `newest`, `epoch`)
    evidence: dict[str, bytes]
    staging_mark: tuple[Any, ...] | None = None  # staging_changes.Mark fields in order (2 in older indexes)
    """staging.db's change log (staging/staging_changes.py: version, origin, ...), read before the evidence."""
    heads: dict[str, Head | None] | None = None
    """Every concept's head (staging.memory_inputs.live_heads) as the digests took it. With `staging_mark`, the
    next run reads the evidence of what changed only (`scoped_digests`); an index written before them (unpickled
    without these slots: read them with getattr) does not allow it."""
    complete: bool = True
    """False for a scoped run's index: its `evidence` holds no message's digest, so a run that digests from it in
    full (`digests_since`: --force, a change log it cannot compare) digests every conversation; comparing against
    the empty map would miss a message whose evidence is gone since (its conversation kept a stale digest)."""


@dataclass(slots=True)
class Base:
    """The run an incremental run would start from (the newest whose cues stage succeeded) and what it saved."""

    run_id: str | None
    state: CuesState | None = None
    index: DigestIndex | None = None


@dataclass(slots=True)
class Digests:
    """This run's digest per conversation, its index for the next run, and how many were computed (not carried)."""

    conversations: dict[str, str]
    index: DigestIndex
    computed: int
    note: str


@dataclass(slots=True)
class Scoped:
    """`scoped_digests`' answer: the digests, the evidence of the conversations digested (the messages of `read`),
    every live concept with evidence (cue -> title, type), and the heads, to read more conversations' evidence."""

    digests: Digests
    evidence: list[tuple[str, str, str, str, float]]
    concepts: dict[str, tuple[str, str]]
    heads: dict[str, Head | None]
    read: set[str]


@dataclass(slots=True)
class Plan:
    """An incremental run: rebuild `rebuilt` (present now), drop `gone`, carry every other conversation; `changed`
    and `drift` are the conversations changed and the messages added or removed since the full build, this run's
    included."""

    state: CuesState
    rebuilt: list[str]
    gone: list[str]
    digests: dict[str, str]
    changed: set[str]
    drift: int


def settings_digest(settings: Settings) -> str:
    """What the graph is built with: the memory settings and whether WordNet is there (its category cues)."""
    config = {k: v for k, v in settings.memory.model_dump(mode="json").items() if k not in NOT_GRAPH_SETTINGS}
    config["wordnet"] = wordnet.state(settings.memory.wordnet_dir) if settings.memory.hypernym_depth > 0 else None
    return hashlib.sha256(json.dumps([FORMAT, config], sort_keys=True).encode()).hexdigest()[:16]


def conversation_digests(
    archive: sqlite3.Connection,
    evidence: Mapping[str, Mapping[str, float]],
    concepts: Mapping[str, tuple[str, str]],
    scope: Sequence[str] | None = None,
) -> dict[str, str]:
    """A digest per conversation of what its rows are built from: its title and format, and per visible message
    its id, position, speaker, time, text (by its hash) and concept evidence (cue, weight, title, type). Every
    conversation, or those of `scope` (a conversation without a visible message with text has none)."""
    digests: dict[str, str] = {}
    sql = (
        "SELECT m.conversation_id, c.title, c.format, m.uuid, m.seq, m.role, m.author, m.created_at, m.content_hash"
        " FROM visible_messages m JOIN conversations c ON c.id = m.conversation_id WHERE length(trim(m.text)) > 0"
    )
    if scope is None:
        chunks: list[tuple[str, tuple[str, ...]]] = [(f"{sql} ORDER BY m.conversation_id, m.seq", ())]
    else:
        wanted = sorted(set(scope))
        chunks = [
            (f"{sql} AND m.conversation_id IN {IN_VALUES} ORDER BY m.conversation_id, m.seq", (json_values(part),))
            for part in (wanted[i : i + SCOPE_CHUNK] for i in range(0, len(wanted), SCOPE_CHUNK))
        ]
    for query, params in chunks:
        current: str | None = None
        digest = hashlib.blake2b(digest_size=16)
        for row in archive.execute(query, params):
            if row[0] != current:
                if current is not None:
                    digests[current] = digest.hexdigest()
                current, digest = str(row[0]), hashlib.blake2b(digest_size=16)
                digest.update(repr((row[1], row[2])).encode())
            cues = evidence.get(str(row[3]), {})
            found = sorted((c, w, *concepts.get(c, ("", ""))) for c, w in cues.items())
            digest.update(repr((row[3:], found)).encode())
        if current is not None:
            digests[current] = digest.hexdigest()
    return digests


def evidence_digests(
    evidence: Mapping[str, Mapping[str, float]], concepts: Mapping[str, tuple[str, str]]
) -> dict[str, bytes]:
    """Per message with concept evidence, a digest of what `conversation_digests` reads of it."""
    found: dict[str, bytes] = {}
    for uuid, cues in evidence.items():
        if cues:
            rows = sorted((c, w, *concepts.get(c, ("", ""))) for c, w in cues.items())
            found[uuid] = hashlib.blake2b(repr(rows).encode(), digest_size=8).digest()
    return found


def load_base(staging: sqlite3.Connection, settings: Settings) -> Base:
    """The newest run whose cues stage succeeded (never a killed or failed one: its keys may be missing), and its
    saved state and digest index when readable."""
    run_id = store.latest_finished_run(staging)
    if run_id is None:
        return Base(None)
    state, index = load_saved(settings.data_dir, run_id)
    return Base(run_id, state, index)


def digests_since(
    archive: sqlite3.Connection,
    evidence: Mapping[str, Mapping[str, float]],
    concepts: Mapping[str, tuple[str, str]],
    base: Base,
    staging_mark: staging_changes.Mark | None = None,
    heads: dict[str, Head | None] | None = None,
) -> Digests:
    """Every conversation's digest as `conversation_digests` gives it, computed only for the conversations that may
    have changed since the base run's digests (the module's docstring); all of them without a usable index.
    `staging_mark` and `heads` (taken before `evidence` was read) go into the index for the next run's
    `scoped_digests`."""
    tracked = archive_changes.tracked(archive)
    mark = archive_changes.mark(archive) if tracked else None  # before the reads: a later change is seen next run
    by_message = evidence_digests(evidence, concepts)
    index = DigestIndex(
        None if mark is None else mark.as_tuple(),
        by_message,
        None if staging_mark is None or heads is None else staging_mark.as_tuple(),
        heads if staging_mark is not None else None,
    )
    state, old = base.state, base.index
    why = ""
    if state is None or old is None or old.mark is None:
        why = "no digest index saved with the base run"
    elif not getattr(old, "complete", True):
        why = "the base run's digests were scoped: its index holds no message's evidence"
    elif not tracked:
        why = "the archive logs no changes"
    elif not archive_changes.comparable(archive, Mark(*old.mark)):
        why = "the archive is not the one the base run digested"
    if why:
        digests = conversation_digests(archive, evidence, concepts)
        return Digests(digests, index, len(digests), f"every conversation digested ({why})")
    assert state is not None and old is not None and old.mark is not None
    changed = set(archive_changes.changed_since(archive, Mark(*old.mark)))
    moved = [u for u in by_message.keys() | old.evidence.keys() if by_message.get(u) != old.evidence.get(u)]
    changed |= _conversations_of(archive, moved)
    digests = dict(state.conversations)
    for conversation in changed:
        digests.pop(conversation, None)
    digests.update(conversation_digests(archive, evidence, concepts, sorted(changed)))
    note = f"{len(changed)} conversation digest(s) recomputed since cues run {state.run_id}, the rest carried"
    return Digests(digests, index, len(changed), note)


def scoped_digests(archive: sqlite3.Connection, staging: sqlite3.Connection, base: Base) -> Scoped | None:
    """`digests_since` without reading every message's evidence: the conversations whose digest may have changed
    are those archive.db logged as changed and those of the messages whose evidence may have changed since the
    base run's digests: the messages staging.db logged as `evidence` since the base's mark (a row of theirs
    inserted, updated or deleted) and the messages of every concept whose head (survivor, alive, title, type)
    differs from the base's. Only those conversations' evidence is read (and digested); a message taken in that
    did not change gives its conversation the digest it had. None (the caller reads everything, as before) without
    a base index that has a staging mark and heads, or when either database is not the one it was taken of."""
    state, old = base.state, base.index
    if state is None or old is None or old.mark is None:
        return None
    old_heads, old_staging = getattr(old, "heads", None), getattr(old, "staging_mark", None)
    if old_heads is None or old_staging is None:
        return None
    if not archive_changes.tracked(archive) or not archive_changes.comparable(archive, Mark(*old.mark)):
        return None
    if not staging_changes.tracked(staging):
        return None
    since = staging_changes.Mark(*old_staging)
    if not staging_changes.comparable(staging, since):
        return None
    mark = archive_changes.mark(archive)  # both marks before the reads: a later change is seen next run
    now = staging_changes.mark(staging)
    heads = inputs.live_heads(staging)
    logged = set(staging_changes.changed_since(staging, staging_changes.EVIDENCE, since))
    if staging_changes.ALL in logged:
        return None
    moved = {c for c in heads.keys() | old_heads.keys() if heads.get(c) != old_heads.get(c)}
    messages = logged | inputs.messages_of_concepts(staging, moved)
    changed = set(archive_changes.changed_since(archive, Mark(*old.mark))) | _conversations_of(
        archive, sorted(messages)
    )
    read = sorted(changed)
    evidence = inputs.evidence_of(staging, heads, _message_ids(archive, read))
    concepts: dict[str, tuple[str, str]] = {}
    for concept_id in inputs.evidence_concepts(staging):
        head = heads.get(concept_id)
        if head is not None:
            concepts[f"concept:{head[0]}"] = (head[1], head[2])
    concepts = dict(sorted(concepts.items()))  # the order live_evidence's rows give (by head)
    by_message: dict[str, dict[str, float]] = {}
    for head_id, _, _, message_id, confidence in evidence:
        cue = f"concept:{head_id}"
        found = by_message.setdefault(message_id, {})
        found[cue] = max(found.get(cue, 0.0), min(max(confidence, 0.0), 1.0))
    digests = dict(state.conversations)
    for conversation in changed:
        digests.pop(conversation, None)
    digests.update(conversation_digests(archive, by_message, concepts, read))
    index = DigestIndex(
        mark.as_tuple(),
        {},
        now.as_tuple(),
        heads,
        complete=False,
    )
    note = (
        f"{len(changed)} conversation digest(s) recomputed since cues run {state.run_id}, the rest carried"
        f" (the evidence of {len(messages)} message(s) changed or moved, of those conversations read)"
    )
    return Scoped(Digests(digests, index, len(changed), note), evidence, concepts, heads, set(read))


def _chunked(conn: sqlite3.Connection, sql: str, values: Sequence[str]) -> Iterator[str]:
    """The first column of `sql` (one IN_VALUES placeholder) over `values`, SCOPE_CHUNK values a query."""
    for start in range(0, len(values), SCOPE_CHUNK):
        for row in conn.execute(sql, (json_values(values[start : start + SCOPE_CHUNK]),)):
            yield str(row[0])


def _message_ids(archive: sqlite3.Connection, conversations: Sequence[str]) -> list[str]:
    """Every message of these conversations (hidden ones too: evidence is read by message id)."""
    return list(_chunked(archive, f"SELECT uuid FROM messages WHERE conversation_id IN {IN_VALUES}", conversations))


def more_evidence(
    archive: sqlite3.Connection, staging: sqlite3.Connection, scoped: Scoped, conversations: Sequence[str]
) -> list[tuple[str, str, str, str, float]]:
    """The evidence of these conversations' messages that `scoped` has not read yet (a rebuilt conversation whose
    digest was carried: its topic links changed)."""
    wanted = sorted(set(conversations) - scoped.read)
    scoped.read.update(wanted)
    return inputs.evidence_of(staging, scoped.heads, _message_ids(archive, wanted)) if wanted else []


def _conversations_of(archive: sqlite3.Connection, messages: Sequence[str]) -> set[str]:
    return set(_chunked(archive, f"SELECT DISTINCT conversation_id FROM messages WHERE uuid IN {IN_VALUES}", messages))


_LINKS = (
    "SELECT l.item_id, t.topic_uid, t.label, l.weight FROM topic_links l"
    " JOIN topics t ON t.run_id = l.run_id AND t.topic = l.topic WHERE l.run_id = ? AND l.kind = 'segment'"
)
_TOPICS = "SELECT topic, topic_uid, label FROM topics WHERE run_id = ?"


def topic_changes(staging: sqlite3.Connection, old_run: str, new_run: str) -> set[str]:
    """Conversations with a segment whose topic links (topic, label, weight) differ between two cluster runs.

    Compared for the segments that can differ only: those with a link row written or retired after the older run
    (staging_changes.topic_links_changed: a link live at one run and not at the other is one of them) and those
    linked to a topic whose uid or label differs between the two runs; every other segment has the same link rows,
    to the same topics, at both (75k links compared both ways at 250k messages: 0.6 CPU-s, now 0.02). Both runs'
    links whole when either run is no longer in cluster_runs."""
    known = staging.execute("SELECT COUNT(*) FROM cluster_runs WHERE run_id IN (?, ?)", (old_run, new_run)).fetchone()
    if old_run == new_run or int(known[0]) < 2:
        return _link_changes(staging, old_run, new_run, "")
    items = set(staging_changes.topic_links_changed(staging, "segment", min(old_run, new_run)))
    topics = [
        int(r[0])
        for r in staging.execute(
            f"SELECT topic FROM ({_TOPICS} EXCEPT {_TOPICS}) UNION SELECT topic FROM ({_TOPICS} EXCEPT {_TOPICS})",
            (old_run, new_run, new_run, old_run),
        )
    ]
    if topics:
        linked = staging.execute(
            f"SELECT DISTINCT item_id FROM topic_link_rows WHERE kind = 'segment' AND topic IN {IN_VALUES}",
            (json_values(topics),),
        )
        items.update(str(r[0]) for r in linked)
    if not items:
        return set()
    staging.execute("DROP TABLE IF EXISTS temp.cues_topic_items")
    staging.execute("CREATE TEMP TABLE cues_topic_items (id TEXT PRIMARY KEY) WITHOUT ROWID")
    try:
        staging.executemany("INSERT INTO temp.cues_topic_items VALUES (?)", ((i,) for i in sorted(items)))
        return _link_changes(staging, old_run, new_run, " AND l.item_id IN (SELECT id FROM temp.cues_topic_items)")
    finally:
        staging.execute("DROP TABLE IF EXISTS temp.cues_topic_items")


def _link_changes(staging: sqlite3.Connection, old_run: str, new_run: str, scope: str) -> set[str]:
    """Conversations of the segments (within `scope`, SQL on the links `l`) whose links differ between two runs."""
    links = _LINKS + scope
    rows = staging.execute(
        f"SELECT DISTINCT s.conversation_id FROM (SELECT * FROM ({links} EXCEPT {links})"
        f" UNION ALL SELECT * FROM ({links} EXCEPT {links})) d"
        " JOIN segments s ON s.segment_id = d.item_id",
        (old_run, new_run, new_run, old_run),
    )
    return {str(r[0]) for r in rows}


def plan(
    archive: sqlite3.Connection,
    staging: sqlite3.Connection,
    settings: Settings,
    run_id: str,
    topic_run: str | None,
    digests: dict[str, str],
    base: Base | None = None,
) -> tuple[Plan | None, str]:
    """The incremental plan, or None and why this run builds everything."""
    share = settings.memory.rebuild_share
    if base is None:
        base = load_base(staging, settings)
    if share <= 0:
        return None, "memory.rebuild_share is 0"
    if base.run_id is None or base.run_id == run_id:
        return None, "no earlier cues run to start from"
    state = base.state
    if state is None:
        return None, f"no usable saved state for cues run {base.run_id}"
    if state.settings != settings_digest(settings):
        return None, "memory settings changed since the last build"
    if (state.topic_run is None) != (topic_run is None):
        return None, "topics appeared or vanished since the last build"
    changed = {c for c, d in digests.items() if state.conversations.get(c) != d}
    gone = sorted(set(state.conversations) - set(digests))
    if topic_run is not None and state.topic_run is not None and topic_run != state.topic_run:
        changed |= topic_changes(staging, state.topic_run, topic_run) & set(digests)
    if len(changed) + len(gone) >= share * max(len(digests), 1):
        return None, (
            f"{len(changed) + len(gone)} of {len(digests)} conversations changed since cues run {state.run_id}"
            f" (memory.rebuild_share {share})"
        )
    rebuilt = sorted(changed)
    drift = state.drift + message_drift(archive, staging, state.run_id, rebuilt, gone)
    if drift >= share * max(state.frozen.n, 1):
        return None, (
            f"{drift} messages added or removed since full build {state.full_run}, of its {state.frozen.n}"
            f" (memory.rebuild_share {share}): its global counts are stale"
        )
    if _new_speakers(archive, rebuilt, set(state.frozen.authors)):
        return None, "a new speaker name (every dense key masks the speakers' names)"
    return Plan(state, rebuilt, gone, digests, state.changed | changed | set(gone), drift), ""


def message_drift(
    archive: sqlite3.Connection, staging: sqlite3.Connection, base_run: str, rebuilt: Sequence[str], gone: Sequence[str]
) -> int:
    """Messages added or removed by this run: per rebuilt or gone conversation, the messages in the archive now and
    in the base run's memory that are not in both."""
    now = inputs.conversation_message_ids(archive, rebuilt)
    before = store.message_ids(staging, base_run, [*rebuilt, *gone])
    return sum(len(now.get(c, set()) ^ before.get(c, set())) for c in {*rebuilt, *gone})


def _new_speakers(archive: sqlite3.Connection, conversations: list[str], known: set[str]) -> bool:
    authors = archive.execute(
        f"SELECT DISTINCT author FROM visible_messages WHERE conversation_id IN {IN_VALUES} AND author IS NOT NULL"
        f" AND role IN {IN_VALUES}",
        (json_values(conversations), json_values(sorted(NAMED_ROLES))),
    )
    return any(author not in known for (author,) in authors)


def state_path(data_dir: Path, run_id: str) -> Path:
    return data_dir / DIRECTORY / f"{run_id}.pickle"


def save_state(data_dir: Path, state: CuesState, keep: set[str], index: DigestIndex | None = None) -> None:
    """Write the run's state and its digest index (a temporary file renamed into place), then remove other runs'
    states not kept."""
    directory = data_dir / DIRECTORY
    try:
        directory.mkdir(parents=True, exist_ok=True)
        target = state_path(data_dir, state.run_id)
        temporary = directory / f".tmp-{state.run_id}-{os.getpid()}"
        payload = pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL)
        if index is not None:
            payload += pickle.dumps(index, protocol=pickle.HIGHEST_PROTOCOL)
        temporary.write_bytes(payload)
        os.replace(temporary, target)
        for stale in directory.iterdir():
            if stale.name.endswith(".pickle") and stale.name.removesuffix(".pickle") not in keep | {state.run_id}:
                stale.unlink(missing_ok=True)
    except OSError as error:  # the run's rows stand; the next run builds in full
        log.warning("cues state not saved in %s (%s): the next cues run builds in full", directory, error)


class _Unpickler(pickle.Unpickler):
    """Only this module's classes and plain builtins: the file is ours, but never a way to run code."""

    ALLOWED: ClassVar[set[tuple[str, str]]] = {
        ("memory.cues_state", "CuesState"),
        ("memory.graph", "FrozenCounts"),
        ("memory.cues_state", "DigestIndex"),
        ("builtins", "set"),
    }

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) not in self.ALLOWED:
            raise pickle.UnpicklingError(f"{module}.{name} is not allowed in a cues state")
        return super().find_class(module, name)


def load_state(data_dir: Path, run_id: str) -> CuesState | None:
    return load_saved(data_dir, run_id)[0]


def load_saved(data_dir: Path, run_id: str) -> tuple[CuesState | None, DigestIndex | None]:
    """The run's state, and its digest index when the file has one."""
    path = state_path(data_dir, run_id)
    try:
        stream = io.BytesIO(path.read_bytes())
        state = _Unpickler(stream).load()
    except FileNotFoundError:
        return None, None
    except Exception as error:  # a damaged or foreign file: build in full, say why
        log.warning("cues state %s unreadable (%s): building in full", path, error)
        return None, None
    if not isinstance(state, CuesState) or state.format != FORMAT or state.run_id != run_id:
        return None, None
    try:  # a second pickle: an unpickler of its own (a memo kept from the first would resolve its references there)
        index = _Unpickler(stream).load()
    except EOFError:  # written before the index existed
        return state, None
    except Exception as error:
        log.warning("cues state %s: digest index unreadable (%s): every conversation digested", path, error)
        return state, None
    return state, index if isinstance(index, DigestIndex) else None
