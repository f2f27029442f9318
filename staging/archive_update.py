"""Writing into archive.db a conversation it already holds (staging/archive.py `ArchiveWriter` does the rest): insert
what is new, update what changed, keep (inactive) what a newer dump no longer holds, never move a conversation back in
time for an older dump; and a message whose id another conversation holds is quarantined, not overwritten. With what
the writer's two paths (fresh conversations, known ones) share: the counts, the message insert, the collision row.
Split from staging/archive.py (session 35) by that line: the writer's bookkeeping there, a known conversation here.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from contracts.records import QuarantineRecord
from staging import archive_digests
from staging.archive_rows import (
    COMPARED_COLUMNS,
    CONVERSATION_ID,
    MESSAGE_COLUMNS,
    UUID,
    ConversationRows,
    MessageRow,
    compared,
    relocated,
    row_as_json,
)
from staging.db import IN_VALUES, json_values

# The reason of a message whose id another conversation holds (`collision`), as a LIKE pattern: `staging failures`
# counts a re-export's many such rows as one group
TAKEN_LIKE = "message id % already belongs to conversation %; not overwritten"


@dataclass
class WriteCounts:
    conversations: int = 0
    inserted: int = 0
    updated: int = 0
    unchanged: int = 0
    retired: int = 0  # kept messages that a newer dump of their conversation no longer contains
    quarantined: int = 0

    def add(self, other: WriteCounts) -> None:
        for name in self.__dataclass_fields__:
            setattr(self, name, getattr(self, name) + getattr(other, name))


INSERT_MESSAGE = (
    f"INSERT INTO messages ({', '.join(MESSAGE_COLUMNS)}, source_id)"
    f" VALUES ({', '.join('?' * (len(MESSAGE_COLUMNS) + 1))})"
)
UPDATE_MESSAGE = (
    "UPDATE messages SET "
    + ", ".join(f"{column} = ?{index + 1}" for index, column in enumerate(MESSAGE_COLUMNS) if index)
    + f", source_id = ?{len(MESSAGE_COLUMNS) + 1} WHERE uuid = ?1"
)


def write_known(
    conn: sqlite3.Connection,
    source_id: int,
    conversation: ConversationRows,
    counts: WriteCounts,
    found: str,
    known: dict[str, str | None],
) -> list[QuarantineRecord]:
    """A conversation the archive already has: insert what is new, update what changed, keep the rest.

    Records its digest `found` (and in `known`) when writing it again would change nothing: it was not an
    older dump and quarantined no id collision."""
    existing = conn.execute(
        "SELECT updated_at, row_hash FROM conversations WHERE id = ?", (conversation.id,)
    ).fetchone()
    # An older dump of a conversation arriving after a newer one may add messages, but must not move the
    # active path or the title back in time.
    new_updated = conversation.updated_at
    older_dump = existing["updated_at"] is not None and new_updated is not None and new_updated < existing["updated_at"]
    stored = stored_messages(conn, [str(row[UUID]) for row in conversation.messages])
    collisions: list[QuarantineRecord] = []
    inserts: list[MessageRow] = []
    updates: list[MessageRow] = []
    kept: set[str] = set()
    next_seq = 0
    if older_dump:
        found = conn.execute(
            "SELECT COALESCE(MAX(seq) + 1, 0) FROM messages WHERE conversation_id = ?", (conversation.id,)
        ).fetchone()
        next_seq = int(found[0])
    for row in conversation.messages:
        uuid = str(row[UUID])
        previous = stored.get(uuid)
        if previous is not None and previous[CONVERSATION_ID] != conversation.id:
            collisions.append(collision(row, str(previous[CONVERSATION_ID])))
            continue
        kept.add(uuid)
        if previous is None and older_dump:
            inserts.append((*relocated(row, next_seq), source_id))
            next_seq += 1
        elif previous is None:
            inserts.append((*row, source_id))
        elif not older_dump and previous != compared(row):
            updates.append((*row, source_id))
        else:
            counts.unchanged += 1
    if not older_dump and existing["row_hash"] != conversation.row_hash:
        # A dump that continues a conversation may not repeat its title (a JSONL file with the new lines
        # only): the stored title stays, and so does the earliest start the archive has seen.
        title, created_at, *rest = conversation.fields
        conn.execute(
            "UPDATE conversations SET title = COALESCE(?, title),"
            " created_at = COALESCE(MIN(?, created_at), ?, created_at), updated_at = ?, current_node = ?,"
            " format = ?, row_hash = ?, source_id = ? WHERE id = ?",
            (title, created_at, created_at, *rest, conversation.row_hash, source_id, conversation.id),
        )
        counts.conversations += 1
    if inserts:
        conn.executemany(INSERT_MESSAGE, inserts)
        counts.inserted += len(inserts)
    if updates:
        conn.executemany(UPDATE_MESSAGE, updates)
        counts.updated += len(updates)
    if not older_dump:
        counts.retired += _retire_missing(conn, conversation.id, kept, len(conversation.messages))
    recount(conn, conversation.id)
    stays = not older_dump and not collisions
    if stays:  # after every write above: their triggers dropped the old digest
        archive_digests.put(conn, [(conversation.id, found)])
    known[conversation.id] = found if stays else None
    return collisions


def stored_messages(conn: sqlite3.Connection, uuids: list[str]) -> dict[str, MessageRow]:
    rows = conn.execute(f"SELECT {COMPARED_COLUMNS} FROM messages WHERE uuid IN {IN_VALUES}", (json_values(uuids),))
    return {row[0]: tuple(row) for row in rows}


def recount(conn: sqlite3.Connection, conversation_id: str) -> None:
    conn.execute(
        "UPDATE conversations SET message_count ="
        " (SELECT COUNT(*) FROM messages WHERE conversation_id = ?1) WHERE id = ?1",
        (conversation_id,),
    )


def _retire_missing(conn: sqlite3.Connection, conversation_id: str, present: set[str], first_free_seq: int) -> int:
    """Messages stored earlier but absent from this newer dump: kept, inactive, ordered after the rest."""
    stored = conn.execute("SELECT COUNT(*) FROM messages WHERE conversation_id = ?", (conversation_id,))
    if int(stored.fetchone()[0]) == len(present):  # every stored message is in the dump (the common case): an
        return 0  # index count, no row read (`present` is a subset of the conversation's stored messages)
    rows = conn.execute(
        "SELECT uuid, is_active, seq FROM messages WHERE conversation_id = ? ORDER BY seq, uuid",
        (conversation_id,),
    ).fetchall()
    missing = [row for row in rows if row["uuid"] not in present]
    changed = 0
    for offset, row in enumerate(missing):
        seq = first_free_seq + offset
        if row["is_active"] or row["seq"] != seq:
            conn.execute("UPDATE messages SET is_active = 0, seq = ? WHERE uuid = ?", (seq, row["uuid"]))
            changed += 1
    return changed


def collision(row: MessageRow, owner: str) -> QuarantineRecord:
    uuid, conversation_id = row[UUID], str(row[CONVERSATION_ID])
    return QuarantineRecord(
        locator=f"conversation[{conversation_id}].message[{uuid}]",
        reason=f"message id {uuid!r} already belongs to conversation {owner!r}; not overwritten",
        raw=row_as_json(row[: len(MESSAGE_COLUMNS)]),
        conversation_id=conversation_id,
    )
