"""The guard that refuses real model calls in tests (pydantic-ai's ALLOW_MODEL_REQUESTS = False idea).

A test module that talks to a model endpoint binds `no_real_model_requests` at module level (it is autouse):

    from tests import llm_guard
    no_real_model_requests = llm_guard.no_real_model_requests
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any

import pytest


def _is_loopback(host: str) -> bool:
    return host in ("localhost", "::1") or host.startswith("127.")


@pytest.fixture(autouse=True)
def no_real_model_requests(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[object]]:
    """Refuse model calls that would leave the machine (pydantic-ai's ALLOW_MODEL_REQUESTS = False).

    The SDK's default endpoint becomes a closed loopback port, no API key is inherited from the shell, and any
    socket connect to a non-loopback host is refused and fails the test. A test that really means to call a
    model asks for the `allow_model_requests` fixture. Yields the refused addresses.
    """
    reached: list[object] = []
    if "allow_model_requests" in request.fixturenames:
        yield reached
        return
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # discard port: connection refused at once
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    original = socket.socket.connect

    def guarded(self: socket.socket, address: Any) -> None:
        if isinstance(address, tuple) and not _is_loopback(str(address[0])):
            reached.append(address)
            raise ConnectionRefusedError(f"test tried to reach {address}: only loopback is allowed in tests")
        original(self, address)

    monkeypatch.setattr(socket.socket, "connect", guarded)
    yield reached
    assert not reached, f"a test tried to reach non-loopback hosts: {reached}"


@pytest.fixture
def allow_model_requests() -> None:
    """Opt out of `no_real_model_requests` (for opt-in tests against a real model server)."""
