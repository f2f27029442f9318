"""`chatmem recall`: reconstruct a context from the memory for one question (read-only, no prefect).

It opens the stored recall index of the latest cues run (memory/index_store.py: memory-mapped arrays, texts read
from archive.db for the pieces shown), asks memory.service.Memory and prints the pieces best first (or, with
`--order time`, along their conversations), each with when, who, its score and the path that activated it.
The pipeline, prefect, scipy and the stage packages are never imported here, nor pydantic's settings and recall
models: the question is a memory.answer.Request, the answer a memory.answer.Answer (the RecallResult contract is
built for --json only), and the settings are read by memory/recall_settings.py when no CHATMEM_ variable
overrides them. What is left is numpy and the query model (onnxruntime); the garden's facts are read as plain
contracts.fact_rules.FactRow records (no pydantic).
"""

from __future__ import annotations

import os
from datetime import datetime
from typing import TYPE_CHECKING, cast

import click

from contracts.errors import ConfigError
from flows.cli_data import require_data
from flows.cli_table import JSON_OPTION, emit, shorten
from flows.terminal import safe, safe_line

if TYPE_CHECKING:
    from contracts.settings import Settings
    from flows.cli_app import App
    from memory.answer import Answer, Piece, Scope

# contracts.memory.MAX_BUDGET_TOKENS (a pydantic module, loaded only when a recall runs); a test keeps them equal
MAX_BUDGET_TOKENS = 200_000


def parse_time(value: str | None, option: str, *, end_of_day: bool = False) -> datetime | None:
    """contracts.times.parse_iso_time (a plain date: that day's first, or with `end_of_day` last, instant);
    ConfigError (exit 2) when unreadable."""
    if value is None:
        return None
    from contracts.times import parse_iso_time

    try:
        return parse_iso_time(value, end_of_day=end_of_day)
    except ValueError:
        raise ConfigError(f"{option} {value!r}: expected an ISO date such as 2024-05-01 or 2024-05-01T09:00") from None


def parse_scope(values: tuple[str, ...]) -> Scope:
    """--scope conversation:ID, source:FORMAT, since:DATE, until:DATE (repeatable)."""
    from memory.answer import Scope

    conversations: list[str] = []
    sources: list[str] = []
    since = until = None
    for value in values:
        kind, _, rest = value.partition(":")
        if not rest:
            raise ConfigError(f"--scope {value!r}: expected conversation:ID, source:FORMAT, since:DATE or until:DATE")
        if kind == "conversation":
            conversations.append(rest)
        elif kind == "source":
            sources.append(rest)
        elif kind == "since":
            since = parse_time(rest, "--scope since:")
        elif kind == "until":
            until = parse_time(rest, "--scope until:", end_of_day=True)
        else:
            raise ConfigError(f"--scope {value!r}: unknown kind {kind!r} (conversation, source, since, until)")
    return Scope(conversation_ids=conversations, sources=sources, since=since, until=until)


def print_result(result: Answer) -> None:
    """The answer for a person: facts first, then the pieces (best first, or along their conversations)."""
    for fact in result.facts:
        click.echo(f"fact: {safe_line(fact.line)}")
    for line in result.fact_changes:
        click.echo(f"fact: over time: {safe_line(line)}")
    when = result.at.isoformat() if result.at else "now"
    order = "best first" if result.order == "relevance" else "in conversation order"
    click.echo(
        f"recall at {when}: {len(result.pieces)} piece(s), {order}, {result.tokens}/{result.budget_tokens} tokens"
    )
    if result.time_filter:
        click.echo(f"time expression {result.time_filter}")
    if result.empty_reason:
        click.echo(result.empty_reason)
    if result.weak_reason:
        click.echo(result.weak_reason)
    if result.budget_note:
        click.echo(result.budget_note)
    if result.expansion is not None:
        decided = ", ".join(f"{d.tag_id} {d.action}" for d in result.expansion.decisions) or "no tag"
        note = f" ({result.expansion.fallback_reason})" if result.expansion.fallback_reason else ""
        click.echo(f"expand-or-stop by {result.expansion.decided_by}: {decided}{note}")
    if result.cues:
        click.echo("cues: " + ", ".join(f"{safe_line(c.label)} ({c.score:.2f})" for c in result.cues[:8]))
    current = None
    # numbered as shown, 1..n; a piece's place among the best (its rank) is said beside when it differs
    for number, piece in enumerate(result.pieces, 1):
        title = shorten(safe_line(piece.conversation_title or piece.conversation_id), 70)
        where = f'"{title}" [{piece.conversation_id}]'
        if result.order == "time" and piece.conversation_id != current:
            current = piece.conversation_id
            click.echo(f"\n== {where}")
        elif result.order == "relevance":
            click.echo("")
        click.echo(_head(piece, number))
        if result.order == "relevance" and piece.reply_to is None:  # a reply: the question's conversation, above
            click.echo(f"   in {where}")
        click.echo(safe(piece.text))


def _head(piece: Piece, number: int) -> str:
    """`#1 2023-05-29 11:12 user, score 2.531, via cue "Birthday"`: what brought the piece, in a few words. `number`:
    its place in the listing (1..n as shown); `, rank 16` too where that is not its place among the best (the
    JSON's `rank`: in conversation order, a reply shown under its question), as the budget's note names it."""
    stamp = piece.created_at.strftime("%Y-%m-%d %H:%M") if piece.created_at else "time unknown"
    cues = [f'cue "{shorten(safe_line(s.label), 40)}"' for s in piece.path if s.kind == "cue"]
    tags = [s for s in piece.path if s.kind == "tag"]
    how = " and ".join(cues) or ("its conversation" if tags else "direct match")
    weak = " (weak: holds under half of the query's information, its rarer words)" if piece.weak else ""
    cut = f" (a window: {piece.tokens} of its {piece.full_tokens} tokens)" if piece.full_tokens is not None else ""
    rank = f", rank {piece.rank}" if piece.rank != number else ""
    if piece.reply_to is not None:
        return f"#{number} {stamp} {piece.role}, the reply to the message above{rank}{cut}"
    return f"#{number} {stamp} {piece.role}{rank}, score {piece.score:.3f}, via {how}{weak}{cut}"


def one_question_threads() -> None:
    """Before numpy and the tokenizer load: one thread each. For one question numpy's BLAS and the tokenizer's
    pool (a thread per core each) only start, spin (sched_yield) and stop, which on a busy machine costs wall
    time and CPU, and computes nothing faster (one query's products are tiny). The numbers are the same (the
    demo's answers byte-identical). A variable already set is kept."""
    for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(name, "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


@click.command("recall")
@click.argument("question")
@click.option("--at", "at", help="Recall the memory as it stood then (ISO date): nothing later comes back.")
@click.option(
    "--budget",
    type=click.IntRange(1, MAX_BUDGET_TOKENS),
    help="Token budget of the context (default: recall.budget_tokens).",
)
@click.option(
    "--scope",
    multiple=True,
    help="Restrict the search: conversation:ID, source:FORMAT, since:DATE, until:DATE (repeatable).",
)
@click.option(
    "--max-pieces",
    default=50,
    type=click.IntRange(1, 1000),
    help="Most pieces in the context (a question and the reply shown after it count as one).",
)
@click.option(
    "--order",
    type=click.Choice(["relevance", "time"]),
    default="relevance",
    show_default=True,
    help="relevance: the best piece first; time: the reading view, along each conversation.",
)
@JSON_OPTION
@click.pass_obj
def recall(
    app: App,
    question: str,
    at: str | None,
    budget: int | None,
    scope: tuple[str, ...],
    max_pieces: int,
    order: str,
    as_json: bool,
) -> None:
    """Reconstruct what the memory holds about QUESTION: the best pieces first, each with its path.

    --json prints the RecallResult (contracts/memory.py): pieces with message ids, conversation, time, score,
    rank, "weak" (the piece, its cues and its path hold under half of the query's information: its words
    weighed by rarity, so missing the rarest one is enough) and the activation path (query -> cue -> tag ->
    content); "facts": what the user stated about it as it stood at --at (or now), each with valid_from /
    valid_to / superseded; "fact_changes": how it changed over time ("user lives in: Paris from ... until ...,
    Berlin since ..."); "empty_reason" when nothing came back and why; "weak_reason" when every piece is weak;
    "budget_note" when a piece too big for the budget left is shown as a window of it ("full_tokens" set) or the
    next best one did not fit (the answer ends before it).
    The MCP `recall` tool returns the same object.

    \b
    Example: chatmem recall "what did I decide about the Lisbon trip?" --at 2024-06-01 --budget 1500
    """
    if not question.strip():
        raise ConfigError('QUESTION is empty: ask something, e.g. chatmem recall "where did I go in May?"')
    from memory.answer import Request
    from memory.recall_settings import light_settings

    one_question_threads()
    from memory.service import Memory  # numpy, onnxruntime: after the thread settings

    # the defaults without pydantic unless a CHATMEM_ variable sets something (then the full settings)
    settings = cast("Settings", light_settings(app.data_dir)) or app.settings()
    require_data(settings, settings.archive_path, settings.staging_path)  # as every read-only command says it
    request = Request(
        query=question,
        at=parse_time(at, "--at", end_of_day=True),
        budget_tokens=budget or settings.recall.budget_tokens,
        scope=parse_scope(scope),
        max_pieces=max_pieces,
        order="time" if order == "time" else "relevance",  # click.Choice: one of the two
    )
    # The result carries the garden's facts of the question as they stood at --at (memory/recall_facts.py):
    # the MCP tool returns this same object.
    memory = Memory.open(settings, quick_start=True)  # one question: the query model need not be optimised
    if settings.recall.expand_with_llm and settings.extract.llm is not None:
        from contextlib import closing

        from staging import llm_calls
        from staging.ledger import open_staging

        # the expand-or-stop step calls the LLM: each attempt is an llm_calls row (run id "recall")
        with closing(open_staging(settings.staging_path)) as staging:
            result = memory.answer(request, on_call=llm_calls.recorder(staging, "recall"))
    else:
        result = memory.answer(request)
    if as_json:
        from memory.answer import to_contract

        emit(to_contract(result).model_dump(mode="json"))
    else:
        print_result(result)
