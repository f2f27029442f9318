"""Export timestamps to UTC datetimes: epoch seconds, epoch milliseconds, ISO strings, or nothing.

A number is read as seconds below 1e11 (the year 5138) and as milliseconds from 1e12 (September 2001, before
any chat export) to the end of the year 9999. Between the two it is neither: 253402300800, the year 10000 in
seconds, would be 1978 read as milliseconds, and guessing that is inventing a date. Such a value, NaN,
infinities, booleans, non-positive numbers and text that is no date are dropped (the field becomes null),
and every drop is counted: the ingest stage reports them per file in its notes (`counting_dropped`).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import UTC, datetime

SECONDS_BELOW = 1e11  # 1e11 s is the year 5138
MILLIS_FROM = 1e12  # 1e12 ms is 2001-09-09
MILLIS_UP_TO = 253_402_300_799_999  # 9999-12-31T23:59:59.999Z, the last instant a datetime holds

_DROPPED: ContextVar[Counter[str] | None] = ContextVar("chatmem_dropped_timestamps", default=None)


@contextmanager
def counting_dropped() -> Iterator[Counter[str]]:
    """Count, by reason, the timestamps `to_utc` drops while the block runs (in this thread)."""
    counter: Counter[str] = Counter()
    token = _DROPPED.set(counter)
    try:
        yield counter
    finally:
        _DROPPED.reset(token)


def describe_dropped(counter: Counter[str]) -> str:
    """'3 timestamp(s) dropped (stored as null): 2 out of range ..., 1 NaN'."""
    reasons = ", ".join(f"{n} {reason}" for reason, n in counter.most_common())
    return f"{sum(counter.values())} timestamp(s) dropped (stored as null): {reasons}"


def dropped_so_far() -> int:
    """Timestamps dropped so far in this thread's `counting_dropped` block (0 outside one)."""
    counter = _DROPPED.get()
    return sum(counter.values()) if counter is not None else 0


def dropped_mark() -> Counter[str]:
    """This thread's drops so far, by reason: a mark to go back to with `forget_dropped_since`."""
    counter = _DROPPED.get()
    return Counter(counter) if counter is not None else Counter()


def forget_dropped_since(mark: Counter[str]) -> None:
    """Take back the drops counted since `mark` (records read a second time, whose drops were counted the first)."""
    counter = _DROPPED.get()
    if counter is not None:
        counter.clear()
        counter.update(mark)


def _drop(reason: str) -> None:
    counter = _DROPPED.get()
    if counter is not None:
        counter[reason] += 1


def to_utc(value: object) -> datetime | None:
    """Parse a timestamp from an export. Returns None for null or empty values, and for values it cannot read
    (each of those counted, see the module docstring)."""
    if value is None:
        return None
    if isinstance(value, bool):
        _drop("boolean")
        return None
    if isinstance(value, int | float):
        return _from_epoch(float(value))
    if hasattr(value, "__float__") and not isinstance(value, str):  # ijson yields Decimal
        return _from_epoch(float(value))  # type: ignore[arg-type, unused-ignore]
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return None
        try:
            number = float(text)
        except ValueError:
            pass
        else:
            return _from_epoch(number)
        try:
            parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            _drop("not a date")
            return None
        if parsed.tzinfo is None:
            return parsed.replace(tzinfo=UTC)
        return parsed.astimezone(UTC)
    _drop(f"a JSON {type(value).__name__}, not a timestamp")
    return None


def _from_epoch(number: float) -> datetime | None:
    if math.isnan(number):
        _drop("NaN")
        return None
    if math.isinf(number):
        _drop("infinity")
        return None
    if number <= 0:  # no real export has these
        _drop("not positive")
        return None
    if number < SECONDS_BELOW:
        seconds = number
    elif MILLIS_FROM <= number <= MILLIS_UP_TO:
        seconds = number / 1000.0
    else:
        _drop("out of range for both seconds and milliseconds")
        return None
    try:
        return datetime.fromtimestamp(seconds, tz=UTC)
    except (OverflowError, OSError, ValueError):
        _drop("out of range for both seconds and milliseconds")
        return None
