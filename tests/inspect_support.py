"""Data dirs for the inspection tests (Datasette, frames, report), built by the real stages, once per session.

`inspected`: one run, RUN_ID, through every stage but load: ingest (a themed JSONL export with one bad line,
so the quarantine has a row), segment, embed, extract with the LLM extractor against the loopback fake server
(so llm_calls has tokens and the run has prices), concepts, garden, embed_concepts, cluster (real UMAP/HDBSCAN,
few trials) and cues.
The stages are called directly, each recording itself in the ledger as it does in the pipeline; Prefect would
only add start-up time here. `ingest_only` holds a run that only ingested.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from stage_support import ingest_stage

from contracts.concepts import ExtractionResponse
from contracts.settings import Settings
from staging.archive import open_archive
from staging.ledger import close_run, open_run, open_staging
from tests.llm_server import FakeLLMServer, Reply, quoting_responder

RUN_ID = "r20260101T120000-abc123"
INGEST_RUN_ID = "r20260101T090000-def456"
THEMES = {
    "baking": ("Sourdough baking", "project", "sourdough flour yeast oven crust dough bake bread knead starter loaf"),
    "astronomy": ("Backyard astronomy", "goal", "telescope jupiter moons orbit galaxy nebula planet saturn comet"),
    "gardening": ("Tomato garden", "entity", "tomato soil compost seedlings garden mulch prune roses watering"),
}
# every stage but load, in pipeline order (a local graph server is a JVM: the load has tests of its own)
FULL_STAGES = ("ingest", "segment", "embed", "extract", "concepts", "garden", "embed_concepts", "cluster", "cues")
SEARCH_WORD = "zanzibarian"  # in exactly one message: what the full-text search tests look for


@dataclass(frozen=True)
class Inspected:
    settings: Settings
    run_id: str
    export: Path


def themed_export(path: Path, per_theme: int = 14, seed: int = 5) -> Path:
    """Generic JSONL: two-turn conversations on three themes, one message with SEARCH_WORD, one bad line."""
    rng = random.Random(seed)
    lines = []
    for theme, (_, _, words) in THEMES.items():
        vocabulary = words.split()
        for n in range(per_theme):
            for turn in range(2):
                text = " ".join(rng.choice(vocabulary) for _ in range(12))
                if theme == "baking" and n == 0 and turn == 0:
                    text += f" like the {SEARCH_WORD} bakers do"
                message = {"conversation_id": f"{theme}-{n}", "id": f"{theme}-{n}-{turn}", "text": text}
                message |= {
                    "role": "user" if turn == 0 else "assistant",
                    "created_at": f"2025-03-{n + 1:02d}T10:0{turn}:00Z",
                }
                lines.append(json.dumps(message))
    lines.append('{"conversation_id": "broken", "role": "user"}')  # no id, no text: quarantined
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def themed_responder(body: dict[str, Any]) -> Reply:
    """One hypothesis per segment, named after its theme, citing its first message and one invented span."""
    prompt = "\n".join(str(m.get("content", "")) for m in body.get("messages") or body.get("input") or [])
    theme = next((t for t in THEMES if re.search(rf"\[{t}-\d+:", prompt)), "baking")
    title, type_, _ = THEMES[theme]
    reply = quoting_responder(title, type_)(body)
    response = ExtractionResponse.model_validate_json(reply.content or "")
    [hypothesis] = response.hypotheses
    real = hypothesis.evidence_spans[0]
    invented = real.model_copy(update={"text": "words this message never said"})  # the mapper drops it
    hypothesis.evidence_spans.append(invented)
    return Reply.valid(response)


def _settings(data_dir: Path, llm_url: str | None = None) -> Settings:
    settings = Settings(data_dir=data_dir)
    settings.cluster = settings.cluster.model_copy(update={"n_trials": 3})
    if llm_url is not None:
        llm = {"base_url": llm_url, "model": "test-model", "api_key": "sk-test", "retry_backoff_s": 0.01}
        llm |= {"input_usd_per_mtok": 1.25, "output_usd_per_mtok": 10.0}
        settings = Settings.model_validate(settings.model_dump() | {"extract": {"llm": llm}})
        settings.cluster = settings.cluster.model_copy(update={"n_trials": 3})
    return settings


def build_full(root: Path) -> Inspected:
    # imported here: conftest imports this module, and umap costs seconds to import in every test session
    from stage_support import (
        cluster_stage,
        garden_stage,
        stage_concepts,
        stage_embed,
        stage_embed_concepts,
        stage_extract,
        stage_segment,
    )
    from stage_support import cues_stage as memory_stage

    from clients.embedders import StaticMiniLM

    export = themed_export(root / "exports" / "themes.jsonl")
    server = FakeLLMServer().start()
    server.responder = themed_responder
    try:
        settings = _settings(root / "data", server.base_url)
        archive, staging = open_archive(settings.archive_path), open_staging(settings.staging_path)
        stages = list(FULL_STAGES)
        open_run(
            staging,
            stages=stages,
            exports=[str(export)],
            settings=settings.public_dump(),
            code_version="t",
            run_id=RUN_ID,
        )
        try:
            embedder = StaticMiniLM()
            common = {"run_id": RUN_ID, "settings": settings}
            ingest_stage.run(archive, staging, exports=[export], **common)
            stage_segment.run(archive, staging, **common)
            stage_embed.run(archive, staging, embedder=embedder, **common)
            stage_extract.run(archive, staging, **common)
            stage_concepts.run(archive, staging, **common)
            garden_stage.run(archive, staging, **common)
            stage_embed_concepts.run(archive, staging, embedder=embedder, **common)
            cluster_stage.run(archive, staging, embedder=embedder, **common)
            memory_stage.run(archive, staging, embedder=embedder, **common)
            close_run(staging, RUN_ID)
        finally:
            archive.close()
            staging.close()
    finally:
        server.stop()
    return Inspected(settings, RUN_ID, export)


def build_ingest_only(root: Path) -> Inspected:
    export = themed_export(root / "exports" / "themes.jsonl", per_theme=2)
    settings = _settings(root / "data")
    archive, staging = open_archive(settings.archive_path), open_staging(settings.staging_path)
    try:
        open_run(staging, stages=["ingest"], exports=[str(export)], settings={}, code_version="t", run_id=INGEST_RUN_ID)
        ingest_stage.run(archive, staging, run_id=INGEST_RUN_ID, settings=settings, exports=[export])
        close_run(staging, INGEST_RUN_ID)
    finally:
        archive.close()
        staging.close()
    return Inspected(settings, INGEST_RUN_ID, export)


@pytest.fixture(scope="session")
def inspected(tmp_path_factory: pytest.TempPathFactory) -> Inspected:
    """A data dir after one run through every stage but load (see the module docstring)."""
    return build_full(tmp_path_factory.mktemp("inspected"))


@pytest.fixture(scope="session")
def ingest_only(tmp_path_factory: pytest.TempPathFactory) -> Inspected:
    """A data dir whose only run ingested a small export."""
    return build_ingest_only(tmp_path_factory.mktemp("ingest-only"))
