"""flows/local_api.py: the wait for a loopback API server's health check, against real processes."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from flows import local_api

# A real HTTP server on 127.0.0.1 that answers /api/health after a short start, as Prefect's does.
HEALTH_SERVER = """
import http.server, sys, time
time.sleep(0.3)
class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200 if self.path == "/api/health" else 404)
        self.end_headers()
        self.wfile.write(b"true")
    def log_message(self, *args):
        pass
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
"""


def _start(code: str, *args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", code, *args])


def test_free_port_can_be_bound() -> None:
    import socket

    port = local_api.free_port()
    with socket.socket() as server:
        server.bind(("127.0.0.1", port))  # nothing holds it
    assert 1024 <= port <= 65535


def test_wait_healthy_returns_once_the_server_answers() -> None:
    port = local_api.free_port()
    process = _start(HEALTH_SERVER, str(port))
    try:
        started = time.monotonic()
        local_api.wait_healthy(process, f"http://127.0.0.1:{port}/api", timeout_s=30, poll_s=0.05)
        assert process.poll() is None
        assert time.monotonic() - started >= 0.3  # it waited for the server's start
    finally:
        process.terminate()
        process.wait()


def test_a_server_that_exits_is_reported_with_its_code() -> None:
    port = local_api.free_port()
    process = _start("import sys; sys.exit(3)")
    with pytest.raises(local_api.NotReady) as failure:
        local_api.wait_healthy(process, f"http://127.0.0.1:{port}/api", timeout_s=30, poll_s=0.05)
    assert failure.value.returncode == 3
    assert str(failure.value) == "exited with code 3"


def test_a_server_that_never_answers_times_out() -> None:
    port = local_api.free_port()
    process = _start("import time; time.sleep(60)")
    try:
        started = time.monotonic()
        with pytest.raises(local_api.NotReady) as failure:
            local_api.wait_healthy(process, f"http://127.0.0.1:{port}/api", timeout_s=0.5, poll_s=0.05)
        assert failure.value.returncode is None
        assert f"not answering on http://127.0.0.1:{port}/api" in str(failure.value)
        assert time.monotonic() - started < 10
    finally:
        process.kill()
        process.wait()


def test_a_timeout_of_zero_allows_no_wait_even_for_a_server_that_is_up() -> None:
    port = local_api.free_port()
    process = _start(HEALTH_SERVER, str(port))
    try:
        local_api.wait_healthy(process, f"http://127.0.0.1:{port}/api", timeout_s=30, poll_s=0.05)  # it is up
        with pytest.raises(local_api.NotReady) as failure:
            local_api.wait_healthy(process, f"http://127.0.0.1:{port}/api", timeout_s=0)
        assert failure.value.returncode is None
    finally:
        process.terminate()
        process.wait()
