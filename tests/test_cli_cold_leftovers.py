"""What session 34's cold try found in the CLI and left (a fresh clone, the README's commands, real exports, bad input
of its own): the hint for a path that does not exist, a re-export's taken ids in `staging failures`, paths said as
typed (`clone/../shared/...`), `staging show` of an unknown table, a JSONL file read as ChatGPT. Each through the real
CLI on real files under tmp_path."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from flows.cli import cli


def chatmem(data_dir: Path, *args: str | Path, columns: int = 120) -> Result:
    return CliRunner().invoke(
        cli, ["--data-dir", str(data_dir), *map(str, args)], env={"COLUMNS": str(columns)}, catch_exceptions=False
    )


@pytest.mark.prefect
def test_a_missing_path_beside_good_files_is_said_not_to_exist_not_to_be_fixed(
    tmp_path: Path, chatgpt_export: Path
) -> None:
    """The rest runs first (by design: flows/preflight.py), then the error line: for a path that does not exist there
    is no file to fix: it says the path does not exist. Before: "fix the file and run again"."""
    missing = tmp_path / "typo.json"
    done = chatmem(tmp_path / "data", "-q", "run", chatgpt_export, missing, "--only", "ingest")
    assert done.exit_code == 1 and f"ingested: {chatgpt_export}" in done.stdout, done.output
    [error] = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert "the path does not exist: check it, or leave it out of the command" in error, error
    assert "fix the file" not in error, error
