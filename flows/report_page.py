"""The run report: PNG plots and one self-contained HTML page (images embedded) from `staging.run_report.gather`.

Sections, in order, each with an id the browser test looks for: run, timeline, skipped, tokens, problems,
topic-map, topic-sizes, optuna, concepts, graph, recall. A section without data says why ("this run did not
cluster") instead of failing, so the report works on a data dir that has only ingested. The topic plots are
cluster.report's; the timeline and concept plots are drawn here. matplotlib loads on the Agg backend only when
a report is written.
"""

from __future__ import annotations

import base64
import html
import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from cluster import report as topic_plots

SECTIONS = (
    ("run", "Run"),
    ("timeline", "Stage timeline"),
    ("skipped", "Skipped stages"),
    ("tokens", "Tokens and cost per stage"),
    ("problems", "Quarantine and failures"),
    ("topic-map", "Topic map"),
    ("topic-sizes", "Topic sizes"),
    ("optuna", "Optuna optimisation history"),
    ("concepts", "Concept types and states"),
    ("graph", "Graph counts loaded"),
    ("recall", "Recall"),
)
STATUS_COLOURS = {"succeeded": "tab:green", "skipped": "tab:gray", "failed": "tab:red", "running": "tab:orange"}


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg", force=True)  # no display, no GUI toolkit: selected before pyplot is imported
    import matplotlib.pyplot as plt

    return plt


def _seconds_since(start: str, moment: str | None) -> float:
    if not moment:
        return 0.0
    return (datetime.fromisoformat(moment) - datetime.fromisoformat(start)).total_seconds()


def timeline_plot(run: Mapping[str, Any], stages: Sequence[Mapping[str, Any]], path: Path) -> None:
    """One bar per stage run: when it started after the run did, how long it took, coloured by status."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(9, max(2.5, 0.45 * len(stages) + 1.2)), dpi=110)
    for index, stage in enumerate(stages):
        start = _seconds_since(run["started_at"], stage["started_at"])
        width = float(stage["duration_s"] or 0.0)
        ax.barh(index, max(width, 0.01), left=start, color=STATUS_COLOURS.get(stage["status"], "tab:blue"))
        ax.annotate(f" {width:.1f} s, {stage['rows_out'] or 0} rows", (start + width, index), va="center", fontsize=8)
    ax.set_yticks(range(len(stages)), [f"{s['stage']} ({s['status']})" for s in stages])
    ax.invert_yaxis()
    ax.set_xlabel("seconds since the run started")
    ax.set_title(f"Stage timeline of run {run['id']}")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def concepts_plot(by_type_state: Sequence[Mapping[str, Any]], path: Path) -> None:
    """Stacked bars: concepts per type, split by state."""
    plt = _pyplot()
    types = sorted({str(r["type"]) for r in by_type_state})
    states = sorted({str(r["state"]) for r in by_type_state})
    counts = {(str(r["type"]), str(r["state"])): int(r["concepts"]) for r in by_type_state}
    fig, ax = plt.subplots(figsize=(8, 4), dpi=110)
    bottom = [0] * len(types)
    for state in states:
        heights = [counts.get((t, state), 0) for t in types]
        ax.bar(types, heights, bottom=bottom, label=state)
        bottom = [b + h for b, h in zip(bottom, heights, strict=True)]
    ax.set_ylabel("concepts")
    ax.set_title("Concepts by type and state")
    ax.legend(title="state")
    ax.tick_params(axis="x", labelrotation=20)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def write_run_report(out_dir: Path, data: Mapping[str, Any]) -> list[Path]:
    """Write the PNGs that have data and index.html (images embedded); returns the files written."""
    out_dir.mkdir(parents=True, exist_ok=True)
    images: dict[str, Path] = {}
    if data["timeline"]:
        images["timeline"] = out_dir / "timeline.png"
        timeline_plot(data["run"], data["timeline"], images["timeline"])
    clustered = data["topics"]
    if clustered:
        images["topic-map"] = out_dir / "topic_map.png"
        topic_plots.topic_map(clustered["points"], clustered["topics"], images["topic-map"])
        images["topic-sizes"] = out_dir / "topic_sizes.png"
        topic_plots.topic_sizes(clustered["topics"], images["topic-sizes"])
        if clustered["trials"]:
            images["optuna"] = out_dir / "optuna_history.png"
            topic_plots.optuna_history(clustered["trials"], images["optuna"])
    if data["concepts"]:
        images["concepts"] = out_dir / "concepts.png"
        concepts_plot(data["concepts"]["by_type_state"], images["concepts"])
    page = out_dir / "index.html"
    page.write_text(render(data, images), encoding="utf-8")
    return [*images.values(), page]


# ---------------------------------------------------------------- HTML

esc = html.escape


def _cell(value: object) -> str:
    if isinstance(value, dict | list):
        value = json.dumps(value, ensure_ascii=False)
    text = "" if value is None else str(value)
    return esc(text if len(text) <= 300 else text[:299] + "…")


def _table(rows: Sequence[Mapping[str, Any]], columns: Sequence[str] | None = None) -> str:
    if not rows:
        return ""
    cols = list(columns or rows[0].keys())
    head = "".join(f"<th>{esc(c)}</th>" for c in cols)
    body = "".join("<tr>" + "".join(f"<td>{_cell(r.get(c))}</td>" for c in cols) + "</tr>" for r in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _empty(why: str) -> str:
    return f'<p class="empty">{esc(why)}</p>'


def _image(key: str, images: Mapping[str, Path], alt: str) -> str:
    path = images.get(key)
    if path is None:
        return ""
    encoded = base64.b64encode(path.read_bytes()).decode("ascii")
    return f'<p><img src="data:image/png;base64,{encoded}" alt="{esc(alt)}" data-file="{esc(path.name)}"></p>'


def _bodies(data: Mapping[str, Any], images: Mapping[str, Path]) -> dict[str, str]:
    run, clustered, tokens, problems = data["run"], data["topics"], data["tokens"], data["problems"]
    facts = {k: run.get(k) for k in ("id", "status", "started_at", "finished_at", "code_version", "error")}
    facts["exports"] = ", ".join(run.get("exports") or []) or "-"
    not_clustered = "No topics: this run did not cluster (see skipped stages)."
    if "cluster" not in (run.get("stages") or []):  # not selected at all (`run --to segment`): not "skipped"
        ran = ", ".join(run.get("stages") or []) or "none"
        not_clustered = (
            f"No topics: this run did not run the cluster stage (its stages: {ran});"
            " report on a run that did with chatmem report --run-id RUN (chatmem staging runs lists them)."
        )
    if clustered and clustered["summary"]["status"] != "clustered":
        not_clustered = "No topics: " + ("; ".join(clustered["summary"]["notes"]) or "the cluster stage skipped.")
    has_map = bool(clustered) and clustered["summary"]["status"] == "clustered"
    summary = clustered["summary"] if clustered else {}
    topic_facts = ", ".join(f"{k} {summary.get(k)}" for k in ("points", "topics", "outlier_share", "validity"))
    price_note = (
        "Cost at the run's prices (extract.llm input/output USD per 1M tokens)."
        if None not in tokens["prices"]
        else "No prices configured (CHATMEM_EXTRACT__LLM__INPUT_USD_PER_MTOK / __OUTPUT_USD_PER_MTOK): no cost."
    )
    counts = {
        "quarantined records": problems["quarantined"],
        "failed stages": len(problems["failed_stages"]),
        "failed or partial files": problems["failed_files"],
        "failed LLM calls": problems["failed_llm_calls"],
    }
    return {
        "run": _table([facts]),
        "timeline": (
            _image("timeline", images, "stage timeline")
            + _table(data["timeline"], ["stage", "status", "started_at", "duration_s", "rows_in", "rows_out", "counts"])
            if data["timeline"]
            else _empty("No stage has run in this run yet.")
        ),
        "skipped": _table(data["skipped"]) if data["skipped"] else _empty("No stage was skipped: all ran."),
        "tokens": (
            f"<p>{esc(price_note)} Model: {esc(str(tokens['model'] or '-'))}.</p>"
            + _table(tokens["per_stage"])
            + _table(tokens["calls"])
            if tokens["per_stage"] or tokens["calls"]
            else _empty("No LLM tokens in this run (offline extractor, or no stage that calls a model ran).")
        ),
        "problems": (
            _table([counts])
            + _table(problems["failed_stages"])
            + _table(problems["quarantine"])
            + _table([f for f in problems["files"] if f["status"] in ("failed", "partial")])
        ),
        "topic-map": (
            f"<p>{esc(topic_facts)}</p>" + _image("topic-map", images, "topic map")
            if has_map
            else _empty(not_clustered)
        ),
        "topic-sizes": (
            _image("topic-sizes", images, "topic sizes")
            + _table(
                [{**t, "keywords": ", ".join(t["keywords"][:8])} for t in clustered["topics"]],
                ["topic", "label", "size", "keywords"],
            )
            if has_map
            else _empty(not_clustered)
        ),
        "optuna": (
            _image("optuna", images, "Optuna history")
            if "optuna" in images
            else _empty("No Optuna trials for this run.")
        ),
        "concepts": (
            f"<p>{data['concepts']['total']} concepts in the store, {data['concepts']['changed_by_run']} changed by"
            " this run.</p>"
            + _image("concepts", images, "concepts by type and state")
            + _table(data["concepts"]["by_type_state"])
            if data["concepts"]
            else _empty("No concepts yet: the concepts stage has not run on this data dir.")
        ),
        "graph": (
            _table(data["graph"])
            if data["graph"]
            else _empty("Nothing loaded into a graph by this run (no load stage).")
        ),
        "recall": (
            "<p>The memory graph recall reads (cues stage):</p>"
            + _table(data["recall"]["graph"])
            + (
                _table(data["recall"]["figures"])
                if data["recall"]["figures"]
                else "<p>Recall figures are not stored per run: <code>chatmem eval recall</code> measures them.</p>"
            )
            if data["recall"]
            else _empty("Recall: not available (the memory stage, cues, has not run for this run).")
        ),
    }


def render(data: Mapping[str, Any], images: Mapping[str, Path]) -> str:
    """The whole page: one <section id=...> per report section, images as data: URIs."""
    bodies = _bodies(data, images)
    nav = " · ".join(f'<a href="#{key}">{esc(title)}</a>' for key, title in SECTIONS)
    sections = "\n".join(f'<section id="{key}"><h2>{esc(title)}</h2>{bodies[key]}</section>' for key, title in SECTIONS)
    return (
        "<!doctype html><html lang='en'><meta charset='utf-8'>"
        f"<title>chatmem report: run {esc(str(data['run']['id']))}</title>"
        "<style>body{font-family:sans-serif;margin:2em;max-width:75em}td,th{padding:2px 8px;text-align:left;"
        "vertical-align:top;font-size:90%}table{border-collapse:collapse;margin:.5em 0}tr:nth-child(even)"
        "{background:#f4f4f4}img{max-width:100%}.empty{color:#666;font-style:italic}</style>"
        f"<h1>chatmem report: run {esc(str(data['run']['id']))}</h1><nav>{nav}</nav>\n{sections}\n</html>\n"
    )
