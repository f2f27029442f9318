"""Adding a stage: one registry entry (a StageSpec) and one module whose `run(ctx) -> Outcome` does the work,
nothing else. Run through the real runner (flows/stage_runner.py), the new stage is skipped on an unchanged
re-run, re-run when a setting it declares changes, recorded failed with its error when it raises, and
interrupted cleanly by Ctrl-C (a real SIGINT), like every built-in stage."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
from contextlib import closing
from pathlib import Path

import pytest

import extract
from contracts.errors import StageError
from contracts.settings import Settings
from flows import registry
from flows.registry import StageSpec, spec
from flows.stage_runner import RunContext, active_run, run_stage
from staging.ledger import open_run, open_staging
from tests.conftest import write_jsonl

ROOT = Path(__file__).resolve().parents[1]

TOY_MODULE = '''
"""The toy stage: how many archive messages would not fit one segment's token budget alone."""

import os
import signal
import time

from clients.stage import Outcome, StageContext


def run(ctx: StageContext) -> Outcome:
    budget = ctx.settings.segment.max_tokens
    if budget == 302:
        raise ValueError("a budget of 302 is unlucky")
    if budget == 303:
        os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C, as a terminal sends it
        time.sleep(30)
    texts = [str(r[0]) for r in ctx.archive.execute("SELECT text FROM messages")]
    long = sum(len(t) // 4 > budget for t in texts)
    return Outcome(rows_in=len(texts), counts={"messages": len(texts), "over_budget": long})
'''

# Where docs/architecture.md puts it: inside a stage package (extract/stage_toy.py), which the installed `chatmem`
# can import; the test adds its temporary folder to the package's path rather than write into the source tree.
TOY = StageSpec(
    "toy",
    "extract.stage_toy",
    reads=("archive",),
    settings_sections=("segment",),
    description="Archive messages -> how many would not fit one segment alone.",
)


def _run(settings: Settings, stage: StageSpec, exports: list[str] | None = None) -> tuple[str, object]:
    with closing(open_staging(settings.staging_path)) as staging:
        run_id = open_run(staging, stages=[stage.name], exports=exports or [], settings={}, code_version="t")
    with active_run(run_id, RunContext(settings=settings, exports=exports or [])):
        return run_id, run_stage(stage, run_id)


def _row(settings: Settings, run_id: str) -> tuple[str, str | None, str | None]:
    with sqlite3.connect(settings.staging_path) as conn:
        row = conn.execute(
            "SELECT status, error, rerun_hint FROM stage_runs WHERE run_id = ? AND stage = 'toy'", (run_id,)
        ).fetchone()
    return row[0], row[1], row[2]


def test_an_added_stage_is_skipped_rerun_failed_and_interrupted_like_the_others(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "modules").mkdir()
    (tmp_path / "modules" / "stage_toy.py").write_text(textwrap.dedent(TOY_MODULE))
    monkeypatch.setattr(extract, "__path__", [*extract.__path__, str(tmp_path / "modules")])
    monkeypatch.setitem(registry._BY_NAME, "toy", TOY)
    registry.check_entries(["toy"])  # where the doc puts it, the entry passes the check before Prefect
    settings = Settings(data_dir=tmp_path / "data", segment={"max_tokens": 300})
    settings.data_dir.mkdir()
    export = str(write_jsonl(tmp_path / "notes.jsonl"))
    _run(settings, spec("ingest"), [export])

    first, result = _run(settings, TOY)
    assert (result.status, result.counts) == ("succeeded", {"messages": 6, "over_budget": 0})  # type: ignore[attr-defined]

    _, again = _run(settings, TOY)
    assert again.status == "skipped" and f"unchanged since run {first}" in again.notes[0]  # type: ignore[attr-defined]

    retuned = settings.model_copy(update={"segment": settings.segment.model_copy(update={"max_tokens": 301})})
    _, rerun = _run(retuned, TOY)
    assert rerun.status == "succeeded"  # type: ignore[attr-defined]
    untouched = settings.model_copy(update={"embed": settings.embed.model_copy(update={"batch_size": 7})})
    assert _run(untouched, TOY)[1].status == "succeeded"  # type: ignore[attr-defined]  # 300 again: changed since
    assert _run(untouched, TOY)[1].status == "skipped"  # type: ignore[attr-defined]  # embed: not its section

    failing = settings.model_copy(update={"segment": settings.segment.model_copy(update={"max_tokens": 302})})
    with pytest.raises(StageError, match="ValueError: a budget of 302 is unlucky") as raised:
        _run(failing, TOY)
    failed_run = raised.value.run_id
    assert _row(settings, failed_run) == (
        "failed",
        "ValueError: a budget of 302 is unlucky",
        f"chatmem stage toy --run-id {failed_run}",
    )

    stopped = settings.model_copy(update={"segment": settings.segment.model_copy(update={"max_tokens": 303})})
    # Python's own Ctrl-C handler, as in a terminal: a test process started in the background (`cmd &` in a
    # script) inherits SIGINT ignored, and Python then installs no handler of its own
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            _run(stopped, TOY)
    finally:
        signal.signal(signal.SIGINT, previous)
    with sqlite3.connect(settings.staging_path) as conn:
        status, error = conn.execute(
            "SELECT status, error FROM stage_runs WHERE stage = 'toy' ORDER BY id DESC LIMIT 1"
        ).fetchone()
    assert status == "interrupted" and error.startswith("interrupted")

    _, after = _run(settings, TOY)  # nothing matches a failed or interrupted latest attempt: it runs
    assert after.status == "succeeded"  # type: ignore[attr-defined]


# A user's edit of flows/registry.py as the doc showed it before: a top-level module, which the installed
# `chatmem` cannot import (the editable install maps only the packages pyproject.toml lists).
TOP_LEVEL_ENTRY = """
import sys
from flows import registry
from flows.cli import main

toy = registry.StageSpec("toy", "toy_stage", reads=("archive",), settings_sections=("segment",), description="t")
registry.STAGES = (*registry.STAGES, toy)
registry._BY_NAME["toy"] = toy
registry.STAGE_ORDER = (*registry.STAGE_ORDER, "toy")
sys.argv = ["chatmem", *sys.argv[1:]]
main()
"""


def test_an_entry_that_cannot_be_imported_is_one_line_before_prefect_starts(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    export = write_jsonl(tmp_path / "notes.jsonl")
    (tmp_path / "toy_stage.py").write_text(textwrap.dedent(TOY_MODULE))  # beside the data, not in a stage package
    env = {k: v for k, v in os.environ.items() if k not in ("PREFECT_HOME", "PYTHONPATH")}
    result = subprocess.run(
        [sys.executable, "-c", TOP_LEVEL_ENTRY, "--data-dir", str(data_dir), "run", "--only", "toy", str(export)],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT / "docs",  # not the repository root (on sys.path for `python -c`): as the console script runs
        timeout=120,
    )
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip().splitlines() == [
        "error: stage 'toy': its entry 'toy_stage' (flows/registry.py) cannot be imported: 'toy_stage' is not one"
        " of the stage packages (ingest, extract, cluster, load, garden, memory); put the module inside a stage"
        " package and name it there, e.g. 'extract.stage_toy' for extract/stage_toy.py (docs/architecture.md,"
        " Adding a stage)"
    ]
    assert not (data_dir / "prefect").exists() and not (data_dir / "staging.db").exists()
