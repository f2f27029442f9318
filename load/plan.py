"""What to send: a layer's current rows, diffed against the manifest of what the graph holds, cut into batches.

Pure streaming functions: rows come from a SQLite cursor in key order, the manifest in the same order, and a
merge-join of the two yields only what changed (new or different rows to upsert, vanished keys to delete), so
memory does not grow with the archive. Each row is hashed once; the hash is what the manifest keeps.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

import orjson

from load.layers import FULL_TEXT_AT, TEXT_CAP_BYTES, Layer, NodeLayer

Kind = Literal["upsert", "delete"]
ROW_OVERHEAD = 32  # bytes of Bolt framing and map keys per row, roughly: keeps tiny rows from looking free


@dataclass
class Change:
    """One row to upsert (with its parameters) or one key to delete."""

    kind: Kind
    key: str
    row_hash: int
    params: dict[str, Any]
    nbytes: int
    new: bool = True
    """Not in the manifest: as far as staging knows, the graph has never held this row."""


@dataclass
class Batch:
    """Rows of one layer and one kind, sent as one UNWIND in one transaction."""

    layer: Layer
    kind: Kind
    changes: list[Change] = field(default_factory=list)
    nbytes: int = 0

    @property
    def params(self) -> list[dict[str, Any]]:
        return [change.params for change in self.changes]

    @property
    def all_new(self) -> bool:
        return all(change.new for change in self.changes)

    @property
    def first_key(self) -> str:
        return self.changes[0].key

    @property
    def last_key(self) -> str:
        return self.changes[-1].key


def ordered_sql(layer: Layer) -> str:
    """The layer's SQL with a TEXT key column first, ordered by it (the manifest is in the same order)."""
    if isinstance(layer, NodeLayer):
        order = "id" if layer.text_ids else "_key"  # an index walk streams; a sort reads the whole layer first
        return f"SELECT CAST(id AS TEXT) AS _key, * FROM ({layer.sql}) WHERE id IS NOT NULL ORDER BY {order}"
    return (
        "SELECT json_array(CAST(src AS TEXT), CAST(dst AS TEXT)) AS _key, * FROM"
        f" ({layer.sql}) WHERE src IS NOT NULL AND dst IS NOT NULL ORDER BY _key"
    )


def count_sql(layer: Layer) -> str:
    """How many rows the layer has now: what the graph should hold."""
    if isinstance(layer, NodeLayer):
        return f"SELECT COUNT(DISTINCT id) FROM ({layer.sql})"
    pairs = f"SELECT DISTINCT src, dst FROM ({layer.sql}) WHERE src IS NOT NULL AND dst IS NOT NULL"
    return f"SELECT COUNT(*) FROM ({pairs})"


def row_hash(values: Iterable[Any]) -> int:
    """A stable 64-bit hash of a row's values (signed, to fit an SQLite INTEGER)."""
    return _hash(orjson.dumps(list(values), default=_bytes_as_hex))


def _bytes_as_hex(value: Any) -> str:
    """orjson has no bytes: a BLOB column is hashed (and sized) by its hex form; the graph gets the bytes."""
    if isinstance(value, bytes):
        return value.hex()
    raise TypeError(f"cannot hash a {type(value).__name__}")


def _hash(blob: bytes) -> int:
    return int.from_bytes(hashlib.blake2b(blob, digest_size=8).digest(), "big", signed=True)


def source_rows(cursor: sqlite3.Cursor, layer: Layer) -> Iterator[Change]:
    """The layer's rows as upsert changes, in key order. `cursor` runs `ordered_sql(layer)`."""
    names = [column[0] for column in cursor.description]
    skip = 2 if isinstance(layer, NodeLayer) else 3  # _key and id, or _key, src and dst
    props = names[skip:]
    booleans = [i for i, name in enumerate(props) if name in layer.booleans]
    capped = [(i, name) for i, name in enumerate(props) if isinstance(layer, NodeLayer) and name in layer.capped]
    marks = dict.fromkeys(cap_marks([name for _, name in capped]))
    previous = ""
    for row in cursor:
        key = row[0]
        if key < previous:  # the merge-join with the manifest needs key order: a broken promise is a bug, loudly
            raise ValueError(f"layer {layer.name}: key {key!r} after {previous!r}: rows are not in key order")
        previous = key
        values = list(row[skip:])
        for i in booleans:
            if values[i] is not None:
                values[i] = bool(values[i])
        cut: dict[str, Any] = {}
        for i, name in capped:
            value = values[i]
            if isinstance(value, str) and len(value) * 4 > TEXT_CAP_BYTES:  # UTF-8 is at most 4 bytes a character
                size = len(value.encode("utf-8"))
                if size > TEXT_CAP_BYTES:
                    values[i] = cap_text(value, TEXT_CAP_BYTES)
                    cut |= {f"{name}_truncated": True, f"{name}_bytes": size, f"{name}_full_in": FULL_TEXT_AT}
        # Every row carries the marks (a CREATE names the first row's properties for the whole batch), null unless
        # cut; they join the hash only when set, so a row that was never cut hashes as it always did.
        properties = dict(zip(props, values, strict=True)) | marks | cut
        if isinstance(layer, NodeLayer):
            params: dict[str, Any] = {"id": key, "props": properties}
        else:
            params = {"src": str(row[1]), "dst": str(row[2]), "props": properties}
        # The JSON of the row is both what is hashed and a good measure of its size on the wire (UTF-8).
        blob = orjson.dumps([key, *values, *cut.values()], default=_bytes_as_hex)
        yield Change("upsert", key, _hash(blob), params, ROW_OVERHEAD + len(blob))


CAP_MARKS = (("truncated", "boolean"), ("bytes", "long"), ("full_in", None))
"""The properties that say a capped column was cut, with their neo4j-admin header types (None: text)."""


def cap_marks(columns: Iterable[str]) -> dict[str, str | None]:
    """The mark properties of capped columns, in the order `source_rows` puts them after the layer's columns."""
    return {f"{name}_{suffix}": kind for name in columns for suffix, kind in CAP_MARKS}


def cap_text(text: str, limit: int) -> str:
    """The longest prefix of `text` whose UTF-8 is at most `limit` bytes (cut between characters, never inside)."""
    return text.encode("utf-8")[:limit].decode("utf-8", "ignore")  # drops only a last character cut in two


def delete_params(layer: Layer, key: str) -> dict[str, Any]:
    """The parameters that find a row's graph element again from its manifest key."""
    if isinstance(layer, NodeLayer):
        return {"id": key}
    src, dst = json.loads(key)
    return {"src": src, "dst": dst}


def diff(layer: Layer, current: Iterator[Change], loaded: Iterator[tuple[str, int]]) -> Iterator[Change]:
    """Merge-join the current rows with the manifest (both in key order) into what must change in the graph.

    A row whose hash equals the manifest's is skipped; a new or different row is an upsert; a key only in the
    manifest is a row that vanished and becomes a delete. Only a key seen neither in the manifest nor earlier in
    the layer stays `new` (a CREATE may write it).
    """
    old = next(loaded, None)
    previous: str | None = None
    for change in current:
        if change.key == previous:  # a layer that yields a key twice: the second must MERGE onto the first
            change.new = False
        previous = change.key
        while old is not None and old[0] < change.key:
            yield _delete(layer, old[0])
            old = next(loaded, None)
        if old is not None and old[0] == change.key:
            unchanged = old[1] == change.row_hash
            old = next(loaded, None)
            if unchanged:
                continue
            change.new = False
        yield change
    while old is not None:
        yield _delete(layer, old[0])
        old = next(loaded, None)


def _delete(layer: Layer, key: str) -> Change:
    return Change("delete", key, 0, delete_params(layer, key), ROW_OVERHEAD + len(key))


def batches(
    layer: Layer, changes: Iterable[Change], *, batch_size: int, max_bytes: int, first_size: int | None = None
) -> Iterator[Batch]:
    """Cut changes into batches of one kind: at most `batch_size` rows and about `max_bytes` (a bigger row
    goes alone). Upserts and deletes are collected apart and each flushed when full.

    `first_size` caps the first batch: the server starts on it while the next, full one is being read.
    """
    open_batches: dict[Kind, Batch] = {}
    size = min(first_size or batch_size, batch_size)
    for change in changes:
        batch = open_batches.get(change.kind)
        if batch is not None and (len(batch.changes) >= size or batch.nbytes + change.nbytes > max_bytes):
            yield batch
            batch, size = None, batch_size
        if batch is None:
            batch = open_batches[change.kind] = Batch(layer, change.kind)
        batch.changes.append(change)
        batch.nbytes += change.nbytes
    for batch in open_batches.values():
        if batch.changes:
            yield batch
