"""Clustering cost against data size: today's fixed 30 trials vs the scaled budget. Not a test.

    chatmem --data-dir /tmp/demo run demo/longmemeval-demo.zip          # once: the demo's 919 segment vectors
    python benchmarks/bench_cluster_budget.py --demo-data-dir /tmp/demo  # both datasets, both settings

Two settings, each run in a fresh Python process (so numba's per-process compile is paid as a first
`chatmem run` pays it; its on-disk cache is warm, as on any second run):

- `fixed30`: the stage before this change: 30 Optuna trials, no time cap, NN-descent k-NN at every size;
- `budget`: `cluster.tuning.budget` (30 trials, a time cap of 60 s + 20 ms per point on the trials after the
  10th) and exact k-NN up to 4,096 points (no NN-descent, nor its compile).

On two datasets: the demo's segments (919 vectors read from a data dir's staging.db) and the 22,911 dev turns
(LongMemEval_S dev50 embedded with minilm-static, as benchmarks/bench_cluster.py does). For each: seconds for
tuning and the final fit, trials run, topics, outlier share before/after outlier handling, HDBSCAN's relative
validity and DBCV on a 4k subsample. Writes benchmarks/out/bench_cluster_budget.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

OUT = ROOT / "benchmarks" / "out"


def demo_vectors(data_dir: Path) -> np.ndarray:
    """The current segments' vectors under the model the last cluster run used."""
    from staging import embeddings

    conn = sqlite3.connect(data_dir / "staging.db")
    model = conn.execute("SELECT model FROM embedding_items WHERE kind = 'segment' LIMIT 1").fetchone()[0]
    ids = [row[0] for row in conn.execute("SELECT segment_id FROM segments WHERE retired_run_id IS NULL")]
    _, points = embeddings.item_matrix(conn, "segment", model, ids)
    return points


def dev_vectors() -> np.ndarray:
    from bench_cluster import dev_turns

    cached = OUT / "dev_turns_static.npy"
    if cached.exists():
        vectors = np.load(cached)
    else:
        from clients.embedders import StaticMiniLM

        vectors = StaticMiniLM().embed(dev_turns())
        np.save(cached, vectors)
    return vectors


def one(points_path: Path, setting: str) -> dict[str, Any]:
    """One dataset under one setting, in this process: tune, fit, outliers, quality."""
    from bench_cluster import dbcv_subsample

    from cluster import topics as fit_topics
    from cluster import tuning
    from contracts.settings import ClusterSettings

    points = np.load(points_path)
    points = points[np.linalg.norm(points, axis=1) > 0]
    cfg = ClusterSettings()
    if setting == "fixed30":
        tuning.EXACT_KNN_MAX = 0  # NN-descent at every size, as before
        n_trials, timeout_s = 30, None
    else:
        n_trials, timeout_s = tuning.budget(min(len(points), cfg.sample_size), None, None)
    sample = fit_topics.seeded_sample(len(points), cfg.sample_size, cfg.seed)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        tuned = tuning.tune(
            points[sample],
            storage_url=f"sqlite:///{tmp}/optuna.db",
            seed=cfg.seed,
            n_trials=n_trials,
            objective=tuning.Objective(cfg.noise_weight, cfg.count_weight, cfg.min_topics),
            timeout_s=timeout_s,
        )
    tune_s = time.perf_counter() - started
    started = time.perf_counter()
    fit = fit_topics.fit_all(points, tuned.best, seed=cfg.seed, fit_max=cfg.fit_max)
    fit_s = time.perf_counter() - started
    raw = float(np.mean(fit.labels == -1))
    labels, _, _ = fit_topics.reassign_outliers(points, fit.labels, fit.weights, cfg.outlier_quantile or 0.1)
    dbcv = dbcv_subsample(np.asarray(fit.reducer.embedding_), fit.clusterer.labels_, cfg.seed)
    return {
        "setting": setting,
        "points": len(points),
        "trials_budget": n_trials,
        "time_cap_s": timeout_s,
        "trials_run": sum(t.state == "COMPLETE" for t in tuned.trials),
        "tune_s": round(tune_s, 1),
        "fit_s": round(fit_s, 1),
        "total_s": round(tune_s + fit_s, 1),
        "best_objective": round(tuned.best_value, 4),
        "best_params": {name: getattr(tuned.best, name) for name in tuned.best.__slots__},
        "topics": len(set(labels.tolist()) - {-1}),
        "outlier_share_raw": round(raw, 4),
        "outlier_share": round(float(np.mean(labels == -1)), 4),
        "relative_validity": round(fit.validity, 4),
        "dbcv_4k_subsample": round(dbcv, 4),
        "trial_curve": [  # number, objective, seconds, topics, noise share: what a smaller budget would have had
            [
                t.number,
                round(t.value or -1.0, 4),
                t.attrs.get("seconds"),
                t.attrs.get("topics"),
                t.attrs.get("noise_share"),
            ]
            for t in tuned.trials
        ],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--demo-data-dir", type=Path, help="a data dir after `chatmem run demo/longmemeval-demo.zip`")
    parser.add_argument("--datasets", nargs="*", default=["demo", "dev"])
    parser.add_argument("--settings", nargs="*", default=["budget", "fixed30"])
    parser.add_argument("--one", nargs=2, metavar=("POINTS_NPY", "SETTING"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one(Path(args.one[0]), args.one[1])))
        return
    OUT.mkdir(parents=True, exist_ok=True)
    report: dict[str, Any] = {
        "load_at_start": os.getloadavg(),
        "cores": os.cpu_count(),
        "python": platform.python_version(),
    }
    for dataset in args.datasets:
        path = OUT / f"cluster_budget_{dataset}.npy"
        if dataset == "demo":
            if args.demo_data_dir is None:
                parser.error("--demo-data-dir is needed for the demo dataset")
            np.save(path, demo_vectors(args.demo_data_dir))
        else:
            np.save(path, dev_vectors())
        for setting in args.settings:
            done = subprocess.run(
                [sys.executable, __file__, "--one", str(path), setting], capture_output=True, text=True, check=True
            )
            result = json.loads(done.stdout.strip().splitlines()[-1])
            report[f"{dataset}/{setting}"] = result
            print(dataset, json.dumps(result), flush=True)
    report["load_at_end"] = os.getloadavg()
    target = OUT / "bench_cluster_budget.json"
    previous = json.loads(target.read_text()) if target.exists() else {}  # a partial re-run keeps other results
    target.write_text(json.dumps(previous | report, indent=2))


if __name__ == "__main__":
    main()
