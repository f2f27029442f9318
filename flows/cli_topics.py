"""`chatmem topics`: the cluster stage's results, read-only (the run report with the topic plots is
flows/cli_report.py).

It opens staging.db read-only and never imports prefect or the pipeline.
"""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING, Any

import click

from contracts.errors import ChatmemError, ConfigError
from flows.cli_data import check_run_id, open_readonly
from flows.cli_table import JSON_OPTION, count_option, emit, print_table
from flows.terminal import safe_line
from staging import topics as store

if TYPE_CHECKING:
    from flows.cli_app import App

RUN_OPTION = click.option("--run-id", help="The run whose topics to show (default: the latest clustered run).")


def _pick_run(conn: sqlite3.Connection, run_id: str | None) -> dict[str, Any]:
    chosen = run_id or store.latest_run(conn)
    summary = store.run_summary(conn, chosen) if chosen and store.has_topics(conn) else None
    if summary is None and run_id and not _run_exists(conn, run_id):
        # A run id that names nothing is a bad argument (exit 2), like `chatmem run --run-id` and `inspect`.
        raise ConfigError(f"unknown run id {run_id!r}; list runs with: chatmem staging runs")
    if summary is None:
        what = f"run {run_id!r} has no cluster results" if run_id else "no run has been clustered yet"
        raise ChatmemError(f"{what}: run `chatmem run EXPORT` (or `chatmem stage cluster --run-id R`) first")
    return summary


def _run_exists(conn: sqlite3.Connection, run_id: str) -> bool:
    try:
        return conn.execute("SELECT 1 FROM stage_runs WHERE run_id = ? LIMIT 1", (run_id,)).fetchone() is not None
    except sqlite3.OperationalError:  # a staging.db from before any stage ran
        return False


@click.command("topics")
@RUN_OPTION
@count_option("--limit", default=0, help_text="Show only the largest N topics (0: all).")
@JSON_OPTION
@click.pass_obj
def topics(app: App, run_id: str | None, limit: int, as_json: bool) -> None:
    """List the topics of a run: label, size, keywords, and the run's outlier share.

    --json prints {"run_id", "outlier_share", "outlier_share_raw", "validity", "status", "topics": [...]}.

    \b
    Example: chatmem topics --json --limit 20
    """
    settings = app.settings()
    check_run_id(settings, run_id)  # in a data dir with no runs at all too: a usage error (exit 2)
    with open_readonly(settings.staging_path, settings) as conn:
        summary = _pick_run(conn, run_id)
        found = store.list_topics(conn, summary["run_id"])
    shown = found[:limit] if limit > 0 else found
    if as_json:
        emit(
            {
                "run_id": summary["run_id"],
                "status": summary["status"],
                "outlier_share": summary["outlier_share"],
                "outlier_share_raw": summary["outlier_share_raw"],
                "validity": summary["validity"],
                "points": summary["points"],
                "topics": shown,
            }
        )
        return
    share = summary["outlier_share"]
    click.echo(
        f"run {summary['run_id']}: {summary['status']}, {summary['points']} segments, {len(found)} topics,"
        f" outlier share {'-' if share is None else f'{share:.1%}'}"
    )
    for note in summary["notes"]:
        click.echo(f"  note: {safe_line(note)}")
    rows = [{**t, "keywords": ", ".join(t["keywords"][:6])} for t in shown]
    if rows:
        print_table(rows, ["topic", "size", "label", "keywords"], word_cut=["keywords"])  # whole keywords, "…" after
