"""Prefect flows of the embed and cluster stages: wiring only, like `flows.pipeline.ingest_flow`.

Each flow opens the two databases, calls the stage's `run(...)` with a progress factory (texts or trials,
not bytes) and returns its StageResult. `exports` and `force_format` are accepted and unused: these stages
read staging.db and the archive, not export files.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from flows.prefect_env import ensure_no_outbound

ensure_no_outbound()  # before prefect is imported, even when this module is imported on its own

from prefect import flow  # noqa: E402

from contracts.results import StageResult  # noqa: E402
from contracts.settings import Settings  # noqa: E402
from flows.stage_runner import run_stage  # noqa: E402


@contextmanager
def count_bar(label: str, total: int) -> Iterator[Callable[[int], object]]:
    """A tqdm bar that counts items (texts, trials) on stderr."""
    from tqdm import tqdm

    with tqdm(total=total, desc=label, unit="it", file=sys.stderr, leave=False, dynamic_ncols=True) as bar:
        yield bar.update


def _run(name: str, settings: Settings, run_id: str, show_progress: bool) -> StageResult:
    if name == "embed":
        from cluster import stage_embed as stage
    else:
        from cluster import stage  # type: ignore[no-redef]
    return run_stage(name, settings, run_id, stage.run, progress=count_bar if show_progress else None)


# persist_result=False and validate_parameters=False for the reasons given in flows/pipeline.py.


@flow(name="embed", flow_run_name="embed-{run_id}", persist_result=False, validate_parameters=False)
def embed_flow(
    settings: Settings,
    run_id: str,
    exports: list[str],
    force_format: str | None = None,
    show_progress: bool = False,
) -> StageResult:
    """Segments' messages, segments and concepts -> vectors cached in staging.db (cluster.stage_embed.run)."""
    return _run("embed", settings, run_id, show_progress)


@flow(name="cluster", flow_run_name="cluster-{run_id}", persist_result=False, validate_parameters=False)
def cluster_flow(
    settings: Settings,
    run_id: str,
    exports: list[str],
    force_format: str | None = None,
    show_progress: bool = False,
) -> StageResult:
    """Segment vectors -> topics and weighted BELONGS_TO links (cluster.stage.run)."""
    return _run("cluster", settings, run_id, show_progress)
