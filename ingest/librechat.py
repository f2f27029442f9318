"""Parsers for two self-hosted chat UIs: LibreChat and Chatbot UI exports.

LibreChat exports one conversation per file:

    {"conversationId", "title", "endpoint", "branches", "recursive", "options",
     "messages": [{"messageId", "parentMessageId", "sender", "isCreatedByUser", "text", "createdAt",
                   "content"?: [{"type": "text" | "think" | "tool_call" | ...}], "children"?: [...]}]}

With `recursive: true` each message's replies are nested under `children`; otherwise the list is flat and
`parentMessageId` links it (all branches when `branches: true`). Both shapes are walked the same way: a
nested message without a `parentMessageId` takes the enclosing message as parent. The all-zero root id
is not a message. The file holds a single conversation, so it is read whole (its size is that of one
conversation); there is no current-leaf field, so the active path ends at the latest leaf.

Chatbot UI exports (version 2+) are `{"version", "history": [{"id", "name", "messages": [{"role",
"content"}]}], "folders", "prompts"}`; version 1 was the bare `history` list. Only the conversations are
read: folders and prompt templates hold no messages, and a conversation's system `prompt` is a setting, not
a message. Messages have no ids or times, so their ids are "<conversation id>:<index>" and they form a
chain in list order.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, BinaryIO

from contracts.errors import MalformedExportError
from contracts.records import ExportConversation, QuarantineRecord, Role
from ingest.detect import json_kind, peek_start, raw_json
from ingest.jsonstream import TOO_DEEP_MESSAGE, TooDeep, guard_depth, iter_json_items, too_deep_link
from ingest.timestamps import to_utc
from ingest.tree import DraftMessage, build_thread

ROOT_SENTINEL = "00000000-0000-0000-0000-000000000000"
_CHATBOTUI_ROLES: dict[str, Role] = {"user": "user", "assistant": "assistant", "system": "system"}


def parse_librechat(stream: BinaryIO, *, name: str) -> Iterator[ExportConversation | QuarantineRecord]:
    """Yield the file's one conversation, after its quarantine rows."""
    for document in iter_json_items(stream, "", name=name):
        if not isinstance(document, dict) or not isinstance(document.get("messages"), list):
            found = "an object without a messages list" if isinstance(document, dict) else json_kind(document)
            problem = f"a LibreChat export is an object with a messages list, found {found}"
            raise MalformedExportError(name, problem)
        yield from guard_depth(_librechat_conversation(document), "conversation")


def _librechat_conversation(document: dict[str, Any]) -> Iterator[ExportConversation | QuarantineRecord]:
    conversation_id = document.get("conversationId")
    if not isinstance(conversation_id, str) or not conversation_id:
        yield _quarantine("conversation", "conversation has no conversationId", document)
        return
    drafts: list[DraftMessage] = []
    # (locator, message, parent from the nesting) depth first, in file order, without recursion
    stack: list[tuple[str, Any, str | None]] = [
        (f"messages[{i}]", m, None) for i, m in reversed(list(enumerate(document["messages"])))
    ]
    linked = False  # any parent id, the root id included, or any nesting: the export has a tree
    passed_over: dict[str, str | None] = {}  # messages lost to nesting that stay links of the chain
    while stack:
        locator, message, enclosing = stack.pop()
        if enclosing is not None or (isinstance(message, dict) and message.get("parentMessageId")):
            linked = True
        parent: str | None = None  # of its nested replies
        try:
            draft: DraftMessage | str = _librechat_draft(message, enclosing)
            parent = None if isinstance(draft, str) else draft.uuid
        except RecursionError:  # a part nested thousands of levels deep: this message only is lost
            draft = TOO_DEEP_MESSAGE
            link = too_deep_link(message, "messageId", "parentMessageId", ROOT_SENTINEL)
            for uuid, up in link.items():
                passed_over[uuid] = up or enclosing
                parent = uuid
        if isinstance(draft, str):
            yield _quarantine(locator, draft, message, conversation_id)
        else:
            drafts.append(draft)
        children = message.get("children") if isinstance(message, dict) else None
        if isinstance(children, list):  # a bad message's replies are still messages: kept, as roots
            stack.extend((f"{locator}.children[{i}]", c, parent) for i, c in reversed(list(enumerate(children))))
    if not linked:
        _chain(drafts)  # an export without parent ids: list order is the only order there is
    thread = build_thread(conversation_id, drafts, structural_parents=passed_over, locator="")
    yield from thread.quarantined
    times = [m.created_at for m in thread.messages if m.created_at is not None]
    title = document.get("title")
    yield ExportConversation(
        id=conversation_id,
        title=title if isinstance(title, str) else None,
        created_at=min(times, default=None),
        updated_at=max(times, default=None),
        current_node=thread.current_node,
        messages=thread.messages,
    )


def _librechat_draft(message: object, enclosing: str | None) -> DraftMessage | str:
    if not isinstance(message, dict):
        return f"message is a JSON {json_kind(message)}, not an object"
    uuid = message.get("messageId")
    if not isinstance(uuid, str) or not uuid:
        return "message has no messageId"
    parent = message.get("parentMessageId") or enclosing
    if parent is not None and not isinstance(parent, str):
        return f"parentMessageId is a JSON {json_kind(parent)}, not an id"
    sender = message.get("sender")
    by_user = message.get("isCreatedByUser")
    if not isinstance(by_user, bool):
        by_user = isinstance(sender, str) and sender.lower() == "user"
    text, content_type, raw = _librechat_text(message)
    return DraftMessage(
        uuid=uuid,
        parent_ref=None if parent in (None, ROOT_SENTINEL) else parent,
        role="user" if by_user else "assistant",
        author=None if by_user or not isinstance(sender, str) else sender,
        content_type=content_type,
        text=text,
        created_at=to_utc(message.get("createdAt")),
        raw=raw,
        source_json=message,
    )


def _librechat_text(message: dict[str, Any]) -> tuple[str, str, str | None]:
    """`text`, or when it is empty the `content` parts (agents' messages): text, think, tool calls."""
    text = message.get("text")
    parts = message.get("content")
    if (isinstance(text, str) and text) or not isinstance(parts, list) or not parts:
        return (text if isinstance(text, str) else ""), "text", None
    pieces: list[str] = []
    kinds: set[str] = set()
    unknown: list[Any] = []
    for part in parts:
        kind = part.get("type") if isinstance(part, dict) else None
        kinds.add(kind if isinstance(kind, str) else "unknown")
        value = part.get(kind) if isinstance(part, dict) and isinstance(kind, str) else None
        if kind == "text" and isinstance(value, dict):
            value = value.get("value")  # the assistants API shape: {"text": {"value": ...}}
        if kind == "think" and isinstance(value, str):
            pieces.append(f"[thinking]\n{value}\n[/thinking]")  # closed, as ingest/claude.py renders it
        elif kind == "tool_call" and isinstance(value, dict):
            pieces.append(f"[tool_call {value.get('name', '')}] {json.dumps(value, ensure_ascii=False)}")
        elif isinstance(value, str):
            pieces.append(value)
        else:
            unknown.append(part)
    raw = json.dumps(unknown, ensure_ascii=False) if unknown else None
    return "\n\n".join(p for p in pieces if p), "+".join(sorted(kinds)), raw


def parse_chatbotui(stream: BinaryIO, *, name: str) -> Iterator[ExportConversation | QuarantineRecord]:
    """Yield each Chatbot UI conversation (after its quarantine rows) in file order."""
    first, replay = peek_start(stream)
    prefix = "item" if first == b"[" else "history.item"
    for index, record in enumerate(iter_json_items(replay, prefix, name=name)):
        if isinstance(record, TooDeep):
            loaded = record.load()  # read without recursion: the conversation loses only the deep message
            if not isinstance(loaded, dict):
                yield record.quarantine(f"history[{index}]")
                continue
            record = loaded
        yield from guard_depth(_chatbotui_conversation(record, f"history[{index}]"), f"history[{index}]")


def _chatbotui_conversation(record: object, locator: str) -> Iterator[ExportConversation | QuarantineRecord]:
    if not isinstance(record, dict):
        yield _quarantine(locator, f"conversation is a JSON {json_kind(record)}, not an object", record)
        return
    conversation_id = record.get("id")
    messages = record.get("messages")
    if not isinstance(conversation_id, str) or not conversation_id or not isinstance(messages, list):
        yield _quarantine(locator, "conversation has no id or no messages list", record)
        return
    drafts: list[DraftMessage] = []
    for index, message in enumerate(messages):
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(content, str):
            reason = TOO_DEEP_MESSAGE if _too_deep(content) else "message is not an object with a string content"
            yield _quarantine(f"{locator}.messages[{index}]", reason, message, conversation_id)
            continue
        role = message.get("role")
        kind = message.get("type")
        drafts.append(
            DraftMessage(
                uuid=f"{conversation_id}:{index}",
                parent_ref=None,
                role=_CHATBOTUI_ROLES.get(role, "other") if isinstance(role, str) else "other",
                author=role if isinstance(role, str) and role not in _CHATBOTUI_ROLES else None,
                content_type=kind if isinstance(kind, str) else "text",
                text=content,
                created_at=None,
                source_json=message,
            )
        )
    _chain(drafts)
    thread = build_thread(conversation_id, drafts, locator=f"{locator}.")
    yield from thread.quarantined
    title = record.get("name")
    yield ExportConversation(
        id=conversation_id,
        title=title if isinstance(title, str) else None,
        created_at=None,
        updated_at=None,
        current_node=thread.current_node,
        messages=thread.messages,
    )


def _too_deep(value: object) -> bool:
    try:
        json.dumps(value)
    except RecursionError:
        return True
    except (TypeError, ValueError):
        return False
    return False


def _chain(drafts: list[DraftMessage]) -> None:
    previous: str | None = None
    for draft in drafts:
        draft.parent_ref = previous
        previous = draft.uuid


def _quarantine(locator: str, reason: str, record: object, conversation_id: str | None = None) -> QuarantineRecord:
    raw = raw_json(record)
    return QuarantineRecord(locator=locator, reason=reason, raw=raw, conversation_id=conversation_id)
