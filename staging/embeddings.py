"""staging.db: embedding vectors cached by (model, text hash), and which item (message, segment, concept) has which.

Tables (`SCHEMA`: migration 2 of staging/migrations.py, frozen; change them with a new migration there):

- `embeddings`: one float32 vector (little-endian blob) per (model, content_hash). `content_hash` is the sha256
  of exactly what the model read, so an unchanged text is never embedded twice by the same model, whatever
  item or run it comes from. `run_id` is the run that computed it.
- `embedding_items`: (kind, item_id, model) -> content_hash, the run that last pointed it there. Segments are
  keyed by a hash of their members' hashes: their vector is the mean of their messages' vectors.
- `embedded_segments` (`SEGMENTS_SCHEMA`, migration 6): (segment_id, model) -> the segment's content_hash
  (staging/segments.py) its message and segment items were last derived from. That hash covers every member's
  id and text digest, so a current segment whose row matches was embedded from exactly its present texts and the
  embed stage skips it without reading a text. Written after the items (a run killed in between redoes those
  segments); rows of segments no longer current are dropped at each embed run, because their messages' items
  may since have been re-pointed by the segments that replaced them.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from staging.db import IN_VALUES, Transaction, json_values, plain_rows

if TYPE_CHECKING:  # numpy loads when vectors are read or written, not with the table (staging.migrations imports it)
    import numpy as np
    import numpy.typing as npt

    Matrix = npt.NDArray[np.float32]


def __getattr__(name: str) -> object:
    """`Matrix` at run time too (cluster's modules import it), built on first use."""
    if name == "Matrix":
        import numpy as np
        import numpy.typing as npt

        return npt.NDArray[np.float32]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


SCHEMA = [
    """CREATE TABLE IF NOT EXISTS embeddings (
        model TEXT NOT NULL,
        content_hash TEXT NOT NULL,
        dim INTEGER NOT NULL,
        vector BLOB NOT NULL,
        run_id TEXT NOT NULL,
        PRIMARY KEY (model, content_hash)
    ) WITHOUT ROWID""",
    """CREATE TABLE IF NOT EXISTS embedding_items (
        kind TEXT NOT NULL CHECK (kind IN ('message', 'segment', 'concept')),
        item_id TEXT NOT NULL,
        model TEXT NOT NULL,
        content_hash TEXT NOT NULL,
        run_id TEXT NOT NULL,
        PRIMARY KEY (kind, item_id, model)
    ) WITHOUT ROWID""",
    "CREATE INDEX IF NOT EXISTS embedding_items_by_run ON embedding_items (run_id)",
]

SEGMENTS_SCHEMA = [
    """CREATE TABLE IF NOT EXISTS embedded_segments (
        segment_id TEXT NOT NULL,
        model TEXT NOT NULL,
        content_hash TEXT NOT NULL,
        run_id TEXT NOT NULL,
        PRIMARY KEY (segment_id, model)
    ) WITHOUT ROWID""",
]

# The condition, on a `segments s` row and one model parameter, that the segment is embedded as it is now.
EMBEDDED_AS_IS = (
    "EXISTS (SELECT 1 FROM embedded_segments e WHERE e.segment_id = s.segment_id AND e.model = ?"
    " AND e.content_hash = s.content_hash)"
)


def text_hash(text: str) -> str:
    """The cache key of a text: sha256 of its UTF-8 bytes (lone surrogates replaced, as the archive does)."""
    return hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()


def cached_hashes(conn: sqlite3.Connection, model: str, hashes: Iterable[str]) -> set[str]:
    """The subset of `hashes` that already has a vector for `model`."""
    rows = conn.execute(
        f"SELECT content_hash FROM embeddings WHERE model = ? AND content_hash IN {IN_VALUES}",
        (model, json_values(dict.fromkeys(hashes))),
    )
    return {str(r[0]) for r in rows}


def pointed_hashes(conn: sqlite3.Connection, kind: str, model: str) -> set[str]:
    """The hashes the items of `kind` point at under `model`. Each has its vector: an item is written after its
    vector (`put_items` after `put_vectors`) and no vector is ever deleted, so these need no lookup in
    `embeddings`, whose rows carry their vectors (a lookup there reads a page per hash)."""
    rows = plain_rows(conn, "SELECT content_hash FROM embedding_items WHERE kind = ? AND model = ?", (kind, model))
    return {str(r[0]) for r in rows}


def load_vectors(conn: sqlite3.Connection, model: str, hashes: Sequence[str]) -> dict[str, Matrix]:
    """Vectors by content hash (missing ones are left out)."""
    import numpy as np

    rows = conn.execute(
        f"SELECT content_hash, vector FROM embeddings WHERE model = ? AND content_hash IN {IN_VALUES}",
        (model, json_values(dict.fromkeys(hashes))),
    )
    return {str(row[0]): np.frombuffer(row[1], dtype="<f4") for row in rows}


def put_vectors(conn: sqlite3.Connection, model: str, run_id: str, rows: Sequence[tuple[str, Matrix]]) -> int:
    """Insert (content_hash, vector) rows; an existing key is left as it is (same text, same model, same vector)."""
    import numpy as np

    values = [(model, h, int(v.shape[0]), np.asarray(v, dtype="<f4").tobytes(), run_id) for h, v in rows]
    with Transaction(conn):
        before = conn.total_changes
        conn.executemany(
            "INSERT INTO embeddings (model, content_hash, dim, vector, run_id) VALUES (?, ?, ?, ?, ?)"
            " ON CONFLICT (model, content_hash) DO NOTHING",
            values,
        )
        return conn.total_changes - before


def put_items(conn: sqlite3.Connection, kind: str, model: str, run_id: str, rows: Sequence[tuple[str, str]]) -> int:
    """Upsert (item_id, content_hash) for `kind`; a row whose hash did not change keeps its run id. Returns changes."""
    with Transaction(conn):
        before = conn.total_changes
        conn.executemany(
            "INSERT INTO embedding_items (kind, item_id, model, content_hash, run_id) VALUES (?, ?, ?, ?, ?)"
            " ON CONFLICT (kind, item_id, model) DO UPDATE SET content_hash = excluded.content_hash,"
            " run_id = excluded.run_id WHERE embedding_items.content_hash IS NOT excluded.content_hash",
            [(kind, item_id, model, h, run_id) for item_id, h in rows],
        )
        return conn.total_changes - before


def mark_segments_embedded(conn: sqlite3.Connection, model: str, run_id: str, rows: Sequence[tuple[str, str]]) -> None:
    """Record (segment_id, segment content_hash) as embedded under `model`: call once its items are written."""
    with Transaction(conn):
        conn.executemany(
            "INSERT INTO embedded_segments (segment_id, model, content_hash, run_id) VALUES (?, ?, ?, ?)"
            " ON CONFLICT (segment_id, model) DO UPDATE SET content_hash = excluded.content_hash,"
            " run_id = excluded.run_id WHERE embedded_segments.content_hash IS NOT excluded.content_hash",
            [(segment_id, model, h, run_id) for segment_id, h in rows],
        )


def forget_retired_segments(conn: sqlite3.Connection) -> int:
    """Drop the rows of segments that are not current (any model): a segment that comes back is embedded anew."""
    with Transaction(conn):
        return conn.execute(
            "DELETE FROM embedded_segments WHERE segment_id NOT IN (SELECT segment_id FROM current_segments)"
        ).rowcount


def count_embedded_as_is(conn: sqlite3.Connection, model: str) -> int:
    """How many current segments are embedded under `model` from their present content."""
    row = conn.execute(f"SELECT COUNT(*) FROM current_segments s WHERE {EMBEDDED_AS_IS}", (model,)).fetchone()
    return int(row[0])


def item_hashes(conn: sqlite3.Connection, kind: str, model: str, item_ids: Sequence[str]) -> dict[str, str]:
    """content_hash by item id for the given items (those with an embedding under `model`)."""
    rows = conn.execute(
        f"SELECT item_id, content_hash FROM embedding_items WHERE kind = ? AND model = ? AND item_id IN {IN_VALUES}",
        (kind, model, json_values(dict.fromkeys(item_ids))),
    )
    return {str(row[0]): str(row[1]) for row in rows}


def item_matrix(conn: sqlite3.Connection, kind: str, model: str, item_ids: Sequence[str]) -> tuple[list[str], Matrix]:
    """The vectors of `item_ids` that have one, as (ids in the given order, matrix n x dim float32)."""
    import numpy as np

    hashes = item_hashes(conn, kind, model, item_ids)
    vectors = load_vectors(conn, model, list(hashes.values()))
    ids = [i for i in item_ids if i in hashes and hashes[i] in vectors]
    if not ids:
        return [], np.zeros((0, 0), dtype=np.float32)
    return ids, np.stack([vectors[hashes[i]] for i in ids]).astype(np.float32, copy=False)


def has_table(conn: sqlite3.Connection, name: str) -> bool:
    row = conn.execute("SELECT 1 FROM sqlite_master WHERE type IN ('table', 'view') AND name = ?", (name,)).fetchone()
    return row is not None
