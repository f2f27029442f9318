"""What a new recall index takes from the stored index of an earlier cues run instead of computing it again.

A scheduled run rebuilds the memory of the few conversations that changed; every other content row is shared with
the runs before it (staging/memory_history.py: a row is written once and shared by each run it belongs to). For
such a row the earlier index already holds the two things that cost most to build again: its key text's term
counts (the BM25 postings' raw counts, `BM25.tf`) and its key vector (found by hashing the message's masked text,
which means reading every text from archive.db). `Reuse` hands those over; the new index is then assembled as a
fresh build is, from the same counts and vectors: the same arrays, bit for bit (tests/test_index_reuse.py). Only
the rows written since the earlier run are read from archive.db and counted.

The cue matrices (cue -> content and cue -> conversation weights) are E's, less the edges retired since E, plus
the edges written since E (a re-weighted edge is one of each): the edges the new run reads are those, not all.

A row of run R created at or before the earlier run E is the row E's index was built from (a row that is live
at R and was created by E or before is live at E too: rows are retired, never changed). E's index is used only
when its key still matches staging.db (E's memory_runs row unchanged: not undone, not re-run) and it was built
for the same key model and roles (memory/index_store.py checks both).
"""

from __future__ import annotations

import sqlite3
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from memory.mapped import Column, Lookup
from memory.sparse import CSR
from memory.text import BM25, TermCounts
from staging.memory_history import LIVE

Array = np.ndarray[Any, Any]


def strings(values: Sequence[str]) -> list[str]:
    """A stored column (or a list) as a list."""
    return values.all() if isinstance(values, Column) else list(values)


@dataclass
class Reuse:
    """An earlier run's index, and (read when first asked) the content rows of the new run written after that run
    (not reusable)."""

    previous: Any  # memory.index.MemoryIndex (read from its stored files)
    staging: sqlite3.Connection | None = None
    run_id: str = ""

    @classmethod
    def of(cls, staging: sqlite3.Connection, run_id: str, previous: Any) -> Reuse | None:
        """The reuse of `previous` for run `run_id`, or None when it cannot serve (a later or the same run, or an
        index stored before term counts were kept)."""
        if previous.run_id >= run_id or previous.bm25.tf is None:
            return None
        return cls(previous, staging, run_id)

    @cached_property
    def written_since(self) -> frozenset[str]:
        """The content rows of the new run written after the earlier one (a scan of memory_content: a patch of
        the index, memory/index_patch.py, needs none of it)."""
        if self.staging is None:
            return frozenset()
        written = self.staging.execute(
            f"SELECT content_id FROM memory_content WHERE {LIVE} AND run_id > ?",
            (self.run_id, self.run_id, self.previous.run_id),
        )
        return frozenset(str(r[0]) for r in written)

    def positions(self, ids: Sequence[str]) -> Array:
        """Each content's position in the earlier index; -1 where it has none, or its row was written since."""
        where = {content_id: i for i, content_id in enumerate(strings(self.previous.ids))}
        return np.array(
            [-1 if c in self.written_since else where.get(c, -1) for c in ids],
            dtype=np.int64,
        )

    def counts(self, old: Array, texts: Sequence[str | None]) -> TermCounts:
        """The key text term counts of every content (index order): taken from the earlier index where `old`
        (from `positions`) names its document, counted from `texts[i]` elsewhere (None where reused).

        Built as the canonical documents x terms CSC matrix a fresh count gives BM25.from_counts (terms in sorted
        order, documents ascending within a term, no empty term): the earlier posting lists are that layout
        already, and a position map that keeps the documents' order keeps it, so the counted documents' entries
        are merged in (one pass over the entries, no sort of them)."""
        counted = np.flatnonzero(old < 0)
        reused = np.flatnonzero(old >= 0)
        new_row = np.full(self.previous.bm25.postings.shape[1], -1, dtype=np.int64)
        new_row[old[reused]] = reused
        fresh = TermCounts.of_texts(str(texts[int(i)] or "") for i in counted)
        merged = merged_counts(self.previous.bm25, new_row, len(old), counted, fresh)
        return merged if merged is not None else self._counts_sorted(old, texts)

    def _counts_sorted(self, old: Array, texts: Sequence[str | None]) -> TermCounts:
        """`counts` for positions that do not keep the earlier documents' order (a sort of every entry)."""
        from scipy.sparse import csr_matrix  # build time only

        bm25 = self.previous.bm25
        post = bm25.postings
        vocabulary = bm25.vocabulary
        earlier_names = vocabulary.all() if isinstance(vocabulary, Lookup) else list(vocabulary)
        counted = np.flatnonzero(old < 0)
        fresh = TermCounts.of_texts(str(texts[int(i)] or "") for i in counted)
        column = {t: j for j, t in enumerate(earlier_names)}
        names = list(earlier_names)
        for term in fresh.names:
            if term not in column:
                column[term] = len(names)
                names.append(term)
        new_row = np.full(post.shape[1], -1, dtype=np.int64)
        reused = np.flatnonzero(old >= 0)
        new_row[old[reused]] = reused
        entry_row = new_row[np.asarray(post.indices)]
        keep = entry_row >= 0
        entry_term = np.repeat(np.arange(post.shape[0], dtype=np.int64), np.diff(np.asarray(post.indptr)))[keep]
        fresh_entries = fresh.matrix.tocoo()
        widen = np.array([column[t] for t in fresh.names], dtype=np.int64)
        rows = np.concatenate([entry_row[keep], counted[fresh_entries.row]])
        terms = np.concatenate([entry_term, widen[fresh_entries.col]])
        data = np.concatenate([np.asarray(bm25.tf, dtype=np.float64)[keep], fresh_entries.data])
        in_use = np.bincount(terms, minlength=len(names)) > 0
        renumber = np.cumsum(in_use) - 1
        matrix = csr_matrix((data, (rows, renumber[terms])), shape=(len(old), int(in_use.sum())))
        return TermCounts(matrix, [t for t, used in zip(names, in_use, strict=True) if used])

    def cue_matrices(
        self,
        staging: sqlite3.Connection,
        run_id: str,
        cue_ids: Sequence[str],
        position: dict[str, int],
        conversation_ids: Sequence[str],
    ) -> tuple[CSR, CSR]:
        """(cues x content, cues x conversations) of run `run_id`: the earlier index's entries whose edge is still
        live, moved to the new positions, and the edges written since; canonical CSR arrays as a fresh build."""
        earlier = self.previous.run_id
        gone = staging.execute(
            "SELECT src, dst FROM memory_edges WHERE run_id <= ? AND retired_run_id > ? AND retired_run_id <= ?"
            " AND kind IN ('cue-content', 'cue-tag')",
            (earlier, earlier, run_id),
        ).fetchall()
        added = staging.execute(
            f"SELECT kind, src, dst, weight FROM memory_edges WHERE {LIVE} AND run_id > ?"
            " AND kind IN ('cue-content', 'cue-tag')",
            (run_id, run_id, earlier),
        ).fetchall()
        cue_at = {c: i for i, c in enumerate(cue_ids)}
        conversation_at = {f"conv:{c}": i for i, c in enumerate(conversation_ids)}
        old_cues = strings(self.previous.cue_ids)
        old_content = strings(self.previous.ids)
        old_conversations = [f"conv:{c}" for c in strings(self.previous.conversation_ids)]
        matrices = []
        for matrix, old_columns, new_at, kind in (
            (self.previous.cue_content, old_content, position, "cue-content"),
            (self.previous.cue_conversation, old_conversations, conversation_at, "cue-tag"),
        ):
            removed = {(src, dst) for src, dst in gone}
            new_rows = [
                (cue_at[src], new_at[dst], weight) for k, src, dst, weight in added if k == kind and dst in new_at
            ]
            matrices.append(_moved(matrix, old_cues, old_columns, cue_at, new_at, removed, new_rows))
        return matrices[0], matrices[1]


def merged_counts(bm25: BM25, new_row: Array, n: int, counted: Array, fresh: TermCounts) -> TermCounts | None:
    """The raw counts of `n` documents as the canonical documents x terms CSC matrix a fresh count gives
    BM25.from_counts (terms in sorted order, documents ascending within a term, no empty term): the documents of
    `bm25` (its posting lists and raw counts `tf`) at `new_row[d]` (-1: gone), and `fresh`'s documents at
    `counted` (no empty term column in `fresh`). The posting lists are that layout already, and a map that keeps
    the documents' order keeps it, so `fresh`'s entries are merged in: one pass over the entries, no sort of them.
    None when `new_row` does not keep the order."""
    from scipy.sparse import csc_matrix  # build time only

    post = bm25.postings  # terms x documents: each entry (term, earlier document, raw count in bm25.tf)
    vocabulary = bm25.vocabulary  # a stored Lookup, or a built dict: both iterate in column order
    earlier_names = vocabulary.all() if isinstance(vocabulary, Lookup) else list(vocabulary)
    moved = new_row[new_row >= 0]
    if len(moved) > 1 and not bool(np.all(moved[1:] > moved[:-1])):
        return None
    entry_doc = new_row[np.asarray(post.indices)]
    keep = entry_doc >= 0
    entry_doc = entry_doc[keep]
    entry_term = np.repeat(np.arange(post.shape[0], dtype=np.int64), np.diff(np.asarray(post.indptr)))[keep]
    entry_count = np.asarray(bm25.tf, dtype=np.float64)[keep]
    del keep
    column = {t: j for j, t in enumerate(earlier_names)}
    fresh_old = np.array([column.get(t, -1) for t in fresh.names], dtype=np.int64)
    used = np.bincount(entry_term, minlength=len(earlier_names)) > 0
    used[fresh_old[fresh_old >= 0]] = True
    used_at = np.flatnonzero(used)
    base = [earlier_names[int(i)] for i in used_at]  # sorted
    extra = sorted(t for t, o in zip(fresh.names, fresh_old, strict=True) if o < 0)
    insert = np.array([bisect_left(base, t) for t in extra], dtype=np.int64)
    term_of_old = np.full(len(earlier_names), -1, dtype=np.int64)
    term_of_old[used_at] = np.arange(len(base)) + np.searchsorted(insert, np.arange(len(base)), "right")
    extra_at = dict(zip(extra, (insert + np.arange(len(extra))).tolist(), strict=True))
    names = [""] * (len(base) + len(extra))
    for i, t in zip(term_of_old[used_at].tolist(), base, strict=True):
        names[i] = t
    for t, i in extra_at.items():
        names[i] = t
    fresh_term = np.array(
        [extra_at[t] if o < 0 else term_of_old[o] for t, o in zip(fresh.names, fresh_old, strict=True)],
        dtype=np.int64,
    )
    entries = fresh.matrix.tocoo()
    fresh_keys = fresh_term[entries.col] * n + np.asarray(counted, dtype=np.int64)[entries.row]
    order = np.argsort(fresh_keys, kind="stable")
    fresh_keys, fresh_count = fresh_keys[order], np.asarray(entries.data, dtype=np.float64)[order]
    old_keys = term_of_old[entry_term] * n + entry_doc  # ascending: terms and documents keep their order
    del entry_term, entry_doc
    at = np.searchsorted(old_keys, fresh_keys)
    keys = np.insert(old_keys, at, fresh_keys)
    data = np.insert(entry_count, at, fresh_count)
    del old_keys, entry_count
    terms, docs = np.divmod(keys, n) if n else (keys, keys)
    indptr = np.zeros(len(names) + 1, dtype=np.int64)
    np.cumsum(np.bincount(terms, minlength=len(names)), out=indptr[1:])
    index_type = np.int32 if max(len(keys), n, len(names)) < np.iinfo(np.int32).max else np.int64
    matrix = csc_matrix((data, docs.astype(index_type), indptr.astype(index_type)), shape=(n, len(names)), copy=False)
    matrix.has_canonical_format = True  # sorted, no duplicates: what sum_duplicates would leave
    return TermCounts(matrix, names)


def _moved(
    matrix: CSR,
    old_rows: list[str],
    old_columns: list[str],
    row_at: dict[str, int],
    column_at: dict[str, int],
    removed: set[tuple[str, str]],
    added: list[tuple[int, int, float]],
) -> CSR:
    """The entries of `matrix` (rows and columns named by `old_rows`, `old_columns`) whose (row, column) name pair
    is not `removed`, at their new positions, with the `added` (row, column, weight) entries."""
    from scipy.sparse import csr_matrix  # build time only

    row_map = np.array([row_at.get(r, -1) for r in old_rows], dtype=np.int64)
    column_map = np.array([column_at.get(c, -1) for c in old_columns], dtype=np.int64)
    counts = np.diff(np.asarray(matrix.indptr))
    rows = np.repeat(np.arange(len(old_rows), dtype=np.int64), counts)
    columns = np.asarray(matrix.indices, dtype=np.int64)
    keep = np.ones(len(rows), dtype=bool)
    if removed:
        row_of = {r: i for i, r in enumerate(old_rows)}
        column_of = {c: i for i, c in enumerate(old_columns)}
        pairs = [(row_of[r], column_of[c]) for r, c in removed if r in row_of and c in column_of]
        if pairs:
            width = max(len(old_columns), 1)
            wanted = np.array([r * width + c for r, c in pairs], dtype=np.int64)
            keep &= ~np.isin(rows * width + columns, wanted)
    new_rows, new_columns = row_map[rows[keep]], column_map[columns[keep]]
    if (new_rows < 0).any() or (new_columns < 0).any():  # a live edge whose cue or content is gone: not E's rows
        raise ValueError("an edge of the earlier index names a cue or content the new run does not have")
    extra = np.array(added, dtype=np.float64).reshape(-1, 3)
    data = np.concatenate([np.asarray(matrix.data, dtype=np.float64)[keep], extra[:, 2]])
    built = csr_matrix(
        (
            data,
            (
                np.concatenate([new_rows, extra[:, 0].astype(np.int64)]),
                np.concatenate([new_columns, extra[:, 1].astype(np.int64)]),
            ),
        ),
        shape=(len(row_at), len(column_at)),
        dtype=np.float32,
    )
    built.sum_duplicates()
    return CSR.of(built)
