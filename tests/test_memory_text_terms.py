"""memory.text's term extraction (its fast path) against the plain reference on real chat text."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memory.text import _WORD, stem, stop_words, term_set, terms

ROOT = Path(__file__).resolve().parents[1]
LOCOMO = ROOT.parent / "shared" / "data" / "benchmarks" / "locomo" / "locomo_dev2.json"
FIXTURE = ROOT / "tests" / "fixtures" / "exports" / "chatgpt" / "chatgpt2graph" / "conversations.json"
EDGE_CASES = [
    "",
    "I'm hiking; she hikes — we hiked! Don’t it's the cat's toys’ state_machine x_y 42 a b",
    "Ünïcode naïve café CAFÉ straße İstanbul 東京 タワー ﬁnance ß",
    "studies flies eed agreed needed ss is us bus class glasses' O’Brien’s rock’n’roll",
]


def _reference_terms(text: str) -> list[str]:
    """The original word loop: finditer, stop words and single letters dropped, each word stemmed."""
    out = []
    for match in _WORD.finditer(text.lower()):
        word = match.group(0)
        if word in stop_words() or len(word) < 2:
            continue
        out.append(stem(word))
    return out


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
