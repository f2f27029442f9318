"""What `chatmem` loads before it answers: `--help` and usage errors import no engine (issue 21: they must answer
at once), every lazily loaded command is the one the table names, and the constants copied out of the pydantic
modules (so that option choices need no pydantic) stay equal to the originals.

Whole-process times are measured by benchmarks/bench_cli.py, not here (no timing assertions in tests).
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import click

from flows.cli import EXPORT_FORMATS, cli
from flows.cli_app import COMMANDS

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("pydantic", "pydantic_settings", "numpy", "scipy", "prefect", "sklearn", "polars", "openai", "memory")


def _loaded_after(argv: list[str]) -> tuple[int, str, list[str]]:
    """(exit code, output, the HEAVY packages loaded) of `chatmem ARGV` in a fresh interpreter."""
    code = (
        "import io, json, sys, contextlib\n"
        "from flows.cli import cli\n"
        "out = io.StringIO()\n"
        "with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):\n"
        "    try:\n"
        f"        cli({argv!r}, prog_name='chatmem')\n"
        "    except SystemExit as exc:\n"
        "        code = exc.code or 0\n"
        f"heavy = sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r}))\n"
        "print(json.dumps([code, out.getvalue(), heavy]))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    exit_code, output, heavy = json.loads(done.stdout)
    return int(exit_code), str(output), list(heavy)


def test_top_level_help_lists_every_command_and_imports_no_engine() -> None:
    code, output, heavy = _loaded_after(["--help"])
    assert code == 0 and heavy == [], heavy
    for name in [*COMMANDS, "run", "stage", "serve"]:
        assert f"  {name} " in output, name


def test_usage_errors_and_command_help_import_no_engine(tmp_path: Path) -> None:
    """A mistake is answered from click alone: no pydantic, numpy, prefect or stage package is imported."""
    cases = [
        ["recall"],  # missing QUESTION
        ["recall", "x", "--budget", "0"],
        ["recall", "x", "--order", "sideways"],
        ["run", "--bogus"],
        # `run missing.json` is no usage error: an unreadable file, refused by flows/preflight.py (test_cli_cold_pass)
        ["stage"],
        ["staging", "show"],
        ["concepts", "--type", "nope"],
        ["facts", "--bogus"],
        ["topics", "--limit", "many"],
        ["graph", "nope"],
        ["eval", "extraction"],
        ["eval", "recall", "--benchmark", "nope"],
        ["nope"],
    ]
    for argv in cases:
        code, output, heavy = _loaded_after(argv)
        assert code == 2, (argv, output)
        assert heavy == [], (argv, heavy)
    for argv in (["run", "--help"], ["recall", "--help"], ["staging", "show", "--help"]):
        code, output, heavy = _loaded_after(argv)
        assert code == 0 and "Example:" in output and heavy == [], (argv, heavy)


def test_each_lazy_command_is_the_one_the_table_describes() -> None:
    """The one-line help `chatmem --help` shows without importing a command is the start of the command's own."""
    context = click.Context(cli)
    for name, (target, short) in COMMANDS.items():
        module, _, attribute = target.partition(":")
        command = getattr(importlib.import_module(module), attribute)
        assert cli.get_command(context, name) is command
        own = " ".join((command.help or "").split())
        assert own.startswith(short.removesuffix("...").rstrip()), (name, short, own[:120])


def test_constants_copied_out_of_the_contracts_stay_equal() -> None:
    from contracts.concepts import CONCEPT_STATES, CONCEPT_TYPES
    from contracts.memory import MAX_BUDGET_TOKENS
    from contracts.records import EXPORT_FORMATS as FORMATS
    from flows import cli_concepts, cli_memory

    assert EXPORT_FORMATS == FORMATS
    assert cli_memory.MAX_BUDGET_TOKENS == MAX_BUDGET_TOKENS
    assert (cli_concepts.CONCEPT_TYPES, cli_concepts.CONCEPT_STATES) == (CONCEPT_TYPES, CONCEPT_STATES)


def test_contracts_names_load_on_first_use() -> None:
    """`import contracts.errors` (what the CLI needs to catch its errors) does not import pydantic; the package's
    names still resolve."""
    code = (
        "import sys\n"
        "import contracts.errors\n"
        "assert 'pydantic' not in sys.modules, 'pydantic loaded by contracts.errors'\n"
        "from contracts import ExportSource, StrictBase, ConfigError\n"
        "assert issubclass(ExportSource, StrictBase) and ConfigError.exit_code == 2\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


def test_the_stop_words_are_scikit_learns() -> None:
    """clients/stopwords.py is a copy (importing scikit-learn on every recall cost about a second)."""
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    from clients.stopwords import ENGLISH_STOP_WORDS as COPY

    assert frozenset(ENGLISH_STOP_WORDS) == COPY


def into_a_closed_pipe(*args: str | Path, cwd: Path = ROOT) -> subprocess.CompletedProcess[bytes]:
    """`python -m flows.cli ARGS` with stdout a real pipe whose reader has gone before the first write (what
    `| head -1` leaves once it has its line), stderr captured."""
    reader, writer = os.pipe()
    os.close(reader)
    try:
        command = [sys.executable, "-m", "flows.cli", *map(str, args)]
        return subprocess.run(command, stdout=writer, stderr=subprocess.PIPE, cwd=cwd, timeout=120)
    finally:
        os.close(writer)


def test_help_into_a_closed_pipe_exits_141_without_a_word() -> None:
    """Output its reader did not take ends the command as a Unix tool stopped by SIGPIPE: 141, nothing on stderr
    (click met it before any command ran and exited 1; tests/test_cli_memory.py: recall)."""
    done = into_a_closed_pipe("--help")
    assert done.returncode == 141 and done.stderr == b"", done.stderr
    shell = subprocess.run(
        ["bash", "-c", '"$1" -m flows.cli --help | head -1; echo "rc=${PIPESTATUS[0]}"', "_", sys.executable],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert shell.stdout.splitlines()[0].startswith("Usage: ") and shell.stderr == "", shell.stderr
    assert shell.stdout.splitlines()[-1] in ("rc=0", "rc=141")  # 0 when all of it was written before head left
