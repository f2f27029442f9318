"""What a no-op run and a default `report` say after runs that did different stages (cold pass s17, findings L5,
L6): the no-op line names the run that did each stage's work, not the newest run as if it did all of them; the
report of a run that never selected cluster says so, not that it "did not cluster (see skipped stages)"."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from flows.cli import cli

pytestmark = [pytest.mark.prefect, pytest.mark.slow]


def _chatmem(data_dir: Path, *args: str | Path) -> str:
    result = CliRunner().invoke(cli, ["--data-dir", str(data_dir), *map(str, args)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.stdout


def test_the_no_op_line_and_the_report_name_the_runs_that_did_the_work(tmp_path: Path, jsonl_export: Path) -> None:
    data_dir = tmp_path / "data"
    ingested = json.loads(_chatmem(data_dir, "-q", "run", jsonl_export, "--to", "ingest", "--json"))["run_id"]
    segmented = json.loads(_chatmem(data_dir, "-q", "run", jsonl_export, "--to", "segment", "--json"))["run_id"]
    lines = [line for line in _chatmem(data_dir, "run", jsonl_export, "--to", "segment").splitlines() if line]
    assert len(lines) == 1, lines
    assert lines[0].startswith(
        f"nothing new: 2 stage(s) unchanged (segment since run {segmented}; ingest since run {ingested}) (run "
    ), lines

    chosen = json.loads(_chatmem(data_dir, "report", "--json", "--out", tmp_path / "report"))
    assert chosen["run_id"] == segmented
    page = (tmp_path / "report" / "index.html").read_text()
    assert "this run did not run the cluster stage (its stages: ingest, segment)" in page
    assert "this run did not cluster (see skipped stages)" not in page
