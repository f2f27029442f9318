"""Past one machine: embed, extract and cluster's final assignment as Prefect tasks on a Dask LocalCluster of two
workers write, row by row, what the single-process run writes (flows/batch_runner.py, clients/batches.py).

The LocalCluster's workers are threads of the test process (runner.dask_processes=false): worker processes
would each start Python, Prefect and numba (tens of seconds on a 2-core CI machine) and reach the ephemeral
Prefect API through a server they cannot share. The tasks still go through Prefect's DaskTaskRunner, the Dask
scheduler and its two workers; the jobs' pickling (what a process worker receives) is tested on its own below.
"""

from __future__ import annotations

import json
import logging
import pickle
import random
import sqlite3
from pathlib import Path

import numpy as np
import pytest
from stage_support import stage_extract

from clients.batches import map_in_process, split
from clients.embed_cache import EmbedJob
from clients.embedders import StaticMiniLM
from contracts.errors import ConfigError, StageError
from contracts.settings import ExtractSettings, LLMSettings, RunnerSettings, Settings
from extract.batch_job import ExtractJob
from staging import llm_calls
from tests import llm_guard, llm_server
from tests.llm_cases import SECRET
from tests.llm_server import FakeLLMServer, Reply, quoting_responder
from tests.test_cluster import THEMES
from tests.test_llm_stage import segmented

pytestmark = pytest.mark.prefect
fake_llm = llm_server.fake_llm
no_real_model_requests = llm_guard.no_real_model_requests  # autouse: nothing leaves the machine

STAGES = ["ingest", "segment", "embed", "extract", "cluster"]


CLUBS = {"baking": "Sourdough Club", "astronomy": "Jupiter Society", "gardening": "Rose Garden Circle"}


def _export(path: Path, per_theme: int = 8) -> Path:
    """One conversation, two turns per theme and round: theme words for the topics, a named club for the
    offline extractor to find (the user names it twice)."""
    rng = random.Random(5)
    lines = []
    for n in range(per_theme):
        for theme, words in THEMES.items():
            for turn, role in enumerate(("user", "assistant")):
                text = " ".join(rng.choice(words) for _ in range(12))
                if role == "user":
                    text = f"I joined the {CLUBS[theme]} this week: {text}. The {CLUBS[theme]} meets on Fridays."
                message = {"conversation_id": "only", "id": f"{theme}-{n}-{turn}", "role": role, "text": text}
                lines.append(json.dumps(message))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _settings(data_dir: Path, runner: RunnerSettings) -> Settings:
    """Small batches everywhere (several tasks per stage) and a final fit on 30 points (the rest are placed)."""
    settings = Settings(data_dir=data_dir, runner=runner)
    settings.segment = settings.segment.model_copy(update={"max_tokens": 40, "min_tokens": 0})
    settings.embed = settings.embed.model_copy(update={"write_batch": 7})
    settings.extract = settings.extract.model_copy(update={"batch_size": 20})
    settings.cluster = settings.cluster.model_copy(update={"n_trials": 3, "min_points": 10, "fit_max": 30})
    return settings


def _rows(settings: Settings, sql: str) -> list[tuple[object, ...]]:
    with sqlite3.connect(settings.staging_path) as conn:
        return conn.execute(sql).fetchall()


class _Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


@pytest.mark.slow
def test_dask_run_writes_what_the_local_run_writes(tmp_path: Path) -> None:
    """Vectors (bit for bit), extractions and topic links are identical row by row; every heavy stage ran tasks."""
    from flows.pipeline import run_pipeline

    export = _export(tmp_path / "one.jsonl")
    local = _settings(tmp_path / "local", RunnerSettings(local_workers=1))  # the single-process run
    dask = _settings(
        tmp_path / "dask", RunnerSettings(task_runner="dask", dask_workers=2, dask_processes=False, extract_batch=3)
    )
    _, local_results = run_pipeline(local, [export], STAGES, quiet=True)
    logger, lines = logging.getLogger("flows.batch_runner"), _Lines()
    level = logger.level
    logger.addHandler(lines)
    logger.setLevel(logging.INFO)
    try:
        _, dask_results = run_pipeline(dask, [export], STAGES, quiet=True)
    finally:
        logger.removeHandler(lines)
        logger.setLevel(level)
    assert [r.status for r in dask_results] == [r.status for r in local_results] == ["succeeded"] * 5
    submitted = [line for line in lines.lines if "submitted to Dask" in line]
    assert {m.split(" - ")[0] for m in submitted} == {"embed", "extract", "cluster"}
    assert any(m.startswith("extract - 7 batch(es)") for m in submitted)  # 20 segments a round, 3 a task

    vectors = "SELECT model, content_hash, dim, vector FROM embeddings ORDER BY model, content_hash"
    assert len(_rows(local, vectors)) > 40
    assert _rows(dask, vectors) == _rows(local, vectors)
    items = "SELECT kind, item_id, model, content_hash FROM embedding_items ORDER BY kind, item_id"
    assert _rows(dask, items) == _rows(local, items)
    extracted = (
        "SELECT cache_key, segment_id, status, hypotheses, hypotheses_kept, reason FROM extractions ORDER BY cache_key"
    )
    assert any(row[3] != "[]" for row in _rows(local, extracted))  # concepts were found, not only empty answers
    assert _rows(dask, extracted) == _rows(local, extracted)
    decisions = "SELECT cache_key, ordinal, hypothesis, field, rule, before, after FROM mapper_decisions ORDER BY 1, 2"
    assert _rows(dask, decisions) == _rows(local, decisions)
    links = "SELECT kind, item_id, topic, topic_uid, weight, source FROM topic_links ORDER BY kind, item_id"
    local_links = _rows(local, links)
    assert "predicted" in {row[5] for row in local_links}  # points beyond fit_max went through the batches
    assert _rows(dask, links) == local_links


def test_embed_job_pickles_without_the_model_and_rebuilds_it_on_a_worker() -> None:
    """A pickled EmbedJob carries settings, not the loaded model, and the worker's vectors are the same."""
    settings = Settings().embed
    embedder = StaticMiniLM()
    job = EmbedJob(settings, embedder, batch_size=4)
    texts = ["sourdough starter", "jupiter's moons", "compost and mulch"]
    shipped = pickle.loads(pickle.dumps(job))
    assert shipped.embedder is None and shipped.key == embedder.key
    assert np.array_equal(shipped(texts), job(texts))


def test_extract_job_never_ships_an_api_key_and_a_worker_without_it_refuses(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The LLM key and URL credentials are dropped when pickled; a worker reads them from its own CHATMEM_*
    environment, and one whose settings differ refuses with a ConfigError naming the fix."""
    llm = LLMSettings(model="m", base_url="http://u:url-secret-1@127.0.0.1:9/v1", api_key="sk-secret-2")
    job = ExtractJob(ExtractSettings(llm=llm), {}, ("prompt",))
    for name in ("CHATMEM_EXTRACT__LLM__MODEL", "CHATMEM_EXTRACT__LLM__BASE_URL", "CHATMEM_EXTRACT__LLM__API_KEY"):
        monkeypatch.delenv(name, raising=False)
    data = pickle.dumps(job)
    assert b"url-secret-1" not in data and b"sk-secret-2" not in data
    with pytest.raises(ConfigError, match="same CHATMEM_"):
        pickle.loads(data)
    monkeypatch.setenv("CHATMEM_EXTRACT__LLM__MODEL", "m")
    monkeypatch.setenv("CHATMEM_EXTRACT__LLM__BASE_URL", "http://u:url-secret-1@127.0.0.1:9/v1")
    monkeypatch.setenv("CHATMEM_EXTRACT__LLM__API_KEY", "sk-secret-2")
    restored = pickle.loads(data)
    assert restored.settings.llm is not None and restored.settings.llm.api_key.get_secret_value() == "sk-secret-2"


def test_in_process_map_keeps_batch_order() -> None:
    """The default runner yields each batch's result in batch order; split cuts consecutive batches."""
    batches = split(list(range(10)), 4)
    assert [list(b) for b in batches] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert list(map_in_process(sum, batches)) == [6, 22, 17]
    with pytest.raises(ValueError):
        split([1], 0)


def test_llm_extraction_through_batches_stages_what_the_streaming_path_stages(
    fake_llm: FakeLLMServer, tmp_path: Path
) -> None:
    """The LLM extractor's segments sent as batch jobs (two segments a job) give the same extractions, one call
    recorded per segment, and no secret in staging, as the default in-stage path."""
    fake_llm.responder = quoting_responder()
    staged = []
    for name, batches in (("streaming", None), ("batched", map_in_process)):
        dbs, run_id = segmented(tmp_path / name, fake_llm)
        dbs.settings.runner = RunnerSettings(extract_batch=2)
        result = stage_extract.run(dbs.archive, dbs.staging, run_id=run_id, settings=dbs.settings, map_batches=batches)
        assert result.counts["extracted"] == 3 and result.counts["hypotheses_kept"] == 3
        calls = llm_calls.calls(dbs.staging, run_id)
        assert [c["status"] for c in calls] == ["ok"] * 3
        assert SECRET not in "\n".join(dbs.staging.iterdump())
        staged.append(
            dbs.staging.execute(
                "SELECT cache_key, segment_id, status, hypotheses FROM extractions ORDER BY cache_key"
            ).fetchall()
        )
    assert len(fake_llm.model_requests()) == 6
    assert staged[0] == staged[1]


def test_a_refused_key_stops_the_batch_jobs_from_sending(fake_llm: FakeLLMServer, tmp_path: Path) -> None:
    """Through batch jobs (one segment a job, as on Dask workers): after the endpoint refuses the key (401) the
    other jobs send nothing (the worker's client remembers it: clients.llm.REFUSED); their segments are left
    not done, saying why and what to do, and the stage's error names the one refused request."""
    fake_llm.responder = lambda body: Reply.fail(401)
    dbs, run_id = segmented(tmp_path, fake_llm, max_concurrency=1, max_retries=0)
    dbs.settings.runner = RunnerSettings(task_runner="dask", extract_batch=1)  # Spread, as on Dask workers
    with pytest.raises(StageError, match="1 segment failed of 3"):
        stage_extract.run(dbs.archive, dbs.staging, run_id=run_id, settings=dbs.settings, map_batches=map_in_process)
    assert len(fake_llm.model_requests()) == 1
    assert [c["status"] for c in llm_calls.calls(dbs.staging, run_id)] == ["error"]
    reasons = [r for (r,) in dbs.staging.execute("SELECT reason FROM extractions WHERE reason LIKE 'not done:%'")]
    assert len(reasons) == 2 and all(f"{fake_llm.base_url} refused the API key (HTTP 401" in r for r in reasons)
    assert all(r.endswith("fix the key and run again") for r in reasons)
    assert dbs.staging.execute("SELECT COUNT(*) FROM extractions WHERE status = 'ok'").fetchone()[0] == 0
