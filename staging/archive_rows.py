"""Turning an ExportConversation into archive.db rows: pure functions, no database.

Kept apart from the writer so that rows can be built where the parsing happens (the ingest stage builds
them in a worker process for large files and sends plain tuples, which are cheap to pass between processes).
"""

from __future__ import annotations

import hashlib
import io
import json
import pickle
import re
from dataclasses import dataclass
from datetime import UTC, datetime

from contracts.records import ExportConversation

# Column order of a message row (the writer appends source_id).
MESSAGE_COLUMNS = (
    "uuid",
    "conversation_id",
    "parent_id",
    "role",
    "author",
    "content_type",
    "text",
    "created_at",
    "is_active",
    "is_hidden",
    "seq",
    "content_hash",
    "raw",
)
UUID, CONVERSATION_ID, TEXT, IS_ACTIVE, SEQ = 0, 1, 6, 8, 10

_SURROGATE = re.compile("[\ud800-\udfff]")

MessageRow = tuple[object, ...]


@dataclass(slots=True)
class ConversationRows:
    """One conversation as rows: its own columns, their hash, and one row per message (ordered by seq)."""

    id: str
    fields: tuple[object, ...]  # title, created_at, updated_at, current_node, format
    row_hash: str
    messages: list[MessageRow]

    @property
    def updated_at(self) -> str | None:
        value = self.fields[2]
        return None if value is None else str(value)


def to_rows(conversation: ExportConversation, fmt: str) -> ConversationRows:
    """The rows for one parsed conversation."""
    title = None if conversation.title is None else utf8_safe(conversation.title)
    fields = (
        title,
        iso(conversation.created_at),
        iso(conversation.updated_at),
        conversation.current_node,
        fmt,
    )
    messages: list[MessageRow] = []
    for message in conversation.messages:
        text = message.text
        try:
            encoded = text.encode("utf-8")
        except UnicodeEncodeError:
            text = utf8_safe(text)
            encoded = text.encode("utf-8")
        messages.append(
            (
                message.uuid,
                conversation.id,
                message.parent_id,
                message.role,
                message.author,
                message.content_type,
                text,
                iso(message.created_at),
                int(message.is_active),
                int(message.is_hidden),
                message.seq,
                hashlib.sha256(encoded).hexdigest(),
                None if message.raw is None else utf8_safe(message.raw),
            )
        )
    return ConversationRows(conversation.id, fields, row_hash(*fields), messages)


def content_hash(text: str) -> str:
    """The key later stages cache on (embeddings, extractions): sha256 of the message text alone."""
    return hashlib.sha256(utf8_safe(text).encode("utf-8")).hexdigest()


def compared(row: MessageRow) -> MessageRow:
    """What decides whether a stored message changed: every column but the text, whose digest stands in."""
    return (*row[:TEXT], *row[TEXT + 1 :])


COMPARED_COLUMNS = ", ".join(c for c in MESSAGE_COLUMNS if c != "text")

DIGEST_VERSION = 1  # raise when what a write of the same rows stores changes: every digest then differs once


def digest(rows: ConversationRows) -> str:
    """One conversation's rows as one digest (staging/archive_digests.py): its row hash and each message's
    compared columns, in order. Equal digests, equal rows: pickle without its memo (`fast`) writes every value in
    full, so equal bytes are equal values (and it costs a fifth of repr's per-value work on 250k rows)."""
    buffer = io.BytesIO()
    pickler = pickle.Pickler(buffer, protocol=5)
    pickler.fast = True  # no memo: the bytes depend on the values alone, not on which objects are shared
    pickler.dump((DIGEST_VERSION, rows.id, rows.row_hash, [compared(row) for row in rows.messages]))
    return hashlib.blake2b(buffer.getbuffer(), digest_size=16).hexdigest()


def relocated(row: MessageRow, seq: int) -> MessageRow:
    """The same message, inactive, at another seq (a message only an older dump still has)."""
    return (*row[:IS_ACTIVE], 0, *row[IS_ACTIVE + 1 : SEQ], seq, *row[SEQ + 1 :])


def row_as_json(row: MessageRow) -> str:
    return json.dumps(dict(zip(MESSAGE_COLUMNS, row, strict=True)), ensure_ascii=False)


def utf8_safe(text: str) -> str:
    """Replace lone surrogates (an escaped half of an emoji, e.g. "\\ud83d") with U+FFFD.

    SQLite stores UTF-8 and refuses such strings; the replacement marks exactly what could not be stored.
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.sub("\ufffd", text)
    return text


def iso(value: datetime | None) -> str | None:
    return None if value is None else value.astimezone(UTC).isoformat()


def row_hash(*fields: object) -> str:
    joined = "\x1f".join("\x00" if f is None else str(f) for f in fields)
    return hashlib.blake2b(joined.encode("utf-8"), digest_size=16).hexdigest()
