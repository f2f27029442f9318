"""Issue 22, `chatmem serve` under signals and twice on one data dir, with real processes: `serve --once` stopped
by SIGTERM, Ctrl-C (SIGINT to the terminal's process group) during a scheduled watch run, and a second
`serve --watch` started while the first one starts."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fault_support import (
    chatmem_command,
    descendants,
    latest_stage_status,
    ledger,
    process_env,
    run,
    start,
    still_running,
    wait_for,
    write_chats,
)

pytestmark = pytest.mark.slow
LONG_CLUSTER = {"CHATMEM_CLUSTER__N_TRIALS": "1000"}  # the watch run is still in cluster when the signal comes


def _cluster_running(data_dir: Path) -> bool:
    return latest_stage_status(data_dir, "cluster") == "running"


def _api(url: str, body: object | None = None) -> Any:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback only
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    with opener.open(request, timeout=10) as response:
        return json.loads(response.read() or b"null")


def test_serve_once_stopped_by_sigterm_is_interrupted_and_leaves_no_server(tmp_path: Path) -> None:
    """`serve --once` given SIGTERM in cluster: exit 143 with the one line, the run recorded interrupted (not
    failed), and Prefect's server, started through the guard, gone with it."""
    watch = tmp_path / "watch"
    write_chats(watch / "chats.jsonl", 40)
    data_dir = tmp_path / "data"
    env = process_env(tmp_path / "prefect", **LONG_CLUSTER)
    process = start(data_dir, "--quiet", "serve", "--once", "--watch", watch, env=env)
    wait_for("the cluster stage to start", lambda: _cluster_running(data_dir), 300, process)
    children = descendants(process.pid)
    assert any("flows.server_guard" in " ".join(c.cmdline()) for c in children), "the server runs through the guard"
    os.kill(process.pid, signal.SIGTERM)
    _, err = process.communicate(timeout=120)
    assert process.returncode == 143, err[-3000:]
    lines = [line for line in err.splitlines() if line.strip()]
    assert "Traceback" not in err and len(lines) == 1, err[-3000:]
    [run_row] = ledger(data_dir)[0]
    assert lines[0].startswith(f"error: interrupted by SIGTERM in stage cluster of run {run_row['id']}; resume")
    assert run_row["status"] == "interrupted", run_row
    assert still_running(children) == []


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """One `serve --watch` broken on purpose: a second one is started on its data dir as soon as the first holds
    it; then a watch run is triggered and, while it clusters, Ctrl-C is sent to the first one's process group."""
    base = tmp_path_factory.mktemp("served")
    watch = base / "watch"
    write_chats(watch / "chats.jsonl", 40)
    data_dir = base / "data"
    env = process_env(base / "prefect", PREFECT_RUNNER_POLL_FREQUENCY="2", **LONG_CLUSTER)
    log = (base / "serve.log").open("w+")
    command = [*chatmem_command(), "--data-dir", str(data_dir), "serve", "--cron", "0 0 1 1 *", "--watch", str(watch)]
    first = subprocess.Popen(command, stdout=log, stderr=log, env=env, start_new_session=True)
    seen: dict[str, Any] = {"data_dir": data_dir}
    try:
        wait_for("the serve lock", lambda: (data_dir / "serve.lock").exists(), 120, first)  # type: ignore[arg-type]
        seen["second"] = run(data_dir, "serve", "--cron", "0 0 1 1 *", "--watch", watch, env=env, timeout=120)

        def api_url() -> str | None:
            log.seek(0)
            found = re.search(r"Prefect API (http://127\.0\.0\.1:\d+/api)", log.read())
            return found.group(1) if found else None

        api = wait_for("the served deployment", api_url, 240, first)  # type: ignore[arg-type]
        filters = {"deployments": {"name": {"any_": ["chatmem-watch"]}}}
        [deployment] = wait_for("the deployment", lambda: _api(f"{api}/deployments/filter", filters), 60, first)  # type: ignore[arg-type]
        _api(f"{api}/deployments/{deployment['id']}/create_flow_run", {})
        wait_for("the watch run's cluster stage", lambda: _cluster_running(data_dir), 300, first)  # type: ignore[arg-type]
        seen["children"] = descendants(first.pid)
        os.killpg(first.pid, signal.SIGINT)  # what a terminal sends on Ctrl-C: the whole foreground group
        try:
            first.wait(timeout=120)
        except subprocess.TimeoutExpired:
            seen["hung"] = True
        seen["returncode"] = first.poll()
        seen["left_behind"] = still_running(seen["children"], within_s=20)
        log.seek(0)
        seen["log"] = log.read()
        yield seen
    finally:
        if first.poll() is None:
            os.killpg(first.pid, signal.SIGKILL)  # only the group this fixture started
            first.wait()


def test_a_second_serve_on_one_data_dir_refuses_in_one_line(served: dict[str, Any]) -> None:
    """Started while the first one starts its Prefect server: exit 1, one line naming the serve holding the data
    dir (no 190-line migration traceback from two servers on one database)."""
    second = served["second"]
    assert second.returncode == 1, second.stderr[-3000:]
    lines = [
        line for line in second.stderr.splitlines() if line.strip() and not line.startswith(("data dir:", "Prefect"))
    ]
    assert "Traceback" not in second.stderr and len(lines) == 1, second.stderr[-3000:]
    assert "is already served by `chatmem serve` (pid " in lines[0], lines[0]


def test_ctrl_c_during_a_scheduled_watch_run_stops_serve_and_its_server(served: dict[str, Any]) -> None:
    """One Ctrl-C to serve's group while its watch run clusters: serve ends (no ConnectError from a server that
    died first), the run is recorded interrupted, and no process is left behind (the Prefect server included)."""
    assert not served.get("hung"), served["log"][-3000:]
    assert served["returncode"] == 130, served["log"][-3000:]  # Ctrl-C's code, as for `chatmem run` (was 0)
    assert "ConnectError" not in served["log"] and "Traceback" not in served["log"], served["log"][-3000:]
    assert served["left_behind"] == [], served["log"][-3000:]
    [run_row] = ledger(served["data_dir"])[0]
    assert run_row["status"] == "interrupted", run_row
