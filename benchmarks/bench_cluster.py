"""Clustering on the real dev chats, and a scale plan by extrapolation. Not a test.

    python benchmarks/bench_cluster.py                          # the ~23k dev turns, then 20k/50k/100k points
    python benchmarks/bench_cluster.py --trials 30 --scale 20000 50000 100000

Dev part: the dev turns (LongMemEval_S dev50, MIT) embedded with the default backend (benchmarks/out/
dev_turns_static.npy from bench_embed.py, else computed here) go through the cluster stage's own functions
with the stage's defaults: Optuna on a <= 20k sample (study in a fresh SQLite file), the final fit, outlier
handling, c-TF-IDF labels, the 2-D map. Reported: topics, outlier share before/after outlier handling,
relative validity and DBCV (hdbscan.validity_index on a 4k subsample of the layout), seconds per step, RSS.

Scale part: n points resampled from the dev vectors with jitter (sigma 0.02 per dimension, re-normalised), for
the steps whose cost grows with n: the final fit on min(n, fit_max) points, placing the rest (UMAP transform +
approximate_predict), outlier handling, and reading/writing n vectors in SQLite. Tuning runs on a <= 20k
sample whatever n is, so its cost is the dev part's. Writes benchmarks/out/bench_cluster.json.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from clients.embedders import StaticMiniLM  # noqa: E402
from cluster import topics as fit_topics  # noqa: E402
from cluster.tuning import Objective, Params, tune  # noqa: E402
from contracts.settings import ClusterSettings  # noqa: E402
from staging import embeddings as store  # noqa: E402
from staging.ledger import open_staging  # noqa: E402

OUT = ROOT / "benchmarks" / "out"
DEV = ROOT.parent / "shared" / "data" / "benchmarks" / "longmemeval" / "longmemeval_s_dev50.jsonl.gz"
UNITS = 632_868  # the seed archive's semantic units (DESIGN.md)


def rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def dev_turns() -> list[str]:
    with gzip.open(DEV, "rt", encoding="utf-8") as handle:
        rows = [json.loads(line) for line in handle]
    return [turn["content"] for row in rows for session in row["haystack_sessions"] for turn in session]


def clock(seconds: dict[str, float], step: str, started: float) -> float:
    now = time.perf_counter()
    seconds[step] = round(now - started, 2)
    return now


def dev_run(vectors: np.ndarray, texts: list[str], trials: int, cfg: ClusterSettings) -> tuple[dict[str, Any], Params]:
    seconds: dict[str, float] = {}
    t = time.perf_counter()
    sample = fit_topics.seeded_sample(len(vectors), cfg.sample_size, cfg.seed)
    with tempfile.TemporaryDirectory() as tmp:
        tuned = tune(
            vectors[sample],
            storage_url=f"sqlite:///{tmp}/optuna.db",
            seed=cfg.seed,
            n_trials=trials,
            objective=Objective(cfg.noise_weight, cfg.count_weight, cfg.min_topics),
        )
    t = clock(seconds, "tune", t)
    print(f"tuned: {tuned.best} objective {tuned.best_value:.4f} in {seconds['tune']} s", flush=True)
    fit = fit_topics.fit_all(vectors, tuned.best, seed=cfg.seed, fit_max=cfg.fit_max)
    t = clock(seconds, "fit", t)
    raw = float(np.mean(fit.labels == -1))
    labels, _, moved = fit_topics.reassign_outliers(vectors, fit.labels, fit.weights, cfg.outlier_quantile or 0.1)
    labels = fit_topics.renumber(labels)
    t = clock(seconds, "outliers", t)
    rng = np.random.default_rng(cfg.seed)
    docs: dict[int, list[str]] = {}
    for topic in sorted(set(labels.tolist()) - {-1}):
        members = np.flatnonzero(labels == topic)
        picked = members if len(members) <= cfg.label_docs else rng.choice(members, cfg.label_docs, replace=False)
        docs[topic] = [texts[i] for i in picked]
    keywords = fit_topics.ctfidf(docs, cfg.keywords)
    t = clock(seconds, "labels", t)
    fit_topics.map_layout(vectors[sample], tuned.best.n_neighbors, cfg.seed)
    t = clock(seconds, "map", t)
    dbcv = dbcv_subsample(np.asarray(fit.reducer.embedding_), fit.clusterer.labels_, cfg.seed)
    clock(seconds, "dbcv_4k", t)
    sizes = np.bincount(labels[labels >= 0])
    result = {
        "points": len(vectors),
        "trials": len(tuned.trials),
        "best_params": {name: getattr(tuned.best, name) for name in tuned.best.__slots__},
        "best_objective": round(tuned.best_value, 4),
        "topics": len(sizes),
        "outlier_share_raw": round(raw, 4),
        "outlier_share": round(float(np.mean(labels == -1)), 4),
        "reassigned": int(moved.sum()),
        "relative_validity": round(fit.validity, 4),
        "dbcv_4k_subsample": round(dbcv, 4),
        "topic_size_median": int(np.median(sizes)) if len(sizes) else 0,
        "topic_size_max": int(sizes.max()) if len(sizes) else 0,
        "seconds": seconds,
        "peak_rss_mib": round(rss_mib()),
        "top_labels": list(fit_topics.labels_of(keywords).values())[:15],
    }
    return result, tuned.best


def dbcv_subsample(layout: np.ndarray, labels: np.ndarray, seed: int, size: int = 4000) -> float:
    """DBCV (O(n^2)) on a seeded subsample of the clustered points; clusters left with < 3 points are dropped."""
    import hdbscan

    clustered = np.flatnonzero(labels >= 0)
    sub = clustered[fit_topics.seeded_sample(len(clustered), size, seed)]
    sizes = np.bincount(labels[sub])
    sub = sub[sizes[labels[sub]] >= 3]
    try:
        with np.errstate(all="ignore"):
            return float(hdbscan.validity.validity_index(layout[sub].astype(np.float64), labels[sub]))
    except ValueError:
        return float("nan")


def resampled(vectors: np.ndarray, n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    points = vectors[rng.integers(0, len(vectors), n)] + rng.normal(0, 0.02, size=(n, vectors.shape[1]))
    return (points / np.linalg.norm(points, axis=1, keepdims=True)).astype(np.float32)


def scale_run(vectors: np.ndarray, n: int, params: Params, cfg: ClusterSettings) -> dict[str, Any]:
    points = resampled(vectors, n, cfg.seed)
    seconds: dict[str, float] = {}
    t = time.perf_counter()
    fit = fit_topics.fit_all(points, params, seed=cfg.seed, fit_max=cfg.fit_max)
    fitted = int(fit.fitted.sum())
    t = clock(seconds, "fit_and_place", t)
    fit_topics.reassign_outliers(points, fit.labels, fit.weights, cfg.outlier_quantile or 0.1)
    t = clock(seconds, "outliers", t)
    with tempfile.TemporaryDirectory() as tmp:
        conn = open_staging(Path(tmp) / "s.db")
        keys = [f"{i:064x}" for i in range(n)]
        for start in range(0, n, 2000):
            rows = list(zip(keys[start : start + 2000], points[start : start + 2000], strict=True))
            store.put_vectors(conn, "m", "r", rows)
        t = clock(seconds, "sqlite_write", t)
        store.load_vectors(conn, "m", keys)
        t = clock(seconds, "sqlite_read", t)
        conn.close()
    return {"points": n, "fitted": fitted, "placed": n - fitted, "seconds": seconds, "peak_rss_mib": round(rss_mib())}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trials", type=int, default=30)
    parser.add_argument("--scale", type=int, nargs="*", default=[20000, 50000, 100000])
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    cfg = ClusterSettings()
    load = os.getloadavg()
    texts = dev_turns()
    cached = OUT / "dev_turns_static.npy"
    vectors = np.load(cached) if cached.exists() else StaticMiniLM().embed(texts)
    keep = np.linalg.norm(vectors, axis=1) > 0
    vectors, texts = vectors[keep], [t for t, k in zip(texts, keep, strict=True) if k]
    dev, best = dev_run(vectors, texts, args.trials, cfg)
    print(json.dumps(dev, indent=2))
    scale = []
    for n in args.scale:
        scale.append(scale_run(vectors, n, best, cfg))
        print(json.dumps(scale[-1]))
    report = {"dev": dev, "scale": scale, "load_at_start": load, "cores": os.cpu_count()}
    report["extrapolation_632868"] = extrapolate(dev, scale)
    (OUT / "bench_cluster.json").write_text(json.dumps(report, indent=2))
    print(json.dumps(report["extrapolation_632868"], indent=2))


def extrapolate(dev: dict[str, Any], scale: list[dict[str, Any]]) -> dict[str, float]:
    """Seconds for 632,868 units: tuning as measured (sample-bound), fit at fit_max, the rest linear in n."""
    if not scale:
        return {}
    big = max(scale, key=lambda s: s["points"])
    fit_only = next((s for s in scale if s["placed"] == 0 and s["fitted"] == big["fitted"]), None)
    fit_s = fit_only["seconds"]["fit_and_place"] if fit_only else big["seconds"]["fit_and_place"]
    place_rate = big["placed"] / max(big["seconds"]["fit_and_place"] - fit_s, 1e-9) if big["placed"] else 0.0
    per_point = {k: big["seconds"][k] / big["points"] for k in ("outliers", "sqlite_write", "sqlite_read")}
    estimate = {
        "tune": dev["seconds"]["tune"],
        "fit": fit_s,
        "place": (UNITS - big["fitted"]) / place_rate if place_rate else float("nan"),
        **{k: v * UNITS for k, v in per_point.items()},
        "labels_and_map": dev["seconds"]["labels"] + dev["seconds"]["map"],
    }
    estimate["total"] = sum(estimate.values())
    return {k: round(v, 1) for k, v in estimate.items()}


if __name__ == "__main__":
    main()
