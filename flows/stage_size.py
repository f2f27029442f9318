"""Whether a stage's run is large enough to be worth a process of its own (flows/stage_process.py).

    why = large_run(stage, module, ctx, settings)   # "" for a small incremental run: it stays in the runner

A process of its own gives back what a large run leaves mapped (the cluster stage's numba kernels and UMAP's
blocks, the fragmented heaps of concepts and cues: at 1M messages ~3 GiB that would lie under the load), but it
costs a start and the stage's imports again (the embedding model, WordNet): +2 to +5 s on a scheduled day at
250k messages, where each of these stages handles ~1,000 new messages and leaves little behind. So a stage
declared `own_process` gets one when its run will read a large share of the archive:
- `--force` (everything is redone), or the stage's first successful run;
- its declared settings, or chatmem's version, changed since its last successful run (most such changes rebuild);
- the stage's own guess says so: its module's `large_run(ctx, history)` (clients.stage.History: the ledger's
  successes since the stage's last) names why, from their counts and the same cheap checks the stage makes
  before its work
  (cluster: a re-tune is due; cues: the topics were fitted again, or the changes reached memory.rebuild_share;
  concepts: the extractions redone since are a large share). A stage without one always gets a process.

A guess, never a difference in what is written: the stage decides for itself what it redoes, in whichever
process. A wrong guess costs a second (a small run in a child) or memory (a large run left in the runner, e.g. a
concept store rebuilt for a prompt template found this run, which no count foresees).
"""

from __future__ import annotations

import json
from types import ModuleType
from typing import Any

from clients.stage import History, StageContext
from contracts.redact import redact
from contracts.settings import Settings
from contracts.version import code_version
from flows.fingerprint import settings_sections
from flows.registry import StageSpec
from staging.ledger import last_success, latest_successes, successes_after


def large_run(stage: StageSpec, module: ModuleType, ctx: StageContext, settings: Settings, force: bool) -> str:
    """Why this run of `stage` goes to a process of its own ('' when it stays in the runner's)."""
    if force:
        return "--force"
    last = last_success(ctx.staging, stage.name)
    if last is None:
        return "its first run"
    if _json(redact(settings_sections(settings, stage))) != _json(last.settings):
        return "its settings changed since its last run"
    if last.code_version != code_version():
        return f"{code_version()} is not the version of its last run ({last.code_version})"
    guess = getattr(module, "large_run", None)
    if guess is None:
        return "declared own_process"
    history = History(last, tuple(successes_after(ctx.staging, last.id)), latest_successes(ctx.staging))
    return str(guess(ctx, history))


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)
