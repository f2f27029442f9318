"""flows/registry.py and the one skip rule (flows/fingerprint.py, flows/stage_runner.py) on real pipeline runs."""

from __future__ import annotations

import importlib
import inspect
import sqlite3
from pathlib import Path

import pytest

from contracts.settings import Settings
from flows.registry import STAGE_ORDER, STAGES, check_registry, check_stages, select_stages
from tests.conftest import write_jsonl


def test_every_stage_is_declared_once_with_a_runnable_entry_point() -> None:
    """Each entry names a module with run(ctx, *, <test dependencies>) and real settings sections."""
    check_registry()
    assert len(set(STAGE_ORDER)) == len(STAGES)
    for stage in STAGES:
        run = importlib.import_module(stage.entry).run
        parameters = list(inspect.signature(run).parameters.values())
        assert parameters[0].name == "ctx", stage.name
        assert all(p.kind is inspect.Parameter.KEYWORD_ONLY and p.default is not p.empty for p in parameters[1:])
        assert stage.settings_sections, stage.name
        assert set(stage.settings_sections) <= set(Settings.model_fields), stage.name


def test_selection_follows_the_registry_order() -> None:
    """--from/--to slice the declared order, and a hand-picked list comes back in pipeline order."""
    assert select_stages("extract", "cluster") == ["extract", "concepts", "garden", "embed_concepts", "cluster"]
    assert select_stages(only="load") == ["load"]
    assert check_stages(["load", "ingest"]) == ["ingest", "load"]


def _stages(staging_path: Path, run_id: str) -> dict[str, tuple[str, str]]:
    conn = sqlite3.connect(staging_path)
    rows = conn.execute("SELECT stage, status, notes FROM stage_runs WHERE run_id = ? ORDER BY id", (run_id,))
    found = {str(stage): (str(status), str(notes or "")) for stage, status, notes in rows}
    conn.close()
    return found


@pytest.mark.prefect
def test_unchanged_inputs_skip_and_a_change_reruns_only_what_depends_on_it(data_dir: Path, jsonl_export: Path) -> None:
    """Second run: ingest and segment skipped as unchanged. A new segment setting re-runs segment, not ingest.
    A new dump re-runs both. A stage whose latest attempt did not succeed (killed: still 'running') re-runs."""
    from flows.pipeline import run_pipeline

    stages = ["ingest", "segment"]
    settings = Settings(data_dir=data_dir)
    first, _ = run_pipeline(settings, [jsonl_export], stages, quiet=True)
    assert {s: v[0] for s, v in _stages(settings.staging_path, first).items()} == {
        "ingest": "succeeded",
        "segment": "succeeded",
    }

    _, results = run_pipeline(settings, [jsonl_export], stages, quiet=True)
    assert [r.status for r in results] == ["skipped", "skipped"]
    assert all(f"unchanged since run {first}" in r.notes[0] for r in results)

    retuned = Settings(data_dir=data_dir, segment={"max_tokens": 300})
    _, results = run_pipeline(retuned, [jsonl_export], stages, quiet=True)
    assert (results[0].stage, results[0].status) == ("ingest", "skipped")
    assert "unchanged" not in " ".join(results[1].notes)  # segment ran: its settings changed

    newer = write_jsonl(jsonl_export.parent / "newer.jsonl", prefix="n")
    fourth, results = run_pipeline(retuned, [jsonl_export, newer], stages, quiet=True)
    assert [r.status for r in results] == ["succeeded", "succeeded"]
    assert results[0].counts["messages_inserted"] == 6

    conn = sqlite3.connect(settings.staging_path)
    conn.execute(
        "INSERT INTO stage_runs (run_id, stage, status, started_at, input_fingerprint, settings, code_version)"
        " VALUES (?, 'segment', 'running', '2026-01-01T00:00:00+00:00', 'killed', '{}', 'x')",
        (fourth,),
    )
    conn.commit()
    conn.close()
    _, results = run_pipeline(retuned, [jsonl_export, newer], stages, quiet=True)
    assert results[0].status == "skipped" and "unchanged" not in " ".join(results[1].notes)


@pytest.mark.prefect
def test_force_runs_every_selected_stage(data_dir: Path, jsonl_export: Path) -> None:
    """--force: the stages run, and redo what their own caches would skip: ingest reads the dump again (same
    sha256) and segment cuts every conversation again; the rows come out the same (written as unchanged)."""
    from flows.pipeline import run_pipeline

    settings = Settings(data_dir=data_dir)
    run_pipeline(settings, [jsonl_export], ["ingest", "segment"], quiet=True)
    _, [ingest, segment] = run_pipeline(settings, [jsonl_export], ["ingest", "segment"], quiet=True, force=True)
    assert ingest.status == segment.status == "succeeded", (ingest, segment)
    assert not ingest.notes or "unchanged" not in ingest.notes[0]
    assert ingest.counts["files_skipped"] == 0 and ingest.counts["messages_unchanged"] == 6
    assert ingest.counts["messages_inserted"] == ingest.counts["messages_updated"] == 0
    assert segment.counts["conversations_segmented"] == 2 and segment.counts["segments_written"] == 0


@pytest.mark.prefect
def test_flow_parameters_carry_no_settings(data_dir: Path, jsonl_export: Path) -> None:
    """Prefect stores a flow run's parameters: only the run id (and stage names), never the settings' secrets."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterName

    from flows.pipeline import run_pipeline

    secret_url = "http://someone:url-token-4242@127.0.0.1:9/v1"
    settings = Settings(
        data_dir=data_dir, extract={"llm": {"model": "m", "base_url": secret_url, "api_key": "sk-key-4242"}}
    )
    run_id, _ = run_pipeline(settings, [jsonl_export], ["ingest"], quiet=True)
    with get_client(sync_client=True) as client:
        names = [f"pipeline-{run_id}", f"ingest-{run_id}"]
        runs = client.read_flow_runs(flow_run_filter=FlowRunFilter(name=FlowRunFilterName(any_=names)))
    assert {run.name: dict(run.parameters) for run in runs} == {
        f"pipeline-{run_id}": {"run_id": run_id, "stages": ["ingest"]},
        f"ingest-{run_id}": {"run_id": run_id},
    }
