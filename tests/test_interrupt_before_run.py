"""One Ctrl-C (or SIGTERM) before a run's own handler stops the command even when a library swallows the
KeyboardInterrupt: Prefect's import, interrupted inside pydantic's class set-up, caught it (as a RuntimeError) and
the command went on to wait for another run's lock as if no signal had come (a `kill -INT` ignored for minutes,
seen as a hang of test_cli_honest_run over two xdist workers). Real processes, real signals."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _default_sigint() -> None:
    """In each script's process before it starts: SIGINT as a terminal gives it. A test run started with SIGINT
    ignored (a background job of a non-interactive shell: `bash .ci/run &`) passes SIG_IGN on, and Python then
    installs no handler: every os.kill(SIGINT) of these scripts would be lost (`chatmem run` itself puts the
    handler back: flows.interrupt.take_sigint)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


# The block `chatmem run` puts around its start (flows/cli.py _run); the signal comes at a statement whose
# library swallows it ("swallowed"), wraps it in an error of its own ("wrapped"), or in Prefect's import itself.
BEFORE_THE_RUN = """
import os, signal, sys, time
from flows.interrupt import RunInterrupted, before_the_run

signum, fate = getattr(signal, sys.argv[1]), sys.argv[2]
started = time.monotonic()
try:
    with before_the_run():
        if fate == "prefect-import":
            from pydantic._internal import _decorators

            set_name = _decorators.PydanticDescriptorProxy.__set_name__

            def signalled(self, owner, name):
                _decorators.PydanticDescriptorProxy.__set_name__ = set_name
                os.kill(os.getpid(), signum)  # its handler runs in this frame, as a signal landing here would
                return set_name(self, owner, name)

            _decorators.PydanticDescriptorProxy.__set_name__ = signalled
            import prefect  # noqa: F401
        else:
            try:
                os.kill(os.getpid(), signum)
                time.sleep(5)
            except KeyboardInterrupt as exc:
                if fate == "wrapped":
                    raise RuntimeError("Error calling __set_name__") from exc
        time.sleep(30)  # as the wait for another run's lock
    print("not interrupted")
except RunInterrupted as exc:
    print(f"{exc.exit_code} {exc}")
print(f"{time.monotonic() - started:.1f}", file=sys.stderr)
"""


@pytest.mark.parametrize(
    ("signame", "fate", "by", "code"),
    [
        ("SIGINT", "swallowed", "Ctrl-C", 130),
        ("SIGTERM", "swallowed", "SIGTERM", 143),
        ("SIGINT", "wrapped", "Ctrl-C", 130),
        ("SIGINT", "prefect-import", "Ctrl-C", 130),
    ],
)
def test_one_signal_a_library_swallowed_before_the_run_still_stops_it(
    signame: str, fate: str, by: str, code: int
) -> None:
    result = subprocess.run(
        [sys.executable, "-c", BEFORE_THE_RUN, signame, fate],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=120,
        preexec_fn=_default_sigint,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == (
        f"{code} interrupted by {by} before the run started: nothing was run or recorded; run the same command again"
    ), result.stdout + result.stderr
    assert float(result.stderr.strip().splitlines()[-1]) < 20, result.stderr  # seconds, not the 30 s wait


def run_script(script: str, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", script, *args],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=120,
        cwd=cwd,
        preexec_fn=_default_sigint,
    )


# One Ctrl-C that is not swallowed, whose stop takes seconds to unwind (as a finished run's RunInterrupted passing
# through the stop of the local graph server it started): nothing is sent again into that cleanup.
SLOW_UNWIND = """
import os, signal, time
from flows.interrupt import RunInterrupted, before_the_run

try:
    with before_the_run():
        try:
            try:
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(5)
            except KeyboardInterrupt:
                raise RunInterrupted("interrupted by Ctrl-C after run R finished", 130) from None
        finally:
            try:
                time.sleep(3)
                print("cleanup finished", flush=True)
            except KeyboardInterrupt:
                print("cleanup interrupted", flush=True)
                raise
except RunInterrupted as exc:
    print(f"{exc.exit_code} {exc}")
"""


def test_a_stop_that_takes_seconds_to_unwind_is_not_signalled_again() -> None:
    result = run_script(SLOW_UNWIND)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["cleanup finished", "130 interrupted by Ctrl-C after run R finished"], (
        result.stdout + result.stderr
    )


# A Ctrl-C swallowed before the run, then the run's own handler takes over: the run stops as it starts, the
# ordinary way (one signal: not the second signal's "stopped at once"), and nothing more is sent to it.
SWALLOWED_THEN_RUN = """
import os, signal, sys, time
from contracts.settings import Settings
from flows.interrupt import RunInterrupted, before_the_run, interruptible

started = time.monotonic()
try:
    with before_the_run():
        try:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(5)
        except KeyboardInterrupt:
            pass  # a library swallowed it
        with interruptible(Settings(data_dir=sys.argv[1]), "r-test", ["ingest"]):
            time.sleep(6)  # a stage, longer than the grace period and a few re-sends
    print("not interrupted")
except RunInterrupted as exc:
    print(f"{exc.exit_code} {exc}")
print(f"{time.monotonic() - started:.1f}", file=sys.stderr)
"""


def test_a_signal_swallowed_before_the_run_stops_the_run_as_it_starts(tmp_path: Path) -> None:
    result = run_script(SWALLOWED_THEN_RUN, str(tmp_path / "data"))
    assert result.returncode == 0, result.stdout + result.stderr
    line = result.stdout.strip()
    assert line.startswith("130 interrupted") and "stopped at once" not in line, result.stdout + result.stderr
    assert float(result.stderr.strip().splitlines()[-1]) < 4, result.stderr  # at once, not after the 6 s stage


# A run's own handler takes the first Ctrl-C and ends ("stopped": the run's RunInterrupted on its way out) or the run
# ends by itself ("finished"); then comes the command's cleanup after the run (the stop of the local graph server it
# started: seconds), where the next Ctrl-C lands with `before_the_run`'s handler back in place.
AFTER_THE_RUN = """
import sys, time
from pathlib import Path
from contracts.settings import Settings
from flows.interrupt import RunInterrupted, before_the_run, interruptible
from staging.ledger import StageRun, open_run, open_staging

settings, case = Settings(data_dir=Path(sys.argv[1])), sys.argv[2]
settings.data_dir.mkdir(parents=True)
staging = open_staging(settings.staging_path)
open_run(staging, stages=["load"], exports=[], settings={}, code_version="t", run_id="r-x")
StageRun(staging, run_id="r-x", stage="load", input_fingerprint="x", settings={}, code_version="t")
try:
    with before_the_run():
        try:
            with interruptible(settings, "r-x", ["load"]):
                print("ready", flush=True)
                if case == "stopped":
                    time.sleep(30)
        finally:
            try:
                print("cleanup", flush=True)
                time.sleep(3)
                print("cleanup finished", flush=True)
            except KeyboardInterrupt:
                print("cleanup interrupted", flush=True)
                raise
    print("not interrupted")
except RunInterrupted as exc:
    print(f"{exc.exit_code} {exc}")
"""


@pytest.mark.parametrize("case", ["stopped", "finished"])
def test_a_ctrl_c_after_the_runs_handler_ended_never_says_nothing_was_run(tmp_path: Path, case: str) -> None:
    """A second Ctrl-C while a stopped run unwinds lets the cleanup finish and keeps the run's own line; a Ctrl-C in
    the cleanup after a run that ended says so. Before: "before the run started: nothing was run" after 9 stages."""
    process = subprocess.Popen(
        [sys.executable, "-c", AFTER_THE_RUN, str(tmp_path / "data"), case],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        preexec_fn=_default_sigint,
    )
    assert process.stdout is not None and process.stdout.readline().strip() == "ready"
    if case == "stopped":
        process.send_signal(signal.SIGINT)
    assert process.stdout.readline().strip() == "cleanup"
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    if case == "stopped":
        assert out.splitlines() == [
            "cleanup finished",
            "130 interrupted in stage load of run r-x; resume with: chatmem stage load --run-id r-x",
        ], out + err
    else:
        assert out.splitlines() == [
            "cleanup interrupted",
            "130 interrupted by Ctrl-C after the run ended: what it did is recorded (chatmem staging runs)",
        ], out + err
