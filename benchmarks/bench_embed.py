"""Embedding throughput and quality per backend on the real dev chats (LongMemEval_S dev50, ~23k turns, MIT).

    python benchmarks/bench_embed.py                  # static on every turn; onnx and tf-idf on a sample
    python benchmarks/bench_embed.py --onnx-all       # also the full model on every turn (~10+ min on 2 cores)

Measured per backend: texts/s through `clients.embed_cache.embed_texts` (length-sorted batches, as the stage runs
them) and the top-10 neighbour overlap with the reference (the full int8 MiniLM at 256 word pieces; FACTS:
cosine >= 0.999 to sentence-transformers' fp32 model) on a seeded sample. Prints a markdown section for
benchmarks/RESULTS.md and writes the figures to benchmarks/out/bench_embed.json. Not a test.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import random
import resource
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from clients.embed_cache import embed_texts  # noqa: E402
from clients.embedders import OnnxMiniLM, StaticMiniLM  # noqa: E402

DEV = ROOT.parent / "shared" / "data" / "benchmarks" / "longmemeval" / "longmemeval_s_dev50.jsonl.gz"
OUT = ROOT / "benchmarks" / "out"


def dev_turns(path: Path = DEV) -> list[str]:
    """Every turn of every haystack session of the 50 dev questions, in file order (duplicates kept)."""
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        rows = [json.loads(line) for line in handle]
    return [turn["content"] for row in rows for session in row["haystack_sessions"] for turn in session]


def overlap_at_10(reference: np.ndarray, other: np.ndarray) -> float:
    """Mean share of each text's 10 nearest neighbours (cosine) that both embeddings agree on."""

    def knn(x: np.ndarray) -> np.ndarray:
        sims = x @ x.T
        np.fill_diagonal(sims, -np.inf)
        return np.argsort(-sims, axis=1)[:, :10]

    a, b = knn(reference), knn(other)
    return float(np.mean([len(set(r) & set(o)) / 10 for r, o in zip(a, b, strict=True)]))


def timed(embedder: object, texts: list[str], batch: int) -> tuple[np.ndarray, float]:
    started = time.perf_counter()
    vectors = embed_texts(embedder, texts, batch)  # type: ignore[arg-type]
    return vectors, time.perf_counter() - started


def tfidf_svd(texts: list[str]) -> np.ndarray:
    from sklearn.decomposition import TruncatedSVD
    from sklearn.feature_extraction.text import TfidfVectorizer

    matrix = TfidfVectorizer(sublinear_tf=True, stop_words="english", min_df=2).fit_transform(texts)
    reduced = TruncatedSVD(256, random_state=0).fit_transform(matrix)
    return reduced / np.maximum(np.linalg.norm(reduced, axis=1, keepdims=True), 1e-12)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sample", type=int, default=2000, help="texts in the quality sample (seeded)")
    parser.add_argument("--onnx-all", action="store_true", help="run the full model on every turn too")
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    turns = dev_turns()
    unique = list(dict.fromkeys(turns))
    sample = random.Random(0).sample(unique, min(args.sample, len(unique)))
    load = os.getloadavg()
    figures: dict[str, dict[str, float]] = {}

    static = StaticMiniLM()
    started = time.perf_counter()
    static.embed(["warm up"])  # loads (or distils, the first time on a machine) the static table
    figures["minilm-static"] = {"load_s": time.perf_counter() - started}
    vectors, seconds = timed(static, turns, 256)
    figures["minilm-static"].update(texts=len(turns), seconds=seconds, texts_per_s=len(turns) / seconds)
    np.save(OUT / "dev_turns_static.npy", vectors)

    onnx = OnnxMiniLM(max_tokens=256)
    onnx.embed(["warm up"])
    reference, seconds = timed(onnx, sample, 32)
    figures["minilm-onnx"] = {"texts": len(sample), "seconds": seconds, "texts_per_s": len(sample) / seconds}
    figures["minilm-onnx"]["overlap_at_10"] = 1.0
    if args.onnx_all:
        full, seconds = timed(onnx, turns, 32)
        figures["minilm-onnx"].update(all_texts=len(turns), all_seconds=seconds)
        np.save(OUT / "dev_turns_onnx.npy", full)
    static_sample, _ = timed(static, sample, 256)
    figures["minilm-static"]["overlap_at_10"] = overlap_at_10(reference, static_sample)
    started = time.perf_counter()
    baseline = tfidf_svd(sample)
    figures["tfidf-svd"] = {"texts": len(sample), "seconds": time.perf_counter() - started}
    figures["tfidf-svd"]["texts_per_s"] = len(sample) / figures["tfidf-svd"]["seconds"]
    figures["tfidf-svd"]["overlap_at_10"] = overlap_at_10(reference, baseline)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    report = {"figures": figures, "turns": len(turns), "unique": len(unique), "peak_rss_mib": peak, "load": load}
    (OUT / "bench_embed.json").write_text(json.dumps(report, indent=2))
    print(f"dev turns: {len(turns):,} ({len(unique):,} distinct), mean {np.mean([len(t) for t in turns]):.0f} chars")
    print("| backend | texts | s | texts/s | top-10 overlap vs full model |")
    print("|---|---:|---:|---:|---:|")
    for name, f in figures.items():
        rate, overlap = f"{f['texts_per_s']:,.0f}", f"{f['overlap_at_10']:.2f}"
        print(f"| {name} | {int(f['texts']):,} | {f['seconds']:.1f} | {rate} | {overlap} |")
    print(
        f"peak RSS {peak:.0f} MiB; load average at start {load[0]:.2f} {load[1]:.2f} {load[2]:.2f};"
        f" {os.cpu_count()} cores; python {platform.python_version()}"
    )


if __name__ == "__main__":
    main()
