"""Asking a benchmark's questions of a built memory: the system, the flat baselines, and ablations.

Every method ranks the same candidate turns (the question's scope, nothing after `at`):
- system: memory.recall (cues, tags, session prior, decay, time filter, consolidation, expanded keys);
- bm25: BM25 over the plain turns (speaker-prefixed, no cue expansion);
- dense: the default embedder's vectors of the plain turns (the embed stage's) against the query's;
- rrf: reciprocal-rank fusion of the two (k = 60);
- dense_keys / rrf_keys: the same with the system's key embedder over the same keys (so that a gain of the
  system over the flat baselines is not just a stronger embedder).
Metrics per method and per question category (memory.metrics). Nothing here is tuned to a dev question.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from clients.embedders import Embedder
from contracts.memory import RecallRequest, RecallScope
from contracts.settings import RecallSettings
from memory import metrics
from memory.benchmarks import Benchmark, Question
from memory.candidates import ranked
from memory.graph import speaker
from memory.index import Array, MemoryIndex
from memory.recall import Switches, candidate_mask, has_meaning, to_result
from memory.session import build_session_keys
from memory.text import BM25, terms
from staging import embeddings as vectors
from staging.memory import MemoryGraph

KS = {"locomo": (5, 10, 20), "longmemeval": (1, 3, 5, 10)}
RRF_K = 60


@dataclass
class Baselines:
    """Flat indexes over the plain turns (no cues, no expansion)."""

    bm25: BM25

    @classmethod
    def build(cls, index: MemoryIndex, plain_keys: list[str]) -> Baselines:
        return cls(BM25.build([terms(k) for k in plain_keys]))


def _order(scores: Array, mask: Array, index: MemoryIndex) -> Array:
    candidates = np.flatnonzero(mask)
    return candidates[np.lexsort((index.seq[candidates], -scores[candidates]))]


def _rrf(orders: list[Array], size: int) -> Array:
    fused = np.zeros(size, dtype=np.float64)
    for order in orders:
        fused[order] += 1.0 / (RRF_K + np.arange(1, len(order) + 1))
    return fused


def question_metrics(benchmark: str, index: MemoryIndex, order: Array, question: Question) -> dict[str, float]:
    ks = KS[benchmark]
    if benchmark == "locomo":
        ranked = [index.ids[m] for i in order[: max(ks)] for m in index.group.get(int(i), [int(i)])]
        return {f"evidence_recall@{k}": metrics.evidence_recall(ranked, question.gold, k) for k in ks}
    sessions = metrics.sessions_in_order([index.conversation_ids[int(index.conversation[i])] for i in order])
    found: dict[str, float] = {}
    for k in ks:
        found[f"recall_any@{k}"] = metrics.recall_any(sessions, question.gold, k)
        found[f"recall_all@{k}"] = metrics.recall_all(sessions, question.gold, k)
        found[f"ndcg@{k}"] = metrics.ndcg(sessions, question.gold, k)
    return found


def _summarise(rows: list[tuple[str, dict[str, float]]], latencies: list[float], tokens: list[int]) -> dict[str, Any]:
    total: dict[str, list[float]] = defaultdict(list)
    by_category: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for category, values in rows:
        for name, value in values.items():
            total[name].append(value)
            by_category[category][name].append(value)
    out: dict[str, Any] = {name: round(float(np.mean(v)), 4) for name, v in sorted(total.items())}
    out["questions"] = len(rows)
    out["latency_p50_ms"] = round(metrics.percentile(latencies, 50), 2)
    out["latency_p95_ms"] = round(metrics.percentile(latencies, 95), 2)
    out["context_tokens_mean"] = round(float(np.mean(tokens)), 1) if tokens else 0.0
    out["categories"] = {
        c: {"questions": len(next(iter(v.values()))), **{n: round(float(np.mean(x)), 4) for n, x in sorted(v.items())}}
        for c, v in sorted(by_category.items())
    }
    return out


def evaluate(
    benchmark: Benchmark,
    index: MemoryIndex,
    embedder: Embedder,
    settings: RecallSettings,
    plain_keys: list[str],
    *,
    flat_embedder: Embedder,
    flat_dense: Array,
    budget_tokens: int,
    ablations: dict[str, tuple[MemoryIndex, RecallSettings, Switches]] | None = None,
) -> dict[str, Any]:
    """All methods over all questions: {"system": {...}, "bm25": {...}, "dense": {...}, "rrf": {...}, ...}."""
    flat = Baselines.build(index, plain_keys)
    asked = [q.question for q in benchmark.questions]
    vectors = embedder.embed([index.names.query_text(q) for q in asked]) if asked else None  # as recall does
    flat_vectors = flat_embedder.embed(asked) if asked else None
    methods: dict[str, Callable[[Question, Array], tuple[Array, int]]] = {}

    def system(variant: MemoryIndex, config: RecallSettings, switches: Switches) -> Callable[..., tuple[Array, int]]:
        def run(question: Question, vector: Array) -> tuple[Array, int]:
            request = _request(question, budget_tokens)
            # what a recall does (memory.candidates: the pre-pass on a large scope, else every candidate scored)
            meant = vector if has_meaning(embedder, question.question) else None  # as recall does (embed_query)
            view, ranking, keep = ranked(variant, question.question, meant, request, config, switches)
            result = to_result(view, request, ranking, config)
            return (ranking.order if keep is None else keep[ranking.order]), result.tokens

        return run

    methods["system"] = system(index, settings, Switches())
    for name, (variant, config, switches) in (ablations or {}).items():
        methods[name] = system(variant, config, switches)

    def flat_orders(question: Question, vector: Array, flat_vector: Array) -> dict[str, tuple[Array, float]]:
        """Each baseline's ranking and its own time (ms): a fusion's time includes the rankings it fuses."""
        request = _request(question, budget_tokens)
        clock = time.perf_counter
        started = clock()
        mask = candidate_mask(index, request, request.at.timestamp() if request.at else None)
        masking = clock() - started
        started = clock()
        lexical = _order(flat.bm25.score(terms(question.question)), mask, index)
        lexical_s = masking + clock() - started
        started = clock()
        dense = _order(flat_dense @ flat_vector, mask, index)
        dense_s = masking + clock() - started
        started = clock()
        keys = _order(index.dense @ vector, mask, index)
        keys_s = masking + clock() - started
        started = clock()
        rrf = _order(_rrf([lexical, dense], index.size), mask, index)
        rrf_s = lexical_s + dense_s - masking + clock() - started
        started = clock()
        rrf_keys = _order(_rrf([lexical, keys], index.size), mask, index)
        rrf_keys_s = lexical_s + keys_s - masking + clock() - started
        return {
            "bm25": (lexical, lexical_s * 1000),
            "dense": (dense, dense_s * 1000),
            "rrf": (rrf, rrf_s * 1000),
            "dense_keys": (keys, keys_s * 1000),
            "rrf_keys": (rrf_keys, rrf_keys_s * 1000),
        }

    results: dict[str, Any] = {}
    rows: dict[str, list[tuple[str, dict[str, float]]]] = defaultdict(list)
    latency: dict[str, list[float]] = defaultdict(list)
    tokens: dict[str, list[int]] = defaultdict(list)
    for number, question in enumerate(benchmark.questions):
        assert vectors is not None and flat_vectors is not None
        vector = vectors[number]
        for name, method in methods.items():
            started = time.perf_counter()
            order, used = method(question, vector)
            latency[name].append((time.perf_counter() - started) * 1000)
            tokens[name].append(used)
            rows[name].append((question.category, question_metrics(benchmark.name, index, order, question)))
        for name, (order, elapsed) in flat_orders(question, vector, flat_vectors[number]).items():
            latency[name].append(elapsed)
            tokens[name].append(int(index.tokens[order[:10]].sum()))
            rows[name].append((question.category, question_metrics(benchmark.name, index, order, question)))
    for name in [*methods, "bm25", "dense", "rrf", "dense_keys", "rrf_keys"]:
        results[name] = _summarise(rows[name], latency[name], tokens[name])
    return results


def _request(question: Question, budget_tokens: int) -> RecallRequest:
    return RecallRequest(
        query=question.question,
        at=question.at,
        budget_tokens=budget_tokens,
        scope=RecallScope(conversation_ids=question.conversation_ids),
        max_pieces=200,
    )


def flat_vectors(staging: Any, index: MemoryIndex, embedder: Embedder) -> Array:
    """The embed stage's message vectors (the default embedder) in index order; zero rows where none."""
    out = np.zeros((index.size, embedder.dim), dtype=np.float32)
    found, matrix = vectors.item_matrix(staging, "message", embedder.key, index.ids)
    if found:
        out[[index.position[c] for c in found]] = matrix
    return out


def plain_keys(index: MemoryIndex, graph: MemoryGraph) -> list[str]:
    """Each message as a flat retriever sees it: who said it and what, without cue names."""
    rows = {c.content_id: c for c in graph.content if c.kind == "message"}
    return [f"{speaker(rows[c].role, rows[c].author)}: {index.texts.get(c, '')}" for c in index.ids]


def without_consolidation(index: MemoryIndex) -> MemoryIndex:
    return replace(index, head=np.arange(index.size, dtype=np.int64), group={})


def ablations(
    index: MemoryIndex, plain: list[str], settings: RecallSettings
) -> dict[str, tuple[MemoryIndex, RecallSettings, Switches]]:
    """The system with one part taken out at a time (same memory, same questions)."""
    roles = [index.roles[int(r)] for r in index.role_code]
    sessions = build_session_keys(
        plain, roles, index.conversation, len(index.conversation_ids), index.dense, settings.key_roles
    )
    unexpanded = replace(index, bm25=BM25.build([terms(k) for k in plain]), sessions=sessions)
    return {
        "no_cues": (index, settings, Switches(cues=False)),
        "no_tags_session_prior": (index, settings, Switches(tags=False)),
        "no_session_keys": (index, settings, Switches(session_keys=False)),
        "no_session_best_turns": (index, settings.model_copy(update={"session_best_weight": 0.0}), Switches()),
        "session_max_pooling": (index, settings.model_copy(update={"session_best_turns": 1}), Switches()),
        "no_decay": (index, settings, Switches(decay=False)),
        "no_time_filter": (index, settings, Switches(time_filter=False)),
        "no_key_expansion": (unexpanded, settings, Switches()),
        "no_consolidation": (without_consolidation(index), settings, Switches()),
        "no_next_prev": (index, settings.model_copy(update={"next_weight": 0.0, "reply_weight": 0.0}), Switches()),
        "no_reply_link": (index, settings.model_copy(update={"reply_weight": 0.0}), Switches()),
        "no_second_hop": (index, settings, Switches(second_hop=False)),
        "no_speaker_tags": (index, settings, Switches(speakers=False)),
        "no_hub_control": (replace(index, cue_hub=np.zeros_like(index.cue_hub)), settings, Switches()),
        "no_dense": (index, settings, Switches(dense=False)),
        "no_lexical": (index, settings, Switches(lexical=False)),
        "no_garden_facts": (index, settings, Switches(facts=False)),
    }
