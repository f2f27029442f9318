"""Issue 22, `chatmem inspect` as a real process: a rejected SQL statement costs one line of log, not ~170 of rich
traceback; a write request is a clean 405 (the server is read-only), not a 500; and every conversation link on
the messages table page leads to its conversation (they were 404s)."""

from __future__ import annotations

import hashlib
import re
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from html import unescape
from pathlib import Path

import pytest
from inspect_support import Inspected

ROOT = Path(__file__).resolve().parents[1]
OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback only


def fetch(url: str, *, data: bytes | None = None) -> tuple[int, str]:
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    try:
        with OPENER.open(request, timeout=30) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


@pytest.fixture
def server(ingest_only: Inspected, tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """`chatmem inspect --port 0`: its base URL and the file holding everything it printed."""
    log = tmp_path / "inspect.log"
    command = [sys.executable, "-m", "flows.cli", "--data-dir", str(ingest_only.settings.data_dir), "inspect"]
    with log.open("w") as out:
        process = subprocess.Popen(command, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 120
        found = None
        while found is None and time.monotonic() < deadline and process.poll() is None:
            found = re.search(r"Datasette on (http://127\.0\.0\.1:\d+)/", log.read_text())
            time.sleep(0.2)
        assert found, log.read_text()
        yield found.group(1), log
    finally:
        process.terminate()
        process.wait(timeout=30)


def _printed_since(log: Path, start: int) -> list[str]:
    return [line for line in log.read_text().splitlines()[start:] if line.strip()]


def test_rejected_sql_is_answered_with_a_4xx_and_at_most_a_line_of_log(server: tuple[str, Path]) -> None:
    """A write statement and a query on a missing table: 400 each; no traceback, no more than a line each."""
    base, log = server
    start = len(log.read_text().splitlines())
    assert fetch(f"{base}/archive?sql=DELETE+FROM+messages")[0] == 400
    assert fetch(f"{base}/archive.json?sql=SELECT+*+FROM+no_such_table")[0] == 400
    assert fetch(f"{base}/no_such_database/table")[0] == 404
    time.sleep(0.5)  # let the server flush what it prints for the last request (a bound, not a timing assertion)
    printed = _printed_since(log, start)
    assert not any("Traceback" in line for line in printed) and len(printed) <= 3, printed


def test_a_write_request_is_a_clean_405_and_writes_nothing(ingest_only: Inspected, server: tuple[str, Path]) -> None:
    """POST /archive/sources/-/insert: 405 saying the server is read-only; archive.db is unchanged."""
    base, _ = server
    before = hashlib.sha256(ingest_only.settings.archive_path.read_bytes()).hexdigest()
    status, body = fetch(f"{base}/archive/sources/-/insert", data=b'{"row": {"path": "x"}}')
    assert status == 405 and "read-only" in body, (status, body)
    assert hashlib.sha256(ingest_only.settings.archive_path.read_bytes()).hexdigest() == before


def test_every_conversation_link_on_the_messages_page_leads_to_its_conversation(server: tuple[str, Path]) -> None:
    """The links are /archive/conversations/<id> (they were the tilde-encoded repr of a dict: 404)."""
    base, _ = server
    status, page = fetch(f"{base}/archive/messages")
    assert status == 200
    links = sorted({unescape(href) for href in re.findall(r'href="(/archive/conversations/[^"?#]+)"', page)})
    assert links, "the messages page links its conversations"
    for link in links:
        status, body = fetch(base + link)
        assert status == 200 and "conversations" in body, link
