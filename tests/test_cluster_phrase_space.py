"""What the clustering sees per segment (cluster/phrase_space.py): the MiniLM vector joined with an LSA vector of
the segment's phrases. Seeded synthetic data where the text vectors follow the genre (2 of them, crossing the
subjects) and the phrases the subject (6); real UMAP and HDBSCAN."""

from __future__ import annotations

from typing import Any

import numpy as np

from cluster import phrase_space
from cluster.phrases import phrase_keys
from cluster.topics import fit_all
from cluster.tuning import Params
from staging.graph_quality import adjusted_mutual_info
from tests.test_cluster_objective import SUBJECT_PHRASES, subject_texts

SUBJECTS, PER_SUBJECT, GENRES, DIM = len(SUBJECT_PHRASES), 40, 2, 24


def genre_points(seed: int = 0) -> tuple[np.ndarray[Any, Any], list[set[str]], np.ndarray[Any, Any]]:
    """Per segment: a unit text vector near its genre's centre (genre = segment number mod 2, whatever the
    subject), the phrase keys of a text naming three of its subject's phrases, and its subject."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(GENRES, DIM)) * 2.0
    subjects = np.repeat(np.arange(SUBJECTS), PER_SUBJECT)
    text = np.stack([centres[i % GENRES] + 0.5 * rng.normal(size=DIM) for i in range(len(subjects))])
    text = (text / np.linalg.norm(text, axis=1, keepdims=True)).astype(np.float32)
    return text, [phrase_keys(t) for t in subject_texts(subjects, seed)], subjects


def pairs(keys: list[set[str]]) -> list[str]:
    """Two segments a conversation."""
    return [f"c{i // 2}" for i in range(len(keys))]


def same_subject_neighbour(points: np.ndarray[Any, Any], subjects: np.ndarray[Any, Any]) -> float:
    """Share of the points whose nearest other point (cosine) has the same subject."""
    sims = points @ points.T
    np.fill_diagonal(sims, -np.inf)
    return float(np.mean(subjects[sims.argmax(axis=1)] == subjects))


def test_joined_points_are_nearest_to_their_subject_where_the_text_sees_the_genre() -> None:
    text, keys, subjects = genre_points()
    space = phrase_space.fit(keys, pairs(keys), dims=16, share=0.3, seed=0)
    joined = space.join(text, keys)
    assert same_subject_neighbour(text, subjects) < 0.4  # the text vectors: near chance (1/6)
    assert same_subject_neighbour(joined, subjects) > 0.9
    assert joined.shape == (len(text), DIM + 16)
    assert np.allclose(np.linalg.norm(joined, axis=1), 1.0, atol=1e-5)


def test_the_cosine_is_the_share_weighted_sum_of_the_text_and_phrase_cosines() -> None:
    text, keys, _ = genre_points()
    space = phrase_space.fit(keys, pairs(keys), dims=16, share=0.3, seed=0)
    phrases = space.phrase_vectors(keys)
    joined = space.join(text, keys)
    assert np.allclose(joined @ joined.T, 0.7 * (text @ text.T) + 0.3 * (phrases @ phrases.T), atol=1e-5)


def test_the_space_is_seeded_and_places_new_segments_and_names_in_it() -> None:
    """Same keys and seed: the same space; a new segment's keys and a concept's name land near their subject;
    keys the space has never seen give a zero phrase vector, which leaves the text's direction alone."""
    text, keys, subjects = genre_points()
    first = phrase_space.fit(keys, pairs(keys), dims=16, share=0.3, seed=5)
    again = phrase_space.fit(keys, pairs(keys), dims=16, share=0.3, seed=5)
    assert np.allclose(first.phrase_vectors(keys), again.phrase_vectors(keys))
    vectors = first.phrase_vectors(keys)
    centres = np.stack([vectors[subjects == s].mean(axis=0) for s in range(SUBJECTS)])
    named = first.phrase_vectors(phrase_space.title_keys(["broadcast join", "oven spring"]))
    assert (named @ centres.T).argmax(axis=1).tolist() == [0, 1]
    unknown = first.phrase_vectors([{"never seen phrase"}, set()])
    assert not unknown.any()
    joined = first.join(text[:2], [{"never seen phrase"}, set()])
    assert np.allclose(joined[:, :DIM] / np.linalg.norm(joined[:, :DIM], axis=1, keepdims=True), text[:2], atol=1e-5)


def test_a_space_without_shared_phrases_leaves_the_text_alone() -> None:
    """Every phrase used once (nothing to compare): no basis, zero phrase vectors."""
    space = phrase_space.fit([{f"word{i}"} for i in range(10)], [str(i) for i in range(10)], dims=8, share=0.3, seed=0)
    assert space.basis is None
    assert not space.phrase_vectors([{"word1"}]).any()


def test_umap_and_hdbscan_find_the_subjects_on_the_joined_points_and_the_genres_on_the_text() -> None:
    """The same fit (real UMAP, HDBSCAN) on the text vectors finds the 2 genres; on the joined points, the 6
    subjects."""
    text, keys, subjects = genre_points(seed=2)
    params = Params(15, 5, 0.0, 15, 5, "eom")
    joined = phrase_space.fit(keys, pairs(keys), dims=16, share=0.3, seed=2).join(text, keys)
    by_text = fit_all(text, params, seed=2, fit_max=10_000).labels
    by_joined = fit_all(joined, params, seed=2, fit_max=10_000).labels
    genres = np.arange(len(text)) % GENRES
    assert adjusted_mutual_info(by_text.tolist(), genres.tolist()) > 0.8
    assert adjusted_mutual_info(by_text.tolist(), subjects.tolist()) < 0.2
    assert adjusted_mutual_info(by_joined.tolist(), subjects.tolist()) > 0.8


def test_a_phrase_only_one_conversation_repeats_is_left_out() -> None:
    """Kept: phrases 3 or more conversations use (and at most a fifth of them); a phrase one conversation says in
    every segment would make each conversation its own tight topic: left out, as is one every conversation uses."""
    own = {"own phrase", "shared phrase", "everywhere"}
    keys = [set(own) if i < 4 else {"everywhere", f"filler {i}"} for i in range(40)]
    keys[10] |= {"shared phrase"}
    keys[20] |= {"shared phrase"}
    conversations = ["a"] * 4 + [f"c{i}" for i in range(4, 40)]
    space = phrase_space.fit(keys, conversations, dims=4, share=0.3, seed=0)
    assert set(space.vocabulary) == {"shared phrase"}
