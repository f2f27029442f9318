"""Issue 22: JSON nested 10,000 levels deep inside one message of a Claude, LibreChat or Chatbot UI export costs
that message (one quarantine row), as it does in a ChatGPT export, not the whole conversation. Through the real
CLI and the ingest stage, one file per shape, all in one run."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from flows.cli import cli

DEEP = "[" * 10_000 + "]" * 10_000
MARK = '"DEEP-HERE"'  # replaced by DEEP once the file is JSON text


def _claude(cid: str, parents: bool) -> dict[str, Any]:
    messages: list[dict[str, Any]] = [
        {"uuid": f"{cid}-a", "sender": "human", "text": f"{cid} question", "content": []},
        {"uuid": f"{cid}-b", "sender": "assistant", "content": [{"type": "tool_use", "input": "DEEP-HERE"}]},
        {"uuid": f"{cid}-c", "sender": "human", "text": f"{cid} follow-up", "content": []},
    ]
    if parents:
        for message, parent in zip(messages, [None, f"{cid}-a", f"{cid}-b"], strict=True):
            message["parent_message_uuid"] = parent or "00000000-0000-4000-8000-000000000000"
    return {"uuid": cid, "name": f"chat {cid}", "chat_messages": messages}


def _files(base: Path) -> list[Path]:
    shapes: dict[str, Any] = {
        "claude-list.json": [_claude("cl1", parents=False), _claude("cl2", parents=True)],
        "claude-one.json": _claude("cl3", parents=True),
        "librechat.json": {
            "conversationId": "lc1",
            "title": "librechat",
            "recursive": True,
            "messages": [
                {
                    "messageId": "lc1-a",
                    "parentMessageId": "00000000-0000-0000-0000-000000000000",
                    "isCreatedByUser": True,
                    "sender": "User",
                    "text": "lc1 question",
                    "children": [
                        {
                            "messageId": "lc1-b",
                            "sender": "GPT",
                            "isCreatedByUser": False,
                            "text": "",
                            "content": [{"type": "tool_call", "tool_call": {"args": "DEEP-HERE"}}],
                            "children": [{"messageId": "lc1-c", "isCreatedByUser": True, "text": "lc1 follow-up"}],
                        }
                    ],
                }
            ],
        },
        "chatbotui-v1.json": [
            {
                "id": "cb1",
                "name": "chatbot ui",
                "messages": [
                    {"role": "user", "content": "cb1 question"},
                    {"role": "assistant", "content": "DEEP-HERE"},
                    {"role": "user", "content": "cb1 follow-up"},
                ],
            }
        ],
    }
    paths = []
    for name, data in shapes.items():
        path = base / name
        path.write_text(json.dumps(data).replace(MARK, DEEP), encoding="utf-8")
        paths.append(path)
    return paths


def test_a_deep_message_costs_that_message_only_in_every_json_format(tmp_path: Path) -> None:
    """Every conversation arrives with its other messages, in a chain that passes over the lost one (the
    follow-up's parent is the question); each lost message is one quarantine row saying it was too deep."""
    data_dir = tmp_path / "data"
    args = ["--data-dir", str(data_dir), "run", *map(str, _files(tmp_path)), "--only", "ingest"]
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    conn = sqlite3.connect(f"file:{data_dir / 'archive.db'}?mode=ro", uri=True)
    try:
        conversations = {row[0] for row in conn.execute("SELECT id FROM conversations")}
        quarantine = conn.execute("SELECT locator, reason, conversation_id FROM quarantine ORDER BY locator").fetchall()
        messages = conn.execute(
            "SELECT m.conversation_id, m.text, p.text FROM messages m LEFT JOIN messages p ON p.uuid = m.parent_id"
            " ORDER BY m.conversation_id, m.seq"
        ).fetchall()
    finally:
        conn.close()
    ids = {"cl1", "cl2", "cl3", "lc1", "cb1"}
    assert conversations == ids, (conversations, quarantine)
    assert len(quarantine) == 5, quarantine
    assert all("deeper than 1024" in reason for _, reason, _ in quarantine), quarantine
    for cid in ids:
        kept = [(text, parent) for conversation, text, parent in messages if conversation == cid]
        question = f"{cid} question"
        assert [text for text, _ in kept] == [question, f"{cid} follow-up"], (cid, kept)
        assert kept[1][1] == question, (cid, kept)  # the chain passes over the lost message
