"""staging.db: the concept store the concepts stage maintains, and its read-only views.

- `concepts`: one row per concept_id; `title_key` (folded title) is UNIQUE, so no two concepts share a title.
  `merged_into` points at the survivor of a merge; `run_id` is the last run that changed the row.
- `concept_evidence`: (concept_id, message_id, text_key) -> the verbatim span, its segment, the message time,
  the type the hypothesis gave and which extractor proposed it ("offline" or "llm").
- `concept_relations`: (concept_id, relation, target_id).
- `concept_transitions`: (concept_id, ordinal) -> from_state, to_state, reason, other concept.
- `concept_inputs`: every hypothesis the loop has handled (key: extraction cache key + index) and what it
  decided (create, attach, refine, reject, duplicate): re-runs skip what is already here.

`SCHEMA` is migration 2 of staging/migrations.py (frozen: change a table with a new migration there).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from operator import attrgetter
from typing import TYPE_CHECKING, Any, Protocol

from staging.db import IN_VALUES, json_values, plain_rows

if TYPE_CHECKING:
    from contracts.concepts import ConceptHypothesis  # pydantic: loaded by list_concepts only

SCHEMA = [
    """CREATE TABLE IF NOT EXISTS concepts (
        concept_id TEXT PRIMARY KEY,
        title TEXT NOT NULL,
        title_key TEXT NOT NULL,
        type TEXT NOT NULL,
        description TEXT NOT NULL,
        state TEXT NOT NULL CHECK (state IN ('active', 'weak', 'merged', 'split', 'archived')),
        confidence REAL NOT NULL,
        aliases TEXT NOT NULL,
        revision_count INTEGER NOT NULL,
        evidence_count INTEGER NOT NULL,
        first_seen TEXT,
        last_seen TEXT,
        merged_into TEXT,
        extractors TEXT NOT NULL,
        created_run_id TEXT NOT NULL,
        run_id TEXT NOT NULL,
        settled INTEGER NOT NULL DEFAULT 0
    )""",
    "CREATE UNIQUE INDEX IF NOT EXISTS concepts_by_title ON concepts (title_key)",
    """CREATE TABLE IF NOT EXISTS concept_evidence (
        concept_id TEXT NOT NULL,
        message_id TEXT NOT NULL,
        text_key TEXT NOT NULL,
        text TEXT NOT NULL,
        confidence REAL NOT NULL,
        segment_id TEXT NOT NULL,
        created_at TEXT,
        hypothesis_type TEXT NOT NULL,
        extractor TEXT NOT NULL,
        run_id TEXT NOT NULL,
        PRIMARY KEY (concept_id, message_id, text_key)
    )""",
    """CREATE TABLE IF NOT EXISTS concept_relations (
        concept_id TEXT NOT NULL,
        relation TEXT NOT NULL,
        target_id TEXT NOT NULL,
        confidence REAL NOT NULL,
        run_id TEXT NOT NULL,
        PRIMARY KEY (concept_id, relation, target_id)
    )""",
    """CREATE TABLE IF NOT EXISTS concept_transitions (
        concept_id TEXT NOT NULL,
        ordinal INTEGER NOT NULL,
        from_state TEXT,
        to_state TEXT NOT NULL,
        reason TEXT NOT NULL,
        other_id TEXT,
        run_id TEXT NOT NULL,
        PRIMARY KEY (concept_id, ordinal)
    )""",
    """CREATE TABLE IF NOT EXISTS concept_inputs (
        input_key TEXT PRIMARY KEY,
        segment_id TEXT NOT NULL,
        title TEXT NOT NULL,
        decision TEXT NOT NULL CHECK (decision IN ('create', 'attach', 'refine', 'reject', 'duplicate')),
        concept_id TEXT,
        method TEXT,
        score REAL,
        run_id TEXT NOT NULL
    )""",
    "CREATE INDEX IF NOT EXISTS concept_inputs_by_run ON concept_inputs (run_id, decision)",
]


@dataclass(slots=True)
class ConceptRow:
    """A concept as stored (aliases and extractors as lists)."""

    concept_id: str
    title: str
    title_key: str
    type: str
    description: str
    state: str
    confidence: float
    aliases: list[str]
    revision_count: int
    evidence_count: int
    first_seen: str | None
    last_seen: str | None
    merged_into: str | None
    extractors: list[str]
    created_run_id: str
    run_id: str
    settled: bool = False  # False until the end-of-run checks (type, split, state) have seen its last change


_COLUMNS = [f.name for f in fields(ConceptRow)]
_JSON = ("aliases", "extractors")
_values = attrgetter(*_COLUMNS)
_ALIASES, _EXTRACTORS, _SETTLED = (_COLUMNS.index(name) for name in (*_JSON, "settled"))


def load_concepts(conn: sqlite3.Connection, ids: Iterable[str] | None = None) -> dict[str, ConceptRow]:
    """Every stored concept by id, in id order (`ids`: only those).

    Read by several stages every run (tens of thousands of rows), so built the cheap way: plain tuples,
    positional construction, and each distinct extractors list parsed once (a handful of values; every row still
    gets its own list).
    """
    found: dict[str, ConceptRow] = {}
    args: tuple[str, ...]
    loads = json.loads
    extractors: dict[str, list[str]] = {}
    where, args = "", ()
    if ids is not None:
        where, args = f" WHERE concept_id IN {IN_VALUES}", (json_values(ids),)
    for row in plain_rows(conn, f"SELECT {', '.join(_COLUMNS)} FROM concepts{where} ORDER BY concept_id", args):
        values = list(row)
        aliases = values[_ALIASES]
        values[_ALIASES] = [] if aliases == "[]" else loads(aliases)
        text = values[_EXTRACTORS]
        parsed = extractors.get(text)
        if parsed is None:
            parsed = extractors[text] = loads(text)
        values[_EXTRACTORS] = list(parsed)
        values[_SETTLED] = bool(values[_SETTLED])
        found[values[0]] = ConceptRow(*values)
    return found


def upsert_concepts(conn: sqlite3.Connection, rows: Iterable[ConceptRow]) -> None:
    marks = ", ".join("?" * len(_COLUMNS))
    updates = ", ".join(f"{c} = excluded.{c}" for c in _COLUMNS[1:] if c != "created_run_id")
    values = []
    for row in rows:
        value = list(_values(row))  # not astuple: its deep copy of every row cost more than the write
        for name in _JSON:
            value[_COLUMNS.index(name)] = json.dumps(value[_COLUMNS.index(name)], ensure_ascii=False)
        values.append(value)
    conn.executemany(
        f"INSERT INTO concepts ({', '.join(_COLUMNS)}) VALUES ({marks})"
        f" ON CONFLICT (concept_id) DO UPDATE SET {updates}",
        values,
    )


def unfinished_inputs(conn: sqlite3.Connection) -> dict[str, set[str]]:
    """Cache key -> its handled input keys, for each current extraction with a hypothesis not handled yet.

    An input key is `cache_key:index`, so an extraction's handled inputs are one range of concept_inputs' key
    index; an extraction is finished when that range holds every index of its hypotheses list (counted by
    SQLite, the JSON is not parsed here). The concepts stage reads and parses only the unfinished ones.
    """
    unfinished = [
        str(row[0])
        for row in conn.execute(
            "SELECT DISTINCT se.cache_key FROM segment_extractions se"
            " JOIN extractions e ON e.cache_key = se.cache_key AND e.status = 'ok'"
            " JOIN segments s ON s.segment_id = se.segment_id AND s.retired_run_id IS NULL"
            " WHERE (SELECT COUNT(*) FROM concept_inputs i"
            "        WHERE i.input_key > se.cache_key || ':' AND i.input_key < se.cache_key || ';'"
            "        AND CAST(substr(i.input_key, length(se.cache_key) + 2) AS INTEGER)"
            "            < json_array_length(COALESCE(e.hypotheses, '[]')))"
            " < json_array_length(COALESCE(e.hypotheses, '[]'))"
        )
    ]
    return handled_inputs(conn, unfinished)


def handled_inputs(conn: sqlite3.Connection, keys: list[str]) -> dict[str, set[str]]:
    """Each extraction's handled inputs (concept_inputs keys `KEY:index`), for each of `keys`."""
    found: dict[str, set[str]] = {key: set() for key in keys}
    rows = conn.execute(
        "SELECT k.value, i.input_key FROM json_each(?) k CROSS JOIN concept_inputs i"
        " WHERE i.input_key > k.value || ':' AND i.input_key < k.value || ';'",
        (json.dumps(keys),),
    )
    for key, input_key in rows:
        found[str(key)].add(str(input_key))
    return found


def transition_counts(conn: sqlite3.Connection, ids: Iterable[str] | None = None) -> dict[str, int]:
    """How many transitions each concept has (`ids`: only those)."""
    if ids is not None:
        rows = conn.execute(
            f"SELECT concept_id, COUNT(*) FROM concept_transitions WHERE concept_id IN {IN_VALUES} GROUP BY 1",
            (json_values(ids),),
        )
        return {str(r[0]): int(r[1]) for r in rows}
    return {
        str(r[0]): int(r[1]) for r in conn.execute("SELECT concept_id, COUNT(*) FROM concept_transitions GROUP BY 1")
    }


def add_evidence(conn: sqlite3.Connection, concept_id: str, run_id: str, **span: Any) -> bool:
    """Insert one evidence span unless the concept already has it; True when it was new."""
    before = conn.total_changes
    conn.execute(
        "INSERT OR IGNORE INTO concept_evidence (concept_id, message_id, text_key, text, confidence, segment_id,"
        " created_at, hypothesis_type, extractor, run_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            concept_id,
            span["message_id"],
            span["text_key"],
            span["text"],
            span["confidence"],
            span["segment_id"],
            span["created_at"],
            span["hypothesis_type"],
            span["extractor"],
            run_id,
        ),
    )
    return conn.total_changes > before


def copy_evidence(conn: sqlite3.Connection, source: str, target: str, run_id: str, only_type: str | None = None) -> int:
    """Copy `source`'s evidence to `target` (a merge survivor or a split child); returns how many were new."""
    before = conn.total_changes
    conn.execute(
        "INSERT OR IGNORE INTO concept_evidence (concept_id, message_id, text_key, text, confidence, segment_id,"
        " created_at, hypothesis_type, extractor, run_id) SELECT ?, message_id, text_key, text, confidence,"
        " segment_id, created_at, hypothesis_type, extractor, ? FROM concept_evidence WHERE concept_id = ?"
        " AND (? IS NULL OR hypothesis_type = ?)",
        (target, run_id, source, only_type, only_type),
    )
    return conn.total_changes - before


def evidence_summary(conn: sqlite3.Connection, concept_id: str) -> tuple[int, str | None, str | None]:
    """Evidence count and the earliest and latest evidence times of one concept."""
    row = conn.execute(
        "SELECT COUNT(*), MIN(created_at), MAX(created_at) FROM concept_evidence WHERE concept_id = ?", (concept_id,)
    ).fetchone()
    return int(row[0]), row[1], row[2]


def type_segments(conn: sqlite3.Connection, concept_id: str) -> dict[str, int]:
    """How many distinct segments gave this concept each type."""
    rows = conn.execute(
        "SELECT hypothesis_type, COUNT(DISTINCT segment_id) FROM concept_evidence WHERE concept_id = ? GROUP BY 1",
        (concept_id,),
    )
    return {str(r[0]): int(r[1]) for r in rows}


def conversations_of(conn: sqlite3.Connection, concept_id: str) -> set[str]:
    """The conversations a concept's evidence is in (through its segments)."""
    rows = conn.execute(
        "SELECT DISTINCT s.conversation_id FROM concept_evidence e JOIN segments s ON s.segment_id = e.segment_id"
        " WHERE e.concept_id = ?",
        (concept_id,),
    )
    return {str(r[0]) for r in rows}


def evidence_keys(conn: sqlite3.Connection, concept_id: str) -> set[tuple[str, str]]:
    """A concept's evidence as (message_id, text_key) pairs: what two concepts citing the same sentences share."""
    rows = conn.execute("SELECT message_id, text_key FROM concept_evidence WHERE concept_id = ?", (concept_id,))
    return {(str(r[0]), str(r[1])) for r in rows}


def evidence_texts(conn: sqlite3.Connection, concept_id: str, limit: int = 50) -> list[str]:
    """Up to `limit` of a concept's evidence sentences (in key order: deterministic)."""
    rows = conn.execute(
        "SELECT text FROM concept_evidence WHERE concept_id = ? ORDER BY message_id, text_key LIMIT ?",
        (concept_id, limit),
    )
    return [str(r[0]) for r in rows]


def add_relation(
    conn: sqlite3.Connection, concept_id: str, relation: str, target_id: str, confidence: float, run_id: str
) -> bool:
    before = conn.total_changes
    conn.execute(
        "INSERT INTO concept_relations (concept_id, relation, target_id, confidence, run_id) VALUES (?, ?, ?, ?, ?)"
        " ON CONFLICT (concept_id, relation, target_id) DO UPDATE SET confidence = excluded.confidence,"
        " run_id = excluded.run_id WHERE excluded.confidence > concept_relations.confidence",
        (concept_id, relation, target_id, confidence, run_id),
    )
    return conn.total_changes > before


def add_transition(conn: sqlite3.Connection, concept_id: str, ordinal: int, **values: Any) -> None:
    conn.execute(
        "INSERT OR REPLACE INTO concept_transitions (concept_id, ordinal, from_state, to_state, reason, other_id,"
        " run_id) VALUES (?, ?, ?, ?, ?, ?, ?)",
        (
            concept_id,
            ordinal,
            values["from_state"],
            values["to_state"],
            values["reason"],
            values["other_id"],
            values["run_id"],
        ),
    )


def record_input(conn: sqlite3.Connection, input_key: str, run_id: str, **values: Any) -> None:
    conn.execute(
        "INSERT OR REPLACE INTO concept_inputs (input_key, segment_id, title, decision, concept_id, method, score,"
        " run_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (
            input_key,
            values["segment_id"],
            values["title"],
            values["decision"],
            values.get("concept_id"),
            values.get("method"),
            values.get("score"),
            run_id,
        ),
    )


def message_times(archive: sqlite3.Connection, ids: Iterable[str]) -> dict[str, str | None]:
    rows = archive.execute(f"SELECT uuid, created_at FROM messages WHERE uuid IN {IN_VALUES}", (json_values(set(ids)),))
    return {str(row[0]): row[1] for row in rows}


def titles_of(conn: sqlite3.Connection, concept_ids: Iterable[str]) -> dict[str, str]:
    """The title of each of the given concepts (those in the store)."""
    rows = conn.execute(
        f"SELECT concept_id, title FROM concepts WHERE concept_id IN {IN_VALUES}", (json_values(set(concept_ids)),)
    )
    return {str(r[0]): str(r[1]) for r in rows}


def name_index(conn: sqlite3.Connection) -> dict[str, str]:
    """Every concept_id, title and alias -> the concept it names now (a merged one's names -> its survivor).

    What the semantic mapper resolves relation targets against. Empty before the first concepts run.
    """
    return name_index_of(load_concepts(conn))


@dataclass(frozen=True, slots=True)
class NameRow:
    """What a concept's names and merge pointer are (`load_names`)."""

    concept_id: str
    title: str
    aliases: list[str]
    merged_into: str | None


def load_names(conn: sqlite3.Connection) -> dict[str, NameRow]:
    """Every concept's names and merge pointer, in id order: what `name_index_of` and `survivor` read, without
    the rest of the row (the garden's incremental path: a third of `load_concepts`' time)."""
    loads = json.loads
    return {
        str(r[0]): NameRow(str(r[0]), str(r[1]), [] if r[2] == "[]" else loads(r[2]), r[3])
        for r in plain_rows(conn, "SELECT concept_id, title, aliases, merged_into FROM concepts ORDER BY concept_id")
    }


def name_index_of(concepts: Mapping[str, ConceptRow] | Mapping[str, NameRow]) -> dict[str, str]:
    """`name_index` of concepts already loaded (`load_concepts` or `load_names`)."""
    index: dict[str, str] = {}
    for row in concepts.values():
        target = survivor(concepts, row.concept_id)
        for name in (row.concept_id, row.title, *row.aliases):
            index.setdefault(name, target)
    return index


class Pointer(Protocol):
    """What `survivor` reads of a concept: a ConceptRow, or only its merge pointer."""

    @property
    def merged_into(self) -> str | None: ...


def survivor(concepts: Mapping[str, Pointer], concept_id: str) -> str:
    """Follow merged_into pointers to the concept that absorbed this one (cycle-safe)."""
    seen = {concept_id}
    while (row := concepts.get(concept_id)) is not None and row.merged_into and row.merged_into not in seen:
        concept_id = row.merged_into
        seen.add(concept_id)
    return concept_id


# ---------------------------------------------------------------- read-only views (chatmem concepts)


STORE_TABLES = ("concepts", "concept_evidence", "concept_relations", "concept_transitions", "concept_inputs")


def cites_any(conn: sqlite3.Connection, segments: Iterable[str], texts: Iterable[str]) -> bool:
    """Whether any stored evidence of `segments` is one of `texts` (compared without surrounding spaces)."""
    row = conn.execute(
        f"SELECT 1 FROM concept_evidence WHERE segment_id IN {IN_VALUES} AND TRIM(text) IN {IN_VALUES} LIMIT 1",
        (json_values(segments), json_values(texts)),
    ).fetchone()
    return row is not None


def clear_store(conn: sqlite3.Connection) -> None:
    """Empty the concept store (in the caller's transaction): the next pass over the extractions rebuilds it."""
    for table in STORE_TABLES:
        conn.execute(f"DELETE FROM {table}")


def has_store(conn: sqlite3.Connection) -> bool:
    return conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'concepts'").fetchone() is not None


def kind_counts(conn: sqlite3.Connection) -> dict[tuple[str, str], int]:
    """How many concepts of each (type, state): what a filter that matched nothing can name instead."""
    if not has_store(conn):
        return {}
    return {
        (str(t), str(s)): int(n) for t, s, n in conn.execute("SELECT type, state, COUNT(*) FROM concepts GROUP BY 1, 2")
    }


def list_concepts(
    conn: sqlite3.Connection, *, concept_type: str | None = None, state: str | None = None
) -> list[tuple[ConceptHypothesis, str | None]]:
    """Concepts as contract objects (with evidence and relations), each with its merged_into pointer.

    Ordered by evidence count (most first), then title. Works on a read-only connection.
    """
    from contracts.concepts import ConceptHypothesis

    if not has_store(conn):
        return []
    rows = [
        r
        for r in load_concepts(conn).values()
        if (concept_type is None or r.type == concept_type) and (state is None or r.state == state)
    ]
    rows.sort(key=lambda r: (-r.evidence_count, r.title_key))
    evidence: dict[str, list[dict[str, Any]]] = {}
    for e in conn.execute(
        "SELECT concept_id, segment_id, message_id, text, confidence FROM concept_evidence"
        " ORDER BY concept_id, created_at IS NULL, created_at, message_id, text_key"
    ):
        evidence.setdefault(str(e[0]), []).append(
            {"source_id": e[1], "message_id": e[2], "text": e[3], "confidence": e[4]}
        )
    relations: dict[str, list[dict[str, Any]]] = {}
    for r in conn.execute("SELECT concept_id, target_id, relation, confidence FROM concept_relations ORDER BY 1, 3, 2"):
        relations.setdefault(str(r[0]), []).append({"target_id": r[1], "relation": r[2], "confidence": r[3]})
    result = []
    for row in rows:
        hypothesis = ConceptHypothesis.model_validate(
            {
                "concept_id": row.concept_id,
                "title": row.title,
                "type": row.type,
                "description": row.description,
                "state": row.state,
                "confidence": row.confidence,
                "aliases": row.aliases,
                "evidence_spans": evidence.get(row.concept_id, []),
                "relations": relations.get(row.concept_id, []),
                "revision_count": row.revision_count,
                "first_seen": row.first_seen,
                "last_seen": row.last_seen,
            }
        )
        result.append((hypothesis, row.merged_into))
    return result
