"""Open what the user points at: a loose export file, a downloaded .zip, or an unzipped export folder.

A ChatGPT export made since early 2026 has no conversations.json: its conversations are split over numbered files,
conversations-000.json, conversations-001.json, ... (each a JSON array; export_manifest.json lists them). Such a
zip or folder is opened as one stream all the same: the arrays read as one (`_JoinedArrays`), parts in number
order, so the parsers, the skip by sha256 and the run's records see one export as before.

A zip is recognised by its bytes, not its name. It is never extracted to disk: the conversations member is
streamed. Before reading, the archive is checked: member paths that climb out of the archive (zip-slip),
absolute paths, and members whose declared size or compression ratio looks like a bomb are refused; while
reading, the bytes actually produced are counted against the same limit, so a lying header does not help.
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import stat
import zipfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path, PurePosixPath
from typing import IO, BinaryIO

from contracts.errors import MalformedExportError, UnsafeArchiveError

CONVERSATIONS_FILE = "conversations.json"
CONVERSATIONS_PART = re.compile(r"conversations-(\d{1,6})\.json")  # one part of a split export
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
        "export_manifest.json",
        "user_settings.json",
        "conversations.json.index",
        "memories.json",  # Claude's, since 2026
    }
)
# Claude's download of 2026 is a few files: conversations-000.zip (its conversations.json), users.json,
# memories.json and projects-000.zip (one JSON file per project): the last holds no conversations either.
_SIDE_ARCHIVE = re.compile(r"projects-\d{1,6}\.zip")


def is_side_file(name: str) -> bool:
    """A file that comes with an export and holds no conversations (user.json, export_manifest.json, ...)."""
    return name in KNOWN_SIDE_FILES or _SIDE_ARCHIVE.fullmatch(name) is not None


def is_conversations_file(name: str) -> bool:
    """conversations.json, or one numbered part of a split export (conversations-000.json)."""
    return name == CONVERSATIONS_FILE or CONVERSATIONS_PART.fullmatch(name) is not None


def conversation_files(folder: Path) -> list[Path]:
    """An unzipped export folder's conversations: its conversations.json and its numbered parts in number order (both,
    where a new export was unzipped over an old one); [] where it has neither."""
    try:
        found = [p for p in folder.iterdir() if is_conversations_file(p.name) and p.is_file()]
    except OSError:
        return []
    return sorted(found, key=_part_number)


def _part_number(path: Path | PurePosixPath) -> tuple[int, str]:
    found = CONVERSATIONS_PART.fullmatch(path.name)
    return (int(found.group(1)) if found else -1, path.name)


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
    # A split export: its parts in order, read as one array (zip members of `file`, or files when `file` is a folder)
    parts: list[str] = field(default_factory=list)
    part_limits: list[int] = field(default_factory=list)  # of each zip member, as member_limit
    # Parts not read, and why (empty, no JSON array, cut short, missing from the numbering, in another folder of the
    # zip): the ingest stage quarantines each with its reason, and the rest of the export arrives
    part_problems: list[tuple[str, str]] = field(default_factory=list)

    @contextmanager
    def open(self) -> Iterator[BinaryIO]:
        if self.parts:
            with self._open_parts() as joined:
                yield joined
            return
        if self.member is None:
            with self.file.open("rb") as handle:
                yield handle
            return
        with zipfile.ZipFile(self.file) as archive, archive.open(self.member) as stream:
            limited = _LimitedReader(stream, limit=self.member_limit, name=str(self.file))
            yield limited  # type: ignore[misc]  # a RawIOBase is a binary stream

    @contextmanager
    def _open_parts(self) -> Iterator[BinaryIO]:
        if self.file.is_dir():
            files = [(part, partial(_open_file, Path(part))) for part in self.parts]
            yield _JoinedArrays(files)  # type: ignore[misc]  # a RawIOBase is a binary stream
            return
        with zipfile.ZipFile(self.file) as archive:
            members = [
                (f"{self.file}!{name}", partial(_open_member, archive, name, limit, f"{self.file}!{name}"))
                for name, limit in zip(self.parts, self.part_limits, strict=True)
            ]
            yield _JoinedArrays(members)  # type: ignore[misc]


def _open_file(path: Path) -> IO[bytes]:
    return path.open("rb")  # closed by _JoinedArrays, which reads it


def _open_member(archive: zipfile.ZipFile, name: str, limit: int, shown: str) -> IO[bytes]:
    return _LimitedReader(archive.open(name), limit=limit, name=shown)  # type: ignore[return-value]


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
        files = conversation_files(path)
        if not files:
            raise MalformedExportError(
                str(path),
                # a folder, not a file to fix: said as what it holds (`chatmem run` says where it looked too)
                f"the folder holds no export chatmem can read: no {CONVERSATIONS_FILE} directly in it (nor its"
                " numbered parts, conversations-000.json)",
            )
        side = sorted(p.name for p in path.iterdir() if p.name in KNOWN_SIDE_FILES)
        if len(files) == 1 and files[0].name == CONVERSATIONS_FILE:
            opened = open_export(files[0], max_member_bytes=max_member_bytes, max_ratio=max_ratio, digest=digest)
        else:
            opened = _split_folder(path, files, digest=digest)
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
        info for info in infos if not info.is_dir() and is_conversations_file(PurePosixPath(info.filename).name)
    ]
    if not candidates:
        names = ", ".join(i.filename for i in infos[:10]) or "none"
        raise UnsafeArchiveError(
            str(path), f"zip has no {CONVERSATIONS_FILE} nor its numbered parts (members: {names})"
        )
    # the shallowest folder with a conversations file: its conversations.json and its numbered parts
    member = min(candidates, key=lambda i: (i.filename.count("/"), _part_number(PurePosixPath(i.filename))))
    prefix = str(PurePosixPath(member.filename).parent)
    side = sorted(
        i.filename
        for i in infos
        if PurePosixPath(i.filename).name in KNOWN_SIDE_FILES and str(PurePosixPath(i.filename).parent) == prefix
    )
    here = [i for i in candidates if str(PurePosixPath(i.filename).parent) == prefix]
    if len(here) > 1 or PurePosixPath(member.filename).name != CONVERSATIONS_FILE:
        here.sort(key=lambda i: _part_number(PurePosixPath(i.filename)))
        for part in here:
            _check_bomb(path, part, max_member_bytes=max_member_bytes, max_ratio=max_ratio)
        problems = [(i.filename, "in another folder of the zip: not read") for i in candidates if i not in here]
        problems += _missing_parts([i.filename for i in here])
        with zipfile.ZipFile(path) as archive:
            for info in here:
                why = "empty" if info.file_size == 0 else _array_head(archive.open(info.filename))
                if why:
                    problems.append((info.filename, why))
        bad = {name for name, _ in problems}
        parts = [i for i in here if i.filename not in bad]
        if not parts:
            raise MalformedExportError(str(path), "no part of the split export can be read: " + _said(problems))
        return OpenedExport(
            path=f"{path}!{_parts_name(prefix)}",
            file=path,
            sha256=sha256_file(path) if digest else "",
            size_bytes=sum(i.file_size for i in parts),
            side_files=side,
            parts=[i.filename for i in parts],
            part_limits=[min(i.file_size, max_member_bytes) for i in parts],
            part_problems=problems,
        )
    _check_bomb(path, member, max_member_bytes=max_member_bytes, max_ratio=max_ratio)

    return OpenedExport(
        path=f"{path}!{member.filename}",
        file=path,
        sha256=sha256_file(path) if digest else "",
        size_bytes=member.file_size,
        member=member.filename,
        member_limit=min(member.file_size, max_member_bytes),
        side_files=side,
    )


SPLIT_NAME = "conversations*.json"  # how a split export is named in the run's records, whichever parts it holds


def _parts_name(folder: str) -> str:
    """ "export/conversations*.json": the same name for an export whatever parts it has now (a part removed after
    a failure, the next run's record of the export is the one that failed)."""
    return SPLIT_NAME if folder in ("", ".") else f"{folder}/{SPLIT_NAME}"


def _missing_parts(names: list[str]) -> list[tuple[str, str]]:
    """The numbers a split export's parts skip (conversations-002.json of 000, 001, 003): named, never silent."""
    found = [m for m in (CONVERSATIONS_PART.fullmatch(PurePosixPath(name).name) for name in names) if m]
    if not found:
        return []
    numbers = sorted(int(m.group(1)) for m in found)
    width = len(found[0].group(1))
    folder = str(PurePosixPath(names[0]).parent)
    missing = sorted(set(range(numbers[0], numbers[-1] + 1)) - set(numbers))
    return [
        (str(PurePosixPath(folder) / f"conversations-{n:0{width}d}.json"), "missing: the numbering skips it")
        for n in missing
    ]


def _array_head(stream: IO[bytes]) -> str | None:
    """Why a part is not read (its first bytes are no JSON array), or None."""
    with stream:
        head = stream.read(4096).removeprefix(b"\xef\xbb\xbf").lstrip(b" \t\r\n")
    if not head:
        return "empty: no JSON array"
    return None if head[:1] == b"[" else "not a JSON array"


def _array_tail(path: Path) -> str | None:
    """Why an unzipped part is not read (it does not end as an array: cut short), or None."""
    with path.open("rb") as handle:
        size = handle.seek(0, 2)
        handle.seek(max(0, size - 4096))
        tail = handle.read().rstrip(b" \t\r\n")
    return None if tail.endswith(b"]") else "cut short: its array never closes"


def _said(problems: list[tuple[str, str]]) -> str:
    return "; ".join(f"{PurePosixPath(name).name} ({why})" for name, why in problems)


def _split_folder(folder: Path, files: list[Path], *, digest: bool) -> OpenedExport:
    """An unzipped split export: its parts read as one, identified by the sha256 of their bytes in order; a part
    that is empty, no JSON array or cut short is left out with its reason, as is a number the parts skip."""
    problems = _missing_parts([p.name for p in files])
    readable = []
    for part in files:
        try:
            why = _array_head(part.open("rb")) or _array_tail(part)
        except OSError as exc:
            why = f"cannot be read ({exc.strerror or exc})"
        if why:
            problems.append((part.name, why))
        else:
            readable.append(part)
    if not readable:
        raise MalformedExportError(str(folder), "no part of the split export can be read: " + _said(problems))
    sha256 = ""
    if digest:
        combined = hashlib.sha256()
        for part in readable:
            combined.update(part.name.encode() + b"\0" + sha256_file(part).encode())
        sha256 = combined.hexdigest()
    return OpenedExport(
        path=str(folder / SPLIT_NAME),
        file=folder,
        sha256=sha256,
        size_bytes=sum(p.stat().st_size for p in readable),
        parts=[str(p) for p in readable],
        part_problems=problems,
    )


class _JoinedArrays(io.RawIOBase):
    """Several streams, each one JSON array, read as one array: `[a, b]` and `[c]` give `[a, b,c]`. Streamed: each
    part is opened when the one before it is used up, and only its brackets (and an empty part) are left out.

    A part that is not an array is named in the error (MalformedExportError), as a file that is not JSON is."""

    CHUNK = 1 << 20

    def __init__(self, opens: Sequence[tuple[str, Callable[[], IO[bytes]]]]) -> None:
        self._chunks = self._generate(opens)
        self._pending = b""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        """As much as `buffer` holds (a reader of a head, `read_head`, reads once: the "[" alone would say little)."""
        filled = 0
        while filled < len(buffer):
            if not self._pending:
                chunk = next(self._chunks, None)
                if chunk is None:
                    break
                self._pending = chunk
            size = min(len(buffer) - filled, len(self._pending))
            buffer[filled : filled + size] = self._pending[:size]
            self._pending = self._pending[size:]
            filled += size
        return filled

    def _generate(self, opens: Sequence[tuple[str, Callable[[], IO[bytes]]]]) -> Iterator[bytes]:
        yield b"["
        first = True
        for name, open_part in opens:
            with open_part() as stream:
                body = self._inside(stream, name)
                head = next(body, None)
                if head is None:
                    continue  # "[]": an empty part adds nothing, not even a comma
                if not first:
                    yield b","
                first = False
                yield head
                yield from body
        yield b"]"

    def _inside(self, stream: IO[bytes], name: str) -> Iterator[bytes]:
        """The bytes between the part's opening "[" and its closing "]", starting with a byte that is not a space;
        nothing for an empty array."""
        space = b" \t\r\n"
        opened = b""
        while not opened:  # up to the opening bracket
            chunk = stream.read(self.CHUNK)
            if not chunk:
                raise MalformedExportError(name, "a part of a split export is empty: no JSON array found")
            opened = (opened + chunk).removeprefix(b"\xef\xbb\xbf").lstrip(space)
        if opened[:1] != b"[":
            raise MalformedExportError(name, "a part of a split export is not a JSON array")
        held = opened[1:].lstrip(space)  # the last bytes read that are not only spaces: they may hold the "]"
        while chunk := stream.read(self.CHUNK):
            if not held:
                held = chunk.lstrip(space)
            elif not chunk.strip(space):
                held += chunk
            else:
                yield held
                held = chunk
        tail = held.rstrip(space)
        if not tail.endswith(b"]"):
            raise MalformedExportError(name, "a part of a split export ends before its array closes")
        if tail[:-1].strip(space):
            yield tail[:-1]


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

    def close(self) -> None:
        try:
            self._stream.close()
        finally:
            super().close()

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
