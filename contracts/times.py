"""Reading a moment given as text: one function for the CLI (--at, --scope) and the MCP tools (at, since, until).

Plain Python (no pydantic): `chatmem recall` reads its dates with it before anything heavy is imported.
"""

from __future__ import annotations

from datetime import UTC, datetime, time


def parse_iso_time(value: str, *, end_of_day: bool = False) -> datetime:
    """An ISO date or date-time, UTC when no zone is given; ValueError when unreadable.

    A plain date (no time) names a whole day: with `end_of_day` it means that day's last instant, so that
    `at: 2024-05-01` and `until: 2024-05-01` include what was said on May 1st; otherwise its first instant.
    The CLI (--at, --scope) and the MCP tools (at, since, until) both read dates with this one function.
    """
    text = value.strip()
    parsed = datetime.fromisoformat(text)
    if end_of_day and len(text) == 10:  # YYYY-MM-DD: no time given
        parsed = datetime.combine(parsed.date(), time.max)
    return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed
