"""The stored recall index's values as the types recall reads them (memory/index_store.py writes and opens the
files): utf-8 string columns, sorted lookups by binary search, merged groups, message texts and conversation titles
read from archive.db only when shown, and key vectors stored list by list read as the array they stand for. Each
reads only the pages it is asked for."""

from __future__ import annotations

import bisect
import mmap
import sqlite3
import threading
from collections.abc import Iterator, Mapping, Sequence
from itertools import pairwise
from pathlib import Path
from typing import Any, overload

import numpy as np

from memory.index import Array
from staging import memory_inputs as inputs

RUN_ROWS = 16  # consecutive key vectors asked for as one block (Rows)


class Column(Sequence[str]):
    """A stored list of strings: utf-8 bytes end to end and their offsets, decoded one at a time when read."""

    def __init__(self, data: Array, offsets: Array) -> None:
        self._data = data
        self._offsets = offsets

    def __len__(self) -> int:
        return len(self._offsets) - 1

    @overload
    def __getitem__(self, i: int) -> str: ...
    @overload
    def __getitem__(self, i: slice) -> list[str]: ...
    def __getitem__(self, i: int | slice) -> str | list[str]:
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError(i)
        return bytes(self._data[self._offsets[i] : self._offsets[i + 1]]).decode()

    def __iter__(self) -> Iterator[str]:
        return (self[i] for i in range(len(self)))

    def all(self) -> list[str]:
        """Every string, decoded in one pass (a list of 250k ids in a fraction of a second)."""
        data, bounds = bytes(self._data), self._offsets.tolist()
        return [data[a:b].decode() for a, b in pairwise(bounds)]


class Lookup(Mapping[str, int]):
    """string -> its position in a stored Column, by binary search over the positions sorted by string (utf-8 byte
    order is code point order: the order Python's sorted() gave when it was written)."""

    def __init__(self, column: Column, order: Array) -> None:
        self._column = column
        self._order = order

    def __getitem__(self, key: str) -> int:
        if not isinstance(key, str):
            raise KeyError(key)
        at = bisect.bisect_left(range(len(self._order)), key, key=lambda k: self._column[int(self._order[k])])
        if at < len(self._order) and self._column[int(self._order[at])] == key:
            return int(self._order[at])
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return iter(self._column)

    def all(self) -> list[str]:
        """Every string in position order (`Column.all`)."""
        return self._column.all()

    def __len__(self) -> int:
        return len(self._column)


class Groups(Mapping[int, list[int]]):
    """A merged group's head -> every original's index, from three stored arrays (heads ascending)."""

    def __init__(self, heads: Array, offsets: Array, members: Array) -> None:
        self._heads = heads
        self._offsets = offsets
        self._members = members

    def __getitem__(self, head: int) -> list[int]:
        at = int(np.searchsorted(self._heads, head))
        if at >= len(self._heads) or int(self._heads[at]) != head:
            raise KeyError(head)
        return [int(m) for m in self._members[self._offsets[at] : self._offsets[at + 1]]]

    def __iter__(self) -> Iterator[int]:
        return (int(h) for h in self._heads)

    def __len__(self) -> int:
        return len(self._heads)


class ArchiveTexts(Mapping[str, str]):
    """Message texts read from archive.db when asked (a recall shows tens of pieces, not every message)."""

    def __init__(self, archive_path: Path, ids: Sequence[str]) -> None:
        self.archive_path = archive_path
        self._ids = ids
        self._local = threading.local()  # one read-only connection per thread (an MCP server may use several)

    def _archive(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            # staging.db's read-only open: on a full disk it reads without the WAL's -shm index, as every other
            # read-only command does, instead of failing with SQLITE_IOERR_SHMSIZE
            from staging.db import connect_readonly

            conn = connect_readonly(self.archive_path)
            self._local.conn = conn
        return conn

    def __getitem__(self, message_id: str) -> str:
        row = self._archive().execute("SELECT text FROM messages WHERE uuid = ?", (message_id,)).fetchone()
        if row is None:
            raise KeyError(message_id)
        return str(row[0])

    def __iter__(self) -> Iterator[str]:
        return iter(self._ids)

    def __len__(self) -> int:
        return len(self._ids)

    def many(self, ids: list[str]) -> dict[str, str]:
        return inputs.message_texts(self._archive(), ids)


class ArchiveTitles(Mapping[str, str | None]):
    """Conversation titles read from archive.db when asked (a recall shows a few conversations, not all)."""

    def __init__(self, texts: ArchiveTexts, conversation_ids: Sequence[str]) -> None:
        self._texts = texts  # its read-only connection, one per thread
        self._ids = conversation_ids

    def __getitem__(self, conversation_id: str) -> str | None:
        found = (
            self._texts._archive()
            .execute("SELECT title FROM conversations WHERE id = ?", (conversation_id,))
            .fetchone()
        )
        if found is None:
            raise KeyError(conversation_id)
        return None if found[0] is None else str(found[0])

    def __iter__(self) -> Iterator[str]:
        return iter(self._ids)

    def __len__(self) -> int:
        return len(self._ids)


class Rows:
    """The key vectors (n x dim), stored in segments shared by the stored indexes of successive runs
    (memory/vector_segments.py), read by content position: `rows[positions]` is `dense[positions]`, the same values
    in the same order. A from-scratch build writes one segment list by list of the pre-pass's k-means lists
    (memory/dense_lists.py), so the pre-pass, which reads whole lists, finds their rows side by side on disk: a probe
    of ~26k vectors at 1M content touches a few hundred pages, not one or two pages per vector (16k page faults,
    ~0.5 s of a recall on a loaded machine). A patched index adds a small segment of its new rows."""

    def __init__(
        self, segments: Array | Sequence[Array], where: Array, entries: Sequence[dict[str, Any] | None] | None = None
    ) -> None:
        self.segments: list[Array] = [segments] if isinstance(segments, np.ndarray) else list(segments)
        # each segment's manifest entry (memory/vector_segments.py) when it is stored, None when only in memory
        self.entries: list[dict[str, Any] | None] = (
            list(entries) if entries is not None else [None] * len(self.segments)
        )
        self._starts = np.cumsum([0] + [len(s) for s in self.segments], dtype=np.int64)  # segment k: rows from here
        self._where = where  # content position -> its row in the segments, end to end
        self.dtype = self.segments[0].dtype
        self.ndim = 2
        self._dim = int(self.segments[0].shape[1])
        # Mapped: no read-ahead (a view's rows, whole conversations, are scattered over the file: the kernel's
        # read-ahead then read most of it, 1.5 GB at 1M, on a cold page cache), runs of rows asked for ahead instead
        self._maps: list[tuple[mmap.mmap, int] | None] = []
        for segment in self.segments:
            memmap = segment.base if isinstance(segment.base, np.memmap) else None
            found: mmap.mmap | None = getattr(memmap, "_mmap", None)
            if found is not None:
                found.madvise(mmap.MADV_RANDOM)
            self._maps.append(None if found is None else (found, int(getattr(memmap, "offset", 0))))

    @property
    def where(self) -> Array:
        """Each content position's row in the segments, end to end."""
        return self._where

    def _ask_ahead(self, segment: int, rows: Array) -> None:
        """Tell the kernel about runs of consecutive rows (the pre-pass reads whole lists): read as blocks."""
        mapped = self._maps[segment]
        if mapped is None or rows.ndim != 1 or len(rows) < RUN_ROWS:
            return
        memory, offset = mapped
        breaks = np.flatnonzero(np.diff(rows) != 1) + 1
        starts = np.concatenate([[0], breaks])
        ends = np.concatenate([breaks, [len(rows)]])
        size = self._dim * self.dtype.itemsize
        for start, end in zip(starts.tolist(), ends.tolist(), strict=True):
            if end - start >= RUN_ROWS:
                first = offset + int(rows[start]) * size
                begin = first - first % mmap.PAGESIZE
                memory.madvise(mmap.MADV_WILLNEED, begin, offset + (int(rows[end - 1]) + 1) * size - begin)

    @property
    def shape(self) -> tuple[int, int]:
        return (len(self._where), self._dim)

    def __len__(self) -> int:
        return len(self._where)

    def __getitem__(self, key: Any) -> Array:
        if isinstance(key, slice):
            key = np.arange(len(self._where))[key]
        elif isinstance(key, np.ndarray) and key.dtype == bool:
            key = np.flatnonzero(key)
        rows = np.asarray(self._where[key])
        if len(self.segments) == 1:
            self._ask_ahead(0, rows)
            return np.asarray(self.segments[0][rows])
        flat = rows.reshape(-1)
        out = np.empty((len(flat), self._dim), dtype=self.dtype)
        segment_of = np.searchsorted(self._starts, flat, side="right") - 1
        for k in np.unique(segment_of).tolist():
            chosen = np.flatnonzero(segment_of == k)
            local = flat[chosen] - self._starts[k]
            self._ask_ahead(k, local)
            out[chosen] = self.segments[k][local]
        return out.reshape(*rows.shape, self._dim)

    def __matmul__(self, other: Array) -> Array:
        return np.concatenate([np.asarray(s @ other) for s in self.segments])[self._where]

    def __array__(self, dtype: Any = None, copy: Any = None) -> Array:
        return np.asarray(self[np.arange(len(self._where))], dtype=dtype)
