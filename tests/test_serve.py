"""flows/serve.py and `chatmem serve`: the watch flow once (in-process), and a served deployment (a process).

Prefect is imported inside the tests (see conftest.prefect_env).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
import urllib.error
import urllib.request
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TextIO

import pytest
from click.testing import CliRunner

from flows.cli import cli

pytestmark = pytest.mark.prefect
ROOT = Path(__file__).resolve().parents[1]


def serve_once(watch: Path, data_dir: Path) -> tuple[int, dict[str, Any]]:
    result = CliRunner().invoke(cli, ["--data-dir", str(data_dir), "serve", "--once", "--watch", str(watch), "--json"])
    return result.exit_code, json.loads(result.stdout)


def test_list_dumps_recognises_exports_and_leaves_the_rest(tmp_path: Path, chatgpt_export: Path) -> None:
    from flows.serve import list_dumps

    (tmp_path / "a.json").write_text("[]")
    (tmp_path / "b.JSONL").write_text("")
    with zipfile.ZipFile(tmp_path / "download", "w") as archive:  # a zip recognised by its bytes
        archive.write(chatgpt_export, "conversations.json")
    (tmp_path / "unzipped").mkdir()
    (tmp_path / "unzipped" / "conversations.json").write_text("[]")
    (tmp_path / "other-folder").mkdir()
    for ignored in (".hidden.json", "user.json", "dump.json.crdownload"):
        (tmp_path / ignored).write_text("{}")
    (tmp_path / "notes.txt").write_text("buy bread")  # read by its bytes, as `run DIR` reads it: not JSON, no zip
    # a folder of downloads, as `chatmem run DIR` reads it: exports in subfolders, 3 levels down, not 4
    (tmp_path / "2024" / "may" / "claude").mkdir(parents=True)
    (tmp_path / "2024" / "may" / "claude" / "conversations.json").write_text("[]")
    (tmp_path / "2024" / "june.jsonl").write_text("")
    (tmp_path / "2024" / "june.jsonl.part").write_text("{}")
    for partial in ("july.zip.part", "july.zip.crdownload"):  # a half-written zip download starts as a zip
        with zipfile.ZipFile(tmp_path / "2024" / partial, "w") as archive:
            archive.write(chatgpt_export, "conversations.json")
    (tmp_path / "a" / "b" / "c" / "d").mkdir(parents=True)
    (tmp_path / "a" / "b" / "c" / "deep.json").write_text("[]")
    (tmp_path / "a" / "b" / "c" / "d" / "too-deep.json").write_text("[]")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "x.json").write_text("[]")
    data_dir = tmp_path / "data"  # a data dir inside the watched folder is never read
    data_dir.mkdir()
    (data_dir / "load-memory.json").write_text("{}")
    (tmp_path / "unzipped" / "older").mkdir()  # an older export unzipped inside the newer one's folder
    (tmp_path / "unzipped" / "older" / "conversations.json").write_text("[]")
    dumps, left = list_dumps(tmp_path, data_dir)
    found = [p.relative_to(tmp_path).as_posix() for p in dumps]
    assert found == [
        "2024/june.jsonl",
        "2024/may/claude",
        "a/b/c/deep.json",
        "a.json",
        "b.JSONL",
        "download",
        "unzipped",
        "unzipped/older",
    ]
    assert [p.path.relative_to(tmp_path).as_posix() for p in left] == [
        ".hidden.json",
        "2024/july.zip.crdownload",
        "2024/july.zip.part",
        "2024/june.jsonl.part",
        "a/b/c/d",
        "dump.json.crdownload",
        "notes.txt",
        "user.json",
    ]


def test_what_the_watch_leaves_out_is_said_once_per_file_with_why(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A file dropped in the watched folder that will not be ingested (not an export, a download still being
    written, a file that cannot be read, a folder too deep) is said with its reason (a warning in the log) at the
    first tick that finds it, not at every tick; one dropped in later is said at the tick that finds it, and one
    removed and dropped in again is said again. `--json` lists them all each time (`left_out`), the summary counts
    them. Before, they vanished without a word: a user saw nothing happen. (The folder holds a dump that failed and
    waits for a change, so that each tick runs the watch flow: with no export at all, `serve --once` says the
    left-out paths in one line and starts nothing, below.)"""
    watch, data_dir = tmp_path / "watch", tmp_path / "data"
    watch.mkdir()
    broken = watch / "broken.json"
    broken.write_text("{not json", encoding="utf-8")
    assert serve_once(watch, data_dir)[0] == 1  # failed once: the next ticks leave it waiting
    (watch / "notes.txt").write_text("buy bread", encoding="utf-8")
    (watch / "export.zip.crdownload").write_bytes(b"PK\x03\x04half")
    (watch / "mystery").symlink_to("/proc/self/mem")
    (watch / "a" / "b" / "c" / "d").mkdir(parents=True)

    def tick() -> tuple[list[tuple[str, str]], list[str]]:
        caplog.clear()
        with caplog.at_level(logging.INFO):
            code, result = serve_once(watch, data_dir)
        assert code == 0 and result["run_id"] is None, result
        listed = [(Path(row["path"]).relative_to(watch).as_posix(), row["why"]) for row in result["left_out"]]
        said = [r.getMessage() for r in caplog.records if r.getMessage().startswith("watch - left out ")]
        return listed, said

    listed, said = tick()
    assert listed == [
        ("a/b/c/d", "more than 3 levels of subfolders down, not looked into"),
        ("export.zip.crdownload", "a download still in progress: read once it completes"),
        ("mystery", "cannot be read: Input/output error"),
        ("notes.txt", "not an export"),
    ]
    assert said == [f"watch - left out {watch / path}: {why}" for path, why in listed]
    (watch / "photo.jpg").write_bytes(b"\xff\xd8\xff")
    listed, said = tick()
    assert len(listed) == 5 and said == [f"watch - left out {watch / 'photo.jpg'}: not an export"]
    (watch / "notes.txt").unlink()
    assert tick()[1] == []
    (watch / "notes.txt").write_text("again", encoding="utf-8")
    assert tick()[1] == [f"watch - left out {watch / 'notes.txt'}: not an export"]
    broken.unlink()
    human = CliRunner().invoke(cli, ["--data-dir", str(data_dir), "serve", "--once", "--watch", str(watch)])
    # no export at all: said in the words of `chatmem run DIR` (tests/test_cli_cold_faults.py)
    said_as_run = f"{watch}: no export found in it and 3 levels of subfolders below; left out 5: a/b/c/d/ (more than 3"
    assert human.stdout.startswith(said_as_run) and "notes.txt, photo.jpg (not an export)" in human.stdout, human.output


def test_serve_once_ingests_new_dumps_reports_failures_and_retries_them_once_changed(
    tmp_path: Path, chatgpt_export: Path, make_jsonl: Callable[..., Path]
) -> None:
    watch, data_dir = tmp_path / "watch", tmp_path / "data"
    first = make_jsonl(watch / "one.jsonl", prefix="a")
    second = watch / "export"  # an unzipped ChatGPT export folder
    second.mkdir()
    (second / "conversations.json").write_bytes(chatgpt_export.read_bytes())

    code, result = serve_once(watch, data_dir)
    assert code == 0 and result["failed"] == []
    assert {r["path"] for r in result["ingested"]} == {str(first), str(second / "conversations.json")}

    bad = watch / "three.json"
    bad.write_text('[{"mapping": {"x": ', encoding="utf-8")
    code, result = serve_once(watch, data_dir)
    assert code == 1
    assert result["already_ingested"] == [str(second), str(first)]
    assert [f["path"] for f in result["failed"]] == [str(bad)] and str(bad) in result["failed"][0]["error"]
    assert "then: chatmem run --from ingest --to load --run-id" in result["error"]  # what finishes the run

    failed_run = result["run_id"]
    code, result = serve_once(watch, data_dir)  # the same broken bytes: not tried again, no run, listed as waiting
    assert code == 0 and result["run_id"] is None and result["failed"] == []
    assert [(w["path"], w["run_id"], w["status"]) for w in result["waiting"]] == [(str(bad), failed_run, "failed")]
    assert len(result["already_ingested"]) == 2

    make_jsonl(bad, prefix="c")  # the user replaces it with a good dump
    code, result = serve_once(watch, data_dir)
    assert code == 0 and result["failed"] == []
    assert result["ingested"] == [{"path": str(bad), "status": "ingested"}]
    archive = sqlite3.connect(data_dir / "archive.db")
    assert archive.execute("SELECT COUNT(*) FROM conversations").fetchone()[0] == 1 + 2 + 2

    code, result = serve_once(watch, data_dir)  # nothing new: no run at all
    assert code == 0 and result["run_id"] is None and len(result["already_ingested"]) == 3
    assert result["error"] is None


def test_an_export_folder_whose_conversations_file_is_not_json_waits_for_it_to_change(tmp_path: Path) -> None:
    """An unzipped export folder whose conversations.json holds `{not json` fails once, then waits like a broken
    file: the next tick runs nothing until the file changes. Before, its failure was recorded with no sha256 (the
    folder's bytes) and every tick read it again and failed again."""
    watch, data_dir = tmp_path / "watch", tmp_path / "data"
    (watch / "unzipped").mkdir(parents=True)
    (watch / "unzipped" / "conversations.json").write_text("{not json", encoding="utf-8")
    code, first = serve_once(watch, data_dir)
    assert code == 1 and [f["path"] for f in first["failed"]] == [str(watch / "unzipped")]
    code, again = serve_once(watch, data_dir)
    assert code == 0 and again["run_id"] is None and again["failed"] == [], again
    assert [(w["path"], w["run_id"]) for w in again["waiting"]] == [(str(watch / "unzipped"), first["run_id"])]


def test_a_bad_dump_beside_good_ones_does_not_hold_them_back(tmp_path: Path, make_jsonl: Callable[..., Path]) -> None:
    """One tick with a good dump and a broken one: the good one goes through every stage (its memory is built), the
    broken one is reported failed and the command exits 1; it does not stall the folder."""
    watch, data_dir = tmp_path / "watch", tmp_path / "data"
    make_jsonl(watch / "good.jsonl", prefix="a")
    bad = watch / "broken.json"
    bad.write_text('[{"mapping": {"x": ', encoding="utf-8")
    code, result = serve_once(watch, data_dir)
    assert code == 1 and [f["path"] for f in result["failed"]] == [str(bad)]
    assert result["error"] is None and result["ingested"] == [{"path": str(watch / "good.jsonl"), "status": "ingested"}]
    staging = sqlite3.connect(data_dir / "staging.db")
    stages = dict(
        staging.execute("SELECT stage, status FROM stage_runs WHERE run_id = ?", (result["run_id"],)).fetchall()
    )
    assert stages["ingest"] == "succeeded" and stages["cues"] == "succeeded"
    assert staging.execute("SELECT COUNT(*) FROM memory_content").fetchone()[0] > 0
    said = CliRunner().invoke(cli, ["--data-dir", str(data_dir), "serve", "--once", "--watch", str(watch)])
    [line] = [line for line in said.stdout.splitlines() if "waiting for the file to change" in line]
    assert line.endswith(f"(failed in run {result['run_id']}): {bad}"), line  # the path once, after the run
    assert said.exit_code == 0, said.output  # nothing was run: nothing failed


def test_a_dump_that_cannot_be_read_fails_alone_and_the_folder_goes_on(
    tmp_path: Path, make_jsonl: Callable[..., Path]
) -> None:
    """A dump whose read fails (EIO: /proc/self/mem at offset 0, behind a symlink) is a failed dump like a broken
    one, at the first tick (no archive yet) and the ticks after, while good dumps beside it arrive; an unreadable
    file with no export suffix is not taken for a zip. Before, an OSError failed the ingest stage, then every
    later tick before it listed anything."""
    watch, data_dir = tmp_path / "watch", tmp_path / "data"
    watch.mkdir()
    bad = watch / "unreadable.json"
    bad.symlink_to("/proc/self/mem")
    (watch / "download").symlink_to("/proc/self/mem")
    for good in ("good.jsonl", "later.jsonl"):
        make_jsonl(watch / good, prefix=good[0])
        code, result = serve_once(watch, data_dir)
        assert code == 1 and result["error"] is None, result
        assert result["failed"] == [{"path": str(bad), "error": f"{bad}: cannot be read (Input/output error)"}]
        assert result["ingested"] == [{"path": str(watch / good), "status": "ingested"}]


def test_a_dump_that_failed_before_naming_a_format_is_read_once_settings_or_format_let_it(
    tmp_path: Path, chatgpt_export: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Bytes that failed before a format was named wait only while they would fail the same way: after the zip
    limit that refused them is raised (as its message says to), or with --format for a file detection could not
    name, the next tick reads them."""
    watch, data_dir = tmp_path / "watch", tmp_path / "data"
    watch.mkdir()
    with zipfile.ZipFile(watch / "export.zip", "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.write(chatgpt_export, "conversations.json")
    odd = watch / "odd.json"
    odd.write_text('[{"x": 1}]', encoding="utf-8")  # no format detected
    monkeypatch.setenv("CHATMEM_INGEST__MAX_ZIP_MEMBER_BYTES", "10")
    code, result = serve_once(watch, data_dir)
    assert code == 1 and sorted(f["path"] for f in result["failed"]) == [str(watch / "export.zip"), str(odd)]
    code, result = serve_once(watch, data_dir)  # the same bytes, the same settings: waiting
    assert code == 0 and len(result["waiting"]) == 2

    monkeypatch.delenv("CHATMEM_INGEST__MAX_ZIP_MEMBER_BYTES")
    code, result = serve_once(watch, data_dir)
    assert result["ingested"] == [{"path": f"{watch / 'export.zip'}!conversations.json", "status": "ingested"}]
    assert [w["path"] for w in result["waiting"]] == [str(odd)]

    args = ["--data-dir", str(data_dir), "serve", "--once", "--watch", str(watch), "--format", "jsonl", "--json"]
    tried = json.loads(CliRunner().invoke(cli, args).stdout)
    assert tried["waiting"] == [] and [f["path"] for f in tried["failed"]] == [str(odd)], tried


def _runs(data_dir: Path) -> int:
    with sqlite3.connect(data_dir / "staging.db") as staging:
        return int(staging.execute("SELECT COUNT(*) FROM runs").fetchone()[0])


def test_a_dump_that_stays_broken_costs_one_failed_run_not_one_per_tick(
    tmp_path: Path, chatgpt_export: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A zip cut short (it fails before its bytes are parsed) and a ChatGPT export cut after its first
    conversation (partial): the tick that reads them says once that they wait for the file to change; the ticks
    after run nothing, add no run to the ledger and say nothing more about them; once the files change (the
    downloads complete), the next tick reads them."""
    watch, data_dir = tmp_path / "watch", tmp_path / "data"
    watch.mkdir()
    zipped = tmp_path / "export.zip"
    with zipfile.ZipFile(zipped, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.write(chatgpt_export, "conversations.json")
    whole = zipped.read_bytes()
    cut_zip = watch / "export.zip"
    cut_zip.write_bytes(whole[: len(whole) // 2])
    one = json.loads(chatgpt_export.read_text(encoding="utf-8"))[0]
    two = [one, {**one, "id": "second", "conversation_id": "second", "title": "Second"}]
    text = json.dumps(two)
    cut_json = watch / "partial.json"
    cut_json.write_text(text[: len(text) * 3 // 4], encoding="utf-8")

    with caplog.at_level(logging.INFO):
        code, first = serve_once(watch, data_dir)
        runs = _runs(data_dir)
        ticks = [serve_once(watch, data_dir) for _ in range(2)]
    assert code == 1 and [f["path"] for f in first["failed"]] == [str(cut_zip)]
    assert first["ingested"] == [{"path": str(cut_json), "status": "partial", "quarantined": 1}]  # the cut record
    assert _runs(data_dir) == runs  # the ticks after added no run
    for code, result in ticks:
        assert code == 0 and result["run_id"] is None and result["failed"] == []
        assert {(w["path"], w["status"]) for w in result["waiting"]} == {
            (str(cut_zip), "failed"),
            (str(cut_json), "partial"),
        }
    said = [r.getMessage() for r in caplog.records if "not tried again until the file changes" in r.getMessage()]
    assert len(said) == 2 and any(str(cut_zip) in m for m in said) and any(str(cut_json) in m for m in said), said
    loud = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING and "watch - " in r.getMessage()]
    # the ticks after said nothing above INFO; the dump cut short is INFO in `serve --once` too, whose summary says it
    assert loud == [m for m in said if str(cut_zip) in m], loud

    cut_zip.write_bytes(whole)  # the downloads complete
    cut_json.write_text(text, encoding="utf-8")
    code, result = serve_once(watch, data_dir)
    assert code == 0 and result["waiting"] == [] and result["failed"] == []
    assert sorted(r["status"] for r in result["ingested"]) == ["ingested", "ingested"]


def _api(url: str, body: object | None = None) -> Any:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback only
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    with opener.open(request, timeout=10) as response:
        return json.loads(response.read() or b"null")


def _wait(what: str, check: Callable[[], Any], timeout_s: float) -> Any:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(1)
    raise AssertionError(f"timed out after {timeout_s:.0f} s waiting for {what}")


@contextlib.contextmanager
def _served(tmp_path: Path, watch: Path) -> Iterator[tuple[str, dict[str, Any], TextIO]]:
    """`chatmem serve --cron` on `watch` in a process: (its API, its deployment, its output). The cron is set far
    in the future: a test triggers runs through the API rather than wait for a minute boundary. The process is
    stopped with SIGTERM at the end and must take its server with it."""
    log = (tmp_path / "serve.log").open("w+")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PREFECT_HOME": str(tmp_path / "prefect")}
    env["PREFECT_RUNNER_POLL_FREQUENCY"] = "2"  # the runner looks for runs every 2 s instead of 10
    command = [sys.executable, "-m", "flows.cli", "--data-dir", str(tmp_path / "data"), "serve"]
    command += ["--cron", "0 0 1 1 *", "--watch", str(watch)]
    process = subprocess.Popen(command, cwd=tmp_path, env=env, stdout=log, stderr=log, start_new_session=True)
    try:

        def api_url() -> str | None:
            log.seek(0)
            found = re.search(r"Prefect API (http://127\.0\.0\.1:\d+/api)", log.read())
            assert process.poll() is None, "serve exited early"
            return found.group(1) if found else None

        api = _wait("the served deployment", api_url, 180)
        filters = {"deployments": {"name": {"any_": ["chatmem-watch"]}}}
        [deployment] = _wait("the deployment", lambda: _api(f"{api}/deployments/filter", filters), 60)
        yield api, deployment, log
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)  # only the group this test started
            process.wait()
            raise
    with pytest.raises(urllib.error.URLError):
        _api(f"{api}/health")  # the server went with it


def _tick(api: str, deployment: dict[str, Any]) -> str:
    """Trigger one run of the served deployment; its final state's type."""
    flow_run = _api(f"{api}/deployments/{deployment['id']}/create_flow_run", {})

    def finished() -> str | None:
        state = _api(f"{api}/flow_runs/{flow_run['id']}")["state"]["type"]
        return state if state in ("COMPLETED", "FAILED", "CRASHED", "CANCELLED") else None

    return str(_wait("the triggered watch run", finished, 150))


@pytest.mark.slow
def test_serve_runs_a_cron_deployment_that_ingests_the_folder(tmp_path: Path, chatgpt_export: Path) -> None:
    """`chatmem serve --cron` starts a loopback Prefect server and serves the watch deployment on that cron. Its
    output says, in one line, the dump a tick picks up, and then that the run succeeded (it said nothing at all);
    a tick with nothing new stays quiet."""
    watch = tmp_path / "watch"
    watch.mkdir()
    (watch / "conversations.json").write_bytes(chatgpt_export.read_bytes())
    with _served(tmp_path, watch) as (api, deployment, log):
        schedules = _api(f"{api}/deployments/{deployment['id']}/schedules")
        assert [s["schedule"]["cron"] for s in schedules] == ["0 0 1 1 *"]
        assert deployment["parameters"]["watch_dir"] == str(watch)
        assert _tick(api, deployment) == "COMPLETED"
        assert _tick(api, deployment) == "COMPLETED"  # nothing new
        log.seek(0)
        said = [line for line in log.read().splitlines() if " - watch - " in line]
    assert len(said) == 2, said
    assert said[0].endswith(f"watch - 1 new dump(s) in {watch}, picked up: conversations.json"), said
    assert re.search(r"watch - run r\S+ succeeded: 1 dump\(s\) ingested$", said[1]), said
    archive = sqlite3.connect(tmp_path / "data" / "archive.db")
    assert archive.execute("SELECT COUNT(*) FROM conversations").fetchone()[0] == 1


@pytest.mark.slow
def test_a_served_tick_says_each_bad_dump_in_one_line_without_a_traceback(tmp_path: Path, chatgpt_export: Path) -> None:
    """Bad dumps alone (a conversations.json holding `{not json`, a .zip that is no zip): serve's output names each
    once, with why, as `run` does, and no traceback (before, the ingest flow and the pipeline flow each logged
    the StageError's traceback, and the stage and the watch said it again); the next tick ingests a good dump
    dropped beside them and leaves the bad ones waiting."""
    watch = tmp_path / "watch"
    (watch / "unzipped").mkdir(parents=True)
    not_json = watch / "unzipped" / "conversations.json"
    not_json.write_text("{not json", encoding="utf-8")
    not_zip = watch / "export.zip"
    not_zip.write_bytes(b"PK\x03\x04" + b"\x00" * 26 + b"cut short")
    with _served(tmp_path, watch) as (api, deployment, log):
        assert _tick(api, deployment) == "COMPLETED"
        (watch / "good").mkdir()
        (watch / "good" / "conversations.json").write_bytes(chatgpt_export.read_bytes())
        assert _tick(api, deployment) == "COMPLETED"
        log.seek(0)
        said = log.read()
    assert "Traceback" not in said, said
    for bad in (not_json, not_zip):
        lines = [line for line in said.splitlines() if f"{bad}:" in line]
        assert len(lines) == 1 and "not tried again until the file changes" in lines[0], said
    assert "invalid JSON" in said
    archive = sqlite3.connect(tmp_path / "data" / "archive.db")
    assert archive.execute("SELECT COUNT(*) FROM conversations").fetchone()[0] == 1
