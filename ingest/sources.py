"""Open what the user points at: a loose export file, a downloaded .zip, or an unzipped export folder.

A zip is recognised by its bytes, not its name. It is never extracted to disk: the conversations member is
streamed. Before reading, the archive is checked: member paths that climb out of the archive (zip-slip),
absolute paths, and members whose declared size or compression ratio looks like a bomb are refused; while
reading, the bytes actually produced are counted against the same limit, so a lying header does not help.
"""

from __future__ import annotations

import hashlib
import io
import os
import stat
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import IO, BinaryIO

from contracts.errors import MalformedExportError, UnsafeArchiveError

CONVERSATIONS_FILE = "conversations.json"
# Files that sit beside conversations.json in a real download; recorded, not parsed.
KNOWN_SIDE_FILES = frozenset(
    {
        "model_comparisons.json",
        "message_feedback.json",
        "shared_conversations.json",
        "user.json",
        "users.json",
        "projects.json",
        "chat.html",
    }
)
ZIP_MAGIC = b"PK\x03\x04"
EMPTY_ZIP_MAGIC = b"PK\x05\x06"


@dataclass
class OpenedExport:
    """One thing to parse: its display path, the sha256 of the bytes the user gave, how to open it.

    Plain data (no open handles, no closures), so it can be sent to a worker process that parses it.
    """

    path: str
    file: Path
    sha256: str
    size_bytes: int
    member: str | None = None  # the zip member to read, when `file` is a zip
    member_limit: int = 0  # the most bytes the member may produce (its declared size, capped)
    side_files: list[str] = field(default_factory=list)

    @contextmanager
    def open(self) -> Iterator[BinaryIO]:
        if self.member is None:
            with self.file.open("rb") as handle:
                yield handle
            return
        with zipfile.ZipFile(self.file) as archive, archive.open(self.member) as stream:
            limited = _LimitedReader(stream, limit=self.member_limit, name=str(self.file))
            yield limited  # type: ignore[misc]  # a RawIOBase is a binary stream


# (device, inode, size, modification and change times in ns) -> sha256, for this process: a watch run hashes
# each dump to find the new ones (flows/serve.py), then its ingest opens the same files (~1 s per 385 MB).
_HASHED: dict[tuple[int, int, int, int, int], str] = {}


def sha256_file(path: Path) -> str:
    with path.open("rb") as handle:
        found = os.fstat(handle.fileno())
        key = (found.st_dev, found.st_ino, found.st_size, found.st_mtime_ns, found.st_ctime_ns)
        if key in _HASHED:
            return _HASHED[key]
        digest = hashlib.sha256()
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    after = os.stat(path)  # written to while it was read: not remembered
    if (after.st_size, after.st_mtime_ns, after.st_ctime_ns) == key[2:]:
        _HASHED[key] = digest.hexdigest()
    return digest.hexdigest()


def file_sha256(path: Path) -> str | None:
    """The sha256 of a regular file's bytes, or None (a folder, a FIFO, gone, unreadable): what identifies a dump
    that could not be opened as an export."""
    try:
        return sha256_file(path) if path.is_file() else None
    except OSError:
        return None


def open_export(path: Path, *, max_member_bytes: int, max_ratio: float, digest: bool = True) -> OpenedExport:
    """Resolve `path` to the one stream to parse. Raises an ExportError subclass naming the file.
    `digest=False` leaves `sha256` empty (a check before the run: reading a large dump twice costs seconds)."""
    if path.is_dir():
        candidate = path / CONVERSATIONS_FILE
        if not candidate.is_file():
            raise MalformedExportError(str(path), f"folder has no {CONVERSATIONS_FILE}")
        side = sorted(p.name for p in path.iterdir() if p.name in KNOWN_SIDE_FILES)
        opened = open_export(candidate, max_member_bytes=max_member_bytes, max_ratio=max_ratio, digest=digest)
        opened.side_files = side
        return opened
    if not path.is_file():
        raise MalformedExportError(str(path), _not_a_file(path))
    try:  # a file that cannot be read (its mode, an I/O error) is a bad export like any other, never a traceback
        with path.open("rb") as handle:
            magic = handle.read(4)
        if magic in (ZIP_MAGIC, EMPTY_ZIP_MAGIC):
            return _open_zip(path, max_member_bytes=max_member_bytes, max_ratio=max_ratio, digest=digest)
        sha256 = sha256_file(path) if digest else ""
        return OpenedExport(path=str(path), file=path, sha256=sha256, size_bytes=path.stat().st_size)
    except OSError as exc:
        raise MalformedExportError(str(path), f"cannot be read ({exc.strerror or exc})") from exc


def _not_a_file(path: Path) -> str:
    """Why `path` cannot be read as an export: missing, or a FIFO, socket or device (named as what it is)."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return "no such file"
    except OSError as exc:
        return f"cannot be read ({exc.strerror})"
    kinds = (
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
    )
    kind = next((name for test, name in kinds if test(mode)), "not a regular file")
    return f"{kind}, not a regular file: give an export file, a .zip or an export folder"


ZIP_LOCAL_HEADER = b"PK\x03\x04"
ZIP_END = b"PK\x05\x06"  # end of central directory: within the last 22 + 65,535 (comment) bytes
ZIP_END_SPAN = 22 + 65_535


def _cut_short(path: Path) -> bool:
    """A zip that begins with a member's local header but has no end-of-central-directory record: its end
    never arrived (a download stopped partway), rather than a file that is not a zip at all."""
    try:
        with path.open("rb") as handle:
            if handle.read(4) != ZIP_LOCAL_HEADER:
                return False
            size = handle.seek(0, 2)
            handle.seek(max(0, size - ZIP_END_SPAN))
            return ZIP_END not in handle.read()
    except OSError:
        return False


def _open_zip(path: Path, *, max_member_bytes: int, max_ratio: float, digest: bool = True) -> OpenedExport:
    try:
        archive = zipfile.ZipFile(path)
    except zipfile.BadZipFile as exc:
        if _cut_short(path):
            raise UnsafeArchiveError(
                str(path),
                "zip looks cut short (an incomplete download or copy?): it starts as a zip archive but its end, the"
                " central directory, is missing; download or copy it again",
            ) from exc
        raise UnsafeArchiveError(str(path), f"not a readable zip archive ({exc})") from exc
    with archive:
        infos = archive.infolist()
    for info in infos:
        name = PurePosixPath(info.filename.replace("\\", "/"))
        if name.is_absolute() or ".." in name.parts or (name.parts and name.parts[0].endswith(":")):
            raise UnsafeArchiveError(str(path), f"unsafe member path {info.filename!r} (zip-slip); refused")
    candidates = [
        info for info in infos if not info.is_dir() and PurePosixPath(info.filename).name == CONVERSATIONS_FILE
    ]
    if not candidates:
        names = ", ".join(i.filename for i in infos[:10]) or "none"
        raise UnsafeArchiveError(str(path), f"zip has no {CONVERSATIONS_FILE} (members: {names})")
    member = min(candidates, key=lambda i: (i.filename.count("/"), i.filename))
    _check_bomb(path, member, max_member_bytes=max_member_bytes, max_ratio=max_ratio)
    prefix = str(PurePosixPath(member.filename).parent)
    side = sorted(
        i.filename
        for i in infos
        if PurePosixPath(i.filename).name in KNOWN_SIDE_FILES and str(PurePosixPath(i.filename).parent) == prefix
    )

    return OpenedExport(
        path=f"{path}!{member.filename}",
        file=path,
        sha256=sha256_file(path) if digest else "",
        size_bytes=member.file_size,
        member=member.filename,
        member_limit=min(member.file_size, max_member_bytes),
        side_files=side,
    )


def _check_bomb(path: Path, member: zipfile.ZipInfo, *, max_member_bytes: int, max_ratio: float) -> None:
    if member.file_size > max_member_bytes:
        raise UnsafeArchiveError(
            str(path),
            f"{member.filename} declares {member.file_size} bytes uncompressed, over the limit of "
            f"{max_member_bytes} (zip bomb guard; raise CHATMEM_INGEST__MAX_ZIP_MEMBER_BYTES if genuine)",
        )
    ratio = member.file_size / max(member.compress_size, 1)
    if member.file_size > 1 << 20 and ratio > max_ratio:
        raise UnsafeArchiveError(
            str(path),
            f"{member.filename} expands {ratio:.0f}x (limit {max_ratio:.0f}x): refused as a likely zip bomb",
        )


class _LimitedReader(io.RawIOBase):
    """Stop a zip member that produces more bytes than it declared (or than the limit)."""

    def __init__(self, stream: IO[bytes], *, limit: int, name: str) -> None:
        self._stream = stream
        self._limit = limit
        self._name = name
        self._read = 0

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        data = self._stream.read(size)
        self._read += len(data)
        if self._read > self._limit:
            raise UnsafeArchiveError(self._name, f"member produced more than {self._limit} bytes; refused")
        return data

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)


def read_head(opened: OpenedExport, size: int = 64 * 1024) -> bytes:
    """The first bytes of the stream, for format detection."""
    with opened.open() as stream:
        return stream.read(size)
