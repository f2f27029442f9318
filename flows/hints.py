"""The commands chatmem suggests (`resume with: chatmem run --from cluster --run-id R`, `chatmem staging failures
lists them`, the garden's `see chatmem staging show garden_changes ...`), said as the user can paste them: with
`--data-dir PATH` where the command was given a data dir other than the default (--data-dir or CHATMEM_DATA_DIR).
Pasted as shown, a hint without it read the default .chatmem and failed ("unknown run id", "nothing in .chatmem").

The hints are built where the data dir is not known (staging.liveness, a stage's notes, the ledger's resume column,
read back by a later command): they are said through `with_data_dir` where they are printed, with the data dir of
the command that prints them, the one that holds the run.
"""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path

import click

# the commands a hint names (flows/cli_app.COMMANDS and those of flows/cli.py): `chatmem ingest: succeeded` is a log
# line's name, not a command; "already served by `chatmem serve` (pid 12)" names the process holding it, no command
_COMMAND = re.compile(
    r"(?<![\w./-])(?<!by `)chatmem (?=(?:run|stage|staging|serve|report|topics|concepts|facts|recall|archive|graph|eval"
    r"|inspect|mcp|garden)\b(?! only previews))"
)


def chosen_data_dir(app: object = None) -> Path | None:
    """The data dir this command was given (`app`, else the running command's App), absolute: a hint pasted in
    another folder still works; None for the default, or outside a command (a thread of its own, a bare call)."""
    from contracts.settings import DEFAULT_DATA_DIR
    from flows.cli_app import App

    if app is None:
        ctx = click.get_current_context(silent=True)
        app = ctx.find_root().obj if ctx is not None else None
    given = app.data_dir if isinstance(app, App) else None
    if given is None:
        return None
    chosen = Path(os.path.normpath(given.expanduser().absolute()))
    return None if chosen == DEFAULT_DATA_DIR.absolute() else chosen


def with_data_dir(text: str, data_dir: Path | None = None) -> str:
    """`text` with every chatmem command it suggests given `--data-dir PATH` (shell-quoted) where the data dir is
    not the default: `data_dir`, else this command's (`chosen_data_dir`)."""
    chosen = data_dir if data_dir is not None else chosen_data_dir()
    if chosen is None or "chatmem " not in text:
        return text
    return _COMMAND.sub(lambda _: f"chatmem --data-dir {shlex.quote(str(chosen))} ", text)
