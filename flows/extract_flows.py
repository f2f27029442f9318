"""Prefect flows of the segment, extract and concepts stages: wiring only, like `flows.pipeline.ingest_flow`.

Each flow opens the two databases, calls the stage's `run(...)` and returns its StageResult. The signature is
the one every stage flow shares (the pipeline passes the same keyword arguments to each); `exports`,
`force_format` and `show_progress` are accepted and unused: these stages read the archive, not export files.
"""

from __future__ import annotations

from flows.prefect_env import ensure_no_outbound

ensure_no_outbound()  # before prefect is imported, even when this module is imported on its own

from prefect import flow  # noqa: E402

from contracts.results import StageResult  # noqa: E402
from contracts.settings import Settings  # noqa: E402
from flows.stage_runner import run_stage  # noqa: E402

# persist_result=False and validate_parameters=False for the reasons given in flows/pipeline.py.


@flow(name="segment", flow_run_name="segment-{run_id}", persist_result=False, validate_parameters=False)
def segment_flow(
    settings: Settings,
    run_id: str,
    exports: list[str],
    force_format: str | None = None,
    show_progress: bool = False,
) -> StageResult:
    """Active paths in archive.db -> segments in staging.db (extract.stage_segment.run)."""
    from extract import stage_segment

    return run_stage("segment", settings, run_id, stage_segment.run)


@flow(name="extract", flow_run_name="extract-{run_id}", persist_result=False, validate_parameters=False)
def extract_flow(
    settings: Settings,
    run_id: str,
    exports: list[str],
    force_format: str | None = None,
    show_progress: bool = False,
) -> StageResult:
    """Segments -> ConceptHypothesis objects through the semantic mapper (extract.stage_extract.run)."""
    from extract import stage_extract

    return run_stage("extract", settings, run_id, stage_extract.run)


@flow(name="concepts", flow_run_name="concepts-{run_id}", persist_result=False, validate_parameters=False)
def concepts_flow(
    settings: Settings,
    run_id: str,
    exports: list[str],
    force_format: str | None = None,
    show_progress: bool = False,
) -> StageResult:
    """Hypotheses -> the concept store: create / attach / refine / reject (extract.stage_concepts.run)."""
    from extract import stage_concepts

    return run_stage("concepts", settings, run_id, stage_concepts.run)
