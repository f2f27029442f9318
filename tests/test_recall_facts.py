"""Recall that knows what is current: the garden's facts in `chatmem recall --at` and in the recall ranking."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from memory_support import memory, msg

from contracts.facts import FactRecord
from contracts.memory import RecallRequest, RecallScope
from flows.cli import cli
from memory.recall import Switches, rank

MOVES = [
    (
        "paris",
        "u",
        "user",
        "I live in Paris and I love the bakeries here. Any ideas for a rainy weekend?",
        "2022-01-10",
    ),
    ("paris", "a", "assistant", "Try the covered passages and a museum or two.", "2022-01-10"),
    (
        "berlin",
        "u",
        "user",
        "Big news: I moved to Berlin last week. Which neighbourhoods have good cafes?",
        "2023-05-02",
    ),
    ("berlin", "a", "assistant", "Kreuzberg and Prenzlauer Berg have many.", "2023-05-02"),
]


def chatmem(*args: str | Path, data_dir: Path) -> Result:
    return CliRunner().invoke(cli, ["--data-dir", str(data_dir), *map(str, args)], catch_exceptions=False)


@pytest.mark.prefect
@pytest.mark.slow
def test_recall_at_answers_differently_before_and_after_a_move(tmp_path: Path) -> None:
    """`chatmem run` then `chatmem recall "where do I live?" --at`: Paris in 2022, Berlin (and the change) in 2023."""
    export = tmp_path / "moves.jsonl"
    lines = [
        {"conversation_id": c, "id": i, "role": r, "text": t, "created_at": f"{day}T10:00:0{n}Z"}
        for n, (c, i, r, t, day) in enumerate(MOVES)
    ]
    export.write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")
    data_dir = tmp_path / "data"
    assert chatmem("--quiet", "run", export, data_dir=data_dir).exit_code == 0
    before = json.loads(chatmem("recall", "where do I live?", "--at", "2022-06-01", "--json", data_dir=data_dir).stdout)
    after = json.loads(chatmem("recall", "where do I live?", "--at", "2023-06-01", "--json", data_dir=data_dir).stdout)
    assert [f["line"] for f in before["facts"]] == ["user lives in Paris since 2022-01-10"]
    assert [(f["value"], f["superseded"]) for f in before["facts"]] == [("Paris", False)]
    assert [(f["line"], f["superseded"]) for f in after["facts"]] == [
        ("user lives in Berlin since 2023-05-02", False),
        ("user lives in Paris from 2022-01-10 until 2023-05-02", True),
    ]
    assert after["facts"][1]["valid_to"].startswith("2023-05-02") and after["facts"][0]["valid_to"] is None
    assert after["fact_changes"] == ["user lives in: Paris from 2022-01-10 until 2023-05-02, Berlin since 2023-05-02"]
    best = max(after["pieces"], key=lambda p: p["score"])
    assert best["content_id"] == "berlin:u"
    text = chatmem("recall", "where do I live?", "--at", "2023-06-01", data_dir=data_dir).stdout
    assert text.startswith("fact: user lives in Berlin since 2023-05-02")


def record(fact_id: str, value: str, day: str, message_id: str, valid_to: str | None = None) -> FactRecord:
    start = datetime.fromisoformat(f"{day}T12:00:00+00:00")
    end = datetime.fromisoformat(f"{valid_to}T12:00:00+00:00") if valid_to else None
    return FactRecord(
        fact_id=fact_id, subject="user", attribute="lives in", value=value, polarity="positive", valid_from=start,
        valid_to=end, recorded_at=start, invalidated_at=end, state="superseded" if end else "valid",
        superseded_by=None, support=1, last_stated=start, message_ids=[message_id], evidence=[value],
    )  # fmt: skip


def test_the_current_statement_outranks_the_superseded_one_and_the_switch_removes_it() -> None:
    """Two equally matching statements: the fact boost puts the one valid at `at` first; facts=False does not."""
    messages = [
        msg("a", 0, "I live in Paris, near the river.", day=0),
        msg("b", 0, "I live in Berlin, near the river.", day=100),
        msg("c", 0, "Lovely weather by the river today.", day=120),
    ]
    index, settings = memory(messages)
    index.facts = [
        record("f1", "Paris", "2024-01-01", "a-0", "2024-04-10"),
        record("f2", "Berlin", "2024-04-10", "b-0"),
    ]
    index.fact_positions = {"a-0": 0, "b-0": 1}
    request = RecallRequest(query="where do I live", at=datetime(2024, 6, 1, tzinfo=UTC))
    with_facts = rank(index, "where do I live", None, request, settings)
    without = rank(index, "where do I live", None, request, settings, Switches(facts=False))
    assert [index.ids[i] for i in with_facts.order[:2]] == ["b-0", "a-0"]
    assert with_facts.score[1] - without.score[1] == pytest.approx(settings.fact_weight)
    assert with_facts.score[0] - without.score[0] == pytest.approx(settings.fact_weight / 2)


def test_in_a_scope_a_statement_outside_it_does_not_supersede_one_inside() -> None:
    """Scoped to conversation a: Paris is the current fact there (Berlin, out of scope, does not close it)."""
    messages = [msg("a", 0, "I live in Paris.", day=0), msg("b", 0, "I live in Berlin.", day=100)]
    index, settings = memory(messages)
    index.facts = [
        record("f1", "Paris", "2024-01-01", "a-0", "2024-04-10"),
        record("f2", "Berlin", "2024-04-10", "b-0"),
    ]
    index.fact_positions = {"a-0": 0, "b-0": 1}
    scope = RecallScope(conversation_ids=["a"], sources=[], since=None, until=None)
    request = RecallRequest(query="where do I live", at=datetime(2024, 6, 1, tzinfo=UTC), scope=scope)
    with_facts = rank(index, "where do I live", None, request, settings)
    without = rank(index, "where do I live", None, request, settings, Switches(facts=False))
    assert with_facts.score[0] - without.score[0] == pytest.approx(settings.fact_weight)


def test_a_long_goal_needs_two_words_of_the_question_to_count() -> None:
    """A goal stated as a clause ("plan a surprise party for my sister Emma") is a fact of a question sharing two
    of its words, not of any question that shares one ("party"): long values no longer boost unrelated pieces."""
    from staging.fact_timeline import rank_facts

    goal = record("g1", "plan a surprise party for my sister Emma", "2024-01-01", "m-0").model_copy(
        update={"attribute": "goal"}
    )
    assert rank_facts([goal], "which party did I go to last week?") == []
    assert rank_facts([goal], "what surprise party did I plan?") == [goal]
    short = record("f1", "Berlin", "2024-01-01", "m-1")
    assert rank_facts([short], "do I still live in Berlin?") == [short]


def test_a_question_about_a_relative_meets_the_fact_about_them() -> None:
    """The cold pass: "who is my sister?" found nothing though the garden holds "user's sister called Emma": the
    question's word is in the fact's subject, which the match did not read. "user" itself still matches nothing."""
    from staging.fact_timeline import rank_facts

    sister = record("s1", "Emma", "2024-01-01", "m-2").model_copy(
        update={"subject": "user's sister", "attribute": "called"}
    )
    assert rank_facts([sister], "who is my sister?") == [sister]
    assert rank_facts([sister], "what is my sister's name?") == [sister]
    assert rank_facts([sister], "what did the user say?") == []
    beach = record("b1", "surf at Cowell's Beach", "2024-01-01", "m-3").model_copy(update={"attribute": "goal"})
    assert rank_facts([beach], "what is my dog's name?") == []  # the possessive's s matched every "'s" fact


def test_a_question_lists_only_its_own_goals_not_every_goal_the_user_stated() -> None:
    """Goals are held many at once: the facts and their "over time" lines name the goals of the question only."""
    from memory.recall_facts import question_facts

    index, _ = memory([msg("a", 0, "I want to visit the Meiji Shrine in Tokyo.", day=0)])
    goals = [
        record("g1", "visit the Meiji Shrine in Tokyo", "2024-01-01", "a-0"),
        record("g2", "get a new pair of running socks", "2024-02-01", "a-0"),
        record("g3", "learn to bake sourdough bread", "2024-03-01", "a-0"),
    ]
    index.facts = [g.model_copy(update={"attribute": "goal"}) for g in goals]
    index.fact_positions = {"a-0": 0}
    facts, changes = question_facts(index, RecallRequest(query="when do I visit the Meiji Shrine?"))
    assert [f.value for f in facts] == ["visit the Meiji Shrine in Tokyo"]
    assert not any("socks" in line or "sourdough" in line for line in changes)
