"""What a user sees of chatmem's runs in Prefect's UI: a real `prefect server start` on loopback, a real
`chatmem run` against it, and the flow runs and their logs read back through Prefect's client API.

Prefect is imported inside the test (conftest sets its environment once per session, before any import).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

pytestmark = [pytest.mark.slow, pytest.mark.prefect]
ROOT = Path(__file__).resolve().parents[1]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def prefect_server(tmp_path: Path) -> Iterator[str]:
    """`prefect server start --host 127.0.0.1` with its own home, no UI build, no analytics; yields its API URL."""
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    env |= {"PREFECT_HOME": str(tmp_path / "server-home"), "PREFECT_UI_ENABLED": "false"}
    env |= {"PREFECT_SERVER_ANALYTICS_ENABLED": "false", "DO_NOT_TRACK": "1"}
    command = [sys.executable, "-m", "prefect", "server", "start", "--host", "127.0.0.1", "--port", str(port)]
    log = (tmp_path / "server.log").open("w")
    process = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=tmp_path)
    url = f"http://127.0.0.1:{port}/api"
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            assert process.poll() is None, (tmp_path / "server.log").read_text()
            try:
                if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.5)
        else:
            raise AssertionError(f"prefect server did not start: {(tmp_path / 'server.log').read_text()}")
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


def test_runs_show_in_prefect_as_stage_flows_named_by_run_with_the_stage_logs(
    prefect_server: str, tmp_path: Path, make_jsonl: Callable[..., Path]
) -> None:
    """With PREFECT_API_URL set, `chatmem run` makes one flow run per stage (named STAGE-RUNID) under the
    pipeline's, and the segment stage's own log line (extract.stage_segment) is that flow run's log."""
    export = make_jsonl(tmp_path / "notes.jsonl", conversations=3, turns=4)
    env = {**os.environ, "PREFECT_API_URL": prefect_server, "PREFECT_HOME": str(tmp_path / "client-home")}
    command = [sys.executable, "-m", "flows.cli", "--data-dir", str(tmp_path / "data"), "run", str(export)]
    ran = subprocess.run([*command, "--to", "segment", "--json"], env=env, cwd=ROOT, capture_output=True, text=True)
    assert ran.returncode == 0, ran.stderr
    assert "segment - " not in ran.stderr  # INFO goes to Prefect, not to the console (that needs --verbose)
    run_id = json.loads(ran.stdout)["run_id"]

    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import LogFilter, LogFilterFlowRunId
    from prefect.settings import PREFECT_API_URL, temporary_settings

    with temporary_settings(updates={PREFECT_API_URL: prefect_server}), get_client(sync_client=True) as client:
        runs = {r.name: r for r in client.read_flow_runs()}
        assert set(runs) == {f"pipeline-{run_id}", f"ingest-{run_id}", f"segment-{run_id}"}
        assert {r.state_name for r in runs.values()} == {"Completed"}
        flows = {client.read_flow(r.flow_id).name for r in runs.values()}
        assert flows == {"chatmem-pipeline", "ingest", "segment"}
        parent = runs[f"pipeline-{run_id}"].id
        segment = runs[f"segment-{run_id}"]
        assert client.read_task_run(segment.parent_task_run_id).flow_run_id == parent  # a subflow of the run
        logs = client.read_logs(log_filter=LogFilter(flow_run_id=LogFilterFlowRunId(any_=[segment.id])))
    lines = [(entry.name, entry.message) for entry in logs]
    assert any(name == "extract.stage_segment" and message.startswith("segment - ") for name, message in lines)
