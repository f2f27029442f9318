"""benchmarks/labels/collect_fact_sentences.py: sets fresh3, fresh4 and fresh5 draw reproducibly and nothing an
earlier set drew."""

from __future__ import annotations

import importlib.util
import json
import sys
from collections import Counter
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]
LABELS = ROOT / "benchmarks" / "labels"
SHARED = ROOT.parent / "shared" / "data"


@pytest.fixture(scope="module")
def collect() -> ModuleType:
    """The sampler, loaded from its file (benchmarks/ is not a package)."""
    spec = importlib.util.spec_from_file_location("collect_fact_sentences", LABELS / "collect_fact_sentences.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("collect_fact_sentences", module)
    spec.loader.exec_module(module)
    return module


def _rows(*where: str) -> list[dict[str, str]]:
    return [{"conversation": c, "sentence": f"{c} {i}"} for i, c in enumerate(where)]


def test_one_per_session_skips_used_sessions_and_caps_each(collect: ModuleType) -> None:
    used = {"old"}
    picked = collect._one_per_session(_rows("old", "a", "a", "a", "b", "old"), 10, 1, used)
    assert Counter(r["conversation"] for r in picked) == {"a": 1, "b": 1}
    assert used == {"old", "a", "b"}
    # a later draw takes nothing from the sessions the first one used; `most` allows a few from a fresh session
    more = collect._one_per_session(_rows("a", "c", "c", "c", "b"), 10, 1, used, most=2)
    assert Counter(r["conversation"] for r in more) == {"c": 2}


EARLIER3 = ("fact_sentences.jsonl", "fact_sentences_fresh.jsonl", "fact_sentences_fresh2.jsonl")
EARLIER4 = (*EARLIER3, "fact_sentences_fresh3.jsonl")
EARLIER5 = (*EARLIER4, "fact_sentences_fresh4.jsonl")


def _check_new(rows: list[dict[str, str]], earlier_sets: tuple[str, ...] = EARLIER3) -> None:
    """None of the earlier sets' sessions or sentences, one sentence a session (an oracle session: 4), no "?"."""
    earlier = [json.loads(line) for name in earlier_sets for line in (LABELS / name).read_text().splitlines()]
    assert not {r["conversation"] for r in rows} & {r["conversation"] for r in earlier}
    assert not {r["sentence"] for r in rows} & {r["sentence"] for r in earlier}
    per_session = Counter(r["conversation"] for r in rows)
    assert all(n == 1 or (n <= 4 and r.startswith("answer_")) for r, n in per_session.items())
    assert all("?" not in r["sentence"] for r in rows)


def test_fresh3_labelled_set_is_new() -> None:
    rows = [json.loads(line) for line in (LABELS / "fact_sentences_fresh3.jsonl").read_text().splitlines()]
    assert [r["id"] for r in rows] == list(range(3000, 3220))
    _check_new(rows)


@pytest.mark.skipif(not SHARED.exists(), reason="needs ../shared/data")
def test_fresh3_draw_is_seeded_and_new(collect: ModuleType) -> None:
    # not compared with the labelled file: a later sentence splitter may cut a few sentences differently
    drawn = collect._fresh3(SHARED)
    assert Counter(r["source"] for r in drawn) == {"lme-oracle": 40, "lme-s": 100, "lme-s-life": 60, "locomo": 20}
    assert collect._fresh3(SHARED) == drawn
    _check_new(drawn)


def test_fresh4_labelled_set_is_new() -> None:
    rows = [json.loads(line) for line in (LABELS / "fact_sentences_fresh4.jsonl").read_text().splitlines()]
    assert [r["id"] for r in rows] == list(range(4000, 4220))
    _check_new(rows, EARLIER4)


@pytest.mark.skipif(not SHARED.exists(), reason="needs ../shared/data")
def test_fresh4_draw_is_seeded_and_new(collect: ModuleType) -> None:
    drawn = collect._fresh4(SHARED)
    # fresh3 took the last oracle sessions outside the demo: lme-s-life fills the oracle's 40
    assert Counter(r["source"] for r in drawn) == {"lme-s": 100, "lme-s-life": 100, "locomo": 20}
    assert [r["id"] for r in drawn] == list(range(4000, 4220))
    assert collect._fresh4(SHARED) == drawn
    _check_new(drawn, EARLIER4)
    # and nothing fresh3 drew, whichever splitter cuts the sentences now
    assert not {r["sentence"] for r in drawn} & {r["sentence"] for r in collect._fresh3(SHARED)}


def test_fresh5_labelled_set_is_new() -> None:
    rows = [json.loads(line) for line in (LABELS / "fact_sentences_fresh5.jsonl").read_text().splitlines()]
    assert [r["id"] for r in rows] == list(range(5000, 5220))
    _check_new(rows, EARLIER5)


@pytest.mark.skipif(not SHARED.exists(), reason="needs ../shared/data")
def test_fresh5_draw_is_seeded_and_new(collect: ModuleType) -> None:
    drawn = collect._fresh5(SHARED)
    # no oracle session is left outside the demo: lme-s-life fills the oracle's 40, as in fresh4
    assert Counter(r["source"] for r in drawn) == {"lme-s": 100, "lme-s-life": 100, "locomo": 20}
    assert [r["id"] for r in drawn] == list(range(5000, 5220))
    assert collect._fresh5(SHARED) == drawn
    _check_new(drawn, EARLIER5)
    # and nothing fresh4 draws now, whichever splitter cuts the sentences
    fresh4 = collect._fresh4(SHARED)
    assert not {r["sentence"] for r in drawn} & {r["sentence"] for r in fresh4}
    assert not {r["conversation"] for r in drawn} & {r["conversation"] for r in fresh4}
