"""What `chatmem report` shows about one run, read from staging.db and archive.db (read-only, pure queries).

`gather` returns one plain dict per report section; a section whose tables do not exist yet (a data dir that
has only ingested) comes back empty, and the page says so instead of failing. Tables are looked up by name
before they are queried, because each stage creates its own tables when it first runs.
"""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from collections.abc import Sequence
from typing import Any

from contracts.errors import ChatmemError, ConfigError
from staging import topics as topic_store

Row = dict[str, Any]
# Tables of recall figures per run, should a stage ever store them (`chatmem eval recall` prints its figures and
# keeps none today); the section also shows the memory graph recall reads (memory_runs: counts, not messages).
RECALL_PREFIX = "recall"


def _tables(conn: sqlite3.Connection | None) -> set[str]:
    if conn is None:
        return set()
    return {str(r[0]) for r in conn.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}


def _rows(conn: sqlite3.Connection, sql: str, params: tuple[Any, ...] = ()) -> list[Row]:
    cursor = conn.execute(sql, params)
    names = [c[0] for c in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor]


def pick_run(staging: sqlite3.Connection, run_id: str | None) -> Row:
    """The run to report on (the newest when none is named); ChatmemError when there is none."""
    if run_id is None:
        found = _rows(staging, "SELECT * FROM runs ORDER BY started_at DESC, id DESC LIMIT 1")
    else:
        found = _rows(staging, "SELECT * FROM runs WHERE id = ?", (run_id,))
    if not found and run_id:  # a bad argument: exit 2, as every other command's unknown --run-id
        raise ConfigError(f"unknown run id {run_id!r}; list runs with: chatmem staging runs")
    if not found:
        raise ChatmemError("no run yet: run `chatmem run EXPORT` first")
    run = found[0]
    for name in ("stages", "exports", "settings"):
        run[name] = json.loads(run[name]) if run[name] else None
    return run


def timeline(staging: sqlite3.Connection, run_id: str) -> list[Row]:
    """Every stage run of the run in order, with counts decoded and notes split."""
    rows = _rows(
        staging,
        "SELECT id, stage, status, started_at, finished_at, duration_s, rows_in, rows_out, counts, notes, error,"
        " rerun_hint FROM stage_runs WHERE run_id = ? ORDER BY id",
        (run_id,),
    )
    for row in rows:
        row["counts"] = json.loads(row["counts"]) if row["counts"] else {}
        row["notes"] = row["notes"].split("\n") if row["notes"] else []
    return rows


def skipped(run: Row, stages: list[Row], stage_order: Sequence[str]) -> list[Row]:
    """Stages that did not do their work: skipped (with why), asked for but never run, or not asked for.

    `stage_order` is the pipeline's (flows.registry.STAGE_ORDER): the registry lives above this layer."""
    latest = {s["stage"]: s for s in stages}
    asked = set(run["stages"] or [])
    out: list[Row] = []
    for stage in stage_order:
        row = latest.get(stage)
        if row is not None and row["status"] == "skipped":
            out.append({"stage": stage, "why": "; ".join(row["notes"]) or "skipped by the stage"})
        elif row is None and stage in asked:
            out.append({"stage": stage, "why": "asked for but not run (an earlier stage failed, or the run stopped)"})
        elif row is None:
            out.append({"stage": stage, "why": "not part of this run"})
    return out


# llm_calls rows of topic labels carry "topic:<uid>" where extraction calls carry a segment id
CALL_STAGE = "CASE WHEN segment_id LIKE 'topic:%' THEN 'cluster' ELSE 'extract' END"
TOKEN_COLUMNS = ("prompt_tokens", "completion_tokens", "reasoning_tokens")


def tokens(staging: sqlite3.Connection, run: Row, stages: list[Row]) -> Row:
    """Tokens per stage, LLM calls by stage and status, and the cost at the run's prices.

    Every call is a row of llm_calls (the extract stage's, and the cluster stage's topic labels); a stage whose
    calls are not there but whose counts report tokens is taken from its counts.
    """
    calls: list[Row] = []
    if "llm_calls" in _tables(staging):
        calls = _rows(
            staging,
            f"SELECT {CALL_STAGE} AS stage, status, COUNT(*) AS calls, SUM(prompt_tokens) AS prompt_tokens,"
            " SUM(completion_tokens) AS completion_tokens, SUM(reasoning_tokens) AS reasoning_tokens,"
            " ROUND(AVG(latency_s), 3) AS mean_latency_s FROM llm_calls WHERE run_id = ?"
            " GROUP BY 1, 2 ORDER BY 1, calls DESC",
            (run["id"],),
        )
    by_stage: dict[str, Row] = {}
    for call in calls:
        row = by_stage.setdefault(call["stage"], {"stage": call["stage"], **dict.fromkeys(TOKEN_COLUMNS, 0)})
        for key in TOKEN_COLUMNS:
            row[key] += int(call[key] or 0)
    for stage in stages:
        used = {k: int(stage["counts"].get(k) or 0) for k in TOKEN_COLUMNS}
        if any(used.values()) and stage["stage"] not in by_stage:
            by_stage[stage["stage"]] = {"stage": stage["stage"], **used}
    llm = ((run["settings"] or {}).get("extract") or {}).get("llm") or {}
    prices = (llm.get("input_usd_per_mtok"), llm.get("output_usd_per_mtok"))
    order = [s["stage"] for s in stages]  # pipeline order, as the timeline shows it
    per_stage = sorted(by_stage.values(), key=lambda r: order.index(r["stage"]) if r["stage"] in order else len(order))
    for row in per_stage:
        row["cost_usd"] = (
            None
            if None in prices
            else round((row["prompt_tokens"] * prices[0] + row["completion_tokens"] * prices[1]) / 1e6, 6)
        )
    return {"per_stage": per_stage, "calls": calls, "prices": prices, "model": llm.get("model")}


def problems(staging: sqlite3.Connection, archive: sqlite3.Connection | None, run_id: str) -> Row:
    """Quarantined records of the files this run ingested, failed stages, files and LLM calls."""
    failed_stages = _rows(
        staging,
        "SELECT stage, error, rerun_hint FROM stage_runs WHERE run_id = ? AND status = 'failed' ORDER BY id",
        (run_id,),
    )
    files = _rows(
        staging,
        "SELECT path, status, quarantined, detail FROM ingest_files WHERE run_id = ? ORDER BY path",
        (run_id,),
    )
    quarantine: list[Row] = []
    shas = [f"{r['sha256']}" for r in _rows(staging, "SELECT sha256 FROM ingest_files WHERE run_id = ?", (run_id,))]
    if archive is not None and "quarantine" in _tables(archive) and shas:
        marks = ", ".join("?" * len(shas))
        quarantine = _rows(
            archive,
            "SELECT s.path AS source, q.reason, COUNT(*) AS records FROM quarantine q JOIN sources s"
            f" ON s.id = q.source_id WHERE s.sha256 IN ({marks}) GROUP BY s.path, q.reason ORDER BY records DESC",
            tuple(shas),
        )
    failed_calls = 0
    if "llm_calls" in _tables(staging):
        failed_calls = int(
            staging.execute("SELECT COUNT(*) FROM llm_calls WHERE run_id = ? AND status != 'ok'", (run_id,)).fetchone()[
                0
            ]
        )
    return {
        "failed_stages": failed_stages,
        "files": files,
        "quarantine": quarantine,
        "quarantined": sum(int(r["records"]) for r in quarantine),
        "failed_files": sum(1 for f in files if f["status"] in ("failed", "partial")),
        "failed_llm_calls": failed_calls,
    }


def topics(staging: sqlite3.Connection, run_id: str) -> Row:
    """The cluster stage's results of the run: summary, topics, map points, Optuna trials (empty: not clustered)."""
    if not topic_store.has_topics(staging):
        return {}
    summary = topic_store.run_summary(staging, run_id)
    if summary is None:
        return {}
    trials = topic_store.study_trials(staging, summary["study_name"]) if summary["study_name"] else []
    return {
        "summary": summary,
        "topics": topic_store.list_topics(staging, run_id),
        "points": topic_store.map_points(staging, run_id),
        "trials": trials,
    }


def concepts(staging: sqlite3.Connection, run_id: str) -> Row:
    """Concept counts by type and state in the store as it is now, and how many this run touched."""
    if "concepts" not in _tables(staging):
        return {}
    rows = _rows(staging, "SELECT type, state, run_id FROM concepts")
    if not rows:
        return {}
    by_type_state = Counter((r["type"], r["state"]) for r in rows)
    return {
        "total": len(rows),
        "changed_by_run": sum(1 for r in rows if r["run_id"] == run_id),
        "by_type_state": [{"type": t, "state": s, "concepts": n} for (t, s), n in sorted(by_type_state.items())],
    }


def graph(staging: sqlite3.Connection, run_id: str) -> list[Row]:
    """What the load stage of the run wrote, per layer and kind (empty: no load)."""
    if "load_batches" not in _tables(staging):
        return []
    return _rows(
        staging,
        "SELECT target, layer, kind, COUNT(*) AS batches, SUM(rows) AS rows, SUM(written) AS written,"
        " SUM(status = 'failed') AS failed_batches, ROUND(SUM(duration_s), 3) AS seconds FROM load_batches"
        " WHERE run_id = ? GROUP BY target, layer, kind ORDER BY target, kind DESC, layer",
        (run_id,),
    )


def recall(staging: sqlite3.Connection, run_id: str) -> Row:
    """What recall has for this run: the memory graph the cues stage built (counts) and any stored recall
    figures. Empty when the memory stage has not run for it."""
    tables = _tables(staging)
    graph_rows: list[Row] = []
    if "memory_runs" in tables:
        graph_rows = _rows(
            staging,
            "SELECT content, cues, tags, edges, hubs, merged FROM memory_runs WHERE run_id = ?",
            (run_id,),
        )
    figures: list[Row] = []
    for table in sorted(t for t in tables if t.startswith(RECALL_PREFIX)):
        columns = [str(r[1]) for r in staging.execute(f'PRAGMA table_info("{table}")')]
        if "run_id" in columns:
            rows = _rows(staging, f'SELECT * FROM "{table}" WHERE run_id = ? LIMIT 50', (run_id,))
            figures.extend({"table": table, **row} for row in rows)
    return {"graph": graph_rows, "figures": figures} if graph_rows or figures else {}


def gather(
    staging: sqlite3.Connection,
    archive: sqlite3.Connection | None,
    run_id: str | None,
    stage_order: Sequence[str],
) -> Row:
    """Every section of the report for one run (the newest when `run_id` is None).

    Connections as `staging.db.connect_readonly` opens them (rows as sqlite3.Row).
    """
    run = pick_run(staging, run_id)
    stages = timeline(staging, run["id"])
    return {
        "run": run,
        "timeline": stages,
        "skipped": skipped(run, stages, stage_order),
        "tokens": tokens(staging, run, stages),
        "problems": problems(staging, archive, run["id"]),
        "topics": topics(staging, run["id"]),
        "concepts": concepts(staging, run["id"]),
        "graph": graph(staging, run["id"]),
        "recall": recall(staging, run["id"]),
    }
