"""`chatmem garden --dry-run` (what the garden stage would change) and `chatmem facts` (facts over time).

Both only read: the databases are opened read-only and prefect is never imported. The garden itself runs as a
stage of the pipeline (`chatmem run`, or `chatmem stage garden --run-id R`), where its changes are recorded.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

import click

from contracts.errors import ConfigError
from contracts.fact_rules import said_of_the_user
from flows.cli_data import open_readonly, require_stage
from flows.cli_table import JSON_OPTION, cell, count_option, emit

if TYPE_CHECKING:
    from contracts.facts import FactRecord
    from flows.cli_app import App


@click.command("garden")
@click.option("--dry-run", is_flag=True, help="Show the changes the garden stage would make; write nothing.")
@count_option("--limit", default=50, help_text="Changes shown in text (0: all); --json shows all.")
@JSON_OPTION
@click.pass_obj
def garden(app: App, dry_run: bool, limit: int, as_json: bool) -> None:
    """Preview the garden stage: facts closed by newer ones, concepts archived as stale (per source), relations
    of merged concepts moved to the survivor, dangling links dropped; each change with its reason.

    The garden runs as a stage of `chatmem run` (after concepts); `chatmem stage garden --run-id R` re-runs it.

    \b
    Example: chatmem garden --dry-run
    """
    if not dry_run:
        raise ConfigError(
            "chatmem garden only previews (--dry-run); it runs as a stage: chatmem stage garden --run-id R"
        )
    from garden.stage import plan_garden

    settings = app.settings()
    now = datetime.now(UTC).isoformat(timespec="seconds")
    with (
        open_readonly(settings.archive_path, settings) as archive,
        open_readonly(settings.staging_path, settings) as staging,
    ):
        plan = plan_garden(archive, staging, settings, run_id="dry-run", now=now)
    changes = [
        {"kind": kind, "target": target, "reason": reason, "before": before, "after": after}
        for kind, target, reason, before, after in plan.changes
    ]
    if as_json:
        emit({"dry_run": True, "counts": dict(plan.counts), "changes": changes})
        return
    click.echo(f"garden (dry run, nothing written): {len(changes)} change(s)")
    for change in changes if limit <= 0 else changes[:limit]:
        click.echo(f"  {change['kind']}: {cell(str(change['target']))} - {cell(str(change['reason']))}")
    if 0 < limit < len(changes):
        click.echo(f"  ... {len(changes) - limit} more (--limit 0 or --json)")


@click.command("facts")
@click.option("--at", "at", help="Only facts valid at this date (YYYY-MM-DD or ISO datetime), in event time.")
@click.option("--query", help="Only the facts a question is about, the ones valid at --at (or now) first.")
@click.option("--subject", help="Only facts about this subject ('user', \"user's phone\").")
@click.option("--concept", "concept_id", help="The timeline of one concept: facts whose subject or value it is.")
@JSON_OPTION
@click.pass_obj
def facts(
    app: App, at: str | None, query: str | None, subject: str | None, concept_id: str | None, as_json: bool
) -> None:
    """List facts the user stated about themselves, each with when it held (valid_from..valid_to) and when chatmem
    learned it; superseded ones are kept and marked, and each value that changed is summed up in one line.

    \b
    Example: chatmem facts --query "where do I live" --at 2023-06-01
    """
    from staging.fact_timeline import as_of, change_lines, facts_at, facts_for_query, timeline

    settings = app.settings()
    _check_date(at)
    with open_readonly(settings.staging_path, settings) as staging:
        if query is not None:
            found = facts_for_query(staging, query, at)
        elif at is not None:
            found = facts_at(staging, at, subject)
        else:
            found = timeline(staging, subject=subject, concept_id=concept_id)
        found = as_of(found, at)  # as it stood then: what ended later still held
        history = change_lines(as_of(timeline(staging, subject=subject, concept_id=concept_id), at))
        if not found:
            require_stage(staging, "garden", "facts")
    if as_json:
        emit({"facts": [f.model_dump(mode="json") for f in found], "changes": history})
        return
    if not found:
        click.echo(_none_found(query, at, subject, concept_id))
    for record in found:
        click.echo(_line(record))
    relevant = {(r.subject, r.attribute) for r in found}
    for line in history:
        if any(line.startswith(f"{s} {a}:") for s, a in relevant):
            click.echo(f"  changed over time: {line}")


def _none_found(query: str | None, at: str | None, subject: str | None, concept_id: str | None) -> str:
    """Why nothing is listed, the garden having run (`require_stage`): the filters, named, left nothing; or it
    recorded no fact at all."""
    asked = [
        *([f"the question {query!r}"] if query is not None else []),
        *([f"subject {subject!r}"] if subject is not None else []),
        *([f"concept {concept_id!r}"] if concept_id is not None else []),
    ]
    if not asked and at is None:
        return "(no facts: the garden ran and recorded none; they come from what the user says about themselves)"
    when = f" as of {at}" if at is not None else ""
    matched = f" matches {' and '.join(asked)}" if asked else " held"
    relax = " / ".join(
        flag
        for flag, given in (("--at", at), ("--query", query), ("--subject", subject), ("--concept", concept_id))
        if given is not None
    )
    return f"(no facts: no fact recorded by the garden{matched}{when}; relax {relax}, or list them all: chatmem facts)"


def _line(record: FactRecord) -> str:
    value = said_of_the_user(record.value)  # "their partner": said of the user, as the subject is
    value = value if record.polarity == "positive" else f"not {value}"
    since = f"{record.valid_from:%Y-%m-%d}" if record.valid_from else "?"
    until = f"{record.valid_to:%Y-%m-%d}" if record.valid_to else "now"
    return (
        f"{record.subject} {record.attribute} {value}  [{since}..{until}] {record.state}, support {record.support},"
        f" recorded {record.recorded_at:%Y-%m-%d}  ({record.fact_id})"
    )


def _check_date(at: str | None) -> None:
    if at is None:
        return
    try:
        datetime.fromisoformat(at)
    except ValueError:
        raise ConfigError(f"--at {at!r}: expected a date YYYY-MM-DD or an ISO datetime") from None
