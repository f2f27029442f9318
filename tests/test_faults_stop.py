"""Issue 22, how a run stops: SIGTERM as cron, systemd and `timeout` send it, and SIGINT sent to the main process
alone (a supervisor's, not a terminal's), against real `chatmem run` processes stopped in the cluster stage."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from fault_support import (
    descendants,
    latest_stage_status,
    ledger,
    process_env,
    start,
    still_running,
    wait_for,
    write_chats,
)

pytestmark = pytest.mark.slow
LONG_CLUSTER = {"CHATMEM_CLUSTER__N_TRIALS": "1000"}  # cluster still runs when the signal comes


def _in_cluster(tmp_path: Path) -> tuple[Path, subprocess.Popen[str]]:
    data_dir = tmp_path / "data"
    export = write_chats(tmp_path / "chats.jsonl", 40)
    process = start(data_dir, "--quiet", "run", export, env=process_env(tmp_path / "prefect", **LONG_CLUSTER))
    wait_for("the cluster stage to start", lambda: latest_stage_status(data_dir, "cluster") == "running", 300, process)
    time.sleep(1.0)  # inside the stage's work, not at its first statement
    return data_dir, process


def _one_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert "Traceback" not in err and len(lines) == 1, err[-3000:]
    return lines[0]


def test_sigterm_records_the_run_interrupted_by_sigterm_with_its_resume_command(tmp_path: Path) -> None:
    """`kill PID` during cluster: exit 143, one line; the ledger's run and stage rows say interrupted and why
    (`stopped by SIGTERM`, never an empty `KeyboardInterrupt:`), and the stage row has its re-run command."""
    data_dir, process = _in_cluster(tmp_path)
    os.kill(process.pid, signal.SIGTERM)
    _, err = process.communicate(timeout=120)
    assert process.returncode == 143, err[-3000:]
    line = _one_line(err)
    runs, stages = ledger(data_dir)
    [run_row] = runs
    assert line.startswith(f"error: interrupted by SIGTERM in stage cluster of run {run_row['id']}; resume with:")
    assert f"chatmem --data-dir {data_dir} run --from cluster --to load --run-id {run_row['id']}" in line
    assert run_row["status"] == "interrupted"
    assert run_row["error"] == "interrupted: stopped by SIGTERM in stage cluster", run_row
    [cluster] = [s for s in stages if s["stage"] == "cluster"]
    assert cluster["status"] == "interrupted" and cluster["error"] == "interrupted: stopped by SIGTERM"


def test_sigint_to_the_main_process_alone_stops_a_run_in_cluster(tmp_path: Path) -> None:
    """One SIGINT to the run's process only (not its group, as a supervisor may send it): exit 130 with the
    one line, the ledger says interrupted by Ctrl-C, and no process is left behind."""
    data_dir, process = _in_cluster(tmp_path)
    children = descendants(process.pid)
    os.kill(process.pid, signal.SIGINT)
    try:
        _, err = process.communicate(timeout=60)  # the watchdog's grace is 5 s: a minute is only a bound
    except subprocess.TimeoutExpired:
        process.kill()
        _, err = process.communicate()
        raise AssertionError(f"one SIGINT did not stop the run: {err[-3000:]}") from None
    assert process.returncode == 130, err[-3000:]
    line = _one_line(err)
    [run_row] = ledger(data_dir)[0]
    assert line.startswith(f"error: interrupted in stage cluster of run {run_row['id']}; resume with:"), line
    assert run_row["status"] == "interrupted" and run_row["error"].endswith("stopped by Ctrl-C in stage cluster")
    assert still_running(children) == []
