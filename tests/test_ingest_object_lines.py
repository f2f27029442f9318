"""ChatGPT and Claude conversation objects written one per line (each element of an export's list through
`json.dumps`, a `.jsonl` of conversations): every conversation arrives, read through the real CLI and stage from
files under tmp_path (they were read as one object that broke at line 2, and said "cut short" with 1 of 25)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from test_ingest_stage import dump_tables, ingest, make_chatgpt_export, write_json

from flows.cli import cli

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "exports"
SHARED_EXPORT = ROOT.parent / "shared" / "data" / "exports" / "chatgpt" / "rainchinchao" / "conversations.json"


def _per_line(path: Path, records: list[Any], *, cut: int = 0) -> Path:
    data = "".join(json.dumps(record) + "\n" for record in records).encode("utf-8")
    path.write_bytes(data[: len(data) - cut] if cut else data)
    return path


def _run(data_dir: Path, path: Path, *more: str) -> Any:
    return CliRunner().invoke(cli, ["--data-dir", str(data_dir), "run", str(path), "--only", "ingest", *more])


def _archive(data_dir: Path) -> sqlite3.Connection:
    return sqlite3.connect(data_dir / "archive.db")


def _rows(archive: sqlite3.Connection) -> dict[str, list[tuple[Any, ...]]]:
    tables = dump_tables(archive)
    del tables["sources"]  # the files' bytes differ
    return tables


def _chatgpt_conversations() -> list[dict[str, Any]]:
    real = json.loads((FIXTURES / "chatgpt" / "chatgpt2graph" / "conversations.json").read_text(encoding="utf-8"))
    return [*real, *make_chatgpt_export(3)]


def test_chatgpt_conversations_one_per_line_arrive_as_from_the_list(tmp_path: Path) -> None:
    """A real conversation and three made ones, one per line: the run succeeds (exit 0, detected or with --format
    chatgpt) and the archive holds the rows the same conversations give as a JSON list."""
    conversations = _chatgpt_conversations()
    lines = _per_line(tmp_path / "conv.jsonl", conversations)
    for data_dir, more in ((tmp_path / "detected", ()), (tmp_path / "given", ("--format", "chatgpt"))):
        done = _run(data_dir, lines, *more)
        assert done.exit_code == 0, done.output
        assert "conversations written 4" in done.output and "cut short" not in done.output
    listed, _ = ingest(tmp_path / "listed", write_json(tmp_path / "list.json", conversations))
    assert _rows(_archive(tmp_path / "detected")) == _rows(listed)
    assert _rows(_archive(tmp_path / "given")) == _rows(listed)


def test_a_bad_line_is_quarantined_and_a_cut_last_line_says_cut_short(tmp_path: Path) -> None:
    """A line that is no JSON among conversation lines: quarantined as `line N` with why, the others arrive, exit 0.
    A file cut inside its last line: every line before it arrives, and the run says the file was cut short where it
    was (exit 1, docs/cli.md)."""
    conversations = _chatgpt_conversations()
    lines = [json.dumps(c) for c in conversations]
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join([*lines[:2], '{"id": "x", "mapping": ', *lines[2:]]) + "\n", encoding="utf-8")
    done = _run(tmp_path / "bad", bad)
    assert done.exit_code == 0, done.output
    assert "conversations written 4" in done.output
    [(locator, reason)] = _archive(tmp_path / "bad").execute("SELECT locator, reason FROM quarantine").fetchall()
    assert (locator, reason) == ("line 3", "invalid JSON: Expecting value at column 24")

    cut = _per_line(tmp_path / "cut.jsonl", conversations, cut=40)
    done = _run(tmp_path / "cut", cut)
    assert done.exit_code == 1, done.output
    assert "files partial 1, conversations written 3" in done.output
    assert f"cut short: {cut}: 3 complete conversation(s) arrived; the rest could not be read: truncated JSON: the" in (
        done.output
    )
    assert "the file ends inside its last line, 4 (" in done.output and "trailing garbage" not in done.output


def test_claude_conversations_one_per_line_arrive_as_from_their_files(tmp_path: Path) -> None:
    """Claude's conversations (two data-export elements and one web-API object), one per line: all three arrive with
    the rows they give as a JSON list."""
    claude = FIXTURES / "claude"
    sources = [claude / "claude-to-sqlite" / "example.json", claude / "claude-to-sqlite" / "artifacts.json"]
    conversations = [json.loads(p.read_text(encoding="utf-8"))[0] for p in sources]
    single = claude / "claude-chat-viewer" / "claude-bakery-chat.json"
    conversations.append(json.loads(single.read_text(encoding="utf-8")))
    done = _run(tmp_path / "lines", _per_line(tmp_path / "claude.jsonl", conversations))
    assert done.exit_code == 0, done.output
    assert "conversations written 3" in done.output
    listed, _ = ingest(tmp_path / "listed", write_json(tmp_path / "list.json", conversations))
    assert _rows(_archive(tmp_path / "lines")) == _rows(listed)


def test_a_real_export_of_25_conversations_one_per_line_arrives_whole(tmp_path: Path) -> None:
    """The fault as found: a real ChatGPT export of 25 conversations written one per line gave 1 and "run again
    with the whole file"; now all 25 arrive, as from the export itself."""
    if not SHARED_EXPORT.is_file():
        pytest.skip("../shared/data is absent (CI always has it)")
    conversations = json.loads(SHARED_EXPORT.read_text(encoding="utf-8"))
    assert len(conversations) == 25
    done = _run(tmp_path / "lines", _per_line(tmp_path / "conv.jsonl", conversations))
    assert done.exit_code == 0, done.output
    assert "conversations written 25" in done.output
    listed, _ = ingest(tmp_path / "listed", SHARED_EXPORT)
    assert _rows(_archive(tmp_path / "lines")) == _rows(listed)
