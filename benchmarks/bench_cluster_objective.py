"""What the cluster objective (v2) and the phrase labels cost, on a data dir's real segment vectors and texts.

    python benchmarks/bench_cluster_objective.py --data-dir DIR

Objective: per trial, the stage's outlier rule and the objective's parts (cluster/objective.py) on 1,000 and
20,000 points (the tuning sample's cap) resampled from the data dir's segment vectors with jitter (sigma 0.02,
re-normalised), with k-means labels and 30 % noise standing in for HDBSCAN's; CPU seconds, best of 3.
Labels: cleaning and phrase counting (cluster/phrases.py) over the archive's first 3,000 messages, in MB of text
per CPU-second.
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from clients.embedders import embedder_key
from cluster.objective import Objective, measure
from cluster.phrases import DOC_CHARS, PhraseCounts
from cluster.topics import reassign_outliers
from contracts.settings import Settings
from staging import embeddings as vectors


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", type=Path, required=True)
    args = parser.parse_args()
    from sklearn.cluster import MiniBatchKMeans

    staging = sqlite3.connect(args.data_dir / "staging.db")
    current = "SELECT segment_id, conversation_id FROM segments WHERE retired_run_id IS NULL"
    conversation = dict(staging.execute(current))
    key = embedder_key(Settings(data_dir=args.data_dir).embed)
    ids, points = vectors.item_matrix(staging, "segment", key, list(conversation))
    numbers: dict[str, int] = {}
    groups = np.array([numbers.setdefault(conversation[i], len(numbers)) for i in ids])
    rng = np.random.default_rng(0)
    for n, k in ((1000, 30), (20000, 150)):
        pick = rng.choice(len(points), n, replace=n > len(points))
        sample = points[pick] + 0.02 * rng.normal(size=(n, points.shape[1])).astype(np.float32)
        sample /= np.linalg.norm(sample, axis=1, keepdims=True)
        copies = max(1, n // len(points))
        sample_groups = groups[pick] * copies + rng.integers(0, copies, n)  # a resampled row: a new conversation
        labels = MiniBatchKMeans(k, random_state=0, n_init=1).fit_predict(sample).astype(np.int64)
        labels[rng.random(n) < 0.3] = -1
        seconds = []
        for _ in range(3):
            started = time.process_time()
            written, _, _ = reassign_outliers(sample, labels, np.zeros(n), 0.1)
            Objective().score(measure(labels, sample_groups, sample, written))
            seconds.append(time.process_time() - started)
        print(f"objective: {n:6d} points, {k} topics: {min(seconds):.3f} CPU-s per trial")
    archive = sqlite3.connect(args.data_dir / "archive.db")
    texts = [str(r[0] or "") for r in archive.execute("SELECT text FROM messages ORDER BY uuid LIMIT 3000")]
    chars = sum(min(len(t), DOC_CHARS) for t in texts)
    started = time.process_time()
    counts = PhraseCounts()
    for text in texts:
        counts.add(text)
    spent = time.process_time() - started
    rate = chars / spent / 1e6
    print(f"labels: {len(texts)} messages, {chars / 1e6:.2f} MB read in {spent:.2f} CPU-s: {rate:.2f} MB/CPU-s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
