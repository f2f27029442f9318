"""What a cold user met in session 31's try, each through the real CLI on real files: a broken dump beside a bare
conversations.json, a fake .zip, a folder whose only export lies too deep, a run stopped by a bad file, stage
times in `staging runs` (a data dir that does not exist: tests/test_cli.py; `serve --cron`: tests/test_serve.py)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from fault_support import write_chats

from flows.cli import cli

BYTES_REPR = re.compile(r"""b['"]|\\x[0-9a-f]{2}""")  # a Python bytes repr: b'\xd3\xcc...'
RANDOM = bytes((i * 197 + 89) % 256 for i in range(300))  # 300 bytes of no format, starting as no JSON


def chatmem(*args: str | Path, data_dir: Path, columns: int = 120) -> Result:
    return CliRunner().invoke(
        cli, ["--data-dir", str(data_dir), *map(str, args)], env={"COLUMNS": str(columns)}, catch_exceptions=False
    )


def as_json(result: Result) -> Any:
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.mark.prefect
def test_broken_dumps_beside_a_bare_conversations_json_are_reported_bad_and_the_good_one_arrives(
    tmp_path: Path, chatgpt_export: Path
) -> None:
    """A folder of dumps holding a bare conversations.json, with `{not json` in a .json file and random bytes named
    x.zip dropped beside it: both are read and reported failed, each in one line with why (x.zip "not a zip file",
    in words), exit 1, and the good export arrives; before, both were said as "inside the export folder ..., taken
    as one of its files" and never reported bad."""
    drop = tmp_path / "drop"
    drop.mkdir()
    shutil.copy(chatgpt_export, drop / "conversations.json")
    broken, fake = drop / "broken.json", drop / "x.zip"
    broken.write_text("{not json", encoding="utf-8")
    fake.write_bytes(RANDOM)
    data_dir = tmp_path / "data"
    done = chatmem("run", drop, "--only", "ingest", data_dir=data_dir)
    assert done.exit_code == 1, done.output
    assert "inside the export folder" not in done.output, done.output
    assert f"{drop}: 3 export(s) found in it" in done.stderr, done.stderr
    [broken_line] = [line for line in done.stdout.splitlines() if f"{broken}:" in line]
    assert broken_line.strip().startswith(f"failed: {broken}: invalid JSON"), broken_line
    [fake_line] = [line for line in done.stdout.splitlines() if f"{fake}:" in line]
    assert fake_line.strip() == (
        f"failed: {fake}: not a zip file: 300 bytes that start as neither a zip archive nor JSON (binary data)"
    )
    assert f"ingested: {drop / 'conversations.json'}: 1 conversation(s)" in done.stdout, done.stdout
    [error] = done.stderr.splitlines()[-1:]
    assert error.startswith("error: 2 files failed in run ") and str(broken) in error and str(fake) in error
    assert "fix the files and run again" in error, error
    assert not BYTES_REPR.search(done.output), done.output
    assert as_json(chatmem("archive", "stats", "--json", data_dir=data_dir))["conversations"] == 1
    failures = as_json(chatmem("staging", "failures", "--json", data_dir=data_dir))
    assert sorted(row["path"] for row in failures["files"]) == [str(broken), str(fake)]


def test_a_fake_zip_given_alone_is_refused_in_words(tmp_path: Path) -> None:
    """Random bytes named x.zip: one line, "not a zip file" and its size, no bytes repr (it said "the file starts
    with b'\\xd3\\xcc...'"); nothing is started or written."""
    fake = tmp_path / "x.zip"
    fake.write_bytes(RANDOM)
    done = chatmem("run", fake, data_dir=tmp_path / "data")
    assert done.exit_code == 1 and done.stdout == "", done.output
    assert done.stderr.splitlines() == [
        f"error: {fake}: not a zip file: 300 bytes that start as neither a zip archive nor JSON (binary data)"
    ]
    assert not (tmp_path / "data" / "staging.db").exists()


def test_a_folder_whose_only_export_lies_too_deep_is_refused_in_one_line_that_says_why(
    tmp_path: Path, chatgpt_export: Path
) -> None:
    """`chatmem run DIR` where the only export is DIR/a/b/c/d/conversations.json (4 levels down): one line, the
    folder search's, naming a/b/c/d/ as left out; before, that line was followed by "folder has no
    conversations.json", which read as a contradiction. --json says the same in its object."""
    deep = tmp_path / "deep"
    (deep / "a" / "b" / "c" / "d").mkdir(parents=True)
    shutil.copy(chatgpt_export, deep / "a" / "b" / "c" / "d" / "conversations.json")
    said = (
        f"{deep}: no export found in it and 3 levels of subfolders below; left out 1: a/b/c/d/ (more than 3 levels"
        " of subfolders down, not looked into)"
    )
    done = chatmem("run", deep, data_dir=tmp_path / "data")
    assert done.exit_code == 1, done.output
    assert done.stderr.splitlines() == [f"error: {said}"], done.stderr
    refused = chatmem("run", deep, "--json", data_dir=tmp_path / "data")
    assert refused.exit_code == 1 and json.loads(refused.stdout)["error"] == said, refused.output


@pytest.mark.prefect
def test_a_folder_with_no_export_beside_a_good_file_is_said_once_and_reported_failed(
    tmp_path: Path, chatgpt_export: Path
) -> None:
    """Beside an export that arrives, the folder whose only export lies too deep is said once, in the same words
    as when it is refused alone, and ingest's failure for it says what it found in the folder itself."""
    deep = tmp_path / "deep"
    (deep / "a" / "b" / "c" / "d").mkdir(parents=True)
    shutil.copy(chatgpt_export, deep / "a" / "b" / "c" / "d" / "conversations.json")
    good = write_chats(tmp_path / "good.jsonl", 1)
    done = chatmem("run", good, deep, "--only", "ingest", data_dir=tmp_path / "data")
    assert done.exit_code == 1, done.output
    said = [line for line in done.stderr.splitlines() if line.startswith(f"{deep}: ")]
    assert said == [
        f"{deep}: no export found in it and 3 levels of subfolders below; left out 1: a/b/c/d/ (more"
        " than 3 levels of subfolders down, not looked into)"
    ], done.stderr
    assert f"failed: {deep}: folder has no conversations.json directly in it" in done.stdout, done.stdout
    assert f"ingested: {good}" in done.stdout, done.stdout


@pytest.mark.prefect
def test_a_run_stopped_by_a_bad_file_says_to_fix_it_before_running_again(tmp_path: Path) -> None:
    """Every given file failed (a ChatGPT-shaped file whose records are all unreadable): the run fails at ingest.
    Its hint and its `resume` (staging runs, staging failures) name the file to fix or remove first, then the
    command; before, `resume` was `chatmem run --from ingest ...` alone, which would fail the same way."""
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"mapping": 5, "id": 3}]), encoding="utf-8")
    data_dir = tmp_path / "data"
    done = chatmem("-q", "run", bad, "--to", "segment", data_dir=data_dir)
    assert done.exit_code == 1, done.output
    [run] = as_json(chatmem("staging", "runs", "--json", data_dir=data_dir))
    command = f"chatmem run --from ingest --to segment --run-id {run['id']}"
    assert f"(re-run: fix or remove {bad}, then: chatmem stage ingest --run-id {run['id']})" in done.stderr
    assert run["resume"] == f"fix or remove {bad}, then: {command}", run
    failures = as_json(chatmem("staging", "failures", "--json", data_dir=data_dir))
    assert [row["resume"] for row in failures["runs"]] == [run["resume"]]
    table = chatmem("staging", "runs", data_dir=data_dir, columns=300)
    assert f"fix or remove {bad}, then: {command}" in table.stdout, table.stdout


@pytest.mark.prefect
def test_staging_runs_shows_how_long_the_run_and_each_stage_took(tmp_path: Path) -> None:
    """`staging runs`: the run's time in the table (`took`), and each stage's time below it, one run a line, every
    stage that ran named with its time (`ingest 0.1s, segment 0.3s`); --json carries the seconds."""
    data_dir = tmp_path / "data"
    done = chatmem("-q", "run", write_chats(tmp_path / "chats.jsonl", 2), "--to", "segment", data_dir=data_dir)
    assert done.exit_code == 0, done.output
    [run] = as_json(chatmem("staging", "runs", "--json", data_dir=data_dir))
    assert set(run["stage_duration_s"]) == {"ingest", "segment"}, run
    assert all(isinstance(seconds, float) for seconds in run["stage_duration_s"].values()), run
    assert run["duration_s"] >= sum(run["stage_duration_s"].values()), run
    for columns in (200, 60):  # a table, or a block per run: the times are said whole below it
        lines = chatmem("staging", "runs", data_dir=data_dir, columns=columns).stdout.splitlines()
        assert any(line.startswith("took") or " took " in line for line in lines), lines
        heading = next(i for i, line in enumerate(lines) if line.startswith("stage times"))
        assert re.fullmatch(rf"  {run['id']}  ingest \d+\.\ds, segment \d+\.\ds", lines[heading + 1]), lines


def test_a_path_through_a_file_is_one_line_not_a_traceback(tmp_path: Path) -> None:
    """An output path or a data dir that runs through a regular file: one `error:` line naming the path and exit 1,
    for each command that makes folders (a NotADirectoryError / FileExistsError traceback before)."""
    afile = tmp_path / "afile"
    afile.write_text("", encoding="utf-8")
    data_dir = tmp_path / "data"
    assert chatmem("archive", "stats", data_dir=data_dir).exit_code == 1  # nothing built: a data dir is made below
    write_chats(tmp_path / "chats.jsonl", 2)
    assert chatmem("-q", "run", tmp_path / "chats.jsonl", "--only", "ingest", data_dir=data_dir).exit_code == 0
    for args in (
        ("report", "--out", afile / "r"),
        ("staging", "export", "stage_runs", "--out", afile / "x.csv", "--format", "csv"),
        ("graph", "export-csv", afile / "g"),
    ):
        done = chatmem(*args, data_dir=data_dir)
        assert done.exit_code == 1, (args, done.output)
        assert "Traceback" not in done.output and isinstance(done.exception, SystemExit | None)
        [line] = done.stderr.strip().splitlines()
        assert line.startswith(f"error: {afile}") and "give a path of folders" in line, line
    done = chatmem("-q", "run", tmp_path / "chats.jsonl", "--only", "ingest", data_dir=afile / "sub")
    assert done.exit_code == 1 and "a part of this path is a file" in done.stderr, done.output


def test_serve_once_refuses_a_bad_cron_before_it_reads_the_folder(tmp_path: Path) -> None:
    """`serve --once --cron 'bad cron'`: the cron is checked with --once too (it was ignored, and the folder ingested),
    exit 2 with one line, nothing ingested."""
    watch = tmp_path / "dumps"
    watch.mkdir()
    write_chats(watch / "chats.jsonl", 2)
    data_dir = tmp_path / "data"
    done = chatmem("serve", "--once", "--cron", "bad cron", "--watch", watch, data_dir=data_dir)
    assert done.exit_code == 2, done.output
    assert done.stderr.strip() == "error: --cron 'bad cron' is not a valid cron expression", done.stderr
    assert not (data_dir / "archive.db").exists()


def test_staging_runs_says_a_run_succeeded_with_files_it_could_not_read(tmp_path: Path) -> None:
    """A good file and a broken one: the run exits 1 and `staging runs` says so beside "succeeded" (it showed a plain
    "succeeded"); --json counts them in `files_failed`."""
    good = write_chats(tmp_path / "good.jsonl", 2)
    bad = tmp_path / "bad.json"
    bad.write_text("{not json", encoding="utf-8")
    data_dir = tmp_path / "data"
    assert chatmem("-q", "run", good, bad, "--only", "ingest", data_dir=data_dir).exit_code == 1
    [run] = as_json(chatmem("staging", "runs", "--json", data_dir=data_dir))
    assert run["status"] == "succeeded" and run["files_failed"] == 1, run
    table = chatmem("staging", "runs", data_dir=data_dir, columns=300)
    assert "succeeded, 1 file(s) failed (staging failures)" in table.stdout, table.stdout
