"""What a cold new-user pass found on main (notes/closing.md, "Open"), each with real processes, signals and SQLite:

- Ctrl-C (or SIGTERM) before a run starts: the project's stop line and exit 130 (143), not click's "Aborted!", 1;
- `chatmem staging runs` while a first run starts says a run is starting, not that nothing exists;
- a dump cut short: one honest summary (the complete conversations arrived, the file cut short, exit 1 said) and
  a readable JSON error;
- a missing path among good files: the good files ingested, the missing one named, exit 1; alone: refused before
  anything, naming it;
- the topic map draws no topic grey like the outliers;
- `serve` stopped by Ctrl-C exits 130.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import urllib.request
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner, Result
from fault_support import chatmem_command, process_env, run, start, wait_for, write_chats

from cluster.report import topic_map
from flows.cli import cli
from staging.lock import data_dir_lock

STOP_LINE = re.compile(r"^error: interrupted by (Ctrl-C|SIGTERM) before the run started: nothing was run")


def chatmem(*args: str | Path, data_dir: Path) -> Result:
    return CliRunner().invoke(cli, ["--data-dir", str(data_dir), *map(str, args)], catch_exceptions=False)


def holds_the_lock(pid: int, data_dir: Path) -> bool:
    """The process has the data dir's lock file open: it is waiting for the lock (before its run starts)."""
    wanted = str(data_dir / "chatmem.lock")
    try:
        return any(os.readlink(f"/proc/{pid}/fd/{fd}") == wanted for fd in os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return False


@pytest.mark.parametrize(("signum", "code", "by"), [(signal.SIGINT, 130, "Ctrl-C"), (signal.SIGTERM, 143, "SIGTERM")])
def test_a_run_stopped_before_it_starts_says_so_and_exits_like_a_stopped_run(
    tmp_path: Path, signum: int, code: int, by: str
) -> None:
    """A first run waiting for another run's lock (so, before its own Ctrl-C handler): `staging runs` says a run is
    starting (it said "nothing in DATA yet"); Ctrl-C to the terminal's group (or SIGTERM) ends it with the stop line,
    exit 130 (143), nothing recorded (it printed click's "Aborted!" and exited 1)."""
    data_dir = tmp_path / "data"
    export = write_chats(tmp_path / "chats.jsonl", 3)
    env = process_env(tmp_path / "prefect", CHATMEM_PIPELINE__LOCK_WAIT_S="600")
    with data_dir_lock(data_dir, "r-held-by-the-test"):
        process = start(data_dir, "run", export, "--only", "ingest", env=env)
        try:
            wait_for("the run to wait for the lock", lambda: holds_the_lock(process.pid, data_dir), 300, process)
            listed = run(data_dir, "staging", "runs", env=env)
            listed_json = run(data_dir, "staging", "runs", "--json", env=env)
            if signum == signal.SIGINT:
                os.killpg(process.pid, signum)  # a terminal's Ctrl-C: the whole foreground group
            else:
                process.send_signal(signum)
            _, err = process.communicate(timeout=120)
        finally:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)  # only the group this test started
                process.wait()
    lines = [line for line in err.splitlines() if line.strip()]
    assert process.returncode == code, err[-3000:]
    assert "Aborted" not in err and "Traceback" not in err and len(lines) == 1, err[-3000:]
    assert STOP_LINE.match(lines[0]) and f"by {by} " in lines[0], lines[0]
    assert listed.returncode == 0, listed.stderr
    assert f"a run is starting (pid {process.pid}, since " in listed.stdout, listed.stdout
    assert listed_json.returncode == 0 and json.loads(listed_json.stdout) == [], listed_json.stderr
    assert not (data_dir / "staging.db").exists() and not (data_dir / "run.starting").exists()
    after = run(data_dir, "staging", "runs", env=env)
    assert after.returncode == 0 and "nothing in" in after.stderr and "starting" not in after.stderr


def cut_export(tmp_path: Path, chatgpt_export: Path) -> Path:
    """A ChatGPT export cut inside its second conversation (its first arrives whole)."""
    [conversation] = json.loads(chatgpt_export.read_text())
    second = json.loads(json.dumps(conversation).replace(conversation["id"], "second-conversation"))
    text = "[" + json.dumps(conversation) + ", " + json.dumps(second)
    cut = tmp_path / "conversations.json"
    cut.write_text(text[: len(text) - len(json.dumps(second)) // 2])
    return cut


@pytest.mark.prefect
def test_a_dump_cut_short_gets_one_honest_summary(tmp_path: Path, chatgpt_export: Path) -> None:
    """First line: the run succeeded but a file was cut short, exit code 1 (was "run R: succeeded" and then exit 1);
    the file's line says what arrived and why the rest did not, in words (was "(Unterminated string starting at)"),
    once (the ingest note said it again); stderr one line."""
    cut = cut_export(tmp_path, chatgpt_export)
    data_dir = tmp_path / "data"
    done = chatmem("-q", "run", cut, "--only", "ingest", data_dir=data_dir)
    assert done.exit_code == 1, done.output
    lines = done.stdout.splitlines()
    assert re.fullmatch(r"run r\S+: incomplete: 1 file cut short \(exit code 1\)", lines[0]), lines
    [file_line] = [line for line in lines if str(cut) in line]
    assert file_line.strip().startswith(f"cut short: {cut}: 1 complete conversation(s) arrived; the rest could not")
    assert "(unterminated string) at byte" in file_line, file_line
    assert "partial" not in done.stdout.replace("files partial", ""), done.stdout
    [error] = [line for line in done.stderr.splitlines() if line.strip()]
    assert error.startswith("error: 1 file cut short in run r") and str(cut) in error and "whole file" in error
    # `staging failures` keeps the whole reason on an 80-column terminal (its middle was cut: "truncated…nated")
    failures = CliRunner().invoke(cli, ["--data-dir", str(data_dir), "staging", "failures"], env={"COLUMNS": "80"})
    assert failures.exit_code == 0, failures.output
    assert all(len(line) <= 80 for line in failures.stdout.splitlines()), failures.stdout
    flat = " ".join(line[8:].strip() for line in failures.stdout.splitlines() if line.startswith(("detail", " ")))
    assert "partial: invalid or truncated JSON (unterminated string) at byte" in flat, failures.stdout


@pytest.mark.prefect
def test_a_missing_path_among_good_files_is_a_bad_file_named_and_the_good_ones_arrive(
    tmp_path: Path, chatgpt_export: Path
) -> None:
    """As for any unreadable file beside readable ones (flows/preflight.py): the good file is ingested, the missing
    one is named with why, exit 1 (it was click's usage error, exit 2, and nothing was ingested)."""
    data_dir = tmp_path / "data"
    missing = tmp_path / "typo.json"
    done = chatmem("run", chatgpt_export, missing, "--only", "ingest", data_dir=data_dir)
    assert done.exit_code == 1, done.output
    assert f"failed: {missing}: no such file" in done.stdout and f"ingested: {chatgpt_export}" in done.stdout
    assert str(missing) in done.stderr and "no such file" in done.stderr
    stats = json.loads(chatmem("archive", "stats", "--json", data_dir=data_dir).stdout)
    assert stats["conversations"] == 1


@pytest.mark.prefect
def test_the_rest_of_an_unzipped_export_given_beside_its_conversations_is_left_out_not_failed(
    tmp_path: Path, chatgpt_export: Path
) -> None:
    """`chatmem run export/*` on an unzipped ChatGPT export: user.json, message_feedback.json, chat.html, an image
    and a folder of images beside conversations.json are left out in one line, not failed one by one (exit 1 on
    every real download); a file of the user's own beside it (.jsonl) is still read."""
    export = tmp_path / "export"
    (export / "dalle-generations").mkdir(parents=True)
    shutil.copy(chatgpt_export, export / "conversations.json")
    (export / "user.json").write_text('{"id": "user-1", "email": "a@b.c"}', encoding="utf-8")
    (export / "message_feedback.json").write_text("[]", encoding="utf-8")
    (export / "chat.html").write_text("<html></html>", encoding="utf-8")
    (export / "file-abc.png").write_bytes(b"\x89PNG\r\n")
    (export / "dalle-generations" / "img.webp").write_bytes(b"RIFF")
    write_chats(export / "notes.jsonl", 1)
    given = sorted(export.iterdir())  # what the shell gives for export/*
    done = chatmem("run", *given, "--only", "ingest", data_dir=tmp_path / "data")
    assert done.exit_code == 0, done.output
    assert "left out 5 path(s) given with an export's conversations" in done.stderr
    assert "files failed 0" in done.stdout and "failed:" not in done.stdout
    stats = json.loads(chatmem("archive", "stats", "--json", data_dir=tmp_path / "data").stdout)
    assert stats["conversations"] == 2  # the export's one and notes.jsonl's one
    alone = chatmem("run", export / "user.json", "--only", "ingest", data_dir=tmp_path / "data2")
    assert alone.exit_code == 1 and "chatgpt-side-file" in alone.stderr  # given alone: refused as before


@pytest.mark.prefect
def test_an_export_of_any_name_beside_a_conversations_json_is_read_not_left_out(
    tmp_path: Path, chatgpt_export: Path
) -> None:
    """The format is read from the bytes, never the name: a JSONL export named .ndjson (a suffix `serve` watches)
    or with no suffix at all, beside a conversations.json, is read, not left out as the rest of the export (only
    what holds no JSON or zip is). Given with --run-id, the rest of the export is left out as without it."""
    export = tmp_path / "export"
    export.mkdir()
    shutil.copy(chatgpt_export, export / "conversations.json")
    write_chats(export / "notes.ndjson", 1, seed=2)
    write_chats(export / "claude-backup", 1, seed=3)
    (export / "file-abc.png").write_bytes(b"\x89PNG\r\n")
    done = chatmem("run", *sorted(export.iterdir()), "--only", "ingest", data_dir=tmp_path / "data")
    assert done.exit_code == 0, done.output
    assert "left out 1 path(s) given with an export's conversations (file-abc.png)" in done.stderr
    with sqlite3.connect(tmp_path / "data" / "staging.db") as staging:
        read = dict(staging.execute("SELECT path, status FROM ingest_files").fetchall())
    assert {Path(p).name: s for p, s in read.items()} == dict.fromkeys(
        ["conversations.json", "notes.ndjson", "claude-backup"], "ingested"
    ), read
    (run_id,) = [r["id"] for r in json.loads(chatmem("staging", "runs", "--json", data_dir=tmp_path / "data").stdout)]
    given = sorted(export.iterdir())
    again = chatmem("run", *given, "--only", "ingest", "--run-id", run_id, data_dir=tmp_path / "data")
    assert again.exit_code == 0 and "left out 1 path(s)" in again.stderr, again.output


def test_a_missing_path_alone_is_refused_before_anything_naming_it(tmp_path: Path) -> None:
    """Alone it is refused like an empty file: one line naming it, exit 1, no data dir written, no Prefect."""
    data_dir = tmp_path / "data"
    missing = tmp_path / "typo.json"
    done = subprocess.run(
        [*chatmem_command(), "--data-dir", str(data_dir), "run", str(missing)],
        capture_output=True,
        text=True,
        env=process_env(tmp_path / "prefect"),
        timeout=120,
    )
    assert done.returncode == 1, done.stderr
    assert done.stderr.strip() == f"error: {missing}: no such file"
    assert not data_dir.exists()


def test_a_refused_file_with_json_prints_an_object_saying_why(tmp_path: Path) -> None:
    """`run --json` on a file refused before the run: stdout is still one JSON object (a script reads it), the error
    line stays on stderr, exit 1, nothing written."""
    bad = tmp_path / "bad.json"
    bad.write_text('{"bad": ', encoding="utf-8")
    summary = refused_json(tmp_path, bad)
    assert summary["run_id"] is None
    assert str(bad) in summary["error"] and "truncated JSON" in summary["error"]


def refused_json(tmp_path: Path, bad: Path, prefix: list[str] | None = None) -> dict[str, Any]:
    """`chatmem run BAD --json` in a real process (behind `prefix`): exit 1, one JSON object on stdout whose status
    is refused, the same error as the one line on stderr, and no data dir written. Returns the object."""
    data_dir = tmp_path / "data"
    done = subprocess.run(
        [*(prefix or []), *chatmem_command(), "--data-dir", str(data_dir), "run", str(bad), "--json"],
        capture_output=True,
        text=True,
        env=process_env(tmp_path / "prefect"),
        timeout=120,
    )
    assert done.returncode == 1, done.stderr
    summary: dict[str, Any] = json.loads(done.stdout)
    assert summary["status"] == "refused"
    assert done.stderr.strip() == f"error: {summary['error']}"
    assert not data_dir.exists()
    return summary


def _without_root_reads() -> list[str]:
    """A prefix that makes a file of mode 000 unreadable to this process's children even as root (no
    CAP_DAC_OVERRIDE); nothing needed for another user."""
    if os.geteuid() != 0:
        return []
    if shutil.which("setpriv") is None:
        pytest.skip("root without setpriv: a mode-000 file stays readable")
    return ["setpriv", "--bounding-set=-dac_override,-dac_read_search"]


@pytest.mark.parametrize("how", ["mode 000", "I/O error"])
def test_a_file_that_cannot_be_read_is_refused_with_one_json_object(tmp_path: Path, how: str) -> None:
    """Unreadable (its mode) or failing on read (EIO: /proc/self/mem at offset 0, behind a symlink): refused like a
    missing file, one JSON object on stdout and exit 1, rather than a usage error (exit 2) or a traceback."""
    bad = tmp_path / "locked.json"
    prefix: list[str] = []
    if how == "mode 000":
        bad.write_text('[{"mapping": {}, "current_node": null}]', encoding="utf-8")
        bad.chmod(0)
        prefix = _without_root_reads()
    else:
        bad.symlink_to("/proc/self/mem")
    summary = refused_json(tmp_path, bad, prefix)
    reason = "Permission denied" if how == "mode 000" else "Input/output error"
    assert summary["error"] == f"{bad}: cannot be read ({reason})"


def grey_pixels(path: Path) -> int:
    """Pixels of a low-saturation mid grey (the outliers' colour and tab20's two greys), not black, not white."""
    import matplotlib.image

    image = matplotlib.image.imread(str(path))[..., :3]
    spread = image.max(axis=2) - image.min(axis=2)
    level = image.mean(axis=2)
    return int(((spread < 0.03) & (level > 0.4) & (level < 0.85)).sum())


def test_the_topic_map_draws_no_topic_grey_like_the_outliers(tmp_path: Path) -> None:
    """20 topics (numbers 0-19) and many points of one topic: drawn grey when that topic was 15 (tab20's grey),
    so the map looked the same as with that topic's points drawn as outliers; now no topic is grey."""
    rng = np.random.default_rng(1)
    counts = {}
    for heavy in (3, 15):
        points = [(float(x), float(y), t) for t in range(20) for x, y in rng.normal(size=(10, 2))]
        points += [(float(x), float(y), heavy) for x, y in rng.normal(size=(3000, 2))]
        path = tmp_path / f"map-{heavy}.png"
        topic_map(points, [], path)
        counts[heavy] = grey_pixels(path)
    outliers = [(x, y, -1) for x, y, _ in points]
    topic_map(outliers, [], tmp_path / "outliers.png")
    assert grey_pixels(tmp_path / "outliers.png") > counts[3] + 5000  # the measure sees the outliers' grey
    assert counts[15] < counts[3] + 200, counts  # topic 15 no more grey than topic 3 (text and frame only)


@pytest.mark.slow
def test_serve_stopped_by_ctrl_c_exits_130(tmp_path: Path) -> None:
    """`serve --watch` up and serving, then Ctrl-C to its group: it stops its server and exits 130 with one stop
    line (Prefect's runner swallowed the KeyboardInterrupt and serve exited 0)."""
    watch = tmp_path / "watch"
    watch.mkdir()
    data_dir = tmp_path / "data"
    env = process_env(tmp_path / "prefect")
    log = (tmp_path / "serve.log").open("w+")
    command = [*chatmem_command(), "--data-dir", str(data_dir), "serve", "--cron", "0 0 1 1 *", "--watch", str(watch)]
    process = subprocess.Popen(command, stdout=log, stderr=log, env=env, start_new_session=True, text=True)
    try:

        def api_url() -> str | None:
            log.seek(0)
            found = re.search(r"Prefect API (http://127\.0\.0\.1:\d+/api)", log.read())
            return found.group(1) if found else None

        api = wait_for("serve to announce itself", api_url, 300, process)  # type: ignore[arg-type]
        filters = {"deployments": {"name": {"any_": ["chatmem-watch"]}}}

        # once its runner polls (a Ctrl-C while serve registers the deployment is another case: notes/s16everyday.md)
        def polled() -> bool:  # the runner has asked for scheduled runs: the deployment reads READY
            found = _api(f"{api}/deployments/filter", filters)
            return bool(found) and found[0].get("status") == "READY"

        wait_for("the runner to poll its deployment", polled, 180, process)  # type: ignore[arg-type]
        os.killpg(process.pid, signal.SIGINT)  # a terminal's Ctrl-C: the whole foreground group
        process.wait(timeout=120)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)  # only the group this test started
            process.wait()
    log.seek(0)
    text = log.read()
    assert process.returncode == 130, text[-3000:]
    assert "Traceback" not in text, text[-3000:]
    hint = (
        f"error: serve stopped by Ctrl-C; start it again with: chatmem --data-dir {data_dir} serve --cron '0 0 1 1 *'"
    )
    assert text.strip().splitlines()[-1] == f"{hint} --watch {watch}", text  # the same data dir and schedule


def _api(url: str, body: object | None = None) -> Any:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback only
    request = urllib.request.Request(
        url, data=json.dumps(body or {}).encode(), headers={"Content-Type": "application/json"}
    )
    with opener.open(request, timeout=10) as response:
        return json.loads(response.read() or b"null")


@pytest.mark.prefect
def test_run_on_a_folder_of_downloads_reads_the_exports_in_its_subfolders(tmp_path: Path, chatgpt_export: Path) -> None:
    """`chatmem run DIR` where the exports sit in subfolders (DIR/2024-05-export/conversations.json, a .jsonl two
    levels down) and the data dir lies under DIR: both exports ingested, the page beside them left out in one line,
    nothing failed (it exited 1: "folder has no conversations.json"); run again, the data dir is still not read."""
    folder = tmp_path / "downloads"
    (folder / "2024-05-export").mkdir(parents=True)
    shutil.copy(chatgpt_export, folder / "2024-05-export" / "conversations.json")
    write_chats(folder / "notes" / "2024" / "notes.jsonl", 1)
    (folder / "page.html").write_text("<html></html>", encoding="utf-8")
    data_dir = folder / "chatmem-data"
    done = chatmem("run", folder, "--only", "ingest", data_dir=data_dir)
    assert done.exit_code == 0, done.output
    assert f"{folder}: 2 export(s) found in it and 3 levels of subfolders below" in done.stderr, done.stderr
    assert "left out 1: page.html (not an export)" in done.stderr, done.stderr
    stats = json.loads(chatmem("archive", "stats", "--json", data_dir=data_dir).stdout)
    assert stats["conversations"] == 2  # the export's one and notes.jsonl's one
    again = chatmem("run", folder, "--only", "ingest", data_dir=data_dir)  # the data dir now holds databases
    assert again.exit_code == 0 and "2 export(s) found" in again.stderr and "chatmem-data" not in again.stderr
