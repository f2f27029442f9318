"""`chatmem inspect` before it serves: usage errors and an empty data dir (serving: tests/test_browser.py)."""

from __future__ import annotations

import socket
from pathlib import Path

from click.testing import CliRunner
from inspect_support import Inspected

from flows.cli import cli
from flows.inspect_server import HOST, bind


def test_a_port_in_use_is_a_usage_error(ingest_only: Inspected) -> None:
    """--port that another process holds: exit 2 and a hint, before Datasette starts."""
    with socket.socket() as taken:
        taken.bind((HOST, 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        result = CliRunner().invoke(
            cli, ["--data-dir", str(ingest_only.settings.data_dir), "inspect", "--port", str(port)]
        )
    assert result.exit_code == 2 and f"cannot listen on 127.0.0.1:{port}" in result.output


def test_an_empty_data_dir_says_to_run_first_and_help_has_an_example(tmp_path: Path) -> None:
    """No databases yet: exit 1 with the command to run; --help shows an example."""
    runner = CliRunner()
    result = runner.invoke(cli, ["--data-dir", str(tmp_path / "none"), "inspect"])
    assert result.exit_code == 1 and "chatmem run EXPORT" in result.output
    assert "Example:" in runner.invoke(cli, ["inspect", "--help"]).output


def test_without_a_port_the_server_binds_a_free_loopback_port() -> None:
    """No --port: the socket is on 127.0.0.1 (never 0.0.0.0) at a port the OS chose."""
    sock = bind(None)
    try:
        host, port = sock.getsockname()
        assert host == "127.0.0.1" and port > 0
    finally:
        sock.close()
