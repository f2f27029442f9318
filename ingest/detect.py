"""Recognise an export's format from its first bytes, never from its file name.

`detect_format` gets the head of a file (about 64 KiB, possibly cut mid-record), streams JSON events over it
with ijson and looks at the keys of the first record:

    [ {mapping | current_node ...} ]           chatgpt
    [ {chat_messages ... } ] / [ {uuid, name} ] claude
    [ {id, name, messages} ]                   chatbotui (version 1 had no envelope)
    {chat_messages ...}                        claude (one conversation, as the web API returns it)
    {mapping | current_node ...}               chatgpt (one conversation of its list, or several one per line)
    {conversationId, messages}                 librechat
    {version, history}                         chatbotui
    one JSON object per line with conversation_id, role, text    jsonl (also after a `[`, with no commas)

Keys are collected until the first record closes or the head runs out, so key order does not matter and a
cut head still decides. A head that breaks (bad JSON) after enough keys were seen still decides: the parser
then reports the break after yielding every complete record before it. Files that are valid but not a
conversations file (ChatGPT and Claude side files, JSON of unknown shape) raise UnsupportedFormatError naming
what was seen; empty and non-JSON files raise MalformedExportError.

`peek_start`, `raw_json` and `json_kind` are small helpers the parsers of this package share.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Callable, Iterator
from typing import Any, BinaryIO

import ijson

from contracts.errors import ConfigError, MalformedExportError, UnsupportedFormatError
from contracts.records import EXPORT_FORMATS, ExportConversation, QuarantineRecord
from ingest.json_errors import Before, advance, yajl_error
from ingest.raw_skip import Unchanged

HEAD_BYTES = 64 * 1024
RAW_LIMIT = 1_000_000  # characters of a quarantined record's JSON that are kept
_BOM = b"\xef\xbb\xbf"
_WHITESPACE = b" \t\r\n"
_JSONL_KEYS = frozenset({"conversation_id", "role", "text"})
JSONL_REQUIRED = ("conversation_id", "id", "role", "text")  # what every JSONL line must have (ingest/jsonl.py)
# Keys that settle the format as soon as they are seen, whatever else the record holds.
_DECISIVE = frozenset({"mapping", "current_node", "chat_messages", "history", "conversationId"})

Parser = Callable[..., Iterator[ExportConversation | QuarantineRecord | Unchanged]]


def detect_format(head: bytes, *, name: str) -> str:
    """Return one of EXPORT_FORMATS for a file whose first bytes are `head`.

    Raises MalformedExportError (empty, not JSON) or UnsupportedFormatError (valid, but not a conversations
    export: the message names the kind detected, e.g. 'chatgpt-side-file').
    """
    body = head[len(_BOM) :] if head.startswith(_BOM) else head
    body = body.lstrip(_WHITESPACE)
    before = advance(Before(), head[: len(head) - len(body)])  # where body starts: an error says its line
    if not body:
        raise MalformedExportError(name, "empty file: no JSON found")
    first = body[:1]
    packed = None if first in (b"[", b"{") else _packed(head)
    if packed:  # an export someone packed to move it: "N bytes of binary data", or a tar of JSONL read as JSONL
        problem = f"not a JSON list or object: the file is {packed}; unpack it and give chatmem the export inside"
        raise MalformedExportError(name, problem + " (chatmem reads .zip, .json and .jsonl)")
    if first == b"[" and _bracketed_jsonl(body):
        return "jsonl"
    if first == b"[":
        keys, closed, error = _first_record_keys_repaired(body, "item", before)
        # `[]` is an export with no conversations: any list parser yields nothing from it.
        fmt = "chatgpt" if body[1:].lstrip(_WHITESPACE).startswith(b"]") else _classify_list(keys, name)
    elif first == b"{":
        keys, closed, error = _first_record_keys_repaired(body, "", before)
        fmt = _classify_object(keys, name)
        if fmt is None and _looks_like_jsonl(body):  # the first line may be the one bad line of a JSONL file
            fmt = "jsonl"
    else:
        keys, closed, error = [], False, None
        fmt = "jsonl" if _looks_like_jsonl(body) else None
        if fmt is None:
            raise MalformedExportError(name, _not_json(body, name, len(head)))
    if fmt is not None:
        return fmt
    if error is not None:
        raise MalformedExportError(name, f"invalid JSON before the format could be recognised ({error})")
    if not closed and len(head) < HEAD_BYTES:  # the head is the whole file, and it stops mid-record
        problem = f"truncated JSON: the file ends inside its first record ({len(head)} bytes)"
        raise MalformedExportError(name, problem)
    if not closed:
        problem = f"format not recognised in the first {len(head)} bytes (first record's keys: {_keys(keys)})"
        raise UnsupportedFormatError(name, "unknown", problem)
    shape = "list" if first == b"[" else "object"
    if len(head) < HEAD_BYTES:  # the head is the whole file: a file that is no valid JSON says so, and where
        broken = _whole_file_error(body, before, shape)
        if broken:
            raise MalformedExportError(name, broken)
    item = _first_item(body) if shape == "list" else "object"
    if item != "object":  # `[1, 2]`: "first record's keys: none" read oddly for a number
        problem = f"JSON list of {item}s, not of conversations (objects); expected one of "
        raise UnsupportedFormatError(name, "unknown", problem + ", ".join(EXPORT_FORMATS))
    problem = f"JSON {shape} of an unknown shape (first record's keys: {_keys(keys)}); expected one of "
    lacks = _jsonl_lacks(body, keys) if shape == "object" else ""
    raise UnsupportedFormatError(name, "unknown", problem + ", ".join(EXPORT_FORMATS) + lacks)


def _first_record_keys_repaired(body: bytes, prefix: str, before: Before) -> tuple[list[str], bool, str | None]:
    """`_first_record_keys`, read again with invalid UTF-8 replaced by U+FFFD when they stop it: the parsers replace
    such bytes (the stage's second pass), so a bad byte in the first record's title must not fail detection when
    the same byte in a later record costs nothing."""
    found = _first_record_keys(body, prefix, before)
    if found[2] is None or "UTF8" not in found[2]:
        return found
    return _first_record_keys(body.decode("utf-8", "replace").encode("utf-8"), prefix, before)


def _first_record_keys(body: bytes, prefix: str, before: Before) -> tuple[list[str], bool, str | None]:
    """The keys of the first record under `prefix`, whether that record closed, and the JSON error if any (one
    line, with its line and column in the file: `body` starts there after `before`).

    Stops early on a decisive key. A record that is not an object gives no keys.
    """
    keys: list[str] = []
    # one buffer for the whole head, so that the error's drawing is found in it (ingest/json_errors.py)
    events = ijson.parse(io.BytesIO(body), multiple_values=True, buf_size=max(len(body), 1))
    try:
        for path, event, value in events:
            if path != prefix:
                continue
            if event == "map_key":
                keys.append(value)
                if value in _DECISIVE or set(keys) >= _JSONL_KEYS:
                    break
            elif event not in ("start_map", "start_array"):
                return keys, True, None  # the first record ended (or was a scalar)
        else:
            return keys, True, None  # the document ended: an empty list or object
    except ijson.common.JSONError as exc:
        message = yajl_error(exc, body, before)
        # The head is usually cut mid-record: running out of bytes is not an error, bad bytes are.
        return keys, False, None if "premature EOF" in message else message
    return keys, False, None  # stopped on a decisive key


def _whole_file_error(body: bytes, before: Before, shape: str) -> str | None:
    """Why `body`, a whole file whose first record was read, is no valid JSON, with where (one line); None when it
    is valid. `[1,2` (cut after its second number) was "JSON list of an unknown shape" (session 38's cold try)."""
    try:
        for _ in ijson.parse(io.BytesIO(body), multiple_values=True, buf_size=max(len(body), 1)):
            pass
    except ijson.common.JSONError as exc:
        message = yajl_error(exc, body, before)
        if "premature EOF" not in message:
            return f"invalid JSON ({message})"
        end = advance(before, body.rstrip(_WHITESPACE))
        return (
            f"truncated JSON: the file ends at line {end.lines + 1}, column {end.column + 1} before its {shape} closes"
            f" ({len(body)} bytes)"
        )
    return None


_ITEM_KINDS = {"start_map": "object", "start_array": "list", "number": "number", "string": "string"}


def _first_item(body: bytes) -> str:
    """What the first item of a JSON list is: object, list, number, string, boolean or null."""
    try:
        for path, event, _ in ijson.parse(io.BytesIO(body), buf_size=max(len(body), 1)):
            if path == "item":
                return str(_ITEM_KINDS.get(event, event))
    except ijson.common.JSONError:
        pass
    return "object"


def _classify_list(keys: list[str], name: str) -> str | None:
    found = set(keys)
    if found & {"mapping", "current_node"}:
        return "chatgpt"
    if "chat_messages" in found:
        return "claude"
    side = _chatgpt_side_file(found)
    if side is not None:
        raise UnsupportedFormatError(name, "chatgpt-side-file", _side_problem("chatgpt-side-file", side))
    if "uuid" in found and found & {"docs", "prompt_template", "is_starter_project", "email_address"}:
        problem = _side_problem("claude-side-file", "projects.json or users.json")
        raise UnsupportedFormatError(name, "claude-side-file", problem)
    if {"uuid", "name"} <= found:
        return "claude"  # a conversation with no chat_messages key, or cut before it
    if {"id", "name", "messages"} <= found:
        return "chatbotui"
    if found >= _JSONL_KEYS:
        problem = "detected 'json-message-list': write one message per line instead (JSONL, docs/formats.md)"
        raise UnsupportedFormatError(name, "json-message-list", problem)
    return None


def _classify_object(keys: list[str], name: str) -> str | None:
    found = set(keys)
    if "chat_messages" in found:
        return "claude"
    if "conversationId" in found:
        return "librechat"
    if "history" in found:
        return "chatbotui"
    if found >= _JSONL_KEYS:
        return "jsonl"
    if {"uuid", "name"} <= found:
        return "claude"  # cut before chat_messages
    if found & {"mapping", "current_node"}:
        return "chatgpt"  # one conversation of a ChatGPT export, read as an export of that one
    if {"email", "chatgpt_plus_user"} & found:
        problem = _side_problem("chatgpt-side-file", "user.json")
        raise UnsupportedFormatError(name, "chatgpt-side-file", problem)
    return None


def _chatgpt_side_file(found: set[str]) -> str | None:
    """Which of the files beside ChatGPT's conversations.json the first record's keys point to."""
    if "rating" in found:
        return "message_feedback.json"
    if "is_anonymous" in found:
        return "shared_conversations.json"
    if "user_id" in found or "input" in found:
        return "model_comparisons.json"
    return None


def _side_problem(kind: str, which: str) -> str:
    return f"detected {kind!r} ({which}): it sits beside conversations.json and holds no conversations"


def _jsonl_lacks(body: bytes, keys: list[str]) -> str:
    """'; as JSONL, its first line lacks conversation_id (a line needs conversation_id, id, role, text)': for a head
    that is an object per line, or whose first object has some of a JSONL line's fields; else ''. Which fields are
    missing is what a user writing JSONL needs to know, not only the keys that were found."""
    lines = [line.strip() for line in body.split(b"\n", 3)[:3]]
    per_line = sum(line.startswith(b"{") for line in lines) > 1
    if not per_line and not set(keys) & set(JSONL_REQUIRED):
        return ""
    missing = [key for key in JSONL_REQUIRED if key not in keys]
    where = "its first line" if per_line else "it"
    needed = ", ".join(JSONL_REQUIRED)
    if len(missing) == len(JSONL_REQUIRED):
        return f"; as JSONL, {where} has none of the fields a line needs ({needed})"
    return f"; as JSONL, {where} lacks {', '.join(missing)} (a line needs {needed})"


def _bracketed_jsonl(body: bytes) -> bool:
    """JSONL in brackets: `[` and then a JSON object per line with no comma between them (`[{...}` then `{...}`, or
    `[` alone on the first line), which is no JSON array. Its first two lines, the bracket left aside, are each a
    JSONL message; a JSON array of messages cannot have that (a comma follows its first element), so it is still
    refused as a JSON message list. The JSONL parser leaves the brackets aside (ingest/jsonl.py)."""
    lines = [line.strip() for line in body[1:].split(b"\n", 200)[:200]]
    records = [line for line in lines if line and line != b"]"][:3]
    if len(records) < 2:
        return False
    for line in records[:2]:
        try:
            record = json.loads(line)
        except (ValueError, UnicodeDecodeError, RecursionError):
            return False
        if not (isinstance(record, dict) and record.keys() >= _JSONL_KEYS):
            return False
    return True


def _looks_like_jsonl(body: bytes) -> bool:
    """True when some complete line of the head is a JSON object with the JSONL message keys."""
    for line in body.split(b"\n", 200)[:200]:  # a line cut by the end of the head just fails to decode
        try:
            record = json.loads(line)
        except (ValueError, UnicodeDecodeError, RecursionError):  # a line nested too deep is the parser's to report
            continue
        if isinstance(record, dict) and record.keys() >= _JSONL_KEYS:
            return True
    return False


def _not_json(body: bytes, name: str, size: int) -> str:
    """Why a file that starts as neither JSON nor JSONL is no export, in words (never a bytes repr, which a user
    cannot read): what it looks like instead, and its size."""
    if body.startswith(b"PK\x03\x04"):
        return "not a JSON list or object: the file starts with a zip signature (open it as a zip export)"
    if body.startswith((b"\xff\xfe", b"\xfe\xff")):
        return "not a JSON list or object: the file starts with a UTF-16 byte order mark (chatmem reads UTF-8)"
    amount = f"{size:,} bytes" if size < HEAD_BYTES else f"over {HEAD_BYTES // 1024} KiB"
    start = _text_start(body)
    if name.lower().endswith(".zip"):  # named as a zip, but no zip's signature: a download that went wrong
        what = "binary data" if start is None else f"text: {start}"
        return f"not a zip file: {amount} that start as neither a zip archive nor JSON ({what})"
    return f"not a JSON list or object: {amount} of " + ("binary data" if start is None else f"text starting {start}")


# Archive and compression formats by their magic bytes (a tar's is at offset 257): what a user packed an export in.
_PACKED = (
    (re.compile(rb"\x1f\x8b"), "gzip-compressed"),
    (re.compile(rb"BZh[1-9]1AY&SY"), "bzip2-compressed"),
    (re.compile(rb"\xfd7zXZ\x00"), "xz-compressed"),
    (re.compile(rb"7z\xbc\xaf\x27\x1c"), "a 7-Zip archive"),
    (re.compile(rb"Rar!\x1a\x07"), "a RAR archive"),
)


def _packed(head: bytes) -> str | None:
    """What archive or compression format `head` starts as, in words, or None."""
    for magic, what in _PACKED:
        if magic.match(head):
            return what
    return "a tar archive" if head[257:262] == b"ustar" else None


def _text_start(body: bytes, shown: int = 20) -> str | None:
    """The first words of a text file, quoted ("<!DOCTYPE html>"), or None for binary data (not UTF-8, or control
    characters other than whitespace in the first bytes)."""
    head = body[: shown * 4]
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start < len(head) - 3:  # not only a character cut at the end of the head
            return None
        text = head[: exc.start].decode("utf-8")
    if any(ord(c) < 32 and c not in "\t\r\n" for c in text):
        return None
    words = " ".join(text.split())
    return '"' + words[:shown] + ('…"' if len(words) > shown else '"')


def _keys(keys: list[str]) -> str:
    return ", ".join(keys[:12]) or "none"


def parser_for(fmt: str) -> Parser:
    """The parse function for a format in EXPORT_FORMATS. Imports are lazy: parsers import this module."""
    if fmt == "chatgpt":
        from ingest import chatgpt

        return chatgpt.parse
    if fmt == "claude":
        from ingest.claude import parse

        return parse
    if fmt == "jsonl":
        from ingest.jsonl import parse as parse_jsonl

        return parse_jsonl
    if fmt in ("librechat", "chatbotui"):
        from ingest.librechat import parse_chatbotui, parse_librechat

        return parse_librechat if fmt == "librechat" else parse_chatbotui
    raise ConfigError(f"unknown export format {fmt!r}; expected one of {', '.join(EXPORT_FORMATS)}")


def peek_start(stream: BinaryIO) -> tuple[bytes, BinaryIO]:
    """The first byte after a BOM and whitespace (b"" for an empty stream), and a stream that replays it all.

    Parsers use it to choose a top-level list or object without needing a seekable stream.
    """
    seen: list[bytes] = []
    while chunk := stream.read(HEAD_BYTES):
        seen.append(chunk)
        start = b"".join(seen)
        start = start[len(_BOM) :] if start.startswith(_BOM) else start
        stripped = start.lstrip(_WHITESPACE)
        if stripped and stripped != _BOM[: len(stripped)]:
            return stripped[:1], Replay(b"".join(seen), stream)  # type: ignore[return-value]
    return b"", Replay(b"".join(seen), stream)  # type: ignore[return-value]


class Replay(io.RawIOBase):
    """Read `prefix` first, then the rest of `stream`."""

    def __init__(self, prefix: bytes, stream: BinaryIO) -> None:
        self._prefix = prefix
        self._stream = stream

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        if not self._prefix:
            return self._stream.read(size)
        if size is None or size < 0:
            data, self._prefix = self._prefix + self._stream.read(), b""
            return data
        data, self._prefix = self._prefix[:size], self._prefix[size:]
        return data

    def readinto(self, buffer: Any) -> int:
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)


def raw_json(record: object) -> str:
    """A record as JSON text for a quarantine row, cut to RAW_LIMIT characters with a marker."""
    try:
        text = json.dumps(record, ensure_ascii=False, default=str)
    except RecursionError:
        return "[nested too deep to show as JSON]"
    if len(text) <= RAW_LIMIT:
        return text
    return f"{text[:RAW_LIMIT]}... [truncated: {len(text)} characters in all]"


def json_kind(value: object) -> str:
    """The JSON name of a decoded value's type, for quarantine reasons."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    return {dict: "object", list: "list", str: "string", type(None): "null"}.get(type(value), type(value).__name__)
