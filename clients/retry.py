"""The one retry loop of every endpoint client (LLM calls, batch jobs, embeddings, topic labels, graph writes).

    retrying(call, transient=..., delay=..., max_retries=n, on_error=...)

`call(attempt)` runs (attempt 1, 2, ...) until it returns; an error that `transient` accepts is retried after
`delay(error, attempt)` seconds, at most `max_retries` times; anything else, or the last transient error, is
raised unchanged. `on_error(error, attempt, will_retry)` sees every failed attempt before the wait: that is where
callers record a call row or log a line. What counts as transient and how long to wait stay with each client
(clients.llm.is_transient / retry_delay, clients.embedders_http.is_transient, clients.graph_errors.is_transient):
this module only owns the loop, built on tenacity.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

import tenacity

T = TypeVar("T")
ErrorHook = Callable[[BaseException, int, bool], object]


def doubling(base_s: float, max_s: float = 60.0) -> Callable[[BaseException, int], float]:
    """base, 2·base, 4·base, ... seconds before retry 1, 2, 3, ..., at most max_s (no jitter: one caller)."""

    def delay(error: BaseException, attempt: int) -> float:
        return float(min(base_s * 2.0 ** (attempt - 1), max_s))

    return delay


def retrying(
    call: Callable[[int], T],
    *,
    transient: Callable[[BaseException], bool],
    delay: Callable[[BaseException, int], float],
    max_retries: int,
    on_error: ErrorHook | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> T:
    """Run `call` with retries on transient errors (see the module docstring). Raises the last error as it was."""

    def attempt_once(state: tenacity.RetryCallState) -> T:
        number = state.attempt_number
        try:
            return call(number)
        except BaseException as error:  # KeyboardInterrupt too: the hook records the attempt, nothing retries it
            will_retry = isinstance(error, Exception) and transient(error) and number <= max_retries
            if on_error is not None:
                on_error(error, number, will_retry)
            raise

    retryer = tenacity.Retrying(
        stop=tenacity.stop_after_attempt(max_retries + 1),
        retry=tenacity.retry_if_exception(lambda error: isinstance(error, Exception) and transient(error)),
        wait=_wait(delay),
        sleep=sleep,
        reraise=True,
    )
    for attempt in retryer:
        with attempt:
            return attempt_once(attempt.retry_state)
    raise AssertionError("unreachable: tenacity returns the call's value or raises its last error")


def _wait(delay: Callable[[BaseException, int], float]) -> Callable[[tenacity.RetryCallState], float]:
    def wait(state: tenacity.RetryCallState) -> float:
        error = state.outcome.exception() if state.outcome is not None else None
        return delay(error, state.attempt_number) if error is not None else 0.0

    return wait
