"""The `chatmem` command line: global options, `run`, `stage` and `serve`; every other command is loaded only
when it is asked for (the table COMMANDS in flows/cli_app.py, with the App and the group class: flows/cli_inspect.py,
cli_memory.py, ...).

Start-up is part of every command's cost: `chatmem --help` and a usage error must answer at once, so this module
imports only click and the standard library at the top; pydantic settings, numpy, the stage packages and prefect
load inside the commands that use them. Inspection commands only read SQLite and never import the engine:
prefect and the pipeline are imported inside `run`, `stage` and `serve`, after `flows.prefect_env` has set
Prefect's environment. Exit codes: 0 success, 1 a stage or file failed (the message says how to re-run), 2 usage,
130 stopped by Ctrl-C (143 by SIGTERM), also before a run has started, 141 its output's reader went away
(`chatmem recall Q | head -1`: no traceback, the rest of the output dropped; 128 + SIGPIPE, as a Unix tool stopped by
the closed pipe).
"""

from __future__ import annotations

import shutil
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from contracts.errors import BusyError, ChatmemError, ConfigError, ExportError, StageError
from flows.cli_app import CLOSED_PIPE_EXIT, App, ChatmemGroup, output_closed, reader_gone
from flows.cli_data import check_run_id, open_readonly
from flows.cli_run_summary import cut_short_lines, print_summary, refuse_bad_files
from flows.cli_table import JSON_OPTION, emit
from flows.export_paths import (
    LeftOut,
    absolute,
    data_dir_given,
    data_dir_line,
    expand_folders,
    exports_in_folder,
    given_once,
    no_export_found,
    rest_of_an_export,
    said_left,
)
from flows.hints import chosen_data_dir, with_data_dir
from flows.log_setup import setup_logging
from flows.registry import STAGE_ORDER, check_entries, check_stages, select_stages
from flows.terminal import safe_line

if TYPE_CHECKING:
    from contracts.settings import Settings

# contracts.records.EXPORT_FORMATS (a pydantic module); tests/test_cli_startup.py keeps the two equal
EXPORT_FORMATS = ("chatgpt", "claude", "jsonl", "librechat", "chatbotui")


@click.group(cls=ChatmemGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--data-dir",
    type=click.Path(file_okay=False, path_type=Path),
    envvar="CHATMEM_DATA_DIR",
    help="Directory of archive.db, staging.db and Prefect's state [env CHATMEM_DATA_DIR; default .chatmem].",
)
@click.option("--quiet", "-q", is_flag=True, help="No progress bars, no announcements of defaults.")
@click.option("--verbose", "-v", is_flag=True, help="Log what each stage does (INFO), Prefect's logs too.")
@click.pass_context
def cli(ctx: click.Context, data_dir: Path | None, quiet: bool, verbose: bool) -> None:
    """chatmem: turn chat-assistant export dumps into a memory.

    \b
    Example: chatmem run ~/Downloads/chatgpt-export.zip && chatmem archive stats
    """
    if quiet and verbose:
        raise click.UsageError("--quiet and --verbose exclude each other")
    setup_logging(verbose)
    ctx.obj = App(data_dir, ctx.get_parameter_source("data_dir"), quiet, verbose)


# ---------------------------------------------------------------- run, stage


def _local_graph(settings: Settings) -> Any:
    """The data dir's local graph server when the load stage would use it (no NEO4J_URI, local server on)."""
    if settings.load.uri or not settings.load.local_server:
        return None
    from clients.graph_target import local_server

    return local_server(settings)


def _run(
    app: App,
    settings: Settings,
    exports: list[str | Path],
    stages: list[str],
    *,
    as_json: bool,
    force_format: str | None,
    run_id: str | None = None,
    force: bool = False,
    nothing_found: dict[str | Path, str] | None = None,
) -> None:
    """`nothing_found`: the folders given in which no export was found, with why (flows/export_paths.py): the
    refusal says it when nothing else can be read; else said here, and the ingest stage reports each failed."""
    from clients.graph_server import left_as_found
    from flows.interrupt import before_the_run, take_sigint
    from flows.preflight import announce_start, finish_if_unchanged, refuse_bad_exports

    check_entries(stages)  # a registry entry that cannot be imported: one line now, not a traceback after Prefect
    take_sigint()  # started with SIGINT ignored (`chatmem run ... &` in a script): `kill -INT PID` still stops it

    if run_id is None and "ingest" in stages:
        try:
            # before Prefect: nothing starts for a bad file
            refuse_bad_exports(exports, settings, force_format, nothing_found)
        except ExportError as exc:
            if as_json:  # a script reading stdout gets an object that says why, as a failed run's summary does
                emit({"run_id": None, "status": "refused", "error": str(exc), "stages": [], "files": []})
            raise
    if "extract" in stages:
        refuse_missing_llm_key(settings)
    for folder, why in {} if settings.pipeline.quiet else (nothing_found or {}).items():
        click.echo(safe_line(f"{folder}: {why}"), err=True)
    # `staging runs` says a run is starting until the run has a row; Ctrl-C before the run's own handler (Prefect's
    # import, another run's lock): one line, exit 130
    with announce_start(settings.data_dir), _no_prefect_left(settings.data_dir), before_the_run():
        done = None
        if not force:  # nothing to do: no Prefect at all, and a run re-run (--run-id) is left as it was
            done = finish_if_unchanged(settings, exports, stages, force_format, rerun_of=run_id)
        if done is not None:
            run_id, results = done
        else:
            engine = app.engine(settings, starting=_starting(stages))
            # a local graph server the load stage starts is stopped as the run ends: nothing keeps running
            graph = _local_graph(settings) if "load" in stages else None
            with left_as_found(graph):
                try:
                    run_id, results = engine.run_pipeline(
                        settings, exports, stages, run_id=run_id, force_format=force_format, force=force, graph=graph
                    )
                except StageError as exc:
                    try:
                        print_summary(app, settings, exc.run_id, [], as_json, error=exc)
                    except (ChatmemError, sqlite3.Error, OSError):
                        pass  # a full disk or a damaged staging.db: the error line says so; the summary cannot
                    raise
    print_summary(app, settings, run_id, results, as_json)


def _starting(stages: list[str]) -> str:
    """The line a run says as it starts Prefect: what comes first, and which stages follow."""
    which = stages[0] if len(stages) == 1 else f"{stages[0]} to {stages[-1]} ({len(stages)} stages)"
    return f"starting: Prefect, then {which}"


@contextmanager
def _no_prefect_left(data_dir: Path) -> Iterator[None]:
    """A run stopped before it started ("nothing was run or recorded") leaves no DATA_DIR/prefect/ that it
    created itself (Prefect's state folder, made as Prefect starts); one set elsewhere (PREFECT_HOME), or one
    that was there before, stays."""
    from flows.interrupt import RunInterrupted
    from flows.prefect_env import prefect_home
    from flows.server_guard import stop_servers

    home = prefect_home(data_dir)
    ours = home == (data_dir / "prefect").absolute() and not home.exists()
    try:
        yield
    except RunInterrupted as exc:
        # also a Ctrl-C in Prefect's start-up, inside the run's own handler, before the flow recorded the run
        if ours and "before the run started" in str(exc):
            stop_servers(timeout_s=5.0)  # a server this process started keeps its database there
            shutil.rmtree(home, ignore_errors=True)
        raise


FORCE_OPTION = click.option(
    "--force",
    is_flag=True,
    help=(
        "Run every selected stage even when its inputs, settings and code are unchanged (default: skip it), and:"
        " ingest reads already-ingested dumps again, segment cuts every conversation again, cluster tunes and"
        " fits again (no incremental placement), concepts resolves every current extraction again, garden plans"
        " over every fact and concept, cues rebuilds every conversation (no carry); the other stages"
        " run in full with their content-keyed caches (a text already embedded is not embedded again)."
    ),
)
FORMAT_OPTION = click.option(
    "--format", "force_format", type=click.Choice(EXPORT_FORMATS), help="Skip detection: read as this format."
)


@cli.command()
@click.argument("exports", nargs=-1, type=click.Path(path_type=Path, readable=False))  # missing, unreadable: preflight
@click.option("--from", "from_", metavar="STAGE", help=f"First stage to run ({', '.join(STAGE_ORDER)}).")
@click.option("--to", metavar="STAGE", help="Last stage to run.")
@click.option("--only", metavar="STAGE", help="Run this one stage.")
@click.option("--run-id", help="Resume this run (its recorded exports) instead of starting a new one.")
@FORMAT_OPTION
@FORCE_OPTION
@JSON_OPTION
@click.pass_obj
def run(
    app: App,
    exports: tuple[Path, ...],
    from_: str | None,
    to: str | None,
    only: str | None,
    run_id: str | None,
    force_format: str | None,
    force: bool,
    as_json: bool,
) -> None:
    """Run the pipeline over export dumps (.zip, conversations.json, .jsonl, export folders).

    A folder with no conversations.json of its own (a folder of downloads) is searched for exports 3 levels of
    subfolders down: a subfolder holding a conversations.json, a file starting as JSON or a zip; the rest is left
    out in one line, and no chatmem data dir's state is read (given itself, a data dir is said as one and
    only the exports put in it are read). A file given twice (by two names, or an export folder and its
    conversations.json) is read once, and said so.

    A dump whose bytes were already ingested is skipped, and so is every stage whose inputs, settings and
    code are unchanged since its last successful run (--force recomputes). Exit 1 if a stage or a file failed.
    With --run-id, resume an interrupted or failed run: `chatmem run --from cluster --run-id R` (no exports
    needed: the run's own are read again).

    \b
    Example: chatmem run ~/Downloads/chatgpt-export.zip notes.jsonl --only ingest
    """
    from staging.ledger import run_exports

    stages = select_stages(from_, to, only)
    settings = app.settings()
    paths: list[str | Path] = list(exports)
    if run_id is not None:
        check_run_id(settings, run_id)
        with open_readonly(settings.staging_path, settings) as staging:
            paths = paths or list(run_exports(staging, run_id))
    elif not paths:
        raise click.UsageError("give at least one export file (or --run-id RUN to resume a run)")
    if exports:  # given here (not the run's recorded ones, already left out when it was started)
        paths, left = rest_of_an_export(paths)
        if left and not settings.pipeline.quiet:
            names = ", ".join(Path(p).name for p in left[:3]) + (f" and {len(left) - 3} more" if len(left) > 3 else "")
            click.echo(
                f"left out {len(left)} path(s) given with an export's conversations ({names}): the rest of an"
                " unzipped export, which holds no conversations",
                err=True,
            )
        # `chatmem run ~/Downloads`: the exports in its subfolders
        paths, looked, nothing_found = expand_folders(paths, settings.data_dir)
        for line in [] if settings.pipeline.quiet else looked:
            click.echo(safe_line(line), err=True)
        paths, again = given_once(paths)
        for path in again:  # said with -q too: what the user typed, not a default announced
            click.echo(safe_line(f"{absolute(path)}: given twice, read once"), err=True)
    _run(
        app,
        settings,
        paths,
        stages,
        force_format=force_format,
        as_json=as_json,
        run_id=run_id,
        force=force,
        nothing_found=nothing_found if exports else None,
    )


# the help names the stages from the registry (a docstring cannot): an added stage is listed without an edit here
STAGE_HELP = f"""Re-run one stage of an existing run (ingest re-reads the run's recorded exports).

STAGE is one of, in pipeline order: {", ".join(STAGE_ORDER)}.

Skipped when its inputs, settings and code are unchanged since it last succeeded; --force recomputes. Done and
unchanged in the run, it leaves the run as it was (the check is recorded as a no-op run of its own).

\b
Example: chatmem stage cluster --run-id r20260101T120000-1a2b3c
"""


@cli.command("stage", help=STAGE_HELP)
@click.argument("stage_name", metavar="STAGE")
@click.option("--run-id", required=True, help="The run whose stage to re-run (see `chatmem staging runs`).")
@FORMAT_OPTION
@FORCE_OPTION
@JSON_OPTION
@click.pass_obj
def stage_cmd(app: App, stage_name: str, run_id: str, force_format: str | None, force: bool, as_json: bool) -> None:
    from staging.ledger import run_exports

    stages = check_stages([stage_name])  # the message names the stage given, not an option never typed
    settings = app.settings()
    check_run_id(settings, run_id)  # unknown, or no runs at all in this data dir: a usage error (exit 2)
    with open_readonly(settings.staging_path, settings) as staging:
        exports: list[str | Path] = list(run_exports(staging, run_id))
    _run(app, settings, exports, stages, run_id=run_id, force_format=force_format, as_json=as_json, force=force)


# ---------------------------------------------------------------- serve


def refuse_missing_llm_key(settings: Settings) -> None:
    """ConfigError when the LLM extractor is configured for OpenAI's API with no key: the extract stage found it
    only after ingest, segment and embed had run (a minute, the Prefect server, the embedding model)."""
    if settings.extract.llm is None:
        return
    from clients.llm import missing_key

    problem = missing_key(settings.extract.llm)
    if problem:
        raise ConfigError(problem)


@cli.command()
@click.option(
    "--watch",
    "watch_dir",
    required=True,
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="Folder of export dumps.",
)
@click.option("--cron", default="*/15 * * * *", show_default=True, help="When to look for new dumps.")
@click.option("--once", is_flag=True, help="Look once, ingest what is new, exit (no server, no schedule).")
@FORMAT_OPTION
@JSON_OPTION
@click.pass_obj
def serve(app: App, watch_dir: Path, cron: str, once: bool, force_format: str | None, as_json: bool) -> None:
    """Ingest new dumps dropped in a folder, on a cron schedule (a served Prefect deployment).

    Dumps already ingested (same bytes) are skipped; a dump picked up is said in one line, and how its run ended;
    a dump that fails is reported once and tried again when the file changes (a fixed copy), not at every tick.
    With --once, the tick that reads a dump that fails or is cut short exits 1, as `chatmem run` does.

    \b
    Example: chatmem serve --cron "*/15 * * * *" --watch ~/dumps
    """
    from flows.cron_check import check_cron
    from flows.interrupt import take_sigint

    take_sigint()  # as `run` does: one SIGINT stops it even when it was started with SIGINT ignored
    settings = app.settings()
    # with --once too (a bad --cron is a mistake to say, not to ignore), and before Prefect: nothing is created
    check_cron(cron)
    refuse_missing_llm_key(settings)  # a tick would find it in extract, after ingest, segment and embed
    if once and _no_export_to_watch(watch_dir, settings.data_dir, as_json):
        return
    try:
        # --once: the data dir's write lock first, as `run` takes it (App.engine), then Prefect's early server
        engine = app.engine(settings, "serve", early_api=once)  # serve itself starts a server with a scheduler
    except BusyError as exc:
        if as_json:  # the look's result, as the watch flow gave it when the lock refused its run
            emit(_look_result(watch_dir, error=str(exc)))
        raise
    engine.check_schedule(watch_dir, cron)
    if not once:
        for line in app.defaults(settings, serving=True):
            click.echo(line, err=True)
        chosen = chosen_data_dir(app)  # the log lines come from the flows' threads, outside click's context

        def say(line: str) -> None:
            click.echo(with_data_dir(line, chosen), err=True)

        engine.serve_forever(watch_dir, settings, cron, force_format, say)
        return
    result = engine.run_once(watch_dir, settings, force_format)
    found = any(result[key] for key in ("already_ingested", "ingested", "failed", "waiting"))
    if as_json:
        emit(result)
    elif result.get("left_out") and not found and result["run_id"] is None:
        # no export at all, only paths left out (exports nested too deep): in the words `chatmem run DIR` uses
        left = [LeftOut(Path(row["path"]), row["why"]) for row in result["left_out"]]
        click.echo(safe_line(f"{watch_dir}: {no_export_found(Path(result['watch_dir']), left)}"))
    else:
        click.echo(f"watch {watch_dir}: run {result['run_id'] or '(nothing new)'}")
        for path in result["already_ingested"]:
            click.echo(f"  skipped (already ingested): {safe_line(str(path))}")
        cut = cut_short_lines(settings, result)
        for row in result["ingested"]:
            # what was repaired on the way (`2 invalid UTF-8 byte sequence(s) replaced with U+FFFD`), as `run` says
            noted = f" ({row['notes']})" if row.get("notes") else ""
            if row["path"] in cut:  # what arrived and why the rest did not, in `run`'s words (was the log's warning)
                click.echo(f"  {cut[row['path']]}")
            else:
                click.echo(f"  {row['status']}: {safe_line(str(row['path']) + noted)}")
            if row.get("quarantined"):  # in `run`'s words
                said = f"{row['quarantined']} record(s) quarantined: chatmem staging failures"
                click.echo(f"    {with_data_dir(said)}")
        for row in result["failed"]:
            why = str(row["error"]).removeprefix(f"{row['path']}: ")  # export errors start with the path already
            click.echo(f"  failed (tried again once the file changes): {safe_line(str(row['path']))}: {safe_line(why)}")
        for row in result.get("waiting", []):
            said = f"{row['status']} in run {row['run_id']}"
            click.echo(f"  waiting for the file to change ({said}): {safe_line(str(row['path']))}")
        if result.get("left_out"):  # with why, as `run DIR` says it (the tick's log says it only with --verbose)
            left = [LeftOut(Path(row["path"]), row["why"]) for row in result["left_out"]]
            click.echo("  " + safe_line(said_left(left, Path(result["watch_dir"])).removeprefix("; ")))
    # Exit 1 as `chatmem run` does for the same files, in its words: a dump that failed, or one cut short (its
    # complete conversations arrived; before, a cut-short dump exited 0 here). The served loop logs them instead.
    bad = [{"path": row["path"], "status": "failed", "detail": row["error"]} for row in result["failed"]]
    bad += [
        {"path": row["path"], "status": "partial", "detail": None}
        for row in result["ingested"]
        if row["status"] == "partial"
    ]
    refuse_bad_files(bad, str(result["run_id"]))
    if result["error"]:
        raise ChatmemError(result["error"])


def _no_export_to_watch(watch_dir: Path, data_dir: Path, as_json: bool) -> bool:
    """`serve --once` on a folder with no export in it (empty, or only what is left out): said once, in the words of
    `chatmem run DIR`, and True; nothing is started or created for nothing to do (no Prefect, no data dir). The watch
    flow would look again and log each left-out path a second time."""
    dumps, left = exports_in_folder(watch_dir, data_dir)
    if dumps:
        return False
    if as_json:  # the watch flow's result, as it would have been
        emit(_look_result(watch_dir, left_out=[{"path": str(item.path), "why": item.why} for item in left]))
    else:
        kind = data_dir_given(watch_dir, data_dir)  # `serve --once --watch DATA_DIR`: said as `run DATA_DIR` says it
        why = data_dir_line(kind) + said_left(left, watch_dir) if kind else no_export_found(watch_dir.absolute(), left)
        click.echo(safe_line(f"{watch_dir}: {why}"))
    return True


def _look_result(watch_dir: Path, *, left_out: list[Any] | None = None, error: str | None = None) -> dict[str, Any]:
    """The watch flow's result (flows/serve.py `watch_folder`) of a look that ran nothing."""
    return {
        "watch_dir": str(watch_dir.absolute()),
        "run_id": None,
        "already_ingested": [],
        "ingested": [],
        "failed": [],
        "waiting": [],
        "error": error,
        "left_out": left_out or [],
    }


def main() -> None:
    """The `chatmem` console script; output its reader did not take (`| head -1`) ends it with CLOSED_PIPE_EXIT."""
    try:
        cli(prog_name="chatmem")
    except SystemExit as done:
        # the last lines, still buffered, had no reader; or click met the closed pipe before a command ran (`--help`:
        # click swallows it and exits 1)
        if output_closed() or (done.code == 1 and reader_gone()):
            raise SystemExit(CLOSED_PIPE_EXIT) from None
        raise


if __name__ == "__main__":
    main()
