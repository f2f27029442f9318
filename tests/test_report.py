"""staging/run_report.py and `chatmem report`: the sections of a run's report, from real runs."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner
from inspect_support import FULL_STAGES, INGEST_RUN_ID, RUN_ID, Inspected

from flows.cli import cli
from flows.registry import STAGE_ORDER
from staging import run_report
from staging.db import connect_readonly


def _gather(inspected: Inspected, run_id: str | None = None) -> dict[str, object]:
    staging = connect_readonly(inspected.settings.staging_path)
    archive = connect_readonly(inspected.settings.archive_path)
    try:
        return run_report.gather(staging, archive, run_id, STAGE_ORDER)
    finally:
        staging.close()
        archive.close()


def test_full_run_has_every_section(inspected: Inspected) -> None:
    """Timeline, tokens with cost, quarantine, topics with trials, concepts, the memory graph; no graph load."""
    data = _gather(inspected)
    assert data["run"]["id"] == RUN_ID  # the newest run, when none is named
    assert [s["stage"] for s in data["timeline"]] == list(FULL_STAGES)
    assert data["skipped"] == [{"stage": "load", "why": "not part of this run"}]
    extract, cluster = data["tokens"]["per_stage"]  # the extraction calls, and the cluster stage's topic labels
    assert extract == {
        "stage": "extract",
        "prompt_tokens": 4200,
        "completion_tokens": 2100,
        "reasoning_tokens": 420,
        "cost_usd": 0.02625,  # 42 calls x (100 in x 1.25 + 50 out x 10) USD per 1M tokens
    }
    assert cluster["stage"] == "cluster" and cluster["prompt_tokens"] == 300 and cluster["cost_usd"] == 0.001875
    assert [(c["stage"], c["status"], c["calls"]) for c in data["tokens"]["calls"]] == [
        ("cluster", "ok", 3),
        ("extract", "ok", 42),
    ]
    assert data["problems"]["quarantined"] == 1 and data["problems"]["failed_stages"] == []
    assert data["topics"]["summary"]["status"] == "clustered" and len(data["topics"]["points"]) == 42
    assert len(data["topics"]["trials"]) == 3
    assert data["concepts"]["total"] == 3 and data["concepts"]["changed_by_run"] == 3
    assert {r["type"] for r in data["concepts"]["by_type_state"]} == {"project", "goal", "entity"}
    assert data["graph"] == []
    [memory] = data["recall"]["graph"]  # the cues stage's graph of this run
    assert memory["content"] > 0 and memory["cues"] > 0 and data["recall"]["figures"] == []


def test_ingest_only_run_has_empty_sections_not_errors(ingest_only: Inspected) -> None:
    """A data dir that only ingested: the later stages' tables do not exist, and their sections are empty."""
    data = _gather(ingest_only, INGEST_RUN_ID)
    assert [s["stage"] for s in data["timeline"]] == ["ingest"]
    assert {s["stage"] for s in data["skipped"]} == set(STAGE_ORDER) - {"ingest"}
    assert data["tokens"]["per_stage"] == [] and data["tokens"]["calls"] == []
    assert data["topics"] == {} and data["concepts"] == {} and data["graph"] == [] and data["recall"] == {}
    assert data["problems"]["quarantined"] == 1


def test_report_command_writes_the_page_and_pngs_and_refuses_unknown_runs(
    ingest_only: Inspected, tmp_path: Path
) -> None:
    """--json lists the files (default folder: DATA_DIR/reports/RUN); an unknown run id is a usage error (2)."""
    runner = CliRunner()
    data_dir = str(ingest_only.settings.data_dir)
    result = runner.invoke(cli, ["--data-dir", data_dir, "report", "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    files = [Path(f) for f in json.loads(result.stdout)["files"]]
    assert [f.name for f in files] == ["timeline.png", "index.html"]
    assert files[0].parent == ingest_only.settings.data_dir / "reports" / INGEST_RUN_ID
    assert files[0].read_bytes()[:4] == b"\x89PNG"
    assert "data:image/png;base64," in files[1].read_text(encoding="utf-8")  # self-contained
    unknown = runner.invoke(cli, ["--data-dir", data_dir, "report", "--run-id", "nope"])
    assert unknown.exit_code == 2 and "unknown run id 'nope'" in unknown.output
    empty = runner.invoke(cli, ["--data-dir", str(tmp_path / "none"), "report"])
    assert empty.exit_code == 1 and "does not exist, so it holds no archive" in empty.output
    assert not (tmp_path / "none").exists()
    assert "Example:" in runner.invoke(cli, ["report", "--help"]).output
