"""The stage modules as tests call them: `stage_segment.run(archive, staging, run_id=..., settings=..., **deps)`
runs the stage now through the runner's bookkeeping (flows/stage_runner.py `run_stage_now`: the ledger row,
the context with the declared settings sections only, the outcome recorded), never the module's `run` alone.
Any other attribute is the module's own (`cluster_stage._distinct_rows`, `stage_extract.make_extractor`)."""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

from contracts.results import StageResult
from flows.registry import spec
from flows.stage_runner import run_stage_now


class _Stage:
    def __init__(self, name: str) -> None:
        object.__setattr__(self, "_name", name)

    @property
    def module(self) -> ModuleType:
        return importlib.import_module(spec(object.__getattribute__(self, "_name")).entry)

    def run(self, archive: Any, staging: Any, *, run_id: str, settings: Any, **deps: Any) -> StageResult:
        return run_stage_now(
            object.__getattribute__(self, "_name"), archive, staging, run_id=run_id, settings=settings, **deps
        )

    def __getattr__(self, name: str) -> Any:
        return getattr(self.module, name)

    def __setattr__(self, name: str, value: Any) -> None:  # monkeypatch.setattr(stage, "BATCH", 3) patches the module
        setattr(self.module, name, value)

    def __delattr__(self, name: str) -> None:
        delattr(self.module, name)


ingest_stage = _Stage("ingest")
stage_segment = _Stage("segment")
stage_embed = _Stage("embed")
stage_extract = _Stage("extract")
stage_concepts = _Stage("concepts")
garden_stage = _Stage("garden")
stage_embed_concepts = _Stage("embed_concepts")
cluster_stage = _Stage("cluster")
cues_stage = _Stage("cues")
load_stage = _Stage("load")
ingest_run = ingest_stage.run
