"""Concept resolution on the labelled near-names (tests/test_resolve.py): over-merging before/after embeddings.

    python benchmarks/bench_resolve.py

Each pair is resolved in a fresh store holding only the first name (both typed `project`), with the stage's
veto and fuzzy step, and as the third step either character 3-grams (the default, before) or the cosine of the
names' embeddings (concepts.similarity = "embedding", after) under minilm-static and minilm-onnx, for a few
bars for names of different word counts (longer_similarity_threshold). Prints precision / recall and the
closest wrong pair's similarity (the margin). Writes benchmarks/out/bench_resolve.json.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from test_resolve import DIFFERENT, SAME  # noqa: E402

from clients.embedders import OnnxMiniLM, StaticMiniLM  # noqa: E402
from extract.resolve import Resolver, char_ngram_cosine, tokens, words_agree  # noqa: E402
from extract.text import name_key  # noqa: E402


def embedding_similarity(model: StaticMiniLM | OnnxMiniLM) -> Callable[[str, str], float]:
    memo: dict[str, np.ndarray] = {}

    def similarity(left: str, right: str) -> float:
        for name in (left, right):
            if name not in memo:
                memo[name] = model.embed([name])[0]
        return float(memo[left] @ memo[right])

    return similarity


def measure(similarity: Callable[[str, str], float], longer: float | None) -> dict[str, object]:
    def merges(first: str, second: str) -> bool:
        resolver = Resolver(0.85, 0.8, similarity, longer_threshold=longer)
        resolver.add("a", "project", [first])
        return resolver.resolve(second, [], "project") is not None

    found = [pair for pair in SAME if merges(*pair)]
    wrong = [pair for pair in DIFFERENT if merges(*pair)]
    longer_wrong = [  # different word counts, past the veto: the pairs only the longer bar keeps apart
        similarity(name_key(a), name_key(b))
        for a, b in DIFFERENT
        if len(tokens(a)) != len(tokens(b)) and words_agree(tokens(a), tokens(b))
    ]
    return {
        "precision": round(len(found) / max(1, len(found) + len(wrong)), 3),
        "recall": round(len(found) / len(SAME), 3),
        "true_merges": len(found),
        "wrong_merges": [list(p) for p in wrong],
        "missed": [list(p) for p in SAME if p not in found],
        "closest_wrong_longer_pair": round(max(longer_wrong), 3),
    }


def main() -> None:
    report: dict[str, object] = {"char-ngram (before)": measure(char_ngram_cosine, None)}
    for name, model in (("minilm-static", StaticMiniLM()), ("minilm-onnx", OnnxMiniLM())):
        similarity = embedding_similarity(model)
        for longer in (None, 0.85, 0.9):
            report[f"embedding {name}, longer {longer}"] = measure(similarity, longer)
    for label, result in report.items():
        print(f"{label:40} {json.dumps(result)}")
    out = ROOT / "benchmarks" / "out"
    out.mkdir(parents=True, exist_ok=True)
    (out / "bench_resolve.json").write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
