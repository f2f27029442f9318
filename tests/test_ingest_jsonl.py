"""The generic JSONL parser: bad lines quarantined by line number, conversations grouped across the file."""

from __future__ import annotations

import gzip
import io
import itertools
import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from contracts.errors import MalformedExportError
from contracts.records import ExportConversation, QuarantineRecord
from ingest.jsonl import parse

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"
LONGMEMEVAL = SHARED / "benchmarks" / "longmemeval" / "longmemeval_s_dev50.jsonl.gz"


def _local(message_id: str | None) -> str | None:
    """The id as written in the file: the archive id is `<conversation_id>:<id>`."""
    return None if message_id is None else message_id.split(":", 1)[1]


def _parse(data: bytes) -> tuple[list[ExportConversation], list[QuarantineRecord]]:
    conversations: list[ExportConversation] = []
    quarantined: list[QuarantineRecord] = []
    for item in parse(io.BytesIO(data), name="messages.jsonl"):
        (conversations if isinstance(item, ExportConversation) else quarantined).append(item)  # type: ignore[arg-type]
    return conversations, quarantined


def _line(conversation: str, uuid: str, text: str = "hi", role: str = "user", **extra: Any) -> bytes:
    return json.dumps({"conversation_id": conversation, "id": uuid, "role": role, "text": text, **extra}).encode()


def _file(*lines: bytes) -> bytes:
    return b"\n".join(lines) + b"\n"


def assert_thread_invariants(conversation: ExportConversation) -> None:
    """seq is 0..n-1 in order; the active messages form a parent chain from a root to current_node."""
    messages = conversation.messages
    assert [m.seq for m in messages] == list(range(len(messages)))
    active = [m for m in messages if m.is_active]
    assert messages[: len(active)] == active and active[0].parent_id is None
    assert all(child.parent_id == parent.uuid for parent, child in itertools.pairwise(active))
    assert conversation.current_node == active[-1].uuid


def test_the_example_in_docs_formats_parses_as_documented() -> None:
    """The spec's example: two conversations in order of first appearance, `trip` split by `recipes`."""
    spec = (ROOT / "docs" / "formats.md").read_text(encoding="utf-8")
    example = re.search(r"```jsonl\n(.*?)```", spec, re.DOTALL)
    assert example is not None
    conversations, quarantined = _parse(example.group(1).encode())
    assert quarantined == []
    assert [(c.id, c.title, len(c.messages)) for c in conversations] == [
        ("trip", "Lisbon", 3),
        ("recipes", None, 1),
    ]
    trip = conversations[0]
    assert [(_local(m.uuid), _local(m.parent_id), m.seq) for m in trip.messages] == [
        ("1", None, 0),
        ("2", "1", 1),
        ("3", "2", 2),
    ]
    assert trip.messages[1].author == "gpt-4o"
    assert_thread_invariants(trip)


def test_bad_lines_are_quarantined_with_their_line_numbers_while_good_lines_arrive() -> None:
    """Invalid JSON, non-objects, missing or mistyped fields: one row 'line N' each; the rest is ingested."""
    data = _file(
        _line("c1", "m1"),
        b"{not json",
        b"[1, 2]",
        json.dumps({"conversation_id": "c1", "id": "x", "text": "no role"}).encode(),
        json.dumps({"conversation_id": "c1", "id": "y", "role": "user", "text": 42}).encode(),
        json.dumps({"conversation_id": ["c1"], "id": "z", "role": "user", "text": "list id"}).encode(),
        _line("c1", "m2", role="assistant"),
        b'{"conversation_id": "c1", "id": "cut", "text": "a line cut sho',
    )
    conversations, quarantined = _parse(data)
    assert [q.locator for q in quarantined] == ["line 2", "line 3", "line 4", "line 5", "line 6", "line 8"]
    reasons = [q.reason for q in quarantined]
    assert reasons[0].startswith("invalid JSON") and "not an object" in reasons[1]
    assert reasons[5] == "invalid JSON: Unterminated string starting at column 48"  # "at" said once
    assert "missing required field(s): role" in reasons[2] and "text must be a string" in reasons[3]
    assert quarantined[0].raw == "{not json" and quarantined[2].conversation_id == "c1"
    (conversation,) = conversations
    assert [(_local(m.uuid), _local(m.parent_id)) for m in conversation.messages] == [
        ("m1", None),
        ("m2", "m1"),
    ]


def test_invalid_utf8_asks_for_the_repair_pass_and_the_repaired_stream_keeps_the_message() -> None:
    """Invalid UTF-8 bytes, as in a JSON export: the parser raises MalformedExportError marked invalid_utf8 (the
    stage then re-reads with Utf8RepairReader); through that reader the message arrives with U+FFFD."""
    from ingest.utf8_repair import Utf8RepairReader

    bad = b'{"conversation_id": "c1", "id": "m2", "role": "user", "text": "caf\xe9"}'
    data = _file(_line("c1", "m1"), bad, _line("c1", "m3"))
    with pytest.raises(MalformedExportError) as raised:
        _parse(data)
    assert getattr(raised.value, "invalid_utf8", False) and "line 2" in str(raised.value)
    items = list(parse(Utf8RepairReader(io.BytesIO(data)), name="messages.jsonl"))  # type: ignore[arg-type]
    [conversation] = [item for item in items if isinstance(item, ExportConversation)]
    assert [m.text for m in conversation.messages] == ["hi", "caf\ufffd", "hi"]


def test_a_conversation_split_across_non_contiguous_lines_is_one_conversation() -> None:
    """Lines a1 b1 a2 b2 a3 give conversations a (3 messages, chained in line order) and b, each once."""
    data = _file(
        _line("a", "a1"),
        _line("b", "b1"),
        _line("a", "a2"),
        _line("b", "b2", role="assistant"),
        _line("a", "a3"),
    )
    conversations, quarantined = _parse(data)
    assert quarantined == []
    assert [c.id for c in conversations] == ["a", "b"]
    assert [(_local(m.uuid), _local(m.parent_id)) for m in conversations[0].messages] == [
        ("a1", None),
        ("a2", "a1"),
        ("a3", "a2"),
    ]
    assert [(_local(m.uuid), _local(m.parent_id)) for m in conversations[1].messages] == [
        ("b1", None),
        ("b2", "b1"),
    ]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2024-05-01T10:00:00Z", datetime(2024, 5, 1, 10, 0, tzinfo=UTC)),
        ("2024-05-01T12:00:00+02:00", datetime(2024, 5, 1, 10, 0, tzinfo=UTC)),
        ("2024-05-01T10:00:00", datetime(2024, 5, 1, 10, 0, tzinfo=UTC)),
        (1714557600, datetime(2024, 5, 1, 10, 0, tzinfo=UTC)),
        (1714557600123, datetime(2024, 5, 1, 10, 0, 0, 123000, tzinfo=UTC)),
        (1714557600.5, datetime(2024, 5, 1, 10, 0, 0, 500000, tzinfo=UTC)),
        (None, None),
        ("yesterday", None),
    ],
    ids=["iso-z", "iso-offset", "iso-naive", "epoch-s", "epoch-ms", "epoch-fraction", "null", "unreadable"],
)
def test_created_at_accepts_iso_epoch_seconds_and_milliseconds_and_null(value: object, expected: object) -> None:
    """Each timestamp form becomes the same UTC instant; null or unreadable is None, the message kept."""
    (conversation,), quarantined = _parse(_file(_line("c", "m", created_at=value)))
    assert quarantined == []
    assert conversation.messages[0].created_at == expected
    assert conversation.created_at == expected and conversation.updated_at == expected


def test_parent_ids_make_branches_and_the_latest_leaf_is_active() -> None:
    """Two lines naming the same parent are siblings; the active path ends at the latest leaf."""
    data = _file(
        _line("c", "q", created_at=1714557500),
        _line("c", "r1", role="assistant", parent_id="q", created_at=1714557600),
        _line("c", "f", parent_id="r1", created_at=1714557650),
        _line("c", "r2", role="assistant", parent_id="q", created_at=1714557700),
    )
    (conversation,), _ = _parse(data)
    parents = {_local(m.uuid): _local(m.parent_id) for m in conversation.messages}
    assert parents == {"q": None, "r1": "q", "r2": "q", "f": "r1"}
    assert [(_local(m.uuid), m.is_active) for m in conversation.messages] == [
        ("q", True),
        ("r2", True),
        ("r1", False),
        ("f", False),
    ]
    assert_thread_invariants(conversation)


def test_a_duplicate_message_id_in_one_conversation_is_quarantined_with_its_line() -> None:
    """The second line with the same id is quarantined, naming the line of the first one."""
    data = _file(_line("c", "m1"), _line("c", "m1", text="again"), _line("c", "m2"))
    (conversation,), quarantined = _parse(data)
    (duplicate,) = quarantined
    assert duplicate.locator == "line 2" and "first on line 1" in duplicate.reason
    assert json.loads(duplicate.raw)["text"] == "again"
    assert [(_local(m.uuid), _local(m.parent_id)) for m in conversation.messages] == [
        ("m1", None),
        ("m2", "m1"),
    ]


def test_roles_are_normalised_and_an_unknown_role_is_kept_as_the_author() -> None:
    """human → user, ai → assistant, function → tool; 'narrator' → other with author 'narrator'."""
    roles = ["human", "AI", "function", "narrator", "system"]
    data = _file(*(_line("c", f"m{i}", role=role) for i, role in enumerate(roles)))
    (conversation,), _ = _parse(data)
    assert [(m.role, m.author) for m in conversation.messages] == [
        ("user", None),
        ("assistant", None),
        ("tool", None),
        ("other", "narrator"),
        ("system", None),
    ]


def test_blank_lines_crlf_and_a_bom_are_tolerated_and_line_numbers_count_every_line() -> None:
    """Blank lines are skipped but counted, CRLF endings and a leading BOM are accepted."""
    data = b"\xef\xbb\xbf" + _line("c", "m1") + b"\r\n\r\n   \n" + b"oops\r\n" + _line("c", "m2") + b"\r\n"
    (conversation,), quarantined = _parse(data)
    assert [q.locator for q in quarantined] == ["line 4"]
    assert [_local(m.uuid) for m in conversation.messages] == ["m1", "m2"]


def test_a_file_with_no_message_line_is_malformed_after_its_lines_are_quarantined() -> None:
    """Every line bad: each is quarantined, then MalformedExportError names the file."""
    stream = parse(io.BytesIO(b"hello\nworld\n"), name="messages.jsonl")
    assert [q.locator for q in itertools.islice(stream, 2)] == ["line 1", "line 2"]  # type: ignore[union-attr]
    with pytest.raises(MalformedExportError, match=r"^messages\.jsonl: no line is a JSONL message"):
        next(stream)


def test_an_empty_file_yields_nothing() -> None:
    """No lines, no conversations, no error: an empty JSONL export is valid."""
    assert _parse(b"") == ([], [])


class _ReadOnly:
    """A stream with only read(), like the stage's progress and UTF-8 repair readers."""

    def __init__(self, data: bytes) -> None:
        self._inner = io.BytesIO(data)

    def read(self, size: int = -1) -> bytes:
        return self._inner.read(min(size, 7) if size > 0 else size)  # tiny reads split lines across chunks


def test_a_stream_with_only_read_and_tiny_chunks_gives_the_same_result() -> None:
    """Lines split across read() chunks are reassembled; no seek or readline is needed."""
    data = _file(_line("a", "a1", text="x" * 40), _line("b", "b1"), b"bad", _line("a", "a2"))
    expected = list(parse(io.BytesIO(data), name="messages.jsonl"))
    assert list(parse(_ReadOnly(data), name="messages.jsonl")) == expected  # type: ignore[arg-type]


def test_real_chat_sessions_written_as_interleaved_jsonl_all_arrive() -> None:
    """LongMemEval haystack sessions (real chat turns), written round-robin: every turn arrives, grouped."""
    if not SHARED.is_dir():
        pytest.skip("../shared/data is absent")
    with gzip.open(LONGMEMEVAL, "rt", encoding="utf-8") as stream:
        question = json.loads(stream.readline())
    sessions = dict(zip(question["haystack_session_ids"], question["haystack_sessions"], strict=True))
    turns = [
        [(session_id, index, turn) for index, turn in enumerate(session)] for session_id, session in sessions.items()
    ]
    lines = [  # one turn of each session in turn, so no conversation's lines are contiguous
        _line(session_id, f"{session_id}:{index}", text=turn["content"], role=turn["role"])
        for group in itertools.zip_longest(*turns)
        for session_id, index, turn in filter(None, group)
    ]
    expected = sum(len(session) for session in sessions.values())
    assert len(lines) == expected

    conversations, quarantined = _parse(_file(*lines))

    assert quarantined == []
    assert sum(len(c.messages) for c in conversations) == expected
    assert {c.id for c in conversations} == set(sessions)
    for conversation in conversations:
        assert [m.text for m in conversation.messages] == [t["content"] for t in sessions[conversation.id]]
        assert_thread_invariants(conversation)


def test_the_same_id_in_two_conversations_gives_two_distinct_archive_ids() -> None:
    """Ids are scoped by conversation, so logs that both number their messages from 1 do not collide."""
    data = b"".join(
        json.dumps({"conversation_id": c, "id": 1, "role": "user", "text": c}).encode() + b"\n" for c in ("a", "b")
    )
    conversations, quarantined = _parse(data)
    assert quarantined == []
    assert [m.uuid for c in conversations for m in c.messages] == ["a:1", "b:1"]
