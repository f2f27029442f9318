"""What every table and column of archive.db and staging.db means: titles, descriptions and column kinds.

One map beside the schema modules, read by Datasette's metadata (`chatmem inspect`), by the polars frames
(`staging.frames`: which TEXT columns hold JSON, times or 0/1 flags) and by `chatmem staging export`.
tests/test_table_docs.py creates every schema the staging package knows and fails when a table or a column
has no entry here or in staging/table_docs_staging.py (or an entry names a column that no longer exists), so
the maps cannot drift from the code.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace


@dataclass(frozen=True)
class TableDoc:
    """A table's title and description, a description per column, and the columns that need decoding."""

    title: str
    description: str
    columns: dict[str, str]
    json: frozenset[str] = field(default_factory=frozenset)  # TEXT holding JSON: decoded in frames
    times: frozenset[str] = field(default_factory=frozenset)  # ISO-8601 text: datetimes in frames
    flags: frozenset[str] = field(default_factory=frozenset)  # 0/1 integers: booleans in frames
    label_column: str | None = None  # what Datasette shows for a row in links to it


def doc(
    title: str,
    description: str,
    columns: dict[str, str],
    *,
    json: str = "",
    times: str = "",
    flags: str = "",
    label: str | None = None,
) -> TableDoc:
    return TableDoc(
        title, description, columns, frozenset(json.split()), frozenset(times.split()), frozenset(flags.split()), label
    )


RUN_ID = "The run that wrote this row (runs.id)."

SCHEMA_MIGRATIONS = doc(
    "Schema migrations",
    "Which schema versions this file has been through, when, and by which chatmem (staging/migrations.py).",
    {
        "version": "Schema version the migration moved the file to.",
        "description": "What the migration did.",
        "applied_at": "When it was applied (UTC; NULL: the file had it before this table existed).",
        "code_version": "chatmem's version and commit that applied it.",
    },
    times="applied_at",
)

ARCHIVE: dict[str, TableDoc] = {
    "schema_migrations": SCHEMA_MIGRATIONS,
    "sources": doc(
        "Export files",
        "Every export file ingested, once per distinct content (sha256).",
        {
            "id": "Source number.",
            "path": "Where the file was read from.",
            "sha256": "Digest of the file's bytes: the same bytes are never ingested twice.",
            "format": "Detected export format (chatgpt, claude, jsonl, ...).",
            "size_bytes": "File size in bytes.",
            "status": "importing, complete, or partial (some records quarantined or the file was cut short).",
            "imported_at": "When the file was ingested (UTC).",
            "notes": "What went wrong with a partial file, one line per problem.",
        },
        times="imported_at",
        label="path",
    ),
    "conversations": doc(
        "Conversations",
        "One row per conversation of any export.",
        {
            "id": "The export's own conversation id.",
            "title": "Title given by the chat app.",
            "created_at": "When the conversation started (UTC).",
            "updated_at": "When it was last changed (UTC).",
            "current_node": "The message the app showed last: the end of the active path.",
            "format": "Export format it came from.",
            "message_count": "Messages stored for it, every branch included.",
            "source_id": "The export file that last wrote it.",
            "row_hash": "Digest of the compared columns: an unchanged conversation is not rewritten.",
        },
        times="created_at updated_at",
        label="title",
    ),
    "messages": doc(
        "Messages",
        "Every message of every branch; the active path is marked and ordered by seq. Full-text search: messages_fts.",
        {
            "uuid": "The export's own message id.",
            "conversation_id": "Its conversation.",
            "parent_id": "The message it answers (NULL for a root).",
            "role": "user, assistant, system or tool.",
            "author": "Author name where the export gives one.",
            "content_type": "text, code, execution_output, thinking, ... (as the export calls it).",
            "text": "The message rendered to text.",
            "created_at": "When it was written (UTC).",
            "is_active": "1 on the conversation's active path (and still in the latest dump).",
            "is_hidden": "1 for messages the app hides (system prompts, memory tool calls).",
            "seq": "Position along the active path (branches numbered after it).",
            "content_hash": "Digest of the text: the key of the embedding cache.",
            "raw": "The export's own JSON for content types chatmem cannot render.",
            "source_id": "The export file that last wrote it.",
        },
        times="created_at",
        flags="is_active is_hidden",
        label="uuid",
    ),
    "quarantine": doc(
        "Quarantine",
        "Records that could not be used, with where they were and why: nothing is lost.",
        {
            "id": "Row number.",
            "source_id": "The export file.",
            "locator": "Where in the file (JSON path or line number).",
            "reason": "Why it was set aside.",
            "raw": "The record as it was in the file.",
            "conversation_id": "Its conversation, when known.",
        },
    ),
    "message_chronology": doc(
        "Message chronology",
        "NEXT / PREV along each conversation's active path, by seq (a view).",
        {
            "uuid": "The message.",
            "conversation_id": "Its conversation.",
            "seq": "Its position on the active path.",
            "prev_id": "The message before it.",
            "next_id": "The message after it.",
        },
    ),
    "messages_fts": doc(
        "Message search",
        "SQLite FTS5 index over messages.text (external content, kept in step by triggers).",
        {"text": "The indexed message text."},
    ),
    "archive_changes": doc(
        "Archive changes",
        "Conversations whose row or a message's row was updated or deleted, logged by triggers: with new rowids,"
        " what the load reads instead of the whole archive (staging/archive_changes.py).",
        {
            "conversation_id": "The conversation that changed.",
            "version": "Raised on each change: the load reads the conversations above the version it last loaded.",
        },
    ),
    "archive_epochs": doc(
        "Archive epochs",
        "A random token per write transaction of the archive (migration 7), the newest kept in every change-log"
        " mark: a mark whose token is missing was taken of a later archive than this one (a restore from an older"
        " copy), and its reader reads everything once (staging/archive_changes.py). The newest 10,000 are kept.",
        {"id": "Order of the writes.", "token": "24 random hex digits."},
    ),
    "conversation_digests": doc(
        "Conversation digests",
        "Per conversation, the digest of the dump last written to it when writing that dump again would change"
        " nothing; dropped by triggers on any change to its rows. Ingest skips a conversation whose dump has this"
        " digest without reading its messages (staging/archive_digests.py).",
        {
            "conversation_id": "The conversation (conversations.id).",
            "digest": "blake2b of its row hash and each message's compared columns, as the dump gave them.",
        },
    ),
    "raw_digests": doc(
        "Raw digests",
        "Per conversation, a hash of its bytes in the dump last written to it, beside the rows digest those bytes"
        " gave: ingest counts an element of a newer dump with a hash here, whose rows digest is still the"
        " conversation's, without parsing it (archive.db migration 6, ingest/raw_skip.py).",
        {
            "raw": "blake2b of the element's bytes, keyed by the format and the source of the parsing code.",
            "conversation_id": "The conversation (conversations.id).",
            "digest": "The rows digest those bytes gave (conversation_digests.digest while they are current).",
            "messages": "Its message count, counted as read and unchanged when the bytes come again.",
        },
    ),
}


ARCHIVE["visible_messages"] = replace(
    ARCHIVE["messages"],
    title="Visible messages",
    description="The messages a reader sees: a view of messages on the active path (is_active = 1) that the app"
    " does not hide (is_hidden = 0), archive.db migration 4. Side branches, messages gone from the latest dump and"
    " hidden system turns are left out.",
    columns={
        **ARCHIVE["messages"].columns,
        "is_active": "Always 1 here (on the active path).",
        "is_hidden": "Always 0 here (not hidden).",
    },
)


def databases() -> dict[str, dict[str, TableDoc]]:
    """Both maps by database name. staging.db's is in two modules (this one would pass 400 lines):
    staging/table_docs_staging.py and, for the garden and cues stages, staging/table_docs_memory.py."""
    from staging.table_docs_memory import MEMORY  # they import TableDoc from here, so not at the top
    from staging.table_docs_staging import STAGING

    return {"archive": ARCHIVE, "staging": STAGING | MEMORY}


def table_doc(table: str) -> TableDoc | None:
    """The entry of a table of either database (a name in both, schema_migrations, has one entry)."""
    found = databases()
    return found["archive"].get(table) or found["staging"].get(table)
