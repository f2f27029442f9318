"""Faults of issue 13 that come in with the data, cases 1, 9 and 10, through the real CLI and the real stages:
JSON nested 10,000 levels deep, timestamps no export should have, escape sequences in chat text, a dump read
while it was still being written, and a FIFO where a file was expected.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from extract.offline import OfflineExtractor
from extract.types import SegmentInput, SegmentMessage
from flows.cli import cli

ESCAPE_LEFTOVER = re.compile(r"[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]|\b\d*;?\d+m|\b0m\b")
DEEP = "[" * 10_000 + "]" * 10_000
ESC_TITLE = "\x1b]0;pwned\x07\x1b[1;31mWARNING\x1b[0m"
TRICKY = "\x1b[2J\x1b[1;31mWARNING\x1b[0m the build failed on the \x1b[32mGreen Server\x1b[0m \u202eevil\u202c today"


def chatmem(*args: str | Path, data_dir: Path) -> Result:
    return CliRunner().invoke(cli, ["--data-dir", str(data_dir), *map(str, args)], catch_exceptions=False)


def chatgpt_conversation(cid: str, texts: list[str], create_time: Any = 1_700_000_000) -> dict[str, Any]:
    """A ChatGPT conversation: a root node, then one message per text, user and assistant in turn."""
    mapping: dict[str, Any] = {f"{cid}-root": {"id": f"{cid}-root", "message": None, "parent": None, "children": []}}
    parent = f"{cid}-root"
    for n, text in enumerate(texts):
        node = f"{cid}-m{n}"
        message = {
            "id": node,
            "author": {"role": "user" if n % 2 == 0 else "assistant"},
            "create_time": create_time,
            "content": {"content_type": "text", "parts": [text]},
        }
        mapping[node] = {"id": node, "message": message, "parent": parent, "children": []}
        mapping[parent]["children"].append(node)
        parent = node
    return {"id": cid, "conversation_id": cid, "title": f"chat {cid}", "create_time": 1_700_000_000,
            "mapping": mapping, "current_node": parent}  # fmt: skip


def archive_rows(data_dir: Path, sql: str) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(f"file:{data_dir / 'archive.db'}?mode=ro", uri=True)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


# ---------------------------------------------------------------- case 1: nesting


def test_json_nested_10000_deep_costs_only_the_record_it_is_in(tmp_path: Path, jsonl_export: Path) -> None:
    """A conversation that is one 10,000-deep array is one quarantine row; a message part 10,000 deep costs that
    message only; the file's other conversations and another file of the run arrive; no source is left
    importing."""
    inner = chatgpt_conversation("b", ["PLACEHOLDER", "an answer"])
    items = [
        chatgpt_conversation("a", ["first question", "first answer"]),
        DEEP,
        inner,
        chatgpt_conversation("c", ["x", "y"]),
    ]
    text = "[" + ", ".join(item if isinstance(item, str) else json.dumps(item) for item in items) + "]"
    export = tmp_path / "deep" / "conversations.json"
    export.parent.mkdir()
    export.write_text(text.replace('"PLACEHOLDER"', DEEP), encoding="utf-8")
    data_dir = tmp_path / "data"
    result = chatmem("run", export, jsonl_export, "--only", "ingest", "--json", data_dir=data_dir)
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output and "RecursionError" not in result.output
    assert len(archive_rows(data_dir, "SELECT id FROM conversations")) == 5  # a, b, c and the JSONL file's two
    texts = {row[0] for row in archive_rows(data_dir, "SELECT text FROM messages")}
    assert {"first question", "first answer", "an answer", "x", "y"} <= texts
    quarantine = archive_rows(data_dir, "SELECT locator, reason FROM quarantine ORDER BY locator")
    assert [locator for locator, _ in quarantine] == ["conversations[1]", "conversations[2].mapping[b-m0]"]
    assert all("nested deeper than 1024" in reason for _, reason in quarantine)
    assert {row[0] for row in archive_rows(data_dir, "SELECT status FROM sources")} == {"complete"}


def test_a_jsonl_line_nested_10000_deep_costs_only_that_line(tmp_path: Path) -> None:
    """A JSONL line 10,000 levels deep is one quarantine row; the lines around it arrive."""
    lines = [
        {"conversation_id": "j", "id": "j1", "role": "user", "text": "hello there"},
        None,
        {"conversation_id": "j", "id": "j3", "role": "assistant", "text": "general kenobi"},
    ]
    body = "\n".join(
        json.dumps(x) if x else '{"conversation_id": "j", "id": "j2", "text": ' + DEEP + "}" for x in lines
    )
    export = tmp_path / "deep.jsonl"
    export.write_text(body + "\n", encoding="utf-8")
    result = chatmem("run", export, "--only", "ingest", data_dir=tmp_path / "data")
    assert result.exit_code == 0, result.output
    assert len(archive_rows(tmp_path / "data", "SELECT uuid FROM messages")) == 2
    [(locator, reason)] = archive_rows(tmp_path / "data", "SELECT locator, reason FROM quarantine")
    assert locator == "line 2" and "nested deeper than 1024 levels" in reason


# ---------------------------------------------------------------- case 9: timestamps


def test_impossible_timestamps_are_dropped_and_counted_never_guessed(tmp_path: Path) -> None:
    """Year 10000 in seconds is not read as 1978 milliseconds; it, NaN, Infinity and true are stored as null,
    and the stage's notes and counts say how many and why. Real seconds and milliseconds still parse."""
    values = ["253402300800", "NaN", "Infinity", "true", "1700000000", "1700000000123"]
    export = tmp_path / "times.jsonl"
    export.write_text(
        "".join(
            f'{{"conversation_id": "t", "id": "t{n}", "role": "user", "text": "turn {n}", "created_at": {v}}}\n'
            for n, v in enumerate(values)
        ),
        encoding="utf-8",
    )
    result = chatmem("run", export, "--only", "ingest", "--json", data_dir=tmp_path / "data")
    assert result.exit_code == 0, result.output
    [ingest] = json.loads(result.stdout)["stages"]
    assert ingest["counts"]["timestamps_dropped"] == 4
    [note] = [n for n in ingest["notes"] if "dropped" in n]
    for reason in ("1 out of range for both seconds and milliseconds", "1 NaN", "1 infinity", "1 boolean"):
        assert reason in note
    stored = dict(archive_rows(tmp_path / "data", "SELECT uuid, created_at FROM messages"))
    assert [stored[f"t:t{n}"] for n in range(4)] == [None] * 4
    assert stored["t:t4"].startswith("2023-11-14T22:13:20") and stored["t:t5"].startswith("2023-11-14T22:13:20.123")


# ---------------------------------------------------------------- case 10: terminal, watch folder, FIFO


@pytest.fixture(scope="module")
def tricky(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data dir whose chat text and titles carry ANSI escapes and a right-to-left override, run to concepts."""
    base = tmp_path_factory.mktemp("tricky")
    rows = [
        {"conversation_id": "x", "conversation_title": ESC_TITLE, "id": f"x{n}", "role": role, "text": TRICKY}
        for n, role in enumerate(["user", "assistant", "user", "assistant"])
    ]
    export = base / "tricky.jsonl"
    export.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    result = chatmem("run", export, "--to", "concepts", data_dir=base / "data")
    assert result.exit_code == 0, result.output
    return base / "data"


@pytest.mark.parametrize(
    "args",
    [
        ("staging", "show", "messages"),
        ("staging", "show", "conversations"),
        ("staging", "show", "messages", "--json"),
        ("concepts", "--evidence", "3"),
        ("concepts", "--json"),
    ],
)
def test_archive_text_reaches_the_terminal_escaped(tricky: Path, args: tuple[str, ...]) -> None:
    """No control or bidi character from the archive is printed raw; text output shows them as \\x1b, \\u202e."""
    result = chatmem(*args, data_dir=tricky)
    assert result.exit_code == 0, result.output
    raw = [c for c in result.stdout if c in "\x1b\x07\u202e\u202c" or (ord(c) < 32 and c not in "\n\t")]
    assert raw == []
    if "--json" not in args and args[0] == "staging":
        assert "\\x1b" in result.stdout


def test_no_concept_title_is_made_of_escape_sequences(tricky: Path) -> None:
    """The offline extractor finds phrases in the text without its escapes: no '31mWARNING' or 'Server 0m'."""
    titles = [c["title"] for c in json.loads(chatmem("concepts", "--json", data_dir=tricky).stdout)]
    segment = SegmentInput("s", "c", None, (SegmentMessage("m", "user", TRICKY * 2, None),), "h")
    titles += [h.title for h in OfflineExtractor().extract(segment).hypotheses]
    assert titles
    assert [t for t in titles if ESCAPE_LEFTOVER.search(t)] == []


def test_a_completed_watch_folder_dump_loses_its_stale_end_of_file_row(tmp_path: Path) -> None:
    """A dump read while half-written is partial with an 'end of file' row; once complete, the row goes and
    `staging failures` is clear."""
    watch, data_dir = tmp_path / "watch", tmp_path / "data"
    watch.mkdir()
    whole = json.dumps([chatgpt_conversation(c, [f"{c} question", f"{c} answer"]) for c in ("p", "q", "r")])
    dump = watch / "conversations.json"
    dump.write_text(whole[: len(whole) * 2 // 3], encoding="utf-8")  # still being downloaded
    chatmem("serve", "--once", "--watch", watch, data_dir=data_dir)
    assert [r[0] for r in archive_rows(data_dir, "SELECT locator FROM quarantine")] == ["end of file"]
    dump.write_text(whole, encoding="utf-8")
    result = chatmem("serve", "--once", "--watch", watch, data_dir=data_dir)
    assert result.exit_code == 0, result.output
    assert archive_rows(data_dir, "SELECT locator FROM quarantine") == []
    failures = json.loads(chatmem("staging", "failures", "--json", data_dir=data_dir).stdout)
    assert failures["files"] == [] and failures["quarantine"] == []


def test_a_fifo_given_to_run_is_named_as_a_fifo(tmp_path: Path) -> None:
    """`chatmem run PIPE` says the path is a FIFO, not that there is no such file (and does not block on it)."""
    fifo = tmp_path / "dump.json"
    os.mkfifo(fifo)
    result = chatmem("run", fifo, "--only", "ingest", data_dir=tmp_path / "data")
    assert result.exit_code == 1
    assert "a FIFO (named pipe), not a regular file" in result.output and "no such file" not in result.output
