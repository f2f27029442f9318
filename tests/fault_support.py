"""Helpers of the fault suite (tests/test_faults_*.py): real `chatmem` processes, the ledger they write, the
processes they leave, and exports made to break things.

The processes inherit the session's Prefect environment (tests/conftest.py); each module gives them a
PREFECT_HOME of its own so that they do not queue on one SQLite file with the in-process tests.
"""

from __future__ import annotations

import json
import os
import random
import re
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil

ROOT = Path(__file__).resolve().parents[1]
WORDS = [
    *("garden", "kitchen", "python", "budget", "travel", "spanish", "lessons", "guitar", "marathon", "recipe"),
    *("sourdough", "invoice", "server", "docker", "holiday", "museum", "painting", "novel", "chapter", "tomato"),
]


def chatmem_command() -> list[str]:
    """The console script when installed, else the module."""
    script = Path(sys.executable).with_name("chatmem")
    return [str(script)] if script.exists() else [sys.executable, "-m", "flows.cli"]


def process_env(prefect_home: Path, **extra: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "PREFECT_HOME": str(prefect_home), **extra}


def start(data_dir: Path, *args: str | Path, env: dict[str, str]) -> subprocess.Popen[str]:
    """`chatmem --data-dir DATA ARGS...` as a process group of its own, as a shell runs a foreground job."""
    return subprocess.Popen(
        [*chatmem_command(), "--data-dir", str(data_dir), *map(str, args)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,
    )


def run(
    data_dir: Path, *args: str | Path, env: dict[str, str], timeout: float = 240
) -> subprocess.CompletedProcess[str]:
    command = [*chatmem_command(), "--data-dir", str(data_dir), *map(str, args)]
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=timeout)


def latest_stage_status(data_dir: Path, stage: str) -> str | None:
    """The status of the stage's latest stage run, read as `staging runs` reads it (read-only)."""
    path = data_dir / "staging.db"
    if not path.exists():
        return None
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)
        try:
            row = conn.execute(
                "SELECT status FROM stage_runs WHERE stage = ? ORDER BY id DESC LIMIT 1", (stage,)
            ).fetchone()
        finally:
            conn.close()
    except sqlite3.Error:
        return None
    return None if row is None else str(row[0])


def wait_for(what: str, check: Callable[[], Any], timeout_s: float, process: subprocess.Popen[str]) -> Any:
    """Poll until `check()` is truthy; fail with the process's output if it exits or time runs out."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        if process.poll() is not None:
            out, err = process.communicate()
            raise AssertionError(f"chatmem exited ({process.returncode}) before {what}: {out[-2000:]} {err[-2000:]}")
        time.sleep(0.25)
    process.kill()
    raise AssertionError(f"timed out waiting for {what}")


def descendants(pid: int) -> list[psutil.Process]:
    return psutil.Process(pid).children(recursive=True)


def still_running(processes: list[psutil.Process], within_s: float = 10.0) -> list[int]:
    """The pids among `processes` still alive (not zombies) after waiting up to `within_s` for them to go."""
    deadline = time.monotonic() + within_s
    while True:
        alive = [p.pid for p in processes if _alive(p)]
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.2)


def _alive(process: psutil.Process) -> bool:
    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def write_chats(path: Path, conversations: int, *, seed: int = 1) -> Path:
    """A generic-JSONL export of `conversations` six-turn chats on varied topics: enough segments (30 or more)
    for the cluster stage to do real work rather than skip."""
    rng = random.Random(seed)
    lines = []
    for c in range(conversations):
        topic = rng.sample(WORDS, 4)
        for t in range(6):
            text = " ".join(rng.choice(topic) for _ in range(30)) + f". I am working on my {topic[0]} project."
            role = "user" if t % 2 == 0 else "assistant"
            record = {"conversation_id": f"c{c}", "id": f"c{c}-{t}", "role": role, "text": text}
            lines.append(json.dumps(record | {"created_at": f"2024-05-01T10:0{t}:00Z"}))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def ledger(data_dir: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(runs, stage_runs) as stored, read-only."""
    conn = sqlite3.connect(f"file:{data_dir / 'staging.db'}?mode=ro", uri=True)
    conn.row_factory = sqlite3.Row
    try:
        runs = [dict(r) for r in conn.execute("SELECT id, status, error, pid FROM runs ORDER BY started_at")]
        stages = [dict(r) for r in conn.execute("SELECT run_id, stage, status, error FROM stage_runs ORDER BY id")]
    finally:
        conn.close()
    return runs, stages


# A run's progress on stderr (flows/stage_runner.py, flows/cli_app.py): as it starts Prefect, as each stage starts its
# work and, into a pipe, as each stage ends
PROGRESS = re.compile(
    r"^\d\d:\d\d:\d\d chatmem (?:starting: .*|\w+: started|\w+: (?:succeeded|skipped) in [\d.]+ s, \d+ rows written)$"
)


def said_lines(stderr: str) -> list[str]:
    """The lines of stderr that are not a run's progress (nor blank): what a test of "one line" counts."""
    return [line for line in stderr.splitlines() if line.strip() and not PROGRESS.match(line)]
