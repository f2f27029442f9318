"""A file whose top level is an object: one conversation, or conversation objects written one per line.

ChatGPT's and Claude's parsers take a file that starts with `{` as one conversation object (a tool or a user
saved one conversation). A file of such objects one per line (`json.dumps` of each element of the export's list,
a `.jsonl` of conversations) starts the same way, and read as one object it broke at line 2 ("trailing garbage"),
which said the file was cut short when 24 of its 25 conversations were there.

`iter_objects` tells them apart from the first two non-blank lines: when either is a whole JSON object, the file
is read a line at a time and each line is a record (locator `line N`); a line that cannot be read becomes a
quarantine row and the other lines arrive, as in a JSONL file (ingest/jsonl.py). A pretty-printed object has
neither (its first line is `{`, its second `"key": value,`), and a single compact object is one line: both are
read as one object (locator `conversation`) by the streaming reader, which reports a cut where it is.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from typing import Any, BinaryIO

import ijson
import orjson

from contracts.errors import MalformedExportError
from contracts.records import QuarantineRecord
from ingest.detect import RAW_LIMIT, Replay
from ingest.json_errors import cut_inside, cut_problem
from ingest.jsonstream import CHUNK, MAX_DEPTH, iter_json_items

_BOM = b"\xef\xbb\xbf"


def iter_objects(stream: BinaryIO, *, name: str) -> Iterator[tuple[str, Any]]:
    """(locator, record) for the file's one object, or for each line of a file written one object per line; a line
    that cannot be read comes as (locator, QuarantineRecord). Raises MalformedExportError as `iter_json_items`,
    or marked `invalid_utf8` for a line that is not UTF-8 (the stage reads the file again with U+FFFD)."""
    seen, first_two = _first_lines(stream)
    replay: BinaryIO = Replay(seen, stream)  # type: ignore[assignment]
    if not (len(first_two) == 2 and any(isinstance(_loads(line), dict) for line in first_two)):
        for record in iter_json_items(replay, "", name=name):
            yield "conversation", record
        return
    for number, line, ends in _lines(replay):
        if number == 1:
            line = line.removeprefix(_BOM)
        if line.strip():
            yield f"line {number}", _record(line, number, ends, name)


def _first_lines(stream: BinaryIO) -> tuple[bytes, list[bytes]]:
    """The bytes read, and the first two non-blank lines among them (fewer at the end of the file)."""
    parts: list[bytes] = []
    while True:
        chunk = stream.read(CHUNK)
        parts.append(chunk)
        if chunk and b"\n" not in chunk:
            continue  # no line ended in it: splitting again would only find the same lines (a long line stays linear)
        seen = b"".join(parts)
        parts = [seen]
        pieces = seen.split(b"\n")
        lines = [piece for piece in (pieces if not chunk else pieces[:-1]) if piece.strip()]
        if len(lines) >= 2 or not chunk:
            return seen, [lines[0].removeprefix(_BOM), *lines[1:2]] if lines else []


def _loads(line: bytes) -> Any:
    try:
        return orjson.loads(line)
    except orjson.JSONDecodeError:
        return None


def _lines(stream: BinaryIO) -> Iterator[tuple[int, bytes, bool]]:
    """(number, line, whether a newline ends it), read 1 MiB at a time."""
    tail: list[bytes] = []  # the pieces of a line longer than a chunk, joined once it ends
    number = 0
    while chunk := stream.read(CHUNK):
        if b"\n" not in chunk:
            tail.append(chunk)
            continue
        pieces = chunk.split(b"\n")
        pieces[0] = b"".join([*tail, pieces[0]])
        tail = [pieces.pop()]
        for piece in pieces:
            number += 1
            yield number, piece, True
    if last := b"".join(tail):
        yield number + 1, last, False


def _record(line: bytes, number: int, ends: bool, name: str) -> Any:
    """The line's JSON value, or a quarantine row saying why it cannot be read."""
    try:
        line.decode("utf-8")
    except UnicodeDecodeError as exc:
        error = MalformedExportError(name, f"line {number} is not valid UTF-8 (invalid byte at {exc.start})")
        error.invalid_utf8 = True  # type: ignore[attr-defined]  # the stage reads the file again with U+FFFD
        raise error from None
    try:
        return orjson.loads(line)
    except orjson.JSONDecodeError:
        pass  # orjson says neither where nor why in words a user reads: the standard library does
    try:
        return json.loads(line)
    except json.JSONDecodeError as exc:
        said = f"{exc.msg.removesuffix(' at')} at column {exc.colno}"
        if cut_inside(exc, ends):
            # The file stops inside its last line: cut short (every line before it has arrived), so the stage
            # says so and the next run reads it again, as for an export list cut short
            raise MalformedExportError(name, cut_problem(number, said)) from None
        reason = f"invalid JSON: {said}"
    except RecursionError:  # built without recursion, the parser then loses only the message that is too deep
        try:
            return next(ijson.items(io.BytesIO(line), "", use_float=True))
        except (ijson.common.JSONError, ValueError, RecursionError, StopIteration):
            reason = f"JSON nested deeper than {MAX_DEPTH} levels: line skipped"
    raw = line[:RAW_LIMIT].decode("utf-8", "backslashreplace")
    return QuarantineRecord(locator=f"line {number}", reason=reason, raw=raw)
