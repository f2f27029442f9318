"""What the cluster stage's title join (cluster/title_merge.py) costs at 1M messages. Not a test.

    python benchmarks/bench_title_merge.py                  # ~900 topics in the 1M build's shape: the join's CPU-s
    python benchmarks/bench_title_merge.py --worst          # every topic one subject: joins until the cap stops them
    python benchmarks/bench_title_merge.py --titles T.json --read 2000   # the full model reading titles, cold cache
    CODE_ROOT=/other/checkout python benchmarks/bench_title_merge.py     # another checkout's join, same input

The join's input, synthetic in the shape of session 20's 1M build (gen_real_archive.py --messages 1000000 --seed 1:
207,766 segments, 73,170 conversations, 850 topics, 11 % outliers; 71,012 titled conversations, 25,191 distinct
titles): each conversation has a topic (sizes Zipf-like) and 1-8 segments, three in four filed in its topic, the rest
in another topic or noise; each topic has a pool of titles, each title the topic's direction plus noise; topics come
in subjects (a few topics alike) whose spread decides which join. The per-point title vectors are assembled as
`title_merge.title_vectors` does (one row per point from the distinct titles' vectors), then `title_merge.merge` runs
with the stage's defaults (distance 0.4, cap 0.08). Reported: CPU-s (time.process_time: every thread) and wall of the
assembly and of the join, joins made, topics before and after, the largest topic's share of the conversations, and
a digest of the labels (two checkouts on the same input should print the same).

`--titles FILE --read N`: N titles of FILE (a JSON list of strings, e.g. the distinct titles of a generated
archive) read by the stage's full model (cluster.encoder, minilm-onnx) through `topic_space.read` into a fresh
staging.db: the cold first run's cost, CPU-s per title, and the model's load apart.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, os.environ.get("CODE_ROOT", str(Path(__file__).resolve().parents[1])))

from cluster import title_merge, topic_space
from contracts.settings import Settings
from staging.ledger import open_staging


def synthetic(
    topics: int,
    segments: int,
    conversations: int,
    subjects: int,
    titles: int,
    seed: int,
    spread: tuple[float, float] = (0.5, 1.4),
    dim: int = 384,
) -> tuple[np.ndarray[Any, Any], list[str], np.ndarray[Any, Any], np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """labels per point, conversation id per point, the distinct titles' unit vectors, each point's title (row of
    the distinct titles, -1 untitled), the topic each title was drawn for."""
    rng = np.random.default_rng(seed)
    subject_of = rng.integers(0, subjects, topics)
    subject_dirs = rng.standard_normal((subjects, dim))
    subject_dirs /= np.linalg.norm(subject_dirs, axis=1, keepdims=True)
    own = rng.standard_normal((topics, dim))
    own /= np.linalg.norm(own, axis=1, keepdims=True)
    apart = rng.uniform(*spread, topics)  # how far a topic's titles sit from its subject's
    topic_dirs = subject_dirs[subject_of] + apart[:, None] * own
    topic_dirs /= np.linalg.norm(topic_dirs, axis=1, keepdims=True)
    title_topic = rng.integers(0, topics, titles)
    noise = rng.standard_normal((titles, dim))
    noise /= np.linalg.norm(noise, axis=1, keepdims=True)
    title_matrix = (topic_dirs[title_topic] + 0.9 * noise).astype(np.float32)
    title_matrix /= np.linalg.norm(title_matrix, axis=1, keepdims=True)
    pools = [np.flatnonzero(title_topic == t) for t in range(topics)]
    weights = 1.0 / np.arange(1, topics + 1) ** 0.6  # Zipf-like topic sizes
    conversation_topic = rng.choice(topics, conversations, p=weights / weights.sum())
    per = np.maximum(1, rng.poisson(segments / conversations - 1, conversations) + 1)
    per = np.minimum(per, 8)
    conversation = np.repeat(np.arange(conversations), per)[:segments]
    if len(conversation) < segments:
        conversation = np.concatenate([conversation, rng.integers(0, conversations, segments - len(conversation))])
    draw = rng.random(len(conversation))
    labels = conversation_topic[conversation].copy()
    other = (draw > 0.75) & (draw <= 0.89)
    labels[other] = rng.integers(0, topics, int(other.sum()))
    labels[draw > 0.89] = -1
    title_of_conversation = np.array(
        [pool[rng.integers(0, len(pool))] if len(pool) else -1 for pool in (pools[t] for t in conversation_topic)]
    )
    title_of_conversation[rng.random(conversations) < 0.03] = -1  # "New chat" and untitled
    ids = [f"c{n}" for n in conversation.tolist()]
    return labels.astype(np.int64), ids, title_matrix, title_of_conversation[conversation], title_topic


def assemble(title_matrix: np.ndarray[Any, Any], title_of_point: np.ndarray[Any, Any]) -> tuple[Any, Any]:
    """Per-point title vectors and flags as `title_merge.title_vectors` builds them (a dict of the distinct titles,
    one row per point)."""
    found = {f"t{n}": row for n, row in enumerate(title_matrix)}
    zero = np.zeros(title_matrix.shape[1], dtype=np.float32)
    per_point = [f"t{n}" if n >= 0 else "" for n in title_of_point.tolist()]
    titled = np.array([t in found for t in per_point], dtype=bool)
    return np.stack([found.get(t, zero) for t in per_point]), titled


def clocked(step: str, out: dict[str, Any], started: tuple[float, float]) -> tuple[float, float]:
    now = (time.process_time(), time.perf_counter())
    out[step] = {"cpu_s": round(now[0] - started[0], 2), "wall_s": round(now[1] - started[1], 2)}
    return now


def bench_join(args: argparse.Namespace) -> dict[str, Any]:
    subjects = 12 if args.worst else args.subjects
    spread = (0.1, 0.4) if args.worst else (0.5, 1.4)
    labels, conversations, title_matrix, title_of_point, _ = synthetic(
        args.topics, args.segments, args.conversations, subjects, args.titles_made, args.seed, spread
    )
    out: dict[str, Any] = {
        "code": os.environ.get("CODE_ROOT", "this checkout"),
        "input": {
            "points": len(labels),
            "conversations": len(set(conversations)),
            "topics": int(labels.max()) + 1,
            "outlier_share": round(float(np.mean(labels == -1)), 3),
            "subjects": subjects,
            "distinct_titles": len(title_matrix),
        },
    }
    started = (time.process_time(), time.perf_counter())
    vectors, titled = assemble(title_matrix, title_of_point)
    started = clocked("assemble", out, started)
    joined, joins = title_merge.merge(labels, conversations, vectors, titled, args.distance, args.cap)
    clocked("merge", out, started)
    numbers: dict[str, int] = {}
    conversation = np.array([numbers.setdefault(c, len(numbers)) for c in conversations])
    after = len(set(joined.tolist()) - {-1})
    largest = title_merge.dominant_counts(joined, conversation, int(joined.max()) + 1).max() / len(numbers)
    out["result"] = {
        "joins": joins,
        "topics_after": after,
        "largest_share": round(float(largest), 4),
        "labels_sha256": hashlib.sha256(joined.astype(np.int64).tobytes()).hexdigest()[:16],
    }
    out["peak_rss_mib"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    return out


def bench_read(args: argparse.Namespace) -> dict[str, Any]:
    titles = json.loads(Path(args.titles).read_text(encoding="utf-8"))
    random.Random(args.seed).shuffle(titles)
    wanted = titles[: args.read]
    settings = Settings()
    with tempfile.TemporaryDirectory() as tmp:
        staging = open_staging(Path(tmp) / "staging.db")
        started = (time.process_time(), time.perf_counter())
        out: dict[str, Any] = {"titles_in_file": len(titles), "read": len(wanted)}
        encoder = topic_space.encoder_for(settings)
        encoder.embed(["warm up the session"])
        started = clocked("load_model", out, started)
        matrix = topic_space.read(staging, settings, "bench", wanted, encoder, "bench: titles")
        clocked("read", out, started)
        staging.close()
    per_title_ms = 1000 * out["read"]["cpu_s"] / max(1, len(wanted))
    out["cpu_ms_per_title"] = round(per_title_ms, 2)
    out["cpu_s_for_all_titles_in_file"] = round(per_title_ms * len(titles) / 1000)
    out["vectors"] = list(matrix.shape)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--topics", type=int, default=900)
    parser.add_argument("--segments", type=int, default=207_766)
    parser.add_argument("--conversations", type=int, default=73_170)
    parser.add_argument("--subjects", type=int, default=600, help="topics come in this many subjects")
    parser.add_argument("--titles-made", type=int, default=25_191, help="distinct titles of the synthetic input")
    parser.add_argument("--worst", action="store_true", help="12 subjects, topics close to theirs: joins until the cap")
    parser.add_argument("--distance", type=float, default=0.4)
    parser.add_argument("--cap", type=float, default=0.08)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--titles", help="a JSON list of titles to read with the full model (cold cache)")
    parser.add_argument("--read", type=int, default=2000, help="how many of --titles to read")
    args = parser.parse_args()
    result = bench_read(args) if args.titles else bench_join(args)
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
