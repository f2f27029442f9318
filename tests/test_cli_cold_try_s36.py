"""What session 36's cold try found (a new user, a fresh clone, files of their own in /work/s36/cold-bad): each
through the real CLI (click's runner) on real files under tmp_path, with real SQLite."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner, Result
from test_ingest_stage import make_chatgpt_export, write_json

from flows.cli import cli


def chatmem(data_dir: Path, *args: str | Path, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(
        cli, ["--data-dir", str(data_dir), *map(str, args)], env={"COLUMNS": "120", **(env or {})}
    )


def test_a_folder_scan_leaves_out_another_chatmem_data_dir_in_one_line(tmp_path: Path) -> None:
    """`chatmem --data-dir X run --to ingest DIR` where DIR holds other data dirs (dd-*) read their state as exports:
    dd-*/chatmem.lock, graph/server.json, load-*.json failed "JSON object of an unknown shape", exit 1, "fix the
    files", and their databases were said one by one. Now a folder that is a data dir (staging.db, archive.db or
    chatmem.lock in it) is left out whole, said once with why; the run's own data dir is still not said."""
    downloads = tmp_path / "downloads"
    (downloads / "chatgpt").mkdir(parents=True)
    write_json(downloads / "chatgpt" / "conversations.json", make_chatgpt_export(2))
    other = downloads / "dd-other"
    built = chatmem(other, "run", "--to", "ingest", downloads / "chatgpt")
    assert built.exit_code == 0, built.output
    assert (other / "chatmem.lock").is_file() and (other / "staging.db").is_file()
    write_json(other / "load-archive.json", {"local:/x/graph#chatmem": {"nodes": 3}})  # as load writes it
    own = downloads / "dd-own"
    scan = chatmem(own, "run", "--to", "ingest", downloads)
    assert scan.exit_code == 0, scan.output
    assert "failed:" not in scan.output and "chatmem.lock" not in scan.output, scan.output
    [said] = [line for line in scan.stderr.splitlines() if "left out" in line]
    assert "left out 1: dd-other/ (a chatmem data dir: its state, no export)" in said, said
    assert "dd-own" not in said and "staging.db" not in said, said
    # a folder of data dirs only: nothing to read, said as such with the data dirs left out (not "fix the files")
    only = tmp_path / "only"
    only.mkdir()
    other.rename(only / "dd-other")
    alone = chatmem(tmp_path / "dd-3", "run", "--to", "ingest", only)
    assert alone.exit_code == 1 and "no export found" in alone.stderr, alone.output
    assert "dd-other/ (a chatmem data dir" in alone.stderr and "fix the file" not in alone.stderr, alone.stderr


def paste(hint: str, cwd: Path) -> Result:
    """The suggested command run as a user pastes it, from another folder than the one it was printed in."""
    import os
    import shlex

    words = shlex.split(hint)
    assert words[0] == "chatmem", hint
    here = Path.cwd()
    os.chdir(cwd)
    try:
        return CliRunner().invoke(cli, words[1:], env={"COLUMNS": "200", "CHATMEM_DATA_DIR": None})
    finally:
        os.chdir(here)


def test_hints_carry_the_data_dir_the_user_chose_and_work_pasted_as_shown(tmp_path: Path) -> None:
    """`chatmem --data-dir dd-int45 run ...` said `resume with: chatmem run --from cluster --to load --run-id R` and
    `(chatmem staging failures lists them)` with no --data-dir: pasted as shown they read the default .chatmem and
    failed. Now every command a hint suggests carries `--data-dir PATH` (absolute, shell-quoted) where the data dir
    is not the default, given by --data-dir or CHATMEM_DATA_DIR; pasted from another folder each works."""
    import re

    good = write_json(tmp_path / "good.json", make_chatgpt_export(2))
    broken = tmp_path / "broken.json"
    broken.write_text("{not json", encoding="utf-8")
    data_dir = tmp_path / "my data"  # a space: the hint quotes it
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    done = chatmem(data_dir, "run", "--to", "ingest", good, broken)
    assert done.exit_code == 1, done.output
    [error] = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    hint = re.search(r"\((chatmem .*) lists them\)", error)
    assert hint and f"chatmem --data-dir '{data_dir}' staging failures" == hint.group(1), error
    listed = paste(hint.group(1), elsewhere)
    assert listed.exit_code == 0 and str(broken) in listed.stdout, listed.output

    # a stage that fails: the command that finishes the run, and the `resume` column of `staging runs`
    cut = tmp_path / "cut.json"
    cut.write_bytes(good.read_bytes()[:300])
    stopped = CliRunner().invoke(
        cli, ["run", "--to", "segment", str(cut)], env={"COLUMNS": "200", "CHATMEM_DATA_DIR": str(data_dir)}
    )
    assert stopped.exit_code == 1, stopped.output
    finish = re.search(r"(chatmem --data-dir '[^']+' (?:run|stage) [^)]*--run-id [\w-]+)", stopped.stderr)
    assert finish and f"--data-dir '{data_dir}'" in finish.group(1), stopped.stderr
    runs = chatmem(data_dir, "staging", "runs", env={"COLUMNS": "400"})
    assert f"chatmem --data-dir '{data_dir}' " in runs.stdout and "resume" in runs.stdout, runs.stdout
    resumed = paste(finish.group(1), elsewhere)
    assert "unknown run id" not in resumed.output and "nothing in" not in resumed.output, resumed.output
    # the default data dir (.chatmem where the command runs): hints as before, with nothing added
    default = paste("chatmem staging failures", elsewhere)
    assert default.exit_code == 1 and "chatmem run EXPORT" in default.stderr, default.output
    assert str(data_dir) not in default.stderr, default.stderr  # no other data dir carried over


def test_serve_once_says_invalid_utf8_replaced_as_run_does(tmp_path: Path) -> None:
    """Invalid UTF-8 inside an otherwise valid export is read with U+FFFD in its place: `chatmem run` notes it
    (`2 invalid UTF-8 byte sequence(s) replaced with U+FFFD`), but `chatmem serve --once` said only `ingested: PATH`
    with exit 0: the message text started with U+FFFD U+FFFD and nothing said so. Now the tick says the note after
    the file, and --json gives it as the file's `notes`."""
    import json

    watch = tmp_path / "downloads"
    watch.mkdir()
    clean = json.dumps(make_chatgpt_export(2)).encode()
    at = clean.index(b'"parts": ["') + len(b'"parts": ["')
    bad = watch / "conversations.json"
    bad.write_bytes(clean[:at] + b"\xff\xfe" + clean[at:])  # two bytes no UTF-8 sequence starts with
    said = "2 invalid UTF-8 byte sequence(s) replaced with U+FFFD"
    tick = chatmem(tmp_path / "data", "serve", "--once", "--watch", watch)
    assert tick.exit_code == 0, tick.output
    assert f"  ingested: {bad} ({said})" in tick.stdout.splitlines(), tick.stdout
    run = chatmem(tmp_path / "data2", "run", "--to", "ingest", bad)  # what `run` says of the same file
    assert run.exit_code == 0 and f"note: {bad}: {said}" in run.stdout, run.output
    again = watch / "more.json"
    again.write_bytes(clean[:at] + b"\xff" + clean[at:].replace(b'"c0"', b'"d0"').replace(b'"c1"', b'"d1"'))
    tick = chatmem(tmp_path / "data", "serve", "--once", "--watch", watch, "--json")
    assert tick.exit_code == 0, tick.output
    [row] = json.loads(tick.stdout)["ingested"]
    row.pop("quarantined", None)  # its lines set aside, said since session 37 (test_cli_cold_try_s37.py)
    assert row == {"path": str(again), "status": "ingested", "notes": said.replace("2 ", "1 ", 1)}, row


def test_staging_runs_cuts_a_status_after_a_whole_word_not_in_its_middle(tmp_path: Path) -> None:
    """`chatmem staging runs` piped (no terminal: 120 columns) cut the status in the middle of a word ("succeeded,
    1 fil…aging failures)"; with the `incomplete` status of 0b72f46, "incomplete: 1 fil…aging failures)"): the count
    of files was lost. Now a status too wide for its column is cut after a whole word, with "…"; --json and a wide
    enough table have it whole."""
    import json

    good = write_json(tmp_path / "good.json", make_chatgpt_export(1))
    broken = tmp_path / "broken.json"
    broken.write_text("{not json", encoding="utf-8")
    data_dir = tmp_path / "data"
    assert chatmem(data_dir, "run", "--to", "ingest", good, broken).exit_code == 1
    whole = "incomplete: 1 file failed (staging failures)"
    for columns in ("120", "300"):  # 120: what a pipe gets
        table = chatmem(data_dir, "staging", "runs", env={"COLUMNS": columns})
        assert table.exit_code == 0, table.output
        [row] = [line for line in table.stdout.splitlines() if line.startswith("r2")]
        shown = row.split("  ")[1]
        if columns == "300":
            assert shown == whole, row
        else:  # cut after a whole word: what it shows is the status's start, up to a space
            assert shown.endswith("…") and whole.startswith(shown[:-1] + " "), row
            assert shown.startswith("incomplete: 1 file"), row
    [run] = json.loads(chatmem(data_dir, "staging", "runs", "--json").stdout)
    assert (run["status"], run["incomplete"]) == ("incomplete", "1 file failed"), run
