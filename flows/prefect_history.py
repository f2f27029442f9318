"""Prefect's record of old flow runs, pruned after each run: the data dir grows with the data, not the runs.

Each `chatmem run` leaves a dozen flow runs (the pipeline, one per stage, their task runs and states) in
Prefect's database under the data dir: about 0.29 MB per run measured over a month of daily runs
(benchmarks/bench_month.py), never removed. Prefect's own flow-run vacuum is off by default and is not a service
of the ephemeral API that `chatmem run` and `chatmem serve --once` use, so chatmem removes its own: at the end of
a run, the flow runs of chatmem's flows that started more than `pipeline.prefect_history_days` ago are deleted
through the API (their task runs and states go with them). The ledger in staging.db keeps every run's record
whatever Prefect keeps. A Prefect server of the user's own (PREFECT_API_URL set) is left alone: its retention is
its owner's setting.
"""

from __future__ import annotations

import logging
import os
from datetime import UTC, datetime, timedelta

from flows.prefect_env import ensure_no_outbound

ensure_no_outbound()  # before prefect is imported

from prefect import get_client  # noqa: E402
from prefect.client.schemas.filters import (  # noqa: E402
    FlowFilter,
    FlowFilterName,
    FlowRunFilter,
    FlowRunFilterStartTime,
)

from flows.registry import STAGE_ORDER  # noqa: E402

log = logging.getLogger(__name__)

FLOW_NAMES = ("chatmem-pipeline", "chatmem-watch", *STAGE_ORDER)
PAGE = 200


def prune_flow_runs(keep_days: float, now: datetime | None = None) -> int:
    """Delete chatmem's flow runs that started before `now - keep_days` (now: the current time); returns how many.
    Nothing is deleted on a Prefect server of the user's own (PREFECT_API_URL set)."""
    if os.environ.get("PREFECT_API_URL"):
        return 0
    cutoff = (now or datetime.now(UTC)) - timedelta(days=keep_days)
    deleted = 0
    with get_client(sync_client=True) as client:
        while True:
            old = client.read_flow_runs(
                flow_filter=FlowFilter(name=FlowFilterName(any_=list(FLOW_NAMES))),
                flow_run_filter=FlowRunFilter(start_time=FlowRunFilterStartTime(before_=cutoff)),
                limit=PAGE,
            )
            for flow_run in old:
                client.delete_flow_run(flow_run.id)
            deleted += len(old)
            if len(old) < PAGE:
                return deleted


def prune_quietly(keep_days: float) -> None:
    """`prune_flow_runs`, never failing a finished run: a failure is a warning (the next run tries again)."""
    try:
        deleted = prune_flow_runs(keep_days)
    except Exception as exc:  # Prefect's client raises its own and httpx's errors: none may fail a finished run
        log.warning("Prefect's old flow runs were not pruned (the next run tries again): %s", exc)
        return
    if deleted:
        log.info("pruned %d Prefect flow run(s) older than %g day(s)", deleted, keep_days)
