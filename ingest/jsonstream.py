"""Streaming JSON reading with errors that name the file and the byte position.

Parsers read with `ijson` so memory does not grow with the file: one top-level record (one conversation)
at a time. Any JSON error becomes a `MalformedExportError` saying where it happened.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Any, BinaryIO

import ijson

from contracts.errors import MalformedExportError

CHUNK = 1 << 20  # 1 MiB reads


class _CountingReader(io.RawIOBase):
    """Wrap a binary stream and count bytes read, so a parse error can say where it happened."""

    def __init__(self, stream: BinaryIO) -> None:
        self._stream = stream
        self.position = 0

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        data = self._stream.read(size)
        if self.position == 0 and data.startswith(b"\xef\xbb\xbf"):
            data = data[3:] or self._stream.read(size)  # yajl rejects a UTF-8 BOM (Windows tools write one)
            self.position += 3
        self.position += len(data)
        return data

    def readinto(self, buffer: Any) -> int:
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)


def iter_json_items(stream: BinaryIO, prefix: str, *, name: str) -> Iterator[Any]:
    """Yield each value under `prefix` ('item' for a top-level list) as Python objects.

    Numbers come back as float/int (not Decimal). Raises MalformedExportError naming `name` and roughly
    where in the file the JSON broke (the error is raised after every complete item before it was yielded).
    """
    reader = _CountingReader(stream)
    try:
        yield from ijson.items(reader, prefix, use_float=True, buf_size=CHUNK)
    except ijson.common.IncompleteJSONError as exc:
        error = MalformedExportError(name, _describe(exc, reader.position, truncated=True))
        error.invalid_utf8 = "UTF8" in str(exc)  # type: ignore[attr-defined]
        raise error from exc
    except ijson.common.JSONError as exc:
        raise MalformedExportError(name, _describe(exc, reader.position, truncated=False)) from exc
    except UnicodeDecodeError as exc:
        raise MalformedExportError(name, f"not UTF-8 text near byte {reader.position}: {exc.reason}") from exc


def _describe(exc: Exception, position: int, *, truncated: bool) -> str:
    detail = " ".join(str(exc).split())[:200]  # yajl's message spans lines; the error must be one line
    if "UTF8" in str(exc):
        return f"not valid UTF-8 within the first {position} bytes"
    kind = "invalid or truncated JSON" if truncated else "invalid JSON"
    return f"{kind} within the first {position} bytes ({detail})"


class Utf8RepairReader(io.RawIOBase):
    """Re-encode a byte stream as valid UTF-8, replacing invalid sequences with U+FFFD and counting them.

    Used only as a second pass over a file that failed on invalid UTF-8, so that the good records in it
    still arrive; the replacement character marks exactly where bytes could not be read.
    """

    def __init__(self, stream: BinaryIO) -> None:
        import codecs

        self._stream = stream
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._pending = b""
        self.replacements = 0

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        while not self._pending:
            chunk = self._stream.read(CHUNK)
            text = self._decoder.decode(chunk, final=not chunk)
            self.replacements += text.count("\ufffd")
            self._pending = text.encode("utf-8", "surrogatepass")
            if not chunk:
                break
        if size < 0:
            size = len(self._pending)
        data, self._pending = self._pending[:size], self._pending[size:]
        return data

    def readinto(self, buffer: Any) -> int:
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)
