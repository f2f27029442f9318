"""The benchmarks' retrieval metrics, as their papers and official code define them.

- LoCoMo evidence recall@k: the share of a question's evidence turns among the top k retrieved turns.
- LongMemEval session metrics (src/retrieval/eval_utils.py): a turn ranking becomes a session ranking by
  each session's first appearance (their `evaluate_retrieval_turn2session` widens k until k distinct sessions
  are in), then recall_any@k (any answer session in the top k), recall_all@k (all of them), NDCG@k with binary
  relevance, at session level (each session once; the ideal ranking puts the answer sessions first) with their
  `dcg`: the first two ranks undiscounted, rank r >= 2 divided by log2(r).
- Which sessions are answers, and which questions count, is memory/benchmarks.py's `longmemeval_gold` (theirs:
  an answer session counts only when one of its user turns carries `has_answer`; a question with none is left
  out, like abstention questions).
"""

from __future__ import annotations

import math
from collections.abc import Sequence


def evidence_recall(ranked: Sequence[str], gold: Sequence[str], k: int) -> float:
    wanted = set(gold)
    if not wanted:
        return 0.0
    return len(wanted & set(ranked[:k])) / len(wanted)


def sessions_in_order(ranked_turn_sessions: Sequence[str]) -> list[str]:
    """Sessions by first appearance in a turn ranking."""
    return list(dict.fromkeys(ranked_turn_sessions))


def recall_any(sessions: Sequence[str], gold: Sequence[str], k: int) -> float:
    top = set(sessions[:k])
    return float(any(g in top for g in gold))


def recall_all(sessions: Sequence[str], gold: Sequence[str], k: int) -> float:
    top = set(sessions[:k])
    return float(all(g in top for g in gold))


def _dcg(gains: Sequence[float]) -> float:
    """LongMemEval's eval_utils.dcg: rel_1 + sum over ranks r >= 2 of rel_r / log2(r)."""
    return sum(g / math.log2(r) if r > 1 else g for r, g in enumerate(gains, start=1))


def ndcg(sessions: Sequence[str], gold: Sequence[str], k: int) -> float:
    wanted = set(gold)
    ideal = _dcg([1.0] * min(len(wanted), k))
    return _dcg([1.0 if s in wanted else 0.0 for s in sessions[:k]]) / ideal if ideal else 0.0


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100); 0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]
