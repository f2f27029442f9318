"""Where the read-only commands find their data, and what they say when it is not there: the databases opened
read-only, the one line for a data dir that does not exist (`no_data_dir`, nothing created) or holds nothing yet,
an unknown --run-id (a usage error), a stage that never ran. One set of words for every command (flows/cli_inspect.py,
cli_topics.py, cli_memory.py, cli_graph.py, ...).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import click

from contracts.errors import ChatmemError, ConfigError

if TYPE_CHECKING:
    from contracts.settings import Settings


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
