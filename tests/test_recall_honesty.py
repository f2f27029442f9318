"""Recall says what it knows, as of when (issue 21): best first by default, nothing learnt after `at` in any field
of the result, weak matches marked, an empty answer always with its reason. Hand-made memories built by the real
graph builder (tests/memory_support.py), asked through memory.service.Memory, the object the CLI and MCP use."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta

from memory_support import T0, memory, msg
from test_recall_facts import record

from contracts.memory import RecallRequest, RecallScope
from contracts.settings import Settings
from memory.graph import EvidenceInput
from memory.service import Memory

AT = T0 + timedelta(days=5)
EARLY = [
    msg("etl", 0, "Our nightly ETL copies the orders table into the warehouse", day=0),
    msg("etl", 1, "Schedule it with cron and log every run", day=0, role="assistant", minute=1),
    msg("etl", 2, "The nightly ETL failed again on the orders table", day=2),
    msg("etl", 3, "Retry the failed load and alert on the second failure", day=2, role="assistant", minute=1),
    msg("cook", 0, "I baked sourdough bread with a new starter", day=3),
]
LATER = [
    # said after AT: a new project and its cue, a near-identical repeat on day 2 after the moment asked about
    msg("glue", 0, "We are moving the ETL to AWS Glue jobs for the warehouse", day=30),
    msg("glue", 1, "Glue crawlers can catalogue the orders table", day=30, role="assistant", minute=1),
    msg("rds", 0, "Our AWS RDS instance now feeds the Glue jobs", day=45),
]
LATER_ONLY = ("glue", "rds", "crawler", "aws")


def _memory() -> Memory:
    evidence = [
        EvidenceInput("c-glue", "Aws glue project", "project", "glue-0", 0.9),
        EvidenceInput("c-rds", "Aws rds", "entity", "rds-0", 0.9),
        EvidenceInput("c-etl", "Nightly ETL", "project", "etl-0", 0.9),
        EvidenceInput("c-etl", "Nightly ETL", "project", "etl-2", 0.9),
    ]
    index, config = memory([*EARLY, *LATER], evidence)
    index.facts = [
        record("f-early", "the warehouse ETL", "2024-01-01", "etl-0"),
        record("f-late", "AWS Glue", "2024-01-31", "glue-0"),
    ]
    index.fact_positions = {"etl-0": 0, "glue-0": len(EARLY)}
    settings = Settings().model_copy(update={"recall": config})
    return Memory(settings, index, None)


def test_nothing_learnt_after_at_reaches_any_field_of_the_result() -> None:
    """`recall "aws glue etl" --at day 5` on a memory whose Glue and RDS cues, pieces and facts all come later:
    no field of the RecallResult (pieces, texts, paths, cues, facts, fact changes, reasons) names any of them."""
    result = _memory().recall(RecallRequest(query="aws glue etl orders", at=AT, budget_tokens=5000))
    dumped = json.dumps(result.model_dump(mode="json", exclude={"query"})).casefold()  # every field but the question
    for word in LATER_ONLY:
        assert not re.search(rf"\b{word}", dumped), (word, dumped[:400])
    assert result.pieces and all(p.created_at is not None and p.created_at <= AT for p in result.pieces)
    assert {c.label for c in result.cues} == {"Nightly ETL"} | {c.label for c in result.cues if "glue" not in c.label}
    assert [f.value for f in result.facts] == ["the warehouse ETL"]
    later = _memory().recall(RecallRequest(query="aws glue etl orders", budget_tokens=5000))
    assert "aws glue project" in json.dumps(later.model_dump(mode="json", exclude={"query"})).casefold()  # known now


def test_a_merged_groups_originals_said_after_at_stay_out() -> None:
    """Two near-identical turns on one day are one merged node; asked between them, only the first comes back."""
    repeated = [
        msg("ops", 0, "The orders export to the warehouse timed out again tonight", day=1),
        msg("ops", 1, "The orders export to the warehouse timed out again tonight", day=1, minute=50),
        msg("ops", 2, "Increase the timeout", day=1, role="assistant", minute=51),
    ]
    index, config = memory(repeated)
    assert index.group, "the builder merged the two repeated turns"
    service = Memory(Settings().model_copy(update={"recall": config}), index, None)
    at = T0 + timedelta(days=1, minutes=10)
    result = service.recall(RecallRequest(query="orders export timed out", at=at))
    ids = [m for p in result.pieces for m in p.message_ids]
    assert "ops-0" in ids and "ops-1" not in ids and "ops-2" not in ids


def test_pieces_come_best_first_by_default_and_in_conversation_order_on_request() -> None:
    service = _memory()
    best = service.recall(RecallRequest(query="nightly ETL failed orders", budget_tokens=5000))
    assert best.order == "relevance" and len(best.pieces) >= 3
    assert [p.rank for p in best.pieces] == sorted(p.rank for p in best.pieces)
    assert [p.score for p in best.pieces] == sorted((p.score for p in best.pieces), reverse=True)
    reading = service.recall(RecallRequest(query="nightly ETL failed orders", budget_tokens=5000, order="time"))
    assert reading.order == "time"
    assert {p.content_id for p in reading.pieces} == {p.content_id for p in best.pieces}
    times = [(p.created_at, p.seq) for p in reading.pieces if p.conversation_id == "etl"]
    assert times == sorted(times)


def test_a_query_about_nothing_in_the_memory_comes_back_empty_with_its_reason() -> None:
    """No key term and no cue matches: no piece, and `empty_reason` says why (no budget filled with strangers)."""
    service = _memory()
    for query in ("zzzqqq xyzzy", "bakery comparison chart", "x", "what about it?"):
        result = service.recall(RecallRequest(query=query))
        assert result.pieces == [] and result.tokens == 0, (query, result.pieces[:1])
        assert result.empty_reason and result.empty_reason.startswith("nothing relevant"), (query, result)


def test_an_empty_scope_says_so() -> None:
    """A scope that excludes everything (a window before the first message) is empty with the reason."""
    scope = RecallScope(since=None, until=datetime(2023, 1, 1, tzinfo=UTC))
    result = _memory().recall(RecallRequest(query="nightly ETL", scope=scope))
    assert result.pieces == [] and result.empty_reason and "nothing in scope" in result.empty_reason


def test_pieces_without_the_querys_key_terms_are_marked_weak() -> None:
    """ "sourdough warehouse": the bread turn holds the rarer word (one turn has it), the ETL turn only the more
    common one (two have it): less than half of the query's information, so it is weak and the bread turn is not;
    "bakery warehouse" (bakery: a word the memory never saw) leaves every piece weak, and the result says so."""
    result = _memory().recall(RecallRequest(query="sourdough warehouse", budget_tokens=5000))
    weak = {p.content_id: p.weak for p in result.pieces}
    assert weak["cook-0"] is False and weak["etl-0"] is True, weak
    assert result.weak_reason is None
    unknown = _memory().recall(RecallRequest(query="bakery warehouse", budget_tokens=5000))
    assert unknown.pieces and all(p.weak for p in unknown.pieces)
    assert unknown.weak_reason and unknown.weak_reason.startswith("weak matches only")
