"""What the clustering sees per segment: its MiniLM vector joined with a small vector of the phrases it uses.

The static MiniLM mean of a segment's messages sees the genre (code, data engineering, advice) more than the
subject: a Hive question's nearest neighbour is a Spark one, a pricing web page's a DSP code rewrite (issue 20,
notes s22topics). The phrases a segment uses (cluster.phrases' candidates: runs of content words in its prose,
code and markup blanked, the keys c-TF-IDF counts) name the subject. So each point the clustering sees is

    [sqrt(1 - share) * text vector, sqrt(share) * phrase vector]

with both parts unit vectors: the cosine of two points is (1 - share) x their text cosine + share x their phrase
cosine. The phrase vector is latent semantic analysis: TF-IDF over the phrase keys (present or not; a key fewer
than 3 conversations use, or more than a fifth of them, says nothing about a subject and is left out; at most
MAX_VOCABULARY keys, the most used), reduced to `dims` by a seeded truncated SVD, normalised. The space is fitted
once per full run, on a seeded sample of at most FIT_MAX segments, and kept in the saved model: an incremental
run and the concepts (their titles' phrases) are placed in the same space. Cost: the phrase keys of every segment
(~2 CPU-ms each, in batches through the stage's MapBatches) and one sparse product; nothing quadratic.

Memory (issue 23): every segment's keys are held until the points are joined (~118 keys a segment). As the sets
the phrase module returns they took ~14 KB a segment by getsizeof (a set's table and a str per key: 72 MiB for
5,156 segments, against 12 MiB as tuples of one shared str per distinct key, which `segment_keys` returns; at
100k messages the stage's read and join peaked 105 MiB lower and held 162 MiB less, the points the same bytes).
The phrase vectors and the joined points are computed JOIN_CHUNK rows at a time (the float64 TF-IDF rows and the
float64 intermediates of `join`, ~10 KB a point, ~2 GB at 1M messages, never exist for every point at once);
each row's arithmetic is the same as on the whole matrix, so the points are the same bytes.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from clients.batches import MapBatches, map_in_process
from cluster import phrases
from staging.embeddings import Matrix

FIT_MAX = 50000  # segments the TF-IDF vocabulary and the SVD are fitted on (a seeded sample beyond that)
MIN_CONVERSATIONS = 3  # a phrase fewer conversations use is left out
MAX_SHARE = 0.2  # a phrase more than this share of the conversations use is left out
MAX_VOCABULARY = 50000  # the most used phrases kept (bounds the saved model: ~13 MB of basis at 64 dims)
KEYS_CHUNK = 2000  # segments per batch of phrase keys handed to map_batches
READ_CHUNK = 20000  # segments whose texts are read from the archive at a time
JOIN_CHUNK = 20000  # rows whose phrase vectors and joined points are computed at a time


@dataclass(slots=True)
class PhraseSpace:
    """A fitted phrase space: the TF-IDF vocabulary and weights, and the SVD basis (None: no phrase was kept,
    every phrase vector is zero)."""

    vocabulary: dict[str, int]
    idf: np.ndarray[Any, Any]
    basis: np.ndarray[Any, Any] | None  # dims x vocabulary
    share: float

    def phrase_vectors(self, keys: Sequence[Iterable[str]]) -> Matrix:
        """Unit phrase vectors of the given key sets (a zero row when none of its keys is in the vocabulary),
        JOIN_CHUNK rows at a time (each row's own arithmetic: the same vectors as all rows at once)."""
        dims = 0 if self.basis is None else self.basis.shape[0]
        if self.basis is None or len(keys) <= JOIN_CHUNK:
            return self._phrase_rows(keys, dims)
        out = np.empty((len(keys), dims), dtype=np.float32)
        for start in range(0, len(keys), JOIN_CHUNK):
            out[start : start + JOIN_CHUNK] = self._phrase_rows(keys[start : start + JOIN_CHUNK], dims)
        return out

    def _phrase_rows(self, keys: Sequence[Iterable[str]], dims: int) -> Matrix:
        out = np.zeros((len(keys), dims), dtype=np.float32)
        if self.basis is None:
            return out
        counts = _counts(keys, self.vocabulary)
        tfidf = _unit_rows(counts.multiply(self.idf[None, :]).tocsr())
        out[:] = np.asarray(tfidf @ self.basis.T, dtype=np.float32)
        return _unit(out)

    def join(self, text: Matrix, keys: Sequence[Iterable[str]]) -> Matrix:
        """The points the clustering sees: each text row joined with its phrase vector (see the module doc),
        JOIN_CHUNK rows at a time."""
        if len(text) <= JOIN_CHUNK:
            return join(text, self.phrase_vectors(keys), self.share)
        dims = 0 if self.basis is None else self.basis.shape[0]
        out = np.empty((len(text), text.shape[1] + dims), dtype=np.float32)
        for start in range(0, len(text), JOIN_CHUNK):
            rows = slice(start, start + JOIN_CHUNK)
            out[rows] = join(text[rows], self.phrase_vectors(keys[rows]), self.share)
        return out


def fit(keys: Sequence[Iterable[str]], conversations: Sequence[str], dims: int, share: float, seed: int) -> PhraseSpace:
    """The phrase space of a set of segments' phrase keys and their conversations (a seeded sample of FIT_MAX
    segments when more). A phrase is kept when MIN_CONVERSATIONS conversations use it, and at most MAX_SHARE of
    them: a phrase only one conversation repeats ties that conversation's own segments together (each
    conversation its own tight topic) and says nothing about a subject several conversations share."""
    from sklearn.utils.extmath import randomized_svd

    from cluster.topics import seeded_sample

    picked = seeded_sample(len(keys), FIT_MAX, seed)
    rows = [set(keys[i]) for i in picked]
    seen: dict[str, int] = {}
    used_in: dict[str, set[str]] = {}
    for row, i in zip(rows, picked.tolist(), strict=True):
        for key in row:
            seen[key] = seen.get(key, 0) + 1
            used_in.setdefault(key, set()).add(conversations[i])
    most = MAX_SHARE * len(set(conversations[i] for i in picked.tolist()))
    usable = [k for k, c in used_in.items() if MIN_CONVERSATIONS <= len(c) <= most]
    kept = sorted(sorted(usable, key=lambda k: (-seen[k], k))[:MAX_VOCABULARY])
    vocabulary = {k: i for i, k in enumerate(kept)}
    df = np.array([seen[k] for k in kept], dtype=np.float64)
    idf = np.log((1 + len(rows)) / (1 + df)) + 1.0  # scikit-learn's smoothed idf
    rank = min(dims, len(kept) - 1, len(rows) - 1)
    if rank < 1:
        return PhraseSpace(vocabulary, idf, None, share)
    tfidf = _unit_rows(_counts(rows, vocabulary).multiply(idf[None, :]).tocsr())
    _, _, basis = randomized_svd(tfidf, rank, random_state=seed)
    return PhraseSpace(vocabulary, idf, basis.astype(np.float32), share)


def join(text: Matrix, phrase: Matrix, share: float) -> Matrix:
    """[sqrt(1 - share) * unit text, sqrt(share) * phrase], normalised (a zero phrase row leaves the text's
    direction alone)."""
    joined = np.hstack([np.sqrt(1.0 - share) * _unit(text), np.sqrt(share) * phrase]).astype(np.float32)
    return _unit(joined)


class KeysJob:
    """One batch of texts -> their phrase keys (picklable: a Dask worker runs it as well as this process)."""

    def __call__(self, texts: Sequence[str]) -> list[set[str]]:
        return [phrases.phrase_keys(text) for text in texts]


def _counts(keys: Sequence[Iterable[str]], vocabulary: dict[str, int]) -> Any:
    """Segments x vocabulary: 1 where the segment uses the key."""
    from scipy.sparse import csr_matrix

    indptr, indices = [0], []
    for row in keys:
        indices.extend(sorted({vocabulary[k] for k in row if k in vocabulary}))
        indptr.append(len(indices))
    data = np.ones(len(indices), dtype=np.float64)
    return csr_matrix(
        (data, np.array(indices, dtype=np.int64), np.array(indptr)), shape=(len(indptr) - 1, len(vocabulary))
    )


def _unit_rows(matrix: Any) -> Any:
    from sklearn.preprocessing import normalize

    return normalize(matrix, norm="l2", copy=False)


def _unit(rows: np.ndarray[Any, Any]) -> Matrix:
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    return (rows / np.where(norms > 0, norms, 1.0)).astype(np.float32)


def segment_keys(
    archive: sqlite3.Connection,
    members: dict[str, tuple[str, ...]],
    segment_ids: Sequence[str],
    map_batches: MapBatches = map_in_process,
) -> list[tuple[str, ...]]:
    """The phrase keys of each segment (its opening phrases.DOC_CHARS, as c-TF-IDF reads it), READ_CHUNK
    segments' texts at a time, the keys computed in batches of KEYS_CHUNK through `map_batches`. Each segment's
    keys are a tuple (no duplicates, in no meaningful order) of one shared str per distinct key: a set and a str
    of its own per key would hold every segment's keys at ~14 KB a segment (module doc)."""
    from cluster.describe import segment_texts

    keys: list[tuple[str, ...]] = []
    shared: dict[str, str] = {}
    for start in range(0, len(segment_ids), READ_CHUNK):
        chunk = list(segment_ids[start : start + READ_CHUNK])
        texts = segment_texts(archive, members, chunk)
        opening = [texts.get(s, "")[: phrases.DOC_CHARS] for s in chunk]
        del texts
        batches = [opening[i : i + KEYS_CHUNK] for i in range(0, len(opening), KEYS_CHUNK)]
        for batch_keys in map_batches(KeysJob(), batches):
            keys.extend(tuple(shared.setdefault(k, k) for k in found) for found in batch_keys)
    return keys


def title_keys(titles: Sequence[str]) -> list[set[str]]:
    """The phrase keys of names (a concept's title): what places a concept in the phrase space."""
    return [phrases.phrase_keys(title) for title in titles]
