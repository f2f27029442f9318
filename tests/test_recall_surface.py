"""What a recall hands an agent, on a real small memory (segment -> extract -> concepts -> garden -> cues): the
garden's facts with their validity in RecallResult and over MCP, an empty answer with a reason for a query about
nothing in the memory, and argument errors as one line through the MCP SDK's own client (in-process)."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import pytest
from click.testing import CliRunner
from concept_support import Dbs, conversation, open_dbs, write_archive
from mcp import Client
from stage_support import cues_stage as cues
from stage_support import garden_stage as garden
from stage_support import stage_concepts, stage_extract, stage_segment

from clients.embedders import whole_words
from contracts.memory import RecallRequest
from flows.cli import cli
from flows.cli_concepts import around
from memory.mcp_server import MemoryService, build_server
from memory.service import Memory

PARIS = [("user", "I live in Paris and I love the bakeries here."), ("assistant", "Try the covered passages.")]
BERLIN = [("user", "I moved to Berlin last week. Which cafes are good?"), ("assistant", "Kreuzberg has many cafes.")]
TRIP = [("user", "We are planning a trip to Lisbon in May."), ("assistant", "Lisbon in May: take tram 28 early.")]


@pytest.fixture
def built(tmp_path: Path) -> Dbs:
    """Three conversations, a move from Paris (2022) to Berlin (2023), through the real stages."""
    dbs = open_dbs(tmp_path, memory={"key_embedder": "embed"})
    write_archive(
        dbs.archive,
        [
            conversation("paris", PARIS, start=datetime(2022, 1, 10, 10, tzinfo=UTC)),
            conversation("berlin", BERLIN, start=datetime(2023, 5, 2, 10, tzinfo=UTC)),
            conversation("trip", TRIP, start=datetime(2023, 5, 20, 10, tzinfo=UTC)),
        ],
    )
    run_id = dbs.run_id()
    for stage in (stage_segment, stage_extract, stage_concepts, garden, cues):
        stage.run(dbs.archive, dbs.staging, run_id=run_id, settings=dbs.settings)
    return dbs


def test_recall_result_carries_the_facts_as_they_stood_at(built: Dbs) -> None:
    """At 2023-06 the current fact is Berlin and Paris is superseded (valid_to set); at 2022-06 only Paris holds."""
    memory = Memory.open(built.settings)
    after = memory.recall(RecallRequest(query="where do I live?", at=datetime(2023, 6, 1, tzinfo=UTC)))
    assert [(f.value, f.superseded) for f in after.facts] == [("Berlin", False), ("Paris", True)]
    assert after.facts[0].valid_to is None and after.facts[1].valid_to is not None
    assert after.facts[1].valid_to.date().isoformat() == "2023-05-02"
    assert after.facts[0].line == "user lives in Berlin since 2023-05-02"
    assert after.fact_changes == ["user lives in: Paris from 2022-01-10 until 2023-05-02, Berlin since 2023-05-02"]
    before = memory.recall(RecallRequest(query="where do I live?", at=datetime(2022, 6, 1, tzinfo=UTC)))
    assert [(f.value, f.superseded, f.valid_to) for f in before.facts] == [("Paris", False, None)]
    assert before.fact_changes == []
    assert before.facts[0].message_ids == ["paris-m0"]


def test_a_query_about_nothing_in_the_memory_recalls_nothing_and_says_why(built: Dbs) -> None:
    """No word in any key, no cue, a low cosine: no pieces and a reason; a real question still gets pieces."""
    memory = Memory.open(built.settings)
    nonsense = memory.recall(RecallRequest(query="xylophone quantum chromodynamics"))  # real words, absent here
    assert nonsense.pieces == [] and nonsense.tokens == 0
    assert nonsense.empty_reason is not None and nonsense.empty_reason.startswith("nothing relevant")
    assert "min_similarity" in nonsense.empty_reason
    real = memory.recall(RecallRequest(query="Lisbon tram"))
    assert real.empty_reason is None and min(real.pieces, key=lambda p: p.rank).conversation_id == "trip"


GIBBERISH = ["zxqv blorpt frimble", "flurb glomp snarg", "asdf qwerty", "blorptangle?", "xqzvt frobnicate zorp"]
REAL = {"where do I live?": "paris", "Lisbon tram": "trip", "which cafes are good in Berlin": "berlin"}


def test_gibberish_recalls_nothing_and_real_questions_still_answer(built: Dbs) -> None:
    """Queries made only of word-piece fragments come back empty with a reason; real questions keep their pieces."""
    # min_similarity 0: the cosine floor lets everything through, so only the whole-word rule can empty these
    # (on a memory this small their best cosine is low; on the demo's it is 0.44-0.58, above the default 0.35)
    settings = built.settings.model_copy(
        update={"recall": built.settings.recall.model_copy(update={"min_similarity": 0.0})}
    )
    memory = Memory.open(settings)
    for query in GIBBERISH:
        result = memory.recall(RecallRequest(query=query))
        assert result.pieces == [] and result.cues == [], (query, result.pieces[:1])
        assert result.empty_reason is not None and "word-piece fragments" in result.empty_reason, query
    for query, conversation_id in REAL.items():
        result = memory.recall(RecallRequest(query=query))
        assert result.empty_reason is None and result.pieces, query
        assert conversation_id in {p.conversation_id for p in result.pieces}, query
    assert whole_words("zxqv blorpt frimble, where do I live?") == ["where", "do", "i", "live"]


def test_a_scope_with_nothing_before_at_says_so(built: Dbs) -> None:
    """A recall at a date before anything was said: empty, with 'nothing in scope' as the reason."""
    result = Memory.open(built.settings).recall(RecallRequest(query="Paris", at=datetime(2020, 1, 1, tzinfo=UTC)))
    assert result.pieces == [] and result.empty_reason is not None and result.empty_reason.startswith("nothing in")


def call(service: MemoryService, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    """Each tool call through the SDK's client, connected in-process to the real server."""

    async def main() -> list[Any]:
        async with Client(build_server(service)) as client:
            return [await client.call_tool(name, arguments) for name, arguments in calls]

    return anyio.run(main)


def test_the_mcp_recall_tool_returns_the_facts(built: Dbs) -> None:
    """The MCP recall tool's structured output has the facts with their validity and the change lines."""
    (answer,) = call(MemoryService(built.settings), [("recall", {"query": "where do I live?", "at": "2023-06-01"})])
    assert not answer.is_error, answer.content
    facts = answer.structured_content["facts"]
    assert [(f["value"], f["superseded"]) for f in facts] == [("Berlin", False), ("Paris", True)]
    assert facts[1]["valid_to"].startswith("2023-05-02") and facts[0]["valid_from"].startswith("2023-05-02")
    assert answer.structured_content["fact_changes"][0].startswith("user lives in: Paris from 2022-01-10")


def test_mcp_argument_errors_are_one_actionable_line(built: Dbs) -> None:
    """Bad arguments: one line naming each field, what it must be and what was sent; the next call still works."""
    *bad, fine = call(
        MemoryService(built.settings),
        [
            ("recall", {"query": "", "budget_tokens": 0}),
            ("recall", {"query": "Lisbon", "scope": {"since": "not a date"}}),
            ("search_concepts", {"query": "Lisbon", "limit": -1}),
            ("recall", {"query": "Lisbon"}),
        ],
    )
    texts = [r.content[0].text for r in bad]
    assert all(r.is_error for r in bad) and all("\n" not in t for t in texts), texts
    assert texts[0].startswith("invalid arguments to recall: ")
    assert "query: string should have at least 1 character (got '')" in texts[0]
    assert "budget_tokens: input should be greater than or equal to 1 (got 0)" in texts[0]
    assert "scope.since:" in texts[1] and "(got 'not a date')" in texts[1]
    assert texts[2].startswith("invalid arguments to search_concepts: limit: ")
    assert texts[0].endswith("fix them and call again (see its input schema)")
    assert not fine.is_error


def test_the_mcp_recall_tool_has_no_facts_when_their_weight_is_zero(built: Dbs) -> None:
    """recall.fact_weight 0 turns the facts off in the result object the MCP tool returns (the CLI printed them)."""
    recall = built.settings.recall.model_copy(update={"fact_weight": 0.0})
    off = built.settings.model_copy(update={"recall": recall})
    (answer,) = call(MemoryService(off), [("recall", {"query": "where do I live?", "at": "2023-06-01"})])
    assert not answer.is_error, answer.content
    assert answer.structured_content["facts"] == [] and answer.structured_content["fact_changes"] == []


CRLF = [
    ("user", "My sourdough starter recipe:\r\n100 g flour\r\n100 g water\rfeed it daily"),
    ("assistant", "Keep the sourdough starter warm."),
]
LONG_TALK = ", ".join(["we talked about the weather and the traffic and the neighbours that afternoon"] * 6)
TUNNELS = [  # one long sentence: the evidence span is the sentence the concept was found in
    ("user", f"So {LONG_TALK}, and I'm also thinking of creating a cat playground with cardboard boxes, {LONG_TALK}."),
    ("assistant", "Cardboard boxes and tunnels make a cheap cat playground."),
]


@pytest.fixture
def windows_export(tmp_path: Path) -> Dbs:
    """A conversation written with Windows line ends and one long turn, through the real stages."""
    dbs = open_dbs(tmp_path)
    write_archive(
        dbs.archive,
        [
            conversation("bread", CRLF, start=datetime(2023, 3, 1, 10, tzinfo=UTC)),
            conversation("cat", TUNNELS, start=datetime(2023, 3, 2, 10, tzinfo=UTC)),
        ],
    )
    run_id = dbs.run_id()
    for stage in (stage_segment, stage_extract, stage_concepts, garden, cues):
        stage.run(dbs.archive, dbs.staging, run_id=run_id, settings=dbs.settings)
    return dbs


def test_recall_prints_windows_line_ends_as_plain_newlines(windows_export: Dbs) -> None:
    """`chatmem recall` printed `\\x0d` at each line end of a CRLF message (the terminal-safety escaping)."""
    data_dir = str(windows_export.settings.data_dir)
    done = CliRunner().invoke(cli, ["--data-dir", data_dir, "recall", "sourdough starter recipe"])
    assert done.exit_code == 0, done.output
    assert "\\x0d" not in done.output and "\r" not in done.output
    assert "My sourdough starter recipe:\n100 g flour\n100 g water\nfeed it daily" in done.output


def test_concepts_show_evidence_around_the_concepts_words(windows_export: Dbs) -> None:
    """`chatmem concepts` cut the middle of a long evidence span, where the concept was found; now each span is
    a window around the concept's title words, "…" at the cut ends."""
    data_dir = str(windows_export.settings.data_dir)
    done = CliRunner().invoke(cli, ["--data-dir", data_dir, "concepts", "--evidence", "0"], env={"COLUMNS": "120"})
    assert done.exit_code == 0, done.output
    checked = 0
    title = ""
    for line in done.output.splitlines():
        if not line.startswith("    "):
            title = line.split("  [", 1)[0]
            continue
        if line.startswith("    evidence ") and "…" in line:
            span = line.split("): ", 1)[1]
            words = [w for w in title.casefold().split() if len(w) >= 3]
            assert any(w.rstrip("s") in span.casefold() for w in words), (title, span)
            checked += 1
    assert checked, done.output


def test_a_long_span_keeps_its_matched_words() -> None:
    """The cold pass's line: "I'm also thinking of creating …g cardboard boxes and tunnels" lost the words the
    concept was found by; the window keeps them and cuts the ends."""
    text = TUNNELS[0][1]
    shown = around(text, ["Cat playground"], 60)
    assert "cat playground" in shown and shown.startswith("…") and shown.endswith("…") and len(shown) <= 60
    assert around("short text", ["x"], 60) == "short text"
    assert around(LONG_TALK, ["nothing here"], 40).endswith("…")


def test_a_concepts_span_is_the_same_window_whatever_the_hash_seed() -> None:
    """Two of the concept's words, each alone in its stretch of a long span: a tie between two windows. The window
    shown is the same in every process (it followed the order of a set of words, which the hash seed sets)."""
    import subprocess
    import sys

    line = "alpha " + "filler " * 40 + "beta " + "filler " * 40
    code = f"from flows.cli_concepts import around; print(around({line!r}, ['Alpha Beta'], 40))"
    shown = {
        subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONHASHSEED": str(seed)},
        ).stdout
        for seed in range(6)
    }
    assert len(shown) == 1 and "alpha" in shown.pop()
