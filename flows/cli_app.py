"""The shell of the `chatmem` command line: what its global options decide (`App`), the command table loaded on
demand (`COMMANDS`), and the group class that turns errors into one line and an exit code (`ChatmemGroup`).
flows/cli.py builds the group from these and holds `run`, `stage` and `serve`.

Start-up is part of every command's cost (flows/cli.py): this module imports only click, the standard library and
contracts.errors at the top; the settings, prefect and the pipeline load inside the methods that use them.
"""

from __future__ import annotations

import difflib
import errno
import importlib
import os
import sqlite3
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

import click
from click.core import ParameterSource

from contracts.errors import ChatmemError, ConfigError
from flows.hints import chosen_data_dir, with_data_dir
from flows.terminal import safe_line

if TYPE_CHECKING:
    from contracts.settings import Settings

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

    def engine(
        self, settings: Settings, name: str = "pipeline", *, early_api: bool = True, starting: str = ""
    ) -> ModuleType:
        """Import the Prefect side (flows.pipeline or flows.serve), with its environment set first and, for a
        command whose flows run on the ephemeral API (`early_api`), that API's server starting while it imports
        (flows/early_api.py). `starting`: said on stderr (not with --quiet) once the data dir is this command's,
        before Prefect starts: the first stage begins up to a minute later on a busy machine, and nothing was
        said until then (session 38's cold try).

        A damaged archive.db or staging.db (0 bytes, not SQLite, truncated) is refused before anything is
        written: no staging.db, no Prefect state, no run row whose resume hint would fail the same way."""
        from flows.prefect_env import configure_prefect
        from staging.db import check_database

        for path in (settings.archive_path, settings.staging_path):
            check_database(path)  # no connection of ours is open here (see staging.db.refuse_empty)
        if early_api:
            # the write lock before Prefect's server opens prefect/: a second run (or `serve --once`, which runs the
            # pipeline as `run` does) refuses here, its server unstarted
            from staging.lock import hold_for_command

            command = "run" if name == "pipeline" else f"{name} --once"
            click.get_current_context().with_resource(
                hold_for_command(settings.data_dir, command, wait_s=settings.pipeline.lock_wait_s)
            )
        if starting and not settings.pipeline.quiet:  # after the lock: a refused run says its one line only
            click.echo(f"{time.strftime('%H:%M:%S')} chatmem {starting}", err=True)
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


def output_closed() -> bool:
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


def reader_gone() -> bool:
    """Whether stdout or stderr is a pipe whose reader has gone (poll's POLLERR on its write end)."""
    import select

    try:
        poll = select.poll()
        for fd in (1, 2):
            poll.register(fd, select.POLLOUT)
        return any(events & select.POLLERR for _, events in poll.poll(0))
    except (OSError, ValueError, AttributeError):  # no poll (Windows) or no such descriptor
        return False


# The words a new user tries first for a command named otherwise (`chatmem ask ...`: no command of that name, and
# none spelt near it for difflib): each points at the command that does it.
ALIASES = {
    "ask": "recall",
    "query": "recall",
    "search": "recall",
    "remember": "recall",
    "ingest": "run",
    "import": "run",
    "load": "run",
    "stats": "archive stats",
    "status": "staging runs",
    "runs": "staging runs",
    "failures": "staging failures",
    "clusters": "topics",
}


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

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        try:
            return super().resolve_command(ctx, args)
        except click.NoSuchCommand as exc:
            # click suggests from self.commands, which holds only the commands loaded so far (none: COMMANDS is
            # lazy), so `chatmem recal` got no "Did you mean": suggest from every command's name
            names = difflib.get_close_matches(exc.command_name, self.list_commands(ctx), n=3, cutoff=0.6)
            alias = ALIASES.get(exc.command_name.lower()) if ctx.parent is None else None
            if alias and alias not in names:
                names = [alias, *names]
            if not names:
                raise
            hint = " or ".join(repr(name) for name in names)
            raise click.UsageError(f"{exc.message} Did you mean {hint}?", ctx) from None

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
            # its hint (`resume with: chatmem run ...`) with this command's --data-dir, to paste as shown
            click.echo(f"error: {safe_line(with_data_dir(str(exc), chosen_data_dir(ctx.obj)))}", err=True)
            ctx.exit(exc.exit_code)
        except click.NoSuchOption as exc:
            raise _global_option_hint(ctx, exc) from None
        except BrokenPipeError:
            # writing to a pipe whose reader has gone: stop quietly, as Unix tools do (not click's exit 1)
            output_closed()
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


def _global_option_hint(ctx: click.Context, exc: click.NoSuchOption) -> click.UsageError:
    """`chatmem run X --data-dir D`: --data-dir is chatmem's own option, not run's; say where it goes (click's
    "No such option" alone reads as if chatmem had no --data-dir). Any other unknown option is left as it is."""
    root = ctx.find_root().command
    name = exc.option_name.split("=", 1)[0]
    option = next(
        (p for p in root.params if isinstance(p, click.Option) and name in (*p.opts, *p.secondary_opts)), None
    )
    where = exc.ctx.command_path if exc.ctx is not None else ""
    if option is None or not where.startswith(f"{ctx.command_path} "):
        return exc
    value = "" if option.is_flag else (" DIR" if name == "--data-dir" else " VALUE")
    example = f"{ctx.command_path} {name}{value} {where[len(ctx.command_path) + 1 :]} ..."
    hint = f"{name} is an option of chatmem itself: give it before the command, as in `{example}`"
    return click.UsageError(f"{exc.message} ({hint})", exc.ctx)


_NOT_WRITABLE = (errno.EROFS, errno.EACCES, errno.EPERM)


def _in_the_way(exc: BaseException) -> str:
    """One line for a path the command could not make or write because of what is already there (a file where a
    folder must be, or the reverse) or because it may not write there (a read-only mount, no permission: `report`
    into a read-only data dir), "" for any other error: the user's path, not a traceback."""
    if isinstance(exc, OSError) and exc.filename is not None and exc.errno in _NOT_WRITABLE:
        return (
            f"{exc.filename}: cannot be written here ({exc.strerror}); give a folder you can write to"
            " (an --out DIR where the command has one, or another --data-dir)"
        )
    if not isinstance(exc, NotADirectoryError | FileExistsError | IsADirectoryError) or exc.filename is None:
        return ""
    why = {
        NotADirectoryError: "a part of this path is a file, not a folder",
        FileExistsError: "a file is where a folder has to be made",
        IsADirectoryError: "a folder is where a file has to be written",
    }[type(exc)]
    return f"{exc.filename}: {why}; give a path of folders, or move the file away"


def _setting_problem(loc: tuple[int | str, ...], message: str) -> str:
    """`cluster.encode_max (CHATMEM_CLUSTER__ENCODE_MAX): Input should be a valid integer`: the setting, and the
    environment variable it came from when one is set (never its value: it may be a key)."""
    name = ".".join(map(str, loc))
    variable = "CHATMEM_" + "__".join(str(part) for part in loc).upper()
    where = f" ({variable})" if variable in os.environ else ""
    return f"{name}{where}: {message}"
