"""LibreChat and Chatbot UI exports: every real fixture, nested and flat trees, derived ids, bad messages."""

from __future__ import annotations

import io
import itertools
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from contracts.errors import MalformedExportError
from contracts.records import ExportConversation, QuarantineRecord
from ingest.librechat import ROOT_SENTINEL, parse_chatbotui, parse_librechat

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "exports" / "librechat"
LIBRECHAT_SAMPLES = [
    FIXTURES / "librechat-export.json",
    FIXTURES / "librechat-linear.json",
    FIXTURES / "librechat-opts-nonr-branches.json",
    FIXTURES / "librechat-tree.json",
]
Parser = Callable[..., Iterator[ExportConversation | QuarantineRecord]]


def _parse(parser: Parser, data: bytes) -> tuple[list[ExportConversation], list[QuarantineRecord]]:
    conversations: list[ExportConversation] = []
    quarantined: list[QuarantineRecord] = []
    for item in parser(io.BytesIO(data), name="export.json"):
        (conversations if isinstance(item, ExportConversation) else quarantined).append(item)  # type: ignore[arg-type]
    return conversations, quarantined


def _walk(messages: list[dict[str, Any]], enclosing: str | None = None) -> Iterator[tuple[dict[str, Any], str | None]]:
    """Every message of a LibreChat export with the id of the message it is nested in (plain recursion)."""
    for message in messages:
        yield message, enclosing
        yield from _walk(message.get("children", []), message["messageId"])


def assert_thread_invariants(conversation: ExportConversation) -> None:
    """seq is 0..n-1 in order; the active messages form a parent chain from a root to current_node."""
    messages = conversation.messages
    assert [m.seq for m in messages] == list(range(len(messages)))
    ids = {m.uuid for m in messages}
    assert all(m.parent_id is None or m.parent_id in ids for m in messages)
    active = [m for m in messages if m.is_active]
    assert messages[: len(active)] == active and active[0].parent_id is None
    assert all(child.parent_id == parent.uuid for parent, child in itertools.pairwise(active))
    assert conversation.current_node == active[-1].uuid


@pytest.mark.parametrize("path", LIBRECHAT_SAMPLES, ids=lambda p: p.name)
def test_every_message_of_a_real_librechat_export_is_parsed_with_its_parent(path: Path) -> None:
    """Parsed + quarantined equals a plain recursive count; parents are parentMessageId (root id → none)."""
    document = json.loads(path.read_bytes())
    expected = list(_walk(document["messages"]))

    (conversation,), quarantined = _parse(parse_librechat, path.read_bytes())

    assert quarantined == []
    assert len(conversation.messages) + len(quarantined) == len(expected)
    assert conversation.id == document["conversationId"] and conversation.title == document["title"]
    parents = {m.uuid: m.parent_id for m in conversation.messages}
    for message, enclosing in expected:
        declared = message.get("parentMessageId") or enclosing
        assert parents[message["messageId"]] == (None if declared == ROOT_SENTINEL else declared)
    roles = {m.uuid: (m.role, m.author, m.text) for m in conversation.messages}
    for message, _ in expected:
        role = "user" if message["isCreatedByUser"] else "assistant"
        author = None if message["isCreatedByUser"] else message["sender"]
        assert roles[message["messageId"]] == (role, author, message["text"])
    assert_thread_invariants(conversation)


def test_flat_export_with_two_roots_keeps_both_and_activates_the_latest_leaf() -> None:
    """Branches without nesting: both root questions kept; the active path ends at the newest reply."""
    (conversation,), _ = _parse(parse_librechat, (FIXTURES / "librechat-opts-nonr-branches.json").read_bytes())
    roots = [m.uuid for m in conversation.messages if m.parent_id is None]
    assert len(roots) == 2
    latest = max(conversation.messages, key=lambda m: m.created_at or 0)  # type: ignore[arg-type, return-value]
    assert conversation.current_node == latest.uuid
    assert sum(m.is_active for m in conversation.messages) == 2


def test_a_bad_message_is_quarantined_and_its_nested_replies_are_kept() -> None:
    """A message without messageId is one quarantine row; its children still arrive (as roots)."""
    document = {
        "conversationId": "conv",
        "title": "t",
        "messages": [
            {"messageId": "a", "parentMessageId": ROOT_SENTINEL, "isCreatedByUser": True, "text": "q"},
            {"text": "no id", "isCreatedByUser": False, "children": [{"messageId": "c", "text": "reply"}]},
            "not an object",
        ],
    }
    (conversation,), quarantined = _parse(parse_librechat, json.dumps(document).encode())
    assert [(q.locator, q.conversation_id) for q in quarantined] == [
        ("messages[1]", "conv"),
        ("messages[2]", "conv"),
    ]
    assert {m.uuid: m.parent_id for m in conversation.messages} == {"a": None, "c": None}


def test_messages_without_any_parent_id_form_a_chain_in_list_order() -> None:
    """An export with no parent ids at all (old versions) is read as a linear conversation."""
    document = {
        "conversationId": "conv",
        "messages": [
            {"messageId": "a", "sender": "User", "text": "q"},
            {"messageId": "b", "sender": "GPT-4", "text": "r"},
        ],
    }
    (conversation,), _ = _parse(parse_librechat, json.dumps(document).encode())
    assert [(m.uuid, m.parent_id, m.role, m.author) for m in conversation.messages] == [
        ("a", None, "user", None),
        ("b", "a", "assistant", "GPT-4"),
    ]


def test_content_parts_are_rendered_when_text_is_empty() -> None:
    """Agent messages keep text in `content`: text, think, tool calls render; unknown parts go to raw."""
    content = [
        {"type": "think", "think": "Plan."},
        {"type": "text", "text": "Answer."},
        {"type": "tool_call", "tool_call": {"name": "calc", "args": "1+1", "output": "2"}},
        {"type": "image_file", "image_file": {"file_id": "f"}},
    ]
    document = {"conversationId": "c", "messages": [{"messageId": "m", "text": "", "content": content}]}
    (conversation,), _ = _parse(parse_librechat, json.dumps(document).encode())
    (message,) = conversation.messages
    assert message.text.startswith("[thinking]\nPlan.\n[/thinking]\n\nAnswer.\n\n[tool_call calc] ")
    assert message.content_type == "image_file+text+think+tool_call"
    assert message.raw is not None and json.loads(message.raw) == content[3:]


def test_a_librechat_file_without_messages_is_a_malformed_export() -> None:
    """An object with no messages list is a one-line error naming the file."""
    with pytest.raises(MalformedExportError, match=r"^export\.json: .*messages list"):
        _parse(parse_librechat, b'{"conversationId": "c"}')


def test_every_chatbot_ui_message_is_parsed_with_derived_ids_in_a_chain() -> None:
    """Chatbot UI messages have no ids: '<conversation>:<index>', each answering the previous one."""
    path = FIXTURES / "chatbotui-export.json"
    document = json.loads(path.read_bytes())
    expected = sum(len(c["messages"]) for c in document["history"])

    conversations, quarantined = _parse(parse_chatbotui, path.read_bytes())

    assert quarantined == []
    assert sum(len(c.messages) for c in conversations) + len(quarantined) == expected
    assert [(c.id, c.title) for c in conversations] == [(c["id"], c["name"]) for c in document["history"]]
    for conversation, record in zip(conversations, document["history"], strict=True):
        ids = [f"{record['id']}:{i}" for i in range(len(record["messages"]))]
        assert [m.uuid for m in conversation.messages] == ids
        assert [m.parent_id for m in conversation.messages] == [None, *ids[:-1]]
        assert [(m.role, m.text) for m in conversation.messages] == [
            (m["role"], m["content"]) for m in record["messages"]
        ]
        assert_thread_invariants(conversation)


def test_chatbot_ui_version_1_bare_list_is_parsed_too() -> None:
    """Version 1 exports were the history list alone, without the envelope."""
    history = json.loads((FIXTURES / "chatbotui-export.json").read_bytes())["history"]
    conversations, quarantined = _parse(parse_chatbotui, json.dumps(history).encode())
    assert [len(c.messages) for c in conversations] == [len(c["messages"]) for c in history]
    assert quarantined == []


def test_a_bad_chatbot_ui_message_is_quarantined_and_the_chain_skips_it() -> None:
    """A message without string content is one quarantine row; its neighbours are linked to each other."""
    history = [
        {
            "id": "c",
            "name": "n",
            "messages": [{"role": "user", "content": "q"}, 5, {"role": "assistant", "content": "r"}],
        }
    ]
    (conversation,), quarantined = _parse(parse_chatbotui, json.dumps({"version": 4, "history": history}).encode())
    assert [q.locator for q in quarantined] == ["history[0].messages[1]"]
    assert [(m.uuid, m.parent_id) for m in conversation.messages] == [("c:0", None), ("c:2", "c:0")]
