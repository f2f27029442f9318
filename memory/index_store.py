"""The recall index on disk: built once per cues run, then opened in about a second instead of rebuilt.

    open_index(archive, staging, settings, embedder, run_id=None) -> MemoryIndex

Building the index (memory.index.load_index) reads every text, term, edge and key vector of the run: 69 s and
1.9 GB at 250k messages, for every CLI recall and every MCP server start. Here it is built on the first open of a
run and stored under <data_dir>/recall-index/<key>/:

    state.pickle      everything but the large arrays (ids, vocabularies, codes ...), arrays by reference
    a<N>.npy          each array of STORED_FROM bytes or more (key vectors, BM25 and cue matrices, tables),
                      opened with mmap_mode="r": the pages a recall touches are read, the rest stay on disk
    manifest.json     written last: format, key, every file's size and the pickle's sha256

The key is a hash of what the index is built from: the cues run (its memory_runs row: a re-run of cues is a new
row) and the settings that shape it (key embedder, key roles, pre-pass size), and the source of the modules that
build it (a new chatmem version rebuilds it). What is read fresh at every open,
and so never makes the index stale: message texts (read from archive.db only for the pieces shown, not held in
memory), conversation titles, the garden's facts. `--at` and scopes are query-time filters.

A build is written to a temporary directory and renamed into place: a killed build leaves a temporary directory
(removed by the next build), never a half index. An index that does not open (missing or truncated file, size or
checksum mismatch, another format) is removed and rebuilt; a data dir that cannot be written falls back to the
in-memory index. The pickle is read with an allow-list of classes (numpy, scipy, builtins, memory.*).
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import os
import pickle
import shutil
import sqlite3
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from clients.embedders import Embedder
from contracts.settings import Settings
from memory import candidates, dense_lists, graph, names, session, text
from memory import index as index_module
from memory.candidates import prepare
from memory.index import MemoryIndex, attach_facts, check_embedder, load_index
from memory.key_model import for_run
from staging import memory as store
from staging import memory_inputs as inputs

log = logging.getLogger(__name__)

FORMAT = 1  # bump when the stored layout changes (CODE below already covers a change of MemoryIndex's shape)
DIRECTORY = "recall-index"
STATE = "state.pickle"
MANIFEST = "manifest.json"
STORED_FROM = 64 * 1024  # smaller arrays stay in the pickle (an empty array cannot be memory-mapped)
BUILT_BY = (index_module, text, session, dense_lists, candidates, names, graph)
ALLOWED_MODULES = ("builtins", "collections", "numpy", "scipy.sparse", "memory.", "contracts.")
ALLOWED_CLASSES = {("re", "_compile")}  # how a compiled pattern pickles (memory.names.Names: the speaker names)


def _code_digest() -> str:
    """The source of the modules that build the index and the classes it holds: a changed one rebuilds it."""
    digest = hashlib.sha256()
    for module in BUILT_BY:
        digest.update(Path(module.__file__ or "").read_bytes())
    return digest.hexdigest()[:16]


CODE = _code_digest()


class ArchiveTexts(Mapping[str, str]):
    """Message texts read from archive.db when asked (a recall shows tens of pieces, not every message)."""

    def __init__(self, archive_path: Path, ids: list[str]) -> None:
        self.archive_path = archive_path
        self._ids = ids
        self._local = threading.local()  # one read-only connection per thread (an MCP server may use several)

    def _archive(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            # staging.db's read-only open: on a full disk it reads without the WAL's -shm index, as every other
            # read-only command does, instead of failing with SQLITE_IOERR_SHMSIZE
            from staging.db import connect_readonly

            conn = connect_readonly(self.archive_path)
            self._local.conn = conn
        return conn

    def __getitem__(self, message_id: str) -> str:
        row = self._archive().execute("SELECT text FROM messages WHERE uuid = ?", (message_id,)).fetchone()
        if row is None:
            raise KeyError(message_id)
        return str(row[0])

    def __iter__(self) -> Iterator[str]:
        return iter(self._ids)

    def __len__(self) -> int:
        return len(self._ids)

    def many(self, ids: list[str]) -> dict[str, str]:
        return inputs.message_texts(self._archive(), ids)


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


def open_index(
    archive: sqlite3.Connection,
    staging: sqlite3.Connection,
    settings: Settings,
    embedder: Embedder,
    *,
    run_id: str | None = None,
) -> MemoryIndex:
    """The stored index of the latest (or the given) cues run, built and stored first when there is none."""
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
        built = load_index(archive, staging, settings, embedder, run_id=run_id)
        if built.size >= settings.recall.prepass_from:
            prepare(built)  # stored with the index: the pre-pass tables cost seconds at 250k
        if not _store(built, root, target, key):
            return built
        index = _read_or_none(target, key)
        if index is None:  # written but unreadable (disk trouble): answer from what was built
            return built
    index.texts = ArchiveTexts(settings.archive_path, index.ids)
    index.titles = inputs.conversation_titles(archive)
    return attach_facts(index, staging)


def stored_runs(data_dir: Path) -> set[str]:
    """The cues runs whose recall index is stored under the data dir (a server may have it open)."""
    root = data_dir / DIRECTORY
    if not root.is_dir():
        return set()
    return {p.name[:-25] for p in root.iterdir() if not p.name.startswith(".tmp-") and len(p.name) > 25}


def _store(index: MemoryIndex, root: Path, target: Path, key: str) -> bool:
    """Write to a temporary directory, then rename it into place; False when the data dir cannot be written."""
    temporary = root / f".tmp-{target.name}-{os.getpid()}"
    try:
        root.mkdir(exist_ok=True)
        for stale in root.iterdir():  # other runs' indexes, killed builds (not a running one's), a damaged copy
            if stale.name != target.name and not _building(stale.name):
                shutil.rmtree(stale, ignore_errors=True)
        shutil.rmtree(temporary, ignore_errors=True)
        temporary.mkdir()
        _write(index, temporary, key)
        if _read_or_none(target, key) is not None:  # another process stored it meanwhile: keep theirs (maybe mapped)
            shutil.rmtree(temporary, ignore_errors=True)
            return True
        shutil.rmtree(target, ignore_errors=True)  # a damaged or half-removed copy
        os.rename(temporary, target)
    except OSError as error:
        log.warning("recall index not stored in %s (%s); using the in-memory index", root, error)
        shutil.rmtree(temporary, ignore_errors=True)
        return False
    return True


def _building(name: str) -> bool:
    """Whether a temporary directory belongs to a build still running (another process opening the memory)."""
    pid = name.rsplit("-", 1)[-1]
    if not name.startswith(".tmp-") or not pid.isdigit() or int(pid) == os.getpid():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


class _ArrayPickler(pickle.Pickler):
    def __init__(self, file: io.BytesIO, directory: Path) -> None:
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self.directory = directory
        self.files: dict[str, int] = {}

    def persistent_id(self, obj: Any) -> str | None:
        if type(obj) is not np.ndarray or obj.dtype.hasobject or obj.nbytes < max(STORED_FROM, 1):
            return None
        name = f"a{len(self.files)}.npy"
        np.save(self.directory / name, obj, allow_pickle=False)
        self.files[name] = (self.directory / name).stat().st_size
        return name


class _ArrayUnpickler(pickle.Unpickler):
    def __init__(self, file: io.BytesIO, directory: Path, files: Mapping[str, int]) -> None:
        super().__init__(file)
        self.directory = directory
        self.known = files

    def persistent_load(self, pid: Any) -> Any:
        if pid not in self.known:
            raise pickle.UnpicklingError(f"unknown array file {pid!r}")
        return np.load(self.directory / pid, mmap_mode="r", allow_pickle=False).view(np.ndarray)

    def find_class(self, module: str, name: str) -> Any:
        if not module.startswith(ALLOWED_MODULES) and (module, name) not in ALLOWED_CLASSES:
            raise pickle.UnpicklingError(f"class {module}.{name} is not allowed in a recall index")
        return super().find_class(module, name)


def _write(index: MemoryIndex, directory: Path, key: str) -> None:
    saved = {"texts": index.texts, "titles": index.titles, "facts": index.facts, "positions": index.fact_positions}
    index.texts, index.titles, index.facts, index.fact_positions = {}, {}, [], {}  # read fresh at every open
    try:
        buffer = io.BytesIO()
        pickler = _ArrayPickler(buffer, directory)
        pickler.dump(index)
    finally:
        index.texts, index.titles = saved["texts"], saved["titles"]  # type: ignore[assignment]
        index.facts, index.fact_positions = saved["facts"], saved["positions"]  # type: ignore[assignment]
    state = buffer.getvalue()
    (directory / STATE).write_bytes(state)
    manifest = {
        "format": FORMAT,
        "code": CODE,
        "key": key,
        "files": pickler.files,
        "state_bytes": len(state),
        "state_sha256": hashlib.sha256(state).hexdigest(),
    }
    with open(directory / MANIFEST, "w") as out:
        json.dump(manifest, out)
        out.flush()
        os.fsync(out.fileno())


def _read_or_none(directory: Path, key: str) -> MemoryIndex | None:
    """The stored index, or None (after removing it) when it is missing, stale or damaged."""
    if not (directory / MANIFEST).exists():
        return None
    try:
        return _read(directory, key)
    except Exception as error:  # any damage means "rebuild": the index is a cache of staging.db
        log.warning("recall index in %s is damaged (%s); rebuilding it", directory, error)
        shutil.rmtree(directory, ignore_errors=True)
        return None


def _read(directory: Path, key: str) -> MemoryIndex:
    manifest = json.loads((directory / MANIFEST).read_text())
    if manifest.get("format") != FORMAT or manifest.get("key") != key:
        raise ValueError("written for another format or memory")
    files: dict[str, int] = manifest["files"]
    for name, size in files.items():
        if (directory / name).stat().st_size != size:
            raise ValueError(f"{name} is {(directory / name).stat().st_size} bytes, expected {size}")
    state = (directory / STATE).read_bytes()
    if len(state) != manifest["state_bytes"] or hashlib.sha256(state).hexdigest() != manifest["state_sha256"]:
        raise ValueError(f"{STATE} does not match its checksum")
    index = _ArrayUnpickler(io.BytesIO(state), directory, files).load()
    if not isinstance(index, MemoryIndex):
        raise ValueError(f"{STATE} holds a {type(index).__name__}, not a MemoryIndex")
    return index
