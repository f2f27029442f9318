"""clients/retry.py: the one retry loop: what is retried, how often, after which waits, and what callers see."""

from __future__ import annotations

import pytest

from clients.retry import doubling, retrying


class Flaky(Exception):
    """A transient failure in these tests."""


def test_transient_errors_are_retried_with_the_callers_delays_then_the_value_returns() -> None:
    """Two transient failures, then a value: three attempts, waits from `delay`, every failure seen by the hook."""
    waits: list[float] = []
    seen: list[tuple[str, int, bool]] = []

    def call(attempt: int) -> str:
        if attempt < 3:
            raise Flaky(f"try {attempt}")
        return f"done on {attempt}"

    result = retrying(
        call,
        transient=lambda e: isinstance(e, Flaky),
        delay=doubling(0.5),
        max_retries=3,
        on_error=lambda e, attempt, again: seen.append((str(e), attempt, again)),
        sleep=waits.append,
    )
    assert result == "done on 3"
    assert waits == [0.5, 1.0]
    assert seen == [("try 1", 1, True), ("try 2", 2, True)]


def test_the_last_transient_error_is_raised_unchanged_after_max_retries() -> None:
    """max_retries=2: three attempts, the third failure says it will not be retried and is raised as it was."""
    seen: list[tuple[int, bool]] = []
    waits: list[float] = []

    def call(attempt: int) -> None:
        raise Flaky(f"try {attempt}")

    with pytest.raises(Flaky, match="try 3"):
        retrying(
            call,
            transient=lambda e: True,
            delay=lambda e, attempt: 0.1 * attempt,
            max_retries=2,
            on_error=lambda e, attempt, again: seen.append((attempt, again)),
            sleep=waits.append,
        )
    assert seen == [(1, True), (2, True), (3, False)] and waits == [0.1, 0.2]


def test_an_error_that_is_not_transient_fails_at_once() -> None:
    """A non-transient error is raised on the first attempt with no wait."""
    waits: list[float] = []
    calls: list[int] = []

    def call(attempt: int) -> None:
        calls.append(attempt)
        raise ValueError("bad request")

    with pytest.raises(ValueError, match="bad request"):
        retrying(call, transient=lambda e: isinstance(e, Flaky), delay=doubling(1), max_retries=5, sleep=waits.append)
    assert calls == [1] and waits == []


def test_doubling_delays_are_capped() -> None:
    """base, 2·base, 4·base, ... never above the cap."""
    delay = doubling(1.0, max_s=5.0)
    assert [delay(Flaky(), attempt) for attempt in range(1, 6)] == [1.0, 2.0, 4.0, 5.0, 5.0]
