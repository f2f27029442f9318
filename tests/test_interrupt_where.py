"""Where a Ctrl-C stopped a run, as the one line says it (cold pass s17, findings H1 and L3), against real
processes, real signals and a real staging.db: a run the ledger does not hold yet (Ctrl-C in Prefect's start-up)
has nothing to resume and leaves no DATA_DIR/prefect/ it created; a run stopped just after a stage finished is
stopped between that stage and the next, not in it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from fault_support import ledger

ROOT = Path(__file__).resolve().parents[1]

# The run's own handler is in place (as inside flows.pipeline.run_pipeline), Prefect's start-up has made
# DATA_DIR/prefect/, and the flow has not recorded the run yet when Ctrl-C comes.
STARTING = """
import os, signal, sys, time
from pathlib import Path
from contracts.settings import Settings
from flows.cli import _no_prefect_left
from flows.interrupt import RunInterrupted, interruptible
from staging.ledger import StageRun, open_run, open_staging

data_dir, case = Path(sys.argv[1]), sys.argv[2]
settings = Settings(data_dir=data_dir)
data_dir.mkdir(parents=True, exist_ok=True)
if case != "new":
    staging = open_staging(settings.staging_path)
    open_run(staging, stages=["extract", "concepts"], exports=[], settings={}, code_version="t", run_id="r-x")
    if case == "after-extract":
        StageRun(staging, run_id="r-x", stage="extract", input_fingerprint="x", settings={}, code_version="t").succeed(
            rows_in=1, rows_out=1, counts={}
        )
    staging.close()
try:
    with _no_prefect_left(data_dir), interruptible(settings, "r-x", ["extract", "concepts"]):
        (data_dir / "prefect").mkdir()  # as Prefect's start-up makes it
        os.kill(os.getpid(), signal.SIGINT)
        for _ in range(100):
            time.sleep(0.1)
    print("not interrupted")
except RunInterrupted as exc:
    print(exc)
"""


def _stop(data_dir: Path, case: str) -> str:
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_HOME"}  # Prefect's home in the data dir
    result = subprocess.run(
        [sys.executable, "-c", STARTING, str(data_dir), case],
        capture_output=True,
        text=True,
        env={**env, "PYTHONPATH": str(ROOT)},
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_ctrl_c_before_the_run_is_recorded_says_nothing_was_run_and_leaves_no_prefect_dir(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    line = _stop(data_dir, "new")
    assert (
        line == "interrupted by Ctrl-C before the run started: nothing was run or recorded; run the same command again"
    )
    assert not (data_dir / "prefect").exists()
    assert not (data_dir / "staging.db").exists()  # nothing created that a later command would refuse


def test_ctrl_c_in_a_recorded_run_before_its_first_stage_keeps_the_resume_command(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    line = _stop(data_dir, "recorded")
    assert line == (
        "interrupted before its first stage of run r-x; resume with: chatmem run --from extract --to concepts"
        " --run-id r-x"
    )
    assert (data_dir / "prefect").exists()  # the run is recorded: Prefect's state of it stays
    runs, _ = ledger(data_dir)
    assert [r["status"] for r in runs] == ["interrupted"]


def test_ctrl_c_just_after_a_stage_finished_says_between_it_and_the_next(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    line = _stop(data_dir, "after-extract")
    assert line == (
        "interrupted between stage extract and concepts of run r-x; resume with: chatmem stage concepts --run-id r-x"
    )
    _, stages = ledger(data_dir)
    assert [(s["stage"], s["status"]) for s in stages] == [("extract", "succeeded")]


# A load stage the first Ctrl-C turns into a library's own error (the neo4j driver's BufferError as it resets), which
# the stage and the run record as failed; the second Ctrl-C comes before the orderly way says it was the signal's.
FAILED_BY_THE_SIGNAL = """
import sys, time
from pathlib import Path
from contracts.settings import Settings
from flows.interrupt import interruptible
from staging.ledger import StageRun, close_run, open_run, open_staging

settings = Settings(data_dir=Path(sys.argv[1]))
settings.data_dir.mkdir(parents=True)
staging = open_staging(settings.staging_path)
open_run(staging, stages=["load"], exports=[], settings={}, code_version="t", run_id="r-x")
load = StageRun(staging, run_id="r-x", stage="load", input_fingerprint="x", settings={}, code_version="t")
with interruptible(settings, "r-x", ["load"]):
    said = False
    while True:
        try:  # "ready" inside: the Ctrl-C sent as soon as it is read lands here
            if not said:
                print("ready", flush=True)
                said = True
            time.sleep(60)
        except KeyboardInterrupt:
            error = "BufferError: Existing exports of data: object cannot be re-sized"
            load.fail(error, "chatmem stage load --run-id r-x")
            close_run(staging, "r-x", error=f"stage load failed in run r-x: {error}")
            print("failed", flush=True)
"""


def test_a_second_ctrl_c_after_a_library_failed_on_the_first_records_the_run_interrupted(tmp_path: Path) -> None:
    """The stop at once (second Ctrl-C) records as the orderly way does: what failed since the first Ctrl-C is
    the interruption, not a failure (before: the run stayed `failed` with the driver's BufferError)."""
    import signal

    data_dir = tmp_path / "data"
    process = subprocess.Popen(
        [sys.executable, "-c", FAILED_BY_THE_SIGNAL, str(data_dir)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert process.stdout is not None and process.stdout.readline().strip() == "ready"
    process.send_signal(signal.SIGINT)
    assert process.stdout.readline().strip() == "failed"
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 130, err
    assert "interrupted in stage load of run r-x" in err and "(stopped at once)" in err
    runs, stages = ledger(data_dir)
    assert [r["status"] for r in runs] == ["interrupted"] and [s["status"] for s in stages] == ["interrupted"]
