"""`chatmem report`: one HTML page (and PNGs) about a run: stages, tokens, problems, topics, concepts, graph.

It opens both databases read-only and never imports prefect or the pipeline; it writes files (into the data
dir by default) but changes no database. The sections come from `staging.run_report`, the page and plots from
`flows.report_page`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from flows.cli_inspect import JSON_OPTION, emit, open_readonly
from flows.registry import STAGE_ORDER
from staging import run_report

if TYPE_CHECKING:
    from flows.cli import App


@click.command("report")
@click.option("--run-id", help="The run to report on (default: the newest run).")
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

    Sections without data (a run that only ingested) say so. The PNGs are written next to index.html.

    \b
    Example: chatmem report --out /tmp/report && xdg-open /tmp/report/index.html
    """
    from flows.report_page import write_run_report  # matplotlib loads only for this command

    settings = app.settings()
    with open_readonly(settings.staging_path, settings) as staging:
        if settings.archive_path.exists():
            with open_readonly(settings.archive_path, settings) as archive:
                data = run_report.gather(staging, archive, run_id, STAGE_ORDER)
        else:
            data = run_report.gather(staging, None, run_id, STAGE_ORDER)
    target = out_dir or settings.data_dir / "reports" / data["run"]["id"]
    files = write_run_report(target, data)
    if as_json:
        emit({"run_id": data["run"]["id"], "files": [str(f) for f in files]})
        return
    for path in files:
        click.echo(str(path))
