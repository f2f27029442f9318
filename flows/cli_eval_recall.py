"""`chatmem eval recall`: the recall benchmarks (LoCoMo, LongMemEval) through the real pipeline.

The benchmark file becomes a generic JSONL export (memory.benchmarks) in a work dir under the data dir, the
pipeline runs ingest -> ... -> cues on it with the sessions' real timestamps (a re-run reuses what is built),
and every question is asked with its own scope and moment (memory.evaluate), by the system and by the flat
baselines (BM25, dense, their RRF) over the same turns. No LLM is needed.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from contracts.errors import ChatmemError
from flows.cli_data import open_readonly
from flows.cli_memory import MAX_BUDGET_TOKENS
from flows.cli_table import JSON_OPTION, emit
from flows.registry import select_stages

if TYPE_CHECKING:
    from contracts.settings import Settings
    from flows.cli_app import App

PIPELINE = select_stages(to="cues")  # every stage the memory is built from (the registry's order); no load


def work_dir(settings: Settings, benchmark: str, path: Path, limit: int | None) -> Path:
    digest = hashlib.sha256(path.read_bytes()).hexdigest()[:12]
    return settings.data_dir / "eval" / f"{benchmark}-{digest}-{limit or 'all'}"


def headline(benchmark: str) -> list[str]:
    from memory.evaluate import KS  # imported here: memory.evaluate pulls in scikit-learn (seconds) for every command

    if benchmark == "locomo":
        return [f"evidence_recall@{k}" for k in KS["locomo"]]
    return ["recall_all@3", "recall_all@5", "recall_any@5", "ndcg@10"]


def print_report(benchmark: str, report: dict[str, Any]) -> None:
    names = [*headline(benchmark), "context_tokens_mean", "latency_p95_ms"]
    click.echo(f"{'method':24s}" + "".join(f"{n:>22s}" for n in names))
    for method, values in report.items():
        if method != "run" and isinstance(values, dict) and "questions" in values:  # "run": the work dir's facts
            click.echo(f"{method:24s}" + "".join(f"{values.get(n, 0):>22}" for n in names))
    system = report["system"]
    click.echo("\nsystem by category:")
    for category, values in system["categories"].items():
        shown = ", ".join(f"{n} {values.get(n, 0)}" for n in headline(benchmark))
        click.echo(f"  {category} ({values['questions']}): {shown}")


@dataclass
class BuiltMemory:
    """What the benchmark asks its questions of: the stored index as a recall reads it, its key embedder, the
    cues run's graph, and the flat baselines' embedder and vectors over the same turns."""

    index: Any
    embedder: Any
    key_choice: Any
    graph: Any
    flat_embedder: Any
    flat: Any


def open_built_memory(settings: Settings, where: Path) -> BuiltMemory:
    # imported here, not at the top: they pull in scikit-learn and scipy (seconds for every other command)
    from clients.embedders import build_embedder
    from memory.evaluate import flat_vectors
    from memory.index import key_embedder
    from memory.index_store import open_index
    from memory.key_model import for_run, run_choice
    from staging import memory as memory_store
    from staging.db import read_snapshot

    default = build_embedder(settings.embed)
    # the run chosen, its index and its rows read from one state of each database (as Memory.open)
    with (
        open_readonly(settings.archive_path, settings) as archive,
        open_readonly(settings.staging_path, settings) as staging,
        read_snapshot(staging),
        read_snapshot(archive),
    ):
        latest = memory_store.latest_run(staging)
        if latest is None:
            raise ChatmemError(f"the pipeline built no memory in {where}")
        settings = for_run(settings, staging, latest)  # `auto`: the model the cues run chose for its keys
        embedder = key_embedder(settings)
        index = open_index(archive, staging, settings, embedder, run_id=latest)  # the stored one, as recall does
        return BuiltMemory(
            index=index,
            embedder=embedder,
            key_choice=run_choice(staging, latest),
            graph=memory_store.read_run(staging, index.run_id),
            flat_embedder=default,
            flat=flat_vectors(staging, index, default),
        )


@click.command("recall")
@click.option("--benchmark", type=click.Choice(["locomo", "longmemeval"]), required=True, help="File format.")
@click.option(
    "--data",
    "data",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    required=True,
    help="The benchmark file (LoCoMo .json; LongMemEval .json / .jsonl, gzipped or not).",
)
@click.option("--limit", type=click.IntRange(min=1), help="Only the first N (non-abstention) questions.")
@click.option(
    "--budget", default=4000, show_default=True, type=click.IntRange(1, MAX_BUDGET_TOKENS), help="Context tokens."
)
@click.option("--trials", default=8, show_default=True, type=click.IntRange(min=1), help="Cluster tuning trials.")
@click.option("--ablations", "with_ablations", is_flag=True, help="Also run the system with each part removed.")
@JSON_OPTION
@click.pass_obj
def eval_recall(
    app: App,
    benchmark: str,
    data: Path,
    limit: int | None,
    budget: int,
    trials: int,
    with_ablations: bool,
    as_json: bool,
) -> None:
    """Run a recall benchmark end to end and compare the system with flat BM25, dense and RRF retrieval.

    --json prints {"system": {...}, "bm25": {...}, "dense": {...}, "rrf": {...}} (metrics such as
    evidence_recall@10, recall_all@3, recall_any@5, ndcg@10, latency_p95_ms, context_tokens_mean, and
    per-category figures), plus "ablations" with --ablations and "run" (work dir, pipeline seconds, notes).

    \b
    Example: chatmem eval recall --benchmark longmemeval --data longmemeval_s.jsonl.gz --limit 20 --json
    """
    # imported here, not at the top: they pull in scikit-learn and scipy, seconds that every other command
    # (`chatmem run` included) would pay at start-up
    from memory.benchmarks import read_benchmark, write_jsonl
    from memory.evaluate import ablations, evaluate, plain_keys

    base = app.settings()
    loaded = read_benchmark(benchmark, data, limit)
    where = work_dir(base, benchmark, data, limit)
    settings = base.model_copy(
        update={"data_dir": where, "cluster": base.cluster.model_copy(update={"n_trials": trials})}
    )
    export = write_jsonl(loaded, where / "export" / f"{benchmark}.jsonl")
    started = time.monotonic()
    engine = app.engine(settings)
    run_id, stage_results = engine.run_pipeline(settings, [export], stages=PIPELINE, quiet=True)
    pipeline_s = time.monotonic() - started
    built = open_built_memory(settings, where)
    index, embedder, default = built.index, built.embedder, built.flat_embedder
    plain = plain_keys(index, built.graph)
    variants = ablations(index, plain, settings.recall) if with_ablations else None
    report = evaluate(
        loaded,
        index,
        embedder,
        settings.recall,
        plain,
        flat_embedder=default,
        flat_dense=built.flat,
        budget_tokens=budget,
        ablations=variants,
    )
    names = ("system", "bm25", "dense", "rrf", "dense_keys", "rrf_keys")
    ordered: dict[str, Any] = {name: report[name] for name in names}
    if variants:
        ordered["ablations"] = {name: report[name] for name in variants}
    ordered["run"] = {
        "run_id": run_id,
        "work_dir": str(where),
        "pipeline_s": round(pipeline_s, 1),
        "stages": {r.stage: r.status for r in stage_results},
        "turns": index.size,
        "questions": len(loaded.questions),
        "embedder_system": embedder.key,
        "key_model": built.key_choice,
        "embedder_baselines": default.key,
        "budget_tokens": budget,
        "notes": loaded.notes,
    }
    if as_json:
        emit(ordered)
        return
    print_report(benchmark, {**ordered, **ordered.get("ablations", {})})
    click.echo(f"\n{len(loaded.questions)} question(s), {index.size} turns, work dir {where}")
    click.echo(f"embedders: {embedder.key} (system, *_keys), {default.key} (dense, rrf)")
