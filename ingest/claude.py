"""The Claude parser: `conversations.json` from a claude.ai data export, or one conversation from the web API.

    [{"uuid", "name", "created_at", "updated_at", "account", "current_leaf_message_uuid"?,
      "chat_messages": [{"uuid", "text", "content": [{"type": "text" | "thinking" | "tool_use" | ...}],
                         "sender": "human" | "assistant", "created_at", "attachments": [{"file_name",
                         "extracted_content"}], "files": [...], "parent_message_uuid"?}]}]

The top level is a list of conversations (the data export) or a single conversation object (what the web
API returns, e.g. the claude-chat-viewer sample), or such objects one per line (ingest/object_lines.py); the first
significant byte decides. One conversation is in
memory at a time.

Text: when a message has `content` blocks they are rendered in order and joined by blank lines
(text → its text; thinking → "[thinking]\\n...\\n[/thinking]", closed so that a reader can leave the model's
private notes out: the archive keeps them, no extractor reads them, clients/prose.py; tool_use → "[tool_use NAME]
<input as JSON>"; tool_result → "[tool_result NAME]\\n<its content text>\\n[/tool_result]", closed for the same
reason; any other block → its `text` if it has one, and the raw blocks are kept in `raw`); without blocks, or when
they render nothing, the `text` field. Each attachment's `extracted_content` follows, under "[attachment
FILE_NAME]".

content_type: the distinct block types, sorted and joined by "+" ("text", "text+thinking",
"text+tool_result+tool_use"), plus "attachment" when attachment text was appended ("attachment+text").
Sorting makes the value independent of block order, so equal mixes group together downstream.

Parents: `parent_message_uuid` when any message of the conversation has one (the all-zero root sentinel
means no parent, and a message without one is a root); otherwise a linear chain. The chain follows
`created_at` when every message has one, because real exports are not always in order (claude-to-sqlite's
artifacts.json lists the 8th message first); ties and exports without times keep list order.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any, BinaryIO

from contracts.errors import MalformedExportError
from contracts.records import ExportConversation, QuarantineRecord, Role
from ingest.chatgpt_content import all_strings
from ingest.detect import json_kind, peek_start, raw_json
from ingest.jsonstream import TOO_DEEP_MESSAGE, TooDeep, guard_depth, iter_json_items, too_deep_link
from ingest.object_lines import iter_objects
from ingest.raw_skip import RawLookup, Unchanged
from ingest.timestamps import to_utc
from ingest.tree import DraftMessage, build_thread

log = logging.getLogger(__name__)

ROOT_SENTINEL = "00000000-0000-4000-8000-000000000000"
_ROLES: dict[str, Role] = {"human": "user", "user": "user", "assistant": "assistant"}


def parse(
    stream: BinaryIO, *, name: str, lookup: RawLookup | None = None
) -> Iterator[ExportConversation | QuarantineRecord | Unchanged]:
    """Yield each conversation (after its quarantine rows) in file order; with `lookup`, a list's conversation
    whose bytes the archive holds is an `Unchanged` marker (ingest/raw_skip.py).

    Raises MalformedExportError naming `name` when the JSON breaks, after every complete conversation before
    the break was yielded.
    """
    first, replay = peek_start(stream)
    if first == b"{":  # one conversation object, or conversation objects one per line
        for locator, record in iter_objects(replay, name=name):
            if isinstance(record, QuarantineRecord):
                yield record
                continue
            yield from guard_depth(parse_conversation(record, locator), locator)
    elif first == b"[":
        for index, record in enumerate(iter_json_items(replay, "item", name=name, lookup=lookup)):
            if isinstance(record, Unchanged):
                yield record
                continue
            if isinstance(record, TooDeep):
                loaded = record.load()  # read without recursion: the conversation loses only the deep message
                if not isinstance(loaded, dict):
                    yield record.quarantine(f"conversations[{index}]")
                    continue
                record = loaded
            yield from guard_depth(parse_conversation(record, f"conversations[{index}]"), f"conversations[{index}]")
    else:
        found = repr(first) if first else "an empty file"
        raise MalformedExportError(name, f"a Claude export is a JSON list or object, found {found}")


def parse_conversation(record: object, locator: str) -> Iterator[ExportConversation | QuarantineRecord]:
    """One conversation: its quarantine rows, then the conversation unless it is unusable."""
    if not isinstance(record, dict):
        yield _quarantine(locator, f"conversation is a JSON {json_kind(record)}, not an object", record)
        return
    conversation_id = record.get("uuid")
    if not isinstance(conversation_id, str) or not conversation_id:
        yield _quarantine(locator, "conversation has no uuid", record)
        return
    messages = record.get("chat_messages", [])  # absent: a conversation with no messages, still a record
    if not isinstance(messages, list):
        reason = f"chat_messages is a JSON {json_kind(messages)}, not a list"
        yield _quarantine(locator, reason, record, conversation_id)
        return

    drafts: list[DraftMessage] = []
    passed_over: dict[str, str | None] = {}  # lost messages that stay links of the chain (see too_deep_link)
    has_parents = any(isinstance(m, dict) and m.get("parent_message_uuid") for m in messages)
    for index, message in enumerate(messages):
        try:
            draft: DraftMessage | str = _draft(message, has_parents)
        except RecursionError:  # a block nested thousands of levels deep: this message only is lost
            draft = TOO_DEEP_MESSAGE
            passed_over.update(too_deep_link(message, "uuid", "parent_message_uuid", ROOT_SENTINEL))
        if isinstance(draft, str):
            where = f"{locator}.chat_messages[{index}]"
            yield _quarantine(where, draft, message, conversation_id)
        else:
            drafts.append(draft)
    if not has_parents:
        _chain(drafts)

    leaf = record.get("current_leaf_message_uuid")
    thread = build_thread(
        conversation_id,
        drafts,
        structural_parents=passed_over,
        current_leaf=leaf if isinstance(leaf, str) else None,
        locator=f"{locator}.",
    )
    if thread.orphans:
        log.info("ingest - claude %s: %d message(s) with an unknown parent kept as roots", locator, thread.orphans)
    yield from thread.quarantined
    title = record.get("name")
    yield ExportConversation(
        id=conversation_id,
        title=title if isinstance(title, str) else None,
        created_at=to_utc(record.get("created_at")),
        updated_at=to_utc(record.get("updated_at")),
        current_node=thread.current_node,
        messages=thread.messages,
    )


def _draft(message: object, has_parents: bool) -> DraftMessage | str:
    """A DraftMessage, or the reason the message cannot be used."""
    if not isinstance(message, dict):
        return f"message is a JSON {json_kind(message)}, not an object"
    uuid = message.get("uuid")
    if not isinstance(uuid, str) or not uuid:
        return "message has no uuid"
    parent = message.get("parent_message_uuid") if has_parents else None
    if parent is not None and not isinstance(parent, str):
        return f"parent_message_uuid is a JSON {json_kind(parent)}, not an id"
    sender = message.get("sender")
    role = _ROLES.get(sender, "other") if isinstance(sender, str) else "other"
    text, content_type, raw = render_message(message)
    return DraftMessage(
        uuid=uuid,
        parent_ref=None if parent == ROOT_SENTINEL else parent,
        role=role,
        author=sender if role == "other" and isinstance(sender, str) else None,
        content_type=content_type,
        text=text,
        created_at=to_utc(message.get("created_at")),
        raw=raw,
        source_json=message,
    )


def _chain(drafts: list[DraftMessage]) -> None:
    """Link messages without parent ids into one chain: by created_at when all have one, else list order."""
    if all(d.created_at is not None for d in drafts):
        drafts.sort(key=lambda d: d.created_at)  # type: ignore[arg-type, return-value]  # stable: ties keep order
    previous: str | None = None
    for draft in drafts:
        draft.parent_ref = previous
        previous = draft.uuid


def render_message(message: dict[str, Any]) -> tuple[str, str, str | None]:
    """(text, content_type, raw JSON of the blocks that are not understood, if any)."""
    blocks = message.get("content")
    parts: list[str] = []
    kinds: set[str] = set()
    unknown: list[Any] = []
    said = False  # a block said what the message says (a known block, or an unknown one's text or content)
    if isinstance(blocks, list) and blocks:
        for block in blocks:
            kind = block.get("type") if isinstance(block, dict) else None
            kinds.add(kind if isinstance(kind, str) else "unknown")
            text = _render_block(block, kind) if isinstance(block, dict) else None
            if text is None:
                unknown.append(block)
                text = _best_effort(block)
                said = said or (bool(text) and not _guessed(block))
            else:
                said = said or bool(text)
            if text:
                parts.append(text)
    plain = message.get("text")
    if not said and isinstance(plain, str) and plain:  # no blocks, or none that says it (only guessed strings)
        parts.insert(0, plain)
        kinds.add("text")
    if not kinds:
        kinds.add("text")  # an empty message is still plain text
    for attachment in message.get("attachments") or ():
        if isinstance(attachment, dict) and isinstance(attachment.get("extracted_content"), str):
            file_name = attachment.get("file_name") or "unnamed"
            parts.append(f"[attachment {file_name}]\n{attachment['extracted_content']}")
            kinds.add("attachment")
    raw = json.dumps(unknown, ensure_ascii=False) if unknown else None
    return "\n\n".join(parts), "+".join(sorted(kinds)), raw


def _render_block(block: dict[str, Any], kind: object) -> str | None:
    """The text of a known block type; None for a type this parser does not know."""
    if kind == "text":
        return _str(block.get("text"))
    if kind == "thinking":
        return f"[thinking]\n{_str(block.get('thinking'))}\n[/thinking]"
    if kind == "tool_use":
        tool_input = json.dumps(block.get("input"), ensure_ascii=False, sort_keys=True)
        return f"[tool_use {_str(block.get('name'))}] {tool_input}"
    if kind == "tool_result":
        # closed like a thinking block: what a tool returned (a web page, "OK") is no one's prose, and the cleaner
        # (clients/prose.py) can only leave it out where it can see where it ends
        name = _str(block.get("name"))
        return f"[tool_result{' ' + name if name else ''}]\n{_content_text(block.get('content'))}\n[/tool_result]"
    return None


def _content_text(content: object) -> str:
    """A tool result's content: a string, or a list of blocks with text (others as JSON, not dropped)."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return "" if content is None else json.dumps(content, ensure_ascii=False)
    pieces = []
    for item in content:
        if isinstance(item, dict) and isinstance(item.get("text"), str):
            pieces.append(item["text"])
        elif isinstance(item, str):
            pieces.append(item)
        else:
            pieces.append(json.dumps(item, ensure_ascii=False))
    return "\n".join(pieces)


def _best_effort(block: object) -> str:
    """The text of a block of a type this parser does not know (kept whole in `raw` too): its `text` or `content`,
    else every string in it but its type tag and times (`BLOCK_META`: a `voice_note`'s transcript stays searchable)."""
    if isinstance(block, str):
        return block
    if isinstance(block, dict):
        for key in ("text", "content"):
            if isinstance(block.get(key), str):
                return str(block[key])
        return all_strings({k: v for k, v in block.items() if k not in BLOCK_META})
    return ""


def _guessed(block: object) -> bool:
    """Whether `_best_effort` gave the block's strings (not a text or content of its own): the message's `text`
    is then kept too, before them."""
    return isinstance(block, dict) and not any(isinstance(block.get(key), str) for key in ("text", "content"))


BLOCK_META = frozenset({"type", "start_timestamp", "stop_timestamp", "flags"})
"""Keys of every Claude content block that say nothing of its content: an unknown block holding only these gives no
text (the message's own `text` is then its text, not two timestamps)."""


def _str(value: object) -> str:
    return value if isinstance(value, str) else ""


def _quarantine(locator: str, reason: str, record: object, conversation_id: str | None = None) -> QuarantineRecord:
    return QuarantineRecord(locator=locator, reason=reason, raw=raw_json(record), conversation_id=conversation_id)
