"""`chatmem eval extraction`: the reasoning-effort experiment on any OpenAI-compatible endpoint, or (--labels) a
built data dir's concepts, topics and facts scored against labels (staging/graph_quality.py).

Segments come from the data dir when the segment stage has run there (staging.db `segments` + archive.db
message texts, read-only), otherwise from an export parsed on the fly (`--export`, default the bundled demo)
and cut by the same pure segmenter the segment stage uses. Either way nothing is written: the harness measures
a model and a prompt (extract/llm_eval.py), it does not build the memory. It never imports prefect.
"""

from __future__ import annotations

import hashlib
import sqlite3
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

import click

from contracts.errors import ChatmemError, ConfigError
from flows.cli_eval_recall import eval_recall
from flows.cli_table import JSON_OPTION, emit
from flows.terminal import safe, safe_line

if TYPE_CHECKING:
    from contracts.settings import Settings
    from extract.llm_eval import EvalReport
    from extract.types import SegmentInput
    from flows.cli_app import App

DEMO_EXPORT = Path(__file__).resolve().parents[1] / "demo" / "longmemeval-demo.zip"


def _time(value: str | None) -> datetime | None:
    return datetime.fromisoformat(value) if value else None


def segments_from_data_dir(settings: Settings, limit: int) -> list[SegmentInput]:
    """The first `limit` current segments of the data dir, or [] when the segment stage has not run there."""
    from extract.types import SegmentInput, SegmentMessage
    from staging import segments as segment_store
    from staging.db import connect_readonly

    if not settings.staging_path.exists() or not settings.archive_path.exists():
        return []
    staging, archive = connect_readonly(settings.staging_path), connect_readonly(settings.archive_path)
    try:
        rows = []
        for row in segment_store.iter_current_segments(staging):
            rows.append(row)
            if len(rows) >= limit:
                break
        texts = segment_store.messages_by_id(archive, [m for r in rows for m in r.message_ids])
    except sqlite3.OperationalError:  # no segments table yet
        return []
    finally:
        staging.close()
        archive.close()
    result = []
    for row in rows:
        found = [texts[m] for m in row.message_ids if m in texts]
        messages = tuple(SegmentMessage(m["uuid"], m["role"], m["text"], _time(m["created_at"])) for m in found)
        title = found[0]["title"] if found else None
        result.append(SegmentInput(row.segment_id, row.conversation_id, title, messages, row.content_hash))
    return result


def segments_from_export(path: Path, settings: Settings, limit: int) -> list[SegmentInput]:
    """Parse an export (any format chatmem ingests) and cut its active paths into segments, stopping at `limit`."""
    from contracts.records import ExportConversation
    from extract.segment import PathMessage, SegmentParams, segment_conversation
    from extract.types import SegmentInput, SegmentMessage
    from ingest.detect import detect_format, parser_for
    from ingest.sources import open_export, read_head

    ingest = settings.ingest
    opened = open_export(path, max_member_bytes=ingest.max_zip_member_bytes, max_ratio=ingest.max_zip_ratio)
    fmt = detect_format(read_head(opened), name=opened.path)
    params = SegmentParams(**settings.segment.model_dump())
    result: list[SegmentInput] = []
    with opened.open() as stream:
        for item in parser_for(fmt)(stream, name=opened.path):
            if not isinstance(item, ExportConversation):  # a quarantined record: not for evaluation
                continue
            active = sorted(
                (m for m in item.messages if m.is_active and not m.is_hidden and m.text.strip()), key=lambda m: m.seq
            )
            path_messages = [
                PathMessage(
                    m.uuid,
                    m.role,
                    m.text,
                    m.created_at.isoformat() if m.created_at else None,
                    hashlib.sha256(m.text.encode()).hexdigest(),
                )
                for m in active
            ]
            by_id = {m.uuid: m for m in active}
            for draft in segment_conversation(item.id, path_messages, params):
                chosen = tuple(by_id[i] for i in draft.message_ids)
                seg_messages = tuple(SegmentMessage(m.uuid, m.role, m.text, m.created_at) for m in chosen)
                result.append(SegmentInput(draft.segment_id, item.id, item.title, seg_messages, draft.content_hash))
                if len(result) >= limit:
                    return result
    return result


def _print(report: EvalReport) -> None:
    click.echo(
        f"model {report.model} (effort {report.effort}, {report.api}/{report.structured_output}): "
        f"{report.segments} segments x {report.repeat} repeats, {report.replies} replies in {report.wall_s}s"
    )
    lines = [
        ("schema adherence", f"{report.schema_adherence:.1%} of replies met the contract before mapping"),
        (
            "determinism",
            f"Jaccard of concept titles across repeats {report.determinism_jaccard:.3f}; "
            f"identical replies {report.identical_replies:.0%} of segments",
        ),
        (
            "evidence validity",
            "no spans cited"
            if report.evidence_validity is None
            else f"{report.evidence_validity:.1%} of spans kept "
            f"({report.evidence_spans_kept} of {report.evidence_spans_raw})",
        ),
        (
            "hypotheses/segment",
            f"{report.hypotheses_raw_per_segment} proposed, {report.hypotheses_kept_per_segment} kept",
        ),
        ("tokens/segment", ", ".join(f"{k} {v}" for k, v in report.tokens_per_segment.items())),
        ("latency", f"{report.latency_s_mean}s per call"),
        (
            "mapper corrections",
            f"{report.mapper_corrections_per_reply} per reply: "
            + (", ".join(f"{rule} {n}" for rule, n in report.mapper_rules.items()) or "none"),
        ),
        ("failures", ", ".join(f"{k} {v}" for k, v in report.failures.items()) or "none"),
    ]
    width = max(len(name) for name, _ in lines)
    for name, value in lines:
        click.echo(f"  {name.ljust(width)}  {value}")
    for example in report.examples:
        click.echo(f"  e.g. {example['segment_id']}: {safe_line(str(example['reason']))}")


@click.group("eval")
def eval_group() -> None:
    """Measure the extractor or recall (your memory is left as it is; recall builds in DATA_DIR/eval/).

    \b
    Example: chatmem eval extraction --model gpt-5-mini --effort low --repeat 3
    """


@eval_group.command("extraction")
@click.option("--model", help="Model name as the endpoint knows it (the LLM experiment; not with --labels).")
@click.option(
    "--labels",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Score the data dir's written graph against these labels (issue 20's measures) instead.",
)
@click.option(
    "--data-dir",
    "labels_data_dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="With --labels: the data dir to score [default: the global --data-dir].",
)
@click.option(
    "--show", type=click.IntRange(min=0), default=8, show_default=True, help="With --labels: worst conversations shown."
)
@click.option(
    "--effort",
    type=click.Choice(["none", "minimal", "low", "medium", "high", "unset"]),
    default="low",
    show_default=True,
    help="reasoning_effort sent; 'unset' sends none (servers that reject it).",
)
@click.option("--repeat", type=click.IntRange(min=1), default=3, show_default=True, help="Runs over the same segments.")
@click.option("--segments", "limit", type=click.IntRange(min=1), default=10, show_default=True, help="Segments used.")
@click.option("--base-url", help="OpenAI-compatible endpoint [default: the configured one, else OpenAI].")
@click.option("--api", type=click.Choice(["chat", "responses"]), help="chat completions or responses.")
@click.option("--structured-output", type=click.Choice(["json_schema", "json_object"]), help="json_object: llama.cpp.")
@click.option("--temperature", type=float, help="Sampling temperature (unset: the server's default).")
@click.option("--max-output-tokens", type=click.IntRange(min=1), help="Cap on output tokens per reply.")
@click.option(
    "--export",
    "export",
    type=click.Path(exists=True, path_type=Path),
    help="Take segments from this export instead of the data dir [default: data dir, else the bundled demo].",
)
@JSON_OPTION
@click.pass_obj
def extraction(
    app: App,
    model: str | None,
    labels: Path | None,
    labels_data_dir: Path | None,
    show: int,
    effort: str,
    repeat: int,
    limit: int,
    base_url: str | None,
    api: str | None,
    structured_output: str | None,
    temperature: float | None,
    max_output_tokens: int | None,
    export: Path | None,
    as_json: bool,
) -> None:
    """Run the LLM extractor REPEAT times over SEGMENTS segments and report schema adherence, determinism across
    repeats, evidence validity, tokens per segment and what the semantic mapper had to correct.

    With --labels, score instead what a built data dir holds (whichever extractor wrote it, offline or an LLM
    endpoint) against labels in benchmarks/labels' format: precision of each conversation's top 5 concepts,
    recall of the labelled concepts, generic words among the archive's top 30, topic agreement (AMI) and the
    largest topic's share, fact recall. Read-only.

    \b
    Example: chatmem eval extraction --model qwen3:8b --effort medium --repeat 5 --base-url http://localhost:11434/v1
    Example: chatmem eval extraction --labels benchmarks/labels/dev_labels.json --data-dir ~/.chatmem
    """
    if labels is not None:
        _score_labels(app, labels, labels_data_dir, show, as_json)
        return
    if model is None:
        raise click.UsageError("give --model (the LLM experiment) or --labels (score a built data dir)")
    if labels_data_dir is not None:
        raise click.UsageError("--data-dir after `extraction` goes with --labels; for the LLM experiment put it first")
    from pydantic import ValidationError

    from contracts.settings import LLMSettings

    settings = app.settings()
    base = settings.extract.llm.model_dump() if settings.extract.llm else {}
    options = {
        "base_url": base_url,
        "api": api,
        "structured_output": structured_output,
        "temperature": temperature,
        "max_output_tokens": max_output_tokens,
    }
    overrides = {k: v for k, v in options.items() if v is not None}
    try:
        llm = LLMSettings.model_validate(
            {
                **base,
                **overrides,
                "model": model,
                "reasoning_effort": None if effort == "unset" else effort,
                "batch_api": False,
            }
        )
    except ValidationError as exc:
        raise ConfigError(f"invalid LLM settings: {exc.errors()[0]['msg']}") from exc
    segments = [] if export else segments_from_data_dir(settings, limit)
    source = f"data dir {settings.data_dir}"
    if not segments:
        export = export or DEMO_EXPORT
        source = f"export {export} (parsed on the fly)"
        segments = segments_from_export(export, settings, limit)
    if not segments:
        raise ChatmemError(f"no segments to evaluate in {source}")
    if not as_json and not settings.pipeline.quiet:
        click.echo(f"segments: {len(segments)} from {source}")
    from extract.llm_eval import evaluate  # imports openai (~0.3 s): only this command pays for it

    report = evaluate(llm, segments, repeat)
    if as_json:
        emit(report.as_dict() | {"source": source})
    else:
        _print(report)
    if report.replies == 0:  # every call failed: the figures above measure nothing
        kinds = ", ".join(f"{n} {kind}" for kind, n in sorted(report.failures.items())) or "no call made"
        first = safe_line(str(report.examples[0]["reason"]))[:300] if report.examples else ""
        where = llm.base_url or "the endpoint"
        raise ChatmemError(f"no reply from {where} ({kinds})" + (f": {first}" if first else ""))


def _score_labels(app: App, labels: Path, data_dir: Path | None, show: int, as_json: bool) -> None:
    """Issue 20's measures for a built data dir against labels (staging/graph_quality.py)."""
    from staging.graph_quality import Labels, report_lines, score_data_dir

    target = data_dir if data_dir is not None else app.settings().data_dir
    try:
        loaded = Labels.load(labels)
    except (ValueError, KeyError) as exc:
        raise ChatmemError(f"{labels} is not a labels file (benchmarks/labels/README.md): {exc}") from exc
    for name in ("archive.db", "staging.db"):
        if not (target / name).exists():
            raise ChatmemError(f"{target / name} does not exist: build the data dir first (chatmem run EXPORT)")
    result = score_data_dir(target, loaded)
    if as_json:
        emit(result | {"data_dir": str(target), "labels": str(labels)})
        return
    click.echo(f"data dir {target}: " + "\n".join(safe(line) for line in report_lines(result, show)))


eval_group.add_command(eval_recall)
