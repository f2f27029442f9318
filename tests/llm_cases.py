"""Shared cases for the LLM tests: a segment with real-looking text, a valid answer built from the contract
models, settings pointing at the fake server with tiny timeouts and backoff, and small runners."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from pydantic import SecretStr

from contracts.concepts import ConceptHypothesis, EvidenceSpan, ExtractionResponse
from contracts.settings import LLMSettings
from extract.llm import LLMExtractor
from extract.types import ExtractionFailure, ExtractionOutput, SegmentInput, SegmentMessage
from staging import llm_calls
from tests.llm_server import FakeLLMServer, Reply

SECRET = "sk-test-SECRET-0123456789"
TEXTS = (
    ("user", "I'm renovating my kitchen this spring and the cabinets keep going over budget."),
    ("assistant", "Set a cap per category and keep a ten percent reserve for surprises."),
    ("user", "Good idea. I also run every morning before work, it's my only quiet time."),
)


def make_segment(index: int = 0) -> SegmentInput:
    messages = tuple(
        SegmentMessage(f"s{index}-m{i}", role, text, datetime(2024, 5, 1, 10, i, tzinfo=UTC))
        for i, (role, text) in enumerate(TEXTS)
    )
    return SegmentInput(f"seg-{index}", f"conv-{index}", "Kitchen", messages, content_hash=f"hash-{index}")


def answer_for(segment: SegmentInput) -> ExtractionResponse:
    """A valid answer citing the segment's first message verbatim."""
    span = EvidenceSpan(
        source_id=segment.segment_id,
        message_id=segment.messages[0].message_id,
        text="renovating my kitchen this spring",
        confidence=0.9,
    )
    hypothesis = ConceptHypothesis(
        concept_id="kitchen-renovation",
        title="Kitchen renovation",
        type="project",
        description="The user is renovating their kitchen and fighting the cabinet budget.",
        state="active",
        confidence=0.85,
        aliases=["the kitchen"],
        evidence_spans=[span],
        relations=[],
        revision_count=0,
        first_seen=segment.messages[0].created_at,
        last_seen=segment.messages[0].created_at,
    )
    return ExtractionResponse(hypotheses=[hypothesis], facts=[])


def settings_for(server: FakeLLMServer, **overrides: Any) -> LLMSettings:
    values: dict[str, Any] = {
        "base_url": server.base_url,
        "model": "test-model",
        "api_key": SecretStr(SECRET),
        "timeout_s": 2.0,
        "max_retries": 2,
        "retry_backoff_s": 0.01,
        "retry_backoff_max_s": 0.05,
        "max_concurrency": 2,
    }
    return LLMSettings(**(values | overrides))


def run(extractor: LLMExtractor, segments: list[SegmentInput]) -> dict[str, ExtractionOutput | ExtractionFailure]:
    return {segment.segment_id: result for segment, result in extractor.extract_many(segments)}


def extract_one(server: FakeLLMServer, *replies: Reply, **overrides: Any) -> tuple[Any, list[llm_calls.LLMCall]]:
    server.reply_with(*replies)
    calls: list[llm_calls.LLMCall] = []
    extractor = LLMExtractor(settings_for(server, **overrides), on_call=calls.append)
    return run(extractor, [make_segment()])["seg-0"], calls
