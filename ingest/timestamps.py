"""Export timestamps to UTC datetimes: epoch seconds, epoch milliseconds, ISO strings, or nothing."""

from __future__ import annotations

from datetime import UTC, datetime

# Epoch values above this are milliseconds: 1e11 seconds is the year 5138, 1e11 ms is 1973.
_MILLIS_THRESHOLD = 1e11


def to_utc(value: object) -> datetime | None:
    """Parse a timestamp from an export. Returns None for null, empty or unparseable values."""
    if value is None or isinstance(value, bool):
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
            return _from_epoch(float(text))
        except ValueError:
            pass
        try:
            parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            return None
        if parsed.tzinfo is None:
            return parsed.replace(tzinfo=UTC)
        return parsed.astimezone(UTC)
    return None


def _from_epoch(seconds: float) -> datetime | None:
    if seconds != seconds or seconds <= 0:  # NaN or non-positive: no real export has these
        return None
    if seconds > _MILLIS_THRESHOLD:
        seconds /= 1000.0
    try:
        return datetime.fromtimestamp(seconds, tz=UTC)
    except (OverflowError, OSError, ValueError):
        return None
