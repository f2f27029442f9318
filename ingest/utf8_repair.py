"""The second pass over a file that failed on invalid UTF-8: its bytes as valid UTF-8, each invalid sequence replaced
with U+FFFD (ingest/stage.py reads the file again through this when the first pass met bad bytes).

A replacement changes the length (U+FFFD is 3 bytes, the sequence it stands for 1 to 3), so an offset the parser
names in the repaired stream is not the file's: `in_file` maps it back, so that "at byte N" of a file that is also
cut short names the byte in the file. The reading stays at C speed (a Latin-1 file has a bad byte every few
bytes): it notes only where each read started, in the file and in the output, and the one offset an error names is
found by reading the file again up to that read and walking its bytes. The replacements counted are those of
`bytes.decode(errors="replace")`; a U+FFFD the file itself holds (valid UTF-8) is not one.
"""

from __future__ import annotations

import codecs
import io
from array import array
from bisect import bisect_right
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any, BinaryIO

from contracts.errors import MalformedExportError

CHUNK = 1 << 20  # 1 MiB reads
_WINDOW = 4096  # bytes decoded at a time by the walk: a decode error copies what it was given
_FFFD = "\ufffd".encode()


class Utf8RepairReader(io.RawIOBase):
    """Re-encode a byte stream as valid UTF-8, replacing invalid sequences with U+FFFD and counting them."""

    def __init__(self, stream: BinaryIO) -> None:
        self._stream = stream
        self._held = b""  # the start of a character cut by the end of the last read
        self._pending = b""
        self._read = 0  # bytes read from the stream
        self._given = 0  # bytes produced
        self.replacements = 0
        self.first_bad = b""  # the bytes around the first invalid sequence: what `latin1_hint` reads
        # Where each decoded piece started: in the file (its held bytes included) and in the output
        self._starts_in = array("q")
        self._starts_out = array("q")

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

    def _repair(self, data: bytes, *, final: bool) -> bytes:
        self._starts_in.append(self._read - len(self._held))
        self._starts_out.append(self._given)
        text, used = codecs.utf_8_decode(data, "replace", final)
        self._held = data[used:]
        # U+FFFD bytes in the file decode as themselves (EF is never a continuation byte): not replacements
        found = text.count("\ufffd") - data.count(_FFFD, 0, used)
        if found and not self.first_bad:
            self.first_bad = _around_first_invalid(data[:used])
        self.replacements += found
        out = text.encode("utf-8", "surrogatepass")
        self._given += len(out)
        return out

    def file_offset(self, offset: int, reopen: Callable[[], AbstractContextManager[BinaryIO]]) -> int:
        """The offset in the file of byte `offset` of the output; `reopen` opens the file again from its start."""
        index = bisect_right(self._starts_out, offset) - 1
        if index < 0 or not self.replacements:
            return offset
        start_in, start_out = self._starts_in[index], self._starts_out[index]
        with reopen() as stream:
            skip = start_in
            while skip > 0:
                skipped = len(stream.read(min(skip, CHUNK)))
                if not skipped:
                    return offset
                skip -= skipped
            data = stream.read(CHUNK + 4)  # the piece (its held bytes and a read) and a character past it
        return start_in + _walk(data, offset - start_out)


def _around_first_invalid(data: bytes, reach: int = 80) -> bytes:
    """The bytes around the first invalid UTF-8 sequence of `data` (b"" when there is none)."""
    try:
        codecs.utf_8_decode(data, "strict", True)
    except UnicodeDecodeError as exc:
        return data[max(0, exc.start - reach) : exc.end + reach]
    return b""


# What the non-ASCII bytes of Latin-1 text stand for: the letters of Western European languages and Windows-1252's
# typographic signs. Not ÿ, þ, ð (rare in text; 0xFF 0xFE is a byte order mark, and the usual made-up bad bytes)
_LATIN1_TEXT = frozenset("ÀÁÂÃÄÅÆÇÈÉÊËÌÍÎÏÑÒÓÔÕÖØÙÚÛÜÝßàáâãäåæçèéêëìíîïñòóôõöøùúûüýŒœŠšŽž’‘“”„–—…«»°€£§©®±·¿¡´º")
_JSON_PUNCTUATION = "\"'{}[],:;.!?()"


def latin1_hint(sample: bytes) -> str:
    """What to say of invalid UTF-8 around `sample` (a reader's `first_bad`) when it reads as Latin-1 text: the file
    was saved in Latin-1 / Windows-1252 (an older Windows tool's "ANSI"), the word it spells, and what to do. ""
    when it does not: bytes of no text, or stray bytes among valid UTF-8 (a damaged file, which no re-save mends)."""
    try:
        text = sample.decode("cp1252")
    except UnicodeDecodeError:  # five bytes Windows-1252 leaves undefined: not Latin-1 text
        return ""
    high = [c for c in text if ord(c) > 127]
    if not high or not all(c in _LATIN1_TEXT for c in high):
        return ""
    if any(ord(c) > 127 and c != "\ufffd" for c in sample.decode("utf-8", "replace")):
        return ""  # valid UTF-8 beside the bad bytes: not a file saved in another encoding
    word = next((w for w in text.split() if any(ord(c) > 127 for c in w)), "").strip(_JSON_PUNCTUATION)
    spelt = f' ("{word}" as written)' if word else ""
    return (
        f"the file is not UTF-8 but Latin-1 / Windows-1252{spelt}: re-save it as UTF-8 and run again,"
        " and its messages are updated with those characters"
    )


def _walk(data: bytes, target: int) -> int:
    """How many bytes of `data` give the first `target` bytes of its repaired output."""
    view = memoryview(data)
    pos = out = 0
    while pos < len(data):
        stop = min(pos + _WINDOW, len(data))
        try:
            _, used = codecs.utf_8_decode(view[pos:stop], "strict", stop == len(data))
        except UnicodeDecodeError as exc:
            if target < out + exc.start:  # within the valid bytes before the bad ones: the same bytes
                return pos + target - out
            out, pos = out + exc.start, pos + exc.start
            if target < out + len(_FFFD):
                return pos
            out, pos = out + len(_FFFD), pos + exc.end - exc.start
            continue
        if not used:
            break
        if target < out + used:
            return pos + target - out
        out, pos = out + used, pos + used
    return pos + target - out


def in_file(
    error: MalformedExportError, reader: Utf8RepairReader, reopen: Callable[[], AbstractContextManager[BinaryIO]]
) -> MalformedExportError:
    """`error` naming the byte of the file where it names one of the repaired stream ("at byte N", the parser's
    `byte_offset`): the same error when there is none or the two agree."""
    offset = getattr(error, "byte_offset", None)
    said = f"at byte {offset}"
    if offset is None or said not in error.problem:
        return error
    moved = reader.file_offset(offset, reopen)
    if moved == offset:
        return error
    head, _, tail = error.problem.rpartition(said)
    again = MalformedExportError(error.path, f"{head}at byte {moved}{tail}")
    again.__dict__.update({**error.__dict__, "path": again.path, "problem": again.problem, "byte_offset": moved})
    return again
