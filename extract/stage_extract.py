"""The extract stage: every current segment -> ConceptHypothesis objects, through the semantic mapper, cached.

The steps (the runner, flows/stage_runner.py, keeps the ledger): read the current segments (staging) with their
messages (archive); compute: for each batch, look up the cache (key = segment content_hash +
extractor.cache_key_parts), hand only the uncached segments to `extractor.extract_many`, and pass every output
through `extract.mapper`; validate (the mapper returns contract objects only); write each batch in one
transaction (extractions, mapper decisions, the current extraction per segment); return the counts, tokens per
1k messages included (and an error when segments failed: the runner records the stage failed, with its counts).

Which extractor: the offline one unless `settings.extract.llm` is set; then `extract.llm.LLMExtractor` is
imported lazily and built as `LLMExtractor(settings.extract.llm, known_concepts=..., on_call=
staging.llm_calls.recorder(staging, run_id))`. Tests pass `extractor=`.

What the stage stores as mapper decisions: an output that carries its own `decisions` (the LLM extractor's,
made by `map_raw_hypotheses` with the same known concepts) is stored as it is; any other output is mapped
here, from `raw_response` when that is JSON (a model's own answer, so "Project" can still be mapped), else
from the `hypotheses` given (the offline extractor's).
"""

from __future__ import annotations

import importlib
import json
import logging
import sqlite3
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from itertools import chain, islice
from typing import Any, cast

from clients.batches import MapBatches, ahead_of, split
from clients.gc_pace import fewer_collections
from clients.stage import Outcome, StageContext
from contracts.concepts import ConceptHypothesis
from contracts.errors import ConfigError
from contracts.redact import redact_uri
from contracts.settings import Settings
from extract import offline, prompts
from extract.batch_job import ExtractJob
from extract.batch_job import Outcome as BatchOutcome
from extract.mapper import REJECT_RULES, KnownNames, MapperDecision, map_raw_hypotheses
from extract.offline import OfflineExtractor
from extract.types import (
    ExtractionFailure,
    ExtractionOutput,
    Extractor,
    SegmentInput,
    SegmentMessage,
    SegmentNotDone,
)
from staging import concepts as concept_store
from staging import extractions as store
from staging import segments as segment_store

log = logging.getLogger(__name__)
LOGGED_FAILURES = 5  # failed segments logged at WARNING per run; the rest at INFO (the stage error has the count)

STAGE = "extract"
AHEAD = 2  # stage batches handed to the workers before the one being written: both cores stay busy
# A local run with fewer segments to read than this extracts them in its own process: starting the worker
# processes (imports, the lexicon and the job's concept names in each) costs ~2.4 CPU-s per worker, what the
# offline extractor takes for ~350 segments; a scheduled day's run at 250k messages reads ~100.
IN_PROCESS_BELOW = 300


def make_extractor(
    settings: Settings, staging: sqlite3.Connection, run_id: str, known_concepts: Mapping[str, str] | None = None
) -> Extractor:
    """The offline extractor, or the LLM one when an endpoint is configured (ConfigError if it cannot load)."""
    llm = settings.extract.llm
    if llm is None:
        return OfflineExtractor(settings.extract.offline_max_concepts)
    try:
        module = importlib.import_module("extract.llm")
        from staging.llm_calls import recorder
    except ImportError as exc:
        raise ConfigError(
            f"extract.llm is configured (model {llm.model!r}) but the LLM extractor cannot be loaded ({exc});"
            " unset CHATMEM_EXTRACT__LLM__* to use the offline extractor"
        ) from exc
    extractor = module.LLMExtractor(llm, known_concepts=known_concepts or {}, on_call=recorder(staging, run_id))
    return cast(Extractor, extractor)


def announce(extractor: Extractor, settings: Settings) -> str:
    if extractor.name == "offline":
        return (
            "extractor: offline (deterministic keyphrase rules, no model); set CHATMEM_EXTRACT__LLM__MODEL and"
            " CHATMEM_EXTRACT__LLM__BASE_URL to use an LLM"
        )
    llm = settings.extract.llm
    where = f"{llm.model} at {redact_uri(llm.base_url) or 'the default endpoint'}" if llm is not None else "injected"
    return f"extractor: {extractor.name} ({where})"


def run(ctx: StageContext, *, extractor: Extractor | None = None) -> Outcome:
    """Extract every current segment that has no cached extraction under the extractor's cache key (`_run`), with
    the garbage collector paced for a stage that makes millions of short-lived objects (clients/gc_pace.py)."""
    with fewer_collections():
        return _run(ctx, extractor)


def _run(ctx: StageContext, extractor: Extractor | None) -> Outcome:
    """Extract every current segment that has no cached extraction under the extractor's cache key.

    With `ctx.map_batches` (the Dask runner, or local worker processes for the offline extractor) the uncached
    segments of each batch go out as tasks of runner.extract_batch segments (extract/batch_job.py), mapped
    there too, and their results are written in segment order; without it they go through
    `extractor.extract_many` here, as they come back."""
    archive, staging, run_id, settings = ctx.archive, ctx.staging, ctx.run_id, ctx.settings
    known = KnownNames(concept_store.name_index(staging))  # folded once for the whole run, not per segment
    extractor = extractor or make_extractor(settings, staging, run_id, known)
    parts = tuple(extractor.cache_key_parts)
    ledger_note = announce(extractor, settings)
    log.info("extract - %s", ledger_note)
    counts: Counter[str] = Counter()
    # Only the segments whose current extraction is not already this extractor's of their present content: on a
    # day's run the others (all but the new and changed ones) would only be read to find them cached.
    total = segment_store.count_current(staging)
    segments = segment_store.iter_current_segments(staging, unless_extracted_as=store.stored_parts(parts))
    first = list(islice(segments, settings.extract.batch_size))
    map_batches = ctx.map_batches
    # Local worker processes serve the offline extractor only (an LLM extractor waits on its endpoint, already
    # concurrently: threads), and only when the first batch is not all there is or is not small.
    small = len(first) < min(IN_PROCESS_BELOW, settings.extract.batch_size)
    if map_batches is not None and not settings.runner.distributed and (extractor.name != "offline" or small):
        map_batches = None
    spread = None if map_batches is None else Spread(map_batches, ExtractJob(settings.extract, known, parts), settings)
    rest = iter(lambda: list(islice(segments, settings.extract.batch_size)), [])
    batches = chain([first] if first else [], rest)
    started = (_start(archive, staging, extractor, parts, batch, counts, spread) for batch in batches)
    # With workers, the next batches are in their hands while this process maps and writes the current one;
    # still written in segment order. (No segment's cache key can be in two batches of one run: the key
    # starts with the segment's content hash, which covers its message ids.)
    # An LLM extractor's budget is checked as a batch starts: it is never started ahead of the writes.
    ahead = AHEAD if spread is not None and getattr(extractor, "budget", None) is None else 0
    for work in ahead_of(started, ahead):
        _write(staging, run_id, extractor, parts, known, work, counts)
    counts["segments_cached"] += total - counts["segments"]  # current already: not read
    counts["segments"] = total
    counts["segments_dropped"] = store.drop_retired(staging)
    # what no current segment would read again: other rules' or prompts' extractions, retired segments' (docs/runs.md)
    counts["extractions_pruned"] = store.prune(staging, (parts, offline.VERSION_PARTS, prompts.VERSION_PARTS))
    tokens = counts["prompt_tokens"] + counts["completion_tokens"]
    counts["tokens_per_1k_messages"] = round(tokens * 1000 / counts["messages_sent"]) if counts["messages_sent"] else 0
    for name in ("extractor_calls", "extracted", "failed", "not_returned", "hypotheses_kept", "mapper_decisions"):
        counts.setdefault(name, 0)
    notes = [ledger_note]
    left = counts["failed"] + counts["not_returned"] + counts["not_done"]
    if left:
        notes.append(f"{left} segment(s) not extracted (failed or budget reached); re-run to retry them: {ctx.rerun}")
    # Segments failed: written all the rest; the stage is no success to skip over: the next run retries them.
    error = _failed_message(staging, run_id, counts["failed"], counts["segments"]) if counts["failed"] else None
    return Outcome(
        rows_in=counts["segments"],
        rows_out=counts["extracted"] + counts["failed"] + counts["not_done"],
        counts=dict(counts),
        notes=notes,
        skipped=counts["extractor_calls"] == 0 and counts["current_changed"] == 0,
        error=error,
        unfinished=bool(counts["not_returned"] or counts["not_done"]),  # a budget: the next run goes on
    )


def _failed_message(staging: sqlite3.Connection, run_id: str, failed: int, segments: int) -> str:
    """`3 segments failed of 10 (2 HTTP 401: ...; 1 ...)`: how many, and the commonest reasons as recorded."""
    reasons = staging.execute(
        "SELECT reason, COUNT(*) AS n FROM extractions WHERE run_id = ? AND status = 'failed'"
        " GROUP BY reason ORDER BY n DESC, reason LIMIT 3",
        (run_id,),
    ).fetchall()
    said = "; ".join(f"{n} {str(reason or 'no reason')[:160]}" for reason, n in reasons)
    noun = "segment" if failed == 1 else "segments"
    return f"{failed} {noun} failed of {segments}" + (f" ({said})" if said else "")


@dataclass(slots=True)
class _Started:
    """A batch whose uncached segments are being extracted (lazily in-process, or already on workers)."""

    batch: list[segment_store.SegmentRow]
    keys: dict[str, str]  # segment_id -> cache key
    done: set[str]  # segments with a successful extraction (cached ones so far)
    inputs: int
    results: Iterable[tuple[SegmentInput, ExtractionOutput | ExtractionFailure]]


def _start(
    archive: sqlite3.Connection,
    staging: sqlite3.Connection,
    extractor: Extractor,
    parts: tuple[str, ...],
    batch: list[segment_store.SegmentRow],
    counts: Counter[str],
    spread: Spread | None,
) -> _Started:
    keys = {s.segment_id: store.cache_key(s.content_hash, parts) for s in batch}
    cached = store.cached_ok(staging, keys.values())
    todo = [s for s in batch if keys[s.segment_id] not in cached]
    counts["segments"] += len(batch)
    counts["segments_cached"] += len(batch) - len(todo)
    done = {s.segment_id for s in batch if keys[s.segment_id] in cached}
    inputs = _inputs(archive, todo) if todo else []
    counts["extractor_calls"] += len(inputs)
    if not inputs:
        results: Iterable[tuple[SegmentInput, ExtractionOutput | ExtractionFailure]] = ()
    else:
        results = extractor.extract_many(inputs) if spread is None else spread.extract(extractor, inputs)
    return _Started(batch, keys, done, len(inputs), results)


def _write(
    staging: sqlite3.Connection,
    run_id: str,
    extractor: Extractor,
    parts: tuple[str, ...],
    known: KnownNames,
    work: _Started,
    counts: Counter[str],
) -> None:
    rows: list[store.ExtractionRow] = []
    for segment, output in work.results:
        row = _row(segment, output, extractor.name, parts, work.keys[segment.segment_id], known, counts)
        rows.append(row)
        if row.status == "ok":
            work.done.add(segment.segment_id)
        counts["messages_sent"] += len(segment.messages)
    counts["not_returned"] += work.inputs - len(rows)
    current = [(s.segment_id, work.keys[s.segment_id]) for s in work.batch if s.segment_id in work.done]
    counts["current_changed"] += store.write_batch(staging, run_id, rows, current)


class Spread:
    """The extract batches' uncached segments as tasks on another runner, results back in segment order."""

    def __init__(self, map_batches: MapBatches, job: ExtractJob, settings: Settings) -> None:
        self.map_batches, self.job, self.size = map_batches, job, settings.runner.extract_batch

    def extract(
        self, extractor: Extractor, inputs: Sequence[SegmentInput]
    ) -> Iterator[tuple[SegmentInput, ExtractionOutput | ExtractionFailure]]:
        """Each segment's result; an LLM extractor records each attempt and spends it against its budget here,
        on the stage's thread, and learns there that the endpoint refused the key. Both are checked once per
        stage batch (all of its tasks are in flight at once), so a run may overshoot the budget by up to
        extract.batch_size segments; after a refused key, each worker process sends no more than its
        max_concurrency requests (clients.llm.REFUSED) and the stage's next batches none."""
        halted = getattr(extractor, "halted", None)
        stopped = halted() if halted is not None else None
        if stopped:
            reason = extractor.not_done_reason(stopped)  # type: ignore[attr-defined]  # the LLM extractor's
            return iter([(segment, SegmentNotDone(reason=reason)) for segment in inputs])
        batches = split(inputs, self.size)
        return self._results(extractor, batches, self.map_batches(self.job, batches))  # submitted now

    @staticmethod
    def _results(
        extractor: Extractor, batches: list[Sequence[SegmentInput]], outcomes: Iterator[list[BatchOutcome]]
    ) -> Iterator[tuple[SegmentInput, ExtractionOutput | ExtractionFailure]]:
        finish = getattr(extractor, "finish", None)
        for batch, outcome in zip(batches, outcomes, strict=True):
            for segment, (result, attempts) in zip(batch, outcome, strict=True):
                yield segment, finish(segment, result, attempts) if finish is not None else result


def _inputs(archive: sqlite3.Connection, segments: Sequence[segment_store.SegmentRow]) -> list[SegmentInput]:
    found = segment_store.messages_by_id(archive, (m for s in segments for m in s.message_ids))
    inputs = []
    for s in segments:
        rows = [found[m] for m in s.message_ids if m in found]
        messages = tuple(
            SegmentMessage(str(r["uuid"]), str(r["role"]), str(r["text"]), _time(r["created_at"])) for r in rows
        )
        title = rows[0]["title"] if rows else None
        inputs.append(SegmentInput(s.segment_id, s.conversation_id, title, messages, s.content_hash))
    return inputs


def _time(value: str | None) -> datetime | None:
    return None if value is None else datetime.fromisoformat(value)


def _row(
    segment: SegmentInput,
    output: ExtractionOutput | ExtractionFailure,
    extractor: str,
    parts: tuple[str, ...],
    key: str,
    known: Mapping[str, str],
    counts: Counter[str],
) -> store.ExtractionRow:
    usage = output.usage
    counts["prompt_tokens"] += usage.prompt_tokens
    counts["completion_tokens"] += usage.completion_tokens
    counts["reasoning_tokens"] += usage.reasoning_tokens
    base: dict[str, Any] = {
        "cache_key": key,
        "content_hash": segment.content_hash,
        "extractor": extractor,
        "key_parts": parts,
        "segment_id": segment.segment_id,
        "raw_response": output.raw_response,
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "reasoning_tokens": usage.reasoning_tokens,
    }
    if isinstance(output, SegmentNotDone):  # left for the next run (a budget): a failed row, retried, no failure
        counts["not_done"] += 1
        return store.ExtractionRow(status="failed", hypotheses=None, reason=output.reason, **base)
    if isinstance(output, ExtractionFailure):
        counts["failed"] += 1
        # The first few at WARNING; the rest at INFO (-v): the stage's error counts them all, with their reasons
        if counts["failed"] == LOGGED_FAILURES + 1:
            log.warning("extract - more segments failed: each is logged with -v only")
        level = logging.WARNING if counts["failed"] <= LOGGED_FAILURES else logging.INFO
        log.log(level, "extract - segment %s failed: %s", segment.segment_id, output.reason)
        return store.ExtractionRow(status="failed", hypotheses=None, reason=output.reason, **base)
    given = getattr(output, "decisions", None)
    if isinstance(given, list):
        hypotheses, decisions = output.hypotheses, cast(list[MapperDecision], given)
    else:
        hypotheses, decisions = map_raw_hypotheses(_raw(output), segment, known)
    decisions = decisions + cast(list[MapperDecision], getattr(output, "fact_decisions", []))
    counts["facts_kept"] += len(output.facts)
    rejected = sum(d.rule in REJECT_RULES for d in decisions)
    counts["extracted"] += 1
    counts["hypotheses_kept"] += len(hypotheses)
    counts["hypotheses_rejected"] += rejected
    counts["mapper_decisions"] += len(decisions)
    return store.ExtractionRow(
        status="ok",
        hypotheses=json.dumps([h.model_dump(mode="json") for h in hypotheses], ensure_ascii=False),
        hypotheses_proposed=len(hypotheses) + rejected,
        hypotheses_kept=len(hypotheses),
        decisions=[(d.hypothesis, d.field, d.rule, d.before, d.after) for d in decisions],
        facts=[f.model_dump(mode="json") for f in output.facts],
        **base,
    )


def _raw(output: ExtractionOutput) -> object:
    """The model's own JSON when there is one (mapped from scratch), else the hypotheses the extractor gave."""
    if output.raw_response is not None:
        try:
            return json.loads(output.raw_response)
        except ValueError:
            pass
    return {"hypotheses": [h.model_dump(mode="json") for h in output.hypotheses]}


def parse_hypotheses(text: str) -> list[ConceptHypothesis]:
    """The stored JSON list of an extraction, back as contract objects."""
    return [ConceptHypothesis.model_validate(item) for item in json.loads(text)]
