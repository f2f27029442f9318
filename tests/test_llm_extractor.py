"""The LLM extractor against a real HTTP server on 127.0.0.1, through the real openai SDK: every fault path."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import SecretStr

from contracts.concepts import ConceptRelation, ExtractionResponse
from contracts.errors import ConfigError
from contracts.settings import LLMSettings
from extract.llm import LLMExtractionOutput, LLMExtractor
from extract.prompts import build_messages
from extract.types import ExtractionFailure, ExtractionOutput, SegmentInput, SegmentNotDone
from tests import llm_guard, llm_server
from tests.llm_cases import SECRET, answer_for, extract_one, make_segment, run, settings_for
from tests.llm_server import FakeLLMServer, Reply

# The fake server and the no-network guard (autouse) for this module's tests.
fake_llm = llm_server.fake_llm
no_real_model_requests = llm_guard.no_real_model_requests


def test_valid_output_becomes_hypotheses(fake_llm: FakeLLMServer) -> None:
    """A valid structured reply becomes ExtractionOutput with the contract's hypotheses, raw text and usage."""
    expected = answer_for(make_segment())
    result, calls = extract_one(fake_llm, Reply.valid(expected))
    assert isinstance(result, LLMExtractionOutput)
    assert result.hypotheses == expected.hypotheses
    assert result.raw_response == expected.model_dump_json()
    assert (result.usage.prompt_tokens, result.usage.completion_tokens, result.usage.reasoning_tokens) == (100, 50, 10)
    assert [c.status for c in calls] == ["ok"]


def test_invalid_json_fails_with_raw_text(fake_llm: FakeLLMServer) -> None:
    """Text that is not JSON is a failure that keeps the raw text."""
    broken = answer_for(make_segment()).model_dump_json()[:40]
    result, calls = extract_one(fake_llm, Reply.text(broken))
    assert isinstance(result, ExtractionFailure) and result.reason.startswith("invalid JSON")
    assert result.raw_response == broken and [c.status for c in calls] == ["invalid_json"]


def test_reply_cut_at_token_limit_says_so(fake_llm: FakeLLMServer) -> None:
    """finish_reason 'length' with half a JSON document is reported as cut off."""
    broken = answer_for(make_segment()).model_dump_json()[:60]
    result, _ = extract_one(fake_llm, Reply.text(broken, finish_reason="length"))
    assert isinstance(result, ExtractionFailure) and "cut off" in result.reason


def test_schema_violation_fails_with_raw_text(fake_llm: FakeLLMServer) -> None:
    """JSON that breaks the contract (evidence_spans not a list) is a failure with the raw text kept."""
    data = answer_for(make_segment()).model_dump(mode="json")
    data["hypotheses"][0]["evidence_spans"] = "renovating my kitchen"
    text = ExtractionResponse.model_construct(**data).model_dump_json(warnings=False)
    result, calls = extract_one(fake_llm, Reply.text(text))
    assert isinstance(result, ExtractionFailure) and result.reason.startswith("schema violation")
    assert result.raw_response == text and [c.status for c in calls] == ["schema_violation"]


def test_refusal_fails_with_refusal_text(fake_llm: FakeLLMServer) -> None:
    """A refusal is a failure whose raw text is the refusal."""
    result, calls = extract_one(fake_llm, Reply.refused("I can't help with that."))
    assert isinstance(result, ExtractionFailure) and result.reason == "refusal: I can't help with that."
    assert result.raw_response == "I can't help with that." and [c.status for c in calls] == ["refused"]


def test_429_is_retried_after_retry_after(fake_llm: FakeLLMServer) -> None:
    """A 429 with retry-after 0.5 s is retried about 0.5 s later (the backoff alone would wait 0.01 s), then
    succeeds. The gap is measured by the server's threads, so it allows them 0.1 s of scheduling delay."""
    valid = Reply.valid(answer_for(make_segment()))
    result, calls = extract_one(fake_llm, Reply.fail(429, retry_after=0.5), valid, retry_backoff_max_s=2.0)
    assert isinstance(result, ExtractionOutput)
    first, second = fake_llm.model_requests()
    assert first.finished is not None and second.started - first.finished >= 0.4
    assert [(c.attempt, c.status) for c in calls] == [(1, "transient_error"), (2, "ok")]
    assert calls[0].error is not None and calls[0].error.startswith("HTTP 429")


def test_500s_until_retries_exhausted_fail(fake_llm: FakeLLMServer) -> None:
    """500 on every attempt: 1 + max_retries requests, then a failure that says so."""
    result, calls = extract_one(fake_llm, *[Reply.fail(500)] * 3, max_retries=2)
    assert isinstance(result, ExtractionFailure)
    assert result.reason.startswith("retries exhausted after 3 attempts: HTTP 500")
    assert len(fake_llm.model_requests()) == 3 and [c.status for c in calls] == ["transient_error"] * 3


def test_slow_reply_times_out_and_is_retried(fake_llm: FakeLLMServer) -> None:
    """A reply slower than timeout_s is abandoned and retried; the retry's answer is used."""
    valid = Reply.valid(answer_for(make_segment()))
    result, calls = extract_one(fake_llm, Reply.slow(1.0), valid, timeout_s=0.3)
    assert isinstance(result, ExtractionOutput)
    assert [(c.status, c.error) for c in calls] == [("transient_error", "timed out"), ("ok", None)]


def test_slow_replies_until_retries_exhausted_fail(fake_llm: FakeLLMServer) -> None:
    """Timeouts on every attempt end in a failure naming the timeout."""
    result, _ = extract_one(fake_llm, *[Reply.slow(1.0)] * 2, timeout_s=0.2, max_retries=1)
    assert isinstance(result, ExtractionFailure) and result.reason == "retries exhausted after 2 attempts: timed out"


@pytest.mark.parametrize(("status", "code"), [(400, None), (401, None), (429, "insufficient_quota")])
def test_non_transient_errors_are_not_retried(fake_llm: FakeLLMServer, status: int, code: str | None) -> None:
    """400, 401 and a 429 for an exhausted quota fail at once, with the HTTP body kept."""
    result, calls = extract_one(fake_llm, Reply.fail(status, code=code), Reply.valid(answer_for(make_segment())))
    assert isinstance(result, ExtractionFailure) and result.reason.startswith(f"API error (not retried): HTTP {status}")
    assert len(fake_llm.model_requests()) == 1 and [c.status for c in calls] == ["error"]
    assert result.raw_response is not None and f"scripted {status}" in result.raw_response


def test_no_endpoint_configured_means_no_request_leaves_the_machine() -> None:
    """Without base_url the SDK's default endpoint is the test guard's closed loopback port: a connection error."""
    settings = LLMSettings(model="m", api_key=SecretStr(SECRET), max_retries=0)
    result = run(LLMExtractor(settings), [make_segment()])["seg-0"]
    assert isinstance(result, ExtractionFailure) and "connection failed" in result.reason


def test_openai_default_endpoint_without_a_key_is_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pointing at OpenAI's API with no key anywhere fails before any request, naming both settings."""
    monkeypatch.delenv("OPENAI_BASE_URL")
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        LLMExtractor(LLMSettings(model="m"))


def test_prompt_is_pure_and_shows_message_ids() -> None:
    """The same segment gives the same messages, and every message id is shown in brackets for citing."""
    segment = make_segment()
    assert build_messages(segment) == build_messages(segment)
    user = build_messages(segment)[1]["content"]
    assert all(f"[{m.message_id}]" in user for m in segment.messages) and "Segment id: seg-0" in user


def test_a_worker_bug_is_not_swallowed(fake_llm: FakeLLMServer) -> None:
    """An exception that is not an API error (a bug in the mapper) propagates instead of becoming a failure."""

    def broken_mapper(raw: Any, segment: SegmentInput, known: Any) -> Any:
        raise KeyError("bug")

    extractor = LLMExtractor(settings_for(fake_llm), map_raw=broken_mapper)
    with pytest.raises(KeyError):
        run(extractor, [make_segment()])


def test_near_miss_values_are_mapped_not_failed(fake_llm: FakeLLMServer) -> None:
    """type 'Project' and confidence 10 break the contract, yet the mapper maps them: a success with decisions."""
    data = answer_for(make_segment()).model_dump(mode="json")
    data["hypotheses"][0] |= {"type": "Project", "confidence": 10}
    text = ExtractionResponse.model_construct(**data).model_dump_json(warnings=False)
    result, calls = extract_one(fake_llm, Reply.text(text))
    assert isinstance(result, LLMExtractionOutput) and not result.contract_ok
    assert [(h.type, h.confidence) for h in result.hypotheses] == [("project", 1.0)]
    assert {d.rule for d in result.decisions} >= {"type_synonym", "confidence_clamped"}
    assert [c.status for c in calls] == ["ok"]


def test_evidence_from_outside_the_segment_is_rejected(fake_llm: FakeLLMServer) -> None:
    """A hypothesis whose only span cites a message id not in the segment is rejected and the decision kept."""
    answer = answer_for(make_segment())
    answer.hypotheses[0].evidence_spans[0].message_id = "invented-id"
    result, _ = extract_one(fake_llm, Reply.valid(answer))
    assert isinstance(result, LLMExtractionOutput) and result.hypotheses == [] and result.contract_ok
    assert [d.rule for d in result.decisions] == ["evidence_message_not_in_segment", "no_evidence"]


def test_known_concepts_are_shown_and_resolve_relations(fake_llm: FakeLLMServer) -> None:
    """Known concepts appear in the prompt, and a relation to one of them by title resolves to its concept_id."""
    known = {"morning-running": "morning-running", "Morning running": "morning-running"}
    answer = answer_for(make_segment())
    answer.hypotheses[0].relations = [
        ConceptRelation(target_id="Morning running", relation="conflicts_with", confidence=0.6)
    ]
    fake_llm.reply_with(Reply.valid(answer))
    extractor = LLMExtractor(settings_for(fake_llm), known_concepts=known)
    result = run(extractor, [make_segment()])["seg-0"]
    assert "- morning-running: Morning running" in fake_llm.model_requests()[0].body["messages"][1]["content"]
    assert isinstance(result, ExtractionOutput)
    assert [(r.target_id, r.relation) for r in result.hypotheses[0].relations] == [
        ("morning-running", "conflicts_with")
    ]


def test_the_guard_refuses_hosts_beyond_loopback(no_real_model_requests: list[object]) -> None:
    """A request to a non-loopback host never leaves the machine in tests: refused, recorded, a failure."""
    settings = LLMSettings(model="m", base_url="http://203.0.113.7/v1", api_key=SecretStr(SECRET), max_retries=0)
    result = run(LLMExtractor(settings), [make_segment()])["seg-0"]
    assert isinstance(result, ExtractionFailure) and "connection failed" in result.reason
    assert [address[0] for address in no_real_model_requests] == ["203.0.113.7"]  # type: ignore[index]
    no_real_model_requests.clear()  # refusing it was the point of this test


@pytest.mark.parametrize("status", [401, 403])
def test_a_refused_key_stops_sending_the_other_segments(fake_llm: FakeLLMServer, status: int) -> None:
    """Every segment would be refused the same way: after the first 401/403 no new request starts. The ones in
    flight fail as they are; the rest are left not done (retried by the next run), saying why."""
    fake_llm.reply_with(*[Reply.fail(status)] * 40)
    segments = [make_segment(i) for i in range(40)]
    extractor = LLMExtractor(settings_for(fake_llm, max_concurrency=2))
    results = run(extractor, segments)
    failed = [r for r in results.values() if isinstance(r, ExtractionFailure) and r.reason.startswith("API error")]
    not_done = [r for r in results.values() if isinstance(r, ExtractionFailure) and r.reason.startswith("not done")]
    assert 1 <= len(failed) <= 2 and len(failed) + len(not_done) == 40
    assert len(fake_llm.model_requests()) == len(failed)
    assert f"{fake_llm.base_url} refused the API key (HTTP {status}" in not_done[0].reason
    assert not_done[0].reason.endswith("fix the key and run again")
    assert extractor.stopped is not None and "refused the API key" in extractor.stopped


def test_a_key_refused_earlier_in_the_process_is_not_sent_again(fake_llm: FakeLLMServer) -> None:
    """The refusal is the shared client's (clients.llm.REFUSED): a second extractor in the same process (the
    next stage batch, another stage run) sends nothing with that key and leaves every segment not done, with
    no llm_calls row for a request never made; another key is sent."""
    fake_llm.responder = lambda body: Reply.fail(401)
    first = LLMExtractor(settings_for(fake_llm, max_concurrency=1))
    run(first, [make_segment(0)])
    calls: list[Any] = []
    second = LLMExtractor(settings_for(fake_llm, max_concurrency=1), on_call=calls.append)
    results = run(second, [make_segment(i) for i in range(1, 6)])
    assert len(fake_llm.model_requests()) == 1 and calls == []
    assert all(isinstance(r, SegmentNotDone) and "refused the API key (HTTP 401" in r.reason for r in results.values())
    assert SECRET not in str(results)
    fake_llm.responder = lambda body: Reply.valid(ExtractionResponse(hypotheses=[], facts=[]))
    other_key = LLMExtractor(settings_for(fake_llm, api_key=SecretStr("sk-test-fixed-key-0001")))
    assert all(isinstance(r, ExtractionOutput) for r in run(other_key, [make_segment(7)]).values())


def test_a_key_refused_on_one_api_is_still_sent_on_the_other(fake_llm: FakeLLMServer) -> None:
    """A key the endpoint refuses on /v1/responses only (an OpenAI restricted key without the Responses scope, a
    proxy's route list) is remembered for that API: topic labels and recall, which send chat completions with the
    same key and model, are still sent and answered."""
    from clients.llm import RecordedCall, make_client

    fake_llm.responder = lambda body: Reply.fail(401) if "input" in body else Reply.text("Kitchen renovation")
    settings = settings_for(fake_llm, api="responses", max_concurrency=1)
    extractor = LLMExtractor(settings)
    run(extractor, [make_segment(i) for i in range(3)])
    assert extractor.stopped is not None and "refused the API key (HTTP 401" in extractor.stopped
    assert [r.path for r in fake_llm.model_requests()] == ["/v1/responses"]

    call = RecordedCall(settings, segment_id="topic:t1", cache_key="t1", request={})
    reply = call.send(make_client(settings), {"model": settings.model, "messages": [{"role": "user", "content": "x"}]})
    assert reply.text == "Kitchen renovation"
    assert [r.path for r in fake_llm.model_requests()] == ["/v1/responses", "/v1/chat/completions"]
