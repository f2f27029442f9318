"""benchmarks/topic_label_agreement.py: a topic's label against the human topics of its labelled conversations, on a
staging.db written by the stores' own writers (segments, a cluster run) and the real WordNet when installed."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from memory.wordnet import WordNet
from staging import segments as segment_store
from staging import topics as topic_store
from staging.ledger import open_staging

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "topic_label_agreement.py"
WORDNET = WordNet.open("/usr/share/wordnet")
needs_wordnet = pytest.mark.skipif(WORDNET is None, reason="Debian's wordnet-base is not installed")


def _scorer() -> ModuleType:
    spec = importlib.util.spec_from_file_location("topic_label_agreement", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


scorer = _scorer()

# conversation -> its segments' topics (the first topic of most segments is its dominant one)
SEGMENTS = {"c1": [0, 0, 1], "c2": [0], "c3": [1, 1], "c4": [2], "c5": [2]}
LABELS = {0: "selling and collectors", 1: "Samsung", 2: "topic 2"}
HUMAN = {
    "c1": "selling vintage collectibles",
    "c2": "coin collecting",
    "c3": "smart home devices",
    "c4": "flight deals",
    "c5": "airline loyalty programs",
    "c9": "not in the build",
}


def _data_dir(tmp_path: Path) -> Path:
    data = tmp_path / "data"
    data.mkdir()
    staging = open_staging(data / "staging.db")
    batch, links = [], []
    for conversation, topics in SEGMENTS.items():
        rows = []
        for i, topic in enumerate(topics):
            segment = f"{conversation}-s{i}"
            rows.append(
                segment_store.SegmentRow(segment, conversation, i, "start", 10, segment, None, None, (f"{segment}-m",))
            )
            links.append(("segment", segment, topic, f"topic-{topic}", 0.9, "hdbscan"))
        batch.append((conversation, f"fp-{conversation}", rows))
    segment_store.write_conversations(staging, "r1", batch)
    topics = [
        {"topic": t, "topic_uid": f"topic-{t}", "label": label, "size": 1, "keywords": [], "representatives": []}
        for t, label in LABELS.items()
    ]
    topic_store.write_run(staging, "r1", {"status": "clustered", "points": 7, "topics": 3}, topics, links)
    staging.close()
    (tmp_path / "set.json").write_text(
        json.dumps({"conversations": {c: {"topic": t, "topic_group": "g"} for c, t in HUMAN.items()}}), encoding="utf-8"
    )
    return data


def test_words_drop_closed_words_and_numbers_and_keep_hyphenated_words() -> None:
    assert scorer.words("SQL query (window functions)") == ["sql", "query", "window", "functions"]
    assert scorer.words("universe and sci-fi") == ["universe", "sci-fi"]
    assert scorer.words("topic 7") == []


@needs_wordnet
def test_a_label_word_hits_by_lemma_wordnet_neighbour_or_compound() -> None:
    matcher = scorer.Matcher(WORDNET)
    assert matcher.hits("selling", "sell vintage collectibles")  # lemma of every part of speech
    assert matcher.hits("collectors", "a coin collector")  # plural
    assert matcher.hits("film", "movie analysis")  # one synset
    assert matcher.hits("dog", "canine care")  # a direct hypernym
    assert matcher.hits("spark", "PySpark tuning")  # compound
    assert not matcher.hits("art", "party planning")  # too short for a compound
    assert not matcher.hits("samsung", "smart home devices")
    assert not matcher.hits("airlines", "flight deals")


@needs_wordnet
def test_the_figures_of_a_set_over_the_topics_with_a_labelled_conversation(tmp_path: Path) -> None:
    data = _data_dir(tmp_path)
    dominant, labels = scorer.built(data)
    assert dominant == {"c1": 0, "c2": 0, "c3": 1, "c4": 2, "c5": 2}
    result = scorer.score(dominant, labels, HUMAN, scorer.Matcher(WORDNET))
    rows = {r["topic"]: r for r in result["rows"]}
    # topic 0: "selling" hits c1 (lemma sell), "collectors" both (collector: a compound of collect, a lemma of
    # "collecting" and the head of "collectibles")
    assert rows[0]["hit"] and rows[0]["word_share"] == 1.0
    assert not rows[1]["hit"] and rows[1]["word_share"] == 0.0  # a brand for a topic about devices
    assert not rows[2]["hit"] and rows[2]["word_share"] == 0.0  # a label of no words
    assert result["topics"] == 3 and result["conversations"] == 5  # c9 is in no topic of the build
    assert result["topic_hit"] == pytest.approx(1 / 3)
    assert result["word_share"] == pytest.approx(1 / 3)
    assert result["conversation_hit"] == pytest.approx(2 / 5)  # c1 and c2


@needs_wordnet
def test_the_command_prints_each_set_and_its_misses(tmp_path: Path) -> None:
    data = _data_dir(tmp_path)
    out = subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            str(data),
            "--labels",
            str(tmp_path / "set.json"),
            "--show",
            "--out",
            str(tmp_path / "r.json"),
        ],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    ).stdout
    assert "| set | 5 | 3 | 0.333 | 0.333 | 0.400 |" in out
    assert "2 of 3 labels hit none" in out and "'Samsung': smart home devices" in out
    assert json.loads((tmp_path / "r.json").read_text())["set"]["topics"] == 3
