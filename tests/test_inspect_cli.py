"""`chatmem inspect` before it serves: usage errors and an empty data dir; its search answered in-process (the
browser: tests/test_browser.py); `staging show|export` usage errors."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from click.testing import CliRunner
from inspect_support import SEARCH_WORD, Inspected

from flows.cli import cli
from flows.inspect_server import HOST, bind, build


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
    assert result.exit_code == 1 and f"chatmem --data-dir {tmp_path / 'none'} run EXPORT" in result.output
    assert "Example:" in runner.invoke(cli, ["inspect", "--help"]).output


def test_without_a_port_the_server_binds_a_free_loopback_port() -> None:
    """No --port: the socket is on 127.0.0.1 (never 0.0.0.0) at a port the OS chose."""
    sock = bind(None)
    try:
        host, port = sock.getsockname()
        assert host == "127.0.0.1" and port > 0
    finally:
        sock.close()


def test_an_unknown_run_id_is_a_one_line_usage_error(ingest_only: Inspected, tmp_path: Path) -> None:
    """`staging export` and `staging show` with --run-id naming no run: exit 2, one line, no file; a known run
    id still works."""
    base = ["--data-dir", str(ingest_only.settings.data_dir), "staging"]
    out = tmp_path / "files.csv"
    runner = CliRunner()
    for command in (["export", "ingest_files", "--format", "csv", "--out", str(out)], ["show", "ingest_files"]):
        result = runner.invoke(cli, [*base, *command, "--run-id", "r-nope"])
        lines = [line for line in result.output.splitlines() if line.strip()]
        assert result.exit_code == 2, result.output
        said = f"error: unknown run id 'r-nope'; list runs with: chatmem --data-dir {base[1]} staging runs"
        assert lines == [said], result.output
        assert not out.exists()
    known = runner.invoke(
        cli, [*base, "export", "ingest_files", "--format", "csv", "--out", str(out), "--run-id", ingest_only.run_id]
    )
    assert known.exit_code == 0 and out.exists(), known.output


def test_search_messages_takes_any_text(ingest_only: Inspected) -> None:
    """The "Search messages" query and the messages table's search box answer 200 for text FTS5 cannot parse
    (a stray quote, a lone AND, c++, a:b) and still find the one message with the search word."""
    settings = ingest_only.settings
    ds = build(settings.archive_path, settings.staging_path)

    async def get(path: str, **params: str) -> Any:
        return await ds.client.get(path + "?" + urlencode(params | {"_shape": "array"}))

    async def ask() -> dict[str, tuple[int, Any]]:
        await ds.invoke_startup()
        answers = {}
        for text in ('foo"', "AND", "c++", "a:b", f"{SEARCH_WORD} bakers", f'"{SEARCH_WORD}'):
            for where, response in (
                ("query", await get("/archive/search_messages.json", q=text)),
                ("table", await get("/archive/messages.json", _search=text)),
            ):
                answers[f"{where} {text}"] = (response.status_code, response.json())
        return answers

    answers = asyncio.run(ask())
    assert {key: status for key, (status, _) in answers.items() if status != 200} == {}
    for where in ("query", "table"):
        for text in (f"{SEARCH_WORD} bakers", f'"{SEARCH_WORD}'):
            assert [row["uuid"] for row in answers[f"{where} {text}"][1]] == ["baking-0:baking-0-0"]
