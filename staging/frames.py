"""polars DataFrames of any staging.db or archive.db table, for analysis in a notebook, and file exports.

    >>> from staging.frames import Frames
    >>> frames = Frames(".chatmem")                    # the data dir
    >>> frames.tables()                                # {"archive": [...], "staging": [...]}
    >>> runs = frames.table("stage_runs", run_id="r20260101T120000-1a2b3c")
    >>> runs.select("stage", "duration_s", "counts")   # counts is a struct, started_at a Datetime

Columns are typed from the declared SQLite type (INTEGER -> Int64, REAL -> Float64, TEXT -> String, BLOB ->
Binary) and then by `staging.table_docs`: JSON text is decoded (lists and objects become polars lists and
structs), ISO-8601 times become UTC datetimes and 0/1 flags booleans. Databases are opened read-only, so a
frame can be taken while a run is going on. polars is imported by this module only.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

import polars as pl

from contracts.errors import ConfigError
from contracts.redact import MASK, URL_CREDENTIALS_PATTERN, known_secrets
from staging import inspect as inspection
from staging.db import connect_readonly
from staging.table_docs import table_doc

ExportFormat = Literal["parquet", "csv", "jsonl"]
EXPORT_FORMATS: tuple[ExportFormat, ...] = ("parquet", "csv", "jsonl")
DATABASE_FILES = {"archive": "archive.db", "staging": "staging.db"}
FTS_SHADOWS = ("_data", "_idx", "_docsize", "_config", "_content")


def _polars_type(declared: str) -> pl.DataType:
    """SQLite's type-affinity rules, reduced to the types our schemas declare."""
    kind = declared.upper()
    if "INT" in kind:
        return pl.Int64()
    if any(word in kind for word in ("REAL", "FLOA", "DOUB")):
        return pl.Float64()
    if "BLOB" in kind:
        return pl.Binary()
    return pl.String()


def _decode_json(values: list[Any]) -> pl.Series | None:
    """JSON text to Python values; None when a value is not JSON (the column is then left as text)."""
    try:
        decoded = [None if v is None else json.loads(v) for v in values]
    except (TypeError, ValueError):
        return None
    try:
        return pl.Series(decoded, strict=False)
    except (TypeError, ValueError, pl.exceptions.PolarsError):
        return None  # shapes polars cannot unify into one type: keep the text


def read_frame(
    conn: sqlite3.Connection, table: str, *, run_id: str | None = None, mask_secrets: bool = True
) -> pl.DataFrame:
    """Every row of `table` in insertion order (only run `run_id`'s when given), typed and decoded as the
    module docstring says."""
    inspection.columns(conn, table)  # checks the name against the database's own list: no SQL injection
    declared = {str(r[1]): str(r[2] or "") for r in conn.execute(f'PRAGMA table_info("{table}")')}
    where, params = _run_filter(table, declared, run_id)
    order = " ORDER BY rowid" if _has_rowid(conn, table) else ""
    rows = conn.execute(f'SELECT * FROM "{table}"{where}{order}', params).fetchall()
    doc = table_doc(table)
    columns: dict[str, pl.Series] = {}
    for index, (name, kind) in enumerate(declared.items()):
        values = [row[index] for row in rows]
        series = pl.Series(name, values, dtype=_polars_type(kind), strict=False)
        if mask_secrets and series.dtype == pl.String:  # a key written before it was known to be secret
            series = _masked(series)
            values = series.to_list()
        if doc is not None and name in doc.json:
            decoded = _decode_json(values)
            series = decoded.alias(name) if decoded is not None else series
        elif doc is not None and name in doc.times:
            series = series.str.to_datetime(time_zone="UTC", strict=False)
        elif doc is not None and name in doc.flags:
            series = series.cast(pl.Boolean)
        columns[name] = series
    return pl.DataFrame(columns) if columns else pl.DataFrame()


def _has_rowid(conn: sqlite3.Connection, table: str) -> bool:
    """Views and WITHOUT ROWID tables have none (their rows come in key order)."""
    try:
        conn.execute(f'SELECT rowid FROM "{table}" LIMIT 0')
    except sqlite3.OperationalError:
        return False
    return True


def _run_filter(table: str, declared: dict[str, str], run_id: str | None) -> tuple[str, list[object]]:
    """The WHERE clause of --run-id: tables with a run_id column, and `runs` itself (its id)."""
    if run_id is None:
        return "", []
    key = "run_id" if "run_id" in declared else "id" if table == "runs" else None
    if key is None:
        raise ConfigError(f"table {table!r} has no run_id column; drop --run-id")
    return f' WHERE "{key}" = ?', [run_id]


def flat_for_csv(frame: pl.DataFrame) -> pl.DataFrame:
    """CSV holds no lists or structs: nested columns go back to JSON text, datetimes to ISO-8601."""
    nested = [n for n, t in frame.schema.items() if isinstance(t, pl.List | pl.Struct | pl.Array)]
    binary = [n for n, t in frame.schema.items() if t == pl.Binary]
    out = frame.with_columns(
        *(pl.col(n).map_elements(_to_json, return_dtype=pl.String) for n in nested),
        *(pl.col(n).bin.encode("hex") for n in binary),
    )
    return out


def _to_json(value: Any) -> str:
    return json.dumps(value.to_list() if isinstance(value, pl.Series) else value, ensure_ascii=False, default=str)


def _masked(series: pl.Series) -> pl.Series:
    """A text column with URL credentials and every remembered secret masked, in bulk (contracts.redact)."""
    out = series.str.replace_all(URL_CREDENTIALS_PATTERN, "${scheme}")
    for secret in known_secrets():
        out = out.str.replace_all(secret, MASK, literal=True)
    return out


def write_frame(frame: pl.DataFrame, out: Path, fmt: str) -> Path:
    """Write `frame` as parquet, csv or jsonl (one JSON object per line); returns the path written."""
    out.parent.mkdir(parents=True, exist_ok=True)
    if fmt == "parquet":
        frame.write_parquet(out)
    elif fmt == "csv":
        flat_for_csv(frame).write_csv(out)
    elif fmt == "jsonl":
        binary = [n for n, t in frame.schema.items() if t == pl.Binary]
        frame.with_columns(*(pl.col(n).bin.encode("hex") for n in binary)).write_ndjson(out)
    else:
        raise ConfigError(f"unknown export format {fmt!r}; formats: {', '.join(EXPORT_FORMATS)}")
    return out


class Frames:
    """The tables of one data dir as polars DataFrames (see the module docstring)."""

    def __init__(self, data_dir: str | Path) -> None:
        self.data_dir = Path(data_dir).expanduser()

    def path(self, database: str) -> Path:
        return self.data_dir / DATABASE_FILES[database]

    @contextmanager
    def _open(self, database: str) -> Iterator[sqlite3.Connection]:
        conn = connect_readonly(self.path(database))
        try:
            yield conn
        finally:
            conn.close()

    def tables(self) -> dict[str, list[str]]:
        """The tables and views of each database that exists (FTS5's own shadow tables left out)."""
        found: dict[str, list[str]] = {}
        for database in DATABASE_FILES:
            if self.path(database).exists():
                with self._open(database) as conn:
                    names = inspection.table_names(conn)
                found[database] = [n for n in names if not any(n.endswith(s) and "_fts" in n for s in FTS_SHADOWS)]
        return found

    def database_of(self, table: str) -> str:
        """Which database holds `table`; ConfigError listing every table when none does."""
        known = self.tables()
        if not known:
            raise ConfigError(f"nothing in {self.data_dir} yet: run `chatmem run EXPORT` first")
        for database, names in known.items():
            if table in names:
                return database
        raise inspection.unknown_table(table, [n for names in known.values() for n in names])

    def table(self, table: str, *, run_id: str | None = None) -> pl.DataFrame:
        """One table as a DataFrame; `run_id` keeps only that run's rows (tables with a run_id column)."""
        database = self.database_of(table)
        with self._open(database) as conn:
            # staging.db's text (errors, replies, notes) is masked; archive.db is what the user said, left whole
            return read_frame(conn, table, run_id=run_id, mask_secrets=database == "staging")

    def export(self, table: str, out: Path, fmt: str, *, run_id: str | None = None) -> tuple[Path, int]:
        """Write one table to `out`; returns the path and the number of rows."""
        frame = self.table(table, run_id=run_id)
        return write_frame(frame, out, fmt), frame.height
