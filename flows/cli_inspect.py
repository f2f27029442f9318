"""The read-only commands of `chatmem`: `staging runs|tables|show|failures|export`, `archive stats` and
`inspect` (Datasette, flows/inspect_server.py).

They only read SQLite (staging.db and archive.db, opened read-only) and never import prefect or the
pipeline, so they answer at once and work while a run is going on. Output is a text table, or JSON only on
stdout with --json; `export` writes a file (polars, loaded only for it), `inspect` serves until Ctrl-C.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from contracts.errors import ChatmemError, ConfigError
from contracts.settings import Settings
from flows.terminal import safe_json, safe_line
from staging import inspect as inspection
from staging.archive import archive_stats
from staging.db import connect_readonly
from staging.ledger import run_exists

if TYPE_CHECKING:
    from flows.cli import App

CELL_WIDTH = 60  # text tables cut long cells (message text, raw JSON); --json gives them whole
WHOLE_COLUMNS = frozenset({"resume", "rerun_hint"})  # commands to copy: never cut
JSON_OPTION = click.option("--json", "as_json", is_flag=True, help="Machine-readable JSON on stdout.")


def emit(data: object) -> None:
    click.echo(safe_json(data))


def cell(value: object, *, whole: bool = False) -> str:
    """One table cell: one line, control and bidi characters escaped (flows/terminal.py), cut to CELL_WIDTH."""
    text = "" if value is None else safe_line(str(value))
    return text if whole or len(text) <= CELL_WIDTH else text[: CELL_WIDTH - 1] + "…"


def print_table(rows: list[dict[str, Any]], cols: list[str] | None = None) -> None:
    if not rows:
        click.echo("(no rows)")
        return
    cols = cols or list(rows[0])
    cells = [[cell(row.get(c), whole=c in WHOLE_COLUMNS) for c in cols] for row in rows]
    widths = [max(len(c), *(len(r[i]) for r in cells)) for i, c in enumerate(cols)]
    click.echo("  ".join(c.ljust(w) for c, w in zip(cols, widths, strict=True)).rstrip())
    for r in cells:
        click.echo("  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip())


@contextmanager
def open_readonly(path: Path, settings: Settings) -> Iterator[sqlite3.Connection]:
    """A read-only connection, closed on exit; a clear message when the data dir has nothing yet."""
    try:
        conn = connect_readonly(path)
    except FileNotFoundError:
        raise ChatmemError(
            f"nothing in {settings.data_dir} yet ({path.name} does not exist):"
            " run `chatmem run EXPORT` first, or point --data-dir / CHATMEM_DATA_DIR at an existing data dir"
        ) from None
    try:
        yield conn
    finally:
        conn.close()


def check_run_id(settings: Settings, run_id: str | None) -> None:
    """A --run-id that names no run is a usage error (one line, exit 2), not an empty table that looks like
    "that run wrote nothing"."""
    if run_id is None:
        return
    with open_readonly(settings.staging_path, settings) as conn:
        if not run_exists(conn, run_id):
            raise ConfigError(f"unknown run id {run_id!r}; list runs with: chatmem staging runs")


@click.group()
def staging() -> None:
    """Inspect staging.db (the run ledger) and archive.db tables, read-only.

    \b
    Example: chatmem staging runs --limit 5
    """


@staging.command("runs")
@click.option("--limit", default=20, show_default=True, help="How many recent runs (0: all).")
@JSON_OPTION
@click.pass_obj
def staging_runs(app: App, limit: int, as_json: bool) -> None:
    """List recent runs, newest first, with each stage's latest status.

    \b
    Example: chatmem staging runs --json --limit 5
    """
    settings = app.settings()
    with open_readonly(settings.staging_path, settings) as conn:
        runs = inspection.list_runs(conn, limit=limit)
    if as_json:
        emit(runs)
        return
    for run_row in runs:
        run_row["stages"] = " ".join(f"{k}:{v}" for k, v in run_row.pop("stage_status").items())
        run_row["exports"] = len(run_row["exports"])
        run_row.setdefault("resume", "")
    print_table(runs, ["id", "status", "started_at", "stages", "exports", "error", "resume"])


def _databases(settings: Settings) -> list[tuple[str, Path]]:
    found = [(n, p) for n, p in (("staging", settings.staging_path), ("archive", settings.archive_path))]
    found = [(n, p) for n, p in found if p.exists()]
    if not found:
        with open_readonly(settings.staging_path, settings):  # raises the "nothing here yet" message
            pass
    for _, path in found:  # refuses a damaged file in one line, and upgrades one an older chatmem wrote
        with open_readonly(path, settings):
            pass
    return found


@staging.command("tables")
@JSON_OPTION
@click.pass_obj
def staging_tables(app: App, as_json: bool) -> None:
    """List the tables of staging.db and archive.db with their row counts.

    \b
    Example: chatmem staging tables
    """
    settings = app.settings()
    rows: list[dict[str, Any]] = []
    for name, path in _databases(settings):
        with open_readonly(path, settings) as conn:
            rows.extend({"database": name, **t} for t in inspection.list_tables(conn))
    emit(rows) if as_json else print_table(rows, ["database", "table", "type", "rows"])


@staging.command("show")
@click.argument("table")
@click.option("--run-id", help="Only the rows of this run (tables with a run_id column).")
@click.option("--limit", default=20, show_default=True, help="How many rows (0: all).")
@JSON_OPTION
@click.pass_obj
def staging_show(app: App, table: str, run_id: str | None, limit: int, as_json: bool) -> None:
    """Show rows of one table of staging.db or archive.db (see `staging tables`).

    \b
    Example: chatmem staging show ingest_files --run-id r20260101T120000-1a2b3c
    """
    settings = app.settings()
    check_run_id(settings, run_id)
    known: list[str] = []
    for _name, path in _databases(settings):
        with open_readonly(path, settings) as conn:
            names = inspection.table_names(conn)
            if table in names:
                rows = inspection.show_rows(conn, table, run_id=run_id, limit=limit)
                emit(rows) if as_json else print_table(rows)
                return
            known.extend(names)
    raise ConfigError(f"unknown table {table!r}; tables: {', '.join(known)}")


@staging.command("failures")
@JSON_OPTION
@click.pass_obj
def staging_failures(app: App, as_json: bool) -> None:
    """Show what needs attention: failed stages (with the re-run command), failed files, quarantine.

    \b
    Example: chatmem staging failures --json
    """
    settings = app.settings()
    with open_readonly(settings.staging_path, settings) as staging_conn:
        if settings.archive_path.exists():
            with open_readonly(settings.archive_path, settings) as archive_conn:
                found = inspection.failures(staging_conn, archive_conn)
        else:
            found = inspection.failures(staging_conn)
    if as_json:
        emit(found)
        return
    if not any(found.values()):
        click.echo("no failures")
    titles = {
        "runs": "failed or interrupted runs",
        "stage_runs": "failed or interrupted stage runs",
        "files": "failed or partial files",
        "quarantine": "quarantine",
    }
    for key, title in titles.items():
        if found[key]:
            click.echo(f"{title}:")
            print_table(found[key])


@click.group()
def archive() -> None:
    """Inspect archive.db, the source of truth, read-only.

    \b
    Example: chatmem archive stats --json
    """


@archive.command("stats")
@JSON_OPTION
@click.pass_obj
def archive_stats_cmd(app: App, as_json: bool) -> None:
    """Count sources, conversations, messages and quarantined records.

    \b
    Example: chatmem archive stats --json
    """
    settings = app.settings()
    with open_readonly(settings.archive_path, settings) as conn:
        stats = archive_stats(conn)
    if as_json:
        emit(stats)
        return
    for name, value in stats.items():
        click.echo(f"{name:<16}{value}")


@staging.command("export")
@click.argument("table")
@click.option("--run-id", help="Only the rows of this run (tables with a run_id column).")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["parquet", "csv", "jsonl"]),
    default="parquet",
    show_default=True,
    help="File format: parquet keeps types (JSON columns as lists/structs), csv and jsonl are text.",
)
@click.option("--out", required=True, type=click.Path(dir_okay=False, path_type=Path), help="The file to write.")
@JSON_OPTION
@click.pass_obj
def staging_export(app: App, table: str, run_id: str | None, fmt: str, out: Path, as_json: bool) -> None:
    """Export one table of staging.db or archive.db to a file, typed as `staging.frames` reads it.

    \b
    Example: chatmem staging export stage_runs --run-id r20260101T120000-1a2b3c --format csv --out runs.csv
    """
    from staging.frames import Frames  # polars loads only for this command

    settings = app.settings()
    _databases(settings)  # the "nothing here yet" message when the data dir is empty
    check_run_id(settings, run_id)
    path, rows = Frames(settings.data_dir).export(table, out, fmt, run_id=run_id)
    if as_json:
        emit({"table": table, "rows": rows, "format": fmt, "path": str(path)})
    else:
        click.echo(f"{rows} row(s) of {table} -> {path}")


@click.command("inspect")
@click.option("--port", type=click.IntRange(0, 65535), help="Port on 127.0.0.1 (default: a free one, printed).")
@click.pass_obj
def inspect_cmd(app: App, port: int | None) -> None:
    """Browse archive.db and staging.db in Datasette, read-only, on 127.0.0.1 until Ctrl-C.

    Canned queries answer the usual questions (a run's stages, failures, LLM calls and cost, a concept's
    evidence and mapper decisions, a topic's members, quarantine, load batches); the messages table has
    full-text search.

    \b
    Example: chatmem inspect --port 8001   # then open http://127.0.0.1:8001/
    """
    settings = app.settings()
    _databases(settings)
    from flows import inspect_server  # Datasette loads only for this command

    try:
        sock = inspect_server.bind(port)
    except OSError as exc:
        raise ConfigError(f"cannot listen on 127.0.0.1:{port}: {exc.strerror}; pick another --port") from None
    ds = inspect_server.build(settings.archive_path, settings.staging_path)
    try:
        inspect_server.serve(ds, sock, lambda line: click.echo(line, err=False))
    except KeyboardInterrupt:
        pass
    finally:
        sock.close()
