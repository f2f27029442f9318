"""The key vectors of the stored recall indexes, kept in segments that successive runs' indexes share.

    <data_dir>/recall-vectors/<run>-<pid>-<token>.npy     one segment: rows of key vectors (n x dim float32)

The key vectors are most of a stored index (1.5 KB of 2.6 KB a message at 250k). An index built from scratch
writes one segment, its vectors list by list of the pre-pass's k-means lists (memory/mapped.py Rows); the index of
the next incremental cues run is patched from it (memory/index_patch.py) and writes only a segment of its new rows:
the earlier segments are referenced, never copied, read or hashed again. Each index's manifest lists the segments
it reads, with each one's size, sha256 and modification time taken when it was written, and its `dense.where`
(each content position's row in its segments, end to end).

A segment is written under a temporary name and renamed into place: it never changes after that. A segment no stored
index lists is removed by the next store (`collect`), unless the process that wrote it is still running (it is
storing the index that will list it). Reading one checks its size, and its sha256 when its modification time is not
the one written (memory/index_store.py's rule for every file).

A patched index stops sharing (its vectors are gathered and written as one new segment, the lists trained again: a
build from scratch) when it would read more than MAX_SEGMENTS segments, when more than MAX_DEAD of their rows are
no live content's (content retired since the segment was written), or when more than MAX_UNTRAINED of them were
added since the lists were trained. A build that copies an earlier index's vectors hashes its segments first
(`verify`).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import secrets
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

Array = np.ndarray[Any, Any]

DIRECTORY = "recall-vectors"
MAX_SEGMENTS = 32
MAX_DEAD = 0.25
MAX_UNTRAINED = 0.25  # rows outside the segment the k-means lists were trained on, as a share of all
ROWS_CHUNK = 65_536  # rows gathered per write (24 MiB at 384-d): no second copy of the vectors is held


def directory(index_root: Path) -> Path:
    """Where the segments of the indexes under `index_root` (<data_dir>/recall-index) are kept."""
    return index_root.parent / DIRECTORY


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        while chunk := file.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def write(index_root: Path, run_id: str, vectors: Array, order: Array | None = None) -> dict[str, Any]:
    """A new segment of `vectors[order]` (all rows in order when `order` is None), written ROWS_CHUNK rows at a
    time, renamed into place; its entry for the manifest."""
    folder = directory(index_root)
    folder.mkdir(exist_ok=True)
    rows = np.arange(len(vectors)) if order is None else order
    name = f"{run_id}-{os.getpid()}-{secrets.token_hex(4)}.npy"
    temporary = folder / f".tmp-{name}"
    shape = (len(rows), *vectors.shape[1:])
    head = _header(shape, np.dtype(vectors.dtype))
    digest = hashlib.sha256(head)
    with open(temporary, "wb") as out:
        out.write(head)
        for start in range(0, len(rows), ROWS_CHUNK):
            block = np.ascontiguousarray(vectors[rows[start : start + ROWS_CHUNK]]).tobytes()
            out.write(block)
            digest.update(block)  # hashed as written: the file is not read back
        out.flush()
        os.fsync(out.fileno())
    os.rename(temporary, folder / name)
    found = (folder / name).stat()
    return {
        "name": name,
        "rows": len(rows),
        "size": found.st_size,
        "sha256": digest.hexdigest(),
        "mtime": found.st_mtime_ns,
    }


def _header(shape: tuple[int, ...], dtype: np.dtype[Any]) -> bytes:
    """np.save's header of an array of this shape and dtype (format 1.0 for every such shape)."""
    head = io.BytesIO()
    header = {"descr": np.lib.format.dtype_to_descr(dtype), "fortran_order": False, "shape": shape}
    np.lib.format.write_array_header_1_0(head, header)
    return head.getvalue()


def verify(segments: Sequence[Array], entries: Sequence[dict[str, Any] | None]) -> None:
    """ValueError unless every stored segment holds the bytes written. An open trusts a segment whose modification
    time is the one written (its bytes are not read whole); a build that copies its vectors into a new segment
    hashes them first, so that no changed byte is written again under a fresh checksum."""
    for segment, entry in zip(segments, entries, strict=True):
        if entry is None:
            continue
        digest = hashlib.sha256(_header(segment.shape, segment.dtype))
        for start in range(0, len(segment), ROWS_CHUNK):
            digest.update(np.ascontiguousarray(segment[start : start + ROWS_CHUNK]).tobytes())
        if digest.hexdigest() != entry["sha256"]:
            raise ValueError(f"vector segment {entry['name']} does not hold the bytes written (another sha256)")


def read(index_root: Path, entry: dict[str, Any], *, hash_from: int) -> Array:
    """The segment of a manifest's entry, mapped (read whole under `hash_from` bytes); ValueError when it is not the
    one written. A segment hashed because its modification time is not the entry's (a data dir copied without its
    times) and found whole gets its time in `entry`: the next index that lists it records the time it has now, so
    that not every later open hashes it again."""
    path = directory(index_root) / str(entry["name"])
    found = path.stat()
    if found.st_size != entry["size"]:
        raise ValueError(f"vector segment {path.name} is {found.st_size} bytes, expected {entry['size']}")
    if found.st_size < hash_from or found.st_mtime_ns != entry["mtime"]:
        if sha256(path) != entry["sha256"]:
            raise ValueError(f"vector segment {path.name} does not hold the bytes written (another sha256)")
        entry["mtime"] = found.st_mtime_ns
    mapped: Array = np.load(path, mmap_mode="r" if found.st_size >= hash_from else None, allow_pickle=False)
    return mapped.view(np.ndarray)


def worth_sharing(segments: Sequence[Array], where: Array) -> bool:
    """Whether an index may read these segments (else its vectors are written again as one, and the k-means lists
    trained again): not too many segments, dead rows, or rows added since the lists were trained (the first
    segment's: a memory that grew needs more lists, trained on what it holds now)."""
    total = sum(len(s) for s in segments)
    if len(segments) > MAX_SEGMENTS or total == 0 or (total - len(segments[0])) / total > MAX_UNTRAINED:
        return False
    live = len(np.unique(where))
    return (total - live) / total <= MAX_DEAD


def collect(index_root: Path, alive: Any) -> None:
    """Remove the segments no stored index under `index_root` lists (and temporary ones), except those of a
    process still running (`alive(pid)`): it is storing the index that will list them."""
    folder = directory(index_root)
    if not folder.is_dir():
        return
    listed: set[str] = set()
    for stored in index_root.iterdir():
        try:
            manifest = json.loads((stored / "manifest.json").read_text())
        except (OSError, ValueError):
            continue
        listed.update(str(e["name"]) for e in manifest.get("segments", []))
    for segment in folder.iterdir():
        name = segment.name.removeprefix(".tmp-")
        if segment.name in listed:
            continue
        parts = name.split("-")
        pid = parts[-2] if len(parts) >= 3 else ""
        if pid.isdigit() and int(pid) != os.getpid() and alive(int(pid)):
            continue
        if segment.is_dir():
            shutil.rmtree(segment, ignore_errors=True)
        else:
            segment.unlink(missing_ok=True)
