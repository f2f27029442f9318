"""Whether a stage's run is large enough to be worth a process of its own (flows/stage_process.py).

    why = large_run(stage, module, ctx, settings, force)   # "" for a small incremental run: it stays in the runner

A process of its own gives back what a large run leaves mapped (the cluster stage's numba kernels and UMAP's
blocks, the fragmented heaps of concepts and cues: at 1M messages ~3 GiB that would lie under the load), but it
costs a start and the stage's imports again (the embedding model, WordNet: ~1 s of CPU for the three stages) on
a scheduled day, where each of them handles ~1,000 new messages and leaves little behind. So a stage declared
`own_process` gets one when its run will read a large share of the archive:
- `--force` (everything is redone), or the stage's first successful run;
- its declared settings, or chatmem's version, changed since its last successful run (most such changes rebuild);
- a run of it or of a stage before it stopped part-way since its last success (failed, interrupted, killed):
  what that run wrote, the counts do not say;
- the stage's own guess says so: its module's `large_run(ctx, history)` (clients.stage.History: the ledger's
  stage runs since the stage's last success) names why, from their counts, the data and the cheap checks the
  stage makes before its work (cluster: a re-tune is due; cues: the topics were fitted again, or the changes
  reached memory.rebuild_share; concepts: the extractions redone since are a large share). A stage without one
  always gets a process, and so does a guess that fails.

A guess, never a difference in what is written: the stage decides for itself what it redoes, in whichever
process. A wrong guess costs a second (a small run in a child) or memory (a large run left in the runner).

Before all of these: an archive of fewer current segments than cluster.min_points (the segment stage's latest
count; a handful of conversations) stays in the runner, first run or --force alike. No stage holds much for so
few (the cluster stage does not even import UMAP below that size), and the children's starts and imports were
most of a tiny export's stage time: session 38's cold try saw 2 conversations take 50 s, concepts, cluster and
cues a process each (measured in benchmarks/RESULTS.md, session 39).
"""

from __future__ import annotations

import json
import logging
from types import ModuleType
from typing import Any

from clients.stage import History, StageContext
from contracts.redact import redact
from contracts.settings import Settings
from contracts.version import code_version
from flows.fingerprint import settings_sections
from flows.registry import STAGE_ORDER, StageSpec
from staging.ledger import last_success, latest_successes, records_after

log = logging.getLogger(__name__)

STOPPED = ("failed", "interrupted", "running")  # a stage run that did not finish its work (running: killed)


def large_run(stage: StageSpec, module: ModuleType, ctx: StageContext, settings: Settings, force: bool) -> str:
    """Why this run of `stage` goes to a process of its own ('' when it stays in the runner's)."""
    try:
        if _tiny(ctx, settings):
            return ""
        if force:
            return "--force"
        return _guess(stage, module, ctx, settings)
    except Exception as error:  # a guess must never fail the stage: the safe side is a process of its own
        log.warning("%s: guessing the run's size failed (%s: %s)", stage.name, type(error).__name__, error)
        return f"its size could not be guessed ({type(error).__name__})"


def _tiny(ctx: StageContext, settings: Settings) -> bool:
    """Fewer current segments than cluster.min_points, as the segment stage last counted them (0: not counted yet,
    or nothing there: not called tiny, the rules below decide)."""
    segmented = last_success(ctx.staging, "segment")
    current = int(segmented.counts.get("segments_current", 0)) if segmented is not None else 0
    return 0 < current < settings.cluster.min_points


def _guess(stage: StageSpec, module: ModuleType, ctx: StageContext, settings: Settings) -> str:
    last = last_success(ctx.staging, stage.name)
    if last is None:
        return "its first run"
    if _json(redact(settings_sections(settings, stage))) != _json(last.settings):
        return "its settings changed since its last run"
    if last.code_version != code_version():
        return f"{code_version()} is not the version of its last run ({last.code_version})"
    since = tuple(records_after(ctx.staging, last.id))
    upstream = STAGE_ORDER[: STAGE_ORDER.index(stage.name) + 1]
    for record in since:
        if record.status in STOPPED and record.stage in upstream and record.id != ctx.stage_run_id:
            return f"a run of {record.stage} stopped part-way since its last run ({record.run_id}: {record.status})"
    guess = getattr(module, "large_run", None)
    if guess is None:
        return "declared own_process"
    return str(guess(ctx, History(last, since, latest_successes(ctx.staging))))


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)
