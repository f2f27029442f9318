"""OpenAI Batch API submission for large backfills: half the price, results within the completion window.

    build_batch_file(extractor, segments) -> JSONL bytes   one request line per segment, custom_id = segment id
    run_batch(extractor, segments)                          upload, create, poll, download, parse
    parse_batch_output(extractor, segments, text, ...)      output/error file lines -> one result per segment

Each line's body is exactly what the synchronous path sends (`build_request`), and each result body goes through
the same `reply_from_chat` / `reply_from_response` and `interpret` as a synchronous reply, so both paths fail
the same way. Submission and polling requests are retried with the same `is_transient` predicate.

Not handled: resuming a batch after the process is killed (a re-run submits a new batch for the segments not
yet cached), and the token / cost budget, which cannot be checked before a batch is priced (it is only counted).
"""

from __future__ import annotations

import functools
import json
import logging
import time
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from openai.types.chat import ChatCompletion
from openai.types.responses import Response

from clients.llm import describe, is_transient, reply_from_chat, reply_from_response, retry_delay
from clients.retry import retrying
from extract.llm_request import build_request
from extract.prompts import build_messages
from extract.types import ExtractionFailure, SegmentInput, SegmentNotDone

if TYPE_CHECKING:
    from extract.llm import LLMExtractor, Result

log = logging.getLogger(__name__)

T = TypeVar("T")
TERMINAL = ("completed", "failed", "expired", "cancelled")


def endpoint(api: str) -> Literal["/v1/chat/completions", "/v1/responses"]:
    return "/v1/chat/completions" if api == "chat" else "/v1/responses"


def build_batch_file(extractor: LLMExtractor, segments: Sequence[SegmentInput]) -> bytes:
    """The JSONL input file: one POST per segment, the same body the synchronous path would send."""
    lines = []
    for segment in segments:
        body = build_request(extractor.settings, build_messages(segment, extractor.known_concepts))
        line = {
            "custom_id": segment.segment_id,
            "method": "POST",
            "url": endpoint(extractor.settings.api),
            "body": body,
        }
        lines.append(json.dumps(line, ensure_ascii=False))
    return ("\n".join(lines) + "\n").encode()


def parse_batch_output(
    extractor: LLMExtractor, segments: Sequence[SegmentInput], output: str, errors: str, elapsed_s: float
) -> Iterator[tuple[SegmentInput, Result]]:
    """One result per segment from the output and error files (lines in any order, some maybe missing)."""
    lines: dict[str, dict[str, Any]] = {}
    for text in (errors, output):  # an output line wins over an error line for the same id
        for raw_line in text.splitlines():
            if raw_line.strip():
                item = json.loads(raw_line)
                lines[str(item.get("custom_id"))] = item
    for segment in segments:
        record = extractor.request_record(build_messages(segment, extractor.known_concepts))
        item = lines.get(segment.segment_id)
        response = (item or {}).get("response") or {}
        body = response.get("body")
        if item is None or response.get("status_code") != 200 or not isinstance(body, dict):
            detail = "missing from the batch output" if item is None else _line_error(item)
            call = extractor.new_call(segment, 1, record, status="error", latency_s=elapsed_s, error=detail)
            call.raw_response = None if item is None else json.dumps(item)[:10_000]
            failure = ExtractionFailure(reason=f"batch: {detail}", raw_response=call.raw_response)
            yield segment, extractor.finish(segment, failure, [call])
            continue
        if extractor.settings.api == "chat":
            reply = reply_from_chat(ChatCompletion.construct(**body))  # lenient, as the SDK reads replies
        else:
            reply = reply_from_response(Response.construct(**body))
        result, status, error = extractor.interpret(reply, segment)
        call = extractor.reply_call(segment, 1, record, reply, status=status, latency_s=elapsed_s, error=error)
        yield segment, extractor.finish(segment, result, [call])


def run_batch(extractor: LLMExtractor, segments: Sequence[SegmentInput]) -> Iterator[tuple[SegmentInput, Result]]:
    """Submit every segment as one batch job, wait for it, and yield one result per segment."""

    settings, client = extractor.settings, extractor.client
    if not segments:
        return
    ids = [s.segment_id for s in segments]
    if len(set(ids)) != len(ids):
        raise ValueError("batch: segment ids must be unique (they are the batch lines' custom_id)")
    if settings.token_budget is not None or settings.cost_budget_usd is not None:
        log.warning("extract - batch: the budget cannot stop a batch once submitted; it is only counted")
    started = time.monotonic()
    data = build_batch_file(extractor, segments)
    uploaded = _retrying(settings, lambda: client.files.create(file=("chatmem-extract.jsonl", data), purpose="batch"))
    batch = _retrying(
        settings,
        lambda: client.batches.create(
            input_file_id=uploaded.id,
            endpoint=endpoint(settings.api),
            completion_window="24h",
            metadata={"created_by": "chatmem extract", "segments": str(len(segments))},
        ),
    )
    log.info("extract - batch %s submitted: %d segments, %d bytes", batch.id, len(segments), len(data))
    while batch.status not in TERMINAL:
        if time.monotonic() - started > settings.batch_max_wait_s:
            reason = f"not done: batch {batch.id} still {batch.status} after {settings.batch_max_wait_s:.0f}s"
            for segment in segments:
                yield segment, SegmentNotDone(reason=reason)
            extractor.stopped = reason
            return
        time.sleep(settings.batch_poll_s)
        batch = _retrying(settings, functools.partial(client.batches.retrieve, batch.id))
    output = _download(extractor, batch.output_file_id)
    errors = _download(extractor, batch.error_file_id)
    if batch.status != "completed" and not output and not errors:
        log.warning("extract - batch %s ended %s with no output", batch.id, batch.status)
    yield from parse_batch_output(extractor, segments, output, errors, round(time.monotonic() - started, 3))


def _download(extractor: LLMExtractor, file_id: str | None) -> str:
    if not file_id:
        return ""
    return _retrying(extractor.settings, lambda: extractor.client.files.content(file_id).text)


def _line_error(item: dict[str, Any]) -> str:
    response = item.get("response") or {}
    error = item.get("error") or (response.get("body") or {}).get("error") or {}
    message = error.get("message") if isinstance(error, dict) else str(error)
    return f"HTTP {response.get('status_code', '?')}: {message or 'no message'}"


def _retrying(settings: Any, call: Callable[[], T]) -> T:
    """Submission and polling requests, retried on the same transient errors as extraction calls."""

    def logged(error: BaseException, attempt: int, will_retry: bool) -> None:
        if will_retry:
            log.info("extract - batch request: %s, retry %d", describe(error), attempt)

    return retrying(
        lambda attempt: call(),
        transient=is_transient,
        delay=lambda error, attempt: retry_delay(error, attempt, settings),
        max_retries=settings.max_retries,
        on_error=logged,
    )
