"""Streaming JSON reading with errors that name the file and the byte position.

Parsers read one top-level record (one conversation) at a time, so memory does not grow with the file. Any
JSON error becomes a `MalformedExportError` saying where it happened.

A top-level array (ChatGPT and Claude exports) takes a fast path, `iter_array_items`: exports are
dominated by object-building cost, and orjson builds objects several times faster than ijson. The array is
cut into elements without a tokenizer: an element that starts with `{` ends at some `}` followed by `,` or
`]`; each such candidate is tried with `orjson.loads`. A wrong candidate (a `}` inside a string or a nested
object) can never parse, because the slice would leave a string or an object open, so a slice that parses is
exactly one element. After a few wrong candidates in one element, or for an element that is not an object,
the standard library's `raw_decode` finds the end instead, so the cost stays linear.

Nesting: orjson refuses more than 1024 levels and the standard library recurses (RecursionError near 1000).
An element nested deeper is skipped by a scanner that counts brackets without recursing, and yielded as a
`TooDeep` marker: the parser turns it into a quarantine row, and the rest of the file is read as usual.
`guard_depth` does the same for a record that parses but is too deep to process; the parsers catch the
RecursionError of one message first (TOO_DEEP_MESSAGE), so that a conversation loses only that message.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, BinaryIO, TypeVar

import ijson
import orjson

from contracts.errors import MalformedExportError
from contracts.records import QuarantineRecord
from ingest.json_errors import Before, advance, yajl_error
from ingest.raw_skip import RawLookup

CHUNK = 1 << 20  # 1 MiB reads
MAX_DEPTH = 1024  # orjson's limit; the standard library's recursion gives out near the same depth
_RAW_EXCERPT = 1000  # bytes of a skipped record kept in its quarantine row
T = TypeVar("T")


@dataclass(frozen=True)
class TooDeep:
    """An element of the top-level array that is nested too deep to parse; skipped, its place kept."""

    offset: int  # file offset of its first byte
    size: int
    excerpt: str
    data: bytes = field(default=b"", repr=False)  # the element itself, for `load`

    def load(self) -> Any:
        """The element as Python objects, built without recursion (ijson's C builder keeps its own stack), for
        a parser that can then quarantine only the deep part (a message) instead of the whole record; None
        when it cannot be read that way either."""
        try:
            return next(ijson.items(io.BytesIO(self.data), "", use_float=True), None)
        except (ijson.common.JSONError, ValueError, RecursionError):
            return None

    def quarantine(self, locator: str) -> QuarantineRecord:
        reason = (
            f"JSON nested deeper than {MAX_DEPTH} levels ({self.size} bytes at byte {self.offset}):"
            " record skipped, the rest of the file is read"
        )
        return QuarantineRecord(locator=locator, reason=reason, raw=self.excerpt)


TOO_DEEP_MESSAGE = f"message nested deeper than {MAX_DEPTH} JSON levels: not rendered"


def too_deep_link(message: object, id_key: str, parent_key: str, root: str) -> dict[str, str | None]:
    """{id: parent} of a message lost to nesting, when both can be read: given to `build_thread` as a
    structural node, so that its replies keep their place in the conversation instead of becoming roots."""
    if not isinstance(message, dict) or not isinstance(message.get(id_key), str):
        return {}
    parent = message.get(parent_key)
    return {message[id_key]: parent if isinstance(parent, str) and parent != root else None}


def guard_depth(items: Iterator[T], locator: str) -> Iterator[T | QuarantineRecord]:
    """The rows one record turns into, or one quarantine row if processing it recursed too deep."""
    try:
        produced = list(items)
    except RecursionError:
        reason = f"JSON nested too deep to process (over {MAX_DEPTH} levels): record skipped"
        yield QuarantineRecord(locator=locator, reason=reason, raw="")
        return
    yield from produced


class _CountingReader(io.RawIOBase):
    """Wrap a binary stream and count bytes read, so a parse error can say where it happened."""

    def __init__(self, stream: BinaryIO) -> None:
        self._stream = stream
        self.position = 0
        # the last chunk read (the buffer yajl fails in) and where it starts: a JSON error says its line and column
        self.chunk = b""
        self.before = Before()

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        data = self._stream.read(size)
        if self.position == 0 and data.startswith(b"\xef\xbb\xbf"):
            data = data[3:] or self._stream.read(size)  # yajl rejects a UTF-8 BOM (Windows tools write one)
            self.position += 3
        self.position += len(data)
        self.before = advance(self.before, self.chunk)
        self.chunk = data
        return data

    def readinto(self, buffer: Any) -> int:
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)


def iter_json_items(stream: BinaryIO, prefix: str, *, name: str, lookup: RawLookup | None = None) -> Iterator[Any]:
    """Yield each value under `prefix` ('item' for a top-level list) as Python objects.

    Numbers come back as float/int (not Decimal). Raises MalformedExportError naming `name` and roughly
    where in the file the JSON broke (the error is raised after every complete item before it was yielded).
    `lookup`: a top-level list's elements whose bytes the archive knows come back as `Unchanged` markers,
    unparsed (ingest/raw_skip.py).
    """
    if prefix == "item":
        yield from iter_array_items(stream, name=name, lookup=lookup)
        return
    reader = _CountingReader(stream)
    try:
        yield from ijson.items(reader, prefix, use_float=True, buf_size=CHUNK)
    except ijson.common.IncompleteJSONError as exc:
        error = MalformedExportError(name, _describe(exc, reader, truncated=True))
        error.invalid_utf8 = "UTF8" in str(exc)  # type: ignore[attr-defined]
        raise error from exc
    except ijson.common.JSONError as exc:
        raise MalformedExportError(name, _describe(exc, reader, truncated=False)) from exc
    except UnicodeDecodeError as exc:
        raise MalformedExportError(name, f"not UTF-8 text near byte {reader.position}: {exc.reason}") from exc


def _without_position(message: str) -> str:
    """`Unterminated string starting at` -> `unterminated string`; `Expecting ',' delimiter` -> as it is, lower."""
    words = message.split()
    while words and words[-1] in ("at", "starting"):
        words.pop()
    text = " ".join(words)
    return text[:1].lower() + text[1:]


def _describe(exc: Exception, reader: _CountingReader, *, truncated: bool) -> str:
    """One line: yajl's message draws the text and a caret under it over three lines; this says the line and
    column instead (ingest/json_errors.py), or how far the file was read when they cannot be found."""
    if "UTF8" in str(exc):
        return f"not valid UTF-8 within the first {reader.position} bytes"
    kind = "invalid or truncated JSON" if truncated else "invalid JSON"
    detail = yajl_error(exc, reader.chunk, reader.before)[:200]
    if " at line " in detail:
        return f"{kind} ({detail})"
    return f"{kind} within the first {reader.position} bytes ({detail})"


_WHITESPACE = b" \t\r\n"
# The end of an object followed by the next object or by the end of the array. Inside a conversation this
# pattern only occurs in arrays of objects (message parts, citations), so wrong candidates are few.
_OBJECT_END = re.compile(rb"\}[ \t\r\n]*(?:,[ \t\r\n]*\{|\])")
_MAX_SCAN_BYTES = 64 << 20  # past this without a parse, an element is decoded by the fallback instead
_MAX_WRONG_CANDIDATES = 8
_DECODER = json.JSONDecoder()


class _ArrayReader:
    """A byte buffer over the stream that keeps only the unconsumed tail plus the element being read."""

    def __init__(self, stream: BinaryIO, name: str) -> None:
        self.stream = stream
        self.name = name
        self.buf = b""
        self.pos = 0  # index into buf
        self.offset = 0  # file offset of buf[0]
        self.eof = False

    def more(self) -> bool:
        """Read another chunk (dropping what is consumed). False at end of file."""
        if self.eof:
            return False
        chunk = self.stream.read(CHUNK)
        if not chunk:
            self.eof = True
            return False
        if self.offset == 0 and not self.buf and chunk.startswith(b"\xef\xbb\xbf"):
            chunk = chunk[3:]  # a UTF-8 BOM (Windows tools write one) is not JSON
            self.offset = 3
        if self.pos:
            self.offset += self.pos
            self.buf = self.buf[self.pos :]
            self.pos = 0
        self.buf += chunk
        return True

    def peek(self) -> int | None:
        """The next non-whitespace byte (consuming the whitespace), or None at end of file."""
        while True:
            while self.pos < len(self.buf) and self.buf[self.pos] in _WHITESPACE:
                self.pos += 1
            if self.pos < len(self.buf):
                return self.buf[self.pos]
            if not self.more():
                return None

    def fail(self, problem: str, *, invalid_utf8: bool = False) -> MalformedExportError:
        error = MalformedExportError(self.name, f"{problem} at byte {self.offset + self.pos}")
        error.invalid_utf8 = invalid_utf8  # type: ignore[attr-defined]
        error.byte_offset = self.offset + self.pos  # type: ignore[attr-defined]  # in the stream read: see in_file()
        return error


def iter_array_items(stream: BinaryIO, *, name: str, lookup: RawLookup | None = None) -> Iterator[Any]:
    """Yield each element of a top-level JSON array, one at a time (see the module docstring). With `lookup`,
    an object element whose bytes it knows is an `Unchanged` marker, and `lookup.last` is the hash of the
    element just parsed (None when the fallback decoded it)."""
    reader = _ArrayReader(stream, name)
    first = reader.peek()
    if first is None:
        raise reader.fail("empty file, expected a JSON array")
    if first != ord("["):
        raise reader.fail("invalid JSON: expected a JSON array '['")
    reader.pos += 1
    if reader.peek() == ord("]"):
        return
    while True:
        head = reader.peek()
        if head is None:
            raise reader.fail("invalid or truncated JSON: the file ends inside the array")
        if lookup is not None:
            lookup.last = None
        item = _object_by_candidates(reader, lookup) if head == ord("{") else None
        if item is None:
            item = _decode_with_stdlib(reader)
        self_delimited = head in (ord("{"), ord("["), ord('"'))
        if self_delimited:
            yield item  # complete even if the file is cut right after it
        separator = reader.peek()
        if not self_delimited and separator in (ord(","), ord("]")):
            yield item  # a number or literal is only known to be whole once its separator is seen
        if separator == ord(","):
            reader.pos += 1
        elif separator == ord("]"):
            return
        elif separator is None:
            raise reader.fail("invalid or truncated JSON: the file ends inside the array")
        else:
            raise reader.fail(f"invalid JSON: expected ',' or ']' after an element, found {chr(separator)!r}")


def _object_by_candidates(reader: _ArrayReader, lookup: RawLookup | None = None) -> Any | None:
    """Find the element's end by trying each `}` + `,`/`]` candidate with orjson. None: give up (fallback).

    With `lookup`, each candidate's bytes are hashed first: a hash it knows is a whole element read before
    (a wrong candidate leaves an object open, so its bytes were never a whole element), returned unparsed."""
    start = reader.pos
    search_from = start
    wrong = 0
    while wrong < _MAX_WRONG_CANDIDATES:
        match = _OBJECT_END.search(reader.buf, search_from)
        if match is None:
            if len(reader.buf) - start > _MAX_SCAN_BYTES:
                return None  # e.g. a number or string element: no `}` candidate will ever parse
            # Read on; re-search the last bytes too, since a candidate may straddle the chunk boundary.
            resume = max(start, len(reader.buf) - 64) - start
            offset_before = reader.offset
            if not reader.more():
                return None
            start -= reader.offset - offset_before  # the buffer dropped the consumed bytes before `start`
            search_from = start + resume
            continue
        end = match.start() + 1
        element = reader.buf[start:end]
        raw = lookup.hash(element) if lookup is not None else None
        if raw is not None and (known := lookup.take(raw)) is not None:  # type: ignore[union-attr]
            reader.pos = end
            return known
        try:
            item = orjson.loads(element)
        except orjson.JSONDecodeError:
            wrong += 1
            search_from = end
            continue
        reader.pos = end
        if lookup is not None:
            lookup.last = raw
        return item
    return None


def _decode_with_stdlib(reader: _ArrayReader) -> Any:
    """Decode one element with json.raw_decode, reading more while it may only be incomplete."""
    while True:
        data = reader.buf[reader.pos :]
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            if exc.start >= len(data) - 3 and not reader.eof:  # a character cut by the chunk boundary
                text = data[: exc.start].decode("utf-8")
            else:
                reader.pos += exc.start
                raise reader.fail("not valid UTF-8", invalid_utf8=True) from exc
        try:
            item, end = _DECODER.raw_decode(text)
        except RecursionError:
            return _skip_too_deep(reader)
        except json.JSONDecodeError as exc:
            # An element cut by the end of the buffer fails at the end, or as a string left open; any other
            # error is in the data itself and is reported without reading the rest of the file.
            maybe_incomplete = exc.pos >= len(text) - 64 or exc.msg.startswith("Unterminated string")
            if maybe_incomplete and _grow(reader, len(data)):
                continue
            reader.pos += len(text[: exc.pos].encode("utf-8"))
            kind = "invalid or truncated JSON" if maybe_incomplete else "invalid JSON"
            # json's message without its position ("Unterminated string starting at"): fail() says where
            raise reader.fail(f"{kind} ({_without_position(exc.msg)})") from exc
        if end >= len(text) - 1 and not reader.eof and _grow(reader, len(data)):
            continue  # a number or literal that touches the end of the buffer may go on in the next chunk
        reader.pos += len(text[:end].encode("utf-8"))
        return item


_STRUCTURE = re.compile(rb'[\[\]{}"]')
_STRING_REST = re.compile(rb'(?:[^"\\]|\\.)*"', re.DOTALL)


def _skip_too_deep(reader: _ArrayReader) -> TooDeep:
    """Step over one array or object by counting brackets (strings skipped whole), without recursion."""
    start = reader.pos
    offset = reader.offset + start
    excerpt = reader.buf[start : start + _RAW_EXCERPT].decode("utf-8", "replace")
    depth = 0
    at = 0  # relative to `start`: reader.more() drops consumed bytes, so absolute indexes would move
    while True:
        found = _STRUCTURE.search(reader.buf, start + at)
        string_end = None
        if found is not None and reader.buf[found.start()] == ord('"'):
            string_end = _STRING_REST.match(reader.buf, found.start() + 1)
        if found is None or (reader.buf[found.start()] == ord('"') and string_end is None):
            at = (found.start() if found is not None else len(reader.buf)) - start
            before = reader.offset
            if not reader.more():
                raise reader.fail("invalid or truncated JSON: the file ends inside a deeply nested value")
            start -= reader.offset - before
            continue
        if string_end is not None:
            at = string_end.end() - start
            continue
        depth += 1 if reader.buf[found.start()] in b"[{" else -1
        at = found.end() - start
        if depth <= 0:
            reader.pos = found.end()
            return TooDeep(offset=offset, size=at, excerpt=excerpt, data=bytes(reader.buf[start : found.end()]))


def _grow(reader: _ArrayReader, have: int) -> bool:
    """Read until the buffer holds about twice `have` unconsumed bytes (so retries stay linear)."""
    grew = False
    while len(reader.buf) - reader.pos < 2 * have + CHUNK and reader.more():
        grew = True
    return grew
