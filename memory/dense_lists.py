"""The tables recall's candidate pre-pass reads (memory/candidates.py) on a large memory.

    DenseLists.build(dense, projection)   an inverted-file index of the key vectors: k-means lists in a 64-d
                                           projection, so a query reads a few lists, not every vector
    ConversationMembers.build(codes)       each conversation's content positions (a tag's neighbourhood)

Both are pure numpy and seeded: the same memory gives the same tables. Built once per index (when a memory is
opened, or on the first recall that needs them), never per query.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

Array = np.ndarray[Any, Any]

SAMPLE = 20_000  # vectors the k-means and the projection learn from
ITERATIONS = 6
CHUNK = 16_384  # vectors assigned at a time (bounds the temporary memory: 2 x CHUNK x lists float32, <= 128 MiB)


def _nearest(points: Array, centroids: Array, half_norms: Array) -> Array:
    """Each point's nearest centroid (squared euclidean, as an inner product minus half the centroid's norm)."""
    return np.asarray(np.argmax(points @ centroids.T - half_norms, axis=1), dtype=np.int64)


def principal_directions(sample: Array, count: int) -> Array:
    """The `count` top principal directions of `sample`'s rows (dim x count, float32), from the dim x dim
    covariance: an SVD of a 20k x 384 sample costs ~3 CPU-s, ~30x more, for the same directions (up to sign,
    which no projected dot product sees)."""
    sample = np.asarray(sample, dtype=np.float32)  # key vectors may be stored narrower
    centred = sample - sample.mean(axis=0)
    _, vectors = np.linalg.eigh((centred.T @ centred).astype(np.float64))
    return np.ascontiguousarray(vectors[:, ::-1][:, :count], dtype=np.float32)


@dataclass(frozen=True)
class DenseLists:
    """Key vectors grouped into lists by their nearest centroid in a 64-d projection."""

    projection: Array  # dim x 64
    centroids: Array  # lists x 64
    half_norms: Array  # |centroid|^2 / 2
    order: Array  # content positions, list by list
    offsets: Array  # list l holds order[offsets[l]:offsets[l + 1]]

    @classmethod
    def build(cls, dense: Array, projection: Array | None, coarse: Array | None = None, seed: int = 7) -> DenseLists:
        """Lists for `dense` (n x dim, unit rows or zero rows): about sqrt(n) of them (16..1024)."""
        n = len(dense)
        rng = np.random.default_rng(seed)
        sample = dense[np.sort(rng.choice(n, min(n, SAMPLE), replace=False))].astype(np.float32)
        if projection is None:  # the same directions as memory.index's coarse pass
            projection = principal_directions(sample, 64)
        points = sample @ projection
        lists = int(np.clip(np.sqrt(n), 16, 1024))
        lists = min(lists, len(points))
        centroids = points[rng.choice(len(points), lists, replace=False)].copy()
        for _ in range(ITERATIONS):
            assign = _nearest(points, centroids, 0.5 * (centroids * centroids).sum(axis=1))
            counts = np.bincount(assign, minlength=lists)
            sums = np.zeros_like(centroids)
            np.add.at(sums, assign, points)
            filled = counts > 0  # an empty list keeps its centroid
            centroids[filled] = sums[filled] / counts[filled, None]
        half_norms = (0.5 * (centroids * centroids).sum(axis=1)).astype(np.float32)
        assign = np.empty(n, dtype=np.int64)
        for start in range(0, n, CHUNK):
            block = coarse[start : start + CHUNK] if coarse is not None else dense[start : start + CHUNK] @ projection
            assign[start : start + CHUNK] = _nearest(block, centroids, half_norms)
        order = np.argsort(assign, kind="stable")
        offsets = np.searchsorted(assign[order], np.arange(lists + 1))
        return cls(projection, centroids.astype(np.float32), half_norms, order, offsets)

    @property
    def lists(self) -> int:
        return len(self.centroids)

    def assignment(self) -> Array:
        """Each content position's list."""
        assign = np.empty(len(self.order), dtype=np.int64)
        for number, (start, end) in enumerate(zip(self.offsets[:-1].tolist(), self.offsets[1:].tolist(), strict=True)):
            assign[self.order[start:end]] = number
        return assign

    def nearest(self, vectors: Array) -> Array:
        """The list of each of these key vectors (rows), by the lists' own centroids."""
        out = np.empty(len(vectors), dtype=np.int64)
        for start in range(0, len(vectors), CHUNK):
            block = np.asarray(vectors[start : start + CHUNK], dtype=np.float32) @ self.projection
            out[start : start + CHUNK] = _nearest(block, self.centroids, self.half_norms)
        return out

    def reassigned(self, assign: Array) -> DenseLists:
        """The same lists (projection, centroids) over content whose lists are `assign` (a patched index keeps the
        k-means of the index it came from: its new rows join the nearest list, nothing is trained again)."""
        order = np.argsort(assign, kind="stable")
        offsets = np.searchsorted(assign[order], np.arange(self.lists + 1))
        return DenseLists(self.projection, self.centroids, self.half_norms, order, offsets)

    def probe(self, query: Array, probes: int) -> Array:
        """The content positions in the `probes` lists nearest the query (unsorted)."""
        scores = self.centroids @ (self.projection.T @ query.astype(np.float32)) - self.half_norms
        probes = min(probes, self.lists)
        best = np.argpartition(-scores, probes - 1)[:probes]
        return np.concatenate([self.order[self.offsets[b] : self.offsets[b + 1]] for b in best])


@dataclass(frozen=True)
class ConversationMembers:
    """Content positions per conversation code (a conversation tag's content)."""

    order: Array
    offsets: Array

    @classmethod
    def build(cls, codes: Array, conversations: int) -> ConversationMembers:
        order = np.argsort(codes, kind="stable")
        offsets = np.searchsorted(codes[order], np.arange(conversations + 1))
        return cls(order, offsets)

    def size(self, code: int) -> int:
        return int(self.offsets[code + 1] - self.offsets[code])

    def of(self, codes: Array) -> Array:
        """Every content position of these conversations."""
        if not len(codes):
            return np.zeros(0, dtype=np.int64)
        return np.concatenate([self.order[self.offsets[c] : self.offsets[c + 1]] for c in codes.tolist()])


@dataclass(frozen=True)
class PrepassTables:
    """What memory/candidates.py needs beyond the index itself."""

    members: ConversationMembers
    lists: DenseLists | None  # None when the memory has no key vectors
