"""Sparse matrices for recall's read path, in plain numpy: scipy's CSR layout, scipy's summation order.

    CSR(indptr, indices, data, shape)   rows x cols; row r holds indices[indptr[r]:indptr[r + 1]]
    a.matvec(x)       a @ x       (each row summed in its entries' order, in float32, as scipy's csr_matvec)
    a.rmatvec(x)      a.T @ x     (rows added in row order, each entry in turn, as scipy's csc_matvec)
    a.take_rows(rows), a.row(r), a.transpose()

Why not scipy.sparse: importing it costs ~0.15 CPU-s (its array API layer imports numpy.f2py, numpy.testing ...), a
fifth of a whole `chatmem recall` on the demo, and a stored index opened with scipy classes unpickles them whole.
The arrays here may be memory-mapped .npy files (memory/index_store.py): only the rows a query reads are paged in.

The matrices are built with scipy (memory.index.build_index, memory.text.BM25.build: duplicates summed, indices
sorted as scipy does) and converted with `CSR.of`; the products here repeat scipy's float32 operations in scipy's
order (np.add.at applies its updates in index order), so scores, and so rankings, are identical to the bit
(tests/test_sparse.py compares them with scipy's).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

Array = np.ndarray[Any, Any]
FEW_ROWS = 64  # rmatvec adds up to this many rows one by one (no np.add.at)


@dataclass(frozen=True)
class CSR:
    indptr: Array
    indices: Array
    data: Array  # float32
    shape: tuple[int, int]

    @classmethod
    def of(cls, matrix: Any) -> CSR:
        """From a scipy sparse matrix (any format): its CSR arrays, as they are."""
        csr = matrix.tocsr()
        return cls(csr.indptr, csr.indices, csr.data, (int(csr.shape[0]), int(csr.shape[1])))

    @classmethod
    def empty(cls, shape: tuple[int, int], dtype: Any = np.float32) -> CSR:
        return cls(np.zeros(shape[0] + 1, np.int32), np.zeros(0, np.int32), np.zeros(0, dtype), shape)

    @property
    def nnz(self) -> int:
        return len(self.data)

    def _row_of_entries(self) -> Array:
        return np.repeat(np.arange(self.shape[0]), np.diff(self.indptr))

    def row(self, r: int) -> tuple[Array, Array]:
        """(column indices, values) of row r."""
        start, end = int(self.indptr[r]), int(self.indptr[r + 1])
        return self.indices[start:end], self.data[start:end]

    def matvec(self, x: Array) -> Array:
        """self @ x: row r = sum of its entries' data * x[column], added in entry order (float32 for float32)."""
        x = np.asarray(x)
        out = np.zeros(self.shape[0], dtype=np.result_type(self.data.dtype, x.dtype))
        if self.nnz:
            np.add.at(out, self._row_of_entries(), self.data * x[self.indices])
        return out

    def rmatvec(self, x: Array) -> Array:
        """self.T @ x: for each row r in order, data * x[r] added to its columns. A few rows (a query's posting
        lists) are added one row at a time: a row names each column once (scipy's canonical form, which every
        matrix here comes from), so a plain fancy-index add is the same sequence of float32 additions."""
        x = np.asarray(x)
        out = np.zeros(self.shape[1], dtype=np.result_type(self.data.dtype, x.dtype))
        if not self.nnz:
            return out
        if self.shape[0] <= FEW_ROWS:
            for r in range(self.shape[0]):
                start, end = int(self.indptr[r]), int(self.indptr[r + 1])
                out[self.indices[start:end]] += self.data[start:end] * x[r]
            return out
        np.add.at(out, self.indices, self.data * x[self._row_of_entries()])
        return out

    def take_rows(self, rows: Array) -> CSR:
        """The rows at `rows` (any order, repeats allowed), as a matrix of their own."""
        rows = np.asarray(rows, dtype=np.int64)
        starts, ends = self.indptr[rows].astype(np.int64), self.indptr[rows + 1].astype(np.int64)
        sizes = ends - starts
        indptr = np.zeros(len(rows) + 1, dtype=np.int64)
        np.cumsum(sizes, out=indptr[1:])
        total = int(indptr[-1])
        where = np.repeat(starts - indptr[:-1], sizes) + np.arange(total)
        return CSR(indptr, self.indices[where], self.data[where], (len(rows), self.shape[1]))

    def transpose(self) -> CSR:
        """self.T in CSR: each new row's entries in the old rows' order (scipy's .T.tocsr())."""
        order = np.argsort(self.indices, kind="stable")
        counts = np.bincount(self.indices, minlength=self.shape[1]) if self.nnz else np.zeros(self.shape[1], int)
        indptr = np.zeros(self.shape[1] + 1, dtype=np.int64)
        np.cumsum(counts, out=indptr[1:])
        rows = self._row_of_entries()[order]
        return CSR(indptr, rows, self.data[order], (self.shape[1], self.shape[0]))

    def toarray(self) -> Array:
        out = np.zeros(self.shape, dtype=self.data.dtype)
        if self.nnz:
            out[self._row_of_entries(), self.indices] = self.data
        return out
