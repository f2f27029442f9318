"""The body every stage flow shares: open the two databases, call the stage's `run(...)`, close, log.

Stage flows stay one decorated function each (Prefect shows them by name); what they do is this one call.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flows.prefect_env import ensure_no_outbound

ensure_no_outbound()  # before prefect is imported, even when this module is imported on its own

from prefect import get_run_logger  # noqa: E402

from contracts.results import StageResult  # noqa: E402
from contracts.settings import Settings  # noqa: E402
from staging.archive import open_archive  # noqa: E402
from staging.ledger import open_staging  # noqa: E402


def run_stage(
    name: str, settings: Settings, run_id: str, stage_run: Callable[..., StageResult], **deps: Any
) -> StageResult:
    """Run one stage's `run(archive, staging, *, run_id, settings, **deps)` with fresh connections."""
    logger = get_run_logger()
    logger.info("%s - run %s", name, run_id)
    archive = open_archive(settings.archive_path)
    staging = open_staging(settings.staging_path)
    try:
        result = stage_run(archive, staging, run_id=run_id, settings=settings, **deps)
    finally:
        archive.close()
        staging.close()
    logger.info("%s - %s: %s", name, result.status, result.counts)
    return result
