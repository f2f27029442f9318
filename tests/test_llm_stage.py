"""The extract stage with the LLM extractor selected by settings, against the fake server: cache, staging, budget."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from concept_support import Dbs, conversation, open_dbs, write_archive
from stage_support import stage_extract, stage_segment

from staging import llm_calls
from tests import llm_guard, llm_server
from tests.llm_cases import SECRET
from tests.llm_server import FakeLLMServer, quoting_responder

fake_llm = llm_server.fake_llm
no_real_model_requests = llm_guard.no_real_model_requests

CHATS = {
    "garden": [("user", "I want to grow a vegetable garden this spring."), ("assistant", "Start with compost.")],
    "trip": [("user", "We are planning a trip to Lisbon in May."), ("assistant", "Take tram 28 early.")],
    "piano": [("user", "I practise piano every evening after dinner."), ("assistant", "Scales first, then pieces.")],
}


def segmented(tmp_path: Path, server: FakeLLMServer, **llm: Any) -> tuple[Dbs, str]:
    settings = {"base_url": server.base_url, "model": "test-model", "api_key": SECRET, "retry_backoff_s": 0.01}
    dbs = open_dbs(tmp_path, extract={"llm": settings | llm})
    write_archive(dbs.archive, [conversation(name, turns) for name, turns in CHATS.items()])
    run_id = dbs.run_id()
    stage_segment.run(dbs.archive, dbs.staging, run_id=run_id, settings=dbs.settings)
    return dbs, run_id


def extract(dbs: Dbs, run_id: str) -> Any:
    return stage_extract.run(dbs.archive, dbs.staging, run_id=run_id, settings=dbs.settings)


def test_rerun_with_nothing_changed_makes_zero_requests(fake_llm: FakeLLMServer, tmp_path: Path) -> None:
    """First run: one request per segment, each staged under the extraction's key; second run: zero requests."""
    fake_llm.responder = quoting_responder()
    dbs, run_id = segmented(tmp_path, fake_llm)
    first = extract(dbs, run_id)
    assert len(fake_llm.model_requests()) == 3 and first.counts["hypotheses_kept"] == 3
    calls = llm_calls.calls(dbs.staging, run_id)
    assert [c["status"] for c in calls] == ["ok"] * 3
    extraction_keys = {row[0] for row in dbs.staging.execute("SELECT cache_key FROM extractions")}
    assert {c["cache_key"] for c in calls} == extraction_keys  # a call joins the extraction it produced
    assert first.counts["tokens_per_1k_messages"] == 150 * 3 * 1000 // 6
    again = extract(dbs, dbs.run_id())
    assert len(fake_llm.model_requests()) == 3 and again.counts["extractor_calls"] == 0
    assert again.status == "skipped"
    assert SECRET not in "\n".join(dbs.staging.iterdump())


def test_budget_stops_the_stage_cleanly_and_a_rerun_continues(fake_llm: FakeLLMServer, tmp_path: Path) -> None:
    """With a budget for two calls the stage succeeds with a re-run note; the next run extracts the last one."""
    fake_llm.responder = quoting_responder()
    dbs, run_id = segmented(tmp_path, fake_llm, token_budget=300, max_concurrency=1)
    first = extract(dbs, run_id)
    assert first.status == "succeeded" and len(fake_llm.model_requests()) == 2
    assert any("re-run" in note for note in first.notes)
    second = extract(dbs, dbs.run_id())
    assert len(fake_llm.model_requests()) == 3 and second.counts["extractor_calls"] == 1
