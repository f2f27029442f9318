"""The generic JSONL parser: one JSON message per line (the format is specified in docs/formats.md).

    {"conversation_id": "c1", "id": "m1", "role": "user", "text": "hi", "created_at": "2024-05-01T10:00:00Z"}

Each line is decoded on its own, so a bad line (not JSON, not an object, a required field missing or of the
wrong type) becomes a quarantine row "line N" and the rest of the file still arrives. Invalid UTF-8 bytes are
treated as in a JSON export: the parser raises MalformedExportError marked `invalid_utf8`, and the stage reads
the file again with them replaced by U+FFFD, noting how many (ingest/stage.py). Otherwise it raises
MalformedExportError only when no line at all is a message.

Grouping. The lines of one conversation need not be contiguous, and a parser cannot emit a conversation
before it knows no later line belongs to it. Holding every conversation in a dict would make memory grow
with the file, and a second pass needs a seekable stream (the stage gives a plain reader). So each good line
is written, already decoded, to a private temporary SQLite database (stdlib; it lives in the page cache and
spills to a temp file when large, and is deleted on close); after the last line the conversations are read
back one at a time in order of first appearance. Memory is bounded by the largest conversation, whatever the
line order; the price is writing the text once more to temp storage, and conversations arrive only after
the whole file is read (quarantine rows arrive as the bad lines are met). A file whose conversations are
contiguous is read back in insertion order, with no index and no sort.

Parents: a line's `parent_id` when it has one; without one (missing or null), the previous line of the same
conversation, so a file without parent ids is a chain in line order.

A conversation split across dumps (ids 1-3 in one file, 4-5 with `parent_id "3"` in the next) is a
`Continuation`: a `parent_id` that names no line of this file is kept (`continues`), and the ingest stage,
which can read the archive, joins the part to the messages already stored (`continued`): the thread is built
over both, so 1-3 stay on the active path and 4 keeps its parent. A parent found nowhere stays an orphan root.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, BinaryIO

from pydantic import PrivateAttr

from contracts.errors import MalformedExportError
from contracts.records import ExportConversation, QuarantineRecord, Role
from ingest.detect import JSONL_REQUIRED, RAW_LIMIT, json_kind, raw_json
from ingest.json_errors import cut_inside, cut_problem
from ingest.jsonstream import MAX_DEPTH
from ingest.timestamps import to_utc
from ingest.tree import DraftMessage, build_thread

CHUNK = 1 << 20
BATCH = 10_000
REQUIRED = JSONL_REQUIRED
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)
_ROLES: dict[str, Role] = {
    "user": "user",
    "human": "user",
    "assistant": "assistant",
    "ai": "assistant",
    "bot": "assistant",
    "model": "assistant",
    "system": "system",
    "developer": "system",
    "tool": "tool",
    "function": "tool",
    "other": "other",
}


class Continuation(ExportConversation):
    """A conversation part whose messages name parents outside this file: `continues` maps each such message to
    the parent it names. Written as it is unless the archive holds those parents (`continued`)."""

    _continues: dict[str, str] = PrivateAttr(default_factory=dict)
    _drafts: list[DraftMessage] = PrivateAttr(default_factory=list)

    @property
    def continues(self) -> dict[str, str]:
        return self._continues

    @property
    def drafts(self) -> list[DraftMessage]:
        return self._drafts


def continued(part: Continuation, stored: Sequence[Mapping[str, Any]]) -> ExportConversation:
    """The part joined to the conversation's stored messages (archive rows, in seq order): one thread built over
    both, the part's version winning for an id in both. Unchanged when no named parent is stored."""
    have = {str(row["uuid"]) for row in stored}
    if not have & set(part.continues.values()):
        return part
    ids = {d.uuid for d in part.drafts}
    drafts = [
        DraftMessage(
            uuid=str(row["uuid"]),
            parent_ref=None if row["parent_id"] is None else str(row["parent_id"]),
            role=row["role"],
            author=row["author"],
            content_type=str(row["content_type"]),
            text=str(row["text"]),
            created_at=None if row["created_at"] is None else datetime.fromisoformat(str(row["created_at"])),
            is_hidden=bool(row["is_hidden"]),
            raw=row["raw"],
        )
        for row in stored
        if str(row["uuid"]) not in ids
    ]
    thread = build_thread(part.id, [*drafts, *part.drafts], locator=f"conversation[{part.id}].")
    times = [m.created_at for m in thread.messages if m.created_at is not None]
    return ExportConversation(
        id=part.id,
        title=part.title,
        created_at=min(times, default=None),
        updated_at=max(times, default=None),
        current_node=thread.current_node,
        messages=thread.messages,
    )


# conv (order of first appearance), line, id, parent, role, author, content_type, text, created (µs, epoch)
Row = tuple[int, int, str, str | None, str, str | None, str, str, int | None]


def parse(stream: BinaryIO, *, name: str) -> Iterator[ExportConversation | QuarantineRecord]:
    """Yield a quarantine row per bad line as it is read, then the conversations in order of appearance."""
    spill = sqlite3.connect("")  # "" = private temporary database, deleted when closed
    try:
        spill.executescript(
            "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA cache_size=-32768;"
            "CREATE TABLE m (conv INTEGER, line INTEGER, id TEXT, parent TEXT, role TEXT, author TEXT,"
            " content_type TEXT, text TEXT, created INTEGER);"
        )
        conversations: dict[str, int] = {}  # conversation id → order of first appearance
        titles: dict[int, str] = {}
        contiguous = True
        good = bad = 0
        first_bad = ""  # the first bad line's reason: said when no line is a message
        batch: list[Row] = []
        cut: MalformedExportError | None = None  # the file stops inside its last line: raised once the rest is out
        for number, (line, ends) in enumerate(_lines(stream), start=1):
            line = _unbracketed(line, number)
            if not line.strip():
                continue  # blank lines (and the final newline's empty piece) are not records
            try:
                decoded = _decode(line, number, ends)
            except UnicodeDecodeError as exc:
                error = MalformedExportError(name, f"line {number} is not valid UTF-8 (invalid byte at {exc.start})")
                error.invalid_utf8 = True  # type: ignore[attr-defined]  # the stage re-reads with U+FFFD
                raise error from None
            except _Cut as exc:
                cut = MalformedExportError(name, str(exc))
                continue
            if isinstance(decoded, QuarantineRecord):
                bad += 1
                first_bad = first_bad or f"{decoded.locator}: {decoded.reason}"
                yield decoded
                continue
            record, conversation_id = decoded
            conv = conversations.setdefault(conversation_id, len(conversations))
            contiguous = contiguous and conv >= len(conversations) - 1
            title = record.get("conversation_title") or record.get("title")
            if isinstance(title, str) and conv not in titles:
                titles[conv] = title
            parent = record.get("parent_id")
            created = to_utc(record.get("created_at"))
            role = record["role"].strip().lower()
            author = record.get("author")
            content_type = record.get("content_type")
            batch.append(
                (
                    conv,
                    number,
                    _id(record["id"]),
                    None if parent is None else _id(parent),
                    _ROLES.get(role, "other"),
                    author if isinstance(author, str) else (None if role in _ROLES else record["role"] or None),
                    content_type if isinstance(content_type, str) else "text",
                    record["text"],
                    None if created is None else (created - _EPOCH) // _MICROSECOND,
                )
            )
            good += 1
            if len(batch) >= BATCH:
                spill.executemany("INSERT INTO m VALUES (?,?,?,?,?,?,?,?,?)", batch)
                batch.clear()
        spill.executemany("INSERT INTO m VALUES (?,?,?,?,?,?,?,?,?)", batch)
        if not good and cut is not None:
            raise cut  # nothing but the cut line: nothing arrived (the stage: failed)
        if not good and bad:
            problem = f"no line is a JSONL message ({bad} bad line(s), quarantined; {first_bad})"
            raise MalformedExportError(name, problem)
        if contiguous:
            rows = spill.execute("SELECT * FROM m ORDER BY rowid")
        else:
            spill.execute("CREATE INDEX m_order ON m (conv, line)")
            rows = spill.execute("SELECT * FROM m ORDER BY conv, line")
        ids = list(conversations)
        for conv, group in _grouped(rows):
            yield from _conversation(ids[conv], group, titles.get(conv))
        if cut is not None:
            # after every conversation of the lines before it: cut short, as a JSONL of conversations (and an export
            # list) cut short is; the stage keeps what arrived, quarantines the rest, exits 1 and reads it again
            raise cut
    finally:
        spill.close()


class _Cut(Exception):
    """The file ends inside its last line (`_decode`): its message is the problem to say."""


def _lines(stream: BinaryIO) -> Iterator[tuple[bytes, bool]]:
    """(line, whether a newline ends it): a stream split on b"\\n" reading 1 MiB at a time (the stage's readers
    have only `read`)."""
    tail: list[bytes] = []
    while chunk := stream.read(CHUNK):
        pieces = chunk.split(b"\n")
        if len(pieces) == 1:
            tail.append(chunk)
            continue
        tail.append(pieces[0])
        yield b"".join(tail), True
        for piece in pieces[1:-1]:
            yield piece, True
        tail = [pieces[-1]]
    last = b"".join(tail)
    if last:
        yield last, False


def _unbracketed(line: bytes, number: int) -> bytes:
    """The line without the brackets of JSONL written in brackets (ingest/detect.py `_bracketed_jsonl`): the `[` that
    opens the first line and a `]` alone on a line hold no message, so they are no bad line either."""
    if number == 1:
        body = line.removeprefix(b"\xef\xbb\xbf").lstrip()
        return body[1:] if body.startswith(b"[") else line
    return b"" if line.strip() == b"]" else line


def _decode(line: bytes, number: int, ends: bool = True) -> tuple[dict[str, Any], str] | QuarantineRecord:
    """The line's record and conversation id, or a quarantine row saying why it cannot be used. Raises `_Cut` for
    the last line, with no newline after it, whose JSON stops before it is whole (ingest/json_errors.cut_inside)."""
    if number == 1 and line.startswith(b"\xef\xbb\xbf"):
        line = line[3:]
    text = line.decode("utf-8")  # UnicodeDecodeError: the caller asks for a re-read with U+FFFD
    try:
        record = json.loads(text)
    except json.JSONDecodeError as exc:
        said = exc.msg.removesuffix(" at")  # "Unterminated string starting at" + " at column 54"
        if cut_inside(exc, ends):
            raise _Cut(cut_problem(number, f"{said} at column {exc.colno}")) from None
        return _bad(number, f"invalid JSON: {said} at column {exc.colno}{_glued(text)}", line)
    except RecursionError:
        return _bad(number, f"JSON nested deeper than {MAX_DEPTH} levels: line skipped", line)
    if not isinstance(record, dict):
        return _bad(number, f"a JSON {json_kind(record)}, not an object with {', '.join(REQUIRED)}", line)
    missing = [key for key in REQUIRED if record.get(key) is None]
    if missing:
        return _bad(number, f"missing required field(s): {', '.join(missing)}", line, record)
    for key in ("conversation_id", "id", "parent_id"):
        value = record.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, str | int)):
            return _bad(number, f"{key} must be a string or an integer", line, record)
    for key in ("role", "text"):
        if not isinstance(record[key], str):
            return _bad(number, f"{key} must be a string", line, record)
    return record, _id(record["conversation_id"])


def _glued(text: str) -> str:
    """For a bad line that holds records joined by the two characters backslash and n (a line break written as "\\n":
    session 37's own test wrote its "two bad lines" so, and the good record after them was lost in the one bad line
    it made): say so, and how many of its pieces are whole JSON objects, so that the row says why messages seem
    missing. "" when no piece after the first is a JSON object (a backslash-n in a string of a broken record)."""
    pieces = text.split("\\n")
    whole = 0
    for piece in pieces[1:]:
        try:
            whole += isinstance(json.loads(piece), dict)
        except (ValueError, RecursionError):
            continue
    if not whole:
        return ""
    return (
        f" (the line holds {len(pieces)} pieces joined by the two characters \\n, not by line breaks, {whole} of"
        " them a whole JSON object: write one record per line)"
    )


def _bad(number: int, reason: str, line: bytes, record: object = None) -> QuarantineRecord:
    conversation_id = record.get("conversation_id") if isinstance(record, dict) else None
    return QuarantineRecord(
        locator=f"line {number}",
        reason=reason,
        raw=line[:RAW_LIMIT].decode("utf-8", "backslashreplace"),
        conversation_id=None if conversation_id is None else str(conversation_id),
    )


def scoped_id(conversation_id: str, message_id: str) -> str:
    """The archive id of a JSONL message: `<conversation_id>:<id>`, with `%` and `:` in the conversation id
    written `%25` and `%3A`, so that the first `:` always ends it and no two (conversation, id) pairs share an
    archive id: ("a:b", "c") is `a%3Ab:c`, ("a", "b:c") is `a:b:c` (both were `a:b:c`, and the second was
    quarantined as a message of another conversation). A conversation id with neither character, nearly every
    one, gives the id it always gave, so archives made before keep their ids (docs/formats.md)."""
    return f"{conversation_id.replace('%', '%25').replace(':', '%3A')}:{message_id}"


def _id(value: str | int) -> str:
    return value if isinstance(value, str) else str(value)


def _grouped(rows: Iterable[Row]) -> Iterator[tuple[int, list[Row]]]:
    current: list[Row] = []
    for row in rows:
        if current and row[0] != current[0][0]:
            yield current[0][0], current
            current = []
        current.append(row)
    if current:
        yield current[0][0], current


def _conversation(
    conversation_id: str, rows: list[Row], title: str | None
) -> Iterator[ExportConversation | QuarantineRecord]:
    drafts: list[DraftMessage] = []
    seen: dict[str, int] = {}
    previous: str | None = None
    for _, number, uuid, parent, role, author, content_type, text, created in rows:
        if uuid in seen:
            reason = f"duplicate message id {uuid!r} (first on line {seen[uuid]})"
            record = {"conversation_id": conversation_id, "id": uuid, "parent_id": parent, "text": text}
            yield QuarantineRecord(
                locator=f"line {number}", reason=reason, raw=raw_json(record), conversation_id=conversation_id
            )
            continue
        seen[uuid] = number
        # Ids in this format only need to be unique within their conversation (the docs promise that), but
        # archive message ids are global: scope them by the conversation so two logs may both have a "1".
        drafts.append(
            DraftMessage(
                uuid=scoped_id(conversation_id, uuid),
                parent_ref=previous if parent is None else scoped_id(conversation_id, parent),
                role=role,  # type: ignore[arg-type]  # one of _ROLES' values, as written above
                author=author,
                content_type=content_type,
                text=text,
                created_at=None if created is None else _EPOCH + created * _MICROSECOND,
            )
        )
        previous = scoped_id(conversation_id, uuid)
    here = {d.uuid for d in drafts}
    continues = {d.uuid: d.parent_ref for d in drafts if d.parent_ref is not None and d.parent_ref not in here}
    saved = [DraftMessage(**{name: getattr(d, name) for name in DraftMessage.__slots__}) for d in drafts]
    thread = build_thread(conversation_id, drafts, locator=f"conversation[{conversation_id}].")
    yield from thread.quarantined
    times = [m.created_at for m in thread.messages if m.created_at is not None]
    fields: dict[str, Any] = {
        "id": conversation_id,
        "title": title,
        "created_at": min(times, default=None),
        "updated_at": max(times, default=None),
        "current_node": thread.current_node,
        "messages": thread.messages,
    }
    if continues:  # parents in an earlier dump, perhaps: the stage joins it to what the archive holds
        part = Continuation(**fields)
        part._continues, part._drafts = continues, saved
        yield part
    else:
        yield ExportConversation(**fields)
