"""The ChatGPT `conversations.json` parser: a streamed list of conversations, each a tree of mapping nodes.

    [{"id"|"conversation_id", "title", "create_time", "update_time", "current_node",
      "mapping": {node_id: {"id", "parent", "children": [...], "message": null | {
          "id", "author": {"role", "name"}, "create_time", "content": {"content_type", ...}, "metadata"}}}}]

A single conversation object (one element of that list, as a tool or a user saves one conversation) is read as
an export of that one conversation, as Claude's is (ingest/claude.py); conversation objects one per line (the
list's elements written as JSONL) are read a line at a time, a bad line quarantined (ingest/object_lines.py).

One conversation is held in memory at a time. Each node with a message becomes a `DraftMessage`; nodes
without one (the "client-created-root" and other skeleton nodes) are passed to `build_thread` as structural
parents, so a message's parent is its nearest ancestor that is a message. The tree rules (orphans, cycles,
the active path, seq) live in `ingest.tree`; the content renderers in `ingest.chatgpt_content`.

A message's uuid is its mapping key, not `message.id`: `parent`, `children` and `current_node` all refer to
mapping keys, and real exports (spark-first, 2023) have nodes whose `message.id` differs from the key.

What is quarantined, and what is not:
- a conversation that is not an object, has no id, or has no mapping object: the whole record, by index;
- a node that is not an object, has a message that is not an object, has no author or content object, or
  has a parent that is not an id: that node only; the rest of the conversation is ingested;
- a node whose parent/children links disagree, which is how a duplicated node id shows (see
  `_suspected_duplicates`);
- parent cycles and duplicate message ids: by `build_thread`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, BinaryIO

from contracts.errors import MalformedExportError
from contracts.records import ExportConversation, QuarantineRecord, Role
from ingest.chatgpt_content import content_type_of, render_content
from ingest.detect import peek_start
from ingest.jsonstream import MAX_DEPTH, TooDeep, guard_depth, iter_json_items
from ingest.object_lines import iter_objects
from ingest.raw_skip import RawLookup, Unchanged
from ingest.timestamps import to_utc
from ingest.tree import DraftMessage, build_thread

RAW_LIMIT = 1_000_000  # characters of a quarantined record's JSON that are kept

_ROLES: dict[str, Role] = {"system": "system", "user": "user", "assistant": "assistant", "tool": "tool"}


def parse(
    stream: BinaryIO, *, name: str, lookup: RawLookup | None = None
) -> Iterator[ExportConversation | QuarantineRecord | Unchanged]:
    """Yield each conversation of a ChatGPT export (after its quarantine rows) in file order; with `lookup`,
    an `Unchanged` marker for each conversation whose bytes the archive holds (ingest/raw_skip.py).

    Raises MalformedExportError (naming `name`) when the file is not valid JSON, after every complete
    conversation before the break has been yielded.
    """
    first, replay = peek_start(stream)
    if first == b"{":  # one conversation object, or conversation objects one per line
        for locator, record in iter_objects(replay, name=name):
            if isinstance(record, QuarantineRecord):
                yield record
                continue
            yield from guard_depth(parse_conversation(record, 0, locator), locator)
        return
    if first != b"[":
        found = repr(first) if first else "an empty file"
        raise MalformedExportError(name, f"a ChatGPT export is a JSON list or object, found {found}")
    for index, record in enumerate(iter_json_items(replay, "item", name=name, lookup=lookup)):
        if isinstance(record, Unchanged):
            yield record
            continue
        if isinstance(record, TooDeep):
            # Read without recursion; a conversation object then loses only the message that is too deep.
            loaded = record.load()
            if not isinstance(loaded, dict):
                yield record.quarantine(f"conversations[{index}]")
                continue
            record = loaded
        yield from guard_depth(parse_conversation(record, index), f"conversations[{index}]")


def parse_conversation(
    record: object, index: int, locator: str | None = None
) -> Iterator[ExportConversation | QuarantineRecord]:
    """One element of the top-level list (or the file's one conversation, `locator` "conversation"): its quarantine
    rows, then the conversation unless it is unusable."""
    locator = locator or f"conversations[{index}]"
    if not isinstance(record, dict):
        yield _quarantine(locator, f"conversation is a JSON {_kind(record)}, not an object", record)
        return
    conversation_id = record.get("conversation_id") or record.get("id")
    if not isinstance(conversation_id, str) or not conversation_id:
        yield _quarantine(locator, "conversation has no id (neither conversation_id nor id)", record)
        return
    mapping = record.get("mapping")
    if not isinstance(mapping, dict):
        reason = f"conversation has no mapping object (mapping is a JSON {_kind(mapping)})"
        yield _quarantine(locator, reason, record, conversation_id)
        return

    drafts: list[DraftMessage] = []
    structural: dict[str, str | None] = {}
    for node_id, node in mapping.items():
        if not isinstance(node, dict):
            reason = f"node is a JSON {_kind(node)}, not an object"
            yield _quarantine(f"{locator}.mapping[{node_id}]", reason, node, conversation_id)
            continue
        parent = node.get("parent")
        if parent is not None and not isinstance(parent, str):
            reason = f"node parent is a JSON {_kind(parent)}, not a node id"
            yield _quarantine(f"{locator}.mapping[{node_id}]", reason, node, conversation_id)
            continue
        message = node.get("message")
        if message is None:
            structural[node_id] = parent
            continue
        try:
            draft_or_reason: DraftMessage | str = _draft(node_id, parent, message, node)
        except RecursionError:  # a part nested thousands of levels deep: this message only is lost
            draft_or_reason = f"message nested deeper than {MAX_DEPTH} JSON levels: not rendered"
        if isinstance(draft_or_reason, str):
            yield _quarantine(f"{locator}.mapping[{node_id}]", draft_or_reason, node, conversation_id)
            # The node stays a link in the chain, so its children keep their place in the conversation
            # instead of becoming orphan roots; the quarantine row records the missing message.
            structural[node_id] = parent
            continue
        drafts.append(draft_or_reason)

    for node_id, detail in _suspected_duplicates(mapping).items():
        reason = (
            f"node links disagree ({detail}): the file probably holds two nodes with id {node_id!r}, and a "
            "JSON object keeps only the last, so the other could not be read"
        )
        yield _quarantine(f"{locator}.mapping[{node_id}]", reason, mapping[node_id], conversation_id)

    current = record.get("current_node")
    thread = build_thread(
        conversation_id,
        drafts,
        structural_parents=structural,
        current_leaf=current if isinstance(current, str) else None,
        locator=f"{locator}.",
    )
    yield from thread.quarantined
    title = record.get("title")
    yield ExportConversation(
        id=conversation_id,
        title=title if isinstance(title, str) or title is None else str(title),
        created_at=to_utc(record.get("create_time")),
        updated_at=to_utc(record.get("update_time")),
        current_node=thread.current_node,
        messages=thread.messages,
    )


def _draft(node_id: str, parent: str | None, message: object, node: dict[str, Any]) -> DraftMessage | str:
    """A DraftMessage, or the reason the message cannot be read."""
    if not isinstance(message, dict):
        return f"message is a JSON {_kind(message)}, not an object"
    author = message.get("author")
    if not isinstance(author, dict):
        return "message has no author object"
    content = message.get("content")
    if not isinstance(content, dict):
        return "message has no content object"
    role_name = author.get("role")
    role = _ROLES.get(role_name, "other") if isinstance(role_name, str) else "other"
    author_name = author.get("name")
    text, raw = render_content(content)
    metadata = message.get("metadata")
    # Hidden: what the ChatGPT UI does not show. Newer exports say so in metadata; older ones (spark-first,
    # 2023) carry a blank system prompt with no flag, which the UI never showed either. A system message
    # with text stays visible: it is context the user chose (custom instructions).
    flagged = isinstance(metadata, dict) and metadata.get("is_visually_hidden_from_conversation") is True
    is_hidden = flagged or (role == "system" and (not text or text.isspace()))
    return DraftMessage(
        uuid=node_id,
        parent_ref=parent,
        role=role,
        author=author_name if isinstance(author_name, str) else None,
        content_type=content_type_of(content),
        text=text,
        created_at=to_utc(message.get("create_time")),
        is_hidden=is_hidden,
        raw=raw,
        source_json=node,
    )


def _suspected_duplicates(mapping: dict[str, Any]) -> dict[str, str]:
    """Node ids that probably occur twice in the mapping, with the link that gives them away.

    A JSON object with a repeated key parses (in ijson, as in `json`) to its last value only, so a mapping
    that held two nodes with one id loses the first without an error. Detecting that exactly would need a
    Python hook on every JSON object of the file (measured: +65% parse time), so this checks the links
    instead, which every real export sample keeps consistent. A lost twin shows as: its id listed by a parent
    that the survivor does not name, its id listed twice by one parent, or its children not listed by the
    survivor. Children missing from the mapping are not flagged: real exports cut short have them.
    """
    suspects: dict[str, str] = {}
    times: dict[str, int] = {}  # how often each node is listed by the parent it names
    for node_id, node in mapping.items():
        children = node.get("children") if isinstance(node, dict) else None
        if not isinstance(children, list):
            continue
        for child in children:
            child_node = mapping.get(child) if isinstance(child, str) else None
            if not isinstance(child_node, dict):
                continue
            parent = child_node.get("parent")
            if parent == node_id:
                times[child] = times.get(child, 0) + 1
            else:
                suspects.setdefault(child, f"listed as a child of {node_id!r}, but its parent is {parent!r}")
    for node_id, node in mapping.items():
        parent = node.get("parent") if isinstance(node, dict) else None
        parent_node = mapping.get(parent) if isinstance(parent, str) else None
        if not isinstance(parent, str) or not isinstance(parent_node, dict):
            continue
        if not isinstance(parent_node.get("children"), list):
            continue  # no children list to check against
        count = times.get(node_id, 0)
        if count > 1:
            suspects.setdefault(node_id, f"listed {count} times by its parent {parent!r}")
        elif count == 0 and node_id not in suspects:
            suspects.setdefault(parent, f"its child {node_id!r} is missing from its children")
    return suspects


def _quarantine(locator: str, reason: str, record: object, conversation_id: str | None = None) -> QuarantineRecord:
    return QuarantineRecord(locator=locator, reason=reason, raw=raw_json(record), conversation_id=conversation_id)


def raw_json(record: object) -> str:
    """The record as JSON text, cut to RAW_LIMIT characters with a marker saying how long it was."""
    try:
        text = json.dumps(record, ensure_ascii=False, default=str)
    except RecursionError:
        return "[nested too deep to show as JSON]"
    if len(text) <= RAW_LIMIT:
        return text
    return f"{text[:RAW_LIMIT]}... [truncated: {len(text)} characters in all]"


def _kind(value: object) -> str:
    """The JSON name of a parsed value's type, for reasons a user reads."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object" if isinstance(value, dict) else type(value).__name__
