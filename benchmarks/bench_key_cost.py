"""What the full MiniLM costs per key: the figures behind memory.full_key_ms_per_key / full_key_ms_per_piece.

    python benchmarks/bench_key_cost.py                 # LoCoMo dev2 turns, a LongMemEval sample, a real export
    python benchmarks/bench_key_cost.py --sample 3000   # a larger LongMemEval sample

The cues stage's `auto` key embedder (memory/key_model.py) estimates the full model's cost before it embeds
anything: keys x ms per key + word pieces x ms per piece (CPU ms, word pieces cut at memory.key_max_tokens).
This measures both rates on real user-side turns, embedding them as the stage does (clients.embed_cache.embed_texts:
length-sorted batches of 32), and fits them per batch by non-negative least squares on CPU time (user + sys of this
process, onnxruntime's threads included), then prints what the estimate says for each set and for real archive sizes.
Not a test. Compare CPU figures, not wall: the machine is shared.
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
from scipy.optimize import nnls

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from clients.embed_cache import batches_by_length  # noqa: E402
from clients.embedders import OnnxMiniLM, word_piece_counts  # noqa: E402
from contracts.settings import MemorySettings  # noqa: E402

DATA = ROOT.parent / "shared" / "data"
LOCOMO = DATA / "benchmarks" / "locomo" / "locomo_dev2.json"
LME = DATA / "benchmarks" / "longmemeval" / "longmemeval_s_dev50.jsonl.gz"
SPARK = DATA / "exports" / "chatgpt" / "spark-first"


def cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def locomo_turns() -> list[str]:
    samples = json.loads(LOCOMO.read_text())
    return [
        turn["text"]
        for sample in samples
        for name, session in sample["conversation"].items()
        if name.startswith("session_") and isinstance(session, list)
        for turn in session
    ]


def lme_user_turns() -> list[str]:
    with gzip.open(LME, "rt", encoding="utf-8") as handle:
        rows = [json.loads(line) for line in handle]
    seen = {t["content"] for r in rows for s in r["haystack_sessions"] for t in s if t["role"] == "user"}
    return sorted(seen)


def export_user_turns(directory: Path) -> list[str]:
    """The user's text messages of a real ChatGPT export (conversations.json)."""
    found = next(directory.rglob("conversations.json"))
    turns: list[str] = []
    for conversation in json.loads(found.read_text()):
        for node in (conversation.get("mapping") or {}).values():
            message = (node or {}).get("message") or {}
            if (message.get("author") or {}).get("role") != "user":
                continue
            parts = (message.get("content") or {}).get("parts") or []
            text = " ".join(p for p in parts if isinstance(p, str)).strip()
            if text:
                turns.append(text)
    return turns


def measure(model: OnnxMiniLM, texts: list[str], batch: int) -> list[tuple[int, int, float]]:
    """(keys, word pieces, CPU s) per batch, embedded as the stage embeds them (the pieces counted as the estimate
    counts them: padding is part of what the fitted rates absorb)."""
    rows = []
    for chosen in batches_by_length(texts, batch):
        part = [texts[i] for i in chosen]
        pieces = sum(word_piece_counts(part, model.max_tokens))
        start = cpu()
        model.embed(part)
        rows.append((len(part), pieces, cpu() - start))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sample", type=int, default=1500, help="LongMemEval user turns embedded (seeded sample)")
    parser.add_argument("--batch", type=int, default=32)
    args = parser.parse_args()
    settings = MemorySettings()
    model = OnnxMiniLM(max_tokens=settings.key_max_tokens)
    model.embed(["warm up: load the model before the clock starts"])
    lme = lme_user_turns()
    sets = {
        "LoCoMo dev2 turns": locomo_turns(),
        f"LongMemEval dev50 user turns (sample of {args.sample})": random.Random(7).sample(lme, args.sample),
        "spark-first export user turns": export_user_turns(SPARK),
    }
    measured: dict[str, list[tuple[int, int, float]]] = {}
    started = time.perf_counter()
    for name, texts in sets.items():
        measured[name] = measure(model, texts, args.batch)
    wall = time.perf_counter() - started
    everything = np.array([row for rows in measured.values() for row in rows], dtype=np.float64)
    (per_key, per_piece), _ = nnls(everything[:, :2], everything[:, 2])  # rates are never negative
    print(f"fit over {len(everything)} batches: {1000 * per_key:.2f} CPU ms per key + {1000 * per_piece:.3f} per piece")
    print("\n| texts | keys | mean pieces | CPU s | CPU ms / key | estimate s (fit) | estimate s (defaults) |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name, rows in measured.items():
        keys = sum(r[0] for r in rows)
        pieces = sum(word_piece_counts(sets[name], settings.key_max_tokens))
        spent = sum(r[2] for r in rows)
        fit = keys * per_key + pieces * per_piece
        default = (keys * settings.full_key_ms_per_key + pieces * settings.full_key_ms_per_piece) / 1000
        print(
            f"| {name} | {keys:,} | {pieces / keys:.1f} | {spent:.1f} | {1000 * spent / keys:.1f} | {fit:.1f} |"
            f" {default:.1f} |"
        )
    full = sum(word_piece_counts(lme, settings.key_max_tokens))
    print(
        f"\nLongMemEval dev50, all {len(lme):,} distinct user turns ({full / len(lme):.1f} pieces each): estimate"
        f" {(len(lme) * settings.full_key_ms_per_key + full * settings.full_key_ms_per_piece) / 1000:.0f} CPU s"
        f" with the defaults (budget memory.full_key_budget_s = {settings.full_key_budget_s:.0f})"
    )
    load = os.getloadavg()
    print(
        f"\nMachine: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {os.cpu_count()} cores, Python"
        f" {platform.python_version()}, load average {load[0]:.1f}, wall {wall:.0f} s"
    )


if __name__ == "__main__":
    main()
