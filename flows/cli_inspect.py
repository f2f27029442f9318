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
from flows.terminal import safe_json, safe_line

if TYPE_CHECKING:
    from contracts.settings import Settings
    from flows.cli import App

HEADING_MIN = 12  # a column's heading is never cut shorter ("messa…rted" says nothing; "messag…serted" does)
CELL_WIDTH = 60  # a cell outside a table (a line of `concepts`, `garden`) is shortened to this; --json: whole
WHOLE_COLUMNS = frozenset({"resume", "rerun_hint"})  # commands to copy: never cut
JSON_OPTION = click.option("--json", "as_json", is_flag=True, help="Machine-readable JSON on stdout.")


def emit(data: object) -> None:
    click.echo(safe_json(data))


def shorten(text: str, width: int) -> str:
    """`text` in at most `width` characters, its middle replaced by "…": the start and the end (a file name at
    the end of a path, a reason at the end of an error) both stay."""
    if len(text) <= width:
        return text
    if width <= 1:
        return "…"[:width]
    tail = (width - 1) // 2
    return text[: width - 1 - tail] + "…" + (text[-tail:] if tail else "")


def cell(value: object, *, whole: bool = False, width: int = CELL_WIDTH) -> str:
    """One cell: one line, control and bidi characters escaped (flows/terminal.py), its middle shortened to
    `width`."""
    text = "" if value is None else safe_line(str(value))
    return text if whole else shorten(text, width)


def terminal_width() -> int:
    """The terminal's columns ($COLUMNS first); 120 when the output is no terminal (a pipe, a file)."""
    import shutil

    return max(shutil.get_terminal_size((120, 24)).columns, 40)


def fit(widths: list[int], fixed: list[bool], total: int, minimum: list[int]) -> list[int] | None:
    """Column widths whose sum is at most `total`: the widest shortenable columns are cut first, to a common
    cap (never below `minimum`); `fixed` columns keep their width. None when even the minimums do not fit."""
    if sum(widths) <= total:
        return widths
    free = [i for i, f in enumerate(fixed) if not f]
    room = total - sum(w for w, f in zip(widths, fixed, strict=True) if f)
    if sum(min(widths[i], minimum[i]) for i in free) > room:
        return None
    low, high = 0, max((widths[i] for i in free), default=0)
    while low < high:  # the largest cap under which the shortenable columns fit in `room`
        cap = (low + high + 1) // 2
        if sum(min(widths[i], max(cap, minimum[i])) for i in free) <= room:
            low = cap
        else:
            high = cap - 1
    return [w if f else min(w, max(low, minimum[i])) for i, (w, f) in enumerate(zip(widths, fixed, strict=True))]


def print_table(rows: list[dict[str, Any]], cols: list[str] | None = None, *, whole: bool = False) -> None:
    """A text table that fits the terminal: the widest columns are shortened in their middle (headings too, to
    no less than HEADING_MIN characters; values to no less than 24). A table that cannot fit so (with `whole`: that
    cannot fit without shortening a value, for tables whose values are the point, such as failure reasons; or
    whose shortening would make two different values of a column look the same) is shown
    one record per block, a `column  value` line each (psql's expanded display), a long value wrapped over up
    to EXPANDED_LINES lines (all of it with `whole`) and shortened in its middle beyond that; --json always has
    every value whole."""
    if not rows:
        click.echo("(no rows)")
        return
    cols = cols or list(rows[0])
    texts = [[cell(row.get(c), whole=True) for c in cols] for row in rows]
    values = [max(len(r[i]) for r in texts) for i in range(len(cols))]
    widths = [max(len(c), v) for c, v in zip(cols, values, strict=True)]
    fixed = [c in WHOLE_COLUMNS for c in cols]
    minimum = [max(min(v, 24), min(len(c), HEADING_MIN), 1) for c, v in zip(cols, values, strict=True)]
    columns = terminal_width()
    fitted = fit(widths, fixed, columns - 2 * (len(cols) - 1), minimum)
    if fitted is not None and whole and any(f < v for f, v in zip(fitted, values, strict=True)):
        fitted = None  # a value would lose its middle: one record per block instead
    if fitted is not None and not all(_still_distinct([r[i] for r in texts], w) for i, w in enumerate(fitted)):
        fitted = None  # two different values would look the same (two paths cut to one): one record per block
    if fitted is None:
        label = max(len(c) for c in cols)
        room = max(columns - label - 2, 20)
        for n, r in enumerate(texts):
            click.echo(f"-[ {n + 1} ]" + "-" * max(columns - 8 - len(str(n + 1)), 0))
            for i, c in enumerate(cols):
                lines = [r[i]] if fixed[i] else wrapped(r[i], room, WHOLE_LINES if whole else EXPANDED_LINES)
                click.echo(f"{c.ljust(label)}  {lines[0]}".rstrip())
                for line in lines[1:]:
                    click.echo(f"{' ' * label}  {line}".rstrip())
        return
    heads = [shorten(c, w) for c, w in zip(cols, fitted, strict=True)]
    cells = [[v if fixed[i] else shorten(v, fitted[i]) for i, v in enumerate(r)] for r in texts]
    click.echo("  ".join(c.ljust(w) for c, w in zip(heads, fitted, strict=True)).rstrip())
    for r in cells:
        click.echo("  ".join(v.ljust(w) for v, w in zip(r, fitted, strict=True)).rstrip())


def _still_distinct(column: list[str], width: int) -> bool:
    """Values that differ still differ once shortened to `width` (the part that tells two paths apart is often
    their middle: `.../spark-first/conversations.json` and `.../rainchinchao/conversations.json`)."""
    distinct = set(column)
    return len({shorten(v, width) for v in distinct}) == len(distinct)


WHOLE_LINES = 1000  # a table whose values are the point (`whole`: failure reasons) wraps them whole
EXPANDED_LINES = 6  # lines a value may take in the expanded display before its middle is shortened


def wrapped(text: str, width: int, lines: int = EXPANDED_LINES) -> list[str]:
    """`text` over at most `lines` lines of `width` (its middle shortened first when longer), cut at spaces
    where it can be."""
    import textwrap

    text = shorten(text, width * lines - 4 * lines)  # room for the lines' ragged ends
    return textwrap.wrap(text, width, break_on_hyphens=False) or [""]


@contextmanager
def open_readonly(path: Path, settings: Settings) -> Iterator[sqlite3.Connection]:
    """A read-only connection, closed on exit; a clear message when the data dir has nothing yet."""
    from staging.db import connect_readonly

    try:
        conn = connect_readonly(path)
    except FileNotFoundError:
        from flows.preflight import describe_starting, starting

        info = starting(settings.data_dir)
        if info is None and not settings.data_dir.exists():
            raise ChatmemError(no_data_dir(settings)) from None
        if info is not None:  # a first run between its command and its first stage: not "nothing"
            raise ChatmemError(
                f"nothing in {settings.data_dir} yet: {describe_starting(info)}; {path.name} appears when its"
                " first stage starts (`chatmem staging runs` lists it then)"
            ) from None
        raise ChatmemError(
            f"nothing in {settings.data_dir} yet ({path.name} does not exist):"
            " run `chatmem run EXPORT` first, or point --data-dir / CHATMEM_DATA_DIR at an existing data dir"
        ) from None
    try:
        yield conn
    finally:
        conn.close()


def require_data(settings: Settings, *paths: Path) -> None:
    """Refuse, in one line and exit 1, a command with nothing to read: a data dir that does not exist (`no_data_dir`,
    not created), or one without `paths` yet (open_readonly's line): the same words in every read-only command."""
    if not settings.data_dir.exists():
        raise ChatmemError(no_data_dir(settings))
    for path in paths:
        with open_readonly(path, settings):
            pass


def nothing_yet(settings: Settings, path: Path) -> bool:
    """`path` does not exist yet (a data dir no run has written to, and none starting): said in one line on
    stderr, and the listing commands (`staging runs`, `failures`, `tables`, `archive stats`) answer with their
    empty answer, exit 0: no runs, no failures is a true answer, as in a data dir whose runs are all no-ops. The
    line names the data dir, so that a mistyped --data-dir is seen. Commands that show what a stage builds
    (`topics`, `recall`, `report`, `staging show`) exit 1 instead and name the command that builds it. A data dir
    that does not exist at all is no empty answer (a mistyped --data-dir, or `chatmem archive stats` before any
    run): exit 1, one line naming it and the command that builds an archive there (`no_data_dir`)."""
    from flows.preflight import starting

    if path.exists() or starting(settings.data_dir) is not None:
        return False
    if not settings.data_dir.exists():  # not an empty answer: a mistyped --data-dir, or no run yet at all
        raise ChatmemError(no_data_dir(settings))
    click.echo(
        f"nothing in {settings.data_dir} yet ({path.name} does not exist): run `chatmem run EXPORT` first, or point"
        " --data-dir / CHATMEM_DATA_DIR at an existing data dir",
        err=True,
    )
    return True


def no_data_dir(settings: Settings) -> str:
    """One line for a read-only command on a data dir that does not exist (it is not created): it has no archive,
    and the command that builds one there."""
    import shlex

    build = shlex.join(["chatmem", "--data-dir", str(settings.data_dir), "run", "EXPORT"])
    return (
        f"{settings.data_dir} does not exist, so it holds no archive: build one with `{build}`, or point --data-dir"
        " / CHATMEM_DATA_DIR at an existing data dir"
    )


def check_run_id(settings: Settings, run_id: str | None) -> None:
    """A --run-id that names no run is a usage error (one line, exit 2), not an empty table that looks like
    "that run wrote nothing". So is one given for a data dir that holds no runs at all (a mistyped --data-dir):
    no run of that id can be there (only a first run still starting is said as such, exit 1, by open_readonly)."""
    if run_id is None:
        return
    from flows.preflight import starting
    from staging.ledger import run_exists

    if not settings.staging_path.exists() and starting(settings.data_dir) is None:
        raise ConfigError(
            f"unknown run id {run_id!r}: {settings.data_dir} holds no runs ({settings.staging_path.name} does not"
            " exist); point --data-dir / CHATMEM_DATA_DIR at the data dir of that run"
        )
    with open_readonly(settings.staging_path, settings) as conn:
        if not run_exists(conn, run_id):
            raise ConfigError(f"unknown run id {run_id!r}; list runs with: chatmem staging runs")


def require_stage(conn: sqlite3.Connection, stage: str, what: str) -> None:
    """Nothing to show because the stage that builds it never ran: exit 1 with the command that builds it, as
    `recall` and `topics` do (an answer that is empty because of the filters is exit 0)."""
    try:
        row = conn.execute(
            "SELECT 1 FROM stage_runs WHERE stage = ? AND status IN ('succeeded', 'skipped') LIMIT 1", (stage,)
        ).fetchone()
    except sqlite3.OperationalError:  # a staging.db from before any stage ran
        row = None
    if row is None:
        raise ChatmemError(
            f"no {what} yet: the {stage} stage has not run; run `chatmem run EXPORT` (or finish a run that stopped"
            f" early: chatmem run --run-id RUN --from {stage}; runs: chatmem staging runs)"
        )


@click.group()
def staging() -> None:
    """Inspect staging.db (the run ledger) and archive.db tables, read-only.

    \b
    Example: chatmem staging runs --limit 5
    """


@staging.command("runs")
@click.option(
    "--limit", default=20, type=click.IntRange(min=0), show_default=True, help="How many recent runs (0: all)."
)
@click.option("--each", is_flag=True, help="One line per run: no-op runs in a row are not folded into one.")
@JSON_OPTION
@click.pass_obj
def staging_runs(app: App, limit: int, each: bool, as_json: bool) -> None:
    """List recent runs, newest first, with each stage's latest status and how long the run took; below the
    table, how long each stage took (its latest attempt).

    Consecutive no-op runs (every stage unchanged: a cron job's checks) show as one line, the newest, with how
    many checks it stands for since when (--each: one line per run; --json always gives every run).

    \b
    Example: chatmem staging runs --json --limit 5
    """
    from flows.preflight import describe_starting, starting
    from staging import inspect as inspection

    settings = app.settings()
    info = starting(settings.data_dir)  # a run between its command and its runs row (Prefect starting)
    if (info is not None and not settings.staging_path.exists()) or nothing_yet(settings, settings.staging_path):
        runs: list[dict[str, Any]] = []
    else:
        with open_readonly(settings.staging_path, settings) as conn:
            runs = inspection.list_runs(conn, limit=limit)
    if as_json:
        emit(runs)
        return
    if info is not None and not any(row["status"] == "running" for row in runs):
        click.echo(f"{describe_starting(info)} in {settings.data_dir}; it is listed here once its first stage starts")
    if not each:
        runs = inspection.collapse_noops(runs)
    for run_row in runs:
        checks = run_row.pop("checks", 1)
        first = str(run_row.pop("first_check", "") or "")[:16].replace("T", " ")
        if checks > 1:
            run_row["status"] = f"{checks} no-op runs since {first}"
        failed_files = run_row.pop("files_failed", 0)
        if failed_files and run_row["status"] == "succeeded":
            run_row["status"] = f"succeeded, {failed_files} file(s) failed (staging failures)"
        statuses = run_row.pop("stage_status")
        run_row["stages"] = _stage_summary(statuses)
        run_row["stage_times"] = stage_times(statuses, run_row.pop("stage_duration_s"))
        took = run_row.pop("duration_s")
        run_row["took"] = "" if took is None else duration(took)
        run_row["exports"] = len(run_row["exports"])
        run_row["started_at"] = str(run_row["started_at"] or "")[:16].replace("T", " ")  # UTC, to the minute
        run_row.setdefault("resume", "")
    print_table(runs, ["id", "status", "started_at", "took", "stages", "exports", "error", "resume"])
    print_stage_times(runs)


def print_stage_times(runs: list[dict[str, Any]]) -> None:
    """Each run's stage times below the table, one run a line (wrapped under itself): a table cell of ten stages'
    times would make every table too wide for a terminal (each run one block of lines) or cut its middle."""
    timed = [row for row in runs if row["stage_times"]]
    if not timed:
        return
    click.echo("stage times (each stage's latest attempt; a stage skipped as unchanged did no work):")
    label = max(len(str(row["id"])) for row in timed)
    room = max(terminal_width() - label - 4, 30)
    for row in timed:
        lines = [""]
        for part in str(row["stage_times"]).split(", "):  # a stage and its time stay on one line
            if lines[-1] and len(lines[-1]) + 2 + len(part) > room:
                lines[-1] += ","
                lines.append("")
            lines[-1] += f"{', ' if lines[-1] else ''}{part}"
        click.echo(f"  {str(row['id']).ljust(label)}  {lines[0]}")
        for line in lines[1:]:
            click.echo(f"  {' ' * label}  {line}")


def duration(seconds: float) -> str:
    """`0.4s`, `12s`, `3m05s`, `2h07m`: a time at a glance, to the precision that matters at its size."""
    if seconds < 9.95:
        return f"{seconds:.1f}s"
    whole = round(seconds)
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m{whole % 60:02d}s"
    return f"{whole // 3600}h{whole % 3600 // 60:02d}m"


def stage_times(statuses: dict[str, str], durations: dict[str, float | None]) -> str:
    """`ingest 0.2s, embed 1.5s, cluster 3.1s`: each stage that ran, in pipeline order, with how long its latest
    stage run took; a stage skipped as unchanged did no work and is left out (`stages` names it), one not finished
    says its status instead (`embed running`)."""
    shown = []
    for stage, status in statuses.items():
        took = durations.get(stage)
        if status == "skipped":
            continue
        shown.append(f"{stage} {status}" if took is None else f"{stage} {duration(took)}")
    return ", ".join(shown)


def _stage_summary(statuses: dict[str, str]) -> str:
    """`9 succeeded, load:skipped`: the common status counted, the others named (a table cell, not 180 chars)."""
    if not statuses:
        return ""
    common = max(set(statuses.values()), key=lambda status: (list(statuses.values()).count(status), status))
    others = " ".join(f"{stage}:{status}" for stage, status in statuses.items() if status != common)
    shown = sum(status == common for status in statuses.values())
    return f"{shown} {common}" + (f", {others}" if others else "")


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
    from staging import inspect as inspection

    settings = app.settings()
    rows: list[dict[str, Any]] = []
    empty = not settings.archive_path.exists() and nothing_yet(settings, settings.staging_path)
    for name, path in [] if empty else _databases(settings):
        with open_readonly(path, settings) as conn:
            rows.extend({"database": name, **t} for t in inspection.list_tables(conn))
    emit(rows) if as_json else print_table(rows, ["database", "table", "type", "rows"])


@staging.command("show")
@click.argument("table")
@click.option("--run-id", help="Only the rows of this run (tables with a run_id column).")
@click.option("--limit", default=20, type=click.IntRange(min=0), show_default=True, help="How many rows (0: all).")
@JSON_OPTION
@click.pass_obj
def staging_show(app: App, table: str, run_id: str | None, limit: int, as_json: bool) -> None:
    """Show rows of one table of staging.db or archive.db (see `staging tables`).

    \b
    Example: chatmem staging show ingest_files --run-id r20260101T120000-1a2b3c
    """
    from staging import inspect as inspection

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
    from staging import inspect as inspection

    settings = app.settings()
    found: dict[str, list[Any]] = {"runs": [], "stage_runs": [], "files": [], "quarantine": []}
    if not nothing_yet(settings, settings.staging_path):
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
            print_table(found[key], whole=True)  # the reasons are the point


@click.group()
def archive() -> None:
    """Inspect archive.db, the source of truth, read-only.

    \b
    Example: chatmem archive stats --json
    """


EMPTY_ARCHIVE = ("sources", "conversations", "messages", "active_messages", "hidden_messages", "quarantined")


@archive.command("stats")
@JSON_OPTION
@click.pass_obj
def archive_stats_cmd(app: App, as_json: bool) -> None:
    """Count sources, conversations, messages and quarantined records.

    \b
    Example: chatmem archive stats --json
    """
    from staging.archive import archive_stats

    settings = app.settings()
    if nothing_yet(settings, settings.archive_path):
        stats = dict.fromkeys(EMPTY_ARCHIVE, 0)
    else:
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
