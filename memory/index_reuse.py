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
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from memory.mapped import Column, Lookup
from memory.sparse import CSR
from memory.text import TermCounts
from staging.memory_history import LIVE

Array = np.ndarray[Any, Any]


def strings(values: Sequence[str]) -> list[str]:
    """A stored column (or a list) as a list."""
    return values.all() if isinstance(values, Column) else list(values)


@dataclass
class Reuse:
    """An earlier run's index, and the content rows of the new run written after that run (not reusable)."""

    previous: Any  # memory.index.MemoryIndex (read from its stored files)
    written_since: frozenset[str]

    @classmethod
    def of(cls, staging: sqlite3.Connection, run_id: str, previous: Any) -> Reuse | None:
        """The reuse of `previous` for run `run_id`, or None when it cannot serve (a later or the same run, or an
        index stored before term counts were kept)."""
        if previous.run_id >= run_id or previous.bm25.tf is None:
            return None
        written = staging.execute(
            f"SELECT content_id FROM memory_content WHERE {LIVE} AND run_id > ?", (run_id, run_id, previous.run_id)
        )
        return cls(previous, frozenset(str(r[0]) for r in written))

    def positions(self, ids: Sequence[str]) -> Array:
        """Each content's position in the earlier index; -1 where it has none, or its row was written since."""
        where = {content_id: i for i, content_id in enumerate(strings(self.previous.ids))}
        return np.array(
            [-1 if c in self.written_since else where.get(c, -1) for c in ids],
            dtype=np.int64,
        )

    def counts(self, old: Array, texts: Sequence[str | None]) -> TermCounts:
        """The key text term counts of every content (index order): taken from the earlier index where `old`
        (from `positions`) names its document, counted from `texts[i]` elsewhere (None where reused)."""
        from scipy.sparse import csr_matrix  # build time only

        bm25 = self.previous.bm25
        post = bm25.postings  # terms x documents: each entry (term, earlier document, raw count in bm25.tf)
        vocabulary = bm25.vocabulary  # a stored Lookup, or a built dict: both iterate in column order
        earlier_names = vocabulary.all() if isinstance(vocabulary, Lookup) else list(vocabulary)
        counted = np.flatnonzero(old < 0)
        fresh = TermCounts.of_texts(str(texts[int(i)] or "") for i in counted)
        column = {t: j for j, t in enumerate(earlier_names)}
        names = list(earlier_names)
        for term in fresh.names:
            if term not in column:
                column[term] = len(names)
                names.append(term)
        # The entries of reused documents, straight from the posting lists to their new rows (no transposed copy:
        # at 1M messages the postings hold tens of millions of entries); the counted documents' entries after.
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
        del entry_row, keep, entry_term
        in_use = np.bincount(terms, minlength=len(names)) > 0  # terms of documents no longer in the memory go
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
