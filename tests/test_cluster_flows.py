"""The embed and cluster stages as Prefect flows: in the whole pipeline, and `chatmem stage cluster` alone."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from flows.cli import cli
from flows.registry import STAGE_ORDER

pytestmark = pytest.mark.prefect


def test_stage_order_places_embed_after_segment_and_cluster_after_concepts() -> None:
    """embed needs segments; cluster links concepts, so it runs once the concept loop is done."""
    order = list(STAGE_ORDER)
    assert order.index("embed") == order.index("segment") + 1
    assert order.index("cluster") > order.index("concepts")


def test_run_then_stage_cluster_alone(data_dir: Path, jsonl_export: Path) -> None:
    """`chatmem run` goes through embed and cluster; `chatmem stage cluster --run-id R` skips it while nothing
    changed and re-runs it alone with --force."""
    runner = CliRunner()
    ran = runner.invoke(cli, ["--data-dir", str(data_dir), "run", str(jsonl_export), "--json"], catch_exceptions=False)
    assert ran.exit_code == 0, ran.output
    report = json.loads(ran.stdout)
    stages = {s["stage"]: s for s in report["stages"]}
    assert stages["embed"]["counts"]["texts_embedded"] == 6
    assert stages["cluster"]["status"] == "skipped"  # 2 segments: far fewer than cluster.min_points
    again = runner.invoke(
        cli,
        ["--data-dir", str(data_dir), "stage", "cluster", "--run-id", report["run_id"], "--json"],
        catch_exceptions=False,
    )
    assert again.exit_code == 0, again.output
    [only] = json.loads(again.stdout)["stages"]  # a no-op run of its own, the run left as it was
    assert only["stage"] == "cluster" and any(f"unchanged since run {report['run_id']}" in n for n in only["notes"])
    forced = runner.invoke(
        cli,
        ["--data-dir", str(data_dir), "stage", "cluster", "--run-id", report["run_id"], "--force", "--json"],
        catch_exceptions=False,
    )
    assert forced.exit_code == 0, forced.output
    [only] = json.loads(forced.stdout)["stages"]
    assert only["stage"] == "cluster" and any("not clustered" in n for n in only["notes"])
    shown = runner.invoke(cli, ["--data-dir", str(data_dir), "topics", "--json"], catch_exceptions=False)
    assert json.loads(shown.stdout)["status"] == "skipped" and json.loads(shown.stdout)["topics"] == []
