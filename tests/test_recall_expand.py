"""The expand-or-stop step of recall (memory/expand.py) against the real loopback OpenAI-compatible server: an
LLM's "expand" brings more of a conversation into the context, every call lands in llm_calls, and a failed or
malformed answer falls back to the deterministic first pass with the reason kept."""

from __future__ import annotations

import contextlib
import json
import logging
import socket
import threading
from pathlib import Path

import pytest
from concept_support import Dbs, conversation, open_dbs, write_archive
from stage_support import cues_stage as cues
from stage_support import stage_concepts, stage_extract, stage_segment

from clients.llm import Breaker
from contracts.memory import ExpandDecision, ExpandRequest, ExpandResponse, RecallRequest
from contracts.settings import LLMSettings, Settings
from memory import expand as expand_module
from memory.service import Memory
from staging import llm_calls
from tests import llm_guard, llm_server
from tests.llm_server import FakeLLMServer, Reply

fake_llm = llm_server.fake_llm
no_real_model_requests = llm_guard.no_real_model_requests

TRIP = [
    ("user", "We are planning a trip to Lisbon in May, riding tram 28 through Alfama."),
    ("assistant", "Lisbon in May is warm; tram 28 is busiest at noon."),
    ("user", "Which Lisbon day trips would you add, Sintra or Cascais?"),
    ("assistant", "Sintra for the palaces, Cascais for the beach; both are an easy train from Lisbon."),
    ("user", "Book the Lisbon hotel near Alfama for four nights."),
    ("assistant", "A hotel in Alfama puts you near the Lisbon cathedral and the tram."),
]
GARDEN = [("user", "The tomatoes in the garden need compost."), ("assistant", "Compost and sun help tomatoes.")]
QUESTION = "Lisbon tram 28"


@pytest.fixture
def built(tmp_path: Path) -> Dbs:
    """Two conversations through the real stages (offline extraction, default key embedder)."""
    dbs = open_dbs(tmp_path, memory={"key_embedder": "embed"})
    write_archive(dbs.archive, [conversation("trip", TRIP), conversation("garden", GARDEN)])
    run_id = dbs.run_id()
    for stage in (stage_segment, stage_extract, stage_concepts, cues):
        stage.run(dbs.archive, dbs.staging, run_id=run_id, settings=dbs.settings)
    return dbs


def with_llm(settings: Settings, server: FakeLLMServer | None) -> Settings:
    """The same data dir with the expand step on, pointed at the loopback server (or at no LLM)."""
    llm = None
    if server is not None:
        llm = LLMSettings(base_url=server.base_url, model="test-model", max_retries=0, retry_backoff_s=0.01)
    return settings.model_copy(
        update={
            "extract": settings.extract.model_copy(update={"llm": llm}),
            "recall": settings.recall.model_copy(update={"expand_with_llm": True, "expand_pieces": 2}),
        }
    )


def ask(settings: Settings, dbs: Dbs) -> tuple[list[str], object]:
    request = RecallRequest(query=QUESTION, budget_tokens=40, max_pieces=2)
    result = Memory.open(settings).recall(request, on_call=llm_calls.recorder(dbs.staging, "recall-test"))
    return [p.content_id for p in result.pieces], result


def test_an_expand_decision_brings_more_of_the_conversation(built: Dbs, fake_llm: FakeLLMServer) -> None:
    """The model says expand conv:trip: trip messages that the first pass left out enter the context; the request
    is the typed ExpandRequest with a strict schema, and the call is one ok row in llm_calls."""
    first, _ = ask(built.settings, built)
    fake_llm.reply_with(
        Reply.text(
            ExpandResponse(
                decisions=[ExpandDecision(tag_id="conv:trip", action="expand", reason="the plan spans the chat")]
            ).model_dump_json()
        )
    )
    expanded, result = ask(with_llm(built.settings, fake_llm), built)
    assert result.expansion is not None and result.expansion.decided_by == "llm"  # type: ignore[attr-defined]
    assert set(expanded) - set(first), (first, expanded)
    assert all(c.startswith("trip-") for c in set(expanded) - set(first))
    (sent,) = fake_llm.model_requests()
    assert sent.body["response_format"]["json_schema"]["name"] == "expand_decisions"
    asked = ExpandRequest.model_validate_json(sent.body["messages"][1]["content"])
    assert asked.question == QUESTION and "conv:trip" in [t.tag_id for t in asked.tags]
    rows = llm_calls.calls(built.staging, "recall-test")
    assert [(r["status"], r["segment_id"][:7]) for r in rows] == [("ok", "recall:")]


@pytest.mark.parametrize(
    ("reply", "status", "reason"),
    [
        (Reply.text("expand the first one please"), "invalid_json", "not the ExpandResponse contract"),
        (Reply.text('{"decisions": [{"tag_id": "conv:trip", "action": "grow"}]}'), "schema_violation", "action"),
        (
            Reply.text('{"decisions": [{"tag_id": "conv:elsewhere", "action": "expand", "reason": "x"}]}'),
            "schema_violation",
            "not asked about: conv:elsewhere",
        ),
        (Reply.fail(400), "error", "the LLM call failed: HTTP 400"),
    ],
)
def test_a_bad_answer_falls_back_to_the_first_pass(
    built: Dbs, fake_llm: FakeLLMServer, reply: Reply, status: str, reason: str
) -> None:
    """Not JSON, not the contract, a stranger tag, an HTTP error: the deterministic result, the reason kept and
    the attempt recorded with its status."""
    first, _ = ask(built.settings, built)
    fake_llm.reply_with(reply)
    after, result = ask(with_llm(built.settings, fake_llm), built)
    outcome = result.expansion  # type: ignore[attr-defined]
    assert after == first
    assert outcome.decided_by == "default" and reason in outcome.fallback_reason
    assert all(d.action == "stop" for d in outcome.decisions) and outcome.decisions
    assert [r["status"] for r in llm_calls.calls(built.staging, "recall-test")] == [status]


def test_without_an_llm_the_default_is_stop_and_nothing_is_sent(built: Dbs, fake_llm: FakeLLMServer) -> None:
    """The step on but no extract.llm: the first pass stands, decided_by default, no request made."""
    first, _ = ask(built.settings, built)
    after, result = ask(with_llm(built.settings, None), built)
    outcome = result.expansion  # type: ignore[attr-defined]
    assert after == first and outcome.decided_by == "default" and "no LLM configured" in outcome.fallback_reason
    assert fake_llm.model_requests() == [] and json.loads(result.model_dump_json())["expansion"]["decisions"]  # type: ignore[attr-defined]


@pytest.fixture
def fresh_breaker(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test starts in a process where no endpoint has failed yet."""
    monkeypatch.setattr(expand_module, "DOWN", Breaker())


def dead_llm(settings: Settings, base_url: str, **values: object) -> Settings:
    """The expand step on, pointed at an endpoint that does not answer, with the default retry settings."""
    llm = LLMSettings(base_url=base_url, model="test-model", **values)  # type: ignore[arg-type]
    return settings.model_copy(
        update={
            "extract": settings.extract.model_copy(update={"llm": llm}),
            "recall": settings.recall.model_copy(update={"expand_with_llm": True}),
        }
    )


def refused_port() -> int:
    """A loopback port nobody listens on: a connection there is refused at once."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def recall_twice(settings: Settings, dbs: Dbs) -> list[tuple[object, list[dict[str, object]]]]:
    """Two recalls in one process (as an MCP server makes them), each with the llm_calls rows it wrote."""
    seen = []
    for run in ("recall-1", "recall-2"):
        result = Memory.open(settings).recall(
            RecallRequest(query=QUESTION, budget_tokens=40, max_pieces=2),
            on_call=llm_calls.recorder(dbs.staging, run),
        )
        seen.append((result.expansion, llm_calls.calls(dbs.staging, run)))
    return seen


def test_a_refused_endpoint_is_tried_once_then_every_recall_falls_back_at_once(
    built: Dbs, fresh_breaker: None, caplog: pytest.LogCaptureFixture
) -> None:
    """A refused connection is not retried (4 retries with backoff were 15-20 s per recall): the first recall
    records one attempt and warns once; the next one sends nothing and keeps the first pass, quietly."""
    first_pass, _ = ask(built.settings, built)
    settings = dead_llm(built.settings, f"http://127.0.0.1:{refused_port()}/v1")
    with caplog.at_level(logging.WARNING, logger="memory.expand"):
        (one, one_calls), (two, two_calls) = recall_twice(settings, built)
    assert [(c["status"], c["attempt"], str(c["error"])[:18]) for c in one_calls] == [
        ("transient_error", 1, "connection failed:")
    ]
    assert one.decided_by == "default" and "cannot be reached (connection failed:" in one.fallback_reason  # type: ignore[attr-defined]
    assert two_calls == [] and two.decided_by == "default"  # type: ignore[attr-defined]
    assert "failed earlier in this process" in two.fallback_reason  # type: ignore[attr-defined]
    assert all(d.action == "stop" for d in two.decisions) and two.decisions  # type: ignore[attr-defined]
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1 and "restart to try it again" in warnings[0], warnings
    assert ask(settings, built)[0] == first_pass


def test_an_endpoint_that_never_answers_costs_one_timeout_per_process(built: Dbs, fresh_breaker: None) -> None:
    """A server that accepts and never replies: the first recall waits timeout_s once (no retry), the second
    does not connect at all."""
    accepted: list[socket.socket] = []
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(8)

        def hold() -> None:
            with contextlib.suppress(OSError):
                while True:
                    accepted.append(server.accept()[0])

        threading.Thread(target=hold, daemon=True).start()
        base_url = f"http://127.0.0.1:{server.getsockname()[1]}/v1"
        (_, one_calls), (two, two_calls) = recall_twice(dead_llm(built.settings, base_url, timeout_s=0.5), built)
        connections = len(accepted)
    for conn in accepted:
        conn.close()
    assert [(c["status"], c["error"]) for c in one_calls] == [("transient_error", "timed out")]
    assert two_calls == [] and "failed earlier in this process (timed out)" in two.fallback_reason  # type: ignore[attr-defined]
    assert connections == 1


def test_a_host_that_drops_the_connection_attempt_fails_on_the_connect_timeout(built: Dbs, fresh_breaker: None) -> None:
    """A listener whose accept queue is full drops new connection attempts (as a dead host does): the call
    ends on connect_timeout_s, not on timeout_s (an hour here, past the test's own timeout)."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(0)
        filler = socket.create_connection(server.getsockname(), timeout=10)  # the queue (backlog 0) is now full
        try:
            base_url = f"http://127.0.0.1:{server.getsockname()[1]}/v1"
            settings = dead_llm(built.settings, base_url, timeout_s=3600.0, connect_timeout_s=0.3)
            (one, one_calls), _ = recall_twice(settings, built)
        finally:
            filler.close()
    assert [(c["status"], c["error"]) for c in one_calls] == [("transient_error", "timed out")]
    assert one.decided_by == "default"  # type: ignore[attr-defined]


def test_a_refused_key_is_sent_once_per_process_then_every_recall_falls_back_at_once(
    built: Dbs, fake_llm: FakeLLMServer, caplog: pytest.LogCaptureFixture
) -> None:
    """A 401: the first recall records one attempt and warns once, naming the endpoint and what to do; the next
    one sends nothing (the shared client remembers the refused key: clients.llm.REFUSED), writes no llm_calls
    row and keeps the first pass, quietly."""
    first_pass, _ = ask(built.settings, built)
    fake_llm.responder = lambda body: Reply.fail(401)
    settings = with_llm(built.settings, fake_llm)
    with caplog.at_level(logging.WARNING, logger="memory.expand"):
        (one, one_calls), (two, two_calls) = recall_twice(settings, built)
    assert [(c["status"], str(c["error"])[:8]) for c in one_calls] == [("error", "HTTP 401")]
    assert len(fake_llm.model_requests()) == 1 and two_calls == []
    assert f"{fake_llm.base_url} refused the API key (HTTP 401" in one.fallback_reason  # type: ignore[attr-defined]
    assert "refused the API key" in two.fallback_reason and two.decided_by == "default"  # type: ignore[attr-defined]
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1 and "fix the key and run again" in warnings[0], warnings
    assert ask(settings, built)[0] == first_pass
