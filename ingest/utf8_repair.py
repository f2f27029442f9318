"""The second pass over a file that failed on invalid UTF-8: its bytes as valid UTF-8, each invalid sequence replaced
with U+FFFD (ingest/stage.py reads the file again through this when the first pass met bad bytes).

A replacement changes the length (U+FFFD is 3 bytes, the sequence it stands for 1 to 3), so an offset the parser
names in the repaired stream is not the file's: `file_offset` maps it back, so that "at byte N" of a file that is
also cut short names the byte in the file. The replacements are those of `bytes.decode(errors="replace")`; a U+FFFD
the file itself holds (valid UTF-8) is not counted as one.
"""

from __future__ import annotations

import codecs
import io
from array import array
from bisect import bisect_right
from typing import Any, BinaryIO

from contracts.errors import MalformedExportError

CHUNK = 1 << 20  # 1 MiB reads
_WINDOW = 1 << 16  # bytes decoded at a time: a decode error copies what it was given, so that stays small
_REPLACEMENT = "\ufffd".encode()


class Utf8RepairReader(io.RawIOBase):
    """Re-encode a byte stream as valid UTF-8, replacing invalid sequences with U+FFFD and counting them."""

    def __init__(self, stream: BinaryIO) -> None:
        self._stream = stream
        self._held = b""  # the start of a character cut by the end of the last read
        self._pending = b""
        self._read = 0  # bytes read from the stream
        self._given = 0  # bytes produced
        self.replacements = 0
        # After each replacement, the offset reached in the output and in the file: where the two part (16 bytes each)
        self._out = array("q")
        self._in = array("q")

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        while not self._pending:
            chunk = self._stream.read(CHUNK)
            self._pending = self._repair(self._held + chunk, final=not chunk)
            self._read += len(chunk)
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

    def file_offset(self, offset: int) -> int:
        """The offset in the file of byte `offset` of the repaired stream."""
        index = bisect_right(self._out, offset) - 1
        if index < 0:
            return offset
        return self._in[index] + offset - self._out[index]

    def _repair(self, data: bytes, *, final: bool) -> bytes:
        """`data` (the held bytes and a new chunk) repaired; an incomplete character at its end is held for the next
        chunk unless `final`. Valid UTF-8 passes as it is: only the invalid sequences are replaced."""
        start = self._read - len(self._held)  # the file offset of data[0]
        view = memoryview(data)
        out = bytearray()
        pos = 0
        while pos < len(data):
            stop = min(pos + _WINDOW, len(data))
            try:
                _, used = codecs.utf_8_decode(view[pos:stop], "strict", final and stop == len(data))
            except UnicodeDecodeError as exc:
                out += view[pos : pos + exc.start]
                out += _REPLACEMENT
                pos += exc.end
                self.replacements += 1
                self._out.append(self._given + len(out))
                self._in.append(start + pos)
                continue
            if not used:  # an incomplete character at the end of the chunk: held for the next one
                break
            out += view[pos : pos + used]
            pos += used
        self._held = bytes(view[pos:])
        self._given += len(out)
        return bytes(out)


def in_file(error: MalformedExportError, reader: Utf8RepairReader) -> MalformedExportError:
    """`error` naming the byte of the file where it names one of the repaired stream ("at byte N", the parser's
    `byte_offset`): the same error when there is none or the two agree."""
    offset = getattr(error, "byte_offset", None)
    said = f"at byte {offset}"
    if offset is None or said not in error.problem or reader.file_offset(offset) == offset:
        return error
    moved = reader.file_offset(offset)
    head, _, tail = error.problem.rpartition(said)
    again = MalformedExportError(error.path, f"{head}at byte {moved}{tail}")
    again.__dict__.update({**error.__dict__, "path": again.path, "problem": again.problem, "byte_offset": moved})
    return again
