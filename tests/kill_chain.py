"""A `chatmem run` without Prefect, for the kill-and-compare test (tests/test_faults_kill.py): every stage but load
through the real stage runner (fingerprints, skips, the ledger), in one process that SIGKILLs itself at a chosen
point inside one stage.

    python tests/kill_chain.py DATA_DIR EXPORT                     a plain run, to the end
    python tests/kill_chain.py DATA_DIR EXPORT STAGE commit N      killed right after the Nth transaction STAGE
                                                                  commits (1 is its ledger row: 2 is its first
                                                                  batch of output)
    python tests/kill_chain.py DATA_DIR EXPORT STAGE call MOD:FN   killed as STAGE calls MOD.FN
    python tests/kill_chain.py DATA_DIR EXPORT STAGE call MOD:FN#N killed as STAGE calls MOD.FN the Nth time

The kill is a real SIGKILL of the running process, at a point chosen so that the stage has written part of its
output and not closed: what a power cut, the OOM killer or `kill -9` leaves. Prefect adds only start-up time here
(its flows wrap the same runner), so the chain runs without it.
"""

from __future__ import annotations

import importlib
import os
import signal
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from contracts.settings import Settings
from contracts.version import code_version
from flows.registry import STAGE_ORDER, spec
from flows.stage_runner import RunContext, active_run, run_stage
from staging import db
from staging.ledger import close_run, new_run_id, open_run, open_staging

STAGES = [s for s in STAGE_ORDER if s != "load"]  # the load has its own kill tests (tests/test_load_faults.py)


def main(data: str, export_arg: str, target: str | None = None, how: str = "", where: str = "") -> None:
    current: dict[str, Any] = {"stage": None, "commits": 0}

    def die() -> None:
        os.kill(os.getpid(), signal.SIGKILL)

    if how == "commit":
        after, commit = int(where), db.Transaction.__exit__

        def counted(self: db.Transaction, exc_type: Any, exc: Any, tb: Any) -> None:
            commit(self, exc_type, exc, tb)
            if exc_type is None and current["stage"] == target:
                current["commits"] += 1
                if current["commits"] == after:
                    die()

        db.Transaction.__exit__ = counted  # type: ignore[method-assign]
    elif how == "call":
        module_name, _, name = where.partition(":")
        name, _, nth = name.partition("#")
        module = importlib.import_module(module_name)
        real = getattr(module, name)
        calls = [0]

        def called(*args: Any, **kwargs: Any) -> Any:
            if current["stage"] == target:
                calls[0] += 1
                if calls[0] >= int(nth or 1):
                    die()
            return real(*args, **kwargs)

        setattr(module, name, called)
    settings = Settings(data_dir=Path(data))
    export = str(Path(export_arg).absolute())
    run_id = new_run_id()
    staging = open_staging(settings.staging_path)
    settings_dump = settings.public_dump()
    open_run(
        staging, stages=STAGES, exports=[export], settings=settings_dump, code_version=code_version(), run_id=run_id
    )
    with active_run(run_id, RunContext(settings=settings, exports=[export])):
        for stage in STAGES:
            current.update(stage=stage, commits=0)
            print(stage, run_stage(spec(stage), run_id).status, flush=True)
    close_run(staging, run_id)


if __name__ == "__main__":
    main(*sys.argv[1:])
