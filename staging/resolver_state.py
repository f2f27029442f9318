"""staging.db: the concept resolver's index (extract/resolve.py) of the concept rows as the last concepts run left
them, kept so that a run builds in memory only what its hypotheses ask about (issue 23). Derived data: emptied, it
is built again from `concepts` by the next concepts run (extract/resolve_stored.py).

- `resolver_rows`: each concept row the index was built from: whether it is merged, the concept its names go
  to (`owner`, the survivor), that concept's type and the row's names ([title, *aliases], JSON); and the row's
  own columns these come from (`row_*`: merged or not, merged_into, type, title, aliases as stored), compared
  with `concepts` in SQL to find the rows changed since (`changed_rows`).
- `resolver_claims`: each (match key, concept) of those names: which rows claim a key (the first claimant in
  the resolver's order owns it).
- `resolver_entries`: per owner, its entry as the resolver built it: type, names ([[name key, [words]], ...] in
  the order added), the match keys it owns, its index keys (encoded, `encode_index_key`) and the words it gave
  the typo index.
- `resolver_exact`: match key -> owner.
- `resolver_index`: (index key, owner), one row per owner holding the key.
- `resolver_words`: the typo index's vocabulary: each word and how many entries gave it.
- `resolver_meta`: one row, the version of the resolver's keys (`extract.resolve_stored.keys_version()`: VERSION
  and a digest of the keys the code makes of probe names) the tables hold.

`SCHEMA` is migration 14 of staging/migrations.py (frozen: change a table with a new migration there).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass

from staging.db import IN_VALUES, json_values

SCHEMA = [
    """CREATE TABLE IF NOT EXISTS resolver_meta (
        version INTEGER NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS resolver_rows (
        concept_id TEXT PRIMARY KEY,
        merged INTEGER NOT NULL,
        owner TEXT NOT NULL,
        type TEXT NOT NULL,
        names TEXT NOT NULL,
        row_merged INTEGER,
        row_merged_into TEXT,
        row_type TEXT,
        row_title TEXT,
        row_aliases TEXT
    ) WITHOUT ROWID""",
    "CREATE INDEX IF NOT EXISTS resolver_rows_by_owner ON resolver_rows (owner)",
    """CREATE TABLE IF NOT EXISTS resolver_claims (
        key TEXT NOT NULL,
        concept_id TEXT NOT NULL,
        PRIMARY KEY (key, concept_id)
    ) WITHOUT ROWID""",
    """CREATE TABLE IF NOT EXISTS resolver_entries (
        owner TEXT PRIMARY KEY,
        type TEXT NOT NULL,
        names TEXT NOT NULL,
        keys TEXT NOT NULL,
        index_keys TEXT NOT NULL,
        words TEXT NOT NULL
    ) WITHOUT ROWID""",
    """CREATE TABLE IF NOT EXISTS resolver_exact (
        key TEXT PRIMARY KEY,
        owner TEXT NOT NULL
    ) WITHOUT ROWID""",
    """CREATE TABLE IF NOT EXISTS resolver_index (
        index_key TEXT NOT NULL,
        owner TEXT NOT NULL,
        PRIMARY KEY (index_key, owner)
    ) WITHOUT ROWID""",
    """CREATE TABLE IF NOT EXISTS resolver_words (
        word TEXT PRIMARY KEY,
        entries INTEGER NOT NULL
    ) WITHOUT ROWID""",
]

TABLES = (
    "resolver_meta",
    "resolver_rows",
    "resolver_claims",
    "resolver_entries",
    "resolver_exact",
    "resolver_index",
    "resolver_words",
)


@dataclass(frozen=True, slots=True)
class RowSig:
    """What the resolver reads of one concept row."""

    merged: int
    owner: str
    type: str
    names: str  # JSON [title, *aliases]


@dataclass(slots=True)
class StoredEntry:
    owner: str
    type: str
    names: list[tuple[str, tuple[str, ...]]]
    keys: list[str]
    index_keys: list[str]
    words: list[str]


def present(conn: sqlite3.Connection) -> bool:
    return (
        conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'resolver_entries'").fetchone()
        is not None
    )


def version(conn: sqlite3.Connection) -> int | None:
    row = conn.execute("SELECT version FROM resolver_meta").fetchone()
    return None if row is None else int(row[0])


def clear(conn: sqlite3.Connection, new_version: int) -> None:
    for table in TABLES:
        conn.execute(f"DELETE FROM {table}")
    conn.execute("INSERT INTO resolver_meta (version) VALUES (?)", (new_version,))


def has_rows(conn: sqlite3.Connection) -> bool:
    return conn.execute("SELECT 1 FROM resolver_rows LIMIT 1").fetchone() is not None


def changed_rows(conn: sqlite3.Connection) -> set[str]:
    """Concept rows whose merged state, merge pointer, type, title or aliases differ from those the index was built
    from, new ones and gone ones."""
    changed = {
        str(r[0])
        for r in conn.execute(
            "SELECT c.concept_id FROM concepts c LEFT JOIN resolver_rows r ON r.concept_id = c.concept_id"
            " WHERE r.concept_id IS NULL OR r.row_merged IS NOT (c.state = 'merged')"
            " OR r.row_merged_into IS NOT c.merged_into OR r.row_type IS NOT c.type OR r.row_title IS NOT c.title"
            " OR r.row_aliases IS NOT c.aliases"
        )
    }
    changed.update(
        str(r[0])
        for r in conn.execute(
            "SELECT concept_id FROM resolver_rows r WHERE NOT EXISTS"
            " (SELECT 1 FROM concepts c WHERE c.concept_id = r.concept_id)"
        )
    )
    return changed


def owners_of(conn: sqlite3.Connection, ids: Iterable[str]) -> set[str]:
    return {
        str(r[0])
        for r in conn.execute(f"SELECT owner FROM resolver_rows WHERE concept_id IN {IN_VALUES}", (json_values(ids),))
    }


def rows_owned_by(conn: sqlite3.Connection, owners: Iterable[str]) -> dict[str, RowSig]:
    return {
        str(r[0]): RowSig(int(r[1]), str(r[2]), str(r[3]), str(r[4]))
        for r in conn.execute(
            f"SELECT concept_id, merged, owner, type, names FROM resolver_rows WHERE owner IN {IN_VALUES}",
            (json_values(owners),),
        )
    }


def load_rows(conn: sqlite3.Connection, ids: Iterable[str] | None = None) -> dict[str, RowSig]:
    sql = "SELECT concept_id, merged, owner, type, names FROM resolver_rows"
    args: tuple[str, ...] = ()
    if ids is not None:
        sql, args = f"{sql} WHERE concept_id IN {IN_VALUES}", (json_values(ids),)
    return {str(r[0]): RowSig(int(r[1]), str(r[2]), str(r[3]), str(r[4])) for r in conn.execute(sql, args)}


def put_rows(conn: sqlite3.Connection, rows: Iterable[tuple[str, RowSig]]) -> None:
    conn.executemany(
        "INSERT INTO resolver_rows (concept_id, merged, owner, type, names) VALUES (?, ?, ?, ?, ?)"
        " ON CONFLICT (concept_id) DO UPDATE SET merged = excluded.merged, owner = excluded.owner,"
        " type = excluded.type, names = excluded.names",
        ((cid, r.merged, r.owner, r.type, r.names) for cid, r in rows),
    )


def sync_row_columns(conn: sqlite3.Connection, ids: Iterable[str] | None = None) -> None:
    """Copy the concept rows' own columns (`row_*`) the index now reflects; None: every row. Rows with no concept
    row are left as they are. A correlated subquery, not `UPDATE ... FROM` (SQLite 3.33+, newer than any other
    statement of chatmem needs); as fast: every row of 42k in ~55 ms (60 ms), 200 of them in 1.5 ms (the same)."""
    where = ""
    args: tuple[str, ...] = ()
    if ids is not None:
        where, args = f" WHERE concept_id IN {IN_VALUES}", (json_values(ids),)
    conn.execute(
        "UPDATE resolver_rows SET (row_merged, row_merged_into, row_type, row_title, row_aliases) ="
        " (SELECT c.state = 'merged', c.merged_into, c.type, c.title, c.aliases FROM concepts c"
        "  WHERE c.concept_id = resolver_rows.concept_id)"
        f" WHERE concept_id IN (SELECT concept_id FROM concepts{where})",
        args,
    )


def drop_rows(conn: sqlite3.Connection, ids: Iterable[str]) -> None:
    conn.executemany("DELETE FROM resolver_rows WHERE concept_id = ?", ((c,) for c in ids))


def claimants(conn: sqlite3.Connection, keys: Iterable[str]) -> set[str]:
    found: set[str] = set()
    for key in keys:
        found.update(str(r[0]) for r in conn.execute("SELECT concept_id FROM resolver_claims WHERE key = ?", (key,)))
    return found


def put_claims(conn: sqlite3.Connection, claims: Iterable[tuple[str, str]]) -> None:
    conn.executemany("INSERT OR IGNORE INTO resolver_claims (key, concept_id) VALUES (?, ?)", claims)


def drop_claims(conn: sqlite3.Connection, claims: Iterable[tuple[str, str]]) -> None:
    conn.executemany("DELETE FROM resolver_claims WHERE key = ? AND concept_id = ?", claims)


def entry(conn: sqlite3.Connection, owner: str) -> StoredEntry | None:
    row = conn.execute(
        "SELECT type, names, keys, index_keys, words FROM resolver_entries WHERE owner = ?", (owner,)
    ).fetchone()
    if row is None:
        return None
    names = [(str(stored), tuple(words)) for stored, words in json.loads(row[1])]
    return StoredEntry(owner, str(row[0]), names, json.loads(row[2]), json.loads(row[3]), json.loads(row[4]))


def put_entries(conn: sqlite3.Connection, entries: Iterable[StoredEntry]) -> None:
    """Write each entry with its exact keys, index rows and words (none of it may be stored already)."""
    for item in entries:
        conn.execute(
            "INSERT INTO resolver_entries (owner, type, names, keys, index_keys, words) VALUES (?, ?, ?, ?, ?, ?)",
            (
                item.owner,
                item.type,
                json.dumps([[stored, list(words)] for stored, words in item.names], ensure_ascii=False),
                json.dumps(item.keys, ensure_ascii=False),
                json.dumps(item.index_keys, ensure_ascii=False),
                json.dumps(item.words, ensure_ascii=False),
            ),
        )
        conn.executemany("INSERT INTO resolver_exact (key, owner) VALUES (?, ?)", ((k, item.owner) for k in item.keys))
        conn.executemany(
            "INSERT INTO resolver_index (index_key, owner) VALUES (?, ?)", ((k, item.owner) for k in item.index_keys)
        )
        conn.executemany(
            "INSERT INTO resolver_words (word, entries) VALUES (?, 1)"
            " ON CONFLICT (word) DO UPDATE SET entries = entries + 1",
            ((w,) for w in item.words),
        )


def drop_entry(conn: sqlite3.Connection, item: StoredEntry) -> None:
    conn.execute("DELETE FROM resolver_entries WHERE owner = ?", (item.owner,))
    conn.executemany("DELETE FROM resolver_exact WHERE key = ? AND owner = ?", ((k, item.owner) for k in item.keys))
    conn.executemany(
        "DELETE FROM resolver_index WHERE index_key = ? AND owner = ?", ((k, item.owner) for k in item.index_keys)
    )
    conn.executemany("UPDATE resolver_words SET entries = entries - 1 WHERE word = ?", ((w,) for w in item.words))
    conn.executemany("DELETE FROM resolver_words WHERE word = ? AND entries <= 0", ((w,) for w in item.words))


def exact_owner(conn: sqlite3.Connection, key: str) -> str | None:
    row = conn.execute("SELECT owner FROM resolver_exact WHERE key = ?", (key,)).fetchone()
    return None if row is None else str(row[0])


def index_holders(conn: sqlite3.Connection, index_key: str) -> set[str]:
    return {str(r[0]) for r in conn.execute("SELECT owner FROM resolver_index WHERE index_key = ?", (index_key,))}


def vocabulary(conn: sqlite3.Connection) -> list[str]:
    return [str(r[0]) for r in conn.execute("SELECT word FROM resolver_words ORDER BY word")]
