"""ingest.tree: parents, the active path and seq for any message tree."""

from __future__ import annotations

from datetime import UTC, datetime

from ingest.tree import DraftMessage, build_thread


def _draft(uuid: str, parent: str | None, minute: int | None = 0) -> DraftMessage:
    created = None if minute is None else datetime(2024, 1, 1, 0, minute, tzinfo=UTC)
    return DraftMessage(
        uuid=uuid,
        parent_ref=parent,
        role="user",
        author=None,
        content_type="text",
        text=uuid,
        created_at=created,
    )


def test_active_path_follows_the_given_leaf_and_comes_first_in_seq() -> None:
    """The path root→current leaf is active and numbered 0..k-1; side branches follow."""
    drafts = [_draft("a", None, 0), _draft("b", "a", 1), _draft("c", "a", 2), _draft("d", "b", 3)]
    thread = build_thread("c1", drafts, current_leaf="c")
    order = [(m.uuid, m.is_active, m.seq) for m in thread.messages]
    assert order == [("a", True, 0), ("c", True, 1), ("b", False, 2), ("d", False, 3)]


def test_without_a_leaf_the_latest_leaf_is_active() -> None:
    """With no current node the most recent leaf ends the active path."""
    drafts = [_draft("a", None, 0), _draft("b", "a", 5), _draft("c", "a", 2)]
    assert build_thread("c1", drafts).current_node == "b"
    assert build_thread("c1", drafts, current_leaf="nope").current_node == "b"


def test_structural_nodes_are_skipped_when_resolving_parents() -> None:
    """A null-message root is not a message: its child becomes a root."""
    drafts = [_draft("a", "client-created-root"), _draft("b", "hidden-node", 1)]
    thread = build_thread("c1", drafts, structural_parents={"client-created-root": None, "hidden-node": "a"})
    parents = {m.uuid: m.parent_id for m in thread.messages}
    assert parents == {"a": None, "b": "a"}
    assert thread.orphans == 0


def test_orphan_is_kept_as_a_root_and_counted() -> None:
    """A message whose parent is not in the conversation is kept, with no parent."""
    thread = build_thread("c1", [_draft("a", None), _draft("b", "missing", 1)])
    assert {m.uuid: m.parent_id for m in thread.messages} == {"a": None, "b": None}
    assert thread.orphans == 1


def test_parent_cycle_is_quarantined_and_the_rest_kept() -> None:
    """Messages on a parent cycle are quarantined with a reason; descendants and others survive."""
    drafts = [_draft("a", None), _draft("x", "y", 1), _draft("y", "x", 2), _draft("z", "x", 3)]
    thread = build_thread("c1", drafts)
    assert sorted(q.locator for q in thread.quarantined) == ["message[x]", "message[y]"]
    assert all("cycle" in q.reason for q in thread.quarantined)
    assert {m.uuid: m.parent_id for m in thread.messages} == {"a": None, "z": None}


def test_duplicate_ids_keep_the_first_and_quarantine_the_rest() -> None:
    """A repeated message id within one conversation is quarantined, never merged silently."""
    thread = build_thread("c1", [_draft("a", None), _draft("a", None, 9)])
    assert len(thread.messages) == 1 and len(thread.quarantined) == 1
    assert "duplicate message id" in thread.quarantined[0].reason


def test_two_roots_keep_every_message_with_unique_seq() -> None:
    """Two roots: one holds the active path, the other is a side branch; seq is 0..n-1."""
    drafts = [_draft("r1", None, 0), _draft("r2", None, 1), _draft("b", "r2", 2), _draft("c", "r1", 3)]
    thread = build_thread("c1", drafts)
    assert sorted(m.seq for m in thread.messages) == [0, 1, 2, 3]
    assert [m.uuid for m in thread.messages if m.is_active] == ["r1", "c"]


def test_null_timestamps_lose_to_timed_leaves() -> None:
    """When choosing the latest leaf, a leaf with a time wins over one without."""
    drafts = [_draft("a", None), _draft("untimed", "a", None), _draft("timed", "a", 1)]
    assert build_thread("c1", drafts).current_node == "timed"


def test_empty_conversation_yields_no_messages() -> None:
    """An empty conversation is fine: no messages, no leaf."""
    thread = build_thread("c1", [])
    assert thread.messages == [] and thread.current_node is None
