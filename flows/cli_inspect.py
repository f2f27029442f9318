"""The read-only commands of `chatmem`: `staging runs|tables|show|failures|export`, `archive stats` and
`inspect` (Datasette, flows/inspect_server.py).

They only read SQLite (staging.db and archive.db, opened read-only) and never import prefect or the
pipeline, so they answer at once and work while a run is going on. Output is a text table, or JSON only on
stdout with --json; `export` writes a file (polars, loaded only for it), `inspect` serves until Ctrl-C. How they
print: flows/cli_table.py; where they read, and what they say when there is nothing: flows/cli_data.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from contracts.errors import ConfigError
from flows.cli_data import check_run_id, nothing_yet, open_readonly
from flows.cli_table import JSON_OPTION, count_option, emit, print_table, terminal_width
from flows.hints import with_data_dir

if TYPE_CHECKING:
    from contracts.settings import Settings
    from flows.cli_app import App


@click.group()
def staging() -> None:
    """Inspect staging.db (the run ledger) and archive.db tables, read-only.

    \b
    Example: chatmem staging runs --limit 5
    """


@staging.command("runs")
@count_option("--limit", default=20, help_text="How many recent runs (0: all).")
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
        run_row.pop("files_failed", 0), run_row.pop("files_partial", 0)
        incomplete = run_row.pop("incomplete", None)
        if incomplete:  # as `chatmem run` said it (exit code 1)
            run_row["status"] = f"{run_row['status']}: {incomplete} (staging failures)"
        statuses = run_row.pop("stage_status")
        run_row["stages"] = _stage_summary(statuses)
        run_row["stage_times"] = stage_times(statuses, run_row.pop("stage_duration_s"))
        took = run_row.pop("duration_s")
        run_row["took"] = "" if took is None else duration(took)
        run_row["exports"] = len(run_row["exports"])
        run_row["started_at"] = str(run_row["started_at"] or "")[:16].replace("T", " ")  # UTC, to the minute
        # commands to paste: with this command's --data-dir (the ledger records them without; --json gives them so)
        run_row["resume"] = with_data_dir(str(run_row.get("resume") or ""))
        run_row["error"] = with_data_dir(str(run_row.get("error") or ""))
    # a status is words ("incomplete: 1 file failed and 1 file cut short (staging failures)"): cut after a whole
    # one, not in its middle ("incomplete: 1 fil…aging failures)" said no count of files at all)
    print_table(
        runs, ["id", "status", "started_at", "took", "stages", "exports", "error", "resume"], word_cut=["status"]
    )
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


# The tables a person looks at first (the ledger, what each file gave, what was set aside, what was found).
FIRST_TABLES = ("runs", "stage_runs", "ingest_files", "quarantine", "concepts", "facts", "topics")


@staging.command("show")
@click.argument("table", required=False)
@click.option("--run-id", help="Only the rows of this run (tables with a run_id column).")
@count_option("--limit", default=20, help_text="How many rows (0: all).")
@JSON_OPTION
@click.pass_obj
def staging_show(app: App, table: str | None, run_id: str | None, limit: int, as_json: bool) -> None:
    """Show rows of one table of staging.db or archive.db (see `staging tables`).

    \b
    Example: chatmem staging show ingest_files --run-id r20260101T120000-1a2b3c
    """
    if table is None:
        # click's "Missing argument 'TABLE'." named none: a new user's next question is which. Answered from click
        # alone, as every usage error is (no settings, no database opened: tests/test_cli_startup.py)
        first = ", ".join(FIRST_TABLES)
        hint = f"a table of staging.db or archive.db, e.g. {first}; `chatmem staging tables` lists them all"
        raise click.UsageError(f"Missing argument 'TABLE': {hint}")
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
    raise inspection.unknown_table(table, known)


@staging.command("failures")
@JSON_OPTION
@click.pass_obj
def staging_failures(app: App, as_json: bool) -> None:
    """Show what needs attention: failed stages (with the re-run command), failed files, quarantine.

    A file cut short whose every conversation a whole re-export (another path) delivered later is listed apart, as
    superseded: nothing to do.

    \b
    Example: chatmem staging failures --json
    """
    from staging import inspect as inspection

    settings = app.settings()
    found: dict[str, list[Any]] = {"runs": [], "stage_runs": [], "files": [], "quarantine": [], "superseded": []}
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
    if not any(v for k, v in found.items() if k != "superseded"):
        click.echo("no failures")
    titles = {
        "runs": "failed or interrupted runs",
        "stage_runs": "failed or interrupted stage runs",
        "files": "failed or partial files",
        "quarantine": "quarantine",
        "superseded": "files cut short, superseded by a whole re-export read later (nothing to do)",
    }
    for key, title in titles.items():
        if found[key]:
            click.echo(f"{title}:")
            hints = ("resume", "rerun_hint", "error")  # commands to paste, with this command's --data-dir
            rows = [
                {k: with_data_dir(v) if k in hints and isinstance(v, str) else v for k, v in r.items()}
                for r in found[key]
            ]
            print_table(rows, whole=True)  # the reasons are the point


@click.group()
def archive() -> None:
    """Inspect archive.db, the source of truth, read-only.

    \b
    Example: chatmem archive stats --json
    """


EMPTY_ARCHIVE = (
    "sources",
    "conversations",
    "messages",
    "active_messages",
    "hidden_messages",
    "visible_messages",
    "other_branch_messages",
    "quarantined",
)


@archive.command("stats")
@JSON_OPTION
@click.pass_obj
def archive_stats_cmd(app: App, as_json: bool) -> None:
    """Count sources, conversations, messages and quarantined records.

    The messages split into those on each conversation's current branch, shown by the chat app (visible: what
    recall reads) or hidden by it (system prompts, tool output), and those on branches edited or regenerated away;
    the three add up to all messages. --json: active_messages = visible + hidden on the current branch;
    hidden_messages counts the hidden ones on any branch; other_branch_messages = messages - active_messages.

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
    for name, value, what in stats_lines(stats):
        click.echo(f"{name:<16}{value:<8}{what}".rstrip())


def stats_lines(stats: dict[str, int]) -> list[tuple[str, int, str]]:
    """`archive stats` in words: the messages as three parts that add up to them (session 38's cold try read
    `active_messages 145, hidden_messages 33` of 159 and could not tell that the 33 were among the 145)."""
    active, visible = stats["active_messages"], stats["visible_messages"]
    quarantine = with_data_dir("records that could not be read: chatmem staging failures")
    return [
        ("sources", stats["sources"], "export files ingested (each content once)"),
        ("conversations", stats["conversations"], ""),
        ("messages", stats["messages"], "all of them, on every branch:"),
        ("  visible", visible, "on the current branches, shown by the chat app (what recall reads)"),
        ("  hidden", active - visible, "on the current branches, hidden by the chat app (system prompts, tools)"),
        ("  other branch", stats["other_branch_messages"], "on branches edited or regenerated away (kept)"),
        ("quarantined", stats["quarantined"], quarantine),
    ]


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
    from flows.interrupt import take_sigint

    take_sigint()  # as `run` and `serve` do: one SIGINT stops it even when it was started with SIGINT ignored
    settings = app.settings()
    _databases(settings)
    from flows import inspect_server  # Datasette loads only for this command

    try:
        sock = inspect_server.bind(port)
    except OSError as exc:
        raise ConfigError(f"cannot listen on 127.0.0.1:{port}: {exc.strerror}; pick another --port") from None
    ds = inspect_server.build(settings.archive_path, settings.staging_path)
    try:
        # Ctrl-C: uvicorn shuts the server down and raises the signal again as it returns (KeyboardInterrupt), which
        # ends the command as Ctrl-C ends the others (ChatmemGroup.invoke: one line, exit 130); it exited 0
        inspect_server.serve(ds, sock, lambda line: click.echo(line, err=False))
    finally:
        sock.close()
