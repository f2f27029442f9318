"""memory/sparse.py repeats scipy's float32 products in scipy's order: recall's scores are the same to the bit."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.sparse import csc_matrix, csr_matrix

from memory.sparse import CSR
from memory.text import BM25


def _random(rows: int, cols: int, nnz: int, seed: int) -> csr_matrix:
    rng = np.random.default_rng(seed)
    r, c = rng.integers(0, rows, nnz), rng.integers(0, cols, nnz)
    w = rng.random(nnz).astype(np.float32) * 3
    return csr_matrix((w, (r, c)), shape=(rows, cols), dtype=np.float32)  # duplicates summed, as build_index


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_products_equal_scipy_bit_for_bit(seed: int) -> None:
    matrix = _random(300, 120, 5_000, seed)
    light = CSR.of(matrix)
    rng = np.random.default_rng(seed + 10)
    x_cols = rng.random(120).astype(np.float32)
    x_rows = rng.random(300).astype(np.float32)
    assert np.array_equal(light.matvec(x_cols), np.asarray(matrix @ x_cols).ravel())
    assert np.array_equal(light.rmatvec(x_rows), np.asarray(matrix.T @ x_rows).ravel())
    rows = rng.integers(0, 300, 40)  # any order, repeats
    taken = light.take_rows(rows)
    assert np.array_equal(taken.toarray(), matrix[rows].toarray())
    assert np.array_equal(taken.rmatvec(x_rows[:40]), np.asarray(matrix[rows].T @ x_rows[:40]).ravel())
    assert np.array_equal(x_rows[:40] @ matrix[rows], light.take_rows(rows).rmatvec(x_rows[:40]))
    transposed = light.transpose()
    reference = matrix.T.tocsr()
    assert np.array_equal(transposed.indptr, reference.indptr)
    assert np.array_equal(transposed.indices, reference.indices)
    assert np.array_equal(transposed.data, reference.data)
    assert np.array_equal(transposed.matvec(x_rows), np.asarray(reference @ x_rows).ravel())
    cols, data = light.row(7)
    assert np.array_equal(cols, matrix[7].indices) and np.array_equal(data, matrix[7].data)


def test_empty_matrices() -> None:
    empty = CSR.of(csr_matrix((4, 3), dtype=np.float32))
    assert np.array_equal(empty.matvec(np.ones(3, np.float32)), np.zeros(4, np.float32))
    assert np.array_equal(empty.rmatvec(np.ones(4, np.float32)), np.zeros(3, np.float32))
    assert empty.transpose().shape == (3, 4)
    assert empty.take_rows(np.array([], dtype=np.int64)).shape == (0, 3)


def test_bm25_scores_equal_the_scipy_formula() -> None:
    rng = np.random.default_rng(5)
    words = [f"w{i}" for i in range(60)]
    documents = [list(rng.choice(words, int(rng.integers(1, 30)))) for _ in range(500)]
    bm25 = BM25.build(documents)
    weights = csc_matrix(
        (bm25.postings.data, bm25.postings.indices, bm25.postings.indptr), shape=(bm25.documents, len(words))
    )
    for query in (["w1", "w7", "w1", "w33"], ["w59"], ["nothing"], []):
        counts: dict[str, int] = {}
        for t in query:
            if t in bm25.vocabulary:
                counts[t] = counts.get(t, 0) + 1
        got = bm25.score(query)
        if not counts:
            assert not got.any()
            continue
        cols = [bm25.vocabulary[t] for t in counts]
        q = np.array([bm25.idf[c] * counts[t] for t, c in zip(counts, cols, strict=True)], dtype=np.float32)
        expected = np.asarray(weights[:, cols] @ q, dtype=np.float32).ravel()
        assert np.array_equal(got, expected)
        rows = rng.integers(0, 500, 50)
        subset = np.asarray(csr_matrix(weights[:, cols])[rows] @ q, dtype=np.float32).ravel()
        assert np.array_equal(bm25.score(query, rows), subset)
