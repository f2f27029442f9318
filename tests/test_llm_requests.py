"""The LLM extractor's requests on the wire (strict schema, effort, parameters), staging, budgets, concurrency."""

from __future__ import annotations

from pathlib import Path

import pytest

from contracts.concepts import SCHEMA_VERSION, ExtractionResponse
from contracts.errors import ConfigError
from contracts.schema_check import strict_schema_violations
from contracts.settings import LLMSettings
from extract.llm import LLMExtractor, SegmentNotDone
from extract.prompts import PROMPT_VERSION, build_messages
from extract.types import ExtractionFailure, ExtractionOutput
from staging import llm_calls
from staging.extractions import cache_key as extraction_cache_key
from staging.ledger import open_staging
from tests import llm_guard, llm_server
from tests.llm_cases import SECRET, answer_for, extract_one, make_segment, run, settings_for
from tests.llm_server import FakeLLMServer, Reply

# The fake server and the no-network guard (autouse) for this module's tests.
fake_llm = llm_server.fake_llm
no_real_model_requests = llm_guard.no_real_model_requests


def test_token_budget_stops_cleanly_and_a_rerun_continues(fake_llm: FakeLLMServer) -> None:
    """Once the token budget is spent no new call starts; the rest are SegmentNotDone; a re-run does them."""
    fake_llm.responder = lambda body: Reply.valid(ExtractionResponse(hypotheses=[], facts=[]))
    segments = [make_segment(i) for i in range(5)]
    extractor = LLMExtractor(settings_for(fake_llm, token_budget=250, max_concurrency=1))
    results = run(extractor, segments)
    done = [sid for sid, r in results.items() if isinstance(r, ExtractionOutput)]
    not_done = [sid for sid, r in results.items() if isinstance(r, SegmentNotDone)]
    assert len(results) == 5 and len(done) == 2 and len(not_done) == 3  # 150 tokens per call: 300 >= 250
    assert extractor.stopped is not None and "token budget reached (300 of 250" in extractor.stopped
    assert len(fake_llm.model_requests()) == 2
    again = run(LLMExtractor(settings_for(fake_llm)), [s for s in segments if s.segment_id in not_done])
    assert all(isinstance(r, ExtractionOutput) for r in again.values()) and len(again) == 3


def test_cost_budget_needs_prices() -> None:
    """A cost budget without both prices cannot work: a ConfigError at construction."""
    with pytest.raises(ConfigError, match="input_usd_per_mtok"):
        LLMExtractor(LLMSettings(model="m", base_url="http://127.0.0.1:9/v1", cost_budget_usd=1.0))


def test_cost_budget_stops_cleanly(fake_llm: FakeLLMServer) -> None:
    """At $1/M in and $2/M out a call costs $0.0002: a $0.0003 budget allows two calls."""
    prices = {"input_usd_per_mtok": 1.0, "output_usd_per_mtok": 2.0, "cost_budget_usd": 0.0003}
    extractor = LLMExtractor(settings_for(fake_llm, max_concurrency=1, **prices))
    results = run(extractor, [make_segment(i) for i in range(4)])
    assert sum(isinstance(r, SegmentNotDone) for r in results.values()) == 2
    assert extractor.stopped is not None and extractor.stopped.startswith("cost budget reached")


def test_concurrency_bound_is_respected(fake_llm: FakeLLMServer) -> None:
    """With max_concurrency 3 and slow replies the server never sees more than 3 requests at once (and does see 3)."""
    fake_llm.responder = lambda body: Reply.slow(0.15)
    results = run(LLMExtractor(settings_for(fake_llm, max_concurrency=3)), [make_segment(i) for i in range(9)])
    assert len(results) == 9 and all(isinstance(r, ExtractionOutput) for r in results.values())
    assert fake_llm.max_in_flight == 3


def test_chat_request_is_strict_with_low_effort_by_default(fake_llm: FakeLLMServer) -> None:
    """The chat request carries reasoning_effort 'low' and a strict json_schema that passes the strict check."""
    extract_one(fake_llm, Reply.valid(answer_for(make_segment())))
    body = fake_llm.model_requests()[0].body
    assert body["reasoning_effort"] == "low" and body["model"] == "test-model"
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["strict"] is True
    assert strict_schema_violations(body["response_format"]["json_schema"]["schema"]) == []
    assert body["messages"] == build_messages(make_segment())
    assert "temperature" not in body and "seed" not in body


def test_optional_parameters_are_sent_when_set(fake_llm: FakeLLMServer) -> None:
    """temperature, seed, max_output_tokens and a non-default effort reach the wire; effort null is not sent."""
    extract_one(fake_llm, temperature=0.0, seed=7, max_output_tokens=500, reasoning_effort="high")
    extract_one(fake_llm, reasoning_effort=None)
    first, second = (r.body for r in fake_llm.model_requests())
    assert (first["temperature"], first["seed"], first["max_completion_tokens"]) == (0.0, 7, 500)
    assert first["reasoning_effort"] == "high" and "reasoning_effort" not in second


def test_json_object_mode_sends_the_schema_for_llama_cpp(fake_llm: FakeLLMServer) -> None:
    """structured_output json_object sends {type: json_object, schema} and max_tokens (what llama.cpp accepts)."""
    valid = Reply.valid(answer_for(make_segment()))
    result, _ = extract_one(fake_llm, valid, structured_output="json_object", max_output_tokens=300)
    assert isinstance(result, ExtractionOutput)
    body = fake_llm.model_requests()[0].body
    assert body["response_format"]["type"] == "json_object"
    assert strict_schema_violations(body["response_format"]["schema"]) == []
    assert body["max_tokens"] == 300 and "max_completion_tokens" not in body


def test_responses_api_round_trip(fake_llm: FakeLLMServer) -> None:
    """api 'responses' posts to /v1/responses with reasoning.effort and a strict text format, and reads output."""
    expected = answer_for(make_segment())
    result, _ = extract_one(fake_llm, Reply.valid(expected), api="responses")
    assert isinstance(result, ExtractionOutput) and result.hypotheses == expected.hypotheses
    request = fake_llm.model_requests()[0]
    assert request.path == "/v1/responses" and request.body["reasoning"] == {"effort": "low"}
    assert request.body["text"]["format"]["strict"] is True
    assert strict_schema_violations(request.body["text"]["format"]["schema"]) == []


def test_responses_api_refusal(fake_llm: FakeLLMServer) -> None:
    """A refusal content part from /v1/responses is a refusal failure."""
    result, _ = extract_one(fake_llm, Reply.refused("No."), api="responses")
    assert isinstance(result, ExtractionFailure) and result.reason == "refusal: No."


def test_responses_api_needs_json_schema() -> None:
    """responses + json_object is refused at construction (the responses API has no json_object schema mode)."""
    settings = LLMSettings(
        model="m", base_url="http://127.0.0.1:9/v1", api="responses", structured_output="json_object"
    )
    with pytest.raises(ConfigError, match="json_schema"):
        LLMExtractor(settings)


def test_calls_are_staged_without_the_api_key(fake_llm: FakeLLMServer, tmp_path: Path) -> None:
    """Every attempt is a staging row with request, raw reply, usage, latency and status; the key is nowhere."""
    conn = open_staging(tmp_path / "staging.db")
    fake_llm.reply_with(Reply.fail(500), Reply.valid(answer_for(make_segment())))
    extractor = LLMExtractor(settings_for(fake_llm), on_call=llm_calls.recorder(conn, "r1"))
    run(extractor, [make_segment()])
    assert fake_llm.model_requests()[0].headers["authorization"] == f"Bearer {SECRET}"  # it was the key used
    rows = llm_calls.calls(conn, "r1")
    assert [(r["attempt"], r["status"]) for r in rows] == [(1, "transient_error"), (2, "ok")]
    ok = rows[1]
    assert (ok["prompt_tokens"], ok["completion_tokens"], ok["reasoning_tokens"]) == (100, 50, 10)
    assert ok["raw_response"] == answer_for(make_segment()).model_dump_json() and ok["latency_s"] > 0
    assert ok["cache_key"] == extractor.cache_key(make_segment())
    assert f'"schema_version": {SCHEMA_VERSION}' in ok["request"] and '"reasoning_effort": "low"' in ok["request"]
    assert llm_calls.usage_totals(conn, "r1") == {
        "calls": 2,
        "prompt_tokens": 100,
        "completion_tokens": 50,
        "reasoning_tokens": 10,
    }
    assert SECRET not in "\n".join(conn.iterdump())


def test_api_key_from_environment(fake_llm: FakeLLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """With no api_key setting, OPENAI_API_KEY is used; the settings dump masks a configured key."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    extract_one(fake_llm, api_key=None)
    assert fake_llm.model_requests()[0].headers["authorization"] == "Bearer sk-from-env"
    assert settings_for(fake_llm).model_dump(mode="json")["api_key"] == "**********"


def test_cache_key_parts_name_prompt_schema_model_and_effort(fake_llm: FakeLLMServer) -> None:
    """The cache key parts are (prompt version, schema version, model, effort): any change re-extracts."""
    extractor = LLMExtractor(settings_for(fake_llm))
    assert extractor.cache_key_parts == (f"prompt-v{PROMPT_VERSION}", f"schema-v{SCHEMA_VERSION}", "test-model", "low")
    other = LLMExtractor(settings_for(fake_llm, reasoning_effort="medium"))
    assert extractor.cache_key(make_segment()) != other.cache_key(make_segment())
    assert extractor.cache_key(make_segment()) == extraction_cache_key("hash-0", extractor.cache_key_parts)
