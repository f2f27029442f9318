"""What a tuning trial is worth: topics a person would recognise, judged without labels. Pure numpy.

For the topic of every sampled segment (HDBSCAN's label, -1 noise) and the conversation each segment comes
from, the value Optuna maximises is

    score = cohesion + spread + coherence_weight * separation + phrase_weight * phrase_coherence
            - noise_weight * noise_share - share_weight * max(0, largest_share - share_cap)
            - small_weight * small_share - unfiled_weight * unfiled_share
            (coherence_weight 3, phrase_weight 1, small_weight 1, unfiled_weight 0.5)
            [- count_weight * max(0, 1 - topics / min_topics), only when min_topics is configured]

- cohesion (0..1): over conversations with two or more segments in topics, the mean share of a conversation's
  segments that sit in its dominant topic. The segments of one conversation are a free, unsupervised signal of
  "belongs together": a clustering that scatters a conversation over topics is cutting through a subject.
  Alone it prefers one topic for everything;
- spread (0..1): 1 - sum of p_t^2, p_t the share of conversations whose dominant topic is t (Gini-Simpson):
  distinct conversations spread over topics. It saturates (0.5 at 2 equal topics, 0.9 at 10, 0.97 at 30), so a
  finer split pays only while it keeps conversations whole; cohesion and spread pull against each other and
  meet where conversations group as they are;
- separation (-1..1): a centroid silhouette in the embedding space: the mean, over topic members, of the
  cosine to their own topic's centre (left out of it: else a topic of m members is ~1/m closer to its own
  members than to anything new, and tiny topics win) minus the cosine to the nearest other centre. Topics that
  are coherent and distinct score high; splitting a real topic in two brings the nearest other centre close;
- phrase_coherence (-1..1, v3): the topic coherence of the words a topic would be shown with: for each topic,
  its 10 best phrases by class-based TF-IDF (the labels' own candidates, cluster/phrases.py, on the cleaned
  prose of at most PHRASE_ROWS sampled segments), the mean normalised PMI of every pair of them over the
  sampled segments (NPMI: 1 = always together, 0 = independent, -1 = never; the standard c_npmi of topic
  models), averaged over topics by size. A topic whose keywords are used together is one a person would file.
  Alone it shatters (many tiny topics of one conversation each have perfectly co-occurring words): the
  conversation terms and the separation hold it; without texts (`phrases` None) it is 0;
- noise_share: the share of segments left as noise once the stage's outlier rule (cluster.topics, quantile
  `outlier_quantile`) has moved the typical-enough ones into their nearest topic: what the stage writes;
- largest_share: the largest topic's share of conversations (by dominant topic), after that rule too; above
  share_cap (25 %) it is penalised steeply, so no catch-all topic (one held 413 of 714 conversations of the
  shared exports under the old objective, which rewarded DBCV validity and the fewest topics at a sqrt(n)/4
  floor);
- small_share (v4): the share of topics that are the dominant topic of at most SMALL_TOPIC (2) conversations,
  after the outlier rule. A topic of one or two conversations is not a folder anyone files under: it is a
  conversation the other terms rewarded for being whole and distinct. Without it the best-scoring trials ran
  from 40 to 130 topics on one archive depending on the UMAP seed, and the agreement with people's grouping with
  them (the objective could not tell 40 topics from 100);
- unfiled_share (v4): the share of conversations none of whose segments is in a topic after the outlier rule: a
  conversation `chatmem topics` never shows. A smaller weight than small_share: a conversation that fits no
  subject is better unfiled than filed wrong;
- fewer than 2 topics: WORST.

Without conversations (`groups` None, or every conversation one segment) each segment is its own
conversation: cohesion is 1 for every trial and spread and separation decide. The cost per trial is the
outlier rule (a noise x topics product), three passes over the sample's labels and one (points x topics)
product on at most SEPARATION_MAX points (a seeded subsample), on top of HDBSCAN on a cached UMAP layout.

Chosen by what it measures, not by a fit: over 192 parameter sets of the shared exports' dev build, adding
phrase_coherence (weight 1, the only weight tried) moved the best-scoring set from 13 topics at dev AMI 0.364
to 14 topics at 0.431 (benchmarks/RESULTS.md); the other terms and weights are v2's.

The weights of v2 were chosen on the shared exports (1,404 segments of 728 conversations) against a blind labelled
grouping of 57 of them: over a grid of 304 parameter sets the score correlates 0.46 with that AMI; the
best-scoring sets are 12-14 topics, not 2 and not 130.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import sparse

WORST = -10.0
SMALL_TOPIC = 2  # a topic that is the dominant topic of this many conversations or fewer counts as small
SEPARATION_MAX = 5000
PHRASE_TOP = 10  # best c-TF-IDF phrases per topic whose co-occurrence is scored


@dataclass(frozen=True, slots=True)
class Objective:
    noise_weight: float = 0.5
    count_weight: float = 0.5  # applies only with a configured min_topics
    min_topics: int | None = None
    coherence_weight: float = 3.0
    share_cap: float = 0.25
    share_weight: float = 4.0
    phrase_weight: float = 1.0
    small_weight: float = 1.0
    unfiled_weight: float = 0.5
    outlier_quantile: float | None = 0.1  # the stage's outlier rule, applied before noise and shares are counted

    def score(self, parts: dict[str, float]) -> float:
        """The value Optuna maximises, from `measure`'s parts (see the module docstring)."""
        if parts["topics"] < 2 or not all(math.isfinite(v) for v in parts.values()):
            return WORST
        value = parts["cohesion"] + parts["spread"] + self.coherence_weight * parts["separation"]
        value += self.phrase_weight * parts.get("phrase_coherence", 0.0)
        value -= self.noise_weight * parts["noise_share"]
        value -= self.share_weight * max(0.0, parts["largest_share"] - self.share_cap)
        value -= self.small_weight * parts.get("small_share", 0.0)
        value -= self.unfiled_weight * parts.get("unfiled_share", 0.0)
        if self.min_topics:
            value -= self.count_weight * max(0.0, 1.0 - parts["topics"] / self.min_topics)
        return value


def measure(
    labels: np.ndarray[Any, Any],
    groups: np.ndarray[Any, Any] | None,
    points: np.ndarray[Any, Any],
    written: np.ndarray[Any, Any] | None = None,
    phrases: PhraseSample | None = None,
) -> dict[str, float]:
    """The parts of the objective for one labelling of `points` from conversations `groups`: cohesion, spread,
    separation and phrase coherence (with `phrases`, else 0) of HDBSCAN's `labels`; noise and the largest share
    of `written`, the labels after the stage's outlier rule (default: `labels` as they are)."""
    labels = np.asarray(labels, dtype=np.int64)
    written = labels if written is None else np.asarray(written, dtype=np.int64)
    n = len(labels)
    groups = np.arange(n) if groups is None else np.asarray(groups, dtype=np.int64)
    inside, kept = labels >= 0, written >= 0
    topics = len(np.unique(labels[inside]))
    parts = {"topics": float(topics), "noise_share": float(1.0 - kept.mean()) if n else 1.0}
    if topics < 2:
        return {
            **parts,
            "cohesion": 0.0,
            "spread": 0.0,
            "separation": 0.0,
            "largest_share": 1.0,
            "phrase_coherence": 0.0,
            "small_share": 1.0,
            "unfiled_share": 1.0,
        }
    cohesion, spread, _, _ = _conversation_parts(labels[inside], groups[inside])
    _, _, largest, small = _conversation_parts(written[kept], groups[kept])
    filed = len(np.unique(groups[kept])) / len(np.unique(groups)) if kept.any() else 0.0
    parts.update(cohesion=cohesion, spread=spread, largest_share=largest, small_share=small, unfiled_share=1.0 - filed)
    parts["separation"] = separation(points[inside], labels[inside])
    parts["phrase_coherence"] = phrase_coherence(phrases, labels) if phrases is not None else 0.0
    return parts


def _conversation_parts(
    labels: np.ndarray[Any, Any], groups: np.ndarray[Any, Any]
) -> tuple[float, float, float, float]:
    """Cohesion, spread, the largest topic's share of conversations and the share of small topics (module doc);
    noise already left out."""
    _, group_index = np.unique(groups, return_inverse=True)
    _, topic_index = np.unique(labels, return_inverse=True)
    n_groups, n_topics = int(group_index.max()) + 1, int(topic_index.max()) + 1
    counts = sparse.coo_matrix(
        (np.ones(len(labels), dtype=np.int64), (group_index, topic_index)), shape=(n_groups, n_topics)
    ).tocsr()  # summed duplicates: segments per (conversation, topic)
    sizes = np.asarray(counts.sum(axis=1)).ravel()
    dominant = np.asarray(counts.argmax(axis=1)).ravel()  # ties: the lowest topic
    several = sizes >= 2
    top = np.asarray(counts.max(axis=1).toarray()).ravel()
    cohesion = float(np.mean(top[several] / sizes[several])) if several.any() else 1.0
    filed = np.bincount(dominant, minlength=n_topics)  # conversations whose dominant topic each topic is
    shares = filed / n_groups
    small = float(np.mean(filed <= SMALL_TOPIC))
    return cohesion, float(1.0 - np.sum(shares**2)), float(shares.max()), small


def separation(points: np.ndarray[Any, Any], labels: np.ndarray[Any, Any], seed: int = 0) -> float:
    """Centroid silhouette in cosine (module doc), over at most SEPARATION_MAX members (seeded subsample)."""
    topics, index = np.unique(labels, return_inverse=True)
    if len(topics) < 2:
        return 0.0
    unit = points / np.maximum(np.linalg.norm(points, axis=1, keepdims=True), 1e-12)
    members = sparse.csr_matrix(
        (np.ones(len(index), dtype=np.float32), (index, np.arange(len(index)))), shape=(len(topics), len(index))
    )
    sums = np.asarray(members @ unit)  # per topic, the sum of its members' unit vectors
    centres = sums / np.maximum(np.linalg.norm(sums, axis=1, keepdims=True), 1e-12)
    rows = np.arange(len(unit))
    if len(rows) > SEPARATION_MAX:
        rows = np.sort(np.random.default_rng(seed).choice(len(rows), SEPARATION_MAX, replace=False))
    picked, own_topic = unit[rows], index[rows]
    # Own centre without the point itself: x.(S - x) / |S - x|, |S - x|^2 = |S|^2 - 2 x.S + 1. With the point in
    # it, a topic of m members is ~1/m closer to each of them than to a new one: tiny topics would win.
    dot = np.einsum("ij,ij->i", picked, sums[own_topic])
    rest = np.sqrt(np.maximum(np.einsum("ij,ij->i", sums[own_topic], sums[own_topic]) - 2 * dot + 1, 1e-12))
    own = (dot - 1) / rest
    sims = picked @ centres.T
    sims[np.arange(len(rows)), own_topic] = -np.inf
    return float(np.mean(own - sims.max(axis=1)))


@dataclass(frozen=True, slots=True)
class PhraseSample:
    """Which phrases each of some sampled segments uses: `rows` index the tuning sample, `matrix` is a binary
    (len(rows) x phrases) CSR of the phrases used by two or more of them (cluster/phrases.py candidates)."""

    rows: np.ndarray[Any, Any]
    matrix: sparse.csr_matrix

    @classmethod
    def of(cls, rows: np.ndarray[Any, Any], keys: Sequence[Collection[str]]) -> PhraseSample:
        """From each sampled segment's set of phrase keys."""
        vocab: dict[str, int] = {}
        cells = [(r, vocab.setdefault(k, len(vocab))) for r, found in enumerate(keys) for k in sorted(found)]
        at = np.array(cells, dtype=np.int64).reshape(-1, 2)
        full = sparse.csr_matrix(
            (np.ones(len(at), dtype=np.float32), (at[:, 0], at[:, 1])), shape=(len(keys), len(vocab))
        )
        used = np.flatnonzero(np.asarray(full.sum(axis=0)).ravel() >= 2)
        return cls(np.asarray(rows, dtype=np.int64), full[:, used].tocsr())


def phrase_coherence(phrases: PhraseSample, labels: np.ndarray[Any, Any]) -> float:
    """Mean NPMI of each topic's PHRASE_TOP best c-TF-IDF phrases over the sampled segments, by topic size
    (module doc); -1 when no topic has two phrases used twice in it."""
    labels = np.asarray(labels, dtype=np.int64)[phrases.rows]
    inside = np.flatnonzero(labels >= 0)
    docs = phrases.matrix
    n = docs.shape[0]
    if not len(inside) or docs.shape[1] < 2:
        return -1.0
    topics, index = np.unique(labels[inside], return_inverse=True)
    member = sparse.csr_matrix((np.ones(len(inside)), (index, inside)), shape=(len(topics), n))
    counts = np.asarray((member @ docs).todense())  # segments of each topic using each phrase
    tf = counts / np.maximum(counts.sum(axis=1, keepdims=True), 1.0)
    idf = np.log(1.0 + counts.sum(axis=1).mean() / np.maximum(counts.sum(axis=0), 1.0))
    scores = np.where(counts >= 2, tf * idf, 0.0)
    p = np.asarray(docs.sum(axis=0)).ravel() / n
    values, weights = [], []
    for t in range(len(topics)):
        best = np.argsort(-scores[t], kind="stable")[:PHRASE_TOP]
        best = best[scores[t, best] > 0]
        if len(best) < 2:
            continue
        sub = docs[:, best]
        together = np.asarray((sub.T @ sub).todense())[np.triu_indices(len(best), 1)] / n
        apart = np.outer(p[best], p[best])[np.triu_indices(len(best), 1)]
        with np.errstate(divide="ignore", invalid="ignore"):
            npmi = np.where(
                together > 0, np.log(together / apart) / -np.log(np.where(together > 0, together, 1.0)), -1.0
            )
        npmi = np.where(together >= 1.0, 1.0, npmi)  # every segment uses both: -log(1) = 0
        values.append(float(npmi.mean()))
        weights.append(float(np.sum(index == t)))
    return float(np.average(values, weights=weights)) if values else -1.0
