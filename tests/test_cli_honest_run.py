"""Issue 21, everyday `chatmem run` and ingest saying only what is true: a file read with a wrong --format is a
failed file, not an ingested one; a zip cut short is named so; JSONL invalid UTF-8 arrives as U+FFFD; a run
killed with SIGKILL shows that its process vanished; no-op runs fold into one line of `staging runs`; a run
started with SIGINT ignored still stops on one SIGINT. Real CLI, real SQLite files, real processes.
"""

from __future__ import annotations

import json
import shutil
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner, Result
from fault_support import chatmem_command, process_env, wait_for
from stage_support import ingest_run

from contracts.errors import StageError
from contracts.settings import Settings
from flows.cli import cli
from staging.archive import open_archive
from staging.ledger import open_run, open_staging

ROOT = Path(__file__).resolve().parents[1]
CLAUDE = ROOT / "tests" / "fixtures" / "exports" / "claude" / "claude-to-sqlite" / "example.json"


def chatmem(*args: str | Path, data_dir: Path) -> Result:
    return CliRunner().invoke(cli, ["--data-dir", str(data_dir), *map(str, args)], catch_exceptions=False)


def archive_count(data_dir: Path, table: str) -> int:
    conn = sqlite3.connect(f"file:{data_dir / 'archive.db'}?mode=ro", uri=True)
    try:
        return int(conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0])
    finally:
        conn.close()


def ingest_as(data: Path, export: Path, force_format: str | None) -> str:
    """The ingest stage itself (past the CLI's preflight, which refuses only a head it is certain of), as a run of
    it: its status, or its error when it failed."""
    settings = Settings(data_dir=data)
    archive, staging = open_archive(settings.archive_path), open_staging(settings.staging_path)
    run_id = open_run(staging, stages=["ingest"], exports=[str(export)], settings={}, code_version="test")
    try:
        return ingest_run(
            archive, staging, run_id=run_id, settings=settings, exports=[export], force_format=force_format
        ).status
    except StageError as error:
        return str(error)
    finally:
        archive.close()
        staging.close()


def test_a_wrong_format_is_refused_or_failed_and_the_right_one_then_arrives_without_force(tmp_path: Path) -> None:
    """A Claude export read with --format chatgpt: the CLI refuses it before anything starts (exit 1, one reason
    naming --format claude, nothing written); ingest itself, reached with a head the preflight is not certain
    of, makes it a failed file with its quarantine rows kept. The same file then read without --format is not
    "nothing new": its conversation arrives."""
    export = Path(shutil.copy(CLAUDE, tmp_path / "c.json"))
    data = tmp_path / "data"
    wrong = chatmem("run", export, "--format", "chatgpt", "--only", "ingest", data_dir=data)
    assert wrong.exit_code == 1, wrong.output
    assert "nothing could be read as chatgpt" in wrong.output and "--format claude" in wrong.output, wrong.output
    assert not (data / "archive.db").exists()
    failed = ingest_as(data, export, "chatgpt")
    assert "nothing could be read as chatgpt" in failed and "--format claude" in failed, failed
    assert archive_count(data, "conversations") == 0 and archive_count(data, "quarantine") == 1
    right = chatmem("run", export, "--only", "ingest", data_dir=data)
    assert right.exit_code == 0, right.output
    assert "nothing new" not in right.output
    assert archive_count(data, "conversations") == 1 and archive_count(data, "quarantine") == 1


def test_the_same_bytes_with_another_format_are_read_again_and_the_same_format_skipped(tmp_path: Path) -> None:
    """The skip key is the bytes and the format they were read as: after an ingest as claude (detected), the same
    file read by ingest as chatgpt is read again (and fails, nothing readable), not skipped; with --format claude
    it is skipped as already ingested."""
    export = Path(shutil.copy(CLAUDE, tmp_path / "c.json"))
    data = tmp_path / "data"
    assert chatmem("run", export, "--only", "ingest", data_dir=data).exit_code == 0
    other = ingest_as(data, export, "chatgpt")
    assert "nothing could be read as chatgpt" in other, other
    same = chatmem("run", export, "--format", "claude", "--only", "ingest", "--json", data_dir=data)
    assert same.exit_code == 0, same.output
    ingest = next(s for s in json.loads(same.stdout)["stages"] if s["stage"] == "ingest")
    assert ingest["counts"]["files_skipped"] == 0 and ingest["counts"]["messages_unchanged"] == 2, ingest
    again = chatmem("run", export, "--format", "claude", "--only", "ingest", "--json", data_dir=data)
    assert json.loads(again.stdout)["nothing_new"] is True, again.stdout
    assert archive_count(data, "conversations") == 1


def test_a_zip_cut_short_is_named_as_an_incomplete_download(tmp_path: Path) -> None:
    """The first 100,000 bytes of a real zip: the error says it looks cut short, not only "not a zip file"."""
    cut = tmp_path / "t.zip"
    cut.write_bytes((ROOT / "demo" / "longmemeval-demo.zip").read_bytes()[:100_000])
    result = chatmem("run", cut, data_dir=tmp_path / "data")
    assert result.exit_code == 1, result.output
    assert "cut short" in result.output and "incomplete download" in result.output, result.output


def test_jsonl_invalid_utf8_arrives_as_u_fffd_with_a_note(tmp_path: Path) -> None:
    """As in a JSON export: the message with invalid bytes is stored with U+FFFD, the notes count them, nothing
    is quarantined."""
    export = tmp_path / "u.jsonl"
    export.write_bytes(b'{"conversation_id":"c1","id":"3","role":"user","text":"bad \xff\xfe bytes"}\n')
    data = tmp_path / "data"
    result = chatmem("run", export, "--only", "ingest", "--json", data_dir=data)
    assert result.exit_code == 0, result.output
    ingest = next(s for s in json.loads(result.stdout)["stages"] if s["stage"] == "ingest")
    assert any("replaced with U+FFFD" in note for note in ingest["notes"]), ingest
    conn = sqlite3.connect(f"file:{data / 'archive.db'}?mode=ro", uri=True)
    try:
        assert [row[0] for row in conn.execute("SELECT text FROM messages")] == ["bad \ufffd\ufffd bytes"]
    finally:
        conn.close()
    assert archive_count(data, "quarantine") == 0


KILLED = """
import os, signal, sys
from pathlib import Path
from staging.ledger import StageRun, open_run, open_staging
staging = open_staging(Path(sys.argv[1]) / "staging.db")
open_run(staging, stages=["ingest"], exports=[], settings={}, code_version="t", run_id="r-killed")
StageRun(staging, run_id="r-killed", stage="ingest", input_fingerprint="x", settings={}, code_version="t")
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_run_killed_with_sigkill_says_its_process_vanished(tmp_path: Path) -> None:
    """A run whose process died with SIGKILL (its rows still say running): `staging runs` shows it interrupted
    with the reason, not an empty error column."""
    data = tmp_path / "data"
    data.mkdir()
    killed = subprocess.run([sys.executable, "-c", KILLED, str(data)], env=process_env(tmp_path / "p"), check=False)
    assert killed.returncode == -signal.SIGKILL
    result = chatmem("staging", "runs", "--json", data_dir=data)
    [run] = json.loads(result.stdout)
    assert run["status"] == "interrupted" and "process vanished" in run["error"], run
    table = chatmem("staging", "runs", data_dir=data)
    assert "process vanished" in table.output, table.output


def _noop_rows(data: Path, count: int) -> None:
    """`count` runs in which every stage was skipped as unchanged, as a cron job's checks leave them."""
    from staging.ledger import StageRun, close_run, open_run, open_staging

    staging = open_staging(data / "staging.db")
    try:
        for n in range(count):
            run_id = open_run(staging, stages=["ingest"], exports=[], settings={}, code_version="t", run_id=f"r{n}")
            stage = StageRun(
                staging, run_id=run_id, stage="ingest", input_fingerprint="x", settings={}, code_version="t"
            )
            stage.succeed(rows_in=0, rows_out=0, counts={}, notes=["unchanged"], skipped=True)
            close_run(staging, run_id)
    finally:
        staging.close()


def test_consecutive_noop_runs_show_as_one_line_with_their_count(tmp_path: Path) -> None:
    """Three no-op runs: `staging runs` prints one line for them (the newest id, "3 no-op runs since ..."); --each
    and --json keep one row per run."""
    data = tmp_path / "data"
    data.mkdir()
    _noop_rows(data, 3)
    folded = chatmem("staging", "runs", data_dir=data)
    assert folded.exit_code == 0, folded.output
    assert "3 no-op runs since" in folded.output and "r2" in folded.output, folded.output
    assert "r0" not in folded.output and "r1" not in folded.output
    each = chatmem("staging", "runs", "--each", data_dir=data)
    assert all(run_id in each.output for run_id in ("r0", "r1", "r2")), each.output
    assert len(json.loads(chatmem("staging", "runs", "--json", data_dir=data).stdout)) == 3


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # as a non-interactive shell starts a background job


def test_a_run_started_with_sigint_ignored_still_stops_on_one_sigint(tmp_path: Path) -> None:
    """`chatmem run ... &` from a script inherits SIGINT ignored; `kill -INT PID` must still stop it (exit 130,
    one line). The data dir's lock is held here, so the run cannot finish before the signal comes."""
    from staging.lock import data_dir_lock

    data = tmp_path / "data"
    data.mkdir()
    export = shutil.copy(CLAUDE, tmp_path / "c.json")
    env = process_env(tmp_path / "prefect", CHATMEM_PIPELINE__LOCK_WAIT_S="600")
    with data_dir_lock(data, "r-holder"):
        process = subprocess.Popen(
            [*chatmem_command(), "--data-dir", str(data), "run", str(export), "--only", "ingest"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            preexec_fn=_ignore_sigint,  # no threads in this test process start a child meanwhile
        )
        from flows.preflight import starting

        wait_for("the run to announce itself", lambda: starting(data) is not None, 180, process)
        process.send_signal(signal.SIGINT)
        try:
            _, err = process.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            process.kill()
            _, err = process.communicate()
            raise AssertionError(f"SIGINT was ignored: {err[-2000:]}") from None
    assert process.returncode == 130, err[-3000:]
    assert "interrupted by Ctrl-C before the run started" in err, err[-3000:]
    assert not (data / "prefect").exists(), "a run stopped before it started leaves no prefect/ of its own"
