"""Recall benchmarks: the dev files end to end (system, baselines, ablations, categories) and recall latency on
generated memories up to the seed's scale. Not a test.

    python benchmarks/bench_recall.py --eval          # LoCoMo dev2, LongMemEval_S dev50 via `chatmem eval recall`
    python benchmarks/bench_recall.py --latency 100000 300000 600000
    python benchmarks/bench_recall.py --eval --latency 100000 300000 600000 --write   # and the RESULTS.md section
    python benchmarks/bench_recall.py --latency 100000 300000 600000 --saved --write  # eval figures of the last run

Eval part: `chatmem --data-dir benchmarks/out/recall eval recall --benchmark B --data FILE --ablations --json`
for each dev file (the real pipeline ingest -> ... -> cues into a work dir under that data dir; a re-run reuses
it). Writes benchmarks/out/bench_recall_<benchmark>.json.

Latency part: a memory of n content nodes generated straight into the engine's arrays (memory.index.MemoryIndex:
conversations of 20 messages over three years, ~12 Zipf-distributed terms per key, 3 cues per content, 384-d
unit vectors), then 200 recalls (candidate pre-pass, rank, a 2,000-token context with paths) with no scope, 200
scoped to 50 conversations, and 50 with no scope and no pre-pass (every content node scored: the baseline), each
with `at` and a random query (4 terms and a vector near a random content's). Reports p50/p95 ms, the median
candidates activated, the recall thread's CPU time p50/p95 (on a shared machine wall time includes waiting for a
core), build seconds (index, pre-pass tables) and RSS. Writes benchmarks/out/bench_recall_latency.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
from scipy.sparse import csc_matrix, csr_matrix

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from contracts.memory import RecallRequest, RecallScope  # noqa: E402
from contracts.settings import RecallSettings  # noqa: E402
from memory import metrics  # noqa: E402
from memory.candidates import prepare, ranked  # noqa: E402
from memory.index import COARSE_FROM, MemoryIndex  # noqa: E402
from memory.recall import to_result  # noqa: E402
from memory.session import SessionKeys  # noqa: E402
from memory.sparse import CSR  # noqa: E402
from memory.text import BM25  # noqa: E402

OUT = ROOT / "benchmarks" / "out"
SHARED = ROOT.parent / "shared" / "data" / "benchmarks"
FILES = {
    "locomo": SHARED / "locomo" / "locomo_dev2.json",
    "longmemeval": SHARED / "longmemeval" / "longmemeval_s_dev50.jsonl.gz",
}
SEED_UNITS = 632_868
DIM = 384


def rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# ---------------------------------------------------------------- eval


def run_eval(benchmark: str, data_dir: Path) -> dict[str, Any]:
    command = [
        sys.executable, "-m", "flows.cli", "--quiet", "--data-dir", str(data_dir), "eval", "recall",
        "--benchmark", benchmark, "--data", str(FILES[benchmark]), "--ablations", "--json",
    ]  # fmt: skip
    started = time.monotonic()
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    report: dict[str, Any] = json.loads(done.stdout)
    report["run"]["wall_s"] = round(time.monotonic() - started, 1)
    report["run"]["command"] = "chatmem " + " ".join(command[4:])
    report["run"]["commit"] = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    (OUT / f"bench_recall_{benchmark}.json").write_text(json.dumps(report, indent=2))
    return report


# ---------------------------------------------------------------- latency on generated memories


def generated_index(n: int, seed: int = 7) -> MemoryIndex:
    """n content nodes straight into the engine's arrays (no SQLite, no Python object per edge)."""
    rng = np.random.default_rng(seed)
    vocabulary_size, terms_per_key, cues_per_content = 50_000, 12, 3
    conversations = max(1, n // 20)
    conversation = np.repeat(np.arange(conversations), 20)[:n]
    conversation = np.concatenate([conversation, np.full(n - len(conversation), conversations - 1)])
    seq = np.arange(n) - np.searchsorted(conversation, conversation)
    start = rng.uniform(0, 3 * 365 * 86400, conversations)
    times = datetime(2022, 1, 1, tzinfo=UTC).timestamp() + start[conversation] + 60.0 * seq
    day = ((times - times.min()) // 86400).astype(np.int64)
    ranks = rng.zipf(1.3, size=n * terms_per_key) % vocabulary_size
    rows = np.repeat(np.arange(n), terms_per_key)
    weights = rng.uniform(0.5, 2.0, size=len(ranks)).astype(np.float32)
    matrix = csc_matrix((weights, (rows, ranks)), shape=(n, vocabulary_size), dtype=np.float32)
    bm25 = BM25.of_matrix({f"t{i}": i for i in range(vocabulary_size)}, matrix)
    dense = rng.standard_normal((n, DIM), dtype=np.float32)
    dense /= np.linalg.norm(dense, axis=1, keepdims=True)
    cues = max(1, n // 10)
    cue_rows = rng.integers(0, cues, size=n * cues_per_content)
    cue_cols = np.repeat(np.arange(n), cues_per_content)
    cue_content = csr_matrix(
        (rng.uniform(0.3, 1.0, len(cue_rows)).astype(np.float32), (cue_rows, cue_cols)), shape=(cues, n)
    )
    cue_conversation = csr_matrix(
        (np.ones(len(cue_rows), np.float32), (cue_rows, conversation[cue_cols])), shape=(cues, conversations)
    )
    cue_terms = csc_matrix(
        (np.ones(cues * 2, np.float32), (np.repeat(np.arange(cues), 2), rng.integers(0, vocabulary_size, cues * 2))),
        shape=(cues, vocabulary_size),
    )
    cue_bm25 = BM25.of_matrix(bm25.vocabulary, cue_terms)
    prev = np.where(seq > 0, np.arange(n) - 1, -1)
    nxt = np.where(np.r_[conversation[1:] == conversation[:-1], False], np.arange(n) + 1, -1)
    ids = [f"m{i}" for i in range(n)]
    conversation_ids = [f"c{i}" for i in range(conversations)]
    index = MemoryIndex(
        run_id="generated",
        ids=ids,
        conversation_ids=conversation_ids,
        conversation=conversation.astype(np.int64),
        seq=seq.astype(np.int64),
        roles=["assistant", "user"],
        role_code=(seq % 2 == 0).astype(np.int64),
        times=times,
        day=day,
        tokens=rng.integers(10, 400, n),
        source=np.zeros(n, np.int64),
        sources=["chatgpt"],
        head=np.arange(n, dtype=np.int64),
        group={},
        bm25=bm25,
        dense=dense,
        cue_ids=[f"cue{i}" for i in range(cues)],
        cue_names=[f"cue {i}" for i in range(cues)],
        cue_idf=np.log(1 + n / np.maximum(np.bincount(cue_rows, minlength=cues), 1)).astype(np.float32),
        cue_hub=np.zeros(cues, bool),
        cue_bm25=cue_bm25,
        cue_content=CSR.of(cue_content),
        cue_conversation=CSR.of(cue_conversation),
        content_cue=CSR.of(cue_content.T.tocsr()),
        conversation_code={c: i for i, c in enumerate(conversation_ids)},
        prev=prev.astype(np.int64),
        next=nxt.astype(np.int64),
        texts={},
        position={},
    )
    # Session keys (memory/session.py): a conversation's keys as one BM25 document and its mean key vector
    members = csr_matrix((np.ones(n, np.float32), (conversation, np.arange(n))), shape=(conversations, n))
    session_terms = csc_matrix(members @ matrix)
    session_dense = np.asarray(members @ dense, dtype=np.float32)
    session_dense /= np.maximum(np.linalg.norm(session_dense, axis=1, keepdims=True), 1e-9)
    index.sessions = SessionKeys(
        bm25=BM25.of_matrix(bm25.vocabulary, session_terms),
        dense=session_dense,
        messages=np.bincount(conversation, minlength=conversations).astype(np.int64),
    )
    if n >= COARSE_FROM:
        index.add_projection()
    return index


def measure_latency(n: int, queries: int = 200, seed: int = 11) -> dict[str, Any]:
    started = time.perf_counter()
    index = generated_index(n)
    built = time.perf_counter() - started
    settings = RecallSettings()
    started = time.perf_counter()
    if n >= settings.prepass_from:
        prepare(index)  # the pre-pass tables, built when a memory is opened (memory.service.Memory.open)
    tables = time.perf_counter() - started
    rng = np.random.default_rng(seed)
    out: dict[str, Any] = {"content": n, "build_s": round(built, 1), "prepass_tables_s": round(tables, 1)}
    candidates: list[int] = []
    for scoped, exact in ((False, False), (True, False), (False, True)):
        timings, cpu = [], []
        for _ in range(queries if not exact else queries // 4):
            words = [f"t{int(t)}" for t in rng.integers(5, 2000, 4)]
            anchor = int(rng.integers(0, n))
            vector = index.dense[anchor] + 0.5 * rng.standard_normal(DIM).astype(np.float32)
            vector /= np.linalg.norm(vector)
            at = datetime.fromtimestamp(float(index.times[anchor]), UTC) + timedelta(days=30)
            scope = RecallScope()
            if scoped:
                picked = rng.integers(0, len(index.conversation_ids), 50)
                scope = RecallScope(conversation_ids=[index.conversation_ids[int(i)] for i in picked])
            request = RecallRequest(query=" ".join(words), at=at, budget_tokens=2000, scope=scope)
            began, began_cpu = time.perf_counter(), time.thread_time()
            config = settings.model_copy(update={"prepass_from": n + 1}) if exact else settings
            view, ranking, _ = ranked(index, request.query, vector, request, config, limit=1000)
            to_result(view, request, ranking, settings)
            timings.append((time.perf_counter() - began) * 1000)
            cpu.append((time.thread_time() - began_cpu) * 1000)  # this thread's CPU: what a busy machine cannot inflate
            candidates.append(view.size)
        key = "exact_whole_memory" if exact else "scoped_50_conversations" if scoped else "whole_memory"
        out[key] = {
            "p50_ms": round(metrics.percentile(timings, 50), 1),
            "p95_ms": round(metrics.percentile(timings, 95), 1),
            "cpu_p50_ms": round(metrics.percentile(cpu, 50), 1),
            "cpu_p95_ms": round(metrics.percentile(cpu, 95), 1),
            "candidates_median": int(np.median(candidates)),
        }
        candidates.clear()
    out["rss_mib"] = round(rss_mib())
    return out


# ---------------------------------------------------------------- RESULTS.md


def machine() -> str:
    cpu = platform.processor() or "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout
    return (
        f"{datetime.now(UTC):%Y-%m-%d %H:%M UTC}, {os.cpu_count()} cores ({cpu}), Python {platform.python_version()},"
        f" load average {load} (a shared machine), commit {commit.strip()}"
    )


def write_section(path: Path, section: str) -> None:
    """Replace this benchmark's section of RESULTS.md (its heading to the next top-level heading), keep the rest."""
    old = path.read_text() if path.exists() else ""
    section = section.rstrip("\n") + "\n\n"
    heading = section.splitlines()[0]
    start = old.find(heading)
    if start < 0:
        path.write_text(old.rstrip("\n") + "\n\n" + section if old else section)
        return
    end = old.find("\n# ", start + len(heading))
    path.write_text(old[:start] + section + (old[end + 1 :] if end >= 0 else ""))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--eval", action="store_true", help="run both dev files through `chatmem eval recall`")
    parser.add_argument("--latency", type=int, nargs="*", default=[], help="content sizes of generated memories")
    parser.add_argument("--data-dir", type=Path, default=OUT / "recall", help="data dir of the eval runs")
    parser.add_argument("--write", action="store_true", help="write the figures into benchmarks/RESULTS.md")
    parser.add_argument(
        "--saved",
        action="store_true",
        help="with --write: figures not measured now come from the last run's JSON files",
    )
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    reports = {b: run_eval(b, args.data_dir) for b in FILES} if args.eval else {}
    if args.saved and not reports:
        saved = {b: OUT / f"bench_recall_{b}.json" for b in FILES}
        reports = {b: json.loads(p.read_text()) for b, p in saved.items() if p.exists()}
    latency = [measure_latency(n) for n in args.latency]
    if latency:
        (OUT / "bench_recall_latency.json").write_text(json.dumps(latency, indent=2))
    elif args.saved and (OUT / "bench_recall_latency.json").exists():
        latency = json.loads((OUT / "bench_recall_latency.json").read_text())
    print(json.dumps({"eval": reports, "latency": latency}, indent=2))
    if args.write:
        from benchmarks.recall_tables import latency_section, section

        if reports:
            write_section(ROOT / "benchmarks" / "RESULTS.md", section(reports, latency, machine()))
        elif latency:  # no eval figures at hand: only the latency subsection changes, the eval tables stay
            write_section(ROOT / "benchmarks" / "RESULTS.md", latency_section(latency, machine()))


if __name__ == "__main__":
    main()
