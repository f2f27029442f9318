"""Issue 22: `chatmem mcp` over stdio answers every line, even one it cannot read, and `recall`'s `at` refuses a
number as the CLI does. A real `chatmem mcp` process, driven line by line on its stdin and stdout (the SDK's client
would refuse to send these lines at all)."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from staging.archive import open_archive
from staging.ledger import open_staging

ROOT = Path(__file__).resolve().parents[1]
INIT = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}


class Wire:
    """A `chatmem mcp` process: write one line, read the next reply."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self.process = process

    def send(self, line: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line.rstrip(b"\n") + b"\n")
        self.process.stdin.flush()

    def reply(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()  # bounded by the fixture's timeout: the process is killed then
        assert line, "the server closed stdout instead of answering"
        return dict(json.loads(line))

    def ask(self, message: dict[str, Any]) -> dict[str, Any]:
        self.send(json.dumps(message).encode())
        return self.reply()


@pytest.fixture
def wire(tmp_path: Path) -> Iterator[Wire]:
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    open_archive(data_dir / "archive.db").close()  # an empty memory: enough to serve, and to refuse arguments
    open_staging(data_dir / "staging.db").close()
    command = [sys.executable, "-m", "flows.cli", "--data-dir", str(data_dir), "-q", "mcp"]
    process = subprocess.Popen(
        command, cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    killer = threading.Timer(120, process.kill)  # a server that never answers fails, not hangs
    killer.start()
    try:
        connection = Wire(process)
        assert connection.ask(INIT)["result"]["serverInfo"]["name"] == "chatmem"
        connection.send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode())
        yield connection
    finally:
        killer.cancel()
        process.kill()
        process.wait()


def test_an_unreadable_line_gets_a_parse_error_and_the_server_keeps_serving(wire: Wire) -> None:
    """Not JSON, a lone surrogate the SDK's parser refuses, 100k-deep JSON: each answered with -32700 (with the
    request's id when it has one), and a later request is still answered."""
    wire.send(b"this is not json")
    reply = wire.reply()
    assert reply["id"] is None and reply["error"]["code"] == -32700 and reply["error"]["message"], reply
    surrogate = b'{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "topics", "arguments": '
    wire.send(surrogate + b'{"note": "\\ud800"}}}')
    reply = wire.reply()
    assert reply["id"] == 7 and reply["error"]["code"] == -32700, reply
    wire.send(b"[" * 100_000 + b"]" * 100_000)
    reply = wire.reply()
    assert reply["id"] is None and reply["error"]["code"] == -32700, reply
    assert "result" in wire.ask({"jsonrpc": "2.0", "id": 8, "method": "tools/list"})


def test_an_object_as_id_gets_an_invalid_request_error(wire: Wire) -> None:
    """The SDK read it as a notification and never answered; now: -32600 with a null id."""
    reply = wire.ask({"jsonrpc": "2.0", "id": {"a": 1}, "method": "tools/list"})
    assert reply["id"] is None and reply["error"]["code"] == -32600, reply
    assert "id must be a string or an integer" in reply["error"]["message"]


def test_recall_refuses_a_number_as_at(wire: Wire) -> None:
    """`at: 12345` is a tool error naming `at`, not the memory as of 1970-01-01 (the CLI refuses it too)."""
    call = {"name": "recall", "arguments": {"query": "garden", "at": 12345}}
    reply = wire.ask({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": call})
    result = reply["result"]
    assert result["isError"] is True, reply
    text = result["content"][0]["text"]
    assert text.startswith("invalid arguments to recall: at:") and "not a number" in text, text
