"""Faults of issue 13, cases 2-5, against real `chatmem` processes and real signals: Ctrl-C, SIGKILL, two runs on
one data dir, and a re-run of one stage of an unfinished run.

Each scenario waits until the cluster stage is running (UMAP and Optuna: the longest stage, where Ctrl-C used to
take 70-150 s and end in a 120-line traceback) and then breaks the run there.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fault_support import (
    chatmem_command,
    descendants,
    latest_stage_status,
    ledger,
    process_env,
    run,
    start,
    still_running,
    wait_for,
    write_chats,
)

from staging.ledger import StageRun, close_run, open_run, open_staging

pytestmark = pytest.mark.slow
# Enough Optuna trials that the cluster stage is still running when the test breaks the run (minutes, not seconds);
# the cluster stage in a process of its own, as `chatmem run` runs it by default (flows/stage_process.py): the
# signals reach both processes, and the runner's process is the one that must answer them.
LONG_CLUSTER = {"CHATMEM_CLUSTER__N_TRIALS": "1000", "CHATMEM_RUNNER__STAGE_PROCESSES": "true"}


STAGE_LINE = re.compile(r"^\d\d:\d\d:\d\d chatmem (\w+): (?:succeeded|skipped) in [\d.]+ s, \d+ rows written$")
# what a run says as it starts Prefect and as each stage starts its work (session 39): progress, not the error line
PROGRESS_LINE = re.compile(r"^\d\d:\d\d:\d\d chatmem (?:starting: .*|\w+: started)$")


def _cluster_running(data_dir: Path) -> bool:
    return latest_stage_status(data_dir, "cluster") == "running"


def test_ctrl_c_stops_the_run_in_seconds_with_one_line_and_leaves_no_process(tmp_path: Path) -> None:
    """SIGINT to the foreground job during cluster: exit 130 within seconds, one line naming the stage, the run
    and the resume command; the ledger says interrupted; Prefect's server process is gone too."""
    data_dir = tmp_path / "data"
    export = write_chats(tmp_path / "chats.jsonl", 40)
    env = process_env(tmp_path / "prefect", **LONG_CLUSTER)
    process = start(data_dir, "run", export, env=env)
    wait_for("the cluster stage to start", lambda: _cluster_running(data_dir), 240, process)
    time.sleep(1.0)  # inside the stage's work, not at its first statement
    children = descendants(process.pid)
    assert children, "the run has Prefect's API server as a child process"
    os.killpg(process.pid, signal.SIGINT)  # what a terminal sends on Ctrl-C: the whole foreground process group
    # a bounded wait on the exit itself (the bug: 70-150 s of retries against a dead API server before exiting)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 130, err[-3000:]
    done = [m.group(1) for m in map(STAGE_LINE.match, err.splitlines()) if m]  # stderr is a pipe: a line per stage
    assert done == ["ingest", "segment", "embed", "extract", "concepts", "garden", "embed_concepts"], err[-3000:]
    lines = [line for line in err.splitlines() if line.strip() and not STAGE_LINE.match(line)]
    lines = [line for line in lines if not PROGRESS_LINE.match(line)]
    assert "Traceback" not in err and len(lines) == 1, err[-3000:]
    [run_row] = ledger(data_dir)[0]
    resume = f"chatmem --data-dir {data_dir} run --from cluster"
    expected = f"error: interrupted in stage cluster of run {run_row['id']}; resume with: {resume}"
    assert lines[0].startswith(expected) and f"--run-id {run_row['id']}" in lines[0]
    assert run_row["status"] == "interrupted"
    assert [s["status"] for s in ledger(data_dir)[1] if s["stage"] == "cluster"] == ["interrupted"]
    assert still_running(children) == []


def test_sigterm_stops_the_run_as_ctrl_c_does(tmp_path: Path) -> None:
    """SIGTERM to the run's process (kill PID, systemd, docker stop) during cluster: exit 143 (128 + SIGTERM),
    one line naming the signal, the stage, the run and the resume command; the run and its cluster stage are
    recorded interrupted (not failed, not left running); Prefect's server process is gone too."""
    data_dir = tmp_path / "data"
    export = write_chats(tmp_path / "chats.jsonl", 40)
    process = start(data_dir, "run", export, env=process_env(tmp_path / "prefect", **LONG_CLUSTER))
    wait_for("the cluster stage to start", lambda: _cluster_running(data_dir), 240, process)
    time.sleep(1.0)  # inside the stage's work, not at its first statement
    children = descendants(process.pid)
    os.kill(process.pid, signal.SIGTERM)  # the process only: not its group, as `kill PID` does
    _, err = process.communicate(timeout=120)
    assert process.returncode == 143, err[-3000:]
    lines = [line for line in err.splitlines() if line.strip() and not STAGE_LINE.match(line)]
    lines = [line for line in lines if not PROGRESS_LINE.match(line)]
    assert "Traceback" not in err and len(lines) == 1, err[-3000:]
    runs, stages = ledger(data_dir)
    [run_row] = runs
    expected = (
        f"error: interrupted by SIGTERM in stage cluster of run {run_row['id']}; "
        f"resume with: chatmem --data-dir {data_dir} run"
    )
    assert lines[0].startswith(expected) and "--from cluster" in lines[0], lines[0]
    assert run_row["status"] == "interrupted", run_row
    assert [s["status"] for s in stages if s["stage"] == "cluster"] == ["interrupted"]
    assert "running" not in {s["status"] for s in stages}
    # the recorded errors say what stopped the run, in words (not Python's KeyboardInterrupt for a SIGTERM)
    cluster_error = next(s["error"] for s in stages if s["stage"] == "cluster")
    assert run_row["error"] == "interrupted: stopped by SIGTERM in stage cluster", run_row
    assert cluster_error == "interrupted: stopped by SIGTERM", stages
    assert still_running(children) == []


@pytest.fixture(scope="module")
def killed_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """One run broken on purpose: while its cluster stage runs, a second run and read-only commands are tried on
    the same data dir; then it is killed with SIGKILL, and the ledger is read through the CLI."""
    base = tmp_path_factory.mktemp("killed")
    data_dir = base / "data"
    env = process_env(base / "prefect")
    first = start(data_dir, "run", write_chats(base / "chats.jsonl", 40), env={**env, **LONG_CLUSTER})
    wait_for("the cluster stage to start", lambda: _cluster_running(data_dir), 240, first)
    other = write_chats(base / "other.jsonl", 3, seed=7)
    seen: dict[str, Any] = {"data_dir": data_dir, "env": env, "pid": first.pid}
    seen["second"] = run(data_dir, "run", other, env=env)
    seen["second_waiting"] = run(data_dir, "run", other, env={**env, "CHATMEM_PIPELINE__LOCK_WAIT_S": "1"})
    seen["runs_during"] = run(data_dir, "staging", "runs", "--json", env=env)
    seen["stats_during"] = run(data_dir, "archive", "stats", "--json", env=env)
    children = descendants(first.pid)
    os.kill(first.pid, signal.SIGKILL)
    first.communicate()
    seen["children"] = [c.pid for c in children]
    seen["left_behind"] = still_running(children)
    seen["runs_after"] = json.loads(run(data_dir, "staging", "runs", "--json", env=env).stdout)
    seen["failures_after"] = json.loads(run(data_dir, "staging", "failures", "--json", env=env).stdout)
    yield seen


def test_a_second_run_on_the_same_data_dir_is_refused_in_one_line_naming_the_holder(killed_run: dict[str, Any]) -> None:
    """Exit 1, one line naming the run that holds the data dir and its pid; waiting (lock_wait_s) ends the same."""
    [run_row] = [r for r in killed_run["runs_after"]]
    for result in (killed_run["second"], killed_run["second_waiting"]):
        assert result.returncode == 1, result.stderr
        lines = [line for line in result.stderr.splitlines() if line.strip()]
        assert len(lines) == 1 and "Traceback" not in result.stderr
        assert f"in use by run {run_row['id']} (pid {killed_run['pid']}" in lines[0]
    assert len(killed_run["runs_after"]) == 1  # the refused runs recorded nothing


def test_read_only_commands_answer_while_a_run_writes(killed_run: dict[str, Any]) -> None:
    """`staging runs` and `archive stats` never take the lock: they answer during the run, which shows running."""
    assert killed_run["runs_during"].returncode == 0, killed_run["runs_during"].stderr
    [during] = json.loads(killed_run["runs_during"].stdout)
    assert during["status"] == "running" and during["stage_status"]["cluster"] == "running"
    stats = json.loads(killed_run["stats_during"].stdout)
    assert stats["conversations"] == 40


def test_sigkill_leaves_no_orphan_process(killed_run: dict[str, Any]) -> None:
    """Prefect's API server, a child of the killed run, ends on its own once its parent is gone."""
    assert killed_run["children"]
    assert killed_run["left_behind"] == []


def test_a_killed_run_is_shown_interrupted_with_the_command_that_resumes_it(killed_run: dict[str, Any]) -> None:
    """`staging runs` and `staging failures` show the run and its cluster stage interrupted, with commands."""
    [shown] = killed_run["runs_after"]
    assert shown["status"] == "interrupted" and shown["stage_status"]["cluster"] == "interrupted"
    assert shown["resume"] == f"chatmem run --from cluster --to load --run-id {shown['id']}"
    failures = killed_run["failures_after"]
    assert [(r["run_id"], r["status"], r["resume"]) for r in failures["runs"]] == [
        (shown["id"], "interrupted", shown["resume"])
    ]
    [stage] = failures["stage_runs"]
    assert (stage["stage"], stage["status"]) == ("cluster", "interrupted")
    assert stage["rerun_hint"] == shown["resume"]  # the command that finishes the run, not the killed stage alone


def test_rerunning_one_stage_of_an_unfinished_run_does_not_mark_it_succeeded(killed_run: dict[str, Any]) -> None:
    """`chatmem stage embed --run-id R` succeeds, but R stays unfinished: cluster and load never ran. Unchanged, the
    re-run is a no-op run of its own and R stays as the kill left it; forced, R is failed with the stages left."""
    data_dir, env = killed_run["data_dir"], killed_run["env"]
    run_id = killed_run["runs_after"][0]["id"]
    result = run(data_dir, "stage", "embed", "--run-id", run_id, env=env)
    assert result.returncode == 0, result.stderr
    runs = json.loads(run(data_dir, "staging", "runs", "--json", env=env).stdout)
    assert [r for r in runs if r["id"] == run_id] == killed_run["runs_after"]  # interrupted, as it was
    result = run(data_dir, "stage", "embed", "--run-id", run_id, "--force", env=env)
    assert result.returncode == 0, result.stderr
    [after] = [r for r in json.loads(run(data_dir, "staging", "runs", "--json", env=env).stdout) if r["id"] == run_id]
    assert after["stage_status"]["embed"] in ("succeeded", "skipped")  # skipped by the stage: every text cached
    assert after["status"] == "failed" and after["error"].startswith("stage(s) not run yet: cluster, ")
    assert "load (resume:" in after["error"]
    assert after["resume"] == f"chatmem run --from cluster --to load --run-id {run_id}"


def test_close_run_succeeds_only_when_every_selected_stage_succeeded(tmp_path: Path) -> None:
    """The ledger rule itself: a run closes succeeded only once all its selected stages have succeeded."""
    staging = open_staging(tmp_path / "staging.db")
    run_id = open_run(staging, stages=["ingest", "segment"], exports=[], settings={}, code_version="t")
    StageRun(staging, run_id=run_id, stage="ingest", input_fingerprint="x", settings={}, code_version="t").succeed(
        rows_in=0, rows_out=0, counts={}
    )
    close_run(staging, run_id)
    status, error = staging.execute("SELECT status, error FROM runs WHERE id = ?", (run_id,)).fetchone()
    assert status == "failed" and f"not run yet: segment (resume: chatmem stage segment --run-id {run_id})" in error
    open_run(staging, stages=["segment"], exports=[], settings={}, code_version="t", run_id=run_id)
    StageRun(staging, run_id=run_id, stage="segment", input_fingerprint="x", settings={}, code_version="t").succeed(
        rows_in=0, rows_out=0, counts={}
    )
    close_run(staging, run_id)
    assert staging.execute("SELECT status FROM runs WHERE id = ?", (run_id,)).fetchone()[0] == "succeeded"


WATCHED = """
import sys, time
from pathlib import Path
from contracts.settings import Settings
from flows.interrupt import interruptible
from staging.ledger import StageRun, open_run, open_staging

settings = Settings(data_dir=Path(sys.argv[1]))
staging = open_staging(settings.staging_path)
run_id = open_run(staging, stages=["embed", "cluster"], exports=[], settings={}, code_version="t", run_id="r-stuck")
StageRun(staging, run_id=run_id, stage="embed", input_fingerprint="x", settings={}, code_version="t")
with interruptible(settings, run_id, ["embed", "cluster"]):
    print("ready", flush=True)
    while True:  # a stage that swallows KeyboardInterrupt, as code stuck in a native call would ignore it
        try:
            time.sleep(0.1)
        except KeyboardInterrupt:
            pass
"""


def _stuck_stage(script: str, tmp_path: Path) -> subprocess.Popen[str]:
    """`script` (WATCHED or NATIVE) started on a data dir under `tmp_path`, once it says it is in its stage."""
    process = subprocess.Popen(
        [sys.executable, "-c", script, str(tmp_path / "data")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=process_env(tmp_path / "prefect"),
    )
    assert process.stdout is not None and process.stdout.readline().strip() == "ready"
    return process


def test_a_stage_that_ignores_ctrl_c_is_stopped_by_the_watchdog(tmp_path: Path) -> None:
    """When the stage does not stop, the watchdog records the interruption, says the line (that it forced the stop
    after the grace period, not "at once") and exits 130."""
    process = _stuck_stage(WATCHED, tmp_path)
    time.sleep(0.5)  # into the loop that swallows KeyboardInterrupt, past the print that announced it
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 130, err
    assert err.strip() == (
        "error: interrupted in stage embed of run r-stuck; resume with: chatmem run --from embed --to cluster"
        " --run-id r-stuck (forced: the stage did not stop within 5 s)"
    )
    runs, stages = ledger(tmp_path / "data")
    assert [r["status"] for r in runs] == ["interrupted"] and [s["status"] for s in stages] == ["interrupted"]


NATIVE = WATCHED.replace(
    """    while True:  # a stage that swallows KeyboardInterrupt, as code stuck in a native call would ignore it
        try:
            time.sleep(0.1)
        except KeyboardInterrupt:
            pass
""",
    """    import ctypes, os, signal
    signal.siginterrupt(signal.SIGTERM, False)  # the call below is restarted, never back in Python
    idle, _ = os.pipe()
    ctypes.CDLL(None).read(idle, ctypes.create_string_buffer(1), 1)  # native, GIL released, waiting for ever
""",
)


def test_sigterm_to_a_stage_in_native_code_is_forced_as_sigterm(tmp_path: Path) -> None:
    """SIGTERM while the stage sits in one native call that releases the GIL (an ONNX session's run): the run's
    Python handler does not run before the call returns, so the watchdog alone knows the signal, from the wakeup
    byte; its line and exit code are SIGTERM's (143), not Ctrl-C's (found by a run stopped while the cluster
    stage's full model was reading on a loaded machine)."""
    process = _stuck_stage(NATIVE, tmp_path)
    time.sleep(0.5)
    process.send_signal(signal.SIGTERM)
    try:
        _, err = process.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        process.kill()  # it would wait on its pipe for ever
        _, err = process.communicate()
        raise AssertionError(f"the watchdog did not stop the run: {err[-3000:]}") from None
    assert process.returncode == 143, err
    assert err.strip() == (
        "error: interrupted by SIGTERM in stage embed of run r-stuck; resume with: chatmem run --from embed --to"
        " cluster --run-id r-stuck (forced: the stage did not stop within 5 s)"
    )


def test_a_killed_serve_leaves_no_prefect_server_behind(tmp_path: Path) -> None:
    """`chatmem serve` killed with SIGKILL: the local Prefect server it started ends by itself."""
    watch = tmp_path / "watch"
    watch.mkdir()
    log = (tmp_path / "serve.log").open("w+")
    command = [*chatmem_command(), "--data-dir", str(tmp_path / "data"), "serve", "--cron", "0 0 1 1 *"]
    process = subprocess.Popen(
        [*command, "--watch", str(watch)], stdout=log, stderr=log, env=process_env(tmp_path / "prefect")
    )

    def serving() -> bool:
        log.seek(0)
        return "Prefect API http://127.0.0.1:" in log.read()

    wait_for("the served deployment", serving, 180, process)  # type: ignore[arg-type]
    children = descendants(process.pid)
    assert any("server" in " ".join(c.cmdline()) for c in children)
    process.kill()
    process.wait()
    assert still_running(children, within_s=15) == []


SWALLOWED = """
import os, signal, sys, time, weakref
from pathlib import Path
from contracts.settings import Settings
from flows.interrupt import RunInterrupted, interruptible

class Thing:
    pass

def callback(ref):  # Ctrl-C arrives while Python runs a weakref callback, which cannot raise
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(0.01)

try:
    with interruptible(Settings(data_dir=Path(sys.argv[1])), "r-weak", ["embed"]):
        thing = Thing()
        ref = weakref.ref(thing, callback)
        del thing
        time.sleep(3)
    print("not interrupted")
except RunInterrupted as exc:
    print(exc)
"""


def test_a_ctrl_c_that_lands_in_a_weakref_callback_still_stops_the_run(tmp_path: Path) -> None:
    """Python drops an exception raised in a weakref callback ("Exception ignored"): the Ctrl-C is delivered
    again where it can stop the run, and nothing but the one line is printed."""
    result = subprocess.run(
        [sys.executable, "-c", SWALLOWED, str(tmp_path / "data")],
        capture_output=True,
        text=True,
        env=process_env(tmp_path / "prefect"),
        timeout=60,
    )
    assert result.stdout.strip() == (
        "interrupted by Ctrl-C before the run started: nothing was run or recorded; run the same command again"
    )
    assert result.stderr == ""
