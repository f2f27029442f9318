"""The tuning objective (cluster/objective.py): conversation cohesion, spread, separation and the largest topic's
share, on seeded synthetic data; one Optuna study with real UMAP and HDBSCAN."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from cluster import saved_model
from cluster.objective import WORST, Objective, PhraseSample, measure, phrase_coherence
from cluster.phrases import phrase_keys
from cluster.tuning import OBJECTIVE_VERSION, tune
from contracts.settings import Settings

GROUPS, CONVERSATIONS, SEGMENTS, DIM = 6, 10, 3, 24


def grouped_points(seed: int = 0) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """GROUPS subjects, CONVERSATIONS conversations each, SEGMENTS segments each: unit points near each subject's
    centre (each conversation a little off its subject's). Returns points, conversation and subject per point."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(GROUPS, DIM)) * 2.0
    points, conversations, subjects = [], [], []
    for subject in range(GROUPS):
        for conversation in range(CONVERSATIONS):
            offset = centres[subject] + 0.3 * rng.normal(size=DIM)
            for _ in range(SEGMENTS):
                points.append(offset + 0.3 * rng.normal(size=DIM))
                conversations.append(subject * CONVERSATIONS + conversation)
                subjects.append(subject)
    matrix = np.asarray(points, dtype=np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix, np.asarray(conversations), np.asarray(subjects)


def test_the_true_grouping_beats_two_topics_and_a_split_of_every_conversation() -> None:
    """Where conversations form k subjects, the k-topic labelling scores above 2 topics (too coarse: one topic
    holds half the conversations) and above one that puts every segment of a conversation in a different topic."""
    points, conversations, subjects = grouped_points()
    objective = Objective()
    true = objective.score(measure(subjects, conversations, points))
    two = objective.score(measure(subjects % 2, conversations, points))
    scattered = np.arange(len(subjects)) % SEGMENTS + SEGMENTS * (subjects // 2)  # same topic count, no cohesion
    split = objective.score(measure(scattered, conversations, points))
    assert true > two and true > split
    parts = measure(subjects, conversations, points)
    assert parts["cohesion"] == 1.0 and parts["largest_share"] == 1 / GROUPS and parts["separation"] > 0.3


def test_a_topic_past_a_quarter_of_the_conversations_is_penalised() -> None:
    """Merging three of six subjects into one topic (half the conversations) costs far more than the spread lost."""
    points, conversations, subjects = grouped_points()
    merged = np.where(subjects < 3, 0, subjects)
    parts = measure(merged, conversations, points)
    assert parts["largest_share"] == 0.5
    objective = Objective()
    capped = objective.score(parts)
    uncapped = Objective(share_weight=0.0).score(parts)
    assert uncapped - capped == objective.share_weight * (0.5 - 0.25)
    assert capped < objective.score(measure(subjects, conversations, points))


def test_topics_of_one_or_two_conversations_are_penalised() -> None:
    """A topic per pair of conversations keeps every conversation whole and spreads them widely, yet no one files
    two conversations as a subject: each such topic counts as small (v4), and the true grouping has none."""
    points, conversations, subjects = grouped_points()
    pairs = conversations // 2
    parts = measure(pairs, conversations, points)
    assert parts["small_share"] == 1.0 and parts["cohesion"] == 1.0
    assert measure(subjects, conversations, points)["small_share"] == 0.0
    objective = Objective()
    assert Objective(small_weight=0.0).score(parts) - objective.score(parts) == pytest.approx(objective.small_weight)
    # one topic of two conversations beside the subjects: 1 small topic of GROUPS + 1
    lone = np.where(conversations < 2, GROUPS, subjects)
    assert measure(lone, conversations, points)["small_share"] == pytest.approx(1 / (GROUPS + 1))


def test_conversations_left_out_of_every_topic_are_counted() -> None:
    """unfiled_share: the share of conversations none of whose segments is in a topic once the outlier rule ran
    (`written`); a conversation with one segment in a topic is filed."""
    points, conversations, subjects = grouped_points()
    written = np.where(conversations % 10 == 0, -1, subjects)  # 6 of 60 conversations wholly noise
    written[(conversations == 1) & (np.arange(len(subjects)) % SEGMENTS != 0)] = -1  # one segment of it stays
    parts = measure(subjects, conversations, points, written)
    assert parts["unfiled_share"] == pytest.approx(6 / 60)
    assert Objective(unfiled_weight=0.0).score(parts) - Objective().score(parts) == pytest.approx(0.5 * 6 / 60)


def test_noise_and_degenerate_labellings() -> None:
    """Noise lowers the score; fewer than two topics is the worst score; without conversations every segment is
    its own (cohesion 1, the other parts decide)."""
    points, conversations, subjects = grouped_points()
    objective = Objective()
    noisy = np.where(np.arange(len(subjects)) % 4 == 0, -1, subjects)
    assert objective.score(measure(noisy, conversations, points)) < objective.score(
        measure(subjects, conversations, points)
    )
    assert objective.score(measure(np.zeros(len(subjects)), conversations, points)) == WORST
    assert objective.score(measure(np.full(len(subjects), -1), conversations, points)) == WORST
    alone = measure(subjects, None, points)
    assert alone["cohesion"] == 1.0 and objective.score(alone) > objective.score(measure(subjects % 2, None, points))


def test_a_configured_topic_floor_still_applies() -> None:
    """min_topics set: a result below it pays count_weight times the shortfall; unset: no count term."""
    points, conversations, subjects = grouped_points()
    parts = measure(subjects, conversations, points)
    assert Objective(min_topics=12, count_weight=0.5).score(parts) == Objective().score(parts) - 0.5 * 0.5


def test_tuning_finds_the_subjects_on_real_umap_and_hdbscan(tmp_path: Path) -> None:
    """A seeded study on 180 segments of 60 conversations in 6 subjects ends with about 6 topics (not 2), and
    its best trial records the objective's parts."""
    points, conversations, _ = grouped_points(seed=1)
    tuned = tune(
        points,
        storage_url=f"sqlite:///{tmp_path / 'optuna.db'}",
        seed=3,
        n_trials=8,
        objective=Objective(),
        groups=conversations,
    )
    best = max((t for t in tuned.trials if t.value is not None), key=lambda t: t.value or 0.0)
    assert 5 <= best.attrs["topics"] <= 8
    assert best.attrs["largest_share"] <= 0.25 and best.attrs["cohesion"] >= 0.9
    assert {"spread", "separation", "noise_share", "validity"} <= set(best.attrs)


SUBJECT_PHRASES = [
    ["Spark executors", "shuffle partitions", "broadcast join", "driver memory", "skewed keys", "Spark UI"],
    ["sourdough starter", "rye flour", "proofing basket", "oven spring", "crumb structure", "baking steel"],
    ["trail shoes", "elevation gain", "water filter", "switchbacks", "trekking poles", "bear canister"],
    ["window functions", "running totals", "partition clause", "dense rank", "lag function", "SQL query"],
    ["watercolor paper", "wet brushes", "color mixing", "masking fluid", "paint pigments", "glazing layers"],
    ["tax return", "capital gains", "retirement account", "index funds", "expense ratio", "tax bracket"],
]


def subject_texts(subjects: np.ndarray[Any, Any], seed: int = 0) -> list[str]:
    """Per segment, prose naming three of its subject's phrases and one word any subject uses."""
    rng = np.random.default_rng(seed)
    texts = []
    for subject in subjects.tolist():
        picked = rng.choice(len(SUBJECT_PHRASES[subject]), size=3, replace=False)
        a, b, c = (SUBJECT_PHRASES[subject][i] for i in picked)
        texts.append(f"I asked about {a} today. The answer covered {b}, then {c}. Some notes followed.")
    return texts


def sample_of(texts: list[str]) -> PhraseSample:
    return PhraseSample.of(np.arange(len(texts)), [phrase_keys(t) for t in texts])


def test_phrase_coherence_rewards_topics_whose_keywords_are_used_together() -> None:
    """The subjects' own labelling: each topic's best phrases co-occur (NPMI > 0); merging subjects pairwise puts
    phrases never used together in one topic's keywords, and a shuffled labelling of the same sizes mixes them."""
    _, conversations, subjects = grouped_points()
    phrases = sample_of(subject_texts(subjects))
    true = phrase_coherence(phrases, subjects)
    merged = phrase_coherence(phrases, subjects // 2)
    shuffled = phrase_coherence(phrases, np.random.default_rng(1).permutation(subjects))
    assert true > 0.0 and true > merged and true > shuffled
    assert measure(subjects, conversations, grouped_points()[0], phrases=phrases)["phrase_coherence"] == true


def test_phrase_coherence_joins_the_score_and_the_conversations_hold_its_pull_to_tiny_topics() -> None:
    """With phrases, the subjects' labelling still beats one topic per conversation (whose few segments always
    share their words) and two topics; without phrases the term is 0 (the v2 score)."""
    points, conversations, subjects = grouped_points()
    phrases = sample_of(subject_texts(subjects))
    objective = Objective()
    true = objective.score(measure(subjects, conversations, points, phrases=phrases))
    per_conversation = objective.score(measure(conversations, conversations, points, phrases=phrases))
    two = objective.score(measure(subjects % 2, conversations, points, phrases=phrases))
    assert true > per_conversation and true > two
    without = measure(subjects, conversations, points)
    assert without["phrase_coherence"] == 0.0
    assert true - objective.score(without) == pytest.approx(phrase_coherence(phrases, subjects))
    with_phrases = measure(subjects, conversations, points, phrases=phrases)
    assert Objective(phrase_weight=0.0).score(with_phrases) == objective.score(without)  # cluster.phrase_weight 0


def test_tuning_with_phrases_finds_the_subjects_on_real_umap_and_hdbscan(tmp_path: Path) -> None:
    """The seeded study of the test above, with each segment's phrases: about 6 topics, not 2 and not one per
    conversation, and the best trial records its phrase coherence."""
    points, conversations, subjects = grouped_points(seed=1)
    tuned = tune(
        points,
        storage_url=f"sqlite:///{tmp_path / 'optuna.db'}",
        seed=3,
        n_trials=8,
        objective=Objective(),
        groups=conversations,
        phrases=sample_of(subject_texts(subjects, seed=1)),
    )
    best = max((t for t in tuned.trials if t.value is not None), key=lambda t: t.value or 0.0)
    assert 5 <= best.attrs["topics"] <= 8 and best.attrs["largest_share"] <= 0.25
    assert best.attrs["phrase_coherence"] > 0.0


def test_a_model_tuned_under_another_objective_is_refitted(monkeypatch: pytest.MonkeyPatch) -> None:
    """The objective's version is part of the saved model's settings digest: a new version never extends a model
    tuned under the old one (the incremental path refits instead)."""
    cfg = Settings().cluster
    before = saved_model.settings_digest(cfg)
    monkeypatch.setattr(saved_model, "OBJECTIVE_VERSION", OBJECTIVE_VERSION + "-next")
    assert saved_model.settings_digest(cfg) != before
