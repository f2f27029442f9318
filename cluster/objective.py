"""What a tuning trial is worth: topics a person would recognise, judged without labels. Pure numpy.

For the topic of every sampled segment (HDBSCAN's label, -1 noise) and the conversation each segment comes
from, the value Optuna maximises is

    score = cohesion + spread + coherence_weight * separation           (coherence_weight 3)
            - noise_weight * noise_share - share_weight * max(0, largest_share - share_cap)
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
- noise_share: the share of segments left as noise once the stage's outlier rule (cluster.topics, quantile
  `outlier_quantile`) has moved the typical-enough ones into their nearest topic: what the stage writes;
- largest_share: the largest topic's share of conversations (by dominant topic), after that rule too; above
  share_cap (25 %) it is penalised steeply, so no catch-all topic (one held 413 of 714 conversations of the
  shared exports under the old objective, which rewarded DBCV validity and the fewest topics at a sqrt(n)/4
  floor);
- fewer than 2 topics: WORST.

Without conversations (`groups` None, or every conversation one segment) each segment is its own
conversation: cohesion is 1 for every trial and spread and separation decide. The cost per trial is the
outlier rule (a noise x topics product), three passes over the sample's labels and one (points x topics)
product on at most SEPARATION_MAX points (a seeded subsample), on top of HDBSCAN on a cached UMAP layout.

The weights were chosen on the shared exports (1,404 segments of 728 conversations) against a blind labelled
grouping of 57 of them: over a grid of 304 parameter sets the score correlates 0.46 with that AMI; the
best-scoring sets are 12-14 topics, not 2 and not 130.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import sparse

WORST = -10.0
SEPARATION_MAX = 5000


@dataclass(frozen=True, slots=True)
class Objective:
    noise_weight: float = 0.5
    count_weight: float = 0.5  # applies only with a configured min_topics
    min_topics: int | None = None
    coherence_weight: float = 3.0
    share_cap: float = 0.25
    share_weight: float = 4.0
    outlier_quantile: float | None = 0.1  # the stage's outlier rule, applied before noise and shares are counted

    def score(self, parts: dict[str, float]) -> float:
        """The value Optuna maximises, from `measure`'s parts (see the module docstring)."""
        if parts["topics"] < 2 or not all(math.isfinite(v) for v in parts.values()):
            return WORST
        value = parts["cohesion"] + parts["spread"] + self.coherence_weight * parts["separation"]
        value -= self.noise_weight * parts["noise_share"]
        value -= self.share_weight * max(0.0, parts["largest_share"] - self.share_cap)
        if self.min_topics:
            value -= self.count_weight * max(0.0, 1.0 - parts["topics"] / self.min_topics)
        return value


def measure(
    labels: np.ndarray[Any, Any],
    groups: np.ndarray[Any, Any] | None,
    points: np.ndarray[Any, Any],
    written: np.ndarray[Any, Any] | None = None,
) -> dict[str, float]:
    """The parts of the objective for one labelling of `points` from conversations `groups`: cohesion, spread
    and separation of HDBSCAN's `labels`; noise and the largest share of `written`, the labels after the stage's
    outlier rule (default: `labels` as they are)."""
    labels = np.asarray(labels, dtype=np.int64)
    written = labels if written is None else np.asarray(written, dtype=np.int64)
    n = len(labels)
    groups = np.arange(n) if groups is None else np.asarray(groups, dtype=np.int64)
    inside, kept = labels >= 0, written >= 0
    topics = len(np.unique(labels[inside]))
    parts = {"topics": float(topics), "noise_share": float(1.0 - kept.mean()) if n else 1.0}
    if topics < 2:
        return {**parts, "cohesion": 0.0, "spread": 0.0, "separation": 0.0, "largest_share": 1.0}
    cohesion, spread, _ = _conversation_parts(labels[inside], groups[inside])
    parts.update(cohesion=cohesion, spread=spread, largest_share=_conversation_parts(written[kept], groups[kept])[2])
    parts["separation"] = separation(points[inside], labels[inside])
    return parts


def _conversation_parts(labels: np.ndarray[Any, Any], groups: np.ndarray[Any, Any]) -> tuple[float, float, float]:
    """Cohesion, spread and the largest topic's share of conversations (module doc); noise already left out."""
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
    shares = np.bincount(dominant, minlength=n_topics) / n_groups
    return cohesion, float(1.0 - np.sum(shares**2)), float(shares.max())


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
