"""A Prefect API server on a free loopback port: the port and the wait for its health check.

Three places start one: the early ephemeral API of `chatmem run` / `serve --once` (flows/early_api.py), the real
server of `chatmem serve` (flows/serve.py) and the month benchmark's server kept for the month
(benchmarks/bench_month.py). Each starts its own command with its own environment; they share these two steps.
This module imports nothing but the standard library (the early API runs before prefect is imported, and the
benchmark's process never imports it).
"""

from __future__ import annotations

import socket
import subprocess
import time
import urllib.request
from typing import Any


class NotReady(Exception):
    """The server exited before it answered (`returncode` set) or did not answer within the timeout (None)."""

    def __init__(self, url: str, timeout_s: float, returncode: int | None) -> None:
        self.url, self.timeout_s, self.returncode = url, timeout_s, returncode
        if returncode is not None:
            super().__init__(f"exited with code {returncode}")
        else:
            super().__init__(f"not answering on {url} after {timeout_s:.0f} s")


def free_port() -> int:
    """A loopback port nothing listens on now (the server binds it a moment later)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_healthy(process: subprocess.Popen[Any], api_url: str, timeout_s: float, poll_s: float = 0.5) -> None:
    """Return once `api_url`/health answers 200; NotReady when the process exits first or the time runs out."""
    # No proxy: a proxy variable in the environment must not send a loopback health check elsewhere.
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    deadline = time.monotonic() + timeout_s
    while True:
        if process.poll() is not None:
            raise NotReady(api_url, timeout_s, process.returncode)
        # The deadline before the check: a timeout of 0 allows no wait at all, whether or not the server happens
        # to be up already (a race on a busy machine otherwise; tests rely on 0 failing every time).
        if time.monotonic() >= deadline:
            raise NotReady(api_url, timeout_s, None)
        try:
            with opener.open(f"{api_url}/health", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            pass
        time.sleep(poll_s)
