"""Turn the parent links of one conversation into ordered messages: every branch kept, the active path marked.

Every export format that has a message tree (ChatGPT `mapping`, Claude `parent_message_uuid`, LibreChat
`parentMessageId`, generic JSONL `parent_id`) goes through `build_thread`, so the rules live in one place:

- the parent of a message is its nearest ancestor that is a message (ChatGPT's null-message root and other
  structural nodes are skipped);
- a parent that is not in the conversation makes the message an orphan: kept, as a root (parent_id null);
- messages on a parent cycle cannot be ordered: they are quarantined with the cycle in the reason;
- the active path ends at the given leaf (ChatGPT `current_node`, Claude `current_leaf_message_uuid`) when it
  names a node of this conversation; otherwise at the latest leaf (by created_at, then input order);
- seq numbers the active path 0..k-1 from root to leaf, then every other message in a deterministic
  depth-first order (roots and children sorted by created_at, then by their order in the file).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from contracts.records import ExportMessage, QuarantineRecord, Role


@dataclass(slots=True)
class DraftMessage:
    """A parsed message before the tree is known. `parent_ref` is the raw parent id from the export."""

    uuid: str
    parent_ref: str | None
    role: Role
    author: str | None
    content_type: str
    text: str
    created_at: datetime | None
    is_hidden: bool = False
    raw: str | None = None
    order: int = 0  # position in the file; set by build_thread
    source_json: object = field(default=None, repr=False)  # the raw record, only used for quarantine rows


@dataclass(slots=True)
class Thread:
    messages: list[ExportMessage]
    quarantined: list[QuarantineRecord]
    current_node: str | None
    orphans: int


def build_thread(
    conversation_id: str,
    drafts: list[DraftMessage],
    *,
    structural_parents: dict[str, str | None] | None = None,
    current_leaf: str | None = None,
    locator: str = "",
) -> Thread:
    """Resolve parents, the active path and seq for one conversation's messages.

    `structural_parents` maps ids of non-message nodes (ChatGPT's null root, hidden skeleton nodes) to their
    parent, so that a walk up the tree can pass through them.
    """
    by_id, quarantined = _unique(conversation_id, drafts, locator)
    parent_link: dict[str, str | None] = dict(structural_parents or {})
    for draft in by_id.values():
        parent_link[draft.uuid] = draft.parent_ref
    in_cycle = _cycle_members(parent_link)
    for uuid in sorted(in_cycle & by_id.keys(), key=lambda u: by_id[u].order):
        reason = f"parent cycle: message {uuid!r} is its own ancestor"
        quarantined.append(_quarantined(conversation_id, by_id[uuid], locator, reason))
    kept = {uuid: d for uuid, d in by_id.items() if uuid not in in_cycle}

    parent_of: dict[str, str | None] = {}
    orphans = 0
    for uuid, draft in kept.items():
        resolved, orphan = _nearest_message_ancestor(draft.parent_ref, parent_link, kept, in_cycle)
        parent_of[uuid] = resolved
        orphans += orphan

    def sort_key(uuid: str) -> tuple[int, float, int]:
        created = kept[uuid].created_at
        return (0 if created is not None else 1, created.timestamp() if created else 0.0, kept[uuid].order)

    children: dict[str | None, list[str]] = {}
    for uuid in kept:
        children.setdefault(parent_of[uuid], []).append(uuid)
    for siblings in children.values():
        siblings.sort(key=sort_key)

    leaf = _active_leaf(current_leaf, parent_link, kept, children, in_cycle, sort_key)
    active = _path_to(leaf, parent_of)
    messages = [
        _message(kept[uuid], parent_of[uuid], uuid in active, seq)
        for seq, uuid in enumerate(_in_seq_order(active, children))
    ]
    return Thread(messages=messages, quarantined=quarantined, current_node=leaf, orphans=orphans)


def _unique(
    conversation_id: str, drafts: list[DraftMessage], locator: str
) -> tuple[dict[str, DraftMessage], list[QuarantineRecord]]:
    """The drafts by id, numbered in their order; a second message with an id already seen is quarantined."""
    by_id: dict[str, DraftMessage] = {}
    quarantined: list[QuarantineRecord] = []
    for order, draft in enumerate(drafts):
        draft.order = order
        if draft.uuid in by_id:
            reason = f"duplicate message id {draft.uuid!r} within conversation {conversation_id!r}"
            quarantined.append(_quarantined(conversation_id, draft, locator, reason))
            continue
        by_id[draft.uuid] = draft
    return by_id, quarantined


def _quarantined(conversation_id: str, draft: DraftMessage, locator: str, reason: str) -> QuarantineRecord:
    return QuarantineRecord(
        locator=f"{locator}message[{draft.uuid}]", reason=reason, raw=_raw(draft), conversation_id=conversation_id
    )


def _path_to(leaf: str | None, parent_of: dict[str, str | None]) -> dict[str, None]:
    """The active path, root first, ending at `leaf` (an ordered set)."""
    path: list[str] = []
    node = leaf
    while node is not None:
        path.append(node)
        node = parent_of[node]
    return dict.fromkeys(reversed(path))


def _in_seq_order(active: dict[str, None], children: dict[str | None, list[str]]) -> list[str]:
    """seq order: the active path first, then every other branch depth-first, siblings by time."""
    ordered = list(active)
    stack = list(reversed(children.get(None, [])))
    while stack:
        uuid = stack.pop()
        if uuid not in active:
            ordered.append(uuid)
        stack.extend(reversed(children.get(uuid, [])))
    return ordered


def _message(draft: DraftMessage, parent_id: str | None, is_active: bool, seq: int) -> ExportMessage:
    return ExportMessage(
        uuid=draft.uuid,
        parent_id=parent_id,
        role=draft.role,
        author=draft.author,
        content_type=draft.content_type,
        text=draft.text,
        created_at=draft.created_at,
        is_active=is_active,
        is_hidden=draft.is_hidden,
        seq=seq,
        raw=draft.raw,
    )


def _cycle_members(parent_link: dict[str, str | None]) -> set[str]:
    """Ids that are their own ancestor. Iterative three-colour walk, O(n)."""
    state: dict[str, int] = {}  # 1 = on the current walk, 2 = done
    members: set[str] = set()
    for start in parent_link:
        if start in state:
            continue
        path: list[str] = []
        node: str | None = start
        while node is not None and node in parent_link and node not in state:
            state[node] = 1
            path.append(node)
            node = parent_link[node]
        if node is not None and state.get(node) == 1:
            members.update(path[path.index(node) :])
        for visited in path:
            state[visited] = 2
    return members


def _nearest_message_ancestor(
    parent_ref: str | None,
    parent_link: dict[str, str | None],
    kept: dict[str, DraftMessage],
    in_cycle: set[str],
) -> tuple[str | None, int]:
    """Return (nearest ancestor that is a kept message, 1 if the chain broke on an unknown id else 0)."""
    node = parent_ref
    seen = 0
    while node is not None:
        if node in kept:
            return node, 0
        if node in in_cycle or node not in parent_link:
            return None, 1
        node = parent_link[node]
        seen += 1
        if seen > len(parent_link):  # defensive: cycles are removed above
            return None, 1
    return None, 0


def _active_leaf(
    current_leaf: str | None,
    parent_link: dict[str, str | None],
    kept: dict[str, DraftMessage],
    children: dict[str | None, list[str]],
    in_cycle: set[str],
    sort_key: Callable[[str], tuple[int, float, int]],
) -> str | None:
    if not kept:
        return None
    if current_leaf is not None and current_leaf in parent_link and current_leaf not in in_cycle:
        if current_leaf in kept:
            return current_leaf
        resolved, _ = _nearest_message_ancestor(current_leaf, parent_link, kept, in_cycle)
        if resolved is not None:
            return resolved
    leaves = [uuid for uuid in kept if not children.get(uuid)]

    # The latest leaf: ones with a timestamp beat ones without, then the latest time, then the last one.
    def latest(uuid: str) -> tuple[int, float, int]:
        no_time, timestamp, order = sort_key(uuid)
        return (1 - no_time, timestamp, order)

    return max(leaves, key=latest)


def _raw(draft: DraftMessage, limit: int = 1_000_000) -> str:
    if draft.source_json is not None:
        try:
            text = json.dumps(draft.source_json, ensure_ascii=False, default=str)
        except RecursionError:
            text = "[nested too deep to show as JSON]"
    else:
        fields = {"uuid": draft.uuid, "parent": draft.parent_ref, "text": draft.text}
        text = json.dumps(fields, ensure_ascii=False)
    # QuarantineRecord.raw is "possibly truncated": one huge message must not make a huge quarantine row.
    return text if len(text) <= limit else f"{text[:limit]}... [truncated: {len(text)} characters in all]"
