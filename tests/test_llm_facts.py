"""Facts through the LLM extractor: the model's `facts` (ExtractionResponse v2) go through the fact mapper, are
stored with the extraction, and the garden keeps their validity; against the fake server (real HTTP on loopback)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from concept_support import conversation, open_dbs, write_archive
from stage_support import garden_stage, stage_extract, stage_segment

from contracts.concepts import EvidenceSpan, ExtractionResponse, Fact
from staging.fact_timeline import timeline
from tests import llm_guard, llm_server
from tests.llm_cases import SECRET
from tests.llm_server import FakeLLMServer, Reply

fake_llm = llm_server.fake_llm
no_real_model_requests = llm_guard.no_real_model_requests

CHATS = {
    "phone-2022": ("2022-02-01", "My phone is a Pixel 6 and the battery is dying.", "Try a battery saver."),
    "phone-2023": ("2023-11-20", "Upgraded! My phone is a Pixel 8 now.", "Enjoy the Pixel 8 camera."),
}


def fact(segment_id: str, message_id: str, value: str, text: str) -> Fact:
    span = EvidenceSpan(source_id=segment_id, message_id=message_id, text=text, confidence=0.9)
    return Fact(subject="my phone", attribute="Model", value=value, polarity="positive", evidence=span, confidence=0.9)


def responder(body: dict[str, Any]) -> Reply:
    """Answer each segment with its user's phone fact, plus one fact that cites the assistant (to be rejected)."""
    prompt = body["messages"][-1]["content"]
    segment_id = prompt.split("Segment id: ")[1].split("\n")[0]
    name = next(n for n in CHATS if f"({n})" in prompt)
    user, assistant = f"{name}-m0", f"{name}-m1"
    value = "Pixel 6" if name == "phone-2022" else "Pixel 8"
    said = CHATS[name][1].split(" and")[0].rstrip(".").split("! ")[-1]
    facts = [fact(segment_id, user, value, said), fact(segment_id, assistant, "Pixel 8", CHATS[name][2].rstrip("."))]
    return Reply.valid(ExtractionResponse(hypotheses=[], facts=facts))


def test_llm_facts_are_checked_stored_and_gardened(fake_llm: FakeLLMServer, tmp_path: Path) -> None:
    """The user's facts are kept (folded names), the assistant's rejected; the newer phone closes the older one."""
    fake_llm.responder = responder
    settings = {"base_url": fake_llm.base_url, "model": "test-model", "api_key": SECRET, "retry_backoff_s": 0.01}
    dbs = open_dbs(tmp_path, extract={"llm": settings})
    chats = [
        conversation(name, [("user", user), ("assistant", reply)], datetime.fromisoformat(day).replace(tzinfo=UTC))
        for name, (day, user, reply) in CHATS.items()
    ]
    write_archive(dbs.archive, chats)
    run_id = dbs.run_id()
    stage_segment.run(dbs.archive, dbs.staging, run_id=run_id, settings=dbs.settings)
    result = stage_extract.run(dbs.archive, dbs.staging, run_id=run_id, settings=dbs.settings)
    assert result.counts["facts_kept"] == 2
    rules = [r[0] for r in dbs.staging.execute("SELECT rule FROM mapper_decisions WHERE field LIKE 'facts[%'")]
    assert rules.count("fact_not_from_user") == 2
    garden_stage.run(dbs.archive, dbs.staging, run_id=run_id, settings=dbs.settings, now="2024-01-01T00:00:00+00:00")
    records = timeline(dbs.staging, subject="user's phone")
    assert [(r.attribute, r.value, r.state) for r in records] == [
        ("model", "Pixel 6", "superseded"),
        ("model", "Pixel 8", "valid"),
    ]
    assert f"{records[0].valid_to:%Y-%m-%d}" == "2023-11-20"
