"""flows/pipeline.py: the real Prefect flows on the ephemeral API, writing real SQLite files.

Prefect is imported inside the tests (see conftest.prefect_env). The first flow of the session starts the
ephemeral API (seconds); later ones reuse it.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from contracts.errors import ConfigError, StageError
from contracts.settings import Settings

pytestmark = pytest.mark.prefect


def _ledger(settings: Settings, run_id: str) -> tuple[sqlite3.Row, list[sqlite3.Row]]:
    conn = sqlite3.connect(settings.staging_path)
    conn.row_factory = sqlite3.Row
    run = conn.execute("SELECT * FROM runs WHERE id = ?", (run_id,)).fetchone()
    stages = conn.execute("SELECT * FROM stage_runs WHERE run_id = ? ORDER BY id", (run_id,)).fetchall()
    conn.close()
    return run, stages


def test_pipeline_records_the_run_and_returns_stage_results(data_dir: Path, jsonl_export: Path) -> None:
    from flows.pipeline import run_pipeline

    settings = Settings(data_dir=data_dir)
    run_id, results = run_pipeline(settings, [jsonl_export], ["ingest"])
    [result] = results
    assert (result.stage, result.run_id, result.status) == ("ingest", run_id, "succeeded")
    assert result.counts["messages_inserted"] == 6 and result.counts["conversations_written"] == 2
    run, stages = _ledger(settings, run_id)
    assert run["status"] == "succeeded" and run["finished_at"] is not None and run["error"] is None
    assert json.loads(run["exports"]) == [str(jsonl_export.absolute())]
    assert json.loads(run["stages"]) == ["ingest"]
    assert json.loads(run["settings"])["data_dir"] == str(data_dir)
    assert [(s["stage"], s["status"]) for s in stages] == [("ingest", "succeeded")]


def test_stages_run_as_prefect_subflows_of_the_pipeline(data_dir: Path, jsonl_export: Path) -> None:
    """The CLI's path really goes through Prefect: a pipeline flow run with the stage as its subflow."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterName

    from flows.pipeline import run_pipeline

    run_id, _ = run_pipeline(Settings(data_dir=data_dir), [jsonl_export], ["ingest"])
    names = [f"pipeline-{run_id}", f"ingest-{run_id}"]
    with get_client(sync_client=True) as client:
        runs = client.read_flow_runs(flow_run_filter=FlowRunFilter(name=FlowRunFilterName(any_=names)))
    by_name = {run.name: run for run in runs}
    assert set(by_name) == set(names)
    assert all(run.state is not None and run.state.is_completed() for run in runs)
    assert by_name[f"pipeline-{run_id}"].parent_task_run_id is None
    assert by_name[f"ingest-{run_id}"].parent_task_run_id is not None  # a subflow of the pipeline


def test_a_failed_stage_fails_the_run_with_the_error(data_dir: Path, jsonl_export: Path) -> None:
    """The ingest stage fails when its every file failed (beside a good file it goes on: the run succeeds, the
    bad file is reported): the run fails with the stage's error and the command that re-runs it."""
    from flows.pipeline import run_pipeline

    bad = data_dir.parent / "bad.json"
    bad.write_text('[{"mapping": {"a": ', encoding="utf-8")
    settings = Settings(data_dir=data_dir)
    with pytest.raises(StageError) as caught:
        run_pipeline(settings, [bad], ["ingest"])
    error = caught.value
    assert error.stage == "ingest" and str(bad) in error.cause
    assert f"chatmem stage ingest --run-id {error.run_id}" in error.rerun_hint
    run, stages = _ledger(settings, error.run_id)
    assert run["status"] == "failed" and str(bad) in run["error"]
    assert stages[-1]["status"] == "failed"
    run_id, [result] = run_pipeline(settings, [bad, jsonl_export], ["ingest"])
    assert result.status == "succeeded" and result.counts["files_failed"] == 1
    assert _ledger(settings, run_id)[0]["status"] == "succeeded"
    archive = sqlite3.connect(settings.archive_path)
    assert archive.execute("SELECT COUNT(*) FROM conversations").fetchone()[0] == 2  # the good file arrived


def test_rerunning_a_stage_reuses_the_run_id(data_dir: Path, jsonl_export: Path) -> None:
    from flows.pipeline import run_pipeline

    settings = Settings(data_dir=data_dir)
    run_id, _ = run_pipeline(settings, [jsonl_export], ["ingest"])
    again, [result] = run_pipeline(settings, [jsonl_export], ["ingest"], run_id=run_id)
    assert again == run_id and result.status == "skipped"
    run, stages = _ledger(settings, run_id)
    assert run["status"] == "succeeded"
    assert [s["status"] for s in stages] == ["succeeded", "skipped"]


def test_unknown_or_missing_stages_are_usage_errors(data_dir: Path, jsonl_export: Path) -> None:
    from flows.pipeline import check_stages, run_pipeline

    assert check_stages(["ingest"]) == ["ingest"]
    for stages in (["nope"], [], ["ingest", "extractt"]):
        with pytest.raises(ConfigError) as caught:
            check_stages(stages)
        assert caught.value.exit_code == 2
    with pytest.raises(ConfigError, match="at least one export"):
        run_pipeline(Settings(data_dir=data_dir), [], ["ingest"])
    assert not data_dir.exists()  # refused before anything was written


def test_progress_bars_only_for_a_terminal_and_never_when_quiet(capsys: pytest.CaptureFixture[str]) -> None:
    import io

    from flows.progress import bars_wanted, progress_factory, tqdm_bar

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    assert bars_wanted(False, Terminal()) and not bars_wanted(True, Terminal())
    assert not bars_wanted(False, io.StringIO())  # a pipe or a log file
    assert progress_factory(False) is None and progress_factory(True) is tqdm_bar
    with tqdm_bar("/a/long/path/" + "x" * 60 + "/conversations.json", 2048) as advance:
        advance(1024)
        advance(1024)
    assert "conversations.json" in capsys.readouterr().err  # on stderr, the file name kept


def _flow_run_names(names: list[str]) -> set[str]:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterName

    with get_client(sync_client=True) as client:
        runs = client.read_flow_runs(flow_run_filter=FlowRunFilter(name=FlowRunFilterName(any_=names)))
    return {str(run.name) for run in runs}


def test_prefects_old_flow_runs_are_pruned_and_recent_ones_kept(data_dir: Path, jsonl_export: Path) -> None:
    """Prefect's database would otherwise grow with every run (flows/prefect_history.py): flow runs that started
    before the cut-off go, later ones stay; a run whose setting keeps 0 days leaves none of the runs before it."""
    import time
    from datetime import UTC, datetime

    from flows.pipeline import run_pipeline
    from flows.prefect_history import prune_flow_runs

    settings = Settings(data_dir=data_dir)
    old, _ = run_pipeline(settings, [jsonl_export], ["ingest"])
    time.sleep(0.05)
    between = datetime.now(UTC)
    recent, _ = run_pipeline(settings, [jsonl_export], ["ingest"], force=True)
    names = {run: [f"pipeline-{run}", f"ingest-{run}"] for run in (old, recent)}
    assert _flow_run_names(names[old] + names[recent]) == {*names[old], *names[recent]}  # 30 days kept by default
    assert prune_flow_runs(0, now=between) >= 2
    assert _flow_run_names(names[old] + names[recent]) == set(names[recent])

    keep_none = Settings(data_dir=data_dir, pipeline={"prefect_history_days": 0})
    last, _ = run_pipeline(keep_none, [jsonl_export], ["ingest"], force=True)
    assert _flow_run_names([*names[recent], f"pipeline-{last}"]) == set()  # pruned at the end of the run
    run, _ = _ledger(settings, recent)
    assert run["status"] == "succeeded"  # the ledger keeps every run whatever Prefect keeps


def test_a_prefect_server_of_ones_own_is_not_pruned(monkeypatch: pytest.MonkeyPatch) -> None:
    from flows.prefect_history import prune_flow_runs

    monkeypatch.setenv("PREFECT_API_URL", "http://127.0.0.1:9/api")  # nothing listens: any call would fail
    assert prune_flow_runs(0) == 0
