"""`chatmem recall`: reconstruct a context from the memory for one question (read-only, no prefect).

It loads the latest cues run of the data dir into the embedded engine (memory.index), asks memory.recall and
prints the pieces in conversation order, each with when, who, its score and the path that activated it.
"""

from __future__ import annotations

from contextlib import closing
from datetime import datetime
from typing import TYPE_CHECKING

import click

from contracts.errors import ConfigError
from contracts.memory import MAX_BUDGET_TOKENS, RecallRequest, RecallResult, RecallScope, parse_iso_time
from flows.cli_inspect import JSON_OPTION, emit
from memory.service import Memory
from staging import llm_calls
from staging.ledger import open_staging

if TYPE_CHECKING:
    from flows.cli import App


def parse_time(value: str | None, option: str, *, end_of_day: bool = False) -> datetime | None:
    """contracts.memory.parse_iso_time (a plain date: that day's first, or with `end_of_day` last, instant);
    ConfigError (exit 2) when unreadable."""
    if value is None:
        return None
    try:
        return parse_iso_time(value, end_of_day=end_of_day)
    except ValueError:
        raise ConfigError(f"{option} {value!r}: expected an ISO date such as 2024-05-01 or 2024-05-01T09:00") from None


def parse_scope(values: tuple[str, ...]) -> RecallScope:
    """--scope conversation:ID, source:FORMAT, since:DATE, until:DATE (repeatable)."""
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
    return RecallScope(conversation_ids=conversations, sources=sources, since=since, until=until)


def print_result(result: RecallResult) -> None:
    when = result.at.isoformat() if result.at else "now"
    click.echo(f"recall at {when}: {len(result.pieces)} piece(s), {result.tokens}/{result.budget_tokens} tokens")
    if result.time_filter:
        click.echo(f"time expression {result.time_filter}")
    if result.empty_reason:
        click.echo(result.empty_reason)
    if result.expansion is not None:
        decided = ", ".join(f"{d.tag_id} {d.action}" for d in result.expansion.decisions) or "no tag"
        note = f" ({result.expansion.fallback_reason})" if result.expansion.fallback_reason else ""
        click.echo(f"expand-or-stop by {result.expansion.decided_by}: {decided}{note}")
    if result.cues:
        click.echo("cues: " + ", ".join(f"{c.label} ({c.score:.2f})" for c in result.cues[:8]))
    current = None
    for piece in result.pieces:
        if piece.conversation_id != current:
            current = piece.conversation_id
            click.echo(f"\n== {piece.conversation_title or current} [{current}]")
        stamp = piece.created_at.isoformat(timespec="minutes") if piece.created_at else "?"
        path = " -> ".join(f"{s.kind}:{s.label[:30]}" for s in piece.path[1:-1]) or "direct match"
        click.echo(f"-- #{piece.rank} {stamp} {piece.role} score {piece.score:.3f} via {path}")
        click.echo(piece.text)


@click.command("recall")
@click.argument("question")
@click.option("--at", "at", help="Recall the memory as it stood then (ISO date): nothing later comes back.")
@click.option(
    "--budget",
    type=click.IntRange(1, MAX_BUDGET_TOKENS),
    help="Token budget of the context (default: memory.budget_tokens).",
)
@click.option(
    "--scope",
    multiple=True,
    help="Restrict the search: conversation:ID, source:FORMAT, since:DATE, until:DATE (repeatable).",
)
@click.option("--max-pieces", default=50, type=click.IntRange(1, 1000), help="Most pieces in the context.")
@JSON_OPTION
@click.pass_obj
def recall(
    app: App,
    question: str,
    at: str | None,
    budget: int | None,
    scope: tuple[str, ...],
    max_pieces: int,
    as_json: bool,
) -> None:
    """Reconstruct what the memory holds about QUESTION: pieces in conversation order, each with its path.

    --json prints the RecallResult (contracts/memory.py): pieces with message ids, conversation, time, score,
    rank and the activation path (query -> cue -> tag -> content); "facts": what the user stated about it as it
    stood at --at (or now), each with valid_from / valid_to / superseded; "fact_changes": how it changed over time
    ("user lives in: Paris from ... until ..., Berlin since ..."); "empty_reason" when nothing relevant was found.

    \b
    Example: chatmem recall "what did I decide about the Lisbon trip?" --at 2024-06-01 --budget 1500
    """
    if not question.strip():
        raise ConfigError('QUESTION is empty: ask something, e.g. chatmem recall "where did I go in May?"')
    settings = app.settings()
    request = RecallRequest(
        query=question,
        at=parse_time(at, "--at", end_of_day=True),
        budget_tokens=budget or settings.memory.budget_tokens,
        scope=parse_scope(scope),
        max_pieces=max_pieces,
    )
    # The result carries the garden's facts of the question as they stood at --at (memory/recall_facts.py).
    memory = Memory.open(settings)
    if settings.memory.expand_with_llm and settings.extract.llm is not None:
        # the expand-or-stop step calls the LLM: each attempt is an llm_calls row (run id "recall")
        with closing(open_staging(settings.staging_path)) as staging:
            result = memory.recall(request, on_call=llm_calls.recorder(staging, "recall"))
    else:
        result = memory.recall(request)
    if as_json:
        emit(result.model_dump(mode="json"))
    else:
        for fact in result.facts:
            click.echo(f"fact: {fact.line}")
        for line in result.fact_changes:
            click.echo(f"fact: changed over time: {line}")
        print_result(result)
