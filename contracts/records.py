"""Export records: what a parser produces from a dump, before it is written to the archive.

A parser turns one export file into a stream of `ExportConversation` (each with all its messages, every
branch kept) and `QuarantineRecord` (a record it could not use, with where it was and why).
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import Field

from contracts.base import StrictBase

Role = Literal["system", "user", "assistant", "tool", "other"]

EXPORT_FORMATS = ("chatgpt", "claude", "jsonl", "librechat", "chatbotui")
ExportFormat = Literal["chatgpt", "claude", "jsonl", "librechat", "chatbotui"]


class ExportMessage(StrictBase):
    """One message of one conversation, as found in the export."""

    uuid: str = Field(description="The message id from the export; unique within the archive.")
    parent_id: str | None = Field(
        description="The id of the parent message (nearest ancestor that is a message), or null for a root."
    )
    role: Role = Field(description="Normalised role: system, user, assistant, tool, or other.")
    author: str | None = Field(description="Author name when the export gives one (a tool name, a model).")
    content_type: str = Field(description="The export's content type (text, code, thoughts, tool_use, ...).")
    text: str = Field(description="Deterministic plain-text rendering of the content.")
    created_at: datetime | None = Field(description="Creation time in UTC, or null when the export has none.")
    is_active: bool = Field(description="True when the message is on the conversation's active path.")
    is_hidden: bool = Field(description="True for messages the chat UI hides (hidden system/context messages).")
    seq: int = Field(
        ge=0,
        description="Order within the conversation: the active path first (0..n-1 root to leaf), then "
        "side branches in a deterministic tree order.",
    )
    raw: str | None = Field(
        default=None,
        description="The raw JSON of the content when its type is not known, so that nothing is dropped.",
    )


class ExportConversation(StrictBase):
    """One conversation with all of its messages (every branch)."""

    id: str = Field(description="The conversation id from the export.")
    title: str | None = Field(description="The conversation title, if any.")
    created_at: datetime | None = Field(description="Creation time in UTC.")
    updated_at: datetime | None = Field(description="Last update time in UTC.")
    current_node: str | None = Field(description="The leaf of the active path, as chosen by the parser.")
    messages: list[ExportMessage] = Field(description="All messages, ordered by seq.")


class QuarantineRecord(StrictBase):
    """A record that could not be ingested, with where it was and why. Nothing is silently dropped."""

    locator: str = Field(description="Where in the file: e.g. 'conversations[3].mapping[abc]', 'line 17'.")
    reason: str = Field(description="Why the record was not ingested.")
    raw: str = Field(description="The raw record (JSON text), possibly truncated for very large records.")
    conversation_id: str | None = Field(default=None, description="The conversation it belonged to, if known.")


class ExportSource(StrictBase):
    """One export file (or one member of a zip) being ingested."""

    path: str = Field(description="The path given by the user; for a zip member 'dump.zip!conversations.json'.")
    sha256: str = Field(description="sha256 of the file's bytes (the whole zip for a zip).")
    format: ExportFormat = Field(description="Detected (or forced) export format.")
    size_bytes: int = Field(ge=0, description="Size of the file in bytes.")
