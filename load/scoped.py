"""A layer's rows of some ids only, diffed against the manifest: the read that archive_delta.py and
staging_delta.py share.

Each of those layers' rows belongs to one id (archive.db's `archive_changes` logs a conversation; staging.db's
`staging_changes` a conversation, a message or a concept; a topic uid, a segment or a concept whose topic rows
differ from the marked cluster run's), the ids changed since the target's last finished load; the load reads their
rows (`Scoped.rows`: the layer's SQL restricted to them) and looks up in the manifest their keys and the keys that
may have vanished: for nodes the ids in scope, for edges every manifest key whose `src` is in scope (a key range:
`["src",...`). What it then sends equals a full diff's.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace

from load.layers import Layer, NodeLayer
from load.plan import ROW_OVERHEAD, Change, delete_params, ordered_sql, source_rows
from staging.load_state import manifest_count

CHUNK = 500

SCOPE = "(SELECT value FROM json_each(:scope))"
SCOPE_IDS = "SELECT value FROM json_each(:scope)"


@dataclass(frozen=True)
class Scoped:
    """A layer's rows of the conversations in scope, and the ids whose manifest rows may change with them."""

    rows: str
    """The layer's SQL restricted to the scope: same columns, the same rows a full read yields for them."""
    keys: str
    """Nodes: the ids in scope. Edges: the `src` values whose manifest keys are looked up (`["src",` ranges)."""


@dataclass
class IdScope:
    """The ids (conversations, messages, concepts) a change log names since the mark a target's manifest equals,
    and how each covered layer reads their rows."""

    ids: list[str]
    scoped: Mapping[str, Scoped]

    def covers(self, layer: Layer) -> bool:
        return layer.name in self.scoped

    @property
    def params(self) -> dict[str, str]:
        return {"scope": json.dumps(self.ids)}

    def count(self, conn: sqlite3.Connection, layer: Layer) -> int:
        """The scope's rows of the layer (for a progress bar)."""
        return int(conn.execute(f"SELECT COUNT(*) FROM ({self.scoped[layer.name].rows})", self.params).fetchone()[0])

    def changes(
        self,
        rows_db: sqlite3.Connection,
        manifest_db: sqlite3.Connection,
        target: str,
        layer: Layer,
        counted: Callable[[Iterator[Change]], Iterator[Change]],
    ) -> Iterator[Change]:
        """What the layer must change in the graph, from the scope's rows only, in key order (like plan.diff)."""
        scoped, params = self.scoped[layer.name], self.params
        current: dict[str, Change] = {}
        found = rows_db.execute(ordered_sql(replace(layer, sql=scoped.rows)), params)
        for change in counted(source_rows(found, layer)):
            if change.key in current:  # a key twice: the second MERGEs onto the first (plan.diff does the same)
                change.new = False
            current[change.key] = change
        ids = [str(row[0]) for row in rows_db.execute(scoped.keys, params) if row[0] is not None]
        loaded: dict[str, int] = {}
        if isinstance(layer, NodeLayer):
            loaded.update(lookup(manifest_db, target, layer.name, sorted({*ids, *current})))
        else:
            loaded.update(lookup(manifest_db, target, layer.name, sorted(current)))
            for low in _prefixes(rows_db, ids):
                in_range = manifest_db.execute(
                    "SELECT key, row_hash FROM load_manifest WHERE target = ? AND layer = ? AND key >= ? AND key < ?",
                    (target, layer.name, low, low + "#"),  # every key of this src: `["src",` then `"dst"]`
                )
                loaded.update((str(key), int(row_hash)) for key, row_hash in in_range)
        for key in sorted({*loaded, *current}):
            row = current.get(key)
            if row is None:
                yield Change("delete", key, 0, delete_params(layer, key), ROW_OVERHEAD + len(key))
            elif loaded.get(key) != row.row_hash:
                row.new = row.new and key not in loaded
                yield row


def manifest_rows(staging: sqlite3.Connection, target: str, layers: Iterable[Layer]) -> dict[str, int]:
    """The manifest's row count of each layer (a primary-key range each)."""
    return {layer.name: manifest_count(staging, target, layer.name) for layer in layers}


def lookup(conn: sqlite3.Connection, target: str, layer: str, keys: Sequence[str]) -> Iterator[tuple[str, int]]:
    for start in range(0, len(keys), CHUNK):
        chunk = keys[start : start + CHUNK]
        marks = ",".join("?" * len(chunk))
        for key, row_hash in conn.execute(
            f"SELECT key, row_hash FROM load_manifest WHERE target = ? AND layer = ? AND key IN ({marks})",
            (target, layer, *chunk),
        ):
            yield str(key), int(row_hash)


def _prefixes(conn: sqlite3.Connection, ids: Iterable[str]) -> Iterator[str]:
    """`["src",` for each id, escaped exactly as the manifest's keys are (SQLite's json_array)."""
    values = list(ids)
    for start in range(0, len(values), CHUNK):
        found = conn.execute(
            "SELECT rtrim(json_array(value, ''), '\"]') FROM json_each(?)", (json.dumps(values[start : start + CHUNK]),)
        )
        yield from (str(row[0]) for row in found)
