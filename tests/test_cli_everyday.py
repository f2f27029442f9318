"""Everyday commands say what happened, in few words, with the right exit code (issue 21): a run with nothing new
is one line and starts no Prefect, a bad file is refused before anything starts, a dump cut short exits 1, the
report shows the run that did work, tables fit the terminal, and the left-over inconsistencies stay fixed.
"""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from contracts.facts import FactRecord
from flows.cli import cli
from flows.cli_table import fit, print_table, shorten
from memory.queries import concept_description
from staging.archive import open_archive
from staging.fact_timeline import change_lines
from staging.ledger import open_staging

ROOT = Path(__file__).resolve().parents[1]


def chatmem(*args: str | Path, data_dir: Path, env: dict[str, str] | None = None) -> Result:
    argv = ["--data-dir", str(data_dir), *map(str, args)]
    return CliRunner().invoke(cli, argv, catch_exceptions=False, env=env)


def process(*args: str | Path, data_dir: Path) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    """`chatmem ARGS` in a fresh interpreter: (the finished process, the engine modules it imported)."""
    code = (
        "import json, sys\n"
        "from flows.cli import main\n"
        f"sys.argv = ['chatmem', '--data-dir', {str(data_dir)!r}, *{[str(a) for a in args]!r}]\n"
        "try:\n"
        "    main()\n"
        "finally:\n"
        "    loaded = sorted({m.split('.')[0] for m in sys.modules} & {'prefect', 'sklearn', 'umap', 'hdbscan'})\n"
        "    print('LOADED ' + json.dumps(loaded), file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    marker = [line for line in done.stderr.splitlines() if line.startswith("LOADED ")]
    return done, json.loads(marker[-1].removeprefix("LOADED ")) if marker else ["?"]


def _fact(fact_id: str, value: str, start: str, end: str | None = None, attribute: str = "uses") -> FactRecord:
    begin = datetime.fromisoformat(f"{start}T12:00:00+00:00")
    stop = datetime.fromisoformat(f"{end}T12:00:00+00:00") if end else None
    return FactRecord(
        fact_id=fact_id, subject="user", attribute=attribute, value=value, polarity="positive", valid_from=begin,
        valid_to=stop, recorded_at=begin, invalidated_at=stop, state="superseded" if stop else "valid",
        superseded_by=None, support=1, last_stated=begin, message_ids=[fact_id], evidence=[value],
    )  # fmt: skip


# ---------------------------------------------------------------- words and tables (no pipeline)


def test_concurrent_facts_do_not_read_as_replacements() -> None:
    """Three values of "uses", none closed by another, are said to hold side by side; a real change still reads
    as a sequence."""
    together = [
        _fact("a", "new blood pressure monitor", "2023-03-14"),
        _fact("b", "Mendeley", "2023-05-25"),
        _fact("c", "hair mask", "2023-05-26"),
    ]
    [line] = change_lines(together)
    assert line == (
        "user uses, all still holding (none replaced another): new blood pressure monitor since 2023-03-14;"
        " Mendeley since 2023-05-25; hair mask since 2023-05-26"
    )
    moved = [
        _fact("p", "Paris", "2022-01-10", "2023-05-02", "lives in"),
        _fact("q", "Berlin", "2023-05-02", None, "lives in"),
    ]
    assert change_lines(moved) == ["user lives in: Paris from 2022-01-10 until 2023-05-02, Berlin since 2023-05-02"]


def test_a_concepts_description_speaks_of_the_concept_not_of_one_segment() -> None:
    """MCP search_concepts: the offline extractor's "mentioned 18 time(s) in this segment" becomes the concept's
    evidence count."""
    offline = 'Offline extractor (keyphrase rules, no model): "aws glue" is mentioned 18 time(s) in this segment.'
    assert concept_description(offline, 42) == (
        'Offline extractor (keyphrase rules, no model): "aws glue", with 42 evidence message(s) in the memory.'
    )
    assert concept_description("A project the user leads.", 3) == "A project the user leads."


def test_long_values_lose_their_middle_never_their_end(capsys: pytest.CaptureFixture[str]) -> None:
    path = "/home/someone/exports/claude/claude-to-sqlite/tests/artifacts.json"
    short = shorten(path, 30)
    assert len(short) == 30 and short.endswith("artifacts.json") and short.startswith("/home/") and "…" in short
    assert shorten("short", 30) == "short"
    assert fit([10, 80, 40], [False, False, True], 100, [10, 12, 12]) == [10, 50, 40]
    assert fit([60, 60], [False, False], 20, [24, 24]) is None  # cannot fit: shown record by record
    rows = [{"path": path * 3, "status": "partial", "reason": "unreadable remainder: " + "x" * 200 + " (the end)"}]
    print_table(rows)
    assert max(len(line) for line in capsys.readouterr().out.splitlines()) <= 120  # no terminal here: 120


def test_wide_tables_fit_the_terminal_width(tmp_path: Path) -> None:
    """`staging show` on a 40- and a 200-column terminal: every line fits, and the end of a long path shows."""
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    open_archive(data_dir / "archive.db").close()
    staging = open_staging(data_dir / "staging.db")
    long_path = "/srv/exports/" + "nested/" * 12 + "conversations-2024.json"
    staging.execute(
        "INSERT INTO runs (id, started_at, status, stages, exports, settings, code_version) VALUES (?,?,?,?,?,?,?)",
        ("r1", "2024-01-01T00:00:00+00:00", "succeeded", "[]", json.dumps([long_path]), "{}", "x"),
    )
    staging.commit()
    staging.close()
    for columns in ("40", "200"):
        shown = chatmem("staging", "show", "runs", data_dir=data_dir, env={"COLUMNS": columns})
        assert shown.exit_code == 0, shown.output
        assert all(len(line) <= int(columns) for line in shown.stdout.splitlines()), shown.stdout
        assert '2024.json"]' in shown.stdout  # the end of the path, never cut
    assert "conversations-2024.json" in shown.stdout  # 200 columns: room for the whole file name


def test_a_wide_terminal_never_makes_two_values_look_the_same(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cold pass: at 200 columns two exports read `/work/shared…ations.json` (their middle, the part that
    tells them apart, cut), and counters' headings `messa…rted`. A table that would lose that shows one record
    per block, where every value is whole; headings keep HEADING_MIN characters."""
    root = "/work/shared/data/exports/chatgpt/"
    rows = [
        {"path": root + name + "/conversations.json", **{f"messages_{k}": 1 for k in ("read", "inserted", "updated")}}
        for name in ("spark-first", "rainchinchao")
    ]
    monkeypatch.setenv("COLUMNS", "90")
    print_table(rows)
    out = capsys.readouterr().out
    assert root + "spark-first/conversations.json" in out and root + "rainchinchao/conversations.json" in out
    assert "messa…" not in out


def test_a_table_of_reasons_keeps_every_reason_whole_on_a_narrow_terminal(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`staging failures` at 60 columns cut a run's error in its middle, the part that said what was wrong."""
    reason = "nothing could be read as claude (377 record(s) quarantined); it looks like chatgpt: " + "x " * 200 + "END"
    monkeypatch.setenv("COLUMNS", "60")
    print_table([{"run": "r1", "error": reason}], whole=True)
    out = " ".join(line.split("  ", 1)[-1].strip() for line in capsys.readouterr().out.splitlines())
    assert "it looks like chatgpt" in out and out.rstrip().endswith("END") and "…" not in out


# ---------------------------------------------------------------- exit codes on a data dir where nothing ran


def test_a_data_dir_where_no_stage_ran_answers_every_read_command_alike(tmp_path: Path) -> None:
    """Databases exist, no stage ran: recall, topics, concepts and facts all exit 1 with the command that builds
    what they show (recall and topics did; concepts and facts exited 0 with nothing); the ledger reads exit 0."""
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    open_archive(data_dir / "archive.db").close()
    open_staging(data_dir / "staging.db").close()
    for args in (("recall", "anything"), ("topics",), ("concepts",), ("facts",), ("concepts", "--json")):
        done = chatmem(*args, data_dir=data_dir)
        assert done.exit_code == 1, (args, done.output)
        assert f"chatmem --data-dir {data_dir} run" in done.stderr and done.stdout == "", (args, done.output)
    for args in (("staging", "runs"), ("staging", "failures"), ("archive", "stats")):
        assert chatmem(*args, data_dir=data_dir).exit_code == 0, args


def test_an_unknown_run_id_is_a_usage_error_everywhere(tmp_path: Path) -> None:
    """report, staging show/export, topics, run --run-id and stage: exit 2 with one line (report exited 1,
    staging export wrote 0 rows with exit 0)."""
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    open_archive(data_dir / "archive.db").close()
    open_staging(data_dir / "staging.db").close()
    out = tmp_path / "x.csv"
    cases = [
        ("report", "--run-id", "r-nope"),
        ("staging", "export", "runs", "--run-id", "r-nope", "--format", "csv", "--out", out),
        ("staging", "show", "runs", "--run-id", "r-nope"),
        ("topics", "--run-id", "r-nope"),
        ("run", "--run-id", "r-nope"),
        ("stage", "ingest", "--run-id", "r-nope"),
    ]
    for args in cases:
        done = chatmem(*args, data_dir=data_dir)
        assert done.exit_code == 2, (args, done.output)
        assert "unknown run id 'r-nope'" in done.stderr, (args, done.stderr)
    assert not out.exists()


def test_a_run_id_in_a_data_dir_with_no_runs_is_a_usage_error(tmp_path: Path) -> None:
    """`chatmem --data-dir /mistyped stage cluster --run-id r1` (and run, topics, report): exit 2, one line naming the
    run id and the data dir (it exited 1, as a failed stage does); nothing is created there."""
    data_dir = tmp_path / "nonexistent"
    for args in (
        ("stage", "cluster", "--run-id", "r1"),
        ("run", "--run-id", "r1"),
        ("topics", "--run-id", "r1"),
        ("report", "--run-id", "r1"),
    ):
        done = chatmem(*args, data_dir=data_dir)
        assert done.exit_code == 2, (args, done.output)
        assert done.stderr.count("\n") == 1 and "unknown run id 'r1'" in done.stderr, (args, done.stderr)
        assert str(data_dir) in done.stderr and "--data-dir" in done.stderr, (args, done.stderr)
    assert not data_dir.exists()


# ---------------------------------------------------------------- runs (real pipeline)


def test_a_bad_file_is_refused_before_anything_starts(tmp_path: Path) -> None:
    """An empty file and a zip without conversations: one line each, exit 1, and nothing written (no Prefect,
    no staging.db, no run in a ledger)."""
    import zipfile

    empty = tmp_path / "empty.json"
    empty.write_bytes(b"")
    bare = tmp_path / "bare.zip"
    with zipfile.ZipFile(bare, "w") as archive:
        archive.writestr("readme.txt", "no conversations here")
    for bad in (empty, bare):
        data_dir = tmp_path / f"data-{bad.stem}"
        done, loaded = process("run", bad, data_dir=data_dir)
        assert done.returncode == 1, done.stderr
        errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
        assert len(errors) == 1 and str(bad) in errors[0] and "Traceback" not in done.stderr, done.stderr
        assert loaded == [], loaded
        assert not (data_dir / "staging.db").exists() and not (data_dir / "prefect").exists()


@pytest.mark.prefect
@pytest.mark.slow
def test_a_run_with_nothing_new_is_one_line_and_starts_no_prefect(tmp_path: Path, jsonl_export: Path) -> None:
    """The second `chatmem run` of the same dump: every stage unchanged, decided before Prefect (not imported),
    recorded in the ledger as a run whose stages were skipped, and said in one line naming the run that did the
    work. `report` then shows that run, and says why."""
    data_dir = tmp_path / "data"
    first = chatmem("-q", "run", jsonl_export, "--to", "segment", "--json", data_dir=data_dir)
    assert first.exit_code == 0, first.output
    worked = json.loads(first.stdout)["run_id"]
    done, loaded = process("run", jsonl_export, "--to", "segment", data_dir=data_dir)
    assert done.returncode == 0, done.stderr
    assert loaded == [], loaded  # no prefect, no clustering libraries
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith(f"nothing new: 2 stage(s) unchanged since run {worked}"), lines
    runs = json.loads(chatmem("staging", "runs", "--json", data_dir=data_dir).stdout)
    assert [r["status"] for r in runs] == ["succeeded", "succeeded"]
    assert runs[0]["stage_status"] == {"ingest": "skipped", "segment": "skipped"}
    report = chatmem("report", "--json", "--out", tmp_path / "report", data_dir=data_dir)
    assert report.exit_code == 0, report.output
    chosen = json.loads(report.stdout)
    assert chosen["run_id"] == worked and "changed nothing" in chosen["chosen_because"]
    forced = chatmem("-q", "run", jsonl_export, "--to", "segment", "--force", "--json", data_dir=data_dir)
    statuses = {s["stage"]: s["status"] for s in json.loads(forced.stdout)["stages"]}
    assert statuses == {"ingest": "succeeded", "segment": "succeeded"}, statuses  # --force skips nothing


@pytest.mark.prefect
@pytest.mark.slow
def test_a_stage_rerun_with_nothing_to_do_leaves_the_run_as_it_was(tmp_path: Path, jsonl_export: Path) -> None:
    """`chatmem stage segment --run-id R` (and `run --to segment --run-id R`) with nothing changed: R's row in
    `staging runs` (status, finish time, each stage's status) and its stage runs stay as the real run left them (the
    no-op's replaced them); the check is a no-op run of its own, decided before Prefect, said in one line naming R."""
    data_dir = tmp_path / "data"
    first = chatmem("-q", "run", jsonl_export, "--to", "segment", "--json", data_dir=data_dir)
    assert first.exit_code == 0, first.output
    worked = json.loads(first.stdout)["run_id"]

    def recorded() -> tuple[object, object]:
        runs = json.loads(chatmem("staging", "runs", "--json", data_dir=data_dir).stdout)
        rows = chatmem("staging", "show", "stage_runs", "--run-id", worked, "--json", data_dir=data_dir)
        return [r for r in runs if r["id"] == worked], json.loads(rows.stdout)

    before = recorded()
    assert before[0] and before[0][0]["stage_status"] == {"ingest": "succeeded", "segment": "succeeded"}
    done, loaded = process("stage", "segment", "--run-id", worked, data_dir=data_dir)
    assert done.returncode == 0 and loaded == [], done.stderr  # no Prefect started for it
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("nothing new: ") and f"since run {worked}" in lines[0], lines
    assert recorded() == before
    again = chatmem("run", "--to", "segment", "--run-id", worked, data_dir=data_dir)
    assert again.exit_code == 0 and again.stdout.startswith("nothing new: "), again.output
    assert recorded() == before
    runs = json.loads(chatmem("staging", "runs", "--json", data_dir=data_dir).stdout)
    assert [r["stage_status"] for r in runs if r["id"] != worked] == [
        {"ingest": "skipped", "segment": "skipped"},
        {"segment": "skipped"},
    ]  # the checks, newest first, each a no-op run


@pytest.mark.prefect
@pytest.mark.slow
def test_a_dump_cut_short_exits_1_after_keeping_what_arrived(tmp_path: Path, chatgpt_export: Path) -> None:
    """A ChatGPT export cut inside its second conversation: the first arrives, the run succeeds, and the command
    exits 1 with one line saying the file was cut short (a cron job notices)."""
    [conversation] = json.loads(chatgpt_export.read_text())
    second = json.loads(json.dumps(conversation).replace(conversation["id"], "second-conversation"))
    second["title"] = "second"
    text = "[" + json.dumps(conversation) + ", " + json.dumps(second)
    cut = tmp_path / "conversations.json"
    cut.write_text(text[: len(text) - len(json.dumps(second)) // 2])
    data_dir = tmp_path / "data"
    done = chatmem("-q", "run", cut, "--only", "ingest", "--json", data_dir=data_dir)
    assert done.exit_code == 1, done.output
    summary = json.loads(done.stdout)
    assert summary["status"] == "incomplete" and [f["status"] for f in summary["files"]] == ["partial"]
    assert "1 file cut short" in done.stderr and str(cut) in done.stderr  # tests/test_cli_cold_pass.py: the text
    stats = json.loads(chatmem("archive", "stats", "--json", data_dir=data_dir).stdout)
    assert stats["conversations"] == 1
