"""Name similarity from embeddings, for the concept loop's third matching step (`extract.resolve`).

    similarity = EmbeddingSimilarity(staging, embedder, run_id, settings)
    similarity.prepare(names)       embed what is new in bulk, cached in staging.db (clients.embed_cache)
    similarity(key_a, key_b)        cosine of the two name keys' vectors

Names are embedded as their name keys (`extract.text.name_key`: lower case, punctuation folded), the strings
the resolver compares. `prepare` runs outside the concept loop's write transaction (embed_cached writes
vectors in its own); a name that was not prepared is embedded on the spot and kept in memory only.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable

import numpy as np

from clients.embed_cache import EmbedCounts, embed_cached
from clients.embedders import Embedder, normalise
from contracts.settings import Settings
from extract.text import name_key
from staging import embeddings as store


class EmbeddingSimilarity:
    def __init__(self, staging: sqlite3.Connection, embedder: Embedder, run_id: str, settings: Settings) -> None:
        self.staging = staging
        self.embedder = embedder
        self.run_id = run_id
        self.settings = settings
        self.counts = EmbedCounts()
        self._vectors: dict[str, store.Matrix] = {}

    def prepare(self, names: Iterable[str]) -> None:
        """Make sure every name's key has a vector: from the cache, else embedded now (and cached)."""
        keys = sorted({key for key in (name_key(n) for n in names) if key and key not in self._vectors})
        if not keys:
            return
        hashes = embed_cached(
            self.staging,
            self.embedder,
            self.run_id,
            keys,
            batch_size=self.embedder.batch_size or self.settings.embed.batch_size,
            write_batch=self.settings.embed.write_batch,
            counts=self.counts,
            label="embed concept names",
        )
        vectors = store.load_vectors(self.staging, self.embedder.key, hashes)
        for key, digest in zip(keys, hashes, strict=True):
            self._vectors[key] = normalise(vectors[digest][None, :])[0]

    def __call__(self, left: str, right: str) -> float:
        return float(np.dot(self._vector(left), self._vector(right)))

    def _vector(self, key: str) -> store.Matrix:
        if key not in self._vectors:
            self._vectors[key] = normalise(self.embedder.embed([key]))[0]
        return self._vectors[key]
