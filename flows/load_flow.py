"""The Prefect flow of the load stage: wiring only, like `flows.pipeline.ingest_flow`.

It opens the two databases, calls `load.stage.run` (which finds or starts the graph server) and returns the
StageResult. The signature is the one every stage flow shares; `exports` and `force_format` are accepted and
unused: the load reads archive.db and staging.db, not export files.
"""

from __future__ import annotations

from flows.prefect_env import ensure_no_outbound

ensure_no_outbound()  # before prefect is imported, even when this module is imported on its own

from prefect import flow  # noqa: E402

from contracts.results import StageResult  # noqa: E402
from contracts.settings import Settings  # noqa: E402
from flows.progress import progress_factory  # noqa: E402
from flows.stage_runner import run_stage  # noqa: E402

# persist_result=False and validate_parameters=False for the reasons given in flows/pipeline.py.


@flow(name="load", flow_run_name="load-{run_id}", persist_result=False, validate_parameters=False)
def load_flow(
    settings: Settings,
    run_id: str,
    exports: list[str],
    force_format: str | None = None,
    show_progress: bool = False,
) -> StageResult:
    """archive.db and staging.db -> the graph over Bolt (load.stage.run)."""
    from load import stage as load_stage  # the neo4j driver loads only when the stage runs

    return run_stage("load", settings, run_id, load_stage.run, progress=progress_factory(show_progress))
