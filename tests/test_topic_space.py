"""The topic space (cluster/topic_space.py): the full MiniLM reads a bounded, stable sample of segments (the anchors);
the tuning and the fit see them only; every other segment and concept is placed by its nearest anchors, in a full
run and in an incremental one. Real onnxruntime, UMAP, HDBSCAN and Optuna on small seeded data."""

from __future__ import annotations

import json
import pickle
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from clients.embedders import StaticMiniLM
from cluster import saved_model, topic_space
from cluster import topics as fit_topics
from staging import embeddings as vectors
from tests.test_cluster import run_stages, small_settings, themed_export
from tests.test_cluster_incremental import links, new_conversations, rerun_cluster, theme_of


def test_the_anchors_are_stable_as_the_archive_grows() -> None:
    """A segment chosen among the first ids is still chosen among more, unless a newcomer outranks it: the anchors
    of the larger archive, among the old ids, are a subset of the old anchors (a re-fit re-reads only newcomers)."""
    ids = [f"seg-{n}" for n in range(400)]
    few = {ids[i] for i in topic_space.chosen(ids[:300], 50, seed=42)}
    more = {ids[i] for i in topic_space.chosen(ids, 50, seed=42)}
    assert len(few) == len(more) == 50
    assert {s for s in more if s in set(ids[:300])} <= few
    assert list(topic_space.chosen(ids[:30], 50, seed=42)) == list(range(30))  # fewer than the limit: all
    assert {ids[i] for i in topic_space.chosen(ids, 50, seed=7)} != more  # the seed picks them
    openers = set(ids[::10])  # 40 conversations' first segments come before any other
    first = {ids[i] for i in topic_space.chosen(ids, 50, seed=42, openers=openers)}
    assert openers <= first and len(first) == 50


def test_the_topic_text_is_the_title_and_the_opening() -> None:
    assert (
        topic_space.topic_text("Spark joins", ["How do I join?", "Use join."])
        == "Spark joins. How do I join?\nUse join."
    )
    assert topic_space.topic_text("New chat", ["hello"]) == "hello"  # a placeholder title says nothing
    long = topic_space.topic_text("", ["x" * 3000, "y" * 3000, "z" * 3000])
    assert len(long) == topic_space.OPENING_CHARS and "z" not in long  # the opening, not the whole segment


def test_a_point_is_placed_among_its_nearest_anchors() -> None:
    """A point whose static vector is an anchor's gets (nearly) that anchor's full-model vector; one that is near no
    anchor at all takes the nearest one's rather than a zero vector."""
    rng = np.random.default_rng(0)
    static = topic_space.unit(rng.normal(size=(40, 16)).astype(np.float32))
    encoded = topic_space.unit(rng.normal(size=(40, 16)).astype(np.float32))
    anchors = topic_space.Anchors([f"a{i}" for i in range(40)], static, encoded, "test")
    placed = topic_space.place(anchors, static[[3, 17]] * 5.0, k=1)
    assert np.allclose(placed, encoded[[3, 17]], atol=1e-6)
    mixed = topic_space.place(anchors, static[[3]], k=10)
    assert float(mixed[0] @ encoded[3]) == pytest.approx(float(np.max(encoded @ mixed[0])))  # its own anchor leads
    basis = np.eye(4, dtype=np.float32)
    apart = topic_space.Anchors(["a", "b", "c", "d"], basis, encoded[:4, :4], "test")
    far = topic_space.place(apart, -np.ones((1, 4), dtype=np.float32), k=4)  # negative cosine to every anchor
    assert np.allclose(far[0], topic_space.unit(encoded[:1, :4])[0], atol=1e-6)  # the first nearest, not zero


@pytest.fixture(scope="module")
def embedder() -> StaticMiniLM:
    return StaticMiniLM()


def _encoded_rows(settings_path: Path, key: str) -> int:
    with sqlite3.connect(settings_path) as conn:
        return int(conn.execute("SELECT COUNT(*) FROM embeddings WHERE model = ?", (key,)).fetchone()[0])


def test_the_full_model_reads_at_most_encode_max_segments_and_the_rest_are_placed(
    tmp_path: Path, embedder: StaticMiniLM
) -> None:
    """60 segments in three themes, encode_max 30: 30 segments are read by minilm-onnx, the study and the fit see
    those 30 only, the other 30 still get topics, each topic holds one theme; a forced re-run reads no text again
    and writes the same links; an incremental run places new segments by the saved anchors."""
    settings = small_settings(tmp_path / "data", encode_max=30)
    result = run_stages(settings, themed_export(tmp_path / "themes.jsonl"), "r1", embedder)
    assert result.status == "succeeded" and result.counts["segments_encoded"] == 30
    assert any("on the title and opening of 30 segment(s); the other 30 placed" in n for n in result.notes)
    encoder = topic_space.model_key(settings, embedder.key).split("|")[1]
    assert encoder.startswith("minilm-onnx@") and _encoded_rows(settings.staging_path, encoder) == 30
    model = pickle.loads((settings.data_dir / saved_model.MODEL_DIR / "r1.pkl").read_bytes())
    assert model.anchors is not None and len(model.anchors.ids) == 30
    assert np.asarray(model.reducer._raw_data).shape[0] == 30  # fitted on the anchors alone
    first = links(settings, "r1")
    segments = {k[1]: v[0] for k, v in first.items() if k[0] == "segment"}
    assert len(segments) >= 54  # the placed half has topics too (a few may stay outliers)
    assert all(len(themes) == 1 for themes in theme_of(segments, settings).values())
    with sqlite3.connect(settings.staging_path) as conn:
        params = json.loads(conn.execute("SELECT params FROM cluster_runs WHERE run_id = 'r1'").fetchone()[0])
    assert params["encoder"] == encoder
    forced = rerun_cluster(settings.model_copy(), "r1", embedder)
    assert forced.status == "succeeded" and _encoded_rows(settings.staging_path, encoder) == 30
    assert links(settings, "r1") == first

    new = run_stages(settings, new_conversations(tmp_path / "new.jsonl", per_theme=1), "r2", embedder)
    assert new.counts["incremental"] == 1 and new.counts["segments_placed"] == 3
    second = links(settings, "r2")
    placed = {k[1]: v[0] for k, v in second.items() if k[0] == "segment"}
    assert all(len(themes) == 1 for themes in theme_of(placed, settings).values())
    # each new segment was placed as the full run places a segment it did not read: by its nearest anchors
    fresh = sorted(k[1] for k in second if k[0] == "segment" and k not in first)
    with sqlite3.connect(settings.staging_path) as conn:
        ids, static = vectors.item_matrix(conn, "segment", embedder.key, fresh)
    labels, strengths = fit_topics.place(model.reducer, model.clusterer, topic_space.place(model.anchors, static))
    for segment, label, strength in zip(ids, labels.tolist(), strengths.tolist(), strict=True):
        topic, _, weight, source = second[("segment", segment)]
        if source == "predicted":
            assert (topic, weight) == (model.topic_of[label], fit_topics.unit_weight(strength))
    assert _encoded_rows(settings.staging_path, encoder) == 30  # the new ones were placed, not read


def test_encoder_embed_finds_the_topics_on_the_embed_vectors(tmp_path: Path, embedder: StaticMiniLM) -> None:
    """cluster.encoder = embed: nothing is read by the full model, no anchors are saved, the topics are found on the
    embed stage's vectors as before."""
    settings = small_settings(tmp_path / "data", encoder="embed")
    result = run_stages(settings, themed_export(tmp_path / "themes.jsonl"), "r1", embedder)
    assert result.status == "succeeded" and result.counts["segments_encoded"] == 0
    assert not any("title and opening" in n for n in result.notes)
    model = pickle.loads((settings.data_dir / saved_model.MODEL_DIR / "r1.pkl").read_bytes())
    assert model.anchors is None and model.model == embedder.key
    with sqlite3.connect(settings.staging_path) as conn:
        models = {row[0] for row in conn.execute("SELECT DISTINCT model FROM embeddings")}
    assert models == {embedder.key}


def test_a_zero_vector_stays_zero_rather_than_taking_the_first_anchors() -> None:
    """A point with a zero static vector (a concept whose text is all stop words) is near no anchor: it stays a zero
    vector (and gets no confident topic) rather than the full-model vector of whichever anchor comes first."""
    rng = np.random.default_rng(1)
    static = topic_space.unit(rng.normal(size=(20, 8)).astype(np.float32))
    encoded = topic_space.unit(rng.normal(size=(20, 8)).astype(np.float32))
    anchors = topic_space.Anchors([f"a{i}" for i in range(20)], static, encoded, "test")
    placed = topic_space.place(anchors, np.vstack([np.zeros((1, 8), np.float32), static[[5]]]))
    assert not placed[0].any()
    assert float(placed[1] @ encoded[5]) == pytest.approx(float(np.max(encoded @ placed[1])))


def test_fewer_anchors_than_min_points_are_never_read(tmp_path: Path, embedder: StaticMiniLM) -> None:
    """encode_max below cluster.min_points (10 < 30, both allowed): the full model still reads min_points segments,
    so the tuning and the fit see no fewer points than a clustering needs (10 crashed UMAP's spectral layout)."""
    settings = small_settings(tmp_path / "data", encode_max=10)
    result = run_stages(settings, themed_export(tmp_path / "themes.jsonl"), "r1", embedder)
    assert result.status == "succeeded" and result.counts["segments_encoded"] == settings.cluster.min_points


def test_representatives_are_segments_the_full_model_read(tmp_path: Path, embedder: StaticMiniLM) -> None:
    """A placed segment's vector is a mean of ten anchors', so it lies nearer any topic centre than a segment read
    on its own: the representatives (what the LLM names a topic from, what `chatmem topics` shows) are drawn from
    the anchors of the topic, not from the placed segments that averaging pulls to the centre."""
    settings = small_settings(tmp_path / "data", encode_max=30)
    result = run_stages(settings, themed_export(tmp_path / "themes.jsonl"), "r1", embedder)
    assert result.status == "succeeded" and result.counts["segments_encoded"] == 30
    model = pickle.loads((settings.data_dir / saved_model.MODEL_DIR / "r1.pkl").read_bytes())
    with sqlite3.connect(settings.staging_path) as conn:
        reps = [json.loads(r[0]) for r in conn.execute("SELECT representatives FROM topics WHERE run_id = 'r1'")]
    assert reps and all(r for r in reps)
    assert {s for r in reps for s in r} <= set(model.anchors.ids)


def test_segments_placed_into_one_topic_are_said_with_the_setting_that_reads_more() -> None:
    """A tiny cluster.encode_max (50 read of 1,404): the placed segments crowd into one topic (64 % of them, 16 % of
    the read ones) and the run says so, naming the setting; placed segments spread as the read ones are (three even
    themes, 33 % each) say nothing."""
    from cluster.stage import crowded

    read = np.arange(50)
    labels = np.concatenate([np.arange(50) % 7, np.where(np.arange(1354) < 866, 0, 1 + np.arange(1354) % 6)])
    [note] = crowded(read, labels, 50)
    assert "64% of the 1354 segment(s) placed" in note and "16% of the 50" in note
    assert "CHATMEM_CLUSTER__ENCODE_MAX" in note and "cluster.encode_max=50" in note
    even = np.arange(60) % 3
    assert crowded(np.arange(10), even, 10) == []
    assert crowded(np.arange(60), even, 20000) == []  # every segment read: nothing placed


def test_the_conversations_in_no_topic_are_named_in_a_note() -> None:
    """A conversation all of whose segments are outliers is in no topic: the run's notes say how many (a
    conversation with one segment in a topic is filed)."""
    from cluster.stage import unfiled

    conversations = ["a", "a", "b", "b", "c", "d"]
    labels = np.array([0, -1, -1, -1, 1, -1])
    assert unfiled(conversations, labels) == ["2 of 4 conversation(s) in no topic: each of their segments an outlier"]
    assert unfiled(conversations, np.array([0, 0, 1, 1, 1, 0])) == []
