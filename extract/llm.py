"""The LLM extractor: segments in, concept hypotheses out, through any OpenAI-compatible endpoint.

    LLMExtractor.extract_many(segments)
      ├─ per segment, in a bounded thread pool: build_messages → build_request → send, retried while
      │  is_transient(error) says so → raw text → JSON → semantic mapper → ExtractionOutput | ExtractionFailure
      ├─ every attempt becomes an LLMCall handed to `on_call` (on the iterating thread: safe for sqlite3)
      └─ token / cost budget: once spent, no new call starts; the segments left are yielded as SegmentNotDone

Failures are per segment and say why: a refusal, invalid JSON, a reply the mapper cannot turn into the contract
(raw text kept), a non-transient API error, or retries exhausted. A bug of ours is not caught: it propagates.
With `batch_api` the segments go to the OpenAI Batch API instead (extract/llm_batch.py).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any

import openai
from pydantic import ValidationError

from clients.llm import (
    REFUSED,
    KeyRefused,
    MalformedReply,
    Reply,
    Usage,
    describe,
    endpoint,
    is_key_refusal,
    is_transient,
    make_client,
    refused_key,
    retry_delay,
    send,
)
from clients.retry import retrying
from contracts.concepts import SCHEMA_VERSION, ConceptHypothesis, ExtractionResponse
from contracts.errors import ConfigError
from contracts.redact import redact_uri
from contracts.settings import LLMSettings
from extract.fact_mapper import map_raw_facts
from extract.llm_request import build_request
from extract.mapper import MapperDecision, map_raw_hypotheses
from extract.prompts import PROMPT_VERSION, RESPONSE_NAME, VERSION_PARTS, build_messages
from extract.types import ExtractionFailure, ExtractionOutput, SegmentInput
from extract.types import SegmentNotDone as SegmentNotDone  # re-exported: callers import it from here
from staging.extractions import cache_key as extraction_cache_key
from staging.llm_calls import CallRecorder, CallStatus, LLMCall

log = logging.getLogger(__name__)

Result = ExtractionOutput | ExtractionFailure
# extract.mapper.map_raw_hypotheses: raw JSON, segment, known names -> (hypotheses, decisions)
MapRaw = Callable[[Any, SegmentInput, Mapping[str, str] | None], tuple[list[ConceptHypothesis], list[MapperDecision]]]


@dataclass(slots=True)
class LLMExtractionOutput(ExtractionOutput):
    """ExtractionOutput plus what the semantic mapper did to the raw answer, for the stage to stage and the eval
    harness to count: `decisions` (one per change, drop or rejection) and whether the raw answer already met
    the contract before any mapping (`contract_ok`, schema adherence)."""

    decisions: list[MapperDecision] = field(default_factory=list)
    contract_ok: bool = True
    fact_decisions: list[MapperDecision] = field(default_factory=list)  # extract.fact_mapper's, stored beside


class Budget:
    """Tokens and dollars spent so far, and whether the next call may start. Used from one thread only."""

    def __init__(self, settings: LLMSettings) -> None:
        if settings.cost_budget_usd is not None and (
            settings.input_usd_per_mtok is None or settings.output_usd_per_mtok is None
        ):
            raise ConfigError("cost_budget_usd needs input_usd_per_mtok and output_usd_per_mtok")
        self.settings = settings
        self.tokens = 0
        self.usd = 0.0

    def spend(self, usage: Usage) -> None:
        # Reasoning tokens are part of completion_tokens in OpenAI's usage, so they are not added twice.
        self.tokens += usage.prompt_tokens + usage.completion_tokens
        self.usd += (
            usage.prompt_tokens * (self.settings.input_usd_per_mtok or 0.0)
            + usage.completion_tokens * (self.settings.output_usd_per_mtok or 0.0)
        ) / 1e6

    def exhausted(self) -> str | None:
        """Why no new call may start, or None. Calls already in flight finish: the overshoot is < concurrency."""
        if self.settings.token_budget is not None and self.tokens >= self.settings.token_budget:
            return f"token budget reached ({self.tokens} of {self.settings.token_budget} tokens)"
        if self.settings.cost_budget_usd is not None and self.usd >= self.settings.cost_budget_usd:
            return f"cost budget reached (${self.usd:.4f} of ${self.settings.cost_budget_usd:.4f})"
        return None


class LLMExtractor:
    """The `Extractor` that asks a model. Build it per stage run: the budget counts from construction."""

    name = "llm"

    def __init__(
        self,
        settings: LLMSettings,
        *,
        known_concepts: Mapping[str, str] | None = None,
        on_call: CallRecorder | None = None,
        map_raw: MapRaw | None = None,
    ) -> None:
        self.settings = settings
        self.known_concepts: Mapping[str, str] = known_concepts or {}  # any name -> concept_id
        self.on_call = on_call
        self.map_raw: MapRaw = map_raw or map_raw_hypotheses
        self.client = make_client(settings)
        self.budget = Budget(settings)
        self.stopped: str | None = None  # why the last extract_many stopped early, if it did
        # Set (on the iterating thread, by `finish`) once the endpoint refused the key (401, 403): no segment is
        # sent after it, since every one would be refused the same way (thousands of calls and log lines on an
        # archive). The line that says so, endpoint and what to do included; the key never.
        self.refused: str | None = None
        self._said: set[str] = set()  # stop reasons logged at WARNING already (once per run, not per batch)
        build_request(settings, [])  # fail now on settings that cannot work (e.g. responses + json_object)
        self.cache_key_parts: tuple[str, ...] = (*VERSION_PARTS, settings.model, settings.reasoning_effort or "unset")

    def extract_many(self, segments: Sequence[SegmentInput]) -> Iterator[tuple[SegmentInput, Result]]:
        """One result per segment, in completion order; at most max_concurrency requests in flight."""
        if self.settings.batch_api:
            from extract.llm_batch import run_batch  # only backfills need it

            yield from run_batch(self, segments)
            return
        pending = iter(segments)
        with ThreadPoolExecutor(self.settings.max_concurrency, thread_name_prefix="chatmem-llm") as pool:
            in_flight: dict[Future[tuple[Result, list[LLMCall]]], SegmentInput] = {}
            while True:
                while len(in_flight) < self.settings.max_concurrency and not self.halted():
                    segment = next(pending, None)
                    if segment is None:
                        break
                    in_flight[pool.submit(self.extract_one, segment)] = segment
                if not in_flight:
                    break
                done, _ = wait(in_flight, return_when=FIRST_COMPLETED)
                for future in done:
                    segment = in_flight.pop(future)
                    result, attempts = future.result()  # a bug in a worker re-raises here, loudly
                    yield segment, self.finish(segment, result, attempts)
        left = list(pending)  # only segments the budget or a refused key stopped
        self.stopped = self.halted() if left else None
        if self.stopped:
            level = logging.INFO if self.stopped in self._said else logging.WARNING  # once, not once per batch
            self._said.add(self.stopped)
            log.log(level, "extract - %d segment(s) not done: %s", len(left), self.stopped)
        for segment in left:
            yield segment, SegmentNotDone(reason=self.not_done_reason(self.stopped or ""))

    def halted(self) -> str | None:
        """Why no new call may start: the endpoint refused the API key, or the budget is spent."""
        return self.refused or self.budget.exhausted()

    def not_done_reason(self, why: str) -> str:
        """A segment left for the next run: why, and what to do (a refused key says it already)."""
        return f"not done: {why}" if why == self.refused else f"not done: {why}; re-run the stage to continue"

    def finish(self, segment: SegmentInput, result: Result, attempts: list[LLMCall]) -> Result:
        """On the iterating thread: record every attempt, count the spend, log a failure, and learn a refused key
        (from this process's workers or another's: extract/batch_job.py), said once."""
        if isinstance(result, ExtractionFailure) and result.key_refused is not None and self.refused is None:
            self.refused = result.key_refused
            self._said.add(self.refused)
            log.warning("extract - %s; no other segment is sent in this run", self.refused)
        for call in attempts:
            if self.on_call is not None:
                self.on_call(call)
            self.budget.spend(Usage(call.prompt_tokens, call.completion_tokens, call.reasoning_tokens))
        if isinstance(result, ExtractionFailure):
            log.info("extract - segment %s failed: %s", segment.segment_id, result.reason)
        return result

    def cache_key(self, segment: SegmentInput) -> str:
        """The extract stage's cache key of this segment: llm_calls rows join extractions on it."""
        return extraction_cache_key(segment.content_hash, self.cache_key_parts)

    def request_record(self, messages: list[dict[str, str]]) -> dict[str, Any]:
        """What staging keeps of a request: no key, no headers, the schema by name and version only."""
        s = self.settings
        return {
            "api": s.api,
            "base_url": redact_uri(s.base_url),
            "model": s.model,
            "reasoning_effort": s.reasoning_effort,
            "messages": messages,
            "schema": {"name": RESPONSE_NAME, "schema_version": SCHEMA_VERSION, "prompt_version": PROMPT_VERSION},
            "structured_output": s.structured_output,
            "params": {"temperature": s.temperature, "seed": s.seed, "max_output_tokens": s.max_output_tokens},
        }

    def new_call(self, segment: SegmentInput, attempt: int, request: dict[str, Any], **values: Any) -> LLMCall:
        s = self.settings
        return LLMCall(
            segment_id=segment.segment_id,
            cache_key=self.cache_key(segment),
            attempt=attempt,
            api="batch-" + s.api if s.batch_api else s.api,
            model=s.model,
            reasoning_effort=s.reasoning_effort,
            request=request,
            **values,
        )

    def reply_call(
        self,
        segment: SegmentInput,
        attempt: int,
        request: dict[str, Any],
        reply: Any,
        *,
        status: CallStatus,
        latency_s: float,
        error: str | None,
    ) -> LLMCall:
        """The call record of an answered request (live or from a batch): raw text and usage from the reply."""
        return self.new_call(
            segment,
            attempt,
            request,
            status=status,
            latency_s=latency_s,
            error=error,
            raw_response=reply.text if reply.text is not None else reply.refusal,
            prompt_tokens=reply.usage.prompt_tokens,
            completion_tokens=reply.usage.completion_tokens,
            reasoning_tokens=reply.usage.reasoning_tokens,
        )

    def extract_one(self, segment: SegmentInput) -> tuple[Result, list[LLMCall]]:
        """One segment, retried on transient errors (runs on a worker thread; touches no shared state). Not sent,
        and not done, when the endpoint refused the key earlier in this process (clients.llm.REFUSED)."""
        messages = build_messages(segment, self.known_concepts)
        body = build_request(self.settings, messages)
        try:
            REFUSED.check(self.client, self.settings.api, body)
        except KeyRefused as refused:  # no attempt: no llm_calls row
            line = refused_key(endpoint(self.settings), refused.reason)
            return SegmentNotDone(reason=f"not done: {line}", key_refused=line), []
        record = self.request_record(messages)
        attempts: list[LLMCall] = []
        started = time.monotonic()

        def attempt_once(attempt: int) -> tuple[Reply, float]:
            nonlocal started
            started = time.monotonic()
            return send(self.client, self.settings.api, body), round(time.monotonic() - started, 4)

        def failed(error: BaseException, attempt: int, will_retry: bool) -> None:
            if isinstance(error, KeyRefused):
                return  # not sent: no attempt to record
            status: CallStatus = "transient_error" if is_transient(error) else "error"
            latency = round(time.monotonic() - started, 4)
            call = self.new_call(segment, attempt, record, status=status, latency_s=latency, error=describe(error))
            call.raw_response = _error_body(error) if isinstance(error, openai.OpenAIError) else None
            attempts.append(call)
            if will_retry:
                log.info("extract - %s: %s, retry %d", segment.segment_id, describe(error), attempt)

        try:
            reply, latency = retrying(
                attempt_once,
                transient=is_transient,
                delay=lambda error, attempt: retry_delay(error, attempt, self.settings),
                max_retries=self.settings.max_retries,
                on_error=failed,
            )
        except KeyRefused as refused:  # refused by another thread meanwhile: not sent either
            line = refused_key(endpoint(self.settings), refused.reason)
            return SegmentNotDone(reason=f"not done: {line}", key_refused=line), attempts
        except openai.OpenAIError as error:
            why = (
                f"retries exhausted after {len(attempts)} attempts"
                if is_transient(error)
                else "API error (not retried)"
            )
            failure = ExtractionFailure(reason=f"{why}: {describe(error)}", raw_response=_error_body(error))
            if is_key_refusal(error):
                failure.key_refused = refused_key(endpoint(self.settings), describe(error))
            return failure, attempts
        result, status, error_text = self.interpret(reply, segment)
        attempts.append(
            self.reply_call(
                segment, len(attempts) + 1, record, reply, status=status, latency_s=latency, error=error_text
            )
        )
        return result, attempts

    def interpret(self, reply: Reply, segment: SegmentInput) -> tuple[Result, CallStatus, str | None]:
        """The reply's text → the contract, via the semantic mapper; every way it can fail, named."""
        usage = reply.usage
        if reply.refusal:
            reason = f"refusal: {reply.refusal}"
            return ExtractionFailure(reason, raw_response=reply.refusal, usage=usage), "refused", reason
        if reply.finish_reason == "content_filter":
            reason = "refusal: the reply was stopped by the endpoint's content filter"
            return ExtractionFailure(reason, raw_response=reply.text, usage=usage), "refused", reason
        text = reply.text or ""
        try:
            raw = json.loads(text)
        except json.JSONDecodeError as exc:
            cut = " (cut off at the output-token limit)" if reply.finish_reason == "length" else ""
            reason = f"invalid JSON{cut}: {exc}"
            return ExtractionFailure(reason, raw_response=text, usage=usage), "invalid_json", reason
        contract_error = _contract_error(raw)
        hypotheses, decisions = self.map_raw(raw, segment, self.known_concepts)
        facts, fact_decisions = map_raw_facts(raw if isinstance(raw, dict) else {}, segment)  # a bare list: hypotheses
        if contract_error is not None and not hypotheses and not facts:
            # Off-contract and nothing salvageable: a schema violation. Off-contract but mapped (type "Project")
            # is a success whose corrections are in `decisions`.
            reason = f"schema violation: {contract_error}"
            return ExtractionFailure(reason, raw_response=text, usage=usage), "schema_violation", reason
        output = LLMExtractionOutput(
            hypotheses=hypotheses,
            usage=usage,
            raw_response=text,
            decisions=decisions,
            contract_ok=contract_error is None,
            facts=facts,
            fact_decisions=fact_decisions,
        )
        return output, "ok", None


def _contract_error(raw: Any) -> str | None:
    """Why the raw answer is not an ExtractionResponse as it stands, or None when it is."""
    try:
        ExtractionResponse.model_validate(raw)
    except ValidationError as exc:
        problems = [f"{'.'.join(map(str, e['loc'])) or '(root)'}: {e['msg']}" for e in exc.errors()[:5]]
        more = f" (+{exc.error_count() - 5} more)" if exc.error_count() > 5 else ""
        return _one_line("; ".join(problems) + more)
    return None


def _error_body(error: openai.OpenAIError) -> str | None:
    """The HTTP body of an API error, kept for staging (it explains a 400 better than the status)."""
    if isinstance(error, MalformedReply):
        return error.body
    if isinstance(error, openai.APIStatusError):
        try:
            return error.response.text[:10_000]
        except Exception:  # a streamed or closed body: the status and message are still recorded
            return None
    return None


def _one_line(error: object) -> str:
    text = " ".join(str(error).split())
    return text if len(text) <= 500 else text[:499] + "…"
