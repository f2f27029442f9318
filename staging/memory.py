"""staging.db: the Cue-Tag-Content graph the cues stage builds, each row shared by the runs it belongs to.

Tables (created by migration 3 of staging.db, made shared across runs by migration 9: staging/memory_history.py;
frozen: change them with a new migration). Every row carries the run that created it (`run_id`) and the run that
retired it (`retired_run_id`); the memory of run R is the rows live at R (`memory_history.LIVE`). A run writes
what differs from the run before it, with its memory_runs row, in one transaction; a re-run of the stage for the
same run undoes that run first (ids are content keys, so the same inputs give the same rows):

- `memory_runs`: one row per run: counts, the hub report (which cues were down-weighted and why), notes.
- `memory_content`: Content nodes: a message (`content_id` = its uuid) or a merged group of near-identical
  messages (`merged:<hash>`; its originals point at it through `merged_into`). Key text (what recall matches:
  the message, expanded with its cue names), conversation, seq, role, time, day, source format, tokens.
- `memory_cues`: Cue nodes (anchors): extracted concepts and (kind 'keyphrase', ids `wn:<offset>`) WordNet
  categories of their head nouns, with document frequency, IDF and the hub flag.
- `memory_tags`: Tag nodes (groupings): conversation, day, month, topic, role, concept type, source.
- `memory_edges`: weighted associations (cue-content, cue-tag, tag-content), traversed both ways.
- `memory_merges`: (merged node, original message) pairs: consolidation keeps every original.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, fields
from operator import attrgetter
from typing import Any

from staging import memory_history as history
from staging.db import IN_VALUES, Transaction, json_values
from staging.memory_history import LIVE

SCHEMA = [  # migration 3's layout, frozen: migration 9 (memory_history.SCHEMA) is the current one
    """CREATE TABLE IF NOT EXISTS memory_runs (
        run_id TEXT PRIMARY KEY,
        content INTEGER NOT NULL,
        cues INTEGER NOT NULL,
        tags INTEGER NOT NULL,
        edges INTEGER NOT NULL,
        hubs INTEGER NOT NULL,
        merged INTEGER NOT NULL,
        summary TEXT NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS memory_content (
        run_id TEXT NOT NULL,
        content_id TEXT NOT NULL,
        kind TEXT NOT NULL CHECK (kind IN ('message', 'merged')),
        conversation_id TEXT NOT NULL,
        seq INTEGER NOT NULL,
        role TEXT NOT NULL,
        author TEXT,
        created_at TEXT,
        day TEXT,
        source TEXT NOT NULL,
        key_text TEXT NOT NULL,
        tokens INTEGER NOT NULL,
        merged_into TEXT,
        PRIMARY KEY (run_id, content_id)
    ) WITHOUT ROWID""",
    """CREATE TABLE IF NOT EXISTS memory_cues (
        run_id TEXT NOT NULL,
        cue_id TEXT NOT NULL,
        name TEXT NOT NULL,
        kind TEXT NOT NULL CHECK (kind IN ('concept', 'keyphrase')),
        concept_type TEXT,
        df INTEGER NOT NULL,
        idf REAL NOT NULL,
        hub INTEGER NOT NULL,
        PRIMARY KEY (run_id, cue_id)
    ) WITHOUT ROWID""",
    """CREATE TABLE IF NOT EXISTS memory_tags (
        run_id TEXT NOT NULL,
        tag_id TEXT NOT NULL,
        kind TEXT NOT NULL CHECK (kind IN ('conversation', 'day', 'month', 'topic', 'role', 'concept_type', 'source')),
        label TEXT NOT NULL,
        size INTEGER NOT NULL,
        PRIMARY KEY (run_id, tag_id)
    ) WITHOUT ROWID""",
    """CREATE TABLE IF NOT EXISTS memory_edges (
        run_id TEXT NOT NULL,
        src TEXT NOT NULL,
        dst TEXT NOT NULL,
        kind TEXT NOT NULL CHECK (kind IN ('cue-content', 'cue-tag', 'tag-content')),
        weight REAL NOT NULL,
        PRIMARY KEY (run_id, src, dst)
    ) WITHOUT ROWID""",
    "CREATE INDEX IF NOT EXISTS memory_edges_by_dst ON memory_edges (run_id, dst)",
    """CREATE TABLE IF NOT EXISTS memory_merges (
        run_id TEXT NOT NULL,
        merged_id TEXT NOT NULL,
        original_id TEXT NOT NULL,
        PRIMARY KEY (run_id, merged_id, original_id)
    ) WITHOUT ROWID""",
]

RUN_TABLES = ("memory_runs", "memory_content", "memory_cues", "memory_tags", "memory_edges", "memory_merges")


@dataclass(slots=True)
class ContentRow:
    content_id: str
    kind: str
    conversation_id: str
    seq: int
    role: str
    author: str | None
    created_at: str | None
    day: str | None
    source: str
    key_text: str
    tokens: int
    merged_into: str | None = None


@dataclass(slots=True)
class CueRow:
    cue_id: str
    name: str
    kind: str
    concept_type: str | None
    df: int
    idf: float
    hub: bool


@dataclass(slots=True)
class TagRow:
    tag_id: str
    kind: str
    label: str
    size: int


@dataclass(slots=True)
class EdgeRow:
    src: str
    dst: str
    kind: str
    weight: float


EdgeTuple = tuple[str, str, str, float]
"""An edge as the cues stage builds and writes it: (src, dst, kind, weight), EdgeRow's fields in order (a plain
tuple: ~16 edges a message, built, sorted and written with no dataclass instance or attrgetter call each)."""


@dataclass(slots=True)
class MemoryGraph:
    """Everything one cues run writes (and what recall reads back)."""

    content: list[ContentRow]
    cues: list[CueRow]
    tags: list[TagRow]
    edges: list[EdgeRow]
    merges: list[tuple[str, str]]


def _columns(cls: Any) -> list[str]:
    return [f.name for f in fields(cls)]


_TABLES: list[tuple[str, Any, str]] = [
    ("memory_content", ContentRow, "content"),
    ("memory_cues", CueRow, "cues"),
    ("memory_tags", TagRow, "tags"),
    ("memory_edges", EdgeRow, "edges"),
]


def write_run(conn: sqlite3.Connection, run_id: str, graph: MemoryGraph, summary: Mapping[str, Any]) -> None:
    """Replace everything this run's cues stage wrote, in one transaction (a re-run is idempotent)."""
    with RunWriter(conn, run_id) as writer:
        writer.add(graph.content, [(e.src, e.dst, e.kind, e.weight) for e in graph.edges], graph.merges)
        writer.add_cues(graph.cues)
        writer.add_tags(graph.tags)
        writer.finish(summary)


_CUE_VALUES = attrgetter(*_columns(CueRow))
_TAG_VALUES = attrgetter(*_columns(TagRow))


class RunWriter:
    """One run's rows written in batches inside one transaction (`with RunWriter(conn, run_id) as w:`): the runs
    to take back first (`memory_history.undo`: this run on a re-run, and with a `base` every run after it, which
    no successful cues stage finished), then a full build (`base` None) retires every current row, and every
    batch appends; `finish` writes the run row with the counts; an exception rolls all of it back. An incremental
    run starts from its base's counts and retires what it rebuilds (memory/cues_incremental.py). Cue counts per
    conversation wait in a temporary table until every batch is in (`cue_conversations`). `counts` are the run's
    memory (shared rows included: the memory_runs row); `written` the rows this run wrote itself.

    A full build's edges (~18 a message) wait in a temporary table too and go in by `finish` at once, sorted by
    key, with the `dst` index built afterwards: each batch's edges span every cue and tag, so written batch by
    batch they land all over both B-trees (random page writes, most of the stage's time at 1M messages); sorted,
    the key's B-tree is written in order and the index is built by one sort. Nothing reads a full build's edges
    before `finish`; an incremental run (`base`) reads and retires its edges as it goes, so it writes them at once."""

    def __init__(self, conn: sqlite3.Connection, run_id: str, *, base: str | None = None) -> None:
        self.conn = conn
        self.run_id = run_id
        self.base = base
        self.counts = {"content": 0, "cues": 0, "tags": 0, "edges": 0, "hubs": 0, "merged": 0}
        self.written = {"content": 0, "cues": 0, "tags": 0, "edges": 0}
        self._transaction = Transaction(conn)
        self._pending_edges = base is None  # a full build's edges wait in temp.memory_edges_pending (`finish`)

    def __enter__(self) -> RunWriter:
        self._transaction.__enter__()
        try:
            self._begin()
        except BaseException:
            self._transaction.__exit__(*sys.exc_info())
            raise
        self.conn.execute("DROP TABLE IF EXISTS temp.memory_cue_conversations")
        self.conn.execute("CREATE TEMP TABLE memory_cue_conversations (cue_id TEXT, conversation_id TEXT, n INTEGER)")
        self.conn.execute("DROP TABLE IF EXISTS temp.memory_edges_pending")
        if self._pending_edges:
            self.conn.execute("CREATE TEMP TABLE memory_edges_pending (src TEXT, dst TEXT, kind TEXT, weight REAL)")
        return self

    def _begin(self) -> None:
        run_id, base = self.run_id, self.base
        runs = [str(r[0]) for r in self.conn.execute("SELECT run_id FROM memory_runs")]
        undone = [r for r in runs if r >= run_id or (base is not None and r > base)]
        finished = set(_finished(self.conn, undone))
        later = sorted(r for r in undone if r != run_id and r in finished)
        if later:
            raise ValueError(
                f"cues run {run_id}: run {later[-1]} built a newer memory; run the cues stage in a new run instead"
            )
        history.undo(self.conn, undone)
        if base is None:
            history.retire_current(self.conn, run_id)
            return
        row = self.conn.execute(
            "SELECT content, cues, tags, edges, hubs, merged FROM memory_runs WHERE run_id = ?", (base,)
        ).fetchone()
        if row is None:
            raise ValueError(f"cues run {run_id}: base run {base} has no memory rows")
        self.counts.update(zip(("content", "cues", "tags", "edges", "hubs", "merged"), map(int, row), strict=True))

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        try:
            # on a failure, its error is the one to report: a full temporary directory fails these drops too
            with contextlib.suppress(*(() if exc_type is None else (sqlite3.Error,))):
                self.conn.execute("DROP TABLE IF EXISTS temp.memory_cue_conversations")
                self.conn.execute("DROP TABLE IF EXISTS temp.memory_edges_pending")
        finally:
            self._transaction.__exit__(exc_type, exc, tb)

    def _insert(self, table: str, cls: Any, rows: Iterable[Any]) -> int:
        columns = _columns(cls)
        marks = ", ".join("?" * (len(columns) + 1))
        values = attrgetter(*columns)  # flat rows of scalars: astuple's deep copy is most of the write's time
        before = self.conn.total_changes
        self.conn.executemany(
            f"INSERT INTO {table} (run_id, {', '.join(columns)}) VALUES ({marks})",
            ((self.run_id, *values(row)) for row in rows),
        )
        return self.conn.total_changes - before

    def add(
        self,
        content: Sequence[ContentRow],
        edges: Iterable[EdgeTuple],
        merges: Iterable[tuple[str, str]],
        cue_conversations: Iterable[tuple[str, str, int]] = (),
    ) -> None:
        """One batch: content rows, edges, merges, and (cue, conversation, messages linked there) counts."""
        written = self._insert("memory_content", ContentRow, content)
        self.counts["content"] += written
        self.written["content"] += written
        self.counts["merged"] += sum(1 for c in content if c.kind == "merged")
        self.add_edges(edges)
        self.conn.executemany(
            "INSERT INTO memory_merges (run_id, merged_id, original_id) VALUES (?, ?, ?)",
            ((self.run_id, m, o) for m, o in merges),
        )
        self.conn.executemany("INSERT INTO temp.memory_cue_conversations VALUES (?, ?, ?)", cue_conversations)

    def add_edges(self, edges: Iterable[EdgeTuple]) -> None:
        """(src, dst, kind, weight) rows (a batch's come sorted: neighbouring inserts share B-tree pages)."""
        run_id, before = self.run_id, self.conn.total_changes
        if self._pending_edges:  # written by `finish`
            self.conn.executemany("INSERT INTO temp.memory_edges_pending VALUES (?, ?, ?, ?)", edges)
        else:
            self.conn.executemany(
                "INSERT INTO memory_edges (run_id, src, dst, kind, weight) VALUES (?, ?, ?, ?, ?)",
                ((run_id, *edge) for edge in edges),
            )
        self.counts["edges"] += self.conn.total_changes - before
        self.written["edges"] += self.conn.total_changes - before

    def add_cues(self, cues: Sequence[CueRow]) -> None:
        written = self._insert("memory_cues", CueRow, cues)
        self.counts["cues"] += written
        self.written["cues"] += written
        self.counts["hubs"] += sum(1 for c in cues if c.hub)

    def add_tags(self, tags: Sequence[TagRow]) -> None:
        written = self._insert("memory_tags", TagRow, tags)
        self.counts["tags"] += written
        self.written["tags"] += written

    def replace_cues(self, cues: Sequence[CueRow]) -> None:
        """An incremental run's cues (all of them): the changed ones retired and written, equal ones shared."""
        _, written = history.replace(self.conn, "memory_cues", self.run_id, map(_CUE_VALUES, cues), "1")
        self.counts["cues"], self.counts["hubs"] = len(cues), sum(1 for c in cues if c.hub)
        self.written["cues"] += written

    def replace_tags(self, tags: Sequence[TagRow]) -> None:
        """An incremental run's tags (all of them), as `replace_cues`."""
        _, written = history.replace(self.conn, "memory_tags", self.run_id, map(_TAG_VALUES, tags), "1")
        self.counts["tags"] = len(tags)
        self.written["tags"] += written

    def cue_conversations(self) -> Iterator[tuple[str, str, int]]:
        """(cue, conversation, messages) over all batches so far, summed, in (cue, conversation) order."""
        for row in self.conn.execute(
            "SELECT cue_id, conversation_id, SUM(n) FROM temp.memory_cue_conversations"
            " GROUP BY cue_id, conversation_id ORDER BY cue_id, conversation_id"
        ):
            yield str(row[0]), str(row[1]), int(row[2])

    def finish(self, summary: Mapping[str, Any]) -> None:
        """The run row: its counts and summary (the transaction commits when the `with` block ends); a full build's
        edges written first."""
        if self._pending_edges:
            self._write_pending_edges()
        c = self.counts
        self.conn.execute(
            "INSERT INTO memory_runs (run_id, content, cues, tags, edges, hubs, merged, summary)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                self.run_id,
                c["content"],
                c["cues"],
                c["tags"],
                c["edges"],
                c["hubs"],
                c["merged"],
                json.dumps(summary, sort_keys=True),
            ),
        )

    def _write_pending_edges(self) -> None:
        """A full build's edges, from the temporary table into memory_edges in key order, the `dst` index dropped
        before and built again after (inside the run's transaction: a failure or a kill leaves it as it was). A
        duplicate edge fails here as it would have when added."""
        self._pending_edges = False
        self.conn.execute("DROP INDEX IF EXISTS memory_edges_by_dst")
        self.conn.execute(
            "INSERT INTO memory_edges (run_id, src, dst, kind, weight)"
            " SELECT ?, src, dst, kind, weight FROM temp.memory_edges_pending ORDER BY src, dst",
            (self.run_id,),
        )
        self.conn.execute(history.EDGES_BY_DST)
        self.conn.execute("DROP TABLE temp.memory_edges_pending")


def has_memory(conn: sqlite3.Connection) -> bool:
    found = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'memory_runs'").fetchone()
    return found is not None


def latest_run(conn: sqlite3.Connection) -> str | None:
    """The newest run that built the graph (run ids sort by time)."""
    if not has_memory(conn):
        return None
    row = conn.execute("SELECT run_id FROM memory_runs ORDER BY run_id DESC LIMIT 1").fetchone()
    return None if row is None else str(row[0])


def _finished(conn: sqlite3.Connection, run_ids: Iterable[str]) -> list[str]:
    """Those of the runs whose cues stage succeeded."""
    return [
        str(r[0])
        for r in conn.execute(
            f"SELECT run_id FROM stage_runs WHERE stage = 'cues' AND status = 'succeeded' AND run_id IN {IN_VALUES}",
            (json_values(list(run_ids)),),
        )
    ]


def latest_finished_run(conn: sqlite3.Connection) -> str | None:
    """The newest run whose cues stage succeeded: what an incremental cues run may start from. A run killed or
    failed after its rows were written (its keys not yet embedded) is never a base."""
    if not has_memory(conn):
        return None
    row = conn.execute(
        "SELECT m.run_id FROM memory_runs m WHERE EXISTS (SELECT 1 FROM stage_runs s WHERE s.run_id = m.run_id"
        " AND s.stage = 'cues' AND s.status = 'succeeded') ORDER BY m.run_id DESC LIMIT 1"
    ).fetchone()
    return None if row is None else str(row[0])


def read_run(conn: sqlite3.Connection, run_id: str, *, edges: bool = True, key_texts: bool = True) -> MemoryGraph:
    """The graph one run wrote, rows in key order (deterministic). `edges=False` leaves the edges out (the
    recall index streams them with `iter_edges`: ~19 per message, they were most of its peak memory);
    `key_texts=False` leaves every content row's key text empty (the recall index reads them one at a time with
    `iter_key_texts`: ~1 KB a message)."""
    parts: dict[str, list[Any]] = {"edges": []}
    for table, cls, attr in _TABLES:
        if attr == "edges" and not edges:
            continue
        columns = _columns(cls)
        key = columns[:2] if table == "memory_edges" else columns[:1]
        selected = ["'' AS key_text" if c == "key_text" and not key_texts else c for c in columns]
        rows = conn.execute(
            f"SELECT {', '.join(selected)} FROM {table} WHERE {LIVE} ORDER BY {', '.join(key)}", (run_id, run_id)
        )
        parts[attr] = [cls(*row) for row in rows]
    for cue in parts["cues"]:
        cue.hub = bool(cue.hub)
    merges = [
        (str(r[0]), str(r[1]))
        for r in conn.execute(
            f"SELECT merged_id, original_id FROM memory_merges WHERE {LIVE} ORDER BY 1, 2", (run_id, run_id)
        )
    ]
    return MemoryGraph(parts["content"], parts["cues"], parts["tags"], parts["edges"], merges)


def read_cues(conn: sqlite3.Connection, run_id: str) -> list[CueRow]:
    """The cues of one run, in key order (what `read_run` gives as `cues`)."""
    rows = conn.execute(
        f"SELECT {', '.join(_columns(CueRow))} FROM memory_cues WHERE {LIVE} ORDER BY cue_id", (run_id, run_id)
    )
    cues = [CueRow(*row) for row in rows]
    for cue in cues:
        cue.hub = bool(cue.hub)
    return cues


def iter_key_texts(conn: sqlite3.Connection, run_id: str) -> Iterator[tuple[str, str]]:
    """(content_id, key_text) of the message rows, one at a time, in `read_run`'s order of its content."""
    for row in conn.execute(
        f"SELECT content_id, kind, key_text FROM memory_content WHERE {LIVE} ORDER BY content_id", (run_id, run_id)
    ):
        if row[1] == "message":
            yield row[0], row[2]


def iter_edges(conn: sqlite3.Connection, run_id: str, kind: str) -> Iterator[tuple[str, str, float]]:
    """(src, dst, weight) of one kind of edge, one at a time, in key order."""
    for row in conn.execute(
        f"SELECT src, dst, weight FROM memory_edges WHERE {LIVE} AND kind = ? ORDER BY src, dst", (run_id, run_id, kind)
    ):
        yield row[0], row[1], row[2]


def run_summary(conn: sqlite3.Connection, run_id: str) -> dict[str, Any] | None:
    row = conn.execute("SELECT * FROM memory_runs WHERE run_id = ?", (run_id,)).fetchone()
    if row is None:
        return None
    found = {k: row[k] for k in row.keys()}  # noqa: SIM118 (a Row iterates values)
    found["summary"] = json.loads(found["summary"])
    return found


def message_ids(conn: sqlite3.Connection, run_id: str, conversation_ids: Iterable[str]) -> dict[str, set[str]]:
    """The messages of some conversations in run `run_id`'s memory (merged nodes left out: their originals stay)."""
    wanted = sorted(set(conversation_ids))
    found: dict[str, set[str]] = {}
    for start in range(0, len(wanted), 5_000):
        for conversation, content in conn.execute(
            f"SELECT conversation_id, content_id FROM memory_content WHERE {LIVE} AND kind = 'message'"
            f" AND conversation_id IN {IN_VALUES}",
            (run_id, run_id, json_values(wanted[start : start + 5_000])),
        ):
            found.setdefault(str(conversation), set()).add(str(content))
    return found


def originals(conn: sqlite3.Connection, run_id: str, merged_ids: Iterable[str]) -> dict[str, list[str]]:
    """The original message ids of each merged content node."""
    wanted = list(merged_ids)
    found: dict[str, list[str]] = {m: [] for m in wanted}
    for row in conn.execute(
        f"SELECT merged_id, original_id FROM memory_merges WHERE {LIVE} AND merged_id IN {IN_VALUES} ORDER BY 1, 2",
        (run_id, run_id, json_values(wanted)),
    ):
        found[str(row[0])].append(str(row[1]))
    return found
