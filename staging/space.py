"""Where SQLite ran out of room: the data dir's disk, or SQLite's own temporary directory.

SQLite writes temporary tables, sorts, index builds and statement journals to files of its own, not beside the
database (https://www.sqlite.org/tempfiles.html). A full cues build keeps its edges in a temporary table and sorts
them at the end (staging.memory.RunWriter), so a "database or disk is full" there is as often a small `/var/tmp`
as a full data dir; SQLite's error does not say which. The one line a user reads names both, with the room left
on each, and the variable that moves the temporary files.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from pathlib import Path

TEMP_DIR_SETTING = "SQLITE_TMPDIR"
_FALLBACK_DIRS = ("/var/tmp", "/usr/tmp", "/tmp", ".")


def sqlite_temp_dir(environ: Mapping[str, str] | None = None) -> Path | None:
    """The directory SQLite's unix VFS puts its temporary files in, chosen as it chooses it (os_unix.c,
    unixTempFileDir): the first of `SQLITE_TMPDIR`, `TMPDIR`, /var/tmp, /usr/tmp, /tmp and the working directory
    that is a directory this process may write and search. None when none is (SQLite then fails to open one).
    SQLite reads the two variables once a process, at its first temporary file: read them before changing them.
    (chatmem leaves temp_store at its default, files; with temp_store = MEMORY this directory would not be used.)"""
    env = os.environ if environ is None else environ
    for candidate in (env.get(TEMP_DIR_SETTING), env.get("TMPDIR"), *_FALLBACK_DIRS):
        if candidate and os.path.isdir(candidate) and os.access(candidate, os.W_OK | os.X_OK):
            return Path(candidate).absolute()
    return None


def _existing(path: Path) -> Path | None:
    """`path`, or its nearest parent that exists (a data dir not made yet)."""
    return next((place for place in (path, *path.absolute().parents) if place.exists()), None)


def free_bytes(path: Path) -> int | None:
    """The room left on the filesystem holding `path` (or its nearest existing parent)."""
    place = _existing(path)
    try:
        return None if place is None else shutil.disk_usage(place).free
    except OSError:
        return None


def size_text(size: int | None) -> str:
    """1536 -> '1.5 KiB'; None -> 'unknown'."""
    if size is None:
        return "unknown"
    if size < 1024:
        return f"{size} bytes"
    value = size / 1024
    for unit in ("KiB", "MiB", "GiB"):
        if value < 1024:
            return f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} TiB"


def _device(path: Path) -> int | None:
    place = _existing(path)
    try:
        return None if place is None else os.stat(place).st_dev
    except OSError:
        return None


def where_sqlite_ran_out(data_path: Path, environ: Mapping[str, str] | None = None) -> str:
    """What a disk-full line says after its error: the two places SQLite writes, each with the room left on it
    (`data_path`: the folder of the file written, or the data dir), how to move the temporary one, what to do."""
    data = f"the data dir's disk ({data_path}: {size_text(free_bytes(data_path))} free)"
    temp = sqlite_temp_dir(environ)
    if temp is None:
        place = f"its temporary directory (none of {TEMP_DIR_SETTING}, TMPDIR, /var/tmp, /usr/tmp, /tmp, . is writable"
    else:
        device = _device(temp)
        same = ", the same disk" if device is not None and device == _device(data_path) else ""
        place = f"its temporary directory ({temp}{same}: {size_text(free_bytes(temp))} free"
    return (
        f"SQLite writes to {data} and to {place}; set {TEMP_DIR_SETTING} to a directory with room to move it):"
        " free space on the full one, then re-run the same command"
    )
