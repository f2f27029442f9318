"""OpenAI Batch API submission against the fake server's /v1/files and /v1/batches, through the real SDK."""

from __future__ import annotations

import json
import re

from contracts.schema_check import strict_schema_violations
from extract.llm import LLMExtractionOutput, LLMExtractor
from extract.llm_batch import build_batch_file
from extract.prompts import build_messages
from extract.types import ExtractionFailure
from staging.llm_calls import LLMCall
from tests import llm_guard, llm_server
from tests.llm_cases import answer_for, make_segment, settings_for
from tests.llm_server import FakeLLMServer, Reply, segment_id_of

# The fake server and the no-network guard (autouse) for this module's tests.
fake_llm = llm_server.fake_llm
no_real_model_requests = llm_guard.no_real_model_requests


def test_batch_file_has_one_strict_request_per_segment(fake_llm: FakeLLMServer) -> None:
    """Each JSONL line: custom_id = segment id, POST to the chat endpoint, the synchronous body (strict, effort low)."""
    extractor = LLMExtractor(settings_for(fake_llm, batch_api=True))
    segments = [make_segment(i) for i in range(3)]
    lines = [json.loads(line) for line in build_batch_file(extractor, segments).decode().splitlines()]
    assert [line["custom_id"] for line in lines] == ["seg-0", "seg-1", "seg-2"]
    assert {(line["method"], line["url"]) for line in lines} == {("POST", "/v1/chat/completions")}
    body = lines[1]["body"]
    assert body["messages"] == build_messages(segments[1]) and body["reasoning_effort"] == "low"
    assert body["response_format"]["json_schema"]["strict"] is True
    assert strict_schema_violations(body["response_format"]["json_schema"]["schema"]) == []


def test_batch_round_trip_gives_one_result_per_segment(fake_llm: FakeLLMServer) -> None:
    """Upload, create, poll until done, download: valid, refused and failed lines each become their result."""
    replies = {
        "seg-0": Reply.valid(answer_for(make_segment(0))),
        "seg-1": Reply.refused("No."),
        "seg-2": Reply.fail(500),
    }
    fake_llm.responder = lambda body: replies[segment_id_of(body) or ""]
    fake_llm.batch_polls_before_done = 3
    calls: list[LLMCall] = []
    extractor = LLMExtractor(settings_for(fake_llm, batch_api=True, batch_poll_s=0.01), on_call=calls.append)
    results = dict(extractor.extract_many([make_segment(i) for i in range(3)]))
    by_id = {segment.segment_id: result for segment, result in results.items()}
    assert isinstance(by_id["seg-0"], LLMExtractionOutput)
    assert by_id["seg-0"].hypotheses == answer_for(make_segment(0)).hypotheses
    assert isinstance(by_id["seg-1"], ExtractionFailure) and by_id["seg-1"].reason == "refusal: No."
    assert isinstance(by_id["seg-2"], ExtractionFailure) and by_id["seg-2"].reason.startswith("batch: HTTP 500")
    paths = [(r.method, r.path.split("/")[2]) for r in fake_llm.requests]
    assert paths[:2] == [("POST", "files"), ("POST", "batches")]
    assert paths.count(("GET", "batches")) == 3  # polled until the job said completed
    assert sorted((c.segment_id, c.status, c.api) for c in calls) == [
        ("seg-0", "ok", "batch-chat"),
        ("seg-1", "refused", "batch-chat"),
        ("seg-2", "error", "batch-chat"),
    ]
    assert fake_llm.files and json.loads(next(iter(fake_llm.files.values())).decode().splitlines()[0])["custom_id"]


def test_batch_that_does_not_finish_in_time_leaves_segments_not_done(fake_llm: FakeLLMServer) -> None:
    """A batch still running after batch_max_wait_s: every segment is reported not done, none failed."""
    fake_llm.batch_polls_before_done = 10_000
    settings = settings_for(fake_llm, batch_api=True, batch_poll_s=0.01, batch_max_wait_s=0.05)
    extractor = LLMExtractor(settings)
    results = [result for _, result in extractor.extract_many([make_segment(0), make_segment(1)])]
    assert [type(r).__name__ for r in results] == ["SegmentNotDone", "SegmentNotDone"]
    # The fake server says `validating` on its first poll and `in_progress` after: on a slow machine the wait can
    # end before the second poll, so either status is the batch still running.
    assert extractor.stopped is not None and re.search(r"still (validating|in_progress)", extractor.stopped)


def test_batch_responses_api(fake_llm: FakeLLMServer) -> None:
    """With api 'responses' the batch targets /v1/responses and its result bodies are read as responses."""
    fake_llm.responder = lambda body: Reply.valid(answer_for(make_segment(0)))
    extractor = LLMExtractor(settings_for(fake_llm, batch_api=True, batch_poll_s=0.01, api="responses"))
    [(_, result)] = list(extractor.extract_many([make_segment(0)]))
    assert isinstance(result, LLMExtractionOutput) and len(result.hypotheses) == 1
    create = next(r for r in fake_llm.requests if r.path == "/v1/batches")
    assert create.body["endpoint"] == "/v1/responses"
