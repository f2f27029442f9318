"""Both cores: embed's and extract's batches on local worker processes (clients/process_batches.py) return in
batch order, ship their job once, leave no worker behind a killed run, and write, row by row, what one process
writes (on small real exports)."""

from __future__ import annotations

import json
import logging
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from clients.batches import MapBatches, map_in_process
from clients.process_batches import ProcessBatches, process_batches, worker_count
from contracts.settings import RunnerSettings, Settings
from tests.fact_cases import CASES

ROOT = Path(__file__).resolve().parents[1]
SHARED_CHATGPT = ROOT.parent / "shared" / "data" / "exports" / "chatgpt"
REAL_EXPORTS = [
    ROOT / "tests" / "fixtures" / "exports" / "chatgpt" / "chatgpt2graph" / "conversations.json",
    SHARED_CHATGPT / "rainchinchao" / "conversations.json",
    SHARED_CHATGPT / "spark-first" / "conversations.json",
]


class Scaled:
    """A job: each number of the batch times `factor`; the first batch is the slowest to finish."""

    pickled = 0  # times a Scaled was pickled, in this process

    def __init__(self, factor: int) -> None:
        self.factor = factor

    def __call__(self, batch: Sequence[int]) -> list[int]:
        if 0 in batch:
            raise ValueError(f"batch {list(batch)} holds a zero")
        if batch and batch[0] == 1:
            time.sleep(0.3)  # later batches finish first on the other worker
        return [n * self.factor for n in batch]

    def __getstate__(self) -> dict[str, Any]:
        Scaled.pickled += 1
        return {"factor": self.factor}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.factor = state["factor"]


def worker_pid(batch: object) -> int:
    """A job: the id of the process that ran the batch (it waits a little, so both workers get one)."""
    time.sleep(0.5)
    return os.getpid()


@pytest.fixture(scope="module")
def pool() -> Iterator[MapBatches]:
    with process_batches(2) as map_batches:
        yield map_batches


def test_results_come_back_in_batch_order_as_in_process(pool: MapBatches) -> None:
    """Two workers, a slow first batch: the results are the in-process ones, in batch order."""
    assert isinstance(pool, ProcessBatches)
    batches = [[1, 2], [3], [4, 5, 6], [7], [8, 9]]
    assert list(pool(Scaled(3), batches)) == list(map_in_process(Scaled(3), batches)) == [
        [3, 6], [9], [12, 15, 18], [21], [24, 27]
    ]  # fmt: skip


def test_a_job_is_pickled_once_per_job_not_once_per_batch(pool: MapBatches) -> None:
    """Ten batches, then ten more with the same job: the job was pickled once; a new job is pickled again."""
    Scaled.pickled = 0
    job = Scaled(2)
    assert list(pool(job, [[n] for n in range(1, 11)])) == [[2 * n] for n in range(1, 11)]
    assert list(pool(job, [[n] for n in range(11, 21)])) == [[2 * n] for n in range(11, 21)]
    assert Scaled.pickled == 1
    assert list(pool(Scaled(5), [[1], [2]])) == [[5], [10]]
    assert Scaled.pickled == 2


def test_a_single_batch_runs_in_the_stage_process(pool: MapBatches) -> None:
    """One batch has nothing to share with another core: it runs here, and its job is not pickled."""
    Scaled.pickled = 0
    assert list(pool(worker_pid, [0])) == [os.getpid()]
    assert list(pool(Scaled(4), [[2]])) == [[8]] and Scaled.pickled == 0


def test_a_failing_batch_raises_its_error_in_the_stage(pool: MapBatches) -> None:
    """A batch's exception reaches the caller as it would in-process, with its message."""
    with pytest.raises(ValueError, match=r"batch \[0, 4\] holds a zero"):
        list(pool(Scaled(1), [[1], [0, 4], [5]]))


def test_one_worker_means_the_stage_process_itself() -> None:
    """workers=1 runs the batches in-process (no pool); 0 means one per core."""
    with process_batches(1) as map_batches:
        assert map_batches is map_in_process
    assert worker_count(1) == 1 and worker_count(3) == 3
    assert worker_count(0) == (os.cpu_count() or 1)


def _alive(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    return "\nState:\tZ" not in status  # a zombie has exited (nobody reaped it yet)


def test_workers_exit_when_the_run_is_killed(tmp_path: Path) -> None:
    """Workers ignore SIGINT; after kill -9 of the process that owns the pool they exit on their own within seconds."""
    script = (
        "import sys, time\n"
        "from clients.process_batches import process_batches\n"
        "from tests.test_process_batches import worker_pid\n"
        "with process_batches(2) as pool:\n"
        "    print(' '.join(str(p) for p in set(pool(worker_pid, [0, 1, 2, 3]))), flush=True)\n"
        "    time.sleep(120)\n"
    )
    run = subprocess.Popen([sys.executable, "-c", script], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        assert run.stdout is not None
        pids = [int(p) for p in run.stdout.readline().split()]
        assert pids and all(_alive(p) for p in pids)
        for pid in pids:  # Ctrl-C reaches the whole process group: the workers leave it to the stage process
            os.kill(pid, signal.SIGINT)
        time.sleep(1)
        assert all(_alive(p) for p in pids), "a worker died of SIGINT"
        os.kill(run.pid, signal.SIGKILL)
        run.wait(timeout=10)
        deadline = time.monotonic() + 10
        while any(_alive(p) for p in pids) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not [p for p in pids if _alive(p)], "a worker outlived the killed run"
    finally:
        run.kill()


def _settings(data_dir: Path, workers: int) -> Settings:
    """Small batches: several embed and extract tasks per stage batch, several stage batches in flight."""
    settings = Settings(data_dir=data_dir, runner=RunnerSettings(local_workers=workers, extract_batch=2))
    settings.embed = settings.embed.model_copy(update={"write_batch": 9})
    settings.extract = settings.extract.model_copy(update={"batch_size": 5})
    return settings


TABLES = {
    "embeddings": "SELECT model, content_hash, dim, vector FROM embeddings ORDER BY 1, 2",
    "embedding_items": "SELECT kind, item_id, model, content_hash FROM embedding_items ORDER BY 1, 2, 3",
    "embedded_segments": "SELECT * FROM embedded_segments ORDER BY 1, 2",
    "extractions": "SELECT cache_key, segment_id, status, hypotheses, hypotheses_proposed, hypotheses_kept, reason,"
    " raw_response FROM extractions ORDER BY cache_key",
    "mapper_decisions": "SELECT cache_key, ordinal, segment_id, hypothesis, field, rule, before, after"
    " FROM mapper_decisions ORDER BY 1, 2",
    "fact_mentions": "SELECT * FROM fact_mentions ORDER BY 1, 2",
    "segment_extractions": "SELECT segment_id, cache_key FROM segment_extractions ORDER BY 1",
}


def _rows(settings: Settings, table: str) -> list[tuple[object, ...]]:
    with sqlite3.connect(settings.staging_path) as conn:
        columns = [c[1] for c in conn.execute(f"PRAGMA table_info({table})")]
        sql = TABLES[table]
        if sql.startswith("SELECT *"):  # every column but the run's id (two runs, two ids)
            sql = sql.replace("*", ", ".join(c for c in columns if c != "run_id"), 1)
        return conn.execute(sql).fetchall()


def _fact_export(path: Path) -> Path:
    """The fact cases' user messages as a JSONL export: the real exports state few first-person facts."""
    lines = []
    for case in CASES:
        for n, (day, text) in enumerate(case.messages):
            message = {"conversation_id": case.name, "id": f"{case.name}-{n}", "role": "user", "text": text}
            lines.append(json.dumps(message | {"created_at": f"{day}T09:00:00Z"}))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


class _Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


@pytest.mark.prefect
@pytest.mark.slow
def test_two_workers_write_what_one_process_writes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Real exports through ingest..extract with 1 and 2 local workers: vectors bit for bit, extractions,
    mapper decisions, fact mentions, current pointers and counts identical; both stages used the pool."""
    from flows.pipeline import run_pipeline

    # embed chunks of ~60 messages: the next chunk starts before the current one is written, and texts repeated
    # across chunks (greetings, "Thanks!") must count and embed as they do one chunk after another
    monkeypatch.setattr("cluster.stage_embed.CHUNK_MESSAGES", 60)

    if not SHARED_CHATGPT.is_dir():
        pytest.skip("../shared/data is absent: its real exports are read in place, not copied")
    exports = [*REAL_EXPORTS, _fact_export(tmp_path / "facts.jsonl")]
    stages = ["ingest", "segment", "embed", "extract"]
    one, two = _settings(tmp_path / "one", 1), _settings(tmp_path / "two", 2)
    _, one_results = run_pipeline(one, exports, stages, quiet=True)
    logger, lines = logging.getLogger("clients.process_batches"), _Lines()
    level = logger.level
    logger.addHandler(lines)
    logger.setLevel(logging.INFO)
    try:
        _, two_results = run_pipeline(two, exports, stages, quiet=True)
    finally:
        logger.removeHandler(lines)
        logger.setLevel(level)
    assert [r.status for r in two_results] == [r.status for r in one_results] == ["succeeded"] * 4
    assert lines.lines.count("batches run on 2 local worker processes") == 2  # embed and extract
    extract = one_results[3].counts
    assert extract["extractor_calls"] > 10 and extract["hypotheses_kept"] > 0  # several stage batches, real finds
    assert two_results[3].counts == extract and two_results[2].counts == one_results[2].counts
    for table in TABLES:
        rows = _rows(one, table)
        # The offline extractor v2 cites only spans the mapper takes as they are: on these exports it may leave no
        # decision to record; every other table must hold rows, or nothing was compared.
        assert rows or table == "mapper_decisions", f"{table} is empty: nothing was compared"
        assert _rows(two, table) == rows, f"{table} differs with two workers"
