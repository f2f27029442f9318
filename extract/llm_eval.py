"""The reasoning-effort experiment: run the LLM extractor N times over the same segments and measure it.

    evaluate(settings, segments, repeat) -> EvalReport

- schema adherence: share of replies that met the contract as they came, before the mapper touched them;
- determinism: mean Jaccard similarity of the sets of normalised concept titles between every pair of repeats,
  per segment (1.0: every repeat named the same concepts), and the share of segments whose raw replies were
  identical across all repeats;
- evidence validity: share of the evidence spans in the replies that the mapper kept (cited message in the
  segment, text found in it);
- tokens per segment (prompt, completion, reasoning) and latency per call;
- mapper corrections: decisions per reply, by rule (type_synonym, evidence_text_not_in_message, ...).

Nothing is written to staging: this measures a model and a prompt, it does not build the memory.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from itertools import combinations
from typing import Any

import polars as pl

from contracts.settings import LLMSettings
from extract.llm import LLMExtractionOutput, LLMExtractor, SegmentNotDone
from extract.text import name_key
from extract.types import ExtractionFailure, ExtractionOutput, SegmentInput
from staging.llm_calls import LLMCall


@dataclass
class EvalReport:
    model: str
    effort: str | None
    api: str
    structured_output: str
    repeat: int
    segments: int
    replies: int  # replies that came back (not transport errors, not skipped for the budget)
    failures: dict[str, int]  # by kind: refused, invalid_json, schema_violation, error, not_done
    schema_adherence: float
    determinism_jaccard: float
    identical_replies: float
    evidence_validity: float | None  # None: the replies cited no evidence at all
    evidence_spans_raw: int
    evidence_spans_kept: int
    hypotheses_raw_per_segment: float
    hypotheses_kept_per_segment: float
    tokens_per_segment: dict[str, float]
    latency_s_mean: float
    mapper_corrections_per_reply: float
    mapper_rules: dict[str, int]
    wall_s: float
    examples: list[dict[str, Any]] = field(default_factory=list)  # a few failures, to look at
    samples: list[dict[str, Any]] = field(default_factory=list)  # first repeat, a few segments: proposed vs kept

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def jaccard(a: set[str], b: set[str]) -> float:
    return 1.0 if not a and not b else len(a & b) / len(a | b)


def raw_counts(raw_text: str | None) -> tuple[int, int]:
    """(hypotheses, evidence spans) in a raw reply, however off-contract it is."""
    try:
        raw = json.loads(raw_text or "")
    except ValueError:
        return 0, 0
    items = raw.get("hypotheses") if isinstance(raw, dict) else raw
    if not isinstance(items, list):
        return 0, 0
    spans = sum(
        len(h["evidence_spans"]) for h in items if isinstance(h, dict) and isinstance(h.get("evidence_spans"), list)
    )
    return len(items), spans


def evaluate(settings: LLMSettings, segments: Sequence[SegmentInput], repeat: int) -> EvalReport:
    """Extract every segment `repeat` times with one extractor (one budget) and measure the runs."""
    started = time.monotonic()
    calls: list[LLMCall] = []
    extractor = LLMExtractor(settings, on_call=calls.append)
    runs: list[dict[str, ExtractionOutput | ExtractionFailure]] = []
    for _ in range(repeat):
        runs.append({s.segment_id: r for s, r in extractor.extract_many(segments)})
    results = result_frame(runs)
    replied = results.filter(pl.col("replied"))
    outputs = results.filter(pl.col("kind") == "ok")
    rules = decision_frame(runs)
    spans_raw = int(replied["raw_spans"].sum())
    spans_kept = int(outputs["kept_spans"].sum())
    per_segment = results.group_by("segment_id").agg(
        pl.col("titles").filter(pl.col("kind") == "ok").alias("title_sets"),
        (pl.col("raw_response").n_unique() == 1).alias("one_text"),
        pl.len().alias("results"),
    )
    pair_scores = [
        jaccard(set(a), set(b)) for sets in per_segment["title_sets"].to_list() for a, b in combinations(sets, 2)
    ]
    identical = per_segment.filter(pl.col("one_text") & (pl.col("results") == repeat)).height
    call_frame = pl.DataFrame(
        [(c.prompt_tokens, c.completion_tokens, c.reasoning_tokens, c.latency_s) for c in calls],
        schema={"prompt": pl.Int64, "completion": pl.Int64, "reasoning": pl.Int64, "latency_s": pl.Float64},
        orient="row",
    )
    n_calls = max(1, results.filter(pl.col("kind") != "not_done").height)
    tokens = {name: float(call_frame[name].sum()) / n_calls for name in ("prompt", "completion", "reasoning")}
    failures = results.filter(pl.col("kind") != "ok").group_by("kind").len().sort("kind")
    examples = [
        {"segment_id": sid, "reason": r.reason[:300], "raw": (r.raw_response or "")[:300]}
        for run in runs
        for sid, r in run.items()
        if isinstance(r, ExtractionFailure) and not isinstance(r, SegmentNotDone)
    ][:5]
    samples = [
        _sample(segment, runs[0][segment.segment_id])
        for segment in segments[:5]
        if runs and segment.segment_id in runs[0]
    ]
    total = max(1, len(segments) * repeat)
    return EvalReport(
        model=settings.model,
        effort=settings.reasoning_effort,
        api=settings.api,
        structured_output=settings.structured_output,
        repeat=repeat,
        segments=len(segments),
        replies=replied.height,
        failures=dict(zip(failures["kind"].to_list(), failures["len"].to_list(), strict=True)),
        schema_adherence=round(int(outputs["contract_ok"].sum()) / max(1, replied.height), 4),
        determinism_jaccard=round(sum(pair_scores) / len(pair_scores), 4) if pair_scores else 1.0,
        identical_replies=round(identical / max(1, len(segments)), 4),
        evidence_validity=round(spans_kept / spans_raw, 4) if spans_raw else None,
        evidence_spans_raw=spans_raw,
        evidence_spans_kept=spans_kept,
        hypotheses_raw_per_segment=round(int(replied["raw_hypotheses"].sum()) / total, 3),
        hypotheses_kept_per_segment=round(int(outputs["kept_hypotheses"].sum()) / total, 3),
        tokens_per_segment={k: round(v, 1) for k, v in tokens.items()},
        latency_s_mean=round(call_frame.select(pl.col("latency_s").mean().fill_null(0.0)).item(), 3),
        mapper_corrections_per_reply=round(rules.height / max(1, outputs.height), 3),
        mapper_rules=dict(rules.group_by("rule").len().sort(["len", "rule"], descending=[True, False]).iter_rows()),
        wall_s=round(time.monotonic() - started, 2),
        examples=examples,
        samples=samples,
    )


RESULT_SCHEMA = pl.Schema(
    {
        "repeat": pl.Int64(),
        "segment_id": pl.String(),
        "kind": pl.String(),  # ok, or the failure kind (refused, invalid_json, schema_violation, error, not_done)
        "replied": pl.Boolean(),  # a reply came back (not a transport error, not stopped by the budget)
        "contract_ok": pl.Boolean(),
        "raw_response": pl.String(),
        "raw_hypotheses": pl.Int64(),
        "raw_spans": pl.Int64(),
        "kept_hypotheses": pl.Int64(),
        "kept_spans": pl.Int64(),
        "titles": pl.List(pl.String()),  # normalised titles kept (name_key)
    }
)


def result_frame(runs: Sequence[dict[str, ExtractionOutput | ExtractionFailure]]) -> pl.DataFrame:
    """One row per (repeat, segment): what came back and what the mapper kept of it."""
    rows = []
    for number, run in enumerate(runs):
        for segment_id, result in run.items():
            kind = _failure_kind(result)
            raw_hypotheses, raw_spans = raw_counts(result.raw_response)
            hypotheses = result.hypotheses if isinstance(result, ExtractionOutput) else []
            rows.append(
                (
                    number,
                    segment_id,
                    kind,
                    result.raw_response is not None and kind != "error",
                    isinstance(result, LLMExtractionOutput) and result.contract_ok,
                    result.raw_response,
                    raw_hypotheses,
                    raw_spans,
                    len(hypotheses),
                    sum(len(h.evidence_spans) for h in hypotheses),
                    sorted({name_key(h.title) for h in hypotheses}),
                )
            )
    return pl.DataFrame(rows, schema=RESULT_SCHEMA, orient="row")


def decision_frame(runs: Sequence[dict[str, ExtractionOutput | ExtractionFailure]]) -> pl.DataFrame:
    """One row per mapper decision of every reply that met (or was mapped onto) the contract."""
    rules = [d.rule for run in runs for r in run.values() if isinstance(r, LLMExtractionOutput) for d in r.decisions]
    return pl.DataFrame({"rule": rules}, schema={"rule": pl.String})


def _sample(segment: SegmentInput, result: ExtractionOutput | ExtractionFailure) -> dict[str, Any]:
    """What the model proposed for one segment, what the mapper kept, and the rules it applied."""
    proposed: list[str] = []
    try:
        raw = json.loads(result.raw_response or "")
        items = raw.get("hypotheses") if isinstance(raw, dict) else raw
        for item in items if isinstance(items, list) else []:
            if isinstance(item, dict):
                proposed.append(f"{item.get('title')!s} ({item.get('type')!s})")
    except ValueError:
        pass
    kept = [f"{h.title} ({h.type}, {len(h.evidence_spans)} spans)" for h in getattr(result, "hypotheses", [])]
    rules = Counter(d.rule for d in result.decisions) if isinstance(result, LLMExtractionOutput) else Counter()
    return {
        "segment_id": segment.segment_id,
        "messages": len(segment.messages),
        "proposed": proposed,
        "kept": kept,
        "mapper_rules": dict(rules.most_common()),
        "failure": result.reason if isinstance(result, ExtractionFailure) else None,
    }


def _failure_kind(result: ExtractionOutput | ExtractionFailure) -> str:
    if isinstance(result, SegmentNotDone):
        return "not_done"
    if not isinstance(result, ExtractionFailure):
        return "ok"
    for prefix, kind in (
        ("refusal", "refused"),
        ("invalid JSON", "invalid_json"),
        ("schema violation", "schema_violation"),
    ):
        if result.reason.startswith(prefix):
            return kind
    return "error"
