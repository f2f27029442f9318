"""Every tuning parameter set of the cluster stage on a built data dir, scored by the objective's parts and by the
topics' agreement with the blind labels: what the objective can and cannot tell apart (RESULTS.md "Session 31").

    python benchmarks/topic_grid.py --data-dir DIR --seed 42 --out grid42.json

DIR: a labelled build (`bash benchmarks/build_labelled.sh DIR`). For one UMAP seed, each set of n_neighbors x
n_components x min_dist (the stage's choices) x 7 min_cluster_size x up to 4 min_samples x both selection methods
(896 on the labelled build, ~8 CPU-min) gets HDBSCAN on the cached layout and the stage's outlier rule, then its
objective parts (cluster/objective.py), the share of conversations in no topic, the topics that file <= 2
conversations, and the AMI of each labelled conversation's dominant topic against dev, held-out and both label sets
and the larger groupings (spark, demo, big: the two; `ami_*`: conversations with a topic; `amiall_*`: each without
one a group of its own). Nothing is written to DIR.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sklearn.metrics import adjusted_mutual_info_score

from clients.embedders import embedder_key
from cluster import describe, topic_space
from cluster.objective import measure
from cluster.stage import _read_points
from cluster.topics import reassign_outliers
from cluster.tuning import COMPONENTS, METHODS, MIN_DISTS, LayoutCache, Params, cluster_size_range, neighbors_for
from contracts.settings import Settings

LABELS = Path(__file__).parent / "labels"


def label_sets() -> dict[str, dict[str, str]]:
    """Conversation id -> labelled group, for dev, held-out and both (groups of the two sets kept apart)."""
    sets = {
        name: {c: v["topic_group"] for c, v in json.loads((LABELS / f).read_text())["conversations"].items()}
        for name, f in (("dev", "dev_labels.json"), ("held", "heldout_labels.json"))
    }
    sets["both"] = {**{c: "d:" + g for c, g in sets["dev"].items()}, **{c: "h:" + g for c, g in sets["held"].items()}}
    for name in ("spark", "demo"):  # the larger blind groupings (topics only), and the two together as "big"
        grouping = json.loads((LABELS / f"topic_grouping_{name}.json").read_text())["conversations"]
        sets[name] = {c: v["topic_group"] for c, v in grouping.items()}
    sets["big"] = {**{c: "s:" + g for c, g in sets["spark"].items()}, **{c: "m:" + g for c, g in sets["demo"].items()}}
    return sets


def agreement(dominant: dict[str, int], labels: dict[str, str], present: set[str]) -> tuple[float, float]:
    """AMI over the labelled conversations with a topic, and over all of them (no topic: a group of its own)."""
    ids = [c for c in sorted(labels) if c in present]
    filed = [c for c in ids if c in dominant]
    with_topic = adjusted_mutual_info_score([str(dominant[c]) for c in filed], [labels[c] for c in filed])
    every = adjusted_mutual_info_score([str(dominant.get(c, "none:" + c)) for c in ids], [labels[c] for c in ids])
    return float(with_topic), float(every)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    settings = Settings(data_dir=args.data_dir)
    archive = sqlite3.connect(args.data_dir / "archive.db")
    staging = sqlite3.connect(args.data_dir / "staging.db")
    archive.row_factory = staging.row_factory = sqlite3.Row
    points = _read_points(staging, embedder_key(settings.embed))
    run_id = staging.execute("SELECT run_id FROM cluster_runs ORDER BY run_id DESC LIMIT 1").fetchone()[0]
    matrix, _ = topic_space.encode(archive, staging, settings, run_id, points.members, points.ids)  # cached
    conversation = [points.conversation_of[i] for i in points.ids]
    numbers: dict[str, int] = {}
    groups = np.array([numbers.setdefault(c, len(numbers)) for c in conversation])
    phrases = describe.phrase_sample(archive, points.members, points.ids, settings.cluster.seed)
    sets = label_sets()
    n = len(matrix)
    low, high = cluster_size_range(n)
    sizes = sorted({int(np.rint(x)) for x in np.geomspace(low, high, 8)})  # 7 distinct on the labelled build
    cache = LayoutCache(matrix, args.seed)
    rows: list[dict[str, Any]] = []
    for nn in neighbors_for(n):
        for nc in COMPONENTS:
            for md in MIN_DISTS:
                for mcs in sizes:
                    for ms in sorted({1, max(1, mcs // 4), max(1, mcs // 2), mcs}):
                        for method in METHODS:
                            rows.append(
                                trial(
                                    cache,
                                    Params(nn, nc, md, mcs, ms, method),
                                    groups,
                                    conversation,
                                    phrases,
                                    sets,
                                    set(numbers),
                                )
                            )
        print(f"n_neighbors {nn}: {len(rows)} sets", flush=True)
    args.out.write_text(json.dumps({"seed": args.seed, "points": n, "conversations": len(numbers), "rows": rows}))
    return 0


def trial(
    cache: LayoutCache,
    params: Params,
    groups: np.ndarray[Any, Any],
    conversation: list[str],
    phrases: Any,
    sets: dict[str, dict[str, str]],
    present: set[str],
) -> dict[str, Any]:
    from cluster.tuning import run_hdbscan

    layout = cache.get(params.n_neighbors, params.n_components, params.min_dist)
    labels = np.asarray(run_hdbscan(layout, params).labels_, dtype=np.int64)
    written = labels
    if len(set(labels.tolist()) - {-1}) >= 2:
        written, _, _ = reassign_outliers(cache.points, labels, np.zeros(len(labels)), 0.1)
    row: dict[str, Any] = {
        "params": [getattr(params, k) for k in Params.__slots__],
        **measure(labels, groups, cache.points, written, phrases),
    }
    per: dict[str, Counter[int]] = {}
    for c, topic in zip(conversation, written.tolist(), strict=True):
        if topic >= 0:
            per.setdefault(c, Counter())[topic] += 1
    dominant = {c: min(t.items(), key=lambda kv: (-kv[1], kv[0]))[0] for c, t in per.items()}
    row["unfiled_share"] = 1 - len(dominant) / len(present)
    row["topics_le2conv"] = sum(1 for v in Counter(dominant.values()).values() if v <= 2)
    for name, labelled in sets.items():
        if len([c for c in labelled if c in dominant]) > 1:
            row[f"ami_{name}"], row[f"amiall_{name}"] = agreement(dominant, labelled, present)
    return row


if __name__ == "__main__":
    raise SystemExit(main())
