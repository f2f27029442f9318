"""The `chatmem` command line: global options, `run`, `stage` and `serve`; every other command is loaded only
when it is asked for (the table COMMANDS below: flows/cli_inspect.py, cli_memory.py, ...).

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

import importlib
import os
import shutil
import sqlite3
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

import click
from click.core import ParameterSource

from contracts.errors import ChatmemError, ConfigError, ExportError, StageError
from flows.cli_inspect import JSON_OPTION, check_run_id, emit, open_readonly
from flows.cli_run_summary import print_summary
from flows.export_paths import LeftOut, expand_folders, no_export_found, rest_of_an_export
from flows.log_setup import setup_logging
from flows.registry import STAGE_ORDER, check_entries, check_stages, select_stages
from flows.terminal import safe_line

if TYPE_CHECKING:
    from contracts.settings import Settings

# contracts.records.EXPORT_FORMATS (a pydantic module); tests/test_cli_startup.py keeps the two equal
EXPORT_FORMATS = ("chatgpt", "claude", "jsonl", "librechat", "chatbotui")

# name -> ("module:attribute", the one-line help `chatmem --help` shows without importing the module)
COMMANDS: dict[str, tuple[str, str]] = {
    "archive": ("flows.cli_inspect:archive", "Inspect archive.db, the source of truth, read-only."),
    "concepts": (
        "flows.cli_concepts:concepts",
        "List concepts with their evidence (message_id, text, confidence), ...",
    ),
    "eval": (
        "flows.cli_eval:eval_group",
        "Measure the extractor or recall (your memory is left as it is; recall builds in DATA_DIR/eval/).",
    ),
    "facts": ("flows.cli_garden:facts", "List facts the user stated about themselves, each with when it held ..."),
    "garden": ("flows.cli_garden:garden", "Preview the garden stage: facts closed by newer ones, concepts ..."),
    "graph": ("flows.cli_graph:graph", "The graph: start or stop the local Bolt server, show its status and ..."),
    "inspect": ("flows.cli_inspect:inspect_cmd", "Browse archive.db and staging.db in Datasette, read-only, ..."),
    "mcp": ("flows.cli_mcp:mcp_command", "Serve the memory to an agent over MCP: recall, search_concepts, ..."),
    "recall": ("flows.cli_memory:recall", "Reconstruct what the memory holds about QUESTION: the best pieces ..."),
    "report": ("flows.cli_report:report", "Write a self-contained HTML report of a run: stage timeline, ..."),
    "staging": ("flows.cli_inspect:staging", "Inspect staging.db (the run ledger) and archive.db tables, read-only."),
    "topics": ("flows.cli_topics:topics", "List the topics of a run: label, size, keywords, and the run's ..."),
}


@dataclass
class App:
    """What the global options decided, shared by every command."""

    data_dir: Path | None
    data_dir_source: ParameterSource | None
    quiet: bool
    verbose: bool

    def settings(self) -> Settings:
        """The settings (environment, then these options); --quiet sets pipeline.quiet."""
        from pydantic import ValidationError

        from contracts.settings import Settings

        try:
            settings = Settings(data_dir=self.data_dir) if self.data_dir is not None else Settings()
        except ValidationError as exc:
            problems = "; ".join(_setting_problem(e["loc"], e["msg"]) for e in exc.errors())
            raise ConfigError(f"invalid settings: {problems}") from exc
        if self.quiet:
            settings.pipeline = settings.pipeline.model_copy(update={"quiet": True})
        return settings

    def defaults(self, settings: Settings, *, serving: bool = False, prefect: bool = True) -> list[str]:
        """The defaults in use, announced once per run so that nothing happens by surprise (Prefect's API only
        when Prefect was started)."""
        if settings.pipeline.quiet:
            return []
        lines = []
        if self.data_dir_source in (None, ParameterSource.DEFAULT):
            lines.append(f"data dir: {settings.data_dir} (default; set --data-dir or CHATMEM_DATA_DIR)")
        if prefect:
            from flows.prefect_env import describe_api

            lines.append(describe_api(serving=serving))
        return lines

    def engine(self, settings: Settings, name: str = "pipeline", *, early_api: bool = True) -> ModuleType:
        """Import the Prefect side (flows.pipeline or flows.serve), with its environment set first and, for a
        command whose flows run on the ephemeral API (`early_api`), that API's server starting while it imports
        (flows/early_api.py).

        A damaged archive.db or staging.db (0 bytes, not SQLite, truncated) is refused before anything is
        written: no staging.db, no Prefect state, no run row whose resume hint would fail the same way."""
        from flows.prefect_env import configure_prefect
        from staging.db import check_database

        for path in (settings.archive_path, settings.staging_path):
            check_database(path)  # no connection of ours is open here (see staging.db.refuse_empty)
        configure_prefect(settings.data_dir, verbose=self.verbose)
        if not early_api:
            return importlib.import_module(f"flows.{name}")
        from flows import early_api as early

        early.start()
        module = importlib.import_module(f"flows.{name}")
        early.imported()
        return module


EPHEMERAL_TIMEOUT = "attempting to connect to ephemeral Prefect API server"  # Prefect's start-up timeout message
STARTUP_TIMEOUT_SETTING = "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS"
INTERRUPTED_EXIT = 130  # 128 + SIGINT (flows.interrupt.EXIT_CODE, not imported: it imports the settings)
CLOSED_PIPE_EXIT = 141  # 128 + SIGPIPE: the reader of stdout (or stderr) went away


def _output_closed() -> bool:
    """Flush stdout and stderr; True when one's reader has gone (`| head -1`), which then writes to /dev/null, so
    that what is still buffered is dropped and Python's own flush at exit raises nothing."""
    closed = False
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BrokenPipeError:
            closed = True
            try:
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, stream.fileno())
                os.close(devnull)
            except (OSError, ValueError):  # not a file (click's test runner): nothing left to flush at exit
                pass
        except (OSError, ValueError):
            pass
    return closed


def _reader_gone() -> bool:
    """Whether stdout or stderr is a pipe whose reader has gone (poll's POLLERR on its write end)."""
    import select

    try:
        poll = select.poll()
        for fd in (1, 2):
            poll.register(fd, select.POLLOUT)
        return any(events & select.POLLERR for _, events in poll.poll(0))
    except (OSError, ValueError, AttributeError):  # no poll (Windows) or no such descriptor
        return False


class ChatmemGroup(click.Group):
    """Turns a ChatmemError anywhere below into one line on stderr and its exit code, and loads each command of
    COMMANDS only when it is used (`--help` lists them from the table, importing none)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *COMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            module, _, attribute = COMMANDS[cmd_name][0].partition(":")
            self.add_command(getattr(importlib.import_module(module), attribute), cmd_name)
        return self.commands.get(cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        limit = formatter.width - 6 - max(len(name) for name in self.list_commands(ctx))
        rows = []
        for name in self.list_commands(ctx):
            command = self.commands.get(name)
            if command is None:
                rows.append((name, COMMANDS[name][1]))
            elif not command.hidden:
                rows.append((name, command.get_short_help_str(limit)))
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except ChatmemError as exc:
            click.echo(f"error: {safe_line(str(exc))}", err=True)
            ctx.exit(exc.exit_code)
        except BrokenPipeError:
            # writing to a pipe whose reader has gone: stop quietly, as Unix tools do (not click's exit 1)
            _output_closed()
            ctx.exit(CLOSED_PIPE_EXIT)
        except KeyboardInterrupt:
            # Ctrl-C in a command that records nothing (a run records its own stop: flows/interrupt.py): the stop
            # line and the shell's code for it, not click's "Aborted!" with exit 1
            click.echo("error: interrupted by Ctrl-C", err=True)
            ctx.exit(INTERRUPTED_EXIT)
        except RuntimeError as exc:
            # Prefect's local API server did not come up in time (a busy machine): say which setting to raise.
            if EPHEMERAL_TIMEOUT not in str(exc):
                raise
            seconds = os.environ.get(STARTUP_TIMEOUT_SETTING, "?")
            click.echo(
                f"error: Prefect's local API server did not start within {seconds} s (a busy machine?); nothing was"
                f" run: try again, or allow it longer, e.g. {STARTUP_TIMEOUT_SETTING}=600 chatmem ...",
                err=True,
            )
            ctx.exit(1)
        except (sqlite3.Error, OSError) as exc:
            # A full disk or a damaged database met outside a stage: one line naming the data dir, no traceback.
            from staging.db import is_storage_error, storage_error

            if not is_storage_error(exc):
                if _in_the_way(exc):
                    click.echo(f"error: {safe_line(_in_the_way(exc))}", err=True)
                    ctx.exit(1)
                raise
            app = ctx.obj if isinstance(ctx.obj, App) else None
            data_dir = app.data_dir if app and app.data_dir else Path(os.environ.get("CHATMEM_DATA_DIR", ".chatmem"))
            click.echo(f"error: {safe_line(str(storage_error(exc, None, data_dir=data_dir)))}", err=True)
            ctx.exit(1)


def _in_the_way(exc: BaseException) -> str:
    """One line for a path the command could not make or write because of what is already there (a file where a
    folder must be, or the reverse), "" for any other error: the user's path, not a traceback."""
    if not isinstance(exc, NotADirectoryError | FileExistsError | IsADirectoryError) or exc.filename is None:
        return ""
    why = {
        NotADirectoryError: "a part of this path is a file, not a folder",
        FileExistsError: "a file is where a folder has to be made",
        IsADirectoryError: "a folder is where a file has to be written",
    }[type(exc)]
    return f"{exc.filename}: {why}; give a path of folders, or move the file away"


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
            engine = app.engine(settings)
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
    out in one line, and the data dir is never read.

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

    \b
    Example: chatmem serve --cron "*/15 * * * *" --watch ~/dumps
    """
    from flows.cron_check import check_cron
    from flows.interrupt import take_sigint

    take_sigint()  # as `run` does: one SIGINT stops it even when it was started with SIGINT ignored
    settings = app.settings()
    # with --once too (a bad --cron is a mistake to say, not to ignore), and before Prefect: nothing is created
    check_cron(cron)
    engine = app.engine(settings, "serve", early_api=once)  # serve itself starts a server with a scheduler
    engine.check_schedule(watch_dir, cron)
    if not once:
        for line in app.defaults(settings, serving=True):
            click.echo(line, err=True)
        engine.serve_forever(watch_dir, settings, cron, force_format, lambda line: click.echo(line, err=True))
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
        for row in result["ingested"]:
            click.echo(f"  {row['status']}: {safe_line(str(row['path']))}")
        for row in result["failed"]:
            why = str(row["error"]).removeprefix(f"{row['path']}: ")  # export errors start with the path already
            click.echo(f"  failed (tried again once the file changes): {safe_line(str(row['path']))}: {safe_line(why)}")
        for row in result.get("waiting", []):
            said = f"{row['status']} in run {row['run_id']}"
            click.echo(f"  waiting for the file to change ({said}): {safe_line(str(row['path']))}")
        if result.get("left_out"):  # each said with why in the log when first found; not again at every look
            click.echo(
                f"  left out {len(result['left_out'])} path(s) that are not exports or not ready: --json lists them"
            )
    if result["failed"]:
        raise ChatmemError(f"{len(result['failed'])} dump(s) failed; see `chatmem staging failures`")
    if result["error"]:
        raise ChatmemError(result["error"])


def main() -> None:
    """The `chatmem` console script; output its reader did not take (`| head -1`) ends it with CLOSED_PIPE_EXIT."""
    try:
        cli(prog_name="chatmem")
    except SystemExit as done:
        # the last lines, still buffered, had no reader; or click met the closed pipe before a command ran (`--help`:
        # click swallows it and exits 1)
        if _output_closed() or (done.code == 1 and _reader_gone()):
            raise SystemExit(CLOSED_PIPE_EXIT) from None
        raise


def _setting_problem(loc: tuple[int | str, ...], message: str) -> str:
    """`cluster.encode_max (CHATMEM_CLUSTER__ENCODE_MAX): Input should be a valid integer`: the setting, and the
    environment variable it came from when one is set (never its value: it may be a key)."""
    name = ".".join(map(str, loc))
    variable = "CHATMEM_" + "__".join(str(part) for part in loc).upper()
    where = f" ({variable})" if variable in os.environ else ""
    return f"{name}{where}: {message}"


if __name__ == "__main__":
    main()
