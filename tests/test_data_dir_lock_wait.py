"""Waiting for the data dir's lock (staging/lock.py) with no exception being handled: a signal that comes while a
run waits for another run's lock must find the main thread as a plain wait, not inside an `except` block.

Why it matters: flows/interrupt.py's handler before the run takes a signal that arrives while an exception is being
handled for the second one of a stop already unwinding, and returns. When a library swallowed the first Ctrl-C (CI
saw "Exception ignored in: 'Path'" from the handler's KeyboardInterrupt), its thread delivers the signal again; a
wait inside `except BlockingIOError:` made every such delivery look like that second signal, and the run waited out
the whole lock wait instead of stopping (tests/test_cli_honest_run.py's SIGINT test, once under load).
"""

from __future__ import annotations

import signal
import sys
from pathlib import Path
from types import FrameType

import pytest

from staging.lock import BusyError, data_dir_lock


def test_a_signal_during_the_lock_wait_sees_no_exception_being_handled(tmp_path: Path) -> None:
    seen: list[BaseException | None] = []

    def sample(signum: int, frame: FrameType | None) -> None:
        seen.append(sys.exc_info()[1])

    previous = signal.signal(signal.SIGALRM, sample)
    try:
        with data_dir_lock(tmp_path, "r-holder"):  # another open of the lock file: its flock conflicts
            signal.setitimer(signal.ITIMER_REAL, 0.05, 0.05)
            with pytest.raises(BusyError), data_dir_lock(tmp_path, "r-waiter", wait_s=0.6):
                pass
            signal.setitimer(signal.ITIMER_REAL, 0, 0)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0, 0)
        signal.signal(signal.SIGALRM, previous)
    assert len(seen) >= 5  # the wait was sampled throughout
    assert all(exc is None for exc in seen), [type(exc).__name__ for exc in seen if exc is not None]
