"""Progress bars for long stages: tqdm on stderr, off with --quiet or when stderr is not a terminal.

Stages take a `progress` factory rather than tqdm itself, so that they stay free of any display concern:
`progress(label, total_bytes)` is a context manager that yields an `advance(nbytes)` callable.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TextIO

from clients.progress import ProgressFactory


def bars_wanted(quiet: bool, stream: TextIO | None = None) -> bool:
    """Bars only for a person watching: not with --quiet, not into a pipe or a log file."""
    stream = stream if stream is not None else sys.stderr
    isatty = getattr(stream, "isatty", None)
    return not quiet and callable(isatty) and bool(isatty())


def progress_factory(enabled: bool, unit: str = "bytes") -> ProgressFactory | None:
    """The factory to hand a stage (bars counting bytes, or items such as texts and trials), or None."""
    if not enabled:
        return None
    return tqdm_bar if unit == "bytes" else count_bar


def _tqdm() -> Any:
    """tqdm (imported here: inspection commands never pay for it), with a thread lock (`bars_lock_threads`)."""
    from tqdm import tqdm

    bars_lock_threads()
    return tqdm


def bars_lock_threads() -> None:
    """Give tqdm a thread lock instead of the multiprocessing lock it makes by default, before any bar is made in
    this process: bars are drawn by one process, and a stage process killed on Ctrl-C would leave that lock's
    semaphore behind ("resource_tracker: There appear to be 1 leaked semaphore objects" after chatmem's own
    line). Not only our bars make one: UMAP's layout makes a tqdm even when it shows none (umap/layouts.py), so
    the stage process and the runner call this before a stage runs."""
    from tqdm import tqdm

    if not isinstance(getattr(tqdm, "_lock", None), _THREAD_LOCK_TYPE):
        tqdm.set_lock(threading.RLock())


_THREAD_LOCK_TYPE = type(threading.RLock())


@contextmanager
def tqdm_bar(label: str, total: int) -> Iterator[Callable[[int], object]]:
    tqdm = _tqdm()
    with tqdm(
        total=total,
        desc=_shorten(label),
        unit="B",
        unit_scale=True,
        unit_divisor=1024,
        file=sys.stderr,
        leave=False,
        dynamic_ncols=True,
        mininterval=0.5,
    ) as bar:
        yield bar.update


def _shorten(label: str, width: int = 40) -> str:
    """Keep the end of a long path: the file name is the part a reader needs."""
    return label if len(label) <= width else "…" + label[-(width - 1) :]


@contextmanager
def count_bar(label: str, total: int) -> Iterator[Callable[[int], object]]:
    """A bar that counts items (texts, rows, trials) on stderr."""
    tqdm = _tqdm()

    with tqdm(total=total, desc=_shorten(label), unit="it", file=sys.stderr, leave=False, dynamic_ncols=True) as bar:
        yield bar.update
