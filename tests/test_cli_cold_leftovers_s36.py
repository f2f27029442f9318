"""What session 35's cold try left (a new user, a fresh clone, real exports from ../shared/data and bad input of their
own): each through the real CLI (click's runner, or a subprocess for the shell scripts) on real files under tmp_path,
with real SQLite."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from test_cli_memory import NOTES as MEMORY_NOTES
from test_ingest_stage import ingest, make_chatgpt_export, write_json

from flows.cli import cli

ROOT = Path(__file__).resolve().parents[1]


def chatmem(data_dir: Path, *args: str | Path, columns: int = 120) -> Result:
    return CliRunner().invoke(
        cli, ["--data-dir", str(data_dir), *map(str, args)], env={"COLUMNS": str(columns)}, catch_exceptions=False
    )


def test_build_labelled_runs_with_the_python_of_the_chatmem_on_path_not_a_bare_python(tmp_path: Path) -> None:
    """benchmarks/build_labelled.sh called a bare `python`: without the venv active (no `python` on PATH, as on Debian)
    it stopped at "python: command not found" after the build. Now the python that runs the `chatmem` on PATH (its
    entry script's #! line), or $PYTHON. A chatmem whose #! names a python that logs its arguments shows which one
    ran the measures."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "calls.log"
    fake_python = tmp_path / "venv-python"
    fake_python.write_text(f'#!/bin/sh\necho "$@" >> {log}\n', encoding="utf-8")
    fake_python.chmod(0o755)
    chatmem = bin_dir / "chatmem"
    chatmem.write_text(f"#!{fake_python}\n# an entry script as pip writes it\n", encoding="utf-8")
    chatmem.chmod(0o755)
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(tmp_path)}
    assert subprocess.run(["sh", "-c", "command -v python"], env=env, capture_output=True).returncode != 0
    done = subprocess.run(
        ["bash", "benchmarks/build_labelled.sh", str(tmp_path / "built")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    calls = log.read_text(encoding="utf-8").splitlines()
    measures = [c for c in calls if c.startswith("benchmarks/bench_graph_quality.py")]
    assert len(measures) == 2 and "heldout_labels.json" in measures[1], calls
    # $PYTHON given wins over the chatmem's
    other = tmp_path / "other-python"
    other.write_text(f'#!/bin/sh\necho "other $@" >> {log}\n', encoding="utf-8")
    other.chmod(0o755)
    again = subprocess.run(
        ["bash", "benchmarks/build_labelled.sh", str(tmp_path / "built")],
        cwd=ROOT,
        env={**env, "PYTHON": str(other)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert again.returncode == 0 and log.read_text(encoding="utf-8").count("other benchmarks/") == 2, again.stderr


def test_topics_cut_a_long_keyword_list_after_a_whole_keyword_not_mid_word(tmp_path: Path) -> None:
    """`chatmem topics` on a narrow terminal shortened the keywords in their middle ("strength training, legs,
    bod…xercises, endurance"): no word at all where the cut fell. Now they are cut after a whole keyword, "…" after
    it, and a keyword list that fits is shown whole."""
    from staging import topics as topic_store
    from staging.db import connect

    data_dir = tmp_path / "data"
    ingest(data_dir, write_json(tmp_path / "conversations.json", make_chatgpt_export(1)))[0].close()
    long = ["strength training", "legs", "body", "exercises", "endurance", "injury"]
    topics = [
        {"topic": 0, "topic_uid": "u0", "label": "strength training", "size": 61, "keywords": long},
        {"topic": 1, "topic_uid": "u1", "label": "flavor", "size": 9, "keywords": ["flavor", "recipe"]},
    ]
    topics = [t | {"representatives": []} for t in topics]
    staging = connect(data_dir / "staging.db")
    topic_store.write_run(staging, "r1", {"status": "clustered", "points": 70, "topics": 2}, topics)
    staging.close()
    shown = chatmem(data_dir, "topics", columns=80)
    assert shown.exit_code == 0, shown.output
    [row] = [line for line in shown.stdout.splitlines() if line.startswith("0 ")]
    keywords = row.split("strength training", 1)[1].strip()
    assert keywords.endswith("…") and len(row) <= 80, row
    kept = keywords.removesuffix("…").split(", ")
    assert kept == long[: len(kept)] and len(kept) >= 3, row  # whole keywords, the first ones
    assert "flavor, recipe" in shown.stdout and "…" not in shown.stdout.split("flavor", 1)[1], shown.stdout


NOTES = [  # test_cli_memory's notes, and one where the user speaks of themselves and their family
    *MEMORY_NOTES,
    (
        "party",
        "1",
        "user",
        "I'm a nurse. I want to plan a surprise party for my sister Emma's birthday.",
        "2024-06-03T10:00:00Z",
    ),
    ("party", "2", "assistant", "A surprise party is a lovely idea.", "2024-06-03T10:01:00Z"),
]


@pytest.fixture(scope="module")
def memory_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data dir built by `chatmem run` (every stage, the offline extractor) from a small JSONL export."""
    tmp_path = tmp_path_factory.mktemp("memory")
    export = tmp_path / "notes.jsonl"
    lines = [{"conversation_id": c, "id": i, "role": r, "text": t, "created_at": when} for c, i, r, t, when in NOTES]
    export.write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")
    data_dir = tmp_path / "data"
    assert chatmem(data_dir, "--quiet", "run", export).exit_code == 0
    return data_dir


@pytest.mark.prefect
@pytest.mark.slow
def test_recall_numbers_the_pieces_as_shown_and_says_a_rank_that_differs(memory_dir: Path) -> None:
    """`chatmem recall --order time` numbered its pieces by their rank among the best (#1, #16, #2 down the page).
    Now #1..#n as listed, and `rank N` beside a piece whose rank is another (the JSON keeps `rank`)."""
    data_dir = memory_dir
    question = "back from Lisbon: the tram rides were the best part"
    ranks = [
        p["rank"]
        for p in json.loads(chatmem(data_dir, "recall", question, "--order", "time", "--json").stdout)["pieces"]
    ]
    assert ranks != sorted(ranks), ranks  # the best piece (trip2, June) comes last in time
    for order in ("time", "relevance"):
        shown = chatmem(data_dir, "recall", question, "--order", order)
        assert shown.exit_code == 0, shown.output
        heads = [line for line in shown.stdout.splitlines() if line.startswith("#")]
        assert [int(h[1:].split()[0]) for h in heads] == list(range(1, len(heads) + 1)), heads
        if order == "time":
            for head, rank in zip(heads, ranks, strict=True):
                assert (f", rank {rank}" in head) == (rank != int(head[1:].split()[0])), (head, rank)


@pytest.mark.prefect
@pytest.mark.slow
def test_facts_are_said_of_the_user_not_in_the_users_first_person(memory_dir: Path) -> None:
    """A fact's value keeps the user's words ("plan a surprise party for my sister"): `chatmem facts` and recall's
    fact lines said "user goal ... my sister". Now said of the user, as the subject is ("their sister"); the
    stored value and --json keep the user's words. "I'm a nurse" was already "user role nurse"."""
    text = chatmem(memory_dir, "facts")
    assert text.exit_code == 0, text.output
    assert "user goal plan a surprise party for their sister Emma's birthday" in text.stdout, text.stdout
    assert "user role nurse" in text.stdout and " my " not in text.stdout, text.stdout
    stored = {f["value"] for f in json.loads(chatmem(memory_dir, "facts", "--json").stdout)["facts"]}
    assert "plan a surprise party for my sister Emma's birthday" in stored, stored
    recall = chatmem(memory_dir, "recall", "the surprise party for my sister")
    facts = [line for line in recall.stdout.splitlines() if line.startswith("fact: ")]
    assert any("for their sister" in line for line in facts) and not any(" my " in f for f in facts), recall.stdout


def test_first_person_words_of_a_value_are_turned_to_the_third_and_nothing_else() -> None:
    from contracts.fact_rules import said_of_the_user

    assert said_of_the_user("videos of me playing my Fender") == "videos of them playing their Fender"
    assert said_of_the_user("I am a nurse") == "they are a nurse"
    assert said_of_the_user("I\u2019m moving with our dog") == "they're moving with their dog"
    for kept in ("new to US", "I/O", "World War I", "me-time", "Emma's memory", "myriad"):
        assert said_of_the_user(kept) == kept


def _cut_export(path: Path, conversations: int = 6) -> Path:
    """A ChatGPT export cut short inside its last conversation (tests/test_ingest_standing_faults.py's cut)."""
    data = json.dumps(make_chatgpt_export(conversations)).encode()
    path.write_bytes(data[: data.rindex(b'{"id": "c') + 40])
    return path


@pytest.mark.prefect
def test_a_run_that_exits_1_for_a_file_cut_short_is_incomplete_in_run_and_in_staging_runs(tmp_path: Path) -> None:
    """A file cut short (or failed) beside stages that succeeded: `chatmem run` exits 1 but said "succeeded, but ..."
    and `--json` and `staging runs --json` said "succeeded". Now `incomplete` with the reason, the same words in all
    of them; a run of the whole file says succeeded again."""
    data_dir = tmp_path / "data"
    cut = _cut_export(tmp_path / "conversations.json")
    done = chatmem(data_dir, "-q", "run", cut, "--only", "ingest")
    assert done.exit_code == 1 and done.stdout.splitlines()[0].endswith(": incomplete: 1 file cut short (exit code 1)")
    as_json = chatmem(data_dir, "-q", "run", cut, "--only", "ingest", "--json")
    assert as_json.exit_code == 1, as_json.output
    summary = json.loads(as_json.stdout)
    assert (summary["status"], summary["incomplete"]) == ("incomplete", "1 file cut short"), summary
    runs = json.loads(chatmem(data_dir, "staging", "runs", "--json").stdout)
    assert [(r["status"], r["incomplete"], r["files_partial"]) for r in runs] == [
        ("incomplete", "1 file cut short", 1)
    ] * 2
    table = chatmem(data_dir, "staging", "runs", "--each", columns=300).stdout
    assert table.count("incomplete: 1 file cut short (staging failures)") == 2, table
    cut.write_text(json.dumps(make_chatgpt_export(6)), encoding="utf-8")  # the whole download
    whole = chatmem(data_dir, "-q", "run", cut, "--only", "ingest", "--json")
    assert whole.exit_code == 0 and json.loads(whole.stdout)["status"] == "succeeded", whole.output
    assert json.loads(chatmem(data_dir, "staging", "runs", "--json").stdout)[0]["incomplete"] is None


@pytest.mark.prefect
def test_the_re_run_hint_of_a_run_started_with_format_keeps_it_and_works_as_typed(tmp_path: Path) -> None:
    """`chatmem run bad.json --format chatgpt`: the file fails, the stage with it, and the hint said `fix or remove
    bad.json, then: chatmem run --from ingest --run-id R`: without --format, the run's exports read by detection,
    not as the run was asked to. Now the hint (the error line, `staging runs` and `staging failures`) says
    `--format chatgpt` again, and typed as it stands once the file is fixed, it reads the file as chatgpt."""
    import shlex

    data_dir = tmp_path / "data"
    bad = tmp_path / "bad.json"
    bad.write_text('[{"mapping": {}, "id": "c1", !', encoding="utf-8")
    done = chatmem(data_dir, "-q", "run", bad, "--format", "chatgpt", "--only", "ingest")
    assert done.exit_code == 1, done.output
    hint = done.stderr.rsplit("then: ", 1)[1].rstrip(")\n")
    assert hint.startswith(f"chatmem --data-dir {data_dir} stage ingest --run-id "), done.stderr
    assert hint.endswith(" --format chatgpt"), done.stderr
    [run] = json.loads(chatmem(data_dir, "staging", "runs", "--json").stdout)
    failures = json.loads(chatmem(data_dir, "staging", "failures", "--json").stdout)
    recorded = hint.replace(f"--data-dir {data_dir} ", "")  # the ledger's, said with the data dir when printed
    assert run["resume"].endswith(recorded), run
    assert failures["stage_runs"][0]["rerun_hint"].endswith(recorded), failures
    bad.write_text(json.dumps(make_chatgpt_export(2)), encoding="utf-8")  # fixed
    again = chatmem(data_dir, "-q", *shlex.split(hint)[1:])
    assert again.exit_code == 0, again.output
    files = json.loads(chatmem(data_dir, "staging", "show", "ingest_files", "--json").stdout)
    assert [(f["status"], f["format"]) for f in files] == [("ingested", "chatgpt")], files
    # a run without --format: no --format in its hint
    plain = chatmem(tmp_path / "plain", "-q", "run", tmp_path / "other.json", "--only", "ingest")
    assert "--format" not in plain.stderr, plain.stderr


@pytest.mark.prefect
def test_a_path_given_twice_is_said_once_and_read_once(tmp_path: Path) -> None:
    """`chatmem run x.json x.json` (or `x.json ./sub/../x.json`, or an export folder and its conversations.json): the
    second was skipped in silence ("files skipped 1"). Now one line says it, with -q too, and the file is read once."""
    (tmp_path / "export").mkdir()
    export = write_json(tmp_path / "export" / "conversations.json", make_chatgpt_export(2))
    data_dir = tmp_path / "data"
    twice = [export, tmp_path / "export" / ".." / "export" / "conversations.json", tmp_path / "export"]
    done = chatmem(data_dir, "-q", "run", *twice, "--only", "ingest", "--json")
    assert done.exit_code == 0, done.output
    said = [line for line in done.stderr.splitlines() if line.endswith("given twice, read once")]
    assert said == [f"{export}: given twice, read once", f"{tmp_path / 'export'}: given twice, read once"], said
    files = json.loads(done.stdout)["files"]
    assert [(f["path"], f["status"]) for f in files] == [(str(export), "ingested")], files


@pytest.mark.prefect
def test_a_folder_with_no_export_beside_good_paths_is_said_to_hold_none_not_to_be_fixed(tmp_path: Path) -> None:
    """A folder of notes (no export in it) among other paths, with -q: the error line said "fix the file and run
    again". Now it says the folder holds no export chatmem can read, what it looked for, and to check the path or
    leave it out; the other paths still arrive (and a broken file beside it is still to fix)."""
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "readme.txt").write_text("hello", encoding="utf-8")
    (tmp_path / "export").mkdir()  # not beside the folder: that would be the rest of an unzipped export
    good = write_json(tmp_path / "export" / "conversations.json", make_chatgpt_export(2))
    data_dir = tmp_path / "data"
    done = chatmem(data_dir, "-q", "run", notes, good, "--only", "ingest")
    assert done.exit_code == 1 and f"ingested: {good}: 2 conversation(s)" in done.stdout, done.output
    assert f"failed: {notes}: the folder holds no export chatmem can read" in done.stdout, done.stdout
    [error] = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert "fix the file" not in error, error
    assert error.endswith(
        f"{notes}; the folder holds no export chatmem can read (it looked for a conversations.json, a .json or .jsonl"
        " file starting as JSON, or a .zip, in it and 3 levels of subfolders below): check the path, or leave it out"
        f" of the command (chatmem --data-dir {data_dir} staging failures lists them)"
    ), error
    broken = tmp_path / "broken.json"
    broken.write_text("{not json", encoding="utf-8")
    both = chatmem(data_dir, "-q", "run", notes, broken, good, "--only", "ingest")
    [error] = [line for line in both.stderr.splitlines() if line.startswith("error:")]
    assert "; fix the file and run again; " in error and f"{notes} holds no export chatmem can read" in error, error


def _jsonl_lines(objects: list[dict[str, object]]) -> bytes:
    return b"".join(json.dumps(o).encode() + b"\n" for o in objects)


@pytest.mark.prefect
def test_generic_jsonl_cut_inside_its_last_line_is_cut_short_as_conversations_one_per_line_are(tmp_path: Path) -> None:
    """A JSONL file of messages whose last line is cut (a download that stopped) was read with that line quarantined
    and exit 0, while a file of conversations one per line (ingest/object_lines.py) cut the same way said "cut
    short" and exited 1. Now one behaviour: cut short, the good lines arrive, exit 1 at every run while it stays
    cut, the same words for both; the whole file arrives and exits 0. A bad line that is not the last (or the last
    one ended by a newline) is still a quarantined line, exit 0."""
    messages = [
        {"conversation_id": f"c{i // 2}", "id": str(i), "role": "user", "text": f"line {i} of the notes"}
        for i in range(6)
    ]
    whole = _jsonl_lines(messages)
    cut = whole[: len(whole) - 12]  # inside the last message's text
    conversations = json.dumps(make_chatgpt_export(3)[0]).encode() + b"\n"
    for name, data in (("notes.jsonl", cut), ("conversations.jsonl", conversations * 2 + conversations[:60])):
        path = tmp_path / name
        path.write_bytes(data)
        data_dir = tmp_path / f"data-{name}"
        for _ in range(2):  # at every run while it stays cut
            done = chatmem(data_dir, "-q", "run", path, "--only", "ingest")
            assert done.exit_code == 1, (name, done.output)
            [line] = [x for x in done.stdout.splitlines() if x.strip().startswith("cut short:")]
            assert "the rest could not be read: truncated JSON: the file ends inside its last line" in line, line
    stats = json.loads(chatmem(tmp_path / "data-notes.jsonl", "archive", "stats", "--json").stdout)
    assert (stats["conversations"], stats["messages"]) == (3, 5), stats  # every line before the cut
    (tmp_path / "notes.jsonl").write_bytes(whole)
    done = chatmem(tmp_path / "data-notes.jsonl", "-q", "run", tmp_path / "notes.jsonl", "--only", "ingest")
    assert done.exit_code == 0, done.output
    stats = json.loads(chatmem(tmp_path / "data-notes.jsonl", "archive", "stats", "--json").stdout)
    assert stats["messages"] == 6, stats
    # a bad line that is no cut: quarantined, the run exits 0 (as before)
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(whole + b'{"conversation_id": "c9", "id": "9", "role": "us\n')  # ended by its newline
    kept = chatmem(tmp_path / "data-bad", "-q", "run", bad, "--only", "ingest")
    assert kept.exit_code == 0 and "1 record(s) quarantined" in kept.stdout, kept.output


@pytest.mark.prefect
def test_serve_once_exits_1_on_the_tick_that_reads_a_dump_cut_short_as_run_does(tmp_path: Path) -> None:
    """`serve --once` over a folder holding a dump cut short exited 0 on the tick that read it, while `chatmem run`
    over the same file exits 1: a cron job running --once never noticed. Now that tick exits 1 with run's error
    line; the ticks after leave the unchanged bytes waiting (the rule for a dump that failed, which already exited 1
    once and then 0), and the whole file, once there, arrives with exit 0."""
    watch = tmp_path / "watch"
    watch.mkdir()
    cut = _cut_export(watch / "conversations.json")
    ran = chatmem(tmp_path / "by-run", "-q", "run", cut)
    served = chatmem(tmp_path / "data", "-q", "serve", "--once", "--watch", watch)
    assert (ran.exit_code, served.exit_code) == (1, 1), (ran.output, served.output)
    said = [
        line.split(" in run ")[0] for r in (ran, served) for line in r.stderr.splitlines() if line.startswith("error:")
    ]
    assert said == ["error: 1 file cut short"] * 2, (ran.stderr, served.stderr)
    assert f"cut short: {cut}: 5 complete conversation(s) arrived" in served.stdout, served.stdout  # in run's words
    again = chatmem(tmp_path / "data", "-q", "serve", "--once", "--watch", watch, "--json")
    assert again.exit_code == 0 and json.loads(again.stdout)["waiting"][0]["status"] == "partial", again.output
    cut.write_text(json.dumps(make_chatgpt_export(6)), encoding="utf-8")
    whole = chatmem(tmp_path / "data", "-q", "serve", "--once", "--watch", watch)
    assert whole.exit_code == 0 and f"ingested: {cut}" in whole.stdout, whole.output


@pytest.mark.prefect
def test_a_file_cut_short_is_superseded_by_a_whole_re_export_read_later_under_another_path(tmp_path: Path) -> None:
    """`staging failures` kept a cut file's row (and its unreadable remainder) until the same path was read whole.
    A user downloads the export again (another name) and runs that: the run that reads it whole, holding every
    conversation the cut file delivered, records the cut file superseded, says so, and `staging failures` lists it
    apart ("nothing to do"), no longer as a partial file nor its remainder as quarantine. A whole file holding
    only some of them supersedes nothing; a cut file given in the same run stays as it is."""
    data_dir = tmp_path / "data"
    cut = _cut_export(tmp_path / "conversations.json")  # 5 whole conversations of 6
    assert chatmem(data_dir, "-q", "run", cut, "--only", "ingest").exit_code == 1
    (tmp_path / "again").mkdir()
    some = write_json(tmp_path / "again" / "some.json", make_chatgpt_export(3))  # not all of the 5
    assert chatmem(data_dir, "-q", "run", some, "--only", "ingest").exit_code == 0
    still = json.loads(chatmem(data_dir, "staging", "failures", "--json").stdout)
    assert [f["path"] for f in still["files"]] == [str(cut)] and still["superseded"] == [], still
    assert [q["source"] for q in still["quarantine"]] == [str(cut)], still
    whole = write_json(tmp_path / "again" / "conversations (1).json", make_chatgpt_export(7))
    done = chatmem(data_dir, "-q", "run", whole, "--only", "ingest")
    assert done.exit_code == 0, done.output
    said = f"skipped (superseded by {whole}: every conversation it held (5) arrived whole from there): {cut}"
    assert said in done.stdout, done.stdout
    found = json.loads(chatmem(data_dir, "staging", "failures", "--json").stdout)
    assert found["files"] == [] and found["quarantine"] == [], found
    assert [(s["path"], s["detail"].split(":")[0]) for s in found["superseded"]] == [
        (str(cut), f"superseded by {whole}")
    ]
    text = chatmem(data_dir, "staging", "failures").stdout
    assert text.startswith("no failures\n") and "superseded by a whole re-export read later (nothing to do)" in text
    # the cut file given beside the whole one in one run: said as it is now (cut short), exit 1
    other = tmp_path / "other"
    both = chatmem(other, "-q", "run", cut, whole, "--only", "ingest")
    assert both.exit_code == 1 and "superseded" not in both.stdout, both.output
