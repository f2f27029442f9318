"""The one progress protocol every long stage accepts, so that stages stay free of any display concern.

A stage takes `progress: ProgressFactory | None`. `progress(label, total)` is a context manager that yields an
`advance(n)` callable; the unit (bytes, texts, rows, trials) is the stage's. flows/progress.py makes the bars.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager

Advance = Callable[[int], object]
ProgressFactory = Callable[[str, int], AbstractContextManager[Advance]]


@contextmanager
def bar(progress: ProgressFactory | None, label: str, total: int) -> Iterator[Advance]:
    """`progress(label, total)`, or a no-op `advance` when there is no factory or nothing to count."""
    if progress is None or total <= 0:
        yield lambda _: None
        return
    with progress(label, total) as advance:
        yield advance
