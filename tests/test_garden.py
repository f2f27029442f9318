"""The garden stage on real SQLite files: segment -> extract (offline) -> concepts -> garden, on real-looking chats."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from concept_support import Dbs, ScriptedExtractor, conversation, open_dbs, write_archive
from stage_support import garden_stage, stage_concepts, stage_extract, stage_segment
from test_concepts import answer, hyp

from contracts.settings import Settings
from flows.cli import cli
from staging.concepts import ConceptRow, upsert_concepts
from staging.fact_timeline import answer_lines, change_lines, fact_prior, facts_at, facts_for_query, known_at, timeline

PARIS = [
    ("user", "I live in Paris and I love the bakeries here. Any ideas for a rainy weekend?"),
    ("assistant", "Try the covered passages and a museum or two."),
]
BERLIN = [
    ("user", "Big news: I moved to Berlin last week, still unpacking. Which neighbourhoods have good cafes?"),
    ("assistant", "Kreuzberg and Prenzlauer Berg have many."),
]
MUNICH = [
    ("user", "Another change: I moved to Munich for a new role. How do I register my address?"),
    ("assistant", "Book an appointment at the Bürgerbüro."),
]


def at(day: str) -> datetime:
    return datetime.fromisoformat(f"{day}T09:00:00+00:00")


def stages(dbs: Dbs, now: str, extractor: Any = None) -> dict[str, Any]:
    """segment, extract, concepts and garden, in one new run; the garden's counts."""
    run_id = dbs.run_id()
    stage_segment.run(dbs.archive, dbs.staging, run_id=run_id, settings=dbs.settings)
    stage_extract.run(dbs.archive, dbs.staging, run_id=run_id, settings=dbs.settings, extractor=extractor)
    stage_concepts.run(dbs.archive, dbs.staging, run_id=run_id, settings=dbs.settings)
    return dict(garden_stage.run(dbs.archive, dbs.staging, run_id=run_id, settings=dbs.settings, now=now).counts)


def moved(tmp_path: Path) -> Dbs:
    dbs = open_dbs(tmp_path)
    write_archive(
        dbs.archive, [conversation("paris", PARIS, at("2022-01-10")), conversation("berlin", BERLIN, at("2023-05-02"))]
    )
    stages(dbs, "2024-01-01T00:00:00+00:00")
    return dbs


def test_recall_at_a_date_answers_before_and_after_a_move(tmp_path: Path) -> None:
    """'Where do I live?' at 2022-06 is Paris, at 2023-06 Berlin, and the change is said in one line."""
    dbs = moved(tmp_path)
    before = facts_for_query(dbs.staging, "Where do I live?", "2022-06-01")
    after = facts_for_query(dbs.staging, "Where do I live?", "2023-06-01")
    assert before[0].value == "Paris" and [r.value for r in before] == ["Paris"]  # Berlin was not said yet
    assert [r.value for r in after] == ["Berlin", "Paris"]
    assert [r.value for r in facts_at(dbs.staging, "2022-06-01")] == ["Paris"]
    [line] = change_lines(timeline(dbs.staging, subject="user"))
    assert line == "user lives in: Paris from 2022-01-10 until 2023-05-02, Berlin since 2023-05-02"


def test_every_change_is_a_row_with_its_reason_and_a_rerun_changes_nothing(tmp_path: Path) -> None:
    """fact_recorded x2 and fact_superseded (reason names the newer value); the same inputs again: no change."""
    dbs = moved(tmp_path)
    rows = dbs.staging.execute("SELECT kind, reason FROM garden_changes WHERE kind LIKE 'fact%'").fetchall()
    kinds = sorted(r[0] for r in rows)
    assert kinds == ["fact_recorded", "fact_recorded", "fact_superseded"]
    assert any('contradicted by "Berlin"' in r[1] for r in rows)
    again = garden_stage.run(
        dbs.archive, dbs.staging, run_id=dbs.run_id(), settings=dbs.settings, now="2024-02-01T00:00:00+00:00"
    )
    assert again.rows_out == 0 and dbs.staging.execute("SELECT COUNT(*) FROM facts").fetchone()[0] == 2


def test_a_later_export_closes_the_current_fact_and_keeps_history_queryable(tmp_path: Path) -> None:
    """A second dump says Munich: Berlin closes then (ingested in run 2); 'as known on' run 1 still says Berlin."""
    dbs = moved(tmp_path)
    write_archive(dbs.archive, [conversation("munich", MUNICH, at("2024-03-01"))], tag="second")
    counts = stages(dbs, "2024-04-01T00:00:00+00:00")
    assert counts["facts_superseded_now"] == 1
    berlin = next(r for r in timeline(dbs.staging) if r.value == "Berlin")
    assert berlin.state == "superseded" and f"{berlin.valid_to:%Y-%m-%d}" == "2024-03-01"
    assert f"{berlin.recorded_at:%Y-%m-%d}" == "2024-01-01" and f"{berlin.invalidated_at:%Y-%m-%d}" == "2024-04-01"
    assert {r.value for r in known_at(dbs.staging, "2024-02-01")} == {"Berlin"}
    assert {r.value for r in known_at(dbs.staging, "2024-05-01")} == {"Munich"}
    assert len(timeline(dbs.staging)) == 3  # nothing deleted


def test_stale_concepts_are_measured_per_source(tmp_path: Path) -> None:
    """An old dump beside a new one: only a concept stale within its own source is archived, with the reason
    (the old conversation's two best-evidenced concepts, what it is about, stay: the test below; "Old hobby" is
    only in a reply, so the user's words keep it not)."""
    specs = {
        "early": [hyp("Paris bakeries"), hyp("Rainy weekend"), hyp("Old hobby", spans=1, by="assistant")],
        "late": [hyp("Garden shed")],
        "new": [hyp("New job")],
    }
    dbs = open_dbs(tmp_path, garden={"keep_per_conversation": 2})
    write_archive(
        dbs.archive,
        [conversation("early", PARIS, at("2019-01-01")), conversation("late", BERLIN, at("2020-12-01"))],
        tag="old",
    )
    write_archive(dbs.archive, [conversation("new", MUNICH, at("2024-06-01"))], tag="new")
    stages(dbs, "2024-07-01T00:00:00+00:00", ScriptedExtractor(answer(specs)))
    states = dict(dbs.staging.execute("SELECT title, state FROM concepts").fetchall())
    assert states == {
        "Paris bakeries": "active",
        "Rainy weekend": "active",
        "Old hobby": "archived",
        "Garden shed": "active",
        "New job": "active",
    }
    reason = dbs.staging.execute("SELECT reason FROM concept_transitions WHERE to_state = 'archived'").fetchone()[0]
    assert reason.startswith("stale per source") and "newest message 2020-12-01" in reason


def test_what_an_old_conversation_is_about_is_never_archived_as_stale(tmp_path: Path) -> None:
    """A conversation of an old export keeps its best-evidenced concepts (keep_per_conversation, here 2) however
    old: what it is about stays in the graph while it is in the archive; what it only touched on fades, and with
    keep_per_conversation 0 staleness alone decides (what the user said aside: the next test). A subject archived
    before comes back."""
    specs = {
        "early": [hyp("Paris bakeries"), hyp("Rainy weekend"), hyp("Old hobby", spans=1)],
        "new": [hyp("New job")],
    }
    dbs = open_dbs(tmp_path, garden={"keep_per_conversation": 2, "keep_said_by_user": False})
    write_archive(dbs.archive, [conversation("early", PARIS, at("2019-01-01"))], tag="old")
    write_archive(dbs.archive, [conversation("later", BERLIN, at("2021-06-01"))], tag="old")
    write_archive(dbs.archive, [conversation("new", MUNICH, at("2024-06-01"))], tag="new")
    stages(dbs, "2024-07-01T00:00:00+00:00", ScriptedExtractor(answer(specs)))
    states = dict(dbs.staging.execute("SELECT title, state FROM concepts").fetchall())
    assert states == {
        "Paris bakeries": "active",
        "Rainy weekend": "active",
        "Old hobby": "archived",
        "New job": "active",
    }
    dbs.staging.execute("UPDATE concepts SET state = 'archived' WHERE title = 'Rainy weekend'")
    garden_stage.run(
        dbs.archive, dbs.staging, run_id=dbs.run_id(), settings=dbs.settings, now="2024-07-02T00:00:00+00:00"
    )
    assert dbs.staging.execute("SELECT state FROM concepts WHERE title = 'Rainy weekend'").fetchone()[0] == "active"
    dbs.settings.garden.keep_per_conversation = 0
    garden_stage.run(
        dbs.archive, dbs.staging, run_id=dbs.run_id(), settings=dbs.settings, now="2024-07-03T00:00:00+00:00"
    )
    states = dict(dbs.staging.execute("SELECT title, state FROM concepts").fetchall())
    assert states == {
        "Paris bakeries": "archived",
        "Rainy weekend": "archived",
        "Old hobby": "archived",
        "New job": "active",
    }


OLD_CHAT = [
    ("user", "How much coffee is too much? I drink four cups before noon and sleep badly."),
    ("assistant", "Four cups is about 400 mg of caffeine; try a cut-off at noon and swap one cup for green tea."),
    ("user", "And for my morning routine, is a ten-minute meditation enough?"),
    ("assistant", "Ten minutes helps; a fixed time and a quiet corner matter more than length. Matcha is an option."),
]


def test_what_the_user_said_stays_and_a_reply_passing_mention_fades_with_age(tmp_path: Path) -> None:
    """An old conversation, five subjects (two spans each) and two one-span terms past them: "Coffee intake" the
    user said, "Matcha" only the reply. Past the five kept, age archives the reply's passing term alone, with
    keep_said_by_user the user's own term stays (false: it fades too); archived before, it comes back with the
    reason."""
    subjects = [hyp(title) for title in ("Caffeine", "Sleep", "Morning routine", "Meditation", "Green tea")]
    specs = {
        "early": [*subjects, hyp("Coffee intake", spans=1, by="user"), hyp("Matcha", spans=1, by="assistant")],
        "new": [hyp("New job")],
    }
    dbs = open_dbs(tmp_path)
    assert (dbs.settings.garden.keep_per_conversation, dbs.settings.garden.keep_said_by_user) == (5, True)
    write_archive(dbs.archive, [conversation("early", OLD_CHAT, at("2023-03-01"))], tag="old")
    write_archive(dbs.archive, [conversation("later", BERLIN, at("2023-12-14"))], tag="old")
    write_archive(dbs.archive, [conversation("new", MUNICH, at("2024-06-01"))], tag="new")
    stages(dbs, "2024-07-01T00:00:00+00:00", ScriptedExtractor(answer(specs)))
    states = dict(dbs.staging.execute("SELECT title, state FROM concepts").fetchall())
    assert {t: states[t] for t in ("Caffeine", "Green tea", "Coffee intake", "Matcha")} == {
        "Caffeine": "active",
        "Green tea": "active",
        "Coffee intake": "weak",
        "Matcha": "archived",
    }
    dbs.staging.execute("UPDATE concepts SET state = 'archived' WHERE title = 'Coffee intake'")
    garden_stage.run(
        dbs.archive, dbs.staging, run_id=dbs.run_id(), settings=dbs.settings, now="2024-07-02T00:00:00+00:00"
    )
    back = dbs.staging.execute(
        "SELECT c.state, t.reason FROM concepts c JOIN concept_transitions t USING (concept_id)"
        " WHERE c.title = 'Coffee intake' ORDER BY t.ordinal DESC LIMIT 1"
    ).fetchone()
    assert tuple(back) == ("weak", "the user named it in their own words: never stale")
    dbs.settings.garden.keep_said_by_user = False
    garden_stage.run(
        dbs.archive, dbs.staging, run_id=dbs.run_id(), settings=dbs.settings, now="2024-07-03T00:00:00+00:00"
    )
    assert dbs.staging.execute("SELECT state FROM concepts WHERE title = 'Coffee intake'").fetchone()[0] == "archived"


def test_a_concept_archived_by_the_whole_store_rule_comes_back(tmp_path: Path) -> None:
    """An archived concept with recent evidence in its own source returns to its evidence state."""
    specs = {"late": [hyp("Garden shed")], "new": [hyp("New job")]}
    dbs = open_dbs(tmp_path)
    write_archive(dbs.archive, [conversation("late", BERLIN, at("2020-12-01"))], tag="old")
    write_archive(dbs.archive, [conversation("new", MUNICH, at("2024-06-01"))], tag="new")
    stages(dbs, "2024-07-01T00:00:00+00:00", ScriptedExtractor(answer(specs)))
    dbs.staging.execute("UPDATE concepts SET state = 'archived' WHERE title = 'Garden shed'")
    garden_stage.run(
        dbs.archive, dbs.staging, run_id=dbs.run_id(), settings=dbs.settings, now="2024-07-02T00:00:00+00:00"
    )
    assert dbs.staging.execute("SELECT state FROM concepts WHERE title = 'Garden shed'").fetchone()[0] == "active"


def _concept(concept_id: str, merged_into: str | None = None) -> ConceptRow:
    state = "merged" if merged_into else "active"
    return ConceptRow(concept_id, concept_id.title(), concept_id, "project", "", state, 0.8, [], 0, 2, None, None,
                      merged_into, ["llm"], "r0", "r0", True)  # fmt: skip


def test_relations_of_merged_concepts_move_to_the_survivor_and_dangling_ones_go(tmp_path: Path) -> None:
    """c->b and b->c follow b into a; a->b would be a self-loop (dropped); x->ghost and ghost's evidence dangle."""
    dbs = open_dbs(tmp_path)
    write_archive(dbs.archive, [conversation("paris", PARIS, at("2022-01-10"))])
    stages(dbs, "2024-01-01T00:00:00+00:00")
    upsert_concepts(dbs.staging, [_concept("a"), _concept("b", "a"), _concept("c"), _concept("x")])
    rows = [
        ("c", "supports", "b", 0.6),
        ("b", "causes", "c", 0.7),
        ("a", "enables", "b", 0.5),
        ("x", "causes", "ghost", 0.4),
    ]
    dbs.staging.executemany(
        "INSERT INTO concept_relations (concept_id, relation, target_id, confidence, run_id) VALUES (?, ?, ?, ?, 'r0')",
        rows,
    )
    dbs.staging.execute(
        "INSERT INTO concept_evidence (concept_id, message_id, text_key, text, confidence, segment_id, created_at,"
        " hypothesis_type, extractor, run_id) VALUES ('ghost', 'paris-m0', 'k', 'I live in Paris', 0.5, 's', NULL,"
        " 'entity', 'offline', 'r0')"
    )
    garden_stage.run(
        dbs.archive, dbs.staging, run_id=dbs.run_id(), settings=dbs.settings, now="2024-01-02T00:00:00+00:00"
    )
    left = sorted(
        tuple(r) for r in dbs.staging.execute("SELECT concept_id, relation, target_id FROM concept_relations")
    )
    assert left == [("a", "causes", "c"), ("c", "supports", "a")]
    kinds = sorted(r[0] for r in dbs.staging.execute("SELECT kind FROM garden_changes WHERE kind LIKE 'relation%'"))
    assert kinds == ["relation_dropped", "relation_dropped", "relation_redirected", "relation_redirected"]
    assert dbs.staging.execute("SELECT COUNT(*) FROM concept_evidence WHERE concept_id = 'ghost'").fetchone()[0] == 0
    [reason] = [r[0] for r in dbs.staging.execute("SELECT reason FROM garden_changes WHERE kind = 'evidence_dropped'")]
    assert "ghost" in reason and reason.startswith("dangling")


def test_dry_run_shows_the_changes_and_writes_nothing(tmp_path: Path) -> None:
    """`chatmem garden --dry-run --json` lists what the stage would do; staging.db is unchanged after it."""
    dbs = open_dbs(tmp_path)
    write_archive(
        dbs.archive, [conversation("paris", PARIS, at("2022-01-10")), conversation("berlin", BERLIN, at("2023-05-02"))]
    )
    run_id = dbs.run_id()
    for module in (stage_segment, stage_extract, stage_concepts):
        module.run(dbs.archive, dbs.staging, run_id=run_id, settings=dbs.settings)  # type: ignore[attr-defined]
    dbs.close()
    before = (tmp_path / "staging.db").read_bytes()
    result = CliRunner().invoke(cli, ["--data-dir", str(tmp_path), "garden", "--dry-run", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["dry_run"] is True and data["counts"]["fact_superseded"] == 1
    assert {c["kind"] for c in data["changes"]} >= {"fact_recorded", "fact_superseded"}
    assert (tmp_path / "staging.db").read_bytes() == before
    refused = CliRunner().invoke(cli, ["--data-dir", str(tmp_path), "garden"])
    assert refused.exit_code == 2 and "--dry-run" in refused.output


def test_facts_command_answers_at_a_date(tmp_path: Path) -> None:
    """`chatmem facts --query ... --at` prints the fact valid then, and the line saying how it changed."""
    moved(tmp_path).close()
    result = CliRunner().invoke(
        cli, ["--data-dir", str(tmp_path), "facts", "--query", "where do I live", "--at", "2023-06-01"]
    )
    assert result.exit_code == 0, result.output
    first = result.output.splitlines()[0]
    assert first.startswith("user lives in Berlin") and "changed over time: user lives in: Paris" in result.output
    early = CliRunner().invoke(
        cli, ["--data-dir", str(tmp_path), "facts", "--query", "where do I live", "--at", "2022-06-01"]
    )
    assert "Paris" in early.output and "Berlin" not in early.output  # nothing said later leaks into the past
    bad = CliRunner().invoke(cli, ["--data-dir", str(tmp_path), "facts", "--at", "June"])
    assert bad.exit_code == 2


def test_facts_subject_matches_whatever_case_the_user_types(tmp_path: Path) -> None:
    """`chatmem facts --subject User` (or "USER", " user ") lists the facts stored under "user", with or without
    --at: the cold try's "--subject User" found nothing."""
    moved(tmp_path).close()
    base = ["--data-dir", str(tmp_path), "facts", "--json"]
    for typed in ("user", "User", "USER", " user "):
        listed = CliRunner().invoke(cli, [*base, "--subject", typed])
        assert listed.exit_code == 0, listed.output
        assert sorted(f["value"] for f in json.loads(listed.output)["facts"]) == ["Berlin", "Paris"], typed
        then = CliRunner().invoke(cli, [*base, "--subject", typed, "--at", "2023-06-01"])
        assert [f["value"] for f in json.loads(then.output)["facts"]] == ["Berlin"], typed
    other = CliRunner().invoke(cli, [*base, "--subject", "User's sister"])
    assert json.loads(other.output)["facts"] == []


PETS = [
    ("user", "I have a dog named Max and he needs a lot of walks. Last spring I adopted a kitten called Luna."),
    ("assistant", "Two pets! Walk Max before work and give Luna a scratching post."),
]


def test_a_plain_question_finds_the_facts_of_the_kind_it_asks_about(tmp_path: Path) -> None:
    """The cold try: `facts --query "what pets do I have"` found nothing though the user named a dog and a cat
    (stored as "user's dog called Max"): "pets" names their kind, and now meets the facts of that kind."""
    dbs = open_dbs(tmp_path)
    write_archive(dbs.archive, [conversation("pets", PETS, at("2023-03-29"))])
    stages(dbs, "2024-01-01T00:00:00+00:00")
    dbs.close()
    result = CliRunner().invoke(cli, ["--data-dir", str(tmp_path), "facts", "--query", "what pets do I have"])
    assert result.exit_code == 0, result.output
    listed = sorted(line.split("  ")[0] for line in result.output.splitlines())
    assert listed == ["user's dog called Max", "user's kitten called Luna"]
    other = CliRunner().invoke(cli, ["--data-dir", str(tmp_path), "facts", "--query", "what is my job"])
    assert "called" not in other.output  # a kind word meets its own kind only


def test_facts_with_nothing_matching_say_so_not_run_the_pipeline(tmp_path: Path) -> None:
    """The garden ran: `facts --query` that no fact matches (or an --at before any fact) says that, and suggests
    `chatmem run` no more (it said "run `chatmem run EXPORT` first" on a data dir that had run)."""
    moved(tmp_path).close()
    base = ["--data-dir", str(tmp_path), "facts"]
    none = CliRunner().invoke(cli, [*base, "--query", "what is my favourite colour", "--at", "2023-06-01"])
    assert none.exit_code == 0, none.output
    assert "chatmem run" not in none.output
    assert "no fact recorded by the garden matches the question 'what is my favourite colour' as of 2023-06-01" in (
        none.output
    )
    early = CliRunner().invoke(cli, [*base, "--at", "2001-01-01"])
    assert early.exit_code == 0 and "chatmem run" not in early.output and "as of 2001-01-01" in early.output


def _dump(path: Path, conversation_id: str, day: str, user: str, reply: str) -> Path:
    lines = [
        {"conversation_id": conversation_id, "id": f"{conversation_id}-u", "role": "user", "text": user,
         "created_at": f"{day}T10:00:00Z"},
        {"conversation_id": conversation_id, "id": f"{conversation_id}-a", "role": "assistant", "text": reply,
         "created_at": f"{day}T10:01:00Z"},
    ]  # fmt: skip
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")
    return path


@pytest.mark.prefect
def test_the_pipeline_flow_runs_the_garden_after_concepts_on_each_new_dump(tmp_path: Path) -> None:
    """Two `chatmem run`s through Prefect (ingest..garden): the second dump's move closes the first's city."""
    from flows.pipeline import run_pipeline

    settings = Settings(data_dir=tmp_path / "data")
    stages = ["ingest", "segment", "extract", "concepts", "garden"]
    first = _dump(tmp_path / "a.jsonl", "paris", "2022-01-10", PARIS[0][1], PARIS[1][1])
    _, results = run_pipeline(settings, [first], stages, quiet=True)
    assert [r.stage for r in results] == stages and results[-1].counts["facts_recorded"] == 1
    second = _dump(tmp_path / "b.jsonl", "berlin", "2023-05-02", BERLIN[0][1], BERLIN[1][1])
    _, results = run_pipeline(settings, [second], stages, quiet=True)
    assert results[-1].status == "succeeded" and results[-1].counts["facts_superseded_now"] == 1
    result = CliRunner().invoke(cli, ["--data-dir", str(settings.data_dir), "facts", "--at", "2022-06-01", "--json"])
    assert [f["value"] for f in json.loads(result.output)["facts"]] == ["Paris"]
    result = CliRunner().invoke(cli, ["--data-dir", str(settings.data_dir), "facts", "--at", "2023-06-01", "--json"])
    assert [f["value"] for f in json.loads(result.output)["facts"]] == ["Berlin"]


def test_recall_lines_and_prior_say_what_held_then_without_leaking_later_facts(tmp_path: Path) -> None:
    """answer_lines/fact_prior at 2022-06 know only Paris; at 2023-06 Berlin holds, Paris is history (half weight)."""
    dbs = moved(tmp_path)
    assert answer_lines(dbs.staging, "where do I live?", "2022-06-01") == ["user lives in Paris since 2022-01-10"]
    assert answer_lines(dbs.staging, "where do I live?", "2023-06-01") == [
        "user lives in Berlin since 2023-05-02",
        "changed over time: user lives in: Paris from 2022-01-10 until 2023-05-02, Berlin since 2023-05-02",
    ]
    records = timeline(dbs.staging)
    assert fact_prior(records, "where do I live?", "2022-06-01") == {"paris-m0": 1.0}
    assert fact_prior(records, "where do I live?", "2023-06-01") == {"berlin-m0": 1.0, "paris-m0": 0.5}


def test_recall_lines_say_a_goal_of_the_user_not_in_the_users_first_person(tmp_path: Path) -> None:
    """answer_lines printed the stored value as the user wrote it ("user goal plan a surprise party for my
    sister"); like `chatmem facts` and recall's fact lines, it now says it of the user ("their sister")."""
    dbs = open_dbs(tmp_path)
    party = [("user", "I'm planning a surprise party for my sister next month."), ("assistant", "Fun! Theme?")]
    write_archive(dbs.archive, [conversation("party", party, at("2023-03-01"))])
    stages(dbs, "2024-01-01T00:00:00+00:00")
    lines = answer_lines(dbs.staging, "the surprise party I am planning", "2023-06-01")
    assert any("party for their sister" in line for line in lines) and not any(" my " in line for line in lines), lines
