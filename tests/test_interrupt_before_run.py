"""One Ctrl-C (or SIGTERM) before a run's own handler stops the command even when a library swallows the
KeyboardInterrupt: Prefect's import, interrupted inside pydantic's class set-up, caught it (as a RuntimeError) and
the command went on to wait for another run's lock as if no signal had come (a `kill -INT` ignored for minutes,
seen as a hang of test_cli_honest_run over two xdist workers). Real processes, real signals."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

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
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == (
        f"{code} interrupted by {by} before the run started: nothing was run or recorded; run the same command again"
    ), result.stdout + result.stderr
    assert float(result.stderr.strip().splitlines()[-1]) < 20, result.stderr  # seconds, not the 30 s wait
