"""memory.text's term extraction (its fast path) against the plain reference on real chat text, and CJK text read as
its two-character pieces (as Lucene's CJKBigramFilter does) with English terms as they were."""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memory.text import _WORD, distinct_words, stem, stop_words, term_set, terms

ROOT = Path(__file__).resolve().parents[1]
LOCOMO = ROOT.parent / "shared" / "data" / "benchmarks" / "locomo" / "locomo_dev2.json"
FIXTURE = ROOT / "tests" / "fixtures" / "exports" / "chatgpt" / "chatgpt2graph" / "conversations.json"
EDGE_CASES = [
    "",
    "I'm hiking; she hikes — we hiked! Don’t it's the cat's toys’ state_machine x_y 42 a b",
    "Ünïcode naïve café CAFÉ straße İstanbul 東京 タワー ﬁnance ß",
    "studies flies eed agreed needed ss is us bus class glasses' O’Brien’s rock’n’roll",
    "我用pandas读取数据 東京タワーに行きます 서울에서 만나요 猫 python的list和dict 々〇 ｶﾀｶﾅ",
]


def _reference_terms(text: str) -> list[str]:
    """The original word loop: finditer, stop words and single letters dropped, each word stemmed; a word holding
    CJK cut into runs of one script by the characters' Unicode names, each CJK run as its overlapping pairs."""
    out = []
    for match in _WORD.finditer(text.lower()):
        for word in _reference_pieces(match.group(0)):
            if _script(word[0]) != "other":
                out.append(word)
            elif word not in stop_words() and len(word) >= 2:
                out.append(stem(word))
    return out


def _script(char: str) -> str:
    name = unicodedata.name(char, "")
    if name.startswith(("CJK UNIFIED IDEOGRAPH", "CJK COMPATIBILITY IDEOGRAPH", "IDEOGRAPHIC")):
        return "han"
    if name.startswith("HIRAGANA"):
        return "hiragana"
    if name.startswith(("KATAKANA", "HALFWIDTH KATAKANA")):
        return "katakana"
    return "hangul" if name.startswith(("HANGUL", "HALFWIDTH HANGUL")) else "other"


def _reference_pieces(word: str) -> list[str]:
    runs: list[str] = []
    for char in word:
        if runs and _script(runs[-1][-1]) == _script(char):
            runs[-1] += char
        else:
            runs.append(char)
    pieces: list[str] = []
    for run in runs:
        if _script(run[0]) == "other":
            pieces.extend(w for w in _WORD.findall(run) if w)  # an apostrophe left alone at a cut is no word
        else:
            pieces.extend(run[i : i + 2] for i in range(max(len(run) - 1, 1)))
    return pieces


def _strings(node: Any) -> Iterator[str]:
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict):
        for value in node.values():
            yield from _strings(value)
    elif isinstance(node, list):
        for value in node:
            yield from _strings(value)


def _real_texts() -> list[str]:
    if not LOCOMO.exists():
        pytest.fail(f"real benchmark data missing: {LOCOMO}")
    texts = [t for t in _strings(json.loads(LOCOMO.read_text())) if len(t) > 3]
    texts += list(_strings(json.loads(FIXTURE.read_text())))
    long_turn = " ".join(texts[:400])  # a long assistant-like turn: words repeat, the cache is exercised
    return [*EDGE_CASES, *texts, long_turn, long_turn.upper()]


def test_terms_equal_the_reference_word_loop_on_real_text() -> None:
    """The cached findall path yields the same terms, in the same order, as the original finditer loop."""
    texts = _real_texts()
    assert len(texts) > 1000
    for text in texts:
        assert terms(text) == _reference_terms(text), text[:80]
        assert term_set(text) == set(_reference_terms(text)), text[:80]


def test_english_terms_are_what_they_were() -> None:
    """Sample texts give the terms they gave before CJK runs were read as pieces (the benchmarks' figures rest on
    them)."""
    samples = {
        "I'm hiking; she hikes — we hiked! Don’t it's the cat's toys’ state_machine x_y 42 a b": [
            *("i'm", "hik", "hike", "hik", "don't", "it", "cat", "toy", "state", "machine", "42"),
        ],
        "Ünïcode naïve café CAFÉ straße İstanbul ﬁnance ß": [
            *("ünïcode", "naïve", "café", "café", "straße", "stanbul", "ﬁnance"),
        ],
        "What was my personal best time in the charity 5K run?": ["personal", "best", "time", "charity", "5k", "run"],
        "Our nightly ETL copies the orders table into the warehouse": [
            *("nightly", "etl", "copy", "order", "table", "warehouse"),
        ],
    }
    for text, expected in samples.items():
        assert terms(text) == expected, text


def test_a_cjk_run_is_cut_from_latin_words_and_read_as_its_pieces() -> None:
    """Han, hiragana, katakana and hangul are cut where the script changes and read as overlapping pairs; a
    character alone is a term (no stop word, no single-letter rule); Latin words written against them are words of
    their own."""
    assert terms("我用pandas读取数据") == ["我用", "panda", "读取", "取数", "数据"]
    assert terms("猫") == ["猫"] and terms("a 猫 b") == ["猫"]
    assert terms("東京タワーに行きます") == ["東京", "タワ", "ワー", "に", "行", "きま", "ます"]
    assert terms("서울에서") == ["서울", "울에", "에서"]
    assert terms("python的list和dict") == ["python", "的", "list", "和", "dict"]
    assert distinct_words("读取数据，读取文件") == {"读取", "取数", "数据", "取文", "文件"}
    assert term_set("我用pandas读取数据") == set(terms("我用pandas读取数据"))
