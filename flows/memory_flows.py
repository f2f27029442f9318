"""Prefect flow of the cues stage (memory.stage.run): wiring only, like `flows.cluster_flows`."""

from __future__ import annotations

from flows.prefect_env import ensure_no_outbound

ensure_no_outbound()  # before prefect is imported, even when this module is imported on its own

from prefect import flow  # noqa: E402

from contracts.results import StageResult  # noqa: E402
from contracts.settings import Settings  # noqa: E402
from flows.stage_runner import run_stage  # noqa: E402

# persist_result=False and validate_parameters=False for the reasons given in flows/pipeline.py.


@flow(name="cues", flow_run_name="cues-{run_id}", persist_result=False, validate_parameters=False)
def cues_flow(
    settings: Settings,
    run_id: str,
    exports: list[str],
    force_format: str | None = None,
    show_progress: bool = False,
) -> StageResult:
    """Messages, concepts and topics -> the Cue-Tag-Content graph in staging.db (memory.stage.run)."""
    from flows.cluster_flows import count_bar
    from memory import stage

    return run_stage("cues", settings, run_id, stage.run, progress=count_bar if show_progress else None)
