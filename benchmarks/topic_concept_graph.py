"""Topics by what conversations are about in words: each conversation a sparse TF-IDF vector of its extracted
concepts (and words), a kNN cosine graph, Louvain communities; scored against the blind labels beside the stage's
topics (RESULTS.md "Session 36", "Topics by what conversations are about in words").

    python benchmarks/topic_concept_graph.py BUILT-seed-42 BUILT-seed-7 BUILT-seed-11 [--grid] [--diagnose]

Each DIR is a labelled build or a copy `benchmarks/topic_seeds.sh BUILT 42 7 11` re-clustered; nothing is written to
it. Every variant reads no label; the table's settings were chosen by the mean AMI over spark + demo + dev (held-out
is the check not tuned on). Representations (each block sublinear TF x IDF over terms in >= 2 conversations and at
most a fifth of them, L2-normalised, weighted, then the row L2-normalised):

- `c`: the conversation's concepts (concept_evidence, a merged concept counted for its target; archived ones kept:
  the garden's age is not a subject), each weighted by its evidence count;
- `cw`: the words of those concepts' titles ("habanero pepper" -> habanero, pepper), so that "summer cocktail" and
  "mango spritz" can meet where their concepts never do;
- `t`: the title's words (placeholder titles none); `u`: the user's words; `T`: the stage's dominant topic as one term
  (the graph then sees the segment space too).

Steps: `graph R k g`: Louvain (modularity at resolution g, a plain deterministic implementation below) on the
symmetrised k-nearest-neighbour cosine graph of R; a conversation without any term is in no topic. `vote R k m`: the
stage's topics kept, a conversation moved to the topic its k concept neighbours vote for (edge weights) when that
outweighs its own topic's votes (plus one mean edge for itself) m times. `themes R k g`: the stage's topics as nodes,
edges the concept-graph weight between their conversations, Louvain groups topics into themes. `mean k g`: Louvain on
the kNN graph of each conversation's mean full-MiniLM vector (the stage's topic texts, read from the build's embedding
cache, never encoded here): the conversation level on the stage's own encoder, for comparison.

`--diagnose` (reads the labels, for diagnosis only): per grouping, how often a labelled conversation's nearest labelled
neighbour in each representation shares its group (1-NN) and the share of its 5 nearest that do.
"""

from __future__ import annotations

import argparse
import math
import re
import sqlite3
import sys
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import numpy as np
from scipy import sparse

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS
from sklearn.metrics import adjusted_mutual_info_score

from clients.embedders import embedder_key
from cluster import topic_space
from contracts.settings import Settings
from staging import segments as segment_store
from staging.embeddings import load_vectors, text_hash
from staging.graph_quality import Labels, dominant_topics

LABELS = Path(__file__).parent / "labels"
GROUPINGS = {
    "dev": "dev_labels.json",
    "heldout": "heldout_labels.json",
    "spark": "topic_grouping_spark.json",
    "demo": "topic_grouping_demo.json",
}
WORD = re.compile(r"[A-Za-z][A-Za-z0-9+#.]*[A-Za-z0-9+#]|[A-Za-z]")
REPRESENTATIONS: dict[str, dict[str, float]] = {
    "c": {"concepts": 1},
    "c+cw": {"concepts": 1, "cwords": 1},
    "cw+t+u": {"cwords": 1, "title": 1, "user": 1},
    "c+cw+T2": {"concepts": 1, "cwords": 1, "topic": 2},
}
# (step, representation, k, parameter): per step and representation the best of --grid's settings by the mean over
# spark + demo + dev (vote c k5 2: the same step moving more conversations)
TABLE: list[tuple[str, str, int, float]] = [
    ("graph", "c", 20, 4.0),
    ("graph", "c+cw", 5, 4.0),
    ("graph", "cw+t+u", 10, 3.0),
    ("graph", "c+cw+T2", 5, 2.0),
    ("vote", "c", 5, 4.0),
    ("vote", "c+cw", 5, 4.0),
    ("vote", "cw+t+u", 5, 4.0),
    ("vote", "c", 5, 2.0),
    ("themes", "cw+t+u", 10, 8.0),
    ("mean", "", 10, 4.0),
]


def _ro(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    conn.row_factory = sqlite3.Row
    return conn


def words(text: str) -> list[str]:
    return [w.lower() for w in WORD.findall(text) if len(w) > 2 and w.lower() not in ENGLISH_STOP_WORDS]


class Build:
    """What the variants read of one data dir: conversations, titles, user words, concepts, the stage's topics."""

    def __init__(self, data_dir: Path) -> None:
        archive, staging = _ro(data_dir / "archive.db"), _ro(data_dir / "staging.db")
        self.dir = data_dir
        self.conversations = sorted(str(r[0]) for r in archive.execute("SELECT id FROM conversations"))
        self.titles = {str(r[0]): str(r[1] or "") for r in archive.execute("SELECT id, title FROM conversations")}
        conversation_of = {str(r[0]): str(r[1]) for r in archive.execute("SELECT uuid, conversation_id FROM messages")}
        self.user_words: dict[str, Counter[str]] = defaultdict(Counter)
        for conversation, text in archive.execute("SELECT conversation_id, text FROM messages WHERE role = 'user'"):
            self.user_words[str(conversation)].update(words(str(text)[:4000]))
        self.dominant = dominant_topics(archive, staging)
        info = {str(r[0]): r for r in staging.execute("SELECT concept_id, title_key, state, merged_into FROM concepts")}
        self.concepts: dict[str, Counter[str]] = defaultdict(Counter)  # conversation -> concept title key -> evidence
        for concept_id, message_id in staging.execute("SELECT concept_id, message_id FROM concept_evidence"):
            target, seen = str(concept_id), set()
            while target in info and info[target]["state"] == "merged" and info[target]["merged_into"]:
                if target in seen:
                    break
                seen.add(target)
                target = str(info[target]["merged_into"])
            conversation = conversation_of.get(str(message_id))
            if target in info and info[target]["state"] != "split" and conversation is not None:
                self.concepts[conversation][str(info[target]["title_key"])] += 1
        self._mean: np.ndarray[Any, Any] | None = None
        archive.close()
        staging.close()

    def mean_vectors(self) -> np.ndarray[Any, Any]:
        """Each conversation's mean full-model vector of its segments' topic texts, from the embedding cache."""
        if self._mean is None:
            archive, staging = _ro(self.dir / "archive.db"), _ro(self.dir / "staging.db")
            settings = Settings()
            key = embedder_key(settings.embed.model_copy(update={"backend": settings.cluster.encoder}))
            segments = list(segment_store.iter_current_segments(staging))
            ids = [s.segment_id for s in segments]
            members = {s.segment_id: s.message_ids for s in segments}
            hashes = [text_hash(t) for t in topic_space.topic_texts(archive, members, ids)]
            found = load_vectors(staging, key, hashes)
            row = {c: i for i, c in enumerate(self.conversations)}
            mean = np.zeros((len(self.conversations), 384))
            for segment, h in zip(segments, hashes, strict=True):
                if h in found:
                    mean[row[segment.conversation_id]] += found[h]
            self._mean = mean
            archive.close()
            staging.close()
        return self._mean


def features(b: Build, weights: dict[str, float]) -> tuple[sparse.csr_matrix, np.ndarray[Any, Any]]:
    """Rows in b.conversations order, unit or zero; and which rows have a term."""
    n = len(b.conversations)

    def block(counts: list[Counter[str]], weight: float) -> sparse.csr_matrix:
        df: Counter[str] = Counter()
        for c in counts:
            df.update(t for t, x in c.items() if x > 0)
        vocab = {t: i for i, t in enumerate(sorted(t for t, v in df.items() if 2 <= v <= 0.2 * n))}
        rows, cols, values = [], [], []
        for i, count in enumerate(counts):
            for t, x in count.items():
                if t in vocab and x > 0:
                    rows.append(i)
                    cols.append(vocab[t])
                    values.append((1 + math.log(x)) * math.log(n / df[t]))
        m = sparse.csr_matrix((values, (rows, cols)), shape=(n, len(vocab)))
        norms = np.sqrt(np.asarray(m.multiply(m).sum(axis=1)).ravel())
        norms[norms == 0] = 1
        return sparse.csr_matrix(sparse.diags(weight / norms) @ m)

    def concept_words(count: Counter[str]) -> Counter[str]:
        out: Counter[str] = Counter()
        for key, x in count.items():
            for w in set(words(key)):
                out[w] += x
        return out

    makers = {
        "concepts": lambda c: b.concepts.get(c, Counter()),
        "cwords": lambda c: concept_words(b.concepts.get(c, Counter())),
        "title": lambda c: (
            Counter(words(b.titles.get(c, "")))
            if b.titles.get(c, "").strip().lower() not in topic_space.UNTITLED
            else Counter()
        ),
        "user": lambda c: b.user_words.get(c, Counter()),
        "topic": lambda c: Counter([f"topic {b.dominant[c]}"]) if c in b.dominant else Counter(),
    }
    blocks = [block([makers[name](c) for c in b.conversations], w) for name, w in weights.items() if w]
    x = sparse.csr_matrix(sparse.hstack(blocks))
    norms = np.sqrt(np.asarray(x.multiply(x).sum(axis=1)).ravel())
    has = norms > 0
    norms[~has] = 1
    return sparse.csr_matrix(sparse.diags(1 / norms) @ x), has


def knn_graph(x: Any, has: np.ndarray[Any, Any], k: int) -> sparse.csr_matrix:
    """Each row's k most similar rows (cosine > 0), symmetrised by the larger weight."""
    s = x @ x.T
    s = s.toarray() if sparse.issparse(s) else np.asarray(s)
    np.fill_diagonal(s, 0)
    w = np.zeros_like(s)
    for i in np.flatnonzero(has):
        nearest = np.argsort(-s[i], kind="stable")[:k]
        nearest = nearest[s[i, nearest] > 0]
        w[i, nearest] = s[i, nearest]
    return sparse.csr_matrix(np.maximum(w, w.T))


def louvain(w: sparse.csr_matrix, gamma: float, seed: int = 0) -> np.ndarray[Any, Any]:
    """Louvain modularity communities at resolution gamma: local moves in node order (a seeded permutation when
    seed != 0) until none gains, then the communities as nodes, until a level moves nothing."""
    rng = np.random.default_rng(seed)
    member = np.arange(w.shape[0])
    g = sparse.csr_matrix(w, dtype=float)
    while g.sum() > 0:
        m2, k = g.sum(), np.asarray(g.sum(axis=1)).ravel()
        n = g.shape[0]
        community, total = np.arange(n), k.copy()
        order = rng.permutation(n) if seed else np.arange(n)
        moved, improved = False, True
        while improved:
            improved = False
            for i in order:
                links: dict[int, float] = defaultdict(float)
                for p in range(g.indptr[i], g.indptr[i + 1]):
                    if g.indices[p] != i:
                        links[community[g.indices[p]]] += g.data[p]
                own = community[i]
                total[own] -= k[i]
                best, gain = own, links.get(own, 0.0) - gamma * total[own] * k[i] / m2
                for c, weight in links.items():
                    if weight - gamma * total[c] * k[i] / m2 > gain + 1e-12:
                        best, gain = c, weight - gamma * total[c] * k[i] / m2
                total[best] += k[i]
                if best != own:
                    community[i], improved, moved = best, True, True
        if not moved:
            break
        _, community = np.unique(community, return_inverse=True)
        member = community[member]
        p = sparse.csr_matrix((np.ones(n), (np.arange(n), community)), shape=(n, community.max() + 1))
        g = sparse.csr_matrix(p.T @ g @ p)
    return member


def vote(b: Build, w: sparse.csr_matrix, margin: float) -> dict[str, Any]:
    assign: dict[str, Any] = dict(b.dominant)
    for i, c in enumerate(b.conversations):
        lo, hi = w.indptr[i], w.indptr[i + 1]
        if c not in b.dominant or lo == hi:
            continue
        votes: dict[Any, float] = defaultdict(float)
        for p in range(lo, hi):
            topic = b.dominant.get(b.conversations[w.indices[p]])
            if topic is not None:
                votes[topic] += w.data[p]
        if votes:
            best = max(sorted(votes.items()), key=lambda kv: kv[1])
            own = b.dominant[c]
            if best[0] != own and best[1] > margin * (votes.get(own, 0.0) + w.data[lo:hi].mean()):
                assign[c] = best[0]
    return assign


def themes(b: Build, w: sparse.csr_matrix, gamma: float) -> dict[str, Any]:
    row = {c: i for i, c in enumerate(b.conversations)}
    topics = {t: i for i, t in enumerate(sorted(set(b.dominant.values())))}
    filed = list(b.dominant)
    p = sparse.csr_matrix(
        (np.ones(len(filed)), ([row[c] for c in filed], [topics[b.dominant[c]] for c in filed])),
        shape=(len(b.conversations), len(topics)),
    )
    g = sparse.lil_matrix(p.T @ w @ p)
    g.setdiag(0)
    theme = louvain(sparse.csr_matrix(g), gamma)
    return {c: int(theme[topics[t]]) for c, t in b.dominant.items()}


def variant(b: Build, step: str, rep: str, k: int, parameter: float) -> dict[str, Any]:
    if step == "main":
        return dict(b.dominant)
    if step == "mean":
        x, has = b.mean_vectors(), np.linalg.norm(b.mean_vectors(), axis=1) > 0
        x = x / np.where(has, np.linalg.norm(x, axis=1), 1)[:, None]
    else:
        x, has = features(b, REPRESENTATIONS[rep])
    w = knn_graph(x, has, k)
    if step == "vote":
        return vote(b, w, parameter)
    if step == "themes":
        return themes(b, w, parameter)
    community = louvain(w, parameter)
    return {c: int(community[i]) for i, c in enumerate(b.conversations) if has[i]}


def score(b: Build, assign: dict[str, Any], groupings: dict[str, Labels]) -> dict[str, float]:
    out: dict[str, float] = {}
    present = set(b.conversations)
    for name, labels in groupings.items():
        wanted = [c for c in sorted(labels.conversations) if c in present]
        filed = [c for c in wanted if c in assign]
        truth = [labels.conversations[c]["topic_group"] for c in wanted]
        out[name] = adjusted_mutual_info_score(
            [str(assign[c]) for c in filed], [t for c, t in zip(wanted, truth, strict=True) if c in assign]
        )
        out[f"{name} all"] = adjusted_mutual_info_score([str(assign.get(c, f"none {c}")) for c in wanted], truth)
    sizes = Counter(assign.values())
    out["topics"], out["largest"] = len(sizes), max(sizes.values()) / sum(sizes.values())
    return out


def diagnose(b: Build, groupings: dict[str, Labels]) -> None:
    mean = b.mean_vectors()
    reps: dict[str, np.ndarray[Any, Any]] = {"full-MiniLM conversation mean": mean}
    for rep in ("c", "c+cw", "cw+t+u"):
        reps[f"words {rep}"] = features(b, REPRESENTATIONS[rep])[0].toarray()
    row = {c: i for i, c in enumerate(b.conversations)}
    for name, m in reps.items():
        m = m / np.where(np.linalg.norm(m, axis=1) > 0, np.linalg.norm(m, axis=1), 1)[:, None]
        parts = []
        for g, labels in groupings.items():
            ids = [c for c in sorted(labels.conversations) if c in row]
            v = m[[row[c] for c in ids]]
            s = v @ v.T
            np.fill_diagonal(s, -9)
            y = np.array([labels.conversations[c]["topic_group"] for c in ids])
            top5 = np.argsort(-s, axis=1)[:, :5]
            parts.append(
                f"{g} 1-NN {(y[np.argmax(s, axis=1)] == y).mean():.2f} 5-NN {(y[top5] == y[:, None]).mean():.2f}"
            )
        print(f"{name:32s} " + " | ".join(parts))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dirs", nargs="+", type=Path)
    parser.add_argument("--grid", action="store_true", help="every setting of the steps, not the table's")
    parser.add_argument("--diagnose", action="store_true", help="nearest-neighbour agreement (reads the labels)")
    args = parser.parse_args()
    groupings = {k: Labels.load(LABELS / v) for k, v in GROUPINGS.items()}
    builds = [Build(d) for d in args.dirs]
    if args.diagnose:
        diagnose(builds[0], groupings)
        return 0
    rows: list[tuple[str, str, int, float]] = [("main", "", 0, 0.0)]
    if args.grid:
        for rep in REPRESENTATIONS:
            rows += [("graph", rep, k, g) for k in (5, 10, 20) for g in (1.0, 2.0, 3.0, 4.0)]
            rows += [("vote", rep, k, m) for k in (5, 10) for m in (1.0, 2.0, 3.0, 4.0)]
            rows += [("themes", rep, k, g) for k in (5, 10) for g in (2.0, 4.0, 8.0)]
        rows += [("mean", "", k, g) for k in (10, 20) for g in (2.0, 3.0, 4.0)]
    else:
        rows += TABLE
    names = [*GROUPINGS, *(f"{g} all" for g in GROUPINGS)]
    print("variant | " + " | ".join(names) + " | sel (spark+demo+dev) | topics | largest | dev / held-out by seed")
    for step, rep, k, parameter in rows:
        assigned = [variant(b, step, rep, k, parameter) for b in builds]
        scores = [score(b, a, groupings) for b, a in zip(builds, assigned, strict=True)]
        moved = [sum(a.get(c) != b.dominant.get(c) for c in b.dominant) for b, a in zip(builds, assigned, strict=True)]
        mean = {n: float(np.mean([s[n] for s in scores])) for n in [*names, "topics", "largest"]}
        sel = (mean["spark"] + mean["demo"] + mean["dev"]) / 3
        by_seed = " ".join(f"{s['dev']:.3f}/{s['heldout']:.3f}" for s in scores)
        by_seed += f" (moved {'/'.join(map(str, moved))})" if step == "vote" else ""
        label = "main (the stage)" if step == "main" else f"{step} {rep} k{k} {parameter:g}".replace("  ", " ")
        print(
            f"{label} | "
            + " | ".join(f"{mean[n]:.3f}" for n in names)
            + f" | {sel:.3f} | {mean['topics']:.0f} | {max(s['largest'] for s in scores):.3f} | {by_seed}",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
