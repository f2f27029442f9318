"""Opening the SQLite databases: WAL, foreign keys on. Schemas are versioned in staging.migrations.

A database that is there but damaged (0 bytes, truncated, not SQLite) is refused in one line naming the file
and what to do; it is never silently replaced by a new empty one (see `check_database`).
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import sqlite3
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from contracts.errors import StateError
from staging.space import where_sqlite_ran_out

IN_VALUES = "(SELECT value FROM json_each(?))"
"""An SQL `IN` list of any length in one bound parameter: `f"... WHERE id IN {IN_VALUES}"` with `json_values(ids)`
as its parameter. SQLite's json_each: one statement whatever the length (no limit on bound parameters, no
chunking), and an index on the column is still used for each value."""


def json_values(values: Iterable[str | int]) -> str:
    """The parameter of an `IN {IN_VALUES}` list."""
    return json.dumps(list(values), ensure_ascii=False)


def plain_rows(conn: sqlite3.Connection, sql: str, parameters: Any = ()) -> sqlite3.Cursor:
    """`conn.execute` yielding plain tuples, whatever the connection's row factory: a read of every row of a large
    table (concepts, evidence) spends less on tuples than on sqlite3.Row objects."""
    cursor = conn.cursor()
    cursor.row_factory = None
    return cursor.execute(sql, parameters)


def connect(path: Path) -> sqlite3.Connection:
    """Open (creating if needed) a read-write database with chatmem's pragmas; open_archive / open_staging
    then bring its schema up to date (staging.migrations). A damaged file is refused (`check_database`)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StateError(f"{path.parent}: cannot create the data dir ({exc.strerror})") from None
    refuse_empty(path)
    try:
        if not path.exists():
            _create(path)
        return _open(path)
    except sqlite3.DatabaseError as exc:
        raise damage_error(exc, path) from exc


def _create(path: Path) -> None:
    """Make a new database whole under a temporary name, then link it into place: a run killed while SQLite
    creates the file (the first seconds of a first run) leaves no 0-byte file that every later command, the
    printed resume command included, would have to refuse. `os.link` fails when another process linked first,
    which is fine: its database is the one to use."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.new")
    temporary.unlink(missing_ok=True)
    conn = sqlite3.connect(temporary)
    try:
        conn.execute("PRAGMA journal_mode=WAL")  # writes the header page: a real, empty WAL database
    finally:
        conn.close()
    try:
        os.link(temporary, path)
    except FileExistsError:
        pass
    finally:
        temporary.unlink(missing_ok=True)


WAL_SIZE_LIMIT = 64 << 20  # bytes: the WAL's working size between automatic checkpoints (16,384 pages)


def _open(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, timeout=30.0, isolation_level=None)  # autocommit; we BEGIN explicitly
    conn.row_factory = sqlite3.Row
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")  # WAL + NORMAL: durable at checkpoint, safe against corruption
    conn.execute("PRAGMA foreign_keys=ON")
    conn.execute("PRAGMA busy_timeout=30000")
    conn.execute("PRAGMA cache_size=-65536")  # 64 MiB page cache: bulk upserts touch many index pages
    # Checkpoint every ~64 MiB of WAL rather than every 4 MiB: fewer copies of the same pages on bulk loads.
    conn.execute("PRAGMA wal_autocheckpoint=16384")
    # After a checkpoint, the WAL file is cut back to this size: without it, the WAL keeps the size of the largest
    # transaction it ever held (3.5 GB beside a 6.4 GB staging.db, months after an upgrade re-extracted everything).
    conn.execute(f"PRAGMA journal_size_limit={WAL_SIZE_LIMIT}")
    return conn


def connect_readonly(path: Path) -> sqlite3.Connection:
    """Open an existing database read-only (for inspection commands). Raises FileNotFoundError if absent."""
    if not path.exists():
        raise FileNotFoundError(f"{path} does not exist (nothing has been ingested into this data dir yet)")
    refuse_empty(path)
    try:
        conn = _open_readonly(path)
        if _behind(conn, path):
            # Written by an older chatmem: the reads below expect today's tables. Upgrade it once, as any
            # writing command would (no writer can be running on it: a current one would have upgraded it).
            conn.close()
            _upgrade(path)
            conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30.0)
            conn.row_factory = sqlite3.Row
    except sqlite3.DatabaseError as exc:
        raise damage_error(exc, path) from exc
    return conn


# The -shm file (the WAL's index, shared between processes) cannot be created or grown: a full disk; or created at
# all, SQLITE_CANTOPEN: a data dir on a read-only mount (a backup, a copy shared read-only) whose -wal is there and
# -shm is not (the file itself exists: connect_readonly checked).
SHM_ERRORS = frozenset({"SQLITE_IOERR_SHMSIZE", "SQLITE_IOERR_SHMOPEN", "SQLITE_IOERR_SHMMAP", "SQLITE_CANTOPEN"})


def _open_readonly(path: Path) -> sqlite3.Connection:
    """`mode=ro`, its schema read (which finds a damaged file). When a full disk leaves no room for the WAL's
    -shm index (SQLITE_IOERR_SHMSIZE: every read-only command failed), or a read-only mount none can be made on
    (SQLITE_CANTOPEN), read without it instead (`_without_shm`); if that fails too, the first error stands."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30.0)
    conn.row_factory = sqlite3.Row
    try:
        conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
    except sqlite3.OperationalError as exc:
        conn.close()
        if getattr(exc, "sqlite_errorname", "") not in SHM_ERRORS:
            raise
        try:
            return _without_shm(path)
        except sqlite3.Error:
            raise exc from None
    return conn


def _without_shm(path: Path) -> sqlite3.Connection:
    """Read the database and its WAL with the WAL index in this process's memory, not in the -shm file.

    SQLite keeps the index in memory in exclusive locking mode, which needs a write lock a read-only file
    cannot take; the `unix-none` VFS takes no locks at all. Without locks a writer could change the file under
    the reader, but a disk with no room for 32 KiB of index has none for a writer's WAL frames either, a writer
    would have made the -shm that a read-only mount lacks, and this connection is only for the read-only
    commands that would otherwise fail. Everything committed is read, the WAL included (`immutable=1` would
    read only the main file: stale, or malformed when most of the data is still in the WAL)."""
    wal = path.with_name(path.name + "-wal")
    if not wal.exists() or wal.stat().st_size == 0:
        # No WAL to read (a database closed cleanly, then copied or mounted read-only): SQLite in WAL mode still
        # opens a -wal it cannot create here (SQLITE_CANTOPEN, even under unix-none), and the main file holds
        # everything committed, so read it as immutable: nothing can write to it where no -wal can be made.
        conn = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True, timeout=30.0)
        conn.row_factory = sqlite3.Row
        conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
        return conn
    conn = sqlite3.connect(f"file:{path}?mode=ro&vfs=unix-none", uri=True, timeout=30.0)
    conn.row_factory = sqlite3.Row
    conn.execute("PRAGMA locking_mode=EXCLUSIVE")  # before the first read: the index then never touches -shm
    conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
    return conn


def _migrations_for(path: Path) -> tuple[Any, ...]:
    from staging.migrations import ARCHIVE, STAGING  # imported here: migrations imports the stage tables' modules

    return {"archive.db": ARCHIVE, "staging.db": STAGING}.get(path.name, ())


def _behind(conn: sqlite3.Connection, path: Path) -> bool:
    migrations = _migrations_for(path)
    return bool(migrations) and int(conn.execute("PRAGMA user_version").fetchone()[0]) < len(migrations)


def _upgrade(path: Path) -> None:
    from staging.migrations import migrate

    conn = connect(path)
    try:
        migrate(conn, _migrations_for(path), name=str(path))
    finally:
        conn.close()


SQLITE_MAGIC = b"SQLite format 3\x00"
_ADVICE = "restore {name} from a backup, or move it away to start a new one (then re-run)"


def refuse_empty(path: Path) -> None:
    """Refuse a 0-byte database before SQLite would take it for a new one. Only `stat`: never open the file here.

    Why never open: POSIX drops *every* fcntl lock a process holds on a file when *any* descriptor of it is
    closed, SQLite's own locks included. An open+close of staging.db while this process has connections on it
    lets another process (the sqlite3 CLI, a second chatmem) take itself for the last user, checkpoint and
    delete the -wal/-shm under our connections: commits lost, SQLITE_IOERR_SHORT_READ, a damaged header
    (tests/test_db_locks.py). SQLite checks the rest itself under its locks (NOTADB; CORRUPT when the header
    counts more pages than the file and WAL hold); `damage_error` then names what is wrong.
    """
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return
    if size == 0:
        raise StateError(f"{path}: the file is empty (0 bytes), not a database; {_ADVICE.format(name=path.name)}")


def damage_error(exc: sqlite3.DatabaseError, path: Path) -> StateError:
    """The one line for a failed open: `check_database`'s precise words when SQLite found the file damaged."""
    if getattr(exc, "sqlite_errorcode", 0) & 0xFF in (sqlite3.SQLITE_NOTADB, sqlite3.SQLITE_CORRUPT):
        # Reading the file here may drop this process's locks on it (see refuse_empty): only on this failure path.
        try:
            check_database(path)
        except StateError as precise:
            return precise
    return storage_error(exc, path)


def check_database(path: Path) -> None:
    """Refuse a database file that is there but cannot be what we wrote: 0 bytes, not SQLite, or shorter than
    the pages its header counts. A missing file is fine (it is created); an empty one is not re-created over.

    The size check holds with a WAL file too: a checkpoint writes every page up to the count it then puts in the
    header, so a file shorter than its header's count lost pages whatever the WAL holds. It trusts the count only
    when SQLite marked it valid (bytes 92-95 equal the change counter at 24-27, as SQLite itself requires).
    It opens the file: never call it while this process may hold SQLite connections on it (see refuse_empty).
    """
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return
    advice = f"restore {path.name} from a backup, or move it away to start a new one (then re-run)"
    if size == 0:
        raise StateError(f"{path}: the file is empty (0 bytes), not a database; {advice}")
    with path.open("rb") as handle:
        header = handle.read(100)
    if not header.startswith(SQLITE_MAGIC):
        raise StateError(f"{path}: not an SQLite database (damaged or overwritten); {advice}")
    if len(header) < 100:
        raise StateError(f"{path}: truncated ({size} bytes, shorter than the SQLite header); {advice}")
    page_size = int.from_bytes(header[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    pages = int.from_bytes(header[28:32], "big")
    count_valid = header[92:96] == header[24:28]
    if pages and count_valid and size < pages * page_size:
        raise StateError(f"{path}: truncated ({size} bytes, its header says {pages * page_size}); {advice}")


def storage_error(exc: BaseException, path: Path | None, *, data_dir: Path | None = None) -> StateError:
    """One line for an SQLite or OS error about chatmem's files: which file, what happened, what to do."""
    where = str(path) if path is not None else f"{data_dir} (archive.db / staging.db)" if data_dir else "the data dir"
    message = " ".join(str(exc).split())
    code = getattr(exc, "sqlite_errorname", None)  # e.g. SQLITE_IOERR_SHMMAP: which I/O failed, for the report
    if code and code not in message:
        message = f"{message}, {code}"
    if _disk_full(exc) and isinstance(exc, sqlite3.Error):  # the data dir's disk, or SQLite's temporary directory
        folder = path.parent if path is not None else data_dir if data_dir is not None else Path(".")
        return StateError(f"{where}: the disk is full ({message}); {where_sqlite_ran_out(folder)}")
    if _disk_full(exc):
        return StateError(f"{where}: the disk is full ({message}); free space there, then re-run the same command")
    if "malformed" in message or "not a database" in message:
        return StateError(
            f"{where}: damaged database ({message}); restore it from a backup, or move it away to start a new one"
        )
    if "readonly" in message or "read-only" in message or "unable to open" in message or "I/O" in message:
        return StateError(f"{where}: cannot be opened or written ({message}); check the disk, free space, permissions")
    return StateError(f"{where}: {message}")


def _disk_full(exc: BaseException) -> bool:
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
        return True
    return isinstance(exc, sqlite3.Error) and "full" in str(exc)


@contextlib.contextmanager
def read_snapshot(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """`with read_snapshot(conn):` every read of the block sees one state of the database: one read transaction,
    begun here and pinned by a first read (a deferred BEGIN alone takes no snapshot). In WAL mode another process
    still commits meanwhile (a cues run, its prune); the block does not see it. Reads that run in several
    statements (a recall index build: rows, key texts, edges) then cannot disagree. A connection already in a
    transaction is left as it is: its reads are one snapshot already. Nothing may be written in the block: the
    connection is query-only meanwhile (a write fails at once), and the block ends with a ROLLBACK."""
    if conn.in_transaction:
        yield conn
        return
    query_only = int(conn.execute("PRAGMA query_only").fetchone()[0])
    conn.execute("PRAGMA query_only = ON")
    try:
        conn.execute("BEGIN")
        conn.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()  # the snapshot: taken now, not at a later read
        yield conn
    finally:
        # nothing was written; an error here must not hide the one the block may be raising
        with contextlib.suppress(sqlite3.Error):
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            conn.execute(f"PRAGMA query_only = {query_only}")


class Transaction:
    """`with Transaction(conn):` runs a BEGIN IMMEDIATE ... COMMIT block, rolling back on any exception."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def __enter__(self) -> sqlite3.Connection:
        self.conn.execute("BEGIN IMMEDIATE")
        return self.conn

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if exc_type is None:
            try:
                self.conn.execute("COMMIT")
            except BaseException as failed:  # a full disk often shows only here, when the pages are written
                _mark_file(failed, self.conn)
                if self.conn.in_transaction:
                    with contextlib.suppress(sqlite3.Error):  # the COMMIT's error is the one to report
                        self.conn.execute("ROLLBACK")
                raise
            return
        if isinstance(exc, BaseException):
            _mark_file(exc, self.conn)
        if self.conn.in_transaction:  # SQLite rolls back by itself on some errors (SQLITE_FULL): the error is `exc`
            self.conn.execute("ROLLBACK")


def _mark_file(exc: BaseException, conn: sqlite3.Connection) -> None:
    """Remember on a storage error which database it was writing: the one line then names that file (the disk
    filled while archive.db, not staging.db, was written), not the data dir."""
    if is_storage_error(exc) and getattr(exc, "database_path", None) is None:
        try:
            exc.database_path = database_file(conn)  # type: ignore[attr-defined]
        except AttributeError:
            pass


def database_file(conn: sqlite3.Connection) -> Path | None:
    """The file behind a connection (PRAGMA database_list reads no page: it works on a full disk too)."""
    try:
        for row in conn.execute("PRAGMA database_list").fetchall():
            if row[1] == "main" and row[2]:
                return Path(row[2])
    except sqlite3.Error:
        pass
    return None


def is_storage_error(exc: BaseException) -> bool:
    """An SQLite error, or an OS error about space: the state's problem, not a bug of the stage."""
    return isinstance(exc, sqlite3.DatabaseError) or _disk_full(exc)


def describe_storage_failure(exc: BaseException, staging: sqlite3.Connection) -> str:
    """`storage_error`'s line for a failure inside a stage, naming the data dir of the stage's databases."""
    written = getattr(exc, "database_path", None) or (getattr(exc, "filename", None) if _disk_full(exc) else None)
    if written:  # the file that could not be written, when the failing write said which
        return str(storage_error(exc, Path(written)))
    path = database_file(staging)
    return str(storage_error(exc, None, data_dir=path.parent if path else None))
