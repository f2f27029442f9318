"""`chatmem report`: one HTML page (and PNGs) about a run: stages, tokens, problems, topics, concepts, graph.

It opens both databases read-only and never imports prefect or the pipeline; it writes files (into the data
dir by default) but changes no database. The sections come from `staging.run_report`, the page and plots from
`flows.report_page`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from flows.cli_data import check_run_id, open_readonly
from flows.cli_table import JSON_OPTION, emit
from flows.registry import STAGE_ORDER

if TYPE_CHECKING:
    from flows.cli_app import App


@click.command("report")
@click.option("--run-id", help="The run to report on (default: the newest run that did work).")
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Folder for index.html and the PNGs (default: DATA_DIR/reports/RUN_ID).",
)
@JSON_OPTION
@click.pass_obj
def report(app: App, run_id: str | None, out_dir: Path | None, as_json: bool) -> None:
    """Write a self-contained HTML report of a run: stage timeline, skipped stages, tokens and cost,
    quarantine and failures, topic map, topic sizes, Optuna history, concepts, graph counts, recall.

    Without --run-id: the newest run in which a stage did work (a later run that found nothing new would
    report nothing); the first line says which run, and why when it is not the newest. Sections without data (a
    run that only ingested) say so. The PNGs are written next to index.html.

    \b
    Example: chatmem report --out /tmp/report && xdg-open /tmp/report/index.html
    """
    from flows.report_page import write_run_report  # matplotlib loads only for this command
    from staging import run_report
    from staging.inspect import latest_working_run, list_runs

    settings = app.settings()
    check_run_id(settings, run_id)
    why = None
    with open_readonly(settings.staging_path, settings) as staging:
        if run_id is None:
            newest = list_runs(staging, limit=1)
            run_id = latest_working_run(staging) or (newest[0]["id"] if newest else None)
            if newest and run_id != newest[0]["id"]:
                why = f"the newest run that did work; later runs (the newest {newest[0]['id']}) changed nothing"
        if settings.archive_path.exists():
            with open_readonly(settings.archive_path, settings) as archive:
                data = run_report.gather(staging, archive, run_id, STAGE_ORDER)
        else:
            data = run_report.gather(staging, None, run_id, STAGE_ORDER)
    target = out_dir or settings.data_dir / "reports" / data["run"]["id"]
    files = write_run_report(target, data)
    if as_json:
        emit({"run_id": data["run"]["id"], "chosen_because": why, "files": [str(f) for f in files]})
        return
    click.echo(f"report of run {data['run']['id']}" + (f" ({why})" if why else ""))
    for path in files:
        click.echo(str(path))
