"""LLM topic labels (cluster/labels_llm.py) against the real loopback OpenAI-compatible server: a refused key."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from pydantic import SecretStr

from cluster.labels_llm import LabelCounts, llm_labels
from contracts.settings import LLMSettings
from staging import llm_calls
from staging.ledger import open_staging
from tests import llm_guard, llm_server
from tests.llm_cases import SECRET
from tests.llm_server import FakeLLMServer, Reply

fake_llm = llm_server.fake_llm
no_real_model_requests = llm_guard.no_real_model_requests  # autouse: nothing leaves the machine

TOPICS = [{"topic": n, "topic_uid": f"uid{n}", "keywords": ["sourdough", "oven"]} for n in range(4)]


def test_a_refused_key_is_said_once_and_the_topics_are_left_for_a_fixed_key(
    fake_llm: FakeLLMServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A 401 (quoting the key) for the first topic: one request, one warning naming the endpoint and what to do,
    the key masked; the other topics are not asked and nothing is cached, so that the same topics with a fixed
    key are all named (they were not cached as failed)."""
    fake_llm.responder = lambda body: Reply.echoing(401)
    llm = LLMSettings(model="tiny", base_url=fake_llm.base_url, api_key=SecretStr(SECRET), max_retries=2)
    staging = open_staging(tmp_path / "staging.db")
    counts = LabelCounts()
    try:
        with caplog.at_level(logging.WARNING, logger="cluster"):
            found = llm_labels(staging, llm, TOPICS, {}, counts, on_call=llm_calls.recorder(staging, "r-refused"))
        rows = llm_calls.calls(staging, "r-refused")
        fake_llm.responder = lambda body: Reply.text("Sourdough baking")
        fixed = llm.model_copy(update={"api_key": SecretStr("sk-test-the-fixed-key-42")})
        again = LabelCounts()
        named = llm_labels(staging, fixed, TOPICS, {}, again)
    finally:
        staging.close()
    assert found == {} and (counts.calls, counts.refused, counts.failed) == (1, 4, 0)
    assert [(r["segment_id"], r["status"]) for r in rows] == [("topic:uid0", "error")]
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1, warnings
    assert f"{fake_llm.base_url} refused the API key (HTTP 401" in warnings[0]
    assert "fix the key and run again" in warnings[0] and "4 topic(s)" in warnings[0]
    assert SECRET not in warnings[0] and "***" in warnings[0]
    assert named == {n: "Sourdough baking" for n in range(4)} and (again.calls, again.cached) == (4, 0)
    assert len(fake_llm.model_requests()) == 1 + 4
