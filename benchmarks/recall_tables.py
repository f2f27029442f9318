"""The recall section of benchmarks/RESULTS.md, rendered from bench_recall.py's figures (pure formatting)."""

from __future__ import annotations

from typing import Any

HEADLINES = {
    "locomo": ["evidence_recall@5", "evidence_recall@10", "evidence_recall@20"],
    "longmemeval": ["recall_all@1", "recall_all@3", "recall_all@5", "recall_all@10", "recall_any@5", "ndcg@10"],
}
TARGETS = {
    "locomo": {"evidence_recall@10": 0.80},
    "longmemeval": {"recall_all@3": 0.93, "recall_all@5": 0.97},
}
METHODS = ("system", "bm25", "dense", "rrf", "dense_keys", "rrf_keys")
ABLATION_NAMES = {
    "no_cues": "cues (query -> cue -> tag; the second hop)",
    "no_second_hop": "second hop (the best content's cues -> more content)",
    "no_speaker_tags": "speaker tags (a person the query names: their content x1.3)",
    "no_reply_link": "reply link (a question's NEXT gets 0.5 of it, not 0.2)",
    "no_tags_session_prior": "tags: conversation/day prior",
    "no_session_keys": "session-level keys (the session prior reads its best turns only)",
    "no_session_best_turns": "best turns in the session prior (session keys only)",
    "session_max_pooling": "best 2 turns' mean -> the best turn only (max pooling)",
    "no_decay": "temporal decay on tag edges",
    "no_time_filter": "explicit time expressions",
    "no_key_expansion": "key expansion with extracted concepts",
    "no_consolidation": "consolidation",
    "no_next_prev": "NEXT/PREV spreading (the turn beside a match, replies included)",
    "no_hub_control": "hub control (hub cues count a quarter)",
    "no_garden_facts": "the garden's facts (memory/fact_boost.py)",
    "no_dense": "dense key similarity",
    "no_lexical": "BM25 over keys",
}


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def _table(benchmark: str, report: dict[str, Any]) -> list[str]:
    names = HEADLINES[benchmark]
    lines = [
        _row(["method", *names, "context tokens", "p50 ms", "p95 ms"]),
        _row(["---", *["---:"] * (len(names) + 3)]),
    ]
    for method in METHODS:
        values = report[method]
        cells = [f"{values[n]:.3f}" for n in names]
        shown = f"**{method}**" if method == "system" else method
        timing = [f"{values['context_tokens_mean']:.0f}", f"{values['latency_p50_ms']:.1f}"]
        lines.append(_row([shown, *cells, *timing, f"{values['latency_p95_ms']:.1f}"]))
    return lines


def _ablations(benchmark: str, report: dict[str, Any]) -> list[str]:
    names = HEADLINES[benchmark]
    system = report["system"]
    lines = [_row(["without", *names]), _row(["---", *["---:"] * len(names)])]
    for key, label in ABLATION_NAMES.items():
        values = report.get("ablations", {}).get(key)
        if values is None:
            continue
        cells = [f"{values[n]:.3f} ({values[n] - system[n]:+.3f})" for n in names]
        lines.append(_row([label, *cells]))
    return lines


def _categories(benchmark: str, report: dict[str, Any]) -> list[str]:
    names = HEADLINES[benchmark][:4] if benchmark == "longmemeval" else HEADLINES[benchmark]
    lines = [
        _row(["category", "questions", *[f"system {n}" for n in names], *[f"rrf {n}" for n in names]]),
        _row(["---", "---:", *["---:"] * (2 * len(names))]),
    ]
    for category, values in report["system"]["categories"].items():
        flat = report["rrf"]["categories"].get(category, {})
        lines.append(
            _row(
                [
                    category,
                    str(values["questions"]),
                    *[f"{values[n]:.3f}" for n in names],
                    *[f"{flat.get(n, 0):.3f}" for n in names],
                ]
            )
        )
    return lines


def _targets(benchmark: str, report: dict[str, Any]) -> str:
    said = []
    for name, target in TARGETS[benchmark].items():
        got = report["system"][name]
        said.append(f"{name} ≥ {target}: {'meets' if got >= target else 'MISSES'} ({got:.3f})")
    tokens = report["system"]["context_tokens_mean"]
    said.append(f"context ≤ 5k tokens/query: {'meets' if tokens <= 5000 else 'MISSES'} ({tokens:.0f})")
    return "Targets: " + "; ".join(said) + "."


def _stages(run: dict[str, Any]) -> str:
    stages = run.get("stages") or {}
    ran = [s for s, status in stages.items() if status != "skipped"]
    skipped = [s for s, status in stages.items() if status == "skipped"]
    if not stages:
        return ""
    return (
        f"Stages run: {', '.join(ran) or 'none'}; skipped as unchanged since the work dir's first build:"
        f" {', '.join(skipped) or 'none'} (a first build runs them all)."
    )


def _key_model(run: dict[str, Any]) -> list[str]:
    """Why the system's keys are the model they are (memory/key_model.py), when the run recorded it."""
    choice = run.get("key_model") or {}
    if not choice:
        return []
    if choice.get("setting") != "auto":
        return [f"Key model: `memory.key_embedder = {choice.get('setting')}` (set)."]
    counted = f"{choice['keys_counted']:,}" + ("" if choice.get("complete") else "+ (counting stopped there)")
    full = choice.get("model") == "minilm-onnx"
    verdict, model = ("within", "`minilm-onnx` (the full model)") if full else ("over", "`embed` (the static model)")
    return [
        f"Key model: `auto` chose {model}: the full model's estimate for {counted} key(s),"
        f" {choice['full_estimate_s']:.0f} CPU-s, is {verdict} memory.full_key_budget_s = {choice['full_budget_s']:g}."
    ]


def section(reports: dict[str, dict[str, Any]], latency: list[dict[str, Any]], machine: str) -> str:
    lines = ["# Recall benchmarks (memory/, `chatmem eval recall`)", ""]
    lines += [
        "Written by `benchmarks/bench_recall.py` (dev figures: the dev splits in ../shared/data; nothing in the",
        "engine is tuned per question). Every method ranks the same candidate turns: the question's scope",
        "(LoCoMo: the sample's sessions; LongMemEval: the question's own haystack), nothing after `at`",
        "(LongMemEval: the end of the question's day, see memory/benchmarks.py; LoCoMo questions carry no date).",
        "`system` is the Cue-Tag-Content recall; `bm25`, `dense` (the default embedder, the embed stage's",
        "vectors) and `rrf` (their reciprocal-rank fusion, k = 60) are flat retrieval over the plain turns;",
        "`dense_keys` / `rrf_keys` use the system's key embedder (the same one by default). Latency is per question",
        "and excludes embedding the query (done once per batch); the system's includes building the context",
        "(budget 4,000 tokens). Metrics: memory/metrics.py (LongMemEval's official definitions, session level).",
        "",
    ]
    for benchmark, report in reports.items():
        run = report["run"]
        lines += [
            f"## {benchmark} ({run['questions']} questions, {run['turns']:,} turns)",
            "",
            f"Command: `{run['command']}` ({run['wall_s']:.0f} s wall, pipeline {run['pipeline_s']:.0f} s;"
            f" commit {run.get('commit', '?')}).",
            _stages(run),
            f"Embedders: system and *_keys `{run['embedder_system']}`; dense and rrf `{run['embedder_baselines']}`.",
            *_key_model(run),
            *(f"Note: {n}." for n in run.get("notes", [])),
            "",
            *_table(benchmark, report),
            "",
            _targets(benchmark, report),
            "",
            "Ablations (the system with one part removed; change against the full system in brackets):",
            "",
            *_ablations(benchmark, report),
            "",
            "Per question category:",
            "",
            *_categories(benchmark, report),
            "",
        ]
    if latency:
        lines += latency_lines(latency)
    lines += [f"Machine: {machine}.", ""]
    return "\n".join(lines)


def latency_lines(latency: list[dict[str, Any]]) -> list[str]:
    """The "Recall latency on generated memories" subsection (without the machine line)."""
    lines = [
        "## Recall latency on generated memories (embedded engine)",
        "",
        "`python benchmarks/bench_recall.py --latency " + " ".join(str(x["content"]) for x in latency) + "`:",
        "n content nodes generated straight into the engine's arrays (conversations of 20, ~12 Zipf terms per",
        "key, 3 cues each, 384-d vectors); recalls (candidate pre-pass, activation, a 2,000-token context with",
        "paths), with `at`: 200 unscoped, 200 scoped to 50 conversations, and 50 unscoped with the pre-pass off",
        "(`exact`: every content node scored, the engine before the pre-pass; same run, same queries' generator).",
        "The pre-pass (memory/candidates.py, above recall.prepass_from = 50,000 content in the memory) takes the best",
        "300 by BM25 over the keys, by key similarity from k-means lists of the key vectors (memory/dense_lists.py:",
        "~sqrt(n) lists in a 64-d projection, n/64 of them read per query, rescored exactly) and through the",
        "query's cues, widens them to their conversations and NEXT/PREV turns (at most 6,000 content), and runs",
        "the unchanged activation over that view; a scope (or `at`) leaving at most 6,000 is taken whole (a",
        "conversation scope reads only its conversations). Before the pre-pass (commit 742d863, load 5.5): 600k p95",
        "185 ms whole memory, 144 ms scoped. `tables s`:",
        "building the lists once per index (when a memory is opened).",
        "",
        _row(
            [
                "content",
                "build s",
                "tables s",
                "whole p50 ms",
                "p95 ms",
                "CPU p50 ms",
                "CPU p95 ms",
                "scoped p50 ms",
                "p95 ms",
                "CPU p95 ms",
                "exact p50 ms",
                "exact p95 ms",
                "exact CPU p95 ms",
                "candidates",
                "RSS MiB",
            ]
        ),
        _row(["---:"] * 15),
    ]
    for x in latency:
        whole, scoped = x["whole_memory"], x["scoped_50_conversations"]
        exact = x.get("exact_whole_memory", {"p50_ms": float("nan"), "p95_ms": float("nan")})
        lines.append(
            _row(
                [
                    f"{x['content']:,}",
                    f"{x['build_s']:.1f}",
                    f"{x.get('prepass_tables_s', 0.0):.1f}",
                    f"{whole['p50_ms']:.1f}",
                    f"{whole['p95_ms']:.1f}",
                    f"{whole.get('cpu_p50_ms', float('nan')):.1f}",
                    f"{whole.get('cpu_p95_ms', float('nan')):.1f}",
                    f"{scoped['p50_ms']:.1f}",
                    f"{scoped['p95_ms']:.1f}",
                    f"{scoped.get('cpu_p95_ms', float('nan')):.1f}",
                    f"{exact['p50_ms']:.1f}",
                    f"{exact['p95_ms']:.1f}",
                    f"{exact.get('cpu_p95_ms', float('nan')):.1f}",
                    f"{whole.get('candidates_median', x['content']):,}",
                    str(x["rss_mib"]),
                ]
            )
        )
    biggest = latency[-1]
    whole, exact = biggest["whole_memory"], biggest.get("exact_whole_memory")
    verdict = "meets" if whole["p95_ms"] <= 50 else "MISSES"
    cpu = f" (CPU p95 {whole['cpu_p95_ms']:.0f} ms)" if "cpu_p95_ms" in whole else ""
    ratio = f", {exact['p95_ms'] / whole['p95_ms']:.1f}x faster at p95 than the exact pass" if exact else ""
    lines += [
        "",
        f"Target p95 ≤ 50 ms at the seed's scale: {verdict} ({whole['p95_ms']:.0f} ms whole memory{cpu},"
        f" {biggest['scoped_50_conversations']['p95_ms']:.0f} ms scoped, at {biggest['content']:,} content nodes"
        f"{ratio}, on this shared machine: read the load average below; p95 on a loaded 2-core machine is mostly"
        " time spent waiting for a core). What still grows with n: the scope/`at` mask and the BM25 posting lists"
        " of the query's terms (frequent terms' lists grow with the memory); the activation's own cost is bounded"
        " by the candidates.",
        "",
    ]
    return lines


def latency_section(latency: list[dict[str, Any]], machine: str) -> str:
    """The latency subsection alone, with the machine line (it ends the recall section)."""
    return "\n".join([*latency_lines(latency), f"Machine: {machine}.", ""])
