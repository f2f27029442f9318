"""The Claude parser, on every real Claude sample we have and on small inputs built for one behaviour each."""

from __future__ import annotations

import io
import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from contracts.errors import MalformedExportError
from contracts.records import ExportConversation, QuarantineRecord
from ingest.claude import ROOT_SENTINEL, parse

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "exports" / "claude"
REAL_SAMPLES = [
    FIXTURES / "claude-to-sqlite" / "example.json",
    FIXTURES / "claude-to-sqlite" / "artifacts.json",
    FIXTURES / "claude-chat-viewer" / "claude-bakery-chat.json",
]


def _parse_bytes(data: bytes) -> tuple[list[ExportConversation], list[QuarantineRecord]]:
    conversations: list[ExportConversation] = []
    quarantined: list[QuarantineRecord] = []
    for item in parse(io.BytesIO(data), name="conversations.json"):
        (conversations if isinstance(item, ExportConversation) else quarantined).append(item)  # type: ignore[arg-type]
    return conversations, quarantined


def _conversation(messages: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {
        "uuid": "c1",
        "name": "t",
        "created_at": "2024-10-01T00:00:00Z",
        "chat_messages": messages,
        **extra,
    }


def _message(uuid: str, sender: str = "human", minute: int | None = 0, **extra: Any) -> dict[str, Any]:
    created = None if minute is None else f"2024-10-01T00:{minute:02d}:00Z"
    return {"uuid": uuid, "text": f"text of {uuid}", "sender": sender, "created_at": created, **extra}


def assert_thread_invariants(conversation: ExportConversation) -> None:
    """seq is 0..n-1 in order; the active messages form a parent chain from a root to current_node."""
    messages = conversation.messages
    assert [m.seq for m in messages] == list(range(len(messages)))
    ids = {m.uuid for m in messages}
    assert all(m.parent_id is None or m.parent_id in ids for m in messages)
    active = [m for m in messages if m.is_active]
    assert messages[: len(active)] == active  # the active path comes first
    if active:
        assert active[0].parent_id is None
        assert all(child.parent_id == parent.uuid for parent, child in itertools.pairwise(active))
        assert conversation.current_node == active[-1].uuid


@pytest.mark.parametrize("path", REAL_SAMPLES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_message_of_a_real_sample_is_parsed_and_none_quarantined(path: Path) -> None:
    """Messages parsed + quarantined equals the count plain json finds; nothing is quarantined."""
    document = json.loads(path.read_bytes())
    records = document if isinstance(document, list) else [document]
    expected = sum(len(record["chat_messages"]) for record in records)

    conversations, quarantined = _parse_bytes(path.read_bytes())

    assert quarantined == []
    assert sum(len(c.messages) for c in conversations) + len(quarantined) == expected
    assert [c.id for c in conversations] == [r["uuid"] for r in records]
    assert [c.title for c in conversations] == [r["name"] for r in records]
    for conversation, record in zip(conversations, records, strict=True):
        assert_thread_invariants(conversation)
        texts = {m.uuid: m.text for m in conversation.messages}
        for message in record["chat_messages"]:
            for attachment in message.get("attachments") or []:
                if attachment.get("extracted_content"):
                    assert attachment["extracted_content"] in texts[message["uuid"]]


def test_single_conversation_object_follows_parent_uuids_and_current_leaf() -> None:
    """The web-API sample keeps its parent links, the root sentinel is no parent, the leaf is active."""
    path = FIXTURES / "claude-chat-viewer" / "claude-bakery-chat.json"
    record = json.loads(path.read_bytes())

    (conversation,), _ = _parse_bytes(path.read_bytes())

    parents = {m.uuid: m.parent_id for m in conversation.messages}
    for message in record["chat_messages"]:
        expected = message["parent_message_uuid"]
        assert parents[message["uuid"]] == (None if expected == ROOT_SENTINEL else expected)
    assert conversation.current_node == record["current_leaf_message_uuid"]
    assert all(m.is_active for m in conversation.messages)


def test_content_blocks_are_rendered_instead_of_the_empty_text_field() -> None:
    """Messages whose `text` is empty get their text from the `content` blocks (bakery sample)."""
    path = FIXTURES / "claude-chat-viewer" / "claude-bakery-chat.json"
    record = json.loads(path.read_bytes())
    (conversation,), _ = _parse_bytes(path.read_bytes())
    texts = {m.uuid: m.text for m in conversation.messages}
    for message in record["chat_messages"]:
        assert message["text"] == ""
        blocks = [b["text"] for b in message["content"] if b["type"] == "text"]
        assert texts[message["uuid"]] == "\n\n".join(blocks)
    assert {m.content_type for m in conversation.messages} == {"text"}


def test_messages_without_parent_ids_chain_in_time_order_not_list_order() -> None:
    """artifacts.json lists a later message first; the chain follows created_at (stable for equal times)."""
    path = FIXTURES / "claude-to-sqlite" / "artifacts.json"
    (record,) = json.loads(path.read_bytes())
    by_time = [m["uuid"] for m in sorted(record["chat_messages"], key=lambda m: m["created_at"])]
    assert by_time != [m["uuid"] for m in record["chat_messages"]]  # the sample really is out of order

    (conversation,), _ = _parse_bytes(path.read_bytes())

    assert [m.uuid for m in conversation.messages] == by_time
    assert [m.parent_id for m in conversation.messages] == [None, *by_time[:-1]]
    assert [m.role for m in conversation.messages[:2]] == ["user", "assistant"]


def test_messages_without_times_or_parents_chain_in_list_order() -> None:
    """With no created_at to sort by, list order is the chain."""
    messages = [
        _message("b", minute=None),
        _message("a", "assistant", minute=None),
        _message("c", minute=None),
    ]
    (conversation,), _ = _parse_bytes(json.dumps([_conversation(messages)]).encode())
    assert [(m.uuid, m.parent_id) for m in conversation.messages] == [("b", None), ("a", "b"), ("c", "a")]


def test_thinking_tool_use_and_tool_result_blocks_render_deterministically() -> None:
    """Blocks render in order with their markers; content_type is the sorted distinct block types."""
    content = [
        {"type": "thinking", "thinking": "Let me check.", "summaries": []},
        {"type": "text", "text": "Searching."},
        {"type": "tool_use", "name": "web_search", "input": {"query": "dal", "limit": 3}},
        {"type": "tool_result", "name": "web_search", "content": [{"type": "text", "text": "Dal recipe"}]},
        {"type": "text", "text": "Found it."},
    ]
    message = _message("m", "assistant", content=content)
    (conversation,), _ = _parse_bytes(json.dumps([_conversation([message])]).encode())
    (parsed,) = conversation.messages
    assert parsed.text == (
        "[thinking]\nLet me check.\n[/thinking]\n\nSearching.\n\n"
        '[tool_use web_search] {"limit": 3, "query": "dal"}\n\n[tool_result web_search]\nDal recipe\n[/tool_result]'
        "\n\nFound it."
    )
    assert parsed.content_type == "text+thinking+tool_result+tool_use"
    assert parsed.raw is None


def test_unknown_block_keeps_its_text_and_its_raw_json() -> None:
    """A block type the parser does not know is not dropped: best-effort text, raw JSON kept."""
    content = [
        {"type": "text", "text": "Hi"},
        {"type": "voice_note", "text": "spoken"},
        {"type": "token_budget"},
        {"type": "audio_note", "transcript": "buy milk", "duration": 3},
    ]
    (conversation,), _ = _parse_bytes(json.dumps([_conversation([_message("m", content=content)])]).encode())
    (parsed,) = conversation.messages
    assert parsed.text == "Hi\n\nspoken\n\nbuy milk"  # an unknown block's strings stay searchable
    assert parsed.content_type == "audio_note+text+token_budget+voice_note"
    assert parsed.raw is not None
    assert json.loads(parsed.raw) == content[1:]


def test_attachment_extracted_content_is_appended_under_its_file_name() -> None:
    """Attachment text follows the message text with a header; content_type says an attachment was added."""
    attachments = [{"file_name": "notes.txt", "file_type": "txt", "extracted_content": "line one\nline two"}]
    message = _message("m", attachments=attachments, files=[{"file_name": "photo.png"}])
    (conversation,), _ = _parse_bytes(json.dumps([_conversation([message])]).encode())
    (parsed,) = conversation.messages
    assert parsed.text == "text of m\n\n[attachment notes.txt]\nline one\nline two"
    assert parsed.content_type == "attachment+text"


def test_roles_map_human_to_user_and_keep_an_unknown_sender_as_author() -> None:
    """human → user, assistant → assistant, anything else → other with the sender as author."""
    messages = [_message("a", "human", 0), _message("b", "assistant", 1), _message("c", "system-bot", 2)]
    (conversation,), _ = _parse_bytes(json.dumps([_conversation(messages)]).encode())
    assert [(m.role, m.author) for m in conversation.messages] == [
        ("user", None),
        ("assistant", None),
        ("other", "system-bot"),
    ]


def test_a_bad_message_is_quarantined_and_the_rest_of_its_conversation_arrives() -> None:
    """A message with no uuid and one that is not an object are quarantined by index; the chain skips them."""
    messages = [_message("a", minute=0), {"text": "no uuid", "sender": "human"}, 7, _message("b", minute=3)]
    (conversation,), quarantined = _parse_bytes(json.dumps([_conversation(messages)]).encode())
    assert [(q.locator, q.conversation_id) for q in quarantined] == [
        ("conversations[0].chat_messages[1]", "c1"),
        ("conversations[0].chat_messages[2]", "c1"),
    ]
    assert "no uuid" in quarantined[0].reason and json.loads(quarantined[0].raw)["text"] == "no uuid"
    assert [(m.uuid, m.parent_id) for m in conversation.messages] == [("a", None), ("b", "a")]


def test_a_bad_conversation_is_quarantined_and_the_next_one_arrives() -> None:
    """A conversation that is not an object or has no uuid becomes one quarantine row."""
    records = [123, {"name": "no uuid", "chat_messages": []}, _conversation([_message("a")])]
    conversations, quarantined = _parse_bytes(json.dumps(records).encode())
    assert [q.locator for q in quarantined] == ["conversations[0]", "conversations[1]"]
    assert [c.id for c in conversations] == ["c1"]


def test_a_conversation_with_no_messages_is_still_a_conversation() -> None:
    """Empty conversations are kept (they are records of the export), with no active leaf."""
    (conversation,), quarantined = _parse_bytes(json.dumps([_conversation([])]).encode())
    assert conversation.messages == [] and conversation.current_node is None and quarantined == []


def test_truncated_export_yields_complete_conversations_then_raises() -> None:
    """A file cut inside the second conversation gives the first one, then MalformedExportError."""
    records = [
        *json.loads((FIXTURES / "claude-to-sqlite" / "example.json").read_bytes()),
        *json.loads((FIXTURES / "claude-to-sqlite" / "artifacts.json").read_bytes()),
    ]
    data = json.dumps(records).encode()
    cut = data[: data.index(records[1]["uuid"].encode()) + 500]
    seen: list[str] = []
    with pytest.raises(MalformedExportError, match=r"conversations\.json"):
        for item in parse(io.BytesIO(cut), name="conversations.json"):
            assert isinstance(item, ExportConversation)
            seen.append(item.id)
    assert seen == [records[0]["uuid"]]


def test_a_utf8_bom_before_the_json_is_accepted() -> None:
    """Windows tools write a byte-order mark; the export still parses."""
    data = b"\xef\xbb\xbf\r\n" + (FIXTURES / "claude-to-sqlite" / "example.json").read_bytes()
    conversations, quarantined = _parse_bytes(data)
    assert len(conversations) == 1 and len(conversations[0].messages) == 2 and quarantined == []


@pytest.mark.parametrize("data", [b"", b"  \n", b'"a string"'], ids=["empty", "blank", "scalar"])
def test_an_empty_or_scalar_file_is_a_malformed_export(data: bytes) -> None:
    """Nothing to parse is a clear one-line error naming the file."""
    with pytest.raises(MalformedExportError, match=r"^conversations\.json: "):
        _parse_bytes(data)


def test_a_duplicate_message_uuid_is_quarantined_with_its_raw_json_cut_to_about_1_mb() -> None:
    """The second message with a uuid is quarantined; a huge record's raw JSON is truncated, not unbounded."""
    huge = "x" * 1_500_000
    messages = [_message("a", minute=0), {**_message("a", minute=1), "text": huge}, _message("b", minute=2)]
    (conversation,), quarantined = _parse_bytes(json.dumps([_conversation(messages)]).encode())
    (duplicate,) = quarantined
    assert duplicate.locator == "conversations[0].message[a]"
    assert "duplicate message id 'a'" in duplicate.reason
    assert 1_000_000 < len(duplicate.raw) < 1_000_100 and duplicate.raw.endswith("characters in all]")
    assert [m.uuid for m in conversation.messages] == ["a", "b"]


def test_the_text_field_is_kept_when_the_blocks_render_nothing() -> None:
    """Blocks with no text of their own (token_budget) do not hide a non-empty `text` field."""
    message = _message("m", content=[{"type": "token_budget"}])
    (conversation,), _ = _parse_bytes(json.dumps([_conversation([message])]).encode())
    (parsed,) = conversation.messages
    assert parsed.text == "text of m" and parsed.content_type == "text+token_budget"


def test_an_unknown_block_of_only_its_times_says_nothing_and_the_message_keeps_its_text() -> None:
    """Claude's blocks carry start/stop timestamps: an unknown block holding only those (and its type) gives no text,
    so a message of such blocks keeps its own `text` (the timestamps were its text instead, the words lost); one
    whose strings are only guessed at (no text or content of its own) keeps the message's `text` before them."""
    times = {"start_timestamp": "2025-03-01T10:00:00.000000Z", "stop_timestamp": "2025-03-01T10:00:02.000000Z"}
    content = [{"type": "token_budget", **times, "flags": None}]
    (conversation,), _ = _parse_bytes(json.dumps([_conversation([_message("m", content=content)])]).encode())
    (parsed,) = conversation.messages
    assert parsed.text == "text of m" and parsed.raw is not None and json.loads(parsed.raw) == content
    note = [{"type": "voice_note", **times, "title": "Groceries"}]  # its strings are a guess: the text is kept too
    (conversation,), _ = _parse_bytes(json.dumps([_conversation([_message("m", content=note)])]).encode())
    assert conversation.messages[0].text == "text of m\n\nGroceries"
