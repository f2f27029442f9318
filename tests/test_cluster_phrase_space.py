"""What the clustering sees per segment (cluster/phrase_space.py): the MiniLM vector joined with an LSA vector of
the segment's phrases. Seeded synthetic data where the text vectors follow the genre (2 of them, crossing the
subjects) and the phrases the subject (6); real UMAP and HDBSCAN."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from stage_support import ingest_stage, stage_segment

from cluster import phrase_space
from cluster.describe import segment_texts
from cluster.phrases import phrase_keys
from cluster.topics import fit_all
from cluster.tuning import Params
from contracts.settings import Settings
from staging import segments as segment_store
from staging.archive import open_archive
from staging.graph_quality import adjusted_mutual_info
from staging.ledger import open_run, open_staging
from tests.test_cluster import themed_export
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


def test_the_points_are_the_same_bytes_from_tuples_and_in_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 23: the stage holds each segment's keys as a tuple of shared strs and joins JOIN_CHUNK rows at a
    time; the space fitted on them and the joined points are byte for byte those of sets and of one pass."""
    text, keys, _ = genre_points(seed=4)
    as_sets = phrase_space.fit(keys, pairs(keys), dims=16, share=0.3, seed=4)
    whole = as_sets.join(text, keys)
    vectors = as_sets.phrase_vectors(keys)
    as_tuples = [tuple(k) for k in keys]
    space = phrase_space.fit(as_tuples, pairs(keys), dims=16, share=0.3, seed=4)
    assert space.vocabulary == as_sets.vocabulary
    assert space.basis is not None and as_sets.basis is not None
    assert space.idf.tobytes() == as_sets.idf.tobytes() and space.basis.tobytes() == as_sets.basis.tobytes()
    monkeypatch.setattr(phrase_space, "JOIN_CHUNK", 7)  # 240 rows: 34 full chunks and a short one
    chunked = space.join(text, as_tuples)
    assert chunked.dtype == whole.dtype == np.float32 and chunked.shape == whole.shape
    assert chunked.tobytes() == whole.tobytes()
    assert space.phrase_vectors(as_tuples).tobytes() == vectors.tobytes()


def test_segment_keys_are_the_phrase_keys_as_tuples_of_shared_strings(tmp_path: Path) -> None:
    """Each segment's keys: the phrase keys of its text's opening, no duplicate, one str object per distinct key
    across segments (what keeps every segment's keys small enough to hold at 1M messages)."""
    settings = Settings(data_dir=tmp_path / "data")
    export = themed_export(tmp_path / "themes.jsonl", per_theme=6)
    archive, staging = open_archive(settings.archive_path), open_staging(settings.staging_path)
    try:
        open_run(staging, stages=["all"], exports=[str(export)], settings={}, code_version="test", run_id="r1")
        ingest_stage.run(archive, staging, run_id="r1", settings=settings, exports=[export])
        stage_segment.run(archive, staging, run_id="r1", settings=settings)
        members = {s.segment_id: s.message_ids for s in segment_store.iter_current_segments(staging)}
        ids = sorted(members)
        keys = phrase_space.segment_keys(archive, members, ids)
        texts = segment_texts(archive, members, ids)
    finally:
        archive.close()
        staging.close()
    assert len(keys) == len(ids) == 18
    by_text: dict[str, str] = {}
    for segment, found in zip(ids, keys, strict=True):
        assert isinstance(found, tuple) and len(set(found)) == len(found)
        assert set(found) == phrase_keys(texts[segment])
        for key in found:
            assert by_text.setdefault(key, key) is key  # the same str object wherever the key recurs
    assert sum(len(k) for k in keys) > len(by_text)  # keys do recur across segments here
