"""Topics joined after the fit by their conversations' titles (cluster/title_merge.py): the pure join on given
vectors, and the stage on real onnxruntime, UMAP, HDBSCAN and Optuna with small seeded data."""

from __future__ import annotations

import json
import random
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from clients.embedders import StaticMiniLM
from cluster import title_merge
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


TRIPS = {  # two trips told apart by their words, titled alike (the destination in the text, not in the title)
    "paris": (("Planning a trip", "Planning a city trip"), "louvre seine eiffel montmartre croissant bistro marais"),
    "tokyo": (("Planning a trip", "Planning a city trip"), "shibuya sushi shinkansen asakusa ramen akihabara shinjuku"),
    "baking": (("Sourdough bread baking",), "sourdough flour yeast oven crust dough bake knead starter loaf butter"),
}


def _titled_export(path: Path, per_theme: int = 15, seed: int = 5, prefix: str = "") -> Path:
    rng = random.Random(seed)
    lines = []
    for theme, (titles, words) in TRIPS.items():
        for n in range(per_theme):
            title = titles[n % len(titles)]
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
