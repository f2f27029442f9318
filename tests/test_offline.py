"""The offline extractor (extract.offline): deterministic hypotheses from the messages themselves."""

from __future__ import annotations

import pytest
from concept_support import segment_input

from extract.offline import OfflineExtractor

SEGMENT = segment_input(
    "seg-1",
    [
        ("user", "I want to finish the kitchen renovation before summer. The kitchen renovation budget is tight."),
        ("assistant", "For a kitchen renovation on a budget, repaint the cabinets and keep the layout."),
        ("user", "My sister Maria Lopez is helping. We're also struggling with the garden fence."),
        ("assistant", "Maria Lopez sounds like a great help with the kitchen."),
    ],
)


def test_same_segment_gives_the_same_hypotheses() -> None:
    """Deterministic: two runs (and two instances) produce identical output."""
    first = OfflineExtractor().extract(SEGMENT).hypotheses
    assert first == OfflineExtractor().extract(SEGMENT).hypotheses and first


def test_every_evidence_span_is_copied_verbatim_from_its_message() -> None:
    """Spans are substrings of the cited message, and cite messages of the segment."""
    texts = {m.message_id: m.text for m in SEGMENT.messages}
    for hypothesis in OfflineExtractor().extract(SEGMENT).hypotheses:
        assert hypothesis.evidence_spans
        for span in hypothesis.evidence_spans:
            assert span.text in texts[span.message_id] and span.source_id == "seg-1"


def test_keyphrases_and_names_are_found_and_typed_by_cues() -> None:
    """A repeated keyphrase after "I want to" is a goal, a capitalised name is an entity, "struggling" a tension."""
    found = {h.title: h.type for h in OfflineExtractor().extract(SEGMENT).hypotheses}
    assert found["Kitchen renovation"] == "goal"
    assert found["Maria Lopez"] == "entity"
    assert found["Garden fence"] == "tension"


def test_it_is_announced_as_offline_and_costs_no_tokens() -> None:
    """Name "offline", descriptions that say so, zero usage, no raw model response."""
    extractor = OfflineExtractor()
    output = extractor.extract(SEGMENT)
    assert extractor.name == "offline" and "offline" in extractor.cache_key_parts
    assert all(h.description.startswith("Offline extractor") for h in output.hypotheses)
    assert output.raw_response is None and output.usage.prompt_tokens == output.usage.completion_tokens == 0


def test_at_most_max_concepts_and_nothing_from_small_talk() -> None:
    """The cap holds; a segment of greetings and stopwords yields nothing."""
    assert len(OfflineExtractor(max_concepts=2).extract(SEGMENT).hypotheses) == 2
    chit_chat = segment_input("seg-2", [("user", "Hi! Thanks, that is great."), ("assistant", "You're welcome!")])
    assert OfflineExtractor().extract(chit_chat).hypotheses == []


def test_extract_many_returns_one_result_per_segment() -> None:
    """The Extractor protocol: every segment comes back once, paired with its output."""
    other = segment_input("seg-3", [("user", "Planning a trip to Lisbon in May with my partner.")])
    results = list(OfflineExtractor().extract_many([SEGMENT, other]))
    assert [segment.segment_id for segment, _ in results] == ["seg-1", "seg-3"]


@pytest.mark.slow
def test_a_20_mb_paste_costs_seconds_and_is_read_as_its_opening() -> None:
    """One user message of 20 MB (a log, CSV rows and prose, as pasted): extracted in seconds (a minute before:
    the fact rules ran over all of it, and the mapper folded all of it to check each span), with the concepts of
    its opening, the same as for the message cut to what is read."""
    import time

    from extract.text import READ_USER_CHARS

    rows = [
        f"2024-05-{1 + i % 28:02d}T10:{i % 60:02d}:00Z INFO [worker-{i % 16}] request id={i:08x} took {i % 900}ms\n"
        f"{i},Widget-{i % 999},{i % 97}.99,{i % 50},EU\n"
        + ("The Postgres replica lagged behind the primary during the Kubernetes upgrade.\n" if i % 5 == 0 else "")
        for i in range(20_000_000 // 110)
    ]
    paste = "Why did the Postgres migration fail? Here is the log:\n" + "".join(rows)
    whole = segment_input("seg-huge", [("user", paste), ("assistant", "The replica lagged.")])
    opening = segment_input("seg-huge", [("user", paste[:READ_USER_CHARS]), ("assistant", "The replica lagged.")])
    assert len(paste) > 20_000_000
    started = time.perf_counter()
    found = OfflineExtractor().extract(whole)
    assert time.perf_counter() - started < 30
    assert [h.title for h in found.hypotheses] == [h.title for h in OfflineExtractor().extract(opening).hypotheses]
    assert found.hypotheses
