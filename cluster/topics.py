"""From the best parameters to topics: the final fit, outlier handling, c-TF-IDF labels. Pure functions.

- `fit_all`: UMAP + HDBSCAN fitted on up to `fit_max` points (a seeded sample when there are more); the other
  points go through `reducer.transform` and `hdbscan.approximate_predict`. Membership weights are HDBSCAN's
  `probabilities_` for fitted points and approximate_predict's strengths for placed ones (the all-points soft
  membership is far too slow at scale, FACTS).
- `reassign_outliers`: a noise point joins its nearest topic (cosine to the topic's centre in the embedding
  space) only when it is at least as close as the `quantile` least typical of the topic's own members are;
  its weight is that similarity's percentile among the members' (low: a fringe member). Topics are never
  merged: a point that fits no topic stays noise, and the share that stays is reported.
- `ctfidf`: BERTopic's class-based TF-IDF (each topic one document; tf normalised per topic, idf =
  log(1 + average phrases per topic / frequency of the phrase over all topics)) over noun-like phrases of the
  cleaned prose, cased as written (cluster/phrases.py); `labels_of`: a phrase per topic, no two topics alike
  (cluster/labels.py).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from clients.batches import MapBatches, map_in_process
from cluster.labels import labels_for
from cluster.phrases import ctfidf_phrases
from cluster.tuning import Params, run_hdbscan, umap_layout, validity_of
from staging.embeddings import Matrix

Labels = np.ndarray[Any, np.dtype[np.int64]]
Floats = np.ndarray[Any, np.dtype[np.float64]]
PREDICT_CHUNK = 20000


@dataclass(slots=True)
class Fit:
    labels: Labels  # -1: noise
    weights: Floats  # membership strength 0..1
    source: list[str]  # per point: hdbscan | predicted | noise
    validity: float
    reducer: Any
    clusterer: Any
    fitted: np.ndarray[Any, np.dtype[np.bool_]]


def seeded_sample(n: int, size: int, seed: int) -> np.ndarray[Any, np.dtype[np.int64]]:
    """Sorted indices of a seeded sample of `size` of range(n) (all of them when n <= size)."""
    if n <= size:
        return np.arange(n)
    return np.sort(np.random.default_rng(seed).choice(n, size=size, replace=False))


class PlaceJob:
    """One task of the final assignment: a batch of points -> their labels and strengths in the fitted model.
    Picklable (UMAP and HDBSCAN models pickle), so a Dask worker can run it; it holds no settings."""

    def __init__(self, reducer: Any, clusterer: Any) -> None:
        self.reducer, self.clusterer = reducer, clusterer

    def __call__(self, points: Matrix) -> tuple[Labels, Floats]:
        return place(self.reducer, self.clusterer, points)


def fit_all(
    points: Matrix,
    params: Params,
    *,
    seed: int,
    fit_max: int,
    map_batches: MapBatches = map_in_process,
    pool: np.ndarray[Any, np.dtype[np.int64]] | None = None,
) -> Fit:
    """Fit on a seeded sample of `fit_max` points (of `pool`'s rows when given: the anchors of
    cluster/topic_space.py), then place the rest through `map_batches` in batches of PREDICT_CHUNK (the cut
    `place` makes itself, so any runner computes what one process does)."""
    rows = np.arange(len(points)) if pool is None else np.asarray(pool, dtype=np.int64)
    fit_idx = rows[seeded_sample(len(rows), fit_max, seed)]
    layout, reducer = umap_layout(points[fit_idx], params.n_neighbors, params.n_components, params.min_dist, seed)
    clusterer = run_hdbscan(layout, params, prediction_data=True)
    labels = np.full(len(points), -1, dtype=np.int64)
    weights = np.zeros(len(points), dtype=np.float64)
    labels[fit_idx] = clusterer.labels_
    weights[fit_idx] = np.where(clusterer.labels_ >= 0, clusterer.probabilities_, 0.0)
    source = ["noise"] * len(points)
    for i in fit_idx[clusterer.labels_ >= 0]:
        source[i] = "hdbscan"
    fitted = np.zeros(len(points), dtype=bool)
    fitted[fit_idx] = True
    rest = np.flatnonzero(~fitted)
    if len(rest):
        predicted, strengths = place_all(reducer, clusterer, points[rest], map_batches)
        labels[rest] = predicted
        weights[rest] = np.where(predicted >= 0, strengths, 0.0)
        for i in rest[predicted >= 0]:
            source[i] = "predicted"
    return Fit(labels, weights, source, validity_of(clusterer), reducer, clusterer, fitted)


def place_all(
    reducer: Any, clusterer: Any, points: Matrix, map_batches: MapBatches = map_in_process
) -> tuple[Labels, Floats]:
    """`place` over batches of PREDICT_CHUNK points handed to `map_batches` (the same cut whatever runs them)."""
    batches = [points[start : start + PREDICT_CHUNK] for start in range(0, len(points), PREDICT_CHUNK)]
    placed = list(map_batches(PlaceJob(reducer, clusterer), batches))
    if not placed:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)
    return np.concatenate([labels for labels, _ in placed]), np.concatenate([strengths for _, strengths in placed])


def place(reducer: Any, clusterer: Any, points: Matrix) -> tuple[Labels, Floats]:
    """Labels and strengths of points the model was not fitted on (transform, then approximate_predict); a
    model fitted on exact k-NN (small data: no search index to transform with) votes by neighbours instead."""
    import hdbscan

    if getattr(reducer, "_knn_search_index", None) is None and getattr(reducer, "_raw_data", None) is not None:
        return vote(np.asarray(reducer._raw_data), clusterer.labels_, points, int(reducer.n_neighbors))
    labels: list[Labels] = []
    strengths: list[Floats] = []
    for start in range(0, len(points), PREDICT_CHUNK):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            layout = reducer.transform(points[start : start + PREDICT_CHUNK])
            chunk_labels, chunk_strengths = hdbscan.approximate_predict(clusterer, layout)
        labels.append(np.asarray(chunk_labels, dtype=np.int64))
        strengths.append(np.asarray(chunk_strengths, dtype=np.float64))
    return np.concatenate(labels), np.concatenate(strengths)


def vote(fitted: Matrix, fitted_labels: Labels, points: Matrix, k: int) -> tuple[Labels, Floats]:
    """Each point takes the label with the most cosine weight among its k nearest fitted points (noise counts
    as a label, so a point among outliers stays one); strength is that label's share of the weight."""
    unit = fitted / np.maximum(np.linalg.norm(fitted, axis=1, keepdims=True), 1e-12)
    query = points / np.maximum(np.linalg.norm(points, axis=1, keepdims=True), 1e-12)
    k = max(1, min(k, len(fitted)))
    labels = np.full(len(points), -1, dtype=np.int64)
    strengths = np.zeros(len(points), dtype=np.float64)
    for start in range(0, len(points), PREDICT_CHUNK):
        sims = query[start : start + PREDICT_CHUNK] @ unit.T
        nearest = np.argpartition(-sims, k - 1, axis=1)[:, :k]
        for row, neighbours in enumerate(nearest):
            weights = np.maximum(sims[row, neighbours], 0.0) + 1e-9
            totals: dict[int, float] = {}
            for label, weight in zip(fitted_labels[neighbours].tolist(), weights.tolist(), strict=True):
                totals[label] = totals.get(label, 0.0) + weight
            best = max(totals, key=lambda t: (totals[t], -t))
            labels[start + row] = best
            strengths[start + row] = totals[best] / sum(totals.values()) if best >= 0 else 0.0
    return labels, strengths


def unit_weight(value: float) -> float:
    """A link weight: clipped to 0..1, 6 decimals."""
    return round(float(min(max(value, 0.0), 1.0)), 6)


NEAR_MARGIN = 1e-3  # candidates within this (x the row's norm, at least 1) of a row's best product are checked


def nearest_centres(points: Matrix, centres: dict[int, Matrix]) -> tuple[list[int], list[float]]:
    """Per row of `points`, the topic whose centre it has the highest dot product with (ties: the lower topic) and
    that product, each exactly `float(point @ centre)`: what comparing every centre one by one gives.

    One by one, a point costs one small product per topic (~15k noise concepts x ~900 topics at 250k messages: 33
    CPU-s of Python). Here one matrix product finds, per row, the centres within NEAR_MARGIN of its best (a float32
    product of a unit centre is off by far less: ~1e-5 x the row's norm at 384 dimensions) and only those are
    computed again one by one, so the choice and the value are those of the one-by-one comparison.
    """
    if not len(points) or not centres:
        return [], []
    topics = list(centres)
    approx = points @ np.stack([centres[t] for t in topics]).T
    floor = approx.max(axis=1) - NEAR_MARGIN * np.maximum(np.linalg.norm(points, axis=1), 1.0)
    nearest: list[int] = []
    values: list[float] = []
    for row in range(len(points)):
        sims = {topics[i]: float(points[row] @ centres[topics[i]]) for i in np.flatnonzero(approx[row] >= floor[row])}
        best = max(sims, key=lambda t: (sims[t], -t))
        nearest.append(best)
        values.append(sims[best])
    return nearest, values


def centroids(points: Matrix, labels: Labels) -> dict[int, Matrix]:
    """Each topic's unit-length mean vector."""
    found: dict[int, Matrix] = {}
    for topic in sorted(set(labels.tolist()) - {-1}):
        mean = points[labels == topic].mean(axis=0)
        norm = float(np.linalg.norm(mean))
        found[topic] = (mean / norm if norm > 0 else mean).astype(np.float32)
    return found


def reassign_outliers(
    points: Matrix, labels: Labels, weights: Floats, quantile: float
) -> tuple[Labels, Floats, np.ndarray[Any, np.dtype[np.bool_]]]:
    """Noise points that look like a typical-enough member of their nearest topic join it (see module doc)."""
    centres, member_sims = outlier_reference(points, labels)
    return reassign_with(points, labels, weights, quantile, centres, member_sims)


def outlier_reference(points: Matrix, labels: Labels) -> tuple[dict[int, Matrix], dict[int, np.ndarray[Any, Any]]]:
    """Each topic's unit centre and its members' cosines to it, sorted: what the outlier rule compares with."""
    centres = centroids(points, labels)
    return centres, {t: np.sort(points[labels == t] @ centres[t]) for t in centres}


def reassign_with(
    points: Matrix,
    labels: Labels,
    weights: Floats,
    quantile: float,
    centres: dict[int, Matrix],
    member_sims: dict[int, np.ndarray[Any, Any]],
) -> tuple[Labels, Floats, np.ndarray[Any, np.dtype[np.bool_]]]:
    """The outlier rule against a given reference (`outlier_reference` of the fitted points, or a saved one)."""
    moved = np.zeros(len(labels), dtype=bool)
    noise = np.flatnonzero(labels == -1)
    if not centres or not len(noise):
        return labels, weights, moved
    topics = list(centres)
    matrix = np.stack([centres[t] for t in topics])
    thresholds = {t: float(np.quantile(s, quantile)) for t, s in member_sims.items()}
    sims = points[noise] @ matrix.T
    best = sims.argmax(axis=1)
    labels, weights = labels.copy(), weights.copy()
    for row, point in enumerate(noise):
        topic = topics[int(best[row])]
        sim = float(sims[row, best[row]])
        if sim >= thresholds[topic] and np.linalg.norm(points[point]) > 0:
            labels[point] = topic
            rank = np.searchsorted(member_sims[topic], sim) / len(member_sims[topic])
            weights[point] = float(max(rank, 1e-3))
            moved[point] = True
    return labels, weights, moved


def topic_sizes(labels: Labels) -> pl.DataFrame:
    """(topic, size) of every topic (noise left out), largest first, ties by topic number: one group-by pass
    instead of one scan of the labels per topic."""
    frame = pl.DataFrame({"topic": np.asarray(labels, dtype=np.int64)})
    sizes = frame.filter(pl.col("topic") >= 0).group_by("topic").len(name="size")
    return sizes.sort(["size", "topic"], descending=[True, False])


def renumber(labels: Labels) -> Labels:
    """Topics numbered by size, largest first (ties by old number): stable and readable ids within a run."""
    order = topic_sizes(labels)["topic"].to_list()
    mapping = {old: new for new, old in enumerate(order)}
    renumbered = pl.Series(np.asarray(labels, dtype=np.int64)).replace_strict(
        mapping, default=-1, return_dtype=pl.Int64
    )
    return renumbered.to_numpy()


def topic_members(ids: Sequence[str], labels: Labels, sample: int, seed: int) -> pl.DataFrame:
    """Per topic, largest first: its size, its member ids (sorted) and a seeded sample of at most `sample` of
    them (sorted), the documents its keywords are computed from."""
    frame = pl.DataFrame({"item": list(ids), "topic": np.asarray(labels, dtype=np.int64)}).filter(pl.col("topic") >= 0)
    grouped = frame.group_by("topic").agg(
        pl.len().alias("size"),
        pl.col("item").sort().alias("members"),
        pl.col("item").shuffle(seed=seed).head(sample).sort().alias("sample"),
    )
    return grouped.sort(["size", "topic"], descending=[True, False])


def ctfidf(
    docs: Mapping[int, Sequence[str]],
    top_k: int,
    groups: Mapping[int, Sequence[str]] | None = None,
    titles: Mapping[str, str] | None = None,
) -> dict[int, list[str]]:
    """Top `top_k` class-based TF-IDF phrases per topic, from text cleaned of code and markup, each conversation
    counted once when `groups` names the texts' conversations (cluster.phrases; `titles`: the conversations'
    titles, one member's title never leads)."""
    return {t: ranked.phrases for t, ranked in ctfidf_phrases(docs, top_k, groups, titles).items()}


def labels_of(keywords: Mapping[int, Sequence[str]]) -> dict[int, str]:
    """Every topic's label: a phrase or name among its best keywords, unique across the topics (cluster.labels)."""
    return labels_for(keywords)


def representatives(
    points: Matrix, labels: Labels, topic: int, k: int, among: np.ndarray[Any, np.dtype[np.bool_]] | None = None
) -> list[int]:
    """Indices of the `k` members closest to the topic's centre (most typical first); of those in `among` when
    the topic has any (the anchors, cluster/topic_space.py: a placed point is a mean of anchors, so averaging,
    not its text, brings it near the centre)."""
    members = np.flatnonzero(labels == topic)
    centre = points[members].mean(axis=0)
    if among is not None and among[members].any():
        members = members[among[members]]
    sims = points[members] @ centre
    return [int(members[i]) for i in np.argsort(-sims, kind="stable")[:k]]


def map_layout(points: Matrix, n_neighbors: int, seed: int) -> Matrix:
    """A 2-D UMAP of `points` for the topic map (min_dist 0.1 spreads points out for the eye)."""
    layout, _ = umap_layout(points, min(n_neighbors, len(points) - 1), 2, 0.1, seed)
    return layout
