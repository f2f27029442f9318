"""Clustering cost follows the data: the Optuna budget, exact k-NN for small sets, placement without a search
index, and the per-topic sizes and samples (polars)."""

from __future__ import annotations

import numpy as np
import pytest

from cluster import topics as fit_topics
from cluster.tuning import EXACT_KNN_MAX, LayoutCache, budget, exact_knn, knn_graph, umap_layout


def test_budget_is_a_trial_count_with_a_cpu_time_safety_cap_that_grows_with_the_points() -> None:
    """30 trials whatever the load; the safety cap (CPU seconds, after the 10th trial) is 300 s + 60 ms per
    point, at most 3,600 s: far above what 30 trials cost, so a loaded machine runs the same 30."""
    assert budget(919, None, None) == (30, pytest.approx(355.14))
    assert budget(20_000, None, None) == (30, pytest.approx(1500.0))
    assert budget(2_000_000, None, None) == (30, 3600.0)


def test_configured_trials_run_in_full_unless_a_cap_is_configured() -> None:
    """An explicit n_trials gets no automatic cap; an explicit cap is kept with scaled trials."""
    assert budget(919, 30, None) == (30, None)
    assert budget(919, 4, 12.0) == (4, 12.0)
    assert budget(919, None, 5.0) == (30, 5.0)


def test_exact_knn_is_the_brute_force_cosine_neighbourhood_self_first() -> None:
    """Each row lists itself first at distance 0, then its true nearest neighbours by cosine, ascending."""
    rng = np.random.default_rng(3)
    points = rng.normal(size=(60, 8)).astype(np.float32)
    points[7] = points[3]  # a duplicate must not push a point out of its own first slot
    indices, dists, index = exact_knn(points, 5)
    unit = points / np.linalg.norm(points, axis=1, keepdims=True)
    truth = 1 - unit @ unit.T
    assert index is None and indices.shape == dists.shape == (60, 5)
    assert (indices[:, 0] == np.arange(60)).all() and (dists[:, 0] == 0).all()
    assert indices[3, 1] == 7 and indices[7, 1] == 3
    for row in (0, 11, 42):
        expected = sorted(truth[row][np.arange(60) != row])[:4]
        assert dists[row, 1:] == pytest.approx(expected, abs=1e-5)


def test_knn_graph_is_exact_up_to_the_small_data_threshold() -> None:
    """Below EXACT_KNN_MAX points the graph has no search index (no NN-descent compile) and k < n."""
    points = np.random.default_rng(0).normal(size=(12, 4)).astype(np.float32)
    indices, _, index = knn_graph(points, 50, seed=1)
    assert EXACT_KNN_MAX >= 4096 and index is None and indices.shape == (12, 11)


def test_vote_places_points_by_their_nearest_fitted_neighbours() -> None:
    """A point beside topic 1's members joins topic 1; among outliers it stays noise; strength is a share."""
    fitted = np.array([[1, 0], [0.95, 0.05], [0.9, 0.1], [0, 1], [0.05, 0.95], [-1, 0], [-0.9, -0.1]], np.float32)
    labels = np.array([1, 1, 1, 0, 0, -1, -1])
    placed, strengths = fit_topics.vote(fitted, labels, np.array([[0.99, 0.01], [-0.95, 0]], np.float32), k=2)
    assert placed.tolist() == [1, -1]
    assert strengths[0] == pytest.approx(1.0) and strengths[1] == 0.0


def test_topic_sizes_renumbering_and_seeded_samples() -> None:
    """Largest topic first (ties by number), noise stays -1; samples are seeded, bounded and sorted."""
    labels = np.array([2, 2, -1, 0, 0, 0, 5, 2, 0])
    assert fit_topics.renumber(labels).tolist() == [1, 1, -1, 0, 0, 0, 2, 1, 0]
    ids = [f"s{i}" for i in range(len(labels))]
    groups = fit_topics.topic_members(ids, labels, sample=2, seed=42)
    assert groups["topic"].to_list() == [0, 2, 5] and groups["size"].to_list() == [4, 3, 1]
    assert groups["members"].to_list()[1] == ["s0", "s1", "s7"]
    samples = groups["sample"].to_list()
    assert [len(s) for s in samples] == [2, 2, 1] and all(s == sorted(s) for s in samples)
    assert set(samples[0]) <= {"s3", "s4", "s5", "s8"}
    assert fit_topics.topic_members(ids, labels, sample=2, seed=42).equals(groups)


def test_layouts_that_differ_only_in_min_dist_share_one_spectral_init_and_stay_the_same_arrays() -> None:
    """The tuning's second min_dist of an (n_neighbors, n_components) pair reuses the first one's spectral initial
    layout (one eigen-solve, not two) and gives the same layout as a fit of its own; another dimension solves
    again."""
    rng = np.random.default_rng(0)
    blobs = rng.normal(size=(5, 16)) * 6  # separate blobs: a fuzzy graph of several components
    points = np.vstack([c + rng.normal(size=(80, 16)) for c in blobs]).astype(np.float32)
    cache = LayoutCache(points, seed=42)
    first, second = cache.get(10, 5, 0.0), cache.get(10, 5, 0.1)
    assert cache.spectral.hits == 1
    cache.get(10, 2, 0.0)
    assert cache.spectral.hits == 1 and len(cache.spectral.found) == 2
    assert cache.knn is not None
    for layout, min_dist in ((first, 0.0), (second, 0.1)):
        alone, _ = umap_layout(points, 10, 5, min_dist, 42, cache.knn)
        assert np.array_equal(layout, alone)
    import umap.umap_

    assert umap.umap_.spectral_layout.__module__ == "umap.spectral"  # UMAP's own function is back after each fit
