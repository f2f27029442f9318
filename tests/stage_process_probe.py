"""A stage entry for tests/test_stage_process.py: what a stage does in its own process, told by its run id."""

from __future__ import annotations

import os
import signal
import time

from clients.stage import Outcome, StageContext
from contracts.redact import redact_text

SECRET = "sk-probe-secret-4711"


def run(ctx: StageContext) -> Outcome:
    if ctx.run_id == "die":  # as the kernel's OOM killer does it
        os.kill(os.getpid(), signal.SIGKILL)
    if ctx.run_id == "bar" and ctx.progress is not None:  # a bar drawn, then never closed: killed while it shows
        with ctx.progress("probe stage", 100) as advance:
            advance(40)
            print("bar drawn", flush=True)
            time.sleep(60)
    if ctx.run_id == "library-bar":  # a library's own bar, shown or not (UMAP's layout makes one with disable=True)
        from tqdm import tqdm

        for _ in tqdm(range(1), disable=True):
            pass
        print("bar made", flush=True)
        time.sleep(60)
    if ctx.run_id.startswith("sleep-"):
        time.sleep(float(ctx.run_id.removeprefix("sleep-")))
    return Outcome(rows_out=1, notes=[redact_text(f"the endpoint said: bad key {SECRET}")])
