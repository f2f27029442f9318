"""What a cold user met in sessions 31 and 32's tries, each through the real CLI on real files: a broken dump beside a
bare conversations.json, a fake .zip, a folder whose only export lies too deep, a run stopped by a bad file and the
command that finishes it once the file is fixed, several bad files refused at once, stage times in `staging runs`,
`serve` on a folder whose exports lie too deep or with a bad --cron, negative --limit values, JSON errors drawn over
lines, read-only commands on a data dir that does not exist (also: tests/test_cli.py; `serve --cron`:
tests/test_serve.py)."""

from __future__ import annotations

import errno
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner, Result
from fault_support import write_chats

from contracts.errors import MalformedExportError
from flows.cli import cli

ROOT = Path(__file__).resolve().parents[1]
LIBRECHAT = ROOT / "tests" / "fixtures" / "exports" / "librechat" / "librechat-tree.json"  # a real LibreChat export

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
    assert f"failed: {deep}: the folder holds no export chatmem can read: no conversations.json directly in it" in (
        done.stdout
    ), done.stdout
    assert f"ingested: {good}" in done.stdout, done.stdout


@pytest.mark.prefect
def test_a_run_stopped_by_a_bad_file_says_the_command_that_finishes_it_once_the_file_is_fixed(
    tmp_path: Path, chatgpt_export: Path
) -> None:
    """Every given file failed (a ChatGPT-shaped file whose records are all unreadable): the run fails at ingest.
    Its hint names the file to fix or remove first, then the command that finishes the run (ingest and every later
    stage it selected), the same as its `resume` (staging runs, staging failures); run once the file is fixed, that
    command ends the run succeeded. Before, the hint said `chatmem stage ingest --run-id R`: exit 0, and the run
    stayed failed with its later stages never run."""
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"mapping": 5, "id": 3}]), encoding="utf-8")
    data_dir = tmp_path / "data"
    done = chatmem("-q", "run", bad, "--to", "segment", data_dir=data_dir)
    assert done.exit_code == 1, done.output
    [run] = as_json(chatmem("staging", "runs", "--json", data_dir=data_dir))
    command = f"chatmem run --from ingest --to segment --run-id {run['id']}"
    assert f"(re-run: fix or remove {bad}, then: chatmem --data-dir {data_dir} {command[8:]})" in done.stderr
    assert run["resume"] == f"fix or remove {bad}, then: {command}", run
    failures = as_json(chatmem("staging", "failures", "--json", data_dir=data_dir))
    assert [row["resume"] for row in failures["runs"]] == [run["resume"]]
    assert [row["rerun_hint"] for row in failures["stage_runs"]] == [f"fix or remove {bad}, then: {command}"]
    table = chatmem("staging", "runs", data_dir=data_dir, columns=300)
    printed = command.replace("chatmem ", f"chatmem --data-dir {data_dir} ", 1)  # the table says the data dir
    assert f"fix or remove {bad}, then: {printed}" in table.stdout and printed in done.stderr, table.stdout

    shutil.copy(chatgpt_export, bad)  # the user fixes the file, then runs the command the hint gave
    finished = chatmem("-q", *shlex.split(command)[1:], data_dir=data_dir)
    assert finished.exit_code == 0, finished.output
    [run] = as_json(chatmem("staging", "runs", "--json", data_dir=data_dir))
    assert run["status"] == "succeeded" and run["stage_status"] == {"ingest": "succeeded", "segment": "succeeded"}
    assert as_json(chatmem("archive", "stats", "--json", data_dir=data_dir))["conversations"] == 1


def test_a_refused_run_names_every_bad_file_with_why(tmp_path: Path) -> None:
    """Several files given and none can be read: one line naming each with why (the first 10, then how many more),
    so that all are fixed before the next try; before, only the first was named ("and 11 more file(s) like it").
    Nothing is written."""
    bad = []
    for n in range(12):
        path = tmp_path / f"bad{n:02d}.json"
        path.write_text("{not json" if n % 2 else "", encoding="utf-8")
        bad.append(path)
    fake = tmp_path / "x.zip"
    fake.write_bytes(RANDOM)
    data_dir = tmp_path / "data"
    done = chatmem("run", fake, *bad, data_dir=data_dir)
    assert done.exit_code == 1 and done.stdout == "", done.output
    [line] = done.stderr.splitlines()
    assert line.startswith("error: none of the 13 files given can be read: "), line
    assert f"{fake}: not a zip file: 300 bytes" in line, line
    assert f"{bad[0]}: empty file: no JSON found" in line, line
    assert f"{bad[1]}: invalid JSON before the format could be recognised" in line, line
    named = [path for path in bad if f"{path}: " in line]
    assert named == bad[:9] and line.endswith("; and 3 more"), line
    refused = chatmem("run", fake, *bad, "--json", data_dir=data_dir)
    assert json.loads(refused.stdout)["error"] == line.removeprefix("error: ")
    assert not data_dir.exists()


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
    """A good file and a broken one: the run exits 1 and `staging runs` says so (it showed a plain "succeeded"):
    `incomplete` with why since session 36, as `chatmem run` says it; --json counts them in `files_failed`."""
    good = write_chats(tmp_path / "good.jsonl", 2)
    bad = tmp_path / "bad.json"
    bad.write_text("{not json", encoding="utf-8")
    data_dir = tmp_path / "data"
    assert chatmem("-q", "run", good, bad, "--only", "ingest", data_dir=data_dir).exit_code == 1
    [run] = as_json(chatmem("staging", "runs", "--json", data_dir=data_dir))
    assert run["status"] == "incomplete" and run["files_failed"] == 1 and run["incomplete"] == "1 file failed", run
    table = chatmem("staging", "runs", data_dir=data_dir, columns=300)
    assert "incomplete: 1 file failed (staging failures)" in table.stdout, table.stdout


@pytest.mark.prefect
def test_serve_once_on_a_folder_whose_exports_lie_too_deep_says_what_run_says(
    tmp_path: Path, chatgpt_export: Path
) -> None:
    """`serve --once --watch DIR` where the only export is DIR/a/b/c/d/conversations.json: the line `chatmem run DIR`
    says (no export found, a/b/c/d/ left out as too deep), not "left out 1 path(s) that are not exports or not
    ready"."""
    deep = tmp_path / "deep"
    (deep / "a" / "b" / "c" / "d").mkdir(parents=True)
    shutil.copy(chatgpt_export, deep / "a" / "b" / "c" / "d" / "conversations.json")
    data_dir = tmp_path / "data"
    said = chatmem("run", deep, data_dir=data_dir).stderr.strip().removeprefix("error: ")
    assert said.startswith(f"{deep}: no export found in it and 3 levels of subfolders below; left out 1: a/b/c/d/")
    done = chatmem("-q", "serve", "--once", "--watch", deep, data_dir=data_dir)
    assert done.exit_code == 0, done.output
    assert done.stdout.splitlines() == [said], done.stdout


@pytest.mark.parametrize(
    ("cron", "said"),
    [
        ("61 * * * *", "is not a valid cron expression"),
        # croniter takes a seconds (and a years) field: every second flooded Prefect's database with late runs
        ("* * * * * *", "has 6 fields: give 5 (minute hour day-of-month month day-of-week)"),
        ("* * * * * * *", "has 7 fields: give 5 (minute hour day-of-month month day-of-week)"),
        ("0 0 31 2 *", "never fires: no such date (e.g. 31 February)"),
    ],
)
def test_serve_refuses_a_bad_cron_having_created_nothing(tmp_path: Path, cron: str, said: str) -> None:
    """`serve --cron '61 * * * *'` (minute 61), a cron with seconds, or one that never fires: exit 2 with one
    line, and no data dir, no DATA_DIR/prefect (Prefect made its home there before the cron was checked). Its own
    process, with no PREFECT_HOME set: the default is DATA_DIR/prefect."""
    watch = tmp_path / "dumps"
    watch.mkdir()
    data_dir = tmp_path / "data"
    env = {name: value for name, value in os.environ.items() if not name.startswith("PREFECT_")}
    command = [sys.executable, "-m", "flows.cli", "--data-dir", str(data_dir), "serve", "--cron", cron]
    done = subprocess.run(
        [*command, "--watch", str(watch)],
        cwd=tmp_path,
        env={**env, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 2, done.stderr
    [line] = done.stderr.splitlines()
    assert line.startswith(f"error: --cron {cron!r} {said}"), done.stderr
    assert not data_dir.exists()


def _commands(group: click.Group, ctx: click.Context, prefix: tuple[str, ...] = ()) -> list[tuple[str, click.Command]]:
    found = []
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        assert command is not None, name
        if isinstance(command, click.Group):
            found += _commands(command, ctx, (*prefix, name))
        else:
            found.append((" ".join((*prefix, name)), command))
    return found


def test_every_integer_option_has_a_range() -> None:
    """No integer option of any command takes any int: each is a click.IntRange (a count: at least 0 where 0 means
    all, else at least 1; a port: 0-65535), so that `--limit -5` is a usage error, not an answer."""
    with click.Context(cli) as ctx:
        commands = _commands(cli, ctx)
    assert len(commands) > 20, [name for name, _ in commands]
    unbounded = [
        f"{name} {param.opts[0]}"
        for name, command in commands
        for param in command.params
        if isinstance(param.type, click.types.IntParamType) and not isinstance(param.type, click.IntRange)
    ]
    assert unbounded == []


@pytest.mark.parametrize(
    "args",
    [
        ("concepts", "--limit", "-5"),
        ("concepts", "--evidence", "-1"),
        ("topics", "--limit", "-1"),
        ("garden", "--dry-run", "--limit", "-1"),
        ("staging", "runs", "--limit", "-1"),
        ("staging", "show", "runs", "--limit", "-1"),
    ],
)
def test_a_negative_limit_is_a_usage_error(tmp_path: Path, args: tuple[str, ...]) -> None:
    """`concepts --limit -5` and the like: exit 2, click's one `Error:` line naming the option and its range
    (it was taken, and answered as though it were a limit)."""
    done = chatmem(*args, data_dir=tmp_path / "data")
    assert done.exit_code == 2, done.output
    option, value = args[-2:]
    assert done.stderr.splitlines()[-1] == f"Error: Invalid value for '{option}': {value} is not in the range x>=0."


def test_a_json_error_is_one_line_with_its_line_and_column(tmp_path: Path) -> None:
    """A file that is no JSON: the refusal says where, as a line and a column, in one line; before, yajl's drawing
    of the text with a caret under it (`(right here) ------^`) was flattened into the message."""
    broken = tmp_path / "broken.json"
    broken.write_text('\n{"title": "trip",\n "messages": [1, 2,, 3]}\n', encoding="utf-8")
    done = chatmem("run", broken, data_dir=tmp_path / "data")
    assert done.exit_code == 1, done.output
    assert done.stderr.splitlines() == [
        f"error: {broken}: invalid JSON before the format could be recognised (parse error: unallowed token at this"
        " point in JSON text at line 3, column 21)"
    ], done.stderr


def test_a_json_error_past_the_head_of_a_real_export_is_one_line_with_its_line_and_column(tmp_path: Path) -> None:
    """A real LibreChat export (one JSON object, read as a stream) broken on its 40th line: the error names that
    line and its column, in one line, without yajl's drawing."""
    from ingest.jsonstream import iter_json_items

    lines = LIBRECHAT.read_bytes().split(b"\n")
    lines[39] = lines[39] + b",,"
    broken = tmp_path / "librechat.json"
    broken.write_bytes(b"\n".join(lines))
    with broken.open("rb") as stream, pytest.raises(MalformedExportError) as raised:
        list(iter_json_items(stream, "", name=str(broken)))
    message = str(raised.value)
    assert "\n" not in message and "right here" not in message and "^" not in message, message
    assert re.search(r"\(parse error: .* at line 40, column \d+\)$", message), message


@pytest.mark.parametrize("args", [("graph", "status"), ("graph", "stats"), ("recall", "a question"), ("mcp",)])
def test_read_only_commands_on_a_missing_data_dir_say_so_in_the_common_words(
    tmp_path: Path, args: tuple[str, ...]
) -> None:
    """`graph status` (exit 0, "not running"), `graph stats` ("start it with chatmem graph up") and `recall` ("nothing
    in DIR yet") on a data dir that does not exist: the one line every read-only command says, exit 1, the data dir
    not created."""
    data_dir = tmp_path / "missing"
    done = chatmem(*args, data_dir=data_dir)
    assert done.exit_code == 1, done.output
    assert done.stdout == "", done.stdout
    assert done.stderr.splitlines() == [
        f"error: {data_dir} does not exist, so it holds no archive: build one with `chatmem --data-dir {data_dir} run"
        " EXPORT`, or point --data-dir / CHATMEM_DATA_DIR at an existing data dir"
    ], done.stderr
    assert not data_dir.exists()


def test_graph_export_csv_on_a_missing_data_dir_says_so_in_the_common_words(tmp_path: Path) -> None:
    """`graph export-csv OUT` on a data dir that does not exist: the common line (it said "nothing in DIR yet"), exit
    1, neither the data dir nor OUT created; on an empty data dir, the line `staging runs` and the others say."""
    data_dir, out = tmp_path / "missing", tmp_path / "csv"
    done = chatmem("graph", "export-csv", out, data_dir=data_dir)
    assert done.exit_code == 1, done.output
    assert done.stderr.splitlines() == [
        f"error: {data_dir} does not exist, so it holds no archive: build one with `chatmem --data-dir {data_dir} run"
        " EXPORT`, or point --data-dir / CHATMEM_DATA_DIR at an existing data dir"
    ], done.stderr
    assert not data_dir.exists() and not out.exists()
    data_dir.mkdir()
    done = chatmem("graph", "export-csv", out, data_dir=data_dir)
    assert done.exit_code == 1 and not out.exists(), done.output
    assert done.stderr.splitlines() == [
        f"error: nothing in {data_dir} yet (archive.db does not exist): run `chatmem --data-dir {data_dir} run EXPORT`"
        " first, or point"
        " --data-dir / CHATMEM_DATA_DIR at an existing data dir"
    ], done.stderr


@pytest.mark.parametrize("code", [errno.EROFS, errno.EACCES])
def test_a_path_the_command_may_not_write_is_one_line_naming_it(code: int) -> None:
    """`report` into a read-only data dir (a read-only mount: root's permissions do not stop a test's writes, so
    the error itself is made here) is one `error:` line naming the path and the way out, not a traceback."""
    from flows.cli_app import _in_the_way

    line = _in_the_way(OSError(code, os.strerror(code), "/data/reports/r1"))
    assert line.startswith(f"/data/reports/r1: cannot be written here ({os.strerror(code)}); give a folder")
    assert _in_the_way(OSError(errno.ENOENT, "No such file or directory", "/data/x")) == ""


@pytest.mark.prefect
@pytest.mark.parametrize("name", ["conversations.json", "export.zip"])
def test_an_export_of_no_conversation_is_said_in_a_note(tmp_path: Path, name: str) -> None:
    """`[]` (a ChatGPT export with nothing in it, bare or zipped) is a valid file, not a failure, but a run that
    says nothing of it reads as if the dump arrived: the summary notes that the file held no conversation."""
    export = tmp_path / name
    if name.endswith(".zip"):
        with zipfile.ZipFile(export, "w") as bundle:
            bundle.writestr("conversations.json", "[]")
    else:
        export.write_text("[]", encoding="utf-8")
    done = chatmem("run", "--to", "ingest", export, data_dir=tmp_path / "data")
    assert done.exit_code == 0, done.output
    notes = [line.strip() for line in done.stdout.splitlines() if line.strip().startswith("note:")]
    read = f"{export}!conversations.json" if name.endswith(".zip") else str(export)  # the member read, in a zip
    assert notes == [f"note: {read}: no conversation in it (an empty export)"], done.stdout
