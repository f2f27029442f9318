"""Topics joined after the fit by their conversations' titles (cluster/title_merge.py): the pure join on given
vectors, and the stage on real onnxruntime, UMAP, HDBSCAN and Optuna with small seeded data."""

from __future__ import annotations

import json
import random
import sqlite3
from pathlib import Path

import numpy as np
import pytest
from stage_support import ingest_stage

from clients.embedders import StaticMiniLM
from cluster import title_merge, topic_space
from staging.archive import open_archive
from staging.embeddings import text_hash
from staging.ledger import open_run, open_staging
from tests.test_cluster import run_stages, small_settings


def _unit(rows: list[list[float]]) -> np.ndarray:
    matrix = np.asarray(rows, dtype=np.float32)
    return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)


def _topics_of(labels: np.ndarray) -> list[set[int]]:
    return sorted(({i for i, t in enumerate(labels.tolist()) if t == topic} for topic in set(labels.tolist())), key=min)


def test_topics_whose_titles_are_alike_are_joined_closest_first() -> None:
    """Three topics of two conversations each: 0 and 1 titled alike join, 2 stays apart; noise stays noise."""
    labels = np.array([0, 0, 1, 1, 2, 2, -1])
    conversations = ["a", "b", "c", "d", "e", "f", "g"]
    vectors = _unit([[1, 0.1, 0], [1, 0.1, 0], [1, -0.1, 0], [1, -0.1, 0], [0, 0, 1], [0, 0, 1], [1, 0, 0]])
    titled = np.ones(7, dtype=bool)
    joined, joins = title_merge.merge(labels, conversations, vectors, titled, distance=0.1, cap=1.0)
    assert joins == 1 and joined.tolist() == [0, 0, 0, 0, 2, 2, -1]
    assert title_merge.merge(labels, conversations, vectors, titled, distance=0.0, cap=1.0)[1] == 0
    everything, joins = title_merge.merge(labels, conversations, vectors, titled, distance=2.0, cap=1.0)
    assert joins == 2 and set(everything.tolist()) == {0, -1}


def test_a_join_that_would_hold_more_than_the_cap_of_conversations_is_not_made() -> None:
    """Joined, topics 0 and 1 would be the dominant topic of 4 of 6 conversations: over a cap of 0.5, not made;
    the next closest pair under the cap still joins."""
    labels = np.array([0, 0, 1, 1, 2, 3])
    conversations = ["a", "b", "c", "d", "e", "f"]
    vectors = _unit([[1, 0, 0], [1, 0, 0], [1, 0.01, 0], [1, 0.01, 0], [0, 1, 0], [0, 1, 0.2]])
    joined, joins = title_merge.merge(labels, conversations, vectors, np.ones(6, dtype=bool), distance=0.1, cap=0.5)
    assert joins == 1 and _topics_of(joined) == [{0, 1}, {2, 3}, {4, 5}]


def test_a_topic_of_untitled_conversations_is_never_joined() -> None:
    labels = np.array([0, 0, 1, 1])
    vectors = _unit([[1, 0], [1, 0], [1, 0], [1, 0]])
    titled = np.array([True, True, False, False])
    joined, joins = title_merge.merge(labels, ["a", "b", "c", "d"], vectors, titled, distance=2.0, cap=1.0)
    assert joins == 0 and joined.tolist() == [0, 0, 1, 1]


def test_dominant_counts_take_the_topic_with_most_segments_and_the_lower_on_a_tie() -> None:
    labels = np.array([0, 1, 1, 0, 1, 2, -1])
    conversation = np.array([0, 0, 0, 1, 1, 2, 3])  # 0: topic 1 (2 of 3); 1: tie 0/1 -> 0; 2: topic 2; 3: none
    assert title_merge.dominant_counts(labels, conversation, 3).tolist() == [1, 1, 1]


def _merge_by_search(
    labels: np.ndarray, conversations: list[str], vectors: np.ndarray, titled: np.ndarray, distance: float, cap: float
) -> tuple[np.ndarray, int]:
    """The join as first written (session 34): the whole distance matrix and every dominant count again after each
    join. The incremental `merge` must make the same joins in the same order."""
    labels = np.asarray(labels, dtype=np.int64).copy()
    numbers: dict[str, int] = {}
    conversation = np.array([numbers.setdefault(c, len(numbers)) for c in conversations], dtype=np.int64)
    topics = int(labels.max()) + 1 if len(labels) else 0
    if topics < 2 or not titled.any():
        return labels, 0
    sums = np.zeros((topics, vectors.shape[1]), dtype=np.float64)
    np.add.at(sums, labels[titled & (labels >= 0)], vectors[titled & (labels >= 0)])
    alive = np.linalg.norm(sums, axis=1) > 0
    joins = 0
    while alive.sum() >= 2:
        centres = sums / np.maximum(np.linalg.norm(sums, axis=1, keepdims=True), 1e-12)
        apart = 1.0 - centres @ centres.T
        counts = title_merge.dominant_counts(labels, conversation, topics)
        allowed = np.triu(apart <= distance, 1) & np.outer(alive, alive)
        allowed &= (counts[:, None] + counts[None, :]) <= cap * len(numbers)
        if not allowed.any():
            break
        keep, into = np.unravel_index(int(np.argmin(np.where(allowed, apart, np.inf))), apart.shape)
        labels[labels == into] = keep
        sums[keep] += sums[into]
        sums[into] = 0.0
        alive[into] = False
        joins += 1
    return labels, joins


@pytest.mark.parametrize("seed", range(12))
def test_the_incremental_join_makes_the_joins_a_search_of_the_whole_matrix_makes(seed: int) -> None:
    """Seeded inputs of 5-60 topics in a few subjects (so some pairs are near), conversations spread over several
    topics (so a join moves other topics' dominant counts), untitled points, noise, caps that bind and that do not;
    some titles repeated exactly (tied distances)."""
    rng = np.random.default_rng(seed)
    topics = int(rng.integers(5, 60))
    points = int(rng.integers(50, 1500))
    conversation_count = int(rng.integers(5, max(6, points // 2)))
    subjects = rng.standard_normal((int(rng.integers(1, 6)), 8))
    directions = subjects[rng.integers(0, len(subjects), topics)] + rng.uniform(0.1, 1.0) * rng.standard_normal(
        (topics, 8)
    )
    labels = rng.integers(-1, topics, points)
    labels[:topics] = np.arange(topics)  # every topic has a point
    conversations = [f"c{n}" for n in rng.integers(0, conversation_count, points)]
    vectors = directions[np.maximum(labels, 0)] + 0.5 * rng.standard_normal((points, 8))
    if seed % 3 == 0:
        vectors = np.round(vectors)  # exact ties among the centres' distances
    vectors = (vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)).astype(np.float32)
    titled = rng.random(points) > 0.1
    titled[labels == 1] = False  # topic 1: untitled
    for distance, cap in ((0.4, 0.08), (0.4, 1.0), (0.8, 0.25), (2.0, 0.5)):
        expected, expected_joins = _merge_by_search(labels, conversations, vectors, titled, distance, cap)
        joined, joins = title_merge.merge(labels, conversations, vectors, titled, distance, cap)
        assert joins == expected_joins and joined.tolist() == expected.tolist(), (distance, cap)


TRIPS = {  # two trips told apart by their words, titled alike (the destination in the text, not in the title)
    "paris": (("Planning a trip", "Planning a city trip"), "louvre seine eiffel montmartre croissant bistro marais"),
    "tokyo": (("Planning a trip", "Planning a city trip"), "shibuya sushi shinkansen asakusa ramen akihabara shinjuku"),
    "baking": (("Sourdough bread baking",), "sourdough flour yeast oven crust dough bake knead starter loaf butter"),
}


def _titled_export(path: Path, per_theme: int = 15, seed: int = 5, prefix: str = "", numbered: bool = False) -> Path:
    rng = random.Random(seed)
    lines = []
    for theme, (titles, words) in TRIPS.items():
        for n in range(per_theme):
            title = titles[n % len(titles)] + (f" {theme} {n}" if numbered else "")  # numbered: each its own
            for turn in range(2):
                text = " ".join(rng.choice(words.split()) for _ in range(12))
                cid = f"{theme}-{prefix}{n}"
                record = {"conversation_id": cid, "conversation_title": title, "id": f"{cid}-{turn}"}
                lines.append(json.dumps({**record, "role": "user" if turn == 0 else "assistant", "text": text}))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _theme_topics(settings_path: Path, run_id: str) -> dict[str, set[int]]:
    with sqlite3.connect(settings_path) as conn:
        rows = conn.execute(
            "SELECT s.conversation_id, l.topic FROM topic_links l JOIN segments s ON s.segment_id = l.item_id"
            " WHERE l.kind = 'segment' AND l.run_id = ?",
            (run_id,),
        ).fetchall()
    found: dict[str, set[int]] = {}
    for conversation, topic in rows:
        found.setdefault(conversation.split("-")[0], set()).add(int(topic))
    return found


@pytest.mark.parametrize("distance", [0.0, 0.4])
def test_the_stage_joins_the_trips_by_their_titles(tmp_path: Path, distance: float) -> None:
    """Two trips told apart by their words are one topic once their titles ("Planning a trip", "Planning a city
    trip") are read; the baking topic, titled otherwise, stays its own; 0 turns the join off."""
    settings = small_settings(tmp_path / "data", title_merge=distance, title_merge_cap=0.7)
    result = run_stages(settings, _titled_export(tmp_path / "trips.jsonl"), "r1", StaticMiniLM())
    assert result.status == "succeeded"
    themes = _theme_topics(settings.staging_path, "r1")
    assert all(len(topics) == 1 for topics in themes.values())
    assert themes["baking"] != themes["paris"]
    joined = any("joined to one whose conversations' titles are alike" in n for n in result.notes)
    assert joined == (distance > 0) and (themes["paris"] == themes["tokyo"]) == (distance > 0)


def test_new_segments_are_placed_in_the_joined_topic(tmp_path: Path) -> None:
    """The saved model maps both trips' fitted labels to the joined topic: an incremental run places a new Paris and a
    new Tokyo conversation there, and a new baking one in its own topic."""
    settings = small_settings(tmp_path / "data", title_merge=0.4, title_merge_cap=0.7)
    embedder = StaticMiniLM()
    run_stages(settings, _titled_export(tmp_path / "trips.jsonl"), "r1", embedder)
    joined = _theme_topics(settings.staging_path, "r1")
    assert joined["paris"] == joined["tokyo"] != joined["baking"]
    new = run_stages(
        settings, _titled_export(tmp_path / "new.jsonl", per_theme=1, seed=9, prefix="new"), "r2", embedder
    )
    assert new.counts["incremental"] == 1 and new.counts["segments_placed"] == 3
    with sqlite3.connect(settings.staging_path) as conn:
        placed = dict(
            conn.execute(
                "SELECT s.conversation_id, l.topic FROM topic_links l JOIN segments s ON s.segment_id = l.item_id"
                " WHERE l.kind = 'segment' AND l.run_id = 'r2' AND s.conversation_id LIKE '%-new0'"
            ).fetchall()
        )
    assert placed == {
        "paris-new0": min(joined["paris"]),
        "tokyo-new0": min(joined["paris"]),
        "baking-new0": min(joined["baking"]),
    }


def test_only_the_titles_of_the_conversations_to_read_are_read(tmp_path: Path) -> None:
    """The stage reads the titles of the anchors' conversations only (bounded as the anchors are): a point of any
    other conversation counts as untitled, and its title is not read by the full model (nothing in the cache)."""
    settings = small_settings(tmp_path / "data")
    export = _titled_export(tmp_path / "trips.jsonl", per_theme=2)
    archive, staging = open_archive(settings.archive_path), open_staging(settings.staging_path)
    try:
        open_run(staging, stages=["all"], exports=[str(export)], settings={}, code_version="test", run_id="r1")
        ingest_stage.run(archive, staging, run_id="r1", settings=settings, exports=[export])
        key = topic_space.encoder_for(settings).key
        conversations = ["paris-0", "paris-1", "tokyo-0", "baking-0", "baking-0"]
        read = {"paris-0", "baking-0"}  # titled "Planning a trip" and "Sourdough bread baking"
        vectors, titled = title_merge.title_vectors(archive, staging, settings, "r1", conversations, read)
        assert titled.tolist() == [True, False, False, True, True]
        assert not vectors[1].any() and not vectors[2].any()
        cached = "SELECT COUNT(*) FROM embeddings WHERE model = ?"
        assert staging.execute(cached, (key,)).fetchone()[0] == 2  # "Planning a city trip" (paris-1) not read
        every, all_titled = title_merge.title_vectors(archive, staging, settings, "r1", conversations)
        assert all_titled.all() and np.array_equal(every[[0, 3, 4]], vectors[[0, 3, 4]])
        assert staging.execute(cached, (key,)).fetchone()[0] == 3
    finally:
        archive.close()
        staging.close()


def test_the_stage_reads_the_titles_of_the_anchors_conversations_only(tmp_path: Path) -> None:
    """45 conversations, each titled its own way, and 30 anchors (cluster.encode_max): the full model reads the 30
    anchors' conversations' titles, not the other 15 (at 1M messages: 20,000 conversations' titles, not 71,000)."""
    settings = small_settings(tmp_path / "data", encode_max=30, title_merge=0.4, title_merge_cap=0.7)
    result = run_stages(settings, _titled_export(tmp_path / "trips.jsonl", numbered=True), "r1", StaticMiniLM())
    assert result.status == "succeeded" and result.counts["segments_encoded"] == 30
    titles = {f"{titles[n % len(titles)]} {theme} {n}" for theme, (titles, _) in TRIPS.items() for n in range(15)}
    assert len(titles) == 45
    with sqlite3.connect(settings.staging_path) as conn:
        key = topic_space.encoder_for(settings).key
        cached = {row[0] for row in conn.execute("SELECT content_hash FROM embeddings WHERE model = ?", (key,))}
    assert sum(text_hash(title) in cached for title in titles) == 30
