"""A hierarchical step after the stage's flat HDBSCAN cut, scored against the blind labels: does merging or splitting
topics after the fit trade granularity per region (RESULTS.md "Session 34")?

    python benchmarks/topic_hierarchy.py BUILT-seed-42 BUILT-seed-7 BUILT-seed-11

Each DIR is a copy that `benchmarks/topic_seeds.sh BUILT 42 7 11` re-clustered (its seed is read from the name). The
stage's final fit is made again from the parameters its run stored (the same points, seed and code: the links must come
out identical to what the stage wrote, checked), then each variant relabels the fitted points, and the stage's outlier
rule and renumbering run as in the stage. `the stage` is what it writes (the flat cut, then its topics joined by their
titles, cluster/title_merge.py); `flat cut` is HDBSCAN's cut after the outlier rule alone (the stage before session 34);
every other variant starts from the flat cut and reads no label:

- `leaf`: HDBSCAN's leaf clusters of the same condensed tree (the finest cut);
- `tree-obj`: greedy moves on the condensed tree (a selected cluster replaced by its two child clusters, or two selected
  siblings by their parent) while the stage's objective (cluster/objective.py) rises;
- `split-wide K`: a selected cluster whose conversations are more than K x the median topic's replaced by its two
  child clusters (repeated); `split-radius Q`: one whose embedding radius (1 - mean cosine of its members to its centre)
  is above the Q-quantile of the topics';
- `sub-hdbscan K`: HDBSCAN (the tuned parameters) run again inside each topic of more than K x the median's
  conversations, on its UMAP points;
- `centroid T`: average-linkage agglomeration of the topics' unit centres in the embedding space, cut at cosine
  distance T; `ctfidf T`: the same over the topics' c-TF-IDF vectors of the tuning's phrases, cut at cosine
  similarity T;
- `shared-conv`: topics that share >= 2 conversations (segments of one conversation in both), >= 20 % of the smaller
  one's, joined;
- `fold-small`: topics that are the dominant topic of <= 2 conversations dissolved into their nearest centre's topic;
- `titles D cap C`: the stage's title join (cluster/title_merge.py) at cosine distance D and cap C;
- `rehome-titles M` (after the stage's topics): a titled conversation whose title vector is nearer, by more than M in
  cosine, the title centre of another topic (one of >= 3 titled conversations) than its own topic's (itself left out)
  moves there whole;
- `nearest-centre M` (after the stage's topics): a conversation whose filed segments are nearer on average, by more than
  M in cosine, to another topic's centre in the topic space than to its dominant topic's moves there whole (one
  k-means step per conversation).

And a bound, which reads the labels: `oracle-tree`, greedy tree moves (as `tree-obj`) while the AMI on spark + demo
rises: what any rule choosing among this tree's cuts could at best reach. Prints one line per seed and variant (AMI over
the conversations with a topic on dev, held-out, spark, demo and spark + demo as one set; `all`: the unfiled counted as
groups of their own; topics; the largest topic's share of conversations), then each variant's mean over the seeds.
"""

from __future__ import annotations

import json
import re
import sqlite3
import sys
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
from scipy import sparse
from scipy.cluster.hierarchy import fcluster, linkage
from scipy.spatial.distance import squareform

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from sklearn.metrics import adjusted_mutual_info_score
from topic_grid import label_sets

from clients.embedders import embedder_key
from cluster import describe, title_merge, topic_space
from cluster import topics as fit_topics
from cluster.objective import Objective, PhraseSample, measure
from cluster.stage import _read_points
from cluster.tuning import Params, run_hdbscan
from contracts.settings import Settings

Labels = np.ndarray[Any, Any]
SETS = ("dev", "held", "spark", "demo", "big")


class Tree:
    """HDBSCAN's condensed tree: cluster nodes, their parents and children, and where each point falls out."""

    def __init__(self, clusterer: Any, n: int) -> None:
        raw = clusterer.condensed_tree_._raw_tree
        nodes = raw[raw["child_size"] > 1]
        self.parent = {int(r["child"]): int(r["parent"]) for r in nodes}
        self.children: dict[int, list[int]] = defaultdict(list)
        for child, parent in self.parent.items():
            self.children[parent].append(child)
        self.root = int(raw["parent"].min())
        points = raw[raw["child_size"] == 1]
        self.fallout = np.full(n, self.root, dtype=np.int64)
        self.fallout[points["child"].astype(np.int64)] = points["parent"].astype(np.int64)
        self.chain: dict[int, list[int]] = {}
        for node in {*self.parent, self.root}:
            chain = [node]
            while chain[-1] in self.parent:
                chain.append(self.parent[chain[-1]])
            self.chain[node] = chain
        self.selected = {int(x) for x in clusterer.condensed_tree_._select_clusters()}

    def labels(self, selected: set[int]) -> Labels:
        """Each point's selected ancestor, numbered as HDBSCAN numbers them (by node id); -1: none."""
        number = {node: i for i, node in enumerate(sorted(selected))}
        found = [next((number[a] for a in self.chain[int(f)] if a in number), -1) for f in self.fallout.tolist()]
        return np.array(found, dtype=np.int64)

    def leaves(self) -> set[int]:
        return {node for node in self.parent if node not in self.children}

    def moves(self, selected: set[int]) -> Iterator[set[int]]:
        """Every cut one split (a node into its two children) or one merge (two siblings into their parent) away."""
        for node in selected:
            if len(self.children.get(node, [])) == 2:
                yield (selected - {node}) | set(self.children[node])
        parents = {self.parent[n] for n in selected if self.parent.get(n, self.root) != self.root}
        for parent in parents:
            if all(k in selected for k in self.children[parent]):
                yield (selected - set(self.children[parent])) | {parent}


class Scene:
    """One seed's fit and everything a variant needs."""

    def __init__(self, data_dir: Path, seed: int) -> None:
        settings = Settings(data_dir=data_dir)
        archive, staging = sqlite3.connect(data_dir / "archive.db"), sqlite3.connect(data_dir / "staging.db")
        archive.row_factory = staging.row_factory = sqlite3.Row
        points = _read_points(staging, embedder_key(settings.embed))
        run = staging.execute(
            "SELECT run_id, params FROM cluster_runs WHERE status = 'clustered' ORDER BY run_id DESC LIMIT 1"
        ).fetchone()
        self.matrix, _ = topic_space.encode(archive, staging, settings, run[0], points.members, points.ids)  # cached
        self.params = Params.of(json.loads(run[1]))
        self.conversation = [points.conversation_of[i] for i in points.ids]
        numbers: dict[str, int] = {}
        self.groups = np.array([numbers.setdefault(c, len(numbers)) for c in self.conversation], dtype=np.int64)
        self.phrases: PhraseSample = describe.phrase_sample(archive, points.members, points.ids, seed)
        fit = fit_topics.fit_all(self.matrix, self.params, seed=seed, fit_max=settings.cluster.fit_max)
        self.fit_labels, self.layout, self.clusterer = fit.labels, np.asarray(fit.reducer.embedding_), fit.clusterer
        self.tree = Tree(fit.clusterer, len(points.ids))
        self.flat = self.written(fit.labels)  # the flat cut: HDBSCAN's labels after the outlier rule
        self.title_vectors, self.titled = title_merge.title_vectors(
            archive, staging, settings, run[0], self.conversation
        )  # cached in staging.db by the stage
        self.base = self.flat
        if settings.cluster.title_merge > 0:  # what the stage writes
            self.base = self.titles(settings.cluster.title_merge, settings.cluster.title_merge_cap)
        stored = dict(
            staging.execute("SELECT item_id, topic FROM topic_links WHERE kind = 'segment' AND run_id = ?", (run[0],))
        )
        if not np.array_equal(self.base, [stored.get(i, -1) for i in points.ids]):
            raise SystemExit(f"{data_dir}: the fit made again differs from the stage's links (other code or seed?)")

    def titles(self, distance: float, cap: float) -> Labels:
        """The flat cut's topics joined by their titles (cluster/title_merge.py, as the stage joins them)."""
        joined, _ = title_merge.merge(self.flat, self.conversation, self.title_vectors, self.titled, distance, cap)
        return fit_topics.renumber(joined)

    def written(self, labels: Labels) -> Labels:
        """The stage's outlier rule (quantile 0.1) and renumbering, as the stage writes topics."""
        if len(set(labels.tolist()) - {-1}) >= 2:
            labels, _, _ = fit_topics.reassign_outliers(self.matrix, labels, np.zeros(len(labels)), 0.1)
        return fit_topics.renumber(labels)

    def objective(self, labels: Labels) -> float:
        return Objective().score(measure(labels, self.groups, self.matrix, self.written(labels), self.phrases))

    def dominant_counts(self, labels: Labels) -> Counter[int]:
        return Counter(dominant(self.conversation, labels).values())


def dominant(conversation: list[str], labels: Labels) -> dict[str, int]:
    """Each conversation's most frequent topic (ties: the lower), as staging/graph_quality.py reads it."""
    per: dict[str, Counter[int]] = {}
    for c, t in zip(conversation, labels.tolist(), strict=True):
        if t >= 0:
            per.setdefault(c, Counter())[t] += 1
    return {c: min(t.items(), key=lambda kv: (-kv[1], kv[0]))[0] for c, t in per.items()}


def agreement(conversation: list[str], labels: Labels, sets: dict[str, dict[str, str]]) -> dict[str, float]:
    found = dominant(conversation, labels)
    present = set(conversation)
    out: dict[str, float] = {}
    for name in SETS:
        wanted = [c for c in sorted(sets[name]) if c in present]
        filed = [c for c in wanted if c in found]
        out[name] = adjusted_mutual_info_score([found[c] for c in filed], [sets[name][c] for c in filed])
        out[f"{name}_all"] = adjusted_mutual_info_score(
            [str(found.get(c, "none:" + c)) for c in wanted], [sets[name][c] for c in wanted]
        )
    sizes = Counter(found.values())
    out["topics"], out["largest"] = len(sizes), max(sizes.values()) / sum(sizes.values())
    return out


def greedy_tree(scene: Scene, value: Any) -> set[int]:
    """Tree moves taken best first while `value` (of the fitted labels) rises."""
    current, best = set(scene.tree.selected), value(scene.tree.labels(scene.tree.selected))
    while True:
        scored = [(value(scene.tree.labels(cut)), sorted(cut)) for cut in scene.tree.moves(current)]
        top = max(scored, default=None)
        if top is None or top[0] <= best + 1e-9:
            return current
        best, current = top[0], set(top[1])


def split_wide(scene: Scene, k: float) -> Labels:
    current = set(scene.tree.selected)
    for _ in range(10):
        counts = scene.dominant_counts(scene.tree.labels(current))
        median = float(np.median(list(counts.values())))
        wide = [n for i, n in enumerate(sorted(current)) if counts[i] > k * median and len(scene.tree.children[n]) == 2]
        if not wide:
            break
        for node in wide:
            current = (current - {node}) | set(scene.tree.children[node])
    return scene.tree.labels(current)


def split_radius(scene: Scene, q: float) -> Labels:
    labels = scene.fit_labels
    centres = fit_topics.centroids(scene.matrix, labels)
    radius = {}
    for t, centre in centres.items():
        members = scene.matrix[labels == t]
        radius[t] = 1 - float(np.mean(members @ centre / np.linalg.norm(members, axis=1)))
    cut = float(np.quantile(list(radius.values()), q))
    current = set(scene.tree.selected)
    for i, node in enumerate(sorted(scene.tree.selected)):
        if radius.get(i, 0.0) > cut and len(scene.tree.children.get(node, [])) == 2:
            current = (current - {node}) | set(scene.tree.children[node])
    return scene.tree.labels(current)


def sub_hdbscan(scene: Scene, k: float) -> Labels:
    labels = scene.fit_labels.copy()
    counts = scene.dominant_counts(labels)
    median = float(np.median(list(counts.values())))
    following = int(labels.max()) + 1
    for topic, count in counts.items():
        rows = np.flatnonzero(labels == topic)
        if count <= k * median or len(rows) < 2 * scene.params.min_cluster_size:
            continue
        inner = run_hdbscan(scene.layout[rows], scene.params).labels_
        if len(set(inner.tolist()) - {-1}) < 2:
            continue
        for part in sorted(set(inner.tolist()) - {-1}):
            labels[rows[inner == part]] = following
            following += 1
        labels[rows[inner == -1]] = -1
    return labels


def agglomerate(labels: Labels, vectors: dict[int, Any], distance: float) -> Labels:
    """Topics joined by average linkage over the cosine distance of their unit `vectors`, cut at `distance`."""
    topics = sorted(vectors)
    stacked = np.stack([vectors[t] for t in topics]).astype(np.float64)
    dist = np.clip(1 - stacked @ stacked.T, 0, 2)
    np.fill_diagonal(dist, 0)
    joined = fcluster(linkage(squareform(dist, checks=False), "average"), distance, criterion="distance")
    mapping = {t: int(joined[i]) for i, t in enumerate(topics)}
    return fit_topics.renumber(np.array([mapping.get(t, -1) for t in labels.tolist()], dtype=np.int64))


def ctfidf_vectors(scene: Scene, labels: Labels) -> dict[int, Any]:
    topics = sorted(set(labels.tolist()) - {-1})
    index = {t: i for i, t in enumerate(topics)}
    rows = scene.phrases.rows
    inside = np.flatnonzero(labels[rows] >= 0)
    member = sparse.csr_matrix(
        (np.ones(len(inside)), ([index[t] for t in labels[rows][inside]], inside)), shape=(len(topics), len(rows))
    )
    counts = np.asarray((member @ scene.phrases.matrix).todense())
    tf = counts / np.maximum(counts.sum(axis=1, keepdims=True), 1)
    vectors = tf * np.log(1 + counts.sum(axis=1).mean() / np.maximum(counts.sum(axis=0), 1))
    vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    return {t: vectors[i] for t, i in index.items()}


def shared_conversations(scene: Scene, labels: Labels, least: int = 2, share: float = 0.2) -> Labels:
    convs: dict[int, set[str]] = defaultdict(set)
    for c, t in zip(scene.conversation, labels.tolist(), strict=True):
        if t >= 0:
            convs[t].add(c)
    root = {t: t for t in convs}

    def find(t: int) -> int:
        while root[t] != t:
            t = root[t]
        return t

    for a in sorted(convs):
        for b in sorted(convs):
            both = len(convs[a] & convs[b])
            if a < b and both >= least and both / min(len(convs[a]), len(convs[b])) >= share:
                root[find(b)] = find(a)
    return fit_topics.renumber(np.array([find(t) if t >= 0 else -1 for t in labels.tolist()], dtype=np.int64))


def fold_small(scene: Scene, labels: Labels) -> Labels:
    counts = scene.dominant_counts(labels)
    small = {t for t in set(labels.tolist()) - {-1} if counts[t] <= 2}
    centres = fit_topics.centroids(scene.matrix, labels)
    kept = {t: c for t, c in centres.items() if t not in small}
    out = labels.copy()
    rows = np.flatnonzero(np.isin(labels, list(small)))
    nearest, _ = fit_topics.nearest_centres(scene.matrix[rows], kept)
    out[rows] = nearest
    return fit_topics.renumber(out)


def rehome_titles(scene: Scene, labels: Labels, margin: float, least: int = 3) -> Labels:
    rows: dict[str, list[int]] = defaultdict(list)
    for i, c in enumerate(scene.conversation):
        rows[c].append(i)
    found = dominant(scene.conversation, labels)
    vectors = {c: scene.title_vectors[r[0]].astype(np.float64) for c, r in rows.items() if scene.titled[r[0]]}
    sums = np.zeros((int(labels.max()) + 1, scene.title_vectors.shape[1]))
    titled = np.zeros(len(sums), dtype=np.int64)
    for c, t in found.items():
        if c in vectors:
            sums[t] += vectors[c]
            titled[t] += 1
    centres = sums / np.maximum(np.linalg.norm(sums, axis=1, keepdims=True), 1e-12)
    out = labels.copy()
    for c, t in found.items():
        if c not in vectors or titled[t] < 2:
            continue
        own = sums[t] - vectors[c]
        sims = centres @ vectors[c]
        sims[t] = -9.0
        sims[titled < least] = -9.0
        best = int(np.argmax(sims))
        if sims[best] - (own / max(float(np.linalg.norm(own)), 1e-12)) @ vectors[c] > margin:
            out[[i for i in rows[c] if out[i] >= 0]] = best
    return fit_topics.renumber(out)


def nearest_centre(scene: Scene, labels: Labels, margin: float) -> Labels:
    unit = scene.matrix / np.maximum(np.linalg.norm(scene.matrix, axis=1, keepdims=True), 1e-12)
    centres = np.stack([unit[labels == t].mean(axis=0) for t in range(int(labels.max()) + 1)])
    sims = unit @ (centres / np.maximum(np.linalg.norm(centres, axis=1, keepdims=True), 1e-12)).T
    rows: dict[str, list[int]] = defaultdict(list)
    for i, c in enumerate(scene.conversation):
        if labels[i] >= 0:
            rows[c].append(i)
    found = dominant(scene.conversation, labels)
    out = labels.copy()
    for c, filed in rows.items():
        mean = sims[filed].mean(axis=0)
        best = int(mean.argmax())
        if best != found[c] and mean[best] - mean[found[c]] > margin:
            out[filed] = best
    return fit_topics.renumber(out)


def variants(scene: Scene, sets: dict[str, dict[str, str]]) -> Iterator[tuple[str, Labels]]:
    tree = scene.tree
    yield "the stage", scene.base
    yield "flat cut", scene.flat
    yield "leaf", scene.written(tree.labels(tree.leaves()))
    yield "tree-obj", scene.written(tree.labels(greedy_tree(scene, scene.objective)))
    for k in (2, 3):
        yield f"split-wide {k}", scene.written(split_wide(scene, k))
    for q in (0.8, 0.9):
        yield f"split-radius {q}", scene.written(split_radius(scene, q))
    yield "sub-hdbscan 2", scene.written(sub_hdbscan(scene, 2))
    for t in (0.3, 0.35, 0.4):
        yield f"centroid {t}", agglomerate(scene.flat, fit_topics.centroids(scene.matrix, scene.flat), t)
    for t in (0.3, 0.4):
        yield f"ctfidf {t}", agglomerate(scene.flat, ctfidf_vectors(scene, scene.flat), 1 - t)
    yield "shared-conv", shared_conversations(scene, scene.flat)
    yield "fold-small", fold_small(scene, scene.flat)
    for distance, cap in ((0.3, 0.08), (0.4, 0.06), (0.4, 0.08)):
        yield f"titles {distance} cap {cap}", scene.titles(distance, cap)
    for margin in (0.1, 0.2):
        yield f"rehome-titles {margin}", rehome_titles(scene, scene.base, margin)
    for margin in (0.0, 0.03, 0.06):
        yield f"nearest-centre {margin}", nearest_centre(scene, scene.base, margin)

    def big(labels: Labels) -> float:
        return agreement(scene.conversation, scene.written(labels), sets)["big"]

    yield "oracle-tree (labels)", scene.written(tree.labels(greedy_tree(scene, big)))


def line(r: dict[str, float]) -> str:
    shown = " ".join(f"{k} {r[k]:.3f}" for k in SETS)
    return f"{shown} | big all {r['big_all']:.3f} | {r['topics']:.0f} topics, largest {r['largest']:.3f}"


def main() -> int:
    dirs = [Path(d) for d in sys.argv[1:]]
    if not dirs:
        raise SystemExit(__doc__)
    sets = label_sets()
    found: dict[str, list[dict[str, float]]] = defaultdict(list)
    for data_dir in dirs:
        seed = int(re.sub(r".*-seed-", "", data_dir.name))
        scene = Scene(data_dir, seed)
        for name, labels in variants(scene, sets):
            found[name].append(agreement(scene.conversation, labels, sets))
            print(f"seed {seed:>3} {name:20s} {line(found[name][-1])}", flush=True)
    for name, rows in found.items():
        print(f"mean     {name:20s} {line({k: float(np.mean([r[k] for r in rows])) for k in rows[0]})}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
