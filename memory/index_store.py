"""The recall index on disk: built once per cues run, then opened by mapping its files, never rebuilt or unpickled.

    open_index(archive, staging, settings, embedder, run_id=None) -> MemoryIndex
    store_index(archive, staging, settings, embedder, run_id=None) -> None     (a run: build and store, keep nothing)

Building the index (memory.index.load_index) reads every text, term, edge and key vector of the run (texts a
chunk at a time): 69 s and 1.4 GB peak at 250k messages (1.9 GB when every text was held at once). Here it is
built on the first open of a run (the first `chatmem recall` or MCP `recall` after a cues run) and stored under
<data_dir>/recall-index/<run>-<key>/:

    <name>.npy        every array of the index, one file each, opened with np.load(mmap_mode="r") (files under
                      STORED_FROM bytes are read whole): the pages a recall touches are read, the rest stay on disk
                        per content       conversation, seq, role_code, times, day, tokens, source, head, prev,
                                          next, asks, speaker, coarse, dense.where (each content's row in the
                                          key vector segments), or dense (n x dim) for a memory without the
                                          pre-pass's lists
                        sparse (CSR)      cue_content, cue_conversation, content_cue: <m>.indptr/.indices/.data
                        BM25              <b>.postings.* (terms x documents), <b>.tf (each posting's raw count),
                                          <b>.idf, <b>.vocabulary.* (below, in sorted order),
                                          for bm25 (content keys), cue_bm25 (cue names), sessions.bm25
                        strings           ids, conversation_ids, cue_ids, cue_names and each vocabulary as
                                          <s>.bytes (utf-8, concatenated) + <s>.offsets + <s>.order (positions
                                          sorted by string: lookups by binary search, memory.mapped.Lookup)
                        merged groups     group.heads (ascending), group.offsets, group.members
                        pre-pass tables   prepass.* (memory/dense_lists.py), large memories only
    manifest.json     written last: format, key, every file's size, sha256 and modification time, the key vector
                      segments it reads, and the small values (run id, role and source names, speaker names, matrix
                      shapes)

and the key vectors (n x dim, most of the bytes) in segments under <data_dir>/recall-vectors/, shared by the
indexes of successive runs (memory/vector_segments.py): a build from scratch writes one, list by list of the
pre-pass's k-means lists; a patched index lists the earlier index's segments and adds one of its new rows.

Nothing is unpickled and nothing is read whole: opening costs a few file opens and a JSON read whatever the size of
the memory; a recall then reads its query's posting lists, the key vectors and rows it scores (the candidate
pre-pass keeps that to a few thousand on a large memory), and the strings of what it shows. numpy is the only
library the index needs (memory/sparse.py in place of scipy.sparse).

The key is a hash of what the index is built from: the cues run (its memory_runs row: a re-run of cues is a new
row) and the settings that shape it (key embedder, key roles, pre-pass size), the format and the source of the
modules that build it (a new chatmem version rebuilds it; an index stored by an older version, such as format 1's
pickle, has another key: it is removed by the next store and rebuilt on the next open). What is read fresh at every
open, and so never makes the index stale: message texts (read from archive.db only for the pieces shown),
conversation titles (one query per title shown), the garden's facts. `--at` and scopes are query-time filters.

A build is written to a temporary directory and renamed into place: a killed build leaves a temporary directory
(removed as the next build begins to write), never a half index. An index that does not open (missing or truncated
file, size mismatch, another format, bytes that are not the ones written) is removed and rebuilt; a data dir that
cannot be written falls back to the in-memory index.

An incremental cues run's index is patched from the earlier run's (memory/index_patch.py: the touched conversations'
rows read, everything else moved; the same arrays as a fresh build, but for the pre-pass's k-means lists and the
coarse projection, kept from the earlier index, and the key vectors, read from its segments); when the patch
declines, the earlier index still gives the shared rows' term counts and key vectors (memory/index_reuse.py); else
it is built from scratch.

Damage in place (a file of the same size with other bytes) is found by each file's sha256 in the manifest:
  - an earlier run's index is reused (memory/index_reuse.py) only when every file's sha256 matches (the reuse reads
    most of it anyway; about 0.05 s per 100 MB hashed on a warm page cache): else the new index is built from
    scratch, with a warning in the log. Its key vector segments are checked as an open checks a file (below): a
    patch shares them without reading them;
  - an open for recall hashes the files it reads whole (under STORED_FROM) and every file whose modification time
    is not the one written (anything that wrote to it since); a file changed without a new modification time
    (a disk error) is not hashed, or an open would read the whole index (GBs at 1M messages) for each
    `chatmem recall`. A mismatch is damage: the index is removed and rebuilt, as above. A data dir copied without
    its times (cp -r) hashes those files at each open until the next cues run stores a new index.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import sqlite3
from collections.abc import Mapping, Sequence
from itertools import pairwise
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from clients.embedders import Embedder
from memory import vector_segments as segments
from memory.candidates import prepare
from memory.dense_lists import ConversationMembers, DenseLists, PrepassTables
from memory.index import Array, MemoryIndex, attach_facts, check_embedder, load_index
from memory.index_patch import patch_index
from memory.index_reuse import Reuse
from memory.key_model import for_run
from memory.mapped import ArchiveTexts, ArchiveTitles, Column, Groups, Lookup, Rows
from memory.names import Names
from memory.session import SessionKeys
from memory.sparse import CSR
from memory.text import BM25
from staging import memory as store
from staging.db import read_snapshot

if TYPE_CHECKING:
    from contracts.settings import Settings

log = logging.getLogger(__name__)

FORMAT = 4  # 1: a pickle of the index with its large arrays beside it; 2: the key vectors inside the index's folder;
# 4: a CJK run's terms are its two-character pieces (memory/text.py): a stored vocabulary of whole runs is not read
DIRECTORY = "recall-index"
MANIFEST = "manifest.json"
STORED_FROM = 64 * 1024  # smaller files are read whole (an empty array cannot be memory-mapped)
# the modules that build the index and the classes it holds (read as files: importing memory.graph would load the
# pipeline's settings into every recall)
BUILT_BY = (
    "index",
    "text",
    "session",
    "dense_lists",
    "candidates",
    "names",
    "graph",
    "sparse",
    "mapped",
    "index_store",
    "index_reuse",
    "index_patch",
    "vector_segments",
)
PER_CONTENT = ("conversation", "seq", "role_code", "times", "day", "tokens", "source", "head", "prev", "next")
OPTIONAL = ("asks", "speaker", "coarse", "projection")


def _code_digest() -> str:
    """The source of the modules that build the index and the classes it holds: a changed one rebuilds it."""
    digest = hashlib.sha256()
    for module in BUILT_BY:
        digest.update((Path(__file__).parent / f"{module}.py").read_bytes())
    return digest.hexdigest()[:16]


CODE = _code_digest()


def index_key(staging: sqlite3.Connection, settings: Settings, embedder: Embedder, run_id: str) -> str:
    """What the stored index is built from; any change gives another key (and a rebuild)."""
    row = staging.execute("SELECT * FROM memory_runs WHERE run_id = ?", (run_id,)).fetchone()
    memory = settings.memory
    parts = {
        "format": FORMAT,
        "code": CODE,
        "run": [str(v) for v in row] if row is not None else run_id,
        "embedder": embedder.key,
        "dim": embedder.dim,
        "key_embedder": memory.key_embedder,
        "key_roles": list(memory.key_roles),
        "prepass_from": settings.recall.prepass_from,
    }
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:24]


def reuse_key(settings: Settings, embedder: Embedder) -> str:
    """What an earlier run's index must have been built with for its key vectors and counts to serve another run
    (memory/index_reuse.py): the same format and code, key model and key roles."""
    memory = settings.memory
    parts = [FORMAT, CODE, embedder.key, embedder.dim, memory.key_embedder, list(memory.key_roles)]
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:24]


def _reusable(
    root: Path, target: Path, staging: sqlite3.Connection, settings: Settings, embedder: Embedder, run_id: str
) -> Reuse | None:
    """The stored index of an earlier cues run that the new one can take counts and key vectors from: built with
    the same reuse key, and still the index of that run as staging.db has it now (its key recomputed)."""
    if not root.is_dir():
        return None
    wanted = reuse_key(settings, embedder)
    for directory in sorted(root.iterdir(), reverse=True):  # the newest run first
        if directory == target or directory.name.startswith(".tmp-"):
            continue
        try:
            manifest = json.loads((directory / MANIFEST).read_text())
            if manifest.get("format") != FORMAT or manifest.get("meta", {}).get("reuse") != wanted:
                continue
            earlier = str(manifest["meta"]["run_id"])
            if manifest.get("key") != index_key(staging, settings, embedder, earlier):
                continue  # that run was undone or re-run since: its rows are not the ones the index holds
            previous = _read(directory, str(manifest["key"]), verify=True)
        except (OSError, ValueError, KeyError, TypeError) as error:  # any damage: build without it
            log.warning("recall index: the index in %s cannot be reused (%s): built from scratch", directory, error)
            continue
        found = Reuse.of(staging, run_id, previous)
        if found is not None:
            return found
    return None


def open_index(
    archive: sqlite3.Connection,
    staging: sqlite3.Connection,
    settings: Settings,
    embedder: Embedder,
    *,
    run_id: str | None = None,
    facts: bool = True,
) -> MemoryIndex:
    """The stored index of the latest (or the given) cues run, built and stored first when there is none. Its key,
    the earlier index it may reuse or patch and the build read one snapshot of each database (as load_index).
    `facts=False`: without the garden's facts (attach_facts)."""
    with read_snapshot(staging), read_snapshot(archive):
        index = _open_index(archive, staging, settings, embedder, run_id, facts)
    assert index is not None  # only a store returns none
    return index


def store_index(
    archive: sqlite3.Connection,
    staging: sqlite3.Connection,
    settings: Settings,
    embedder: Embedder,
    *,
    run_id: str | None = None,
) -> None:
    """What a run does for the first recall after it: open_index's build and store, keeping nothing. The stored
    files are not mapped back in while the built arrays are still held, and no texts or facts are attached."""
    with read_snapshot(staging), read_snapshot(archive):
        _open_index(archive, staging, settings, embedder, run_id, facts=False, store_only=True)


def _open_index(
    archive: sqlite3.Connection,
    staging: sqlite3.Connection,
    settings: Settings,
    embedder: Embedder,
    run_id: str | None,
    facts: bool = True,
    store_only: bool = False,
) -> MemoryIndex | None:
    run_id = run_id or store.latest_run(staging)
    if run_id is None:
        return load_index(archive, staging, settings, embedder)  # raises the "no memory yet" error
    settings = for_run(settings, staging, run_id)  # `auto`: the model this run's keys were embedded with
    check_embedder(settings, embedder)
    root = settings.data_dir / DIRECTORY
    key = index_key(staging, settings, embedder, run_id)
    target = root / f"{run_id}-{key}"
    index = _read_or_none(target, key)
    if index is None:
        reuse = _reusable(root, target, staging, settings, embedder, run_id)
        patched = None
        if reuse is not None:  # the earlier index, patched with the rows that changed (None: it declines)
            try:
                patched = patch_index(archive, staging, settings, embedder, run_id, reuse.previous)
            except (ValueError, KeyError) as error:  # rows that do not fit the earlier index: built as below
                log.warning("recall index: the index of run %s was not patched (%s)", reuse.previous.run_id, error)
        try:
            if patched is not None:
                built = patched
            else:
                built = load_index(archive, staging, settings, embedder, run_id=run_id, reuse=reuse, keep_texts=False)
        except ValueError as error:  # the earlier index does not fit this run after all: build from scratch
            if reuse is None:
                raise
            log.warning("recall index: the index of run %s was not reusable (%s)", reuse.previous.run_id, error)
            built = load_index(archive, staging, settings, embedder, run_id=run_id, keep_texts=False)
        del patched
        del reuse  # the earlier index's mapped files: closed before _store removes them
        if built.size >= settings.recall.prepass_from:
            prepare(built)  # stored with the index: the pre-pass tables cost seconds at 250k
        index = built
        if _store(built, root, target, key, reuse_key(settings, embedder)) and not store_only:
            index = _read_or_none(target, key) or built  # unreadable once written (disk trouble): what was built
    if store_only:
        return None
    texts = ArchiveTexts(settings.archive_path, index.ids)
    index.texts, index.titles = texts, ArchiveTitles(texts, index.conversation_ids)
    return attach_facts(index, staging) if facts else index


def stored_runs(data_dir: Path) -> set[str]:
    """The cues runs whose recall index is stored under the data dir (a server may have it open)."""
    root = data_dir / DIRECTORY
    if not root.is_dir():
        return set()
    return {p.name[:-25] for p in root.iterdir() if not p.name.startswith(".tmp-") and len(p.name) > 25}


def _store(index: MemoryIndex, root: Path, target: Path, key: str, reuse: str) -> bool:
    """Write to a temporary directory, then rename it into place; False when the data dir cannot be written."""
    temporary = root / f".tmp-{target.name}-{os.getpid()}"
    written: list[str] = []  # the vector segments this store writes: removed again when it does not finish
    try:
        root.mkdir(exist_ok=True)
        _clear_killed_builds(root)
        shutil.rmtree(temporary, ignore_errors=True)
        temporary.mkdir()
        _write(index, temporary, key, reuse, written)
        if _read_or_none(target, key) is not None:  # another process stored it meanwhile: keep theirs (maybe mapped)
            _discard(root, temporary, written)
            return True
        shutil.rmtree(target, ignore_errors=True)  # a damaged or half-removed copy
        os.rename(temporary, target)
        # only now: until the new index lists them, the earlier index's manifest keeps its segments listed
        for stale in root.iterdir():  # other runs' indexes, killed builds (not a running one's), a damaged copy
            if stale.name != target.name and not _building(stale.name):
                shutil.rmtree(stale, ignore_errors=True)
        segments.collect(root, _alive)  # the key vectors no stored index reads any more
    except OSError as error:
        log.warning("recall index not stored in %s (%s); using the in-memory index", root, error)
        _discard(root, temporary, written)
        return False
    return True


def _discard(root: Path, temporary: Path, written: Sequence[str]) -> None:
    """A store that did not finish: its temporary directory and the vector segments it wrote."""
    shutil.rmtree(temporary, ignore_errors=True)
    for name in written:
        (segments.directory(root) / name).unlink(missing_ok=True)


def _clear_killed_builds(root: Path) -> None:
    """The `.tmp-*` folders of earlier builds whose process is gone (killed while writing), removed before this
    build writes, not only once it is in place: a leftover is about as large as the index (GBs at 1M messages),
    and a store that then fails (a full disk) or is stopped again would leave them to pile up. Only those folders:
    a stored index, and a build still running (another process, or a thread of this one), are never touched."""
    for leftover in root.glob(".tmp-*"):
        pid = leftover.name.rsplit("-", 1)[-1]
        if leftover.is_dir() and pid.isdigit() and int(pid) != os.getpid() and not _alive(int(pid)):
            shutil.rmtree(leftover, ignore_errors=True)


def _building(name: str) -> bool:
    """Whether a temporary directory belongs to a build still running (another process opening the memory)."""
    pid = name.rsplit("-", 1)[-1]
    if not name.startswith(".tmp-") or not pid.isdigit() or int(pid) == os.getpid():
        return False
    return _alive(int(pid))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


class _Hashing:
    """A file that hashes what is written to it (np.lib.format.write_array writes a non-file object's array in
    chunks through `write`, the header first: the bytes np.save writes)."""

    def __init__(self, file: Any) -> None:
        self.file = file
        self.digest = hashlib.sha256()

    def write(self, data: bytes) -> int:
        self.digest.update(data)
        return int(self.file.write(data))


class _Writer:
    """Writes the index's arrays into a directory, one .npy each, and remembers their sizes for the manifest."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.files: dict[str, int] = {}
        self.sha256: dict[str, str] = {}
        self.mtimes: dict[str, int] = {}

    def array(self, name: str, value: Array) -> None:
        """`np.save`'s bytes, hashed as they are written: the file is not read back (346 MB an incremental day at
        250k messages), as a vector segment is not (memory/vector_segments.py)."""
        path = self.directory / f"{name}.npy"
        with open(path, "wb") as file:
            out = _Hashing(file)
            np.lib.format.write_array(out, np.ascontiguousarray(value), allow_pickle=False)
        written = path.stat()
        self.files[name], self.mtimes[name] = written.st_size, written.st_mtime_ns
        self.sha256[name] = out.digest.hexdigest()

    def strings(self, name: str, values: Sequence[str]) -> None:
        encoded = [v.encode() for v in values]
        offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
        np.cumsum([len(e) for e in encoded], out=offsets[1:])
        self.array(f"{name}.bytes", np.frombuffer(b"".join(encoded), dtype=np.uint8))
        self.array(f"{name}.offsets", offsets)
        if all(a < b for a, b in pairwise(values)):  # ids, vocabularies: sorted already (sorted() would say so)
            order = np.arange(len(values), dtype=np.int64)
        else:
            order = np.array(sorted(range(len(values)), key=values.__getitem__), dtype=np.int64)
        self.array(f"{name}.order", order)

    def csr(self, name: str, matrix: CSR) -> list[int]:
        self.array(f"{name}.indptr", matrix.indptr)
        self.array(f"{name}.indices", matrix.indices)
        self.array(f"{name}.data", matrix.data)
        return list(matrix.shape)

    def bm25(self, name: str, bm25: BM25) -> list[int]:
        terms = sorted(bm25.vocabulary, key=bm25.vocabulary.__getitem__)  # by column: position = column
        if [bm25.vocabulary[t] for t in terms] != list(range(len(terms))):
            raise ValueError(f"{name}: its vocabulary does not number its columns 0..n-1")
        self.strings(f"{name}.vocabulary", terms)
        self.array(f"{name}.idf", bm25.idf)
        if bm25.tf is not None:
            self.array(f"{name}.tf", bm25.tf)
        return self.csr(f"{name}.postings", bm25.postings)


def _write(index: MemoryIndex, directory: Path, key: str, reuse: str, new_segments: list[str] | None = None) -> None:
    """Every array of the index in its own file; the manifest (the small values, every file's size) last. The names
    of the vector segments it writes are added to `new_segments`."""
    new_segments = [] if new_segments is None else new_segments
    out = _Writer(directory)
    for name in PER_CONTENT:
        out.array(name, getattr(index, name))
    for name in OPTIONAL:
        if getattr(index, name) is not None:
            out.array(name, getattr(index, name))
    lists = index.prepass.lists if index.prepass is not None else None
    stored_segments: list[dict[str, Any]] = []
    if isinstance(index.dense, Rows):  # patched: the earlier index's segments, and one of the new rows
        for segment, entry in zip(index.dense.segments, index.dense.entries, strict=True):
            if entry is None:
                entry = segments.write(directory.parent, index.run_id, segment)
                new_segments.append(entry["name"])
            stored_segments.append(entry)
        out.array("dense.where", index.dense.where)
    elif lists is not None and len(lists.order) == index.size and index.dense.shape[0] == index.size:
        stored_segments.append(segments.write(directory.parent, index.run_id, index.dense, lists.order))  # see Rows
        new_segments.append(stored_segments[-1]["name"])
        where = np.empty(index.size, dtype=np.int64)
        where[lists.order] = np.arange(index.size)
        out.array("dense.where", where)
    else:
        out.array("dense", np.asarray(index.dense))
    out.array("cue_idf", index.cue_idf)
    out.array("cue_hub", index.cue_hub)
    for name in ("ids", "conversation_ids", "cue_ids", "cue_names"):
        out.strings(name, getattr(index, name))
    heads = np.array(sorted(index.group), dtype=np.int64)
    members = [index.group[int(h)] for h in heads]
    out.array("group.heads", heads)
    out.array("group.offsets", np.concatenate([[0], np.cumsum([len(m) for m in members], dtype=np.int64)]))
    out.array("group.members", np.array([m for group in members for m in group], dtype=np.int64))
    shapes = {name: out.csr(name, getattr(index, name)) for name in ("cue_content", "cue_conversation", "content_cue")}
    shapes["bm25"] = out.bm25("bm25", index.bm25)
    shapes["cue_bm25"] = out.bm25("cue_bm25", index.cue_bm25)
    if index.sessions is not None:
        shapes["sessions.bm25"] = out.bm25("sessions.bm25", index.sessions.bm25)
        out.array("sessions.dense", index.sessions.dense)
        out.array("sessions.messages", index.sessions.messages)
    prepass = index.prepass
    if prepass is not None:
        out.array("prepass.members.order", prepass.members.order)
        out.array("prepass.members.offsets", prepass.members.offsets)
        if prepass.lists is not None:
            for field in ("projection", "centroids", "half_norms", "order", "offsets"):
                out.array(f"prepass.lists.{field}", getattr(prepass.lists, field))
    meta = {
        "run_id": index.run_id,
        "roles": list(index.roles),
        "sources": list(index.sources),
        "names": list(index.names.names),
        "shapes": shapes,
        "sessions": index.sessions is not None,
        "prepass": None if prepass is None else {"lists": prepass.lists is not None},
        "reuse": reuse,
        "days": list(index.days),
    }
    manifest = {
        "format": FORMAT,
        "code": CODE,
        "key": key,
        "files": out.files,
        "sha256": out.sha256,
        "mtimes": out.mtimes,
        "segments": stored_segments,
        "meta": meta,
    }
    with open(directory / MANIFEST, "w") as written:
        json.dump(manifest, written)
        written.flush()
        os.fsync(written.fileno())


def _read_or_none(directory: Path, key: str) -> MemoryIndex | None:
    """The stored index, or None (after removing it) when it is missing, stale or damaged."""
    if not (directory / MANIFEST).exists():
        return None
    try:
        return _read(directory, key)
    except Exception as error:  # any damage means "rebuild": the index is a cache of staging.db
        log.warning("recall index in %s cannot be used (%s); rebuilding it", directory, error)
        shutil.rmtree(directory, ignore_errors=True)
        return None


def _read(directory: Path, key: str, *, verify: bool = False) -> MemoryIndex:
    """The stored index; ValueError when it is not the one written. `verify`: every file's sha256 checked, else
    only those of the files read whole or with another modification time than written (see the module's doc)."""
    manifest = json.loads((directory / MANIFEST).read_text())
    if manifest.get("format") != FORMAT or manifest.get("key") != key:
        raise ValueError("written for another format or memory")
    if "sha256" not in manifest:  # an index stored by a chatmem before checksums: built again, as another format's
        raise ValueError("written by an older chatmem, without checksums")
    files: dict[str, int] = manifest["files"]
    sha256: dict[str, str] = manifest["sha256"]
    mtimes: dict[str, int] = manifest["mtimes"]
    meta: dict[str, Any] = manifest["meta"]
    arrays: dict[str, Array] = {}
    for name, size in files.items():
        path = directory / f"{name}.npy"
        found = path.stat()
        if found.st_size != size:
            raise ValueError(f"{path.name} is {found.st_size} bytes, expected {size}")
        if (verify or size < STORED_FROM or found.st_mtime_ns != mtimes[name]) and segments.sha256(path) != sha256[
            name
        ]:
            raise ValueError(f"{path.name} does not hold the bytes written (another sha256)")
        mapped = np.load(path, mmap_mode="r" if size >= STORED_FROM else None, allow_pickle=False)
        arrays[name] = mapped.view(np.ndarray)
    entries: list[dict[str, Any]] = manifest.get("segments", [])
    vectors = [segments.read(directory.parent, e, hash_from=STORED_FROM) for e in entries]  # never re-hashed whole
    return _assemble(arrays, meta, (vectors, entries) if entries else None)


def _column(arrays: Mapping[str, Array], name: str) -> Column:
    return Column(arrays[f"{name}.bytes"], arrays[f"{name}.offsets"])


def _lookup(arrays: Mapping[str, Array], name: str) -> Lookup:
    return Lookup(_column(arrays, name), arrays[f"{name}.order"])


def _csr(arrays: Mapping[str, Array], name: str, shape: list[int]) -> CSR:
    parts = (arrays[f"{name}.indptr"], arrays[f"{name}.indices"], arrays[f"{name}.data"])
    return CSR(*parts, (int(shape[0]), int(shape[1])))


def _bm25(arrays: Mapping[str, Array], name: str, shape: list[int]) -> BM25:
    vocabulary, postings = _lookup(arrays, f"{name}.vocabulary"), _csr(arrays, f"{name}.postings", shape)
    return BM25(vocabulary, postings, arrays[f"{name}.idf"], arrays.get(f"{name}.tf"))


def _assemble(
    arrays: Mapping[str, Array],
    meta: Mapping[str, Any],
    vectors: tuple[list[Array], list[dict[str, Any]]] | None,
) -> MemoryIndex:
    """The MemoryIndex over the stored arrays (strings, groups and vocabularies as lookups over them) and the key
    vectors' segments with their manifest entries."""
    shapes = meta["shapes"]
    sessions = None
    if meta["sessions"]:
        bm25 = _bm25(arrays, "sessions.bm25", shapes["sessions.bm25"])
        sessions = SessionKeys(bm25, arrays["sessions.dense"], arrays["sessions.messages"])
    prepass = None
    if meta["prepass"] is not None:
        members = ConversationMembers(arrays["prepass.members.order"], arrays["prepass.members.offsets"])
        lists = None
        if meta["prepass"]["lists"]:
            fields = ("projection", "centroids", "half_norms", "order", "offsets")
            lists = DenseLists(*(arrays[f"prepass.lists.{f}"] for f in fields))
        prepass = PrepassTables(members, lists)
    conversation_ids = _lookup(arrays, "conversation_ids")
    ids = _lookup(arrays, "ids")
    return MemoryIndex(
        run_id=meta["run_id"],
        ids=ids._column,
        conversation_ids=conversation_ids._column,
        roles=list(meta["roles"]),
        sources=list(meta["sources"]),
        group=Groups(arrays["group.heads"], arrays["group.offsets"], arrays["group.members"]),
        bm25=_bm25(arrays, "bm25", shapes["bm25"]),
        dense=cast(Array, Rows(vectors[0], arrays["dense.where"], vectors[1]))
        if vectors is not None
        else arrays["dense"],
        cue_ids=_column(arrays, "cue_ids"),
        cue_names=_column(arrays, "cue_names"),
        cue_idf=arrays["cue_idf"],
        cue_hub=arrays["cue_hub"],
        cue_bm25=_bm25(arrays, "cue_bm25", shapes["cue_bm25"]),
        cue_content=_csr(arrays, "cue_content", shapes["cue_content"]),
        cue_conversation=_csr(arrays, "cue_conversation", shapes["cue_conversation"]),
        content_cue=_csr(arrays, "content_cue", shapes["content_cue"]),
        conversation_code=conversation_ids,
        position=ids,
        names=Names.of(meta["names"]),
        sessions=sessions,
        prepass=prepass,
        conversation=arrays["conversation"],
        seq=arrays["seq"],
        role_code=arrays["role_code"],
        times=arrays["times"],
        day=arrays["day"],
        tokens=arrays["tokens"],
        source=arrays["source"],
        head=arrays["head"],
        prev=arrays["prev"],
        next=arrays["next"],
        asks=arrays.get("asks"),
        speaker=arrays.get("speaker"),
        coarse=arrays.get("coarse"),
        projection=arrays.get("projection"),
        days=list(meta.get("days", [])),
    )
