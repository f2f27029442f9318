"""One line for a JSON error of ijson's C backend (yajl), whose message draws the text around the error and a caret
under it, over three lines:

    lexical error: invalid string in json text.
                                           {not json
                         (right here) ------^

An error message of chatmem is one line, so the drawing is replaced by where the error is:

    yajl_error(exc, chunk, before)  ->  "lexical error: invalid string in json text at line 1, column 2"

yajl draws the bytes of the buffer it was parsing (the last chunk ijson read) around the failing byte, always in
the same column; the failing byte is found again by drawing that buffer the same way at each offset
(yajl_render_error_string in yajl_parser.c) and keeping the one that matches.
"""

from __future__ import annotations

import ast
import json
from dataclasses import dataclass

ARROW = "(right here) ------^"
_NEAR = 30  # yajl draws up to 30 bytes either side of the failing byte
_CARET = 40  # the column of the failing byte in the drawing (the caret's)


@dataclass(frozen=True, slots=True)
class Before:
    """Where a chunk starts in its file: the lines before it, and the bytes of its first line read before it."""

    lines: int = 0
    column: int = 0


def yajl_error(exc: BaseException, chunk: bytes = b"", before: Before = Before()) -> str:
    """yajl's reason in one line (`parse error: premature EOF`), with the line and column (1-based, in bytes) of
    the failing byte when it is found in `chunk`, the buffer yajl was given."""
    message = _raw(str(exc))
    reason = " ".join(message.split(b"\n", 1)[0].decode("utf-8", "replace").split()).rstrip(".")
    offset = _offset(message, chunk)
    if offset is None:
        return reason
    line_start = chunk.rfind(b"\n", 0, offset) + 1
    lines = before.lines + chunk.count(b"\n", 0, offset)
    column = offset - line_start + (before.column if line_start == 0 else 0)
    return f"{reason} at line {lines + 1}, column {column + 1}"


def advance(before: Before, chunk: bytes) -> Before:
    """Where the chunk after `chunk` starts."""
    newlines = chunk.count(b"\n")
    if not newlines:
        return Before(before.lines, before.column + len(chunk))
    return Before(before.lines + newlines, len(chunk) - chunk.rfind(b"\n") - 1)


def _raw(message: str) -> bytes:
    """yajl's message as the bytes it wrote: ijson decodes them as UTF-8, or gives their repr when they are none
    (`b'lexical error: ...'`)."""
    if message.startswith(("b'", 'b"')):
        try:
            raw = ast.literal_eval(message)
        except (ValueError, SyntaxError):
            raw = None
        if isinstance(raw, bytes):
            return raw
    return message.encode("utf-8", "replace")


def _offset(message: bytes, chunk: bytes) -> int | None:
    """The offset in `chunk` of the byte yajl's drawing points at; None when there is no drawing or no match."""
    lines = message.split(b"\n")
    if len(lines) < 3 or ARROW.encode() not in lines[2] or not chunk:
        return None
    drawn = lines[1]
    flat = chunk.replace(b"\n", b" ").replace(b"\r", b" ")
    for offset in range(min(_NEAR, len(chunk) + 1)):  # near the start: the drawing is padded to the caret
        if _drawn(flat, offset) == drawn:
            return offset
    window = drawn[_CARET - _NEAR :]
    found = flat.find(window)
    while found >= 0:
        if _drawn(flat, found + _NEAR) == drawn:
            return found + _NEAR
        found = flat.find(window, found + 1)
    return None


def _drawn(flat: bytes, offset: int) -> bytes:
    """What yajl draws for a failure at `offset` of a buffer (newlines already blanked)."""
    pad = _CARET - offset if offset < _NEAR else _CARET - _NEAR
    start = max(offset - _NEAR, 0)
    return b" " * pad + flat[start : min(offset + _NEAR, len(flat))]


def cut_inside(exc: json.JSONDecodeError, ends: bool) -> bool:
    """The line is the file's last, with no newline after it, and its JSON stops before it is whole: the file was
    cut there (a download or a copy that stopped), not a line written wrong. The same rule for a JSONL file of
    messages (ingest/jsonl.py) and one of conversations (ingest/object_lines.py): cut short, exit 1 while it stays
    cut, every line before it arrived."""
    return not ends and (exc.pos >= len(exc.doc) - 1 or exc.msg.startswith("Unterminated string"))


def cut_problem(number: int, said: str) -> str:
    """What a file cut inside its last line says (the stage's "the rest could not be read: ...")."""
    return f"truncated JSON: the file ends inside its last line, {number} ({said})"
