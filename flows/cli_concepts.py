"""`chatmem concepts`: the concept store, read-only (staging.db opened read-only; prefect never imported)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from flows.cli_inspect import JSON_OPTION, cell, emit, open_readonly, require_stage
from flows.terminal import safe_line

if TYPE_CHECKING:
    from contracts.concepts import ConceptHypothesis
    from flows.cli import App

# contracts.concepts.CONCEPT_TYPES / CONCEPT_STATES (a pydantic module: loaded only when the command runs, so
# that a usage error answers at once); tests/test_cli_startup.py keeps them equal
CONCEPT_TYPES = ("behavioral_pattern", "project", "event", "tension", "goal", "belief", "entity")
CONCEPT_STATES = ("active", "weak", "merged", "split", "archived")


@click.command("concepts")
@click.option("--type", "concept_type", type=click.Choice(CONCEPT_TYPES), help="Only concepts of this type.")
@click.option("--state", type=click.Choice(CONCEPT_STATES), help="Only concepts in this state.")
@click.option("--limit", default=50, show_default=True, help="How many concepts, most evidence first (0: all).")
@click.option("--evidence", default=3, show_default=True, help="Evidence spans shown per concept in text (0: all).")
@JSON_OPTION
@click.pass_obj
def concepts(app: App, concept_type: str | None, state: str | None, limit: int, evidence: int, as_json: bool) -> None:
    """List concepts with their evidence (message_id, text, confidence), relations, state and revision count.

    --json prints a list of ConceptHypothesis objects (the contract in contracts/concepts.py), every evidence
    span included.

    \b
    Example: chatmem concepts --type project --state active --json
    """
    from staging.concepts import list_concepts

    settings = app.settings()
    with open_readonly(settings.staging_path, settings) as conn:
        found = list_concepts(conn, concept_type=concept_type, state=state)
        if not found:
            require_stage(conn, "concepts", "concepts")
    if limit > 0:
        found = found[:limit]
    if as_json:
        emit([hypothesis.model_dump(mode="json") for hypothesis, _ in found])
        return
    if not found:
        click.echo("(no concepts: run `chatmem run EXPORT` first, or relax --type / --state)")
    for hypothesis, merged_into in found:
        _show(hypothesis, merged_into, evidence)


def _show(concept: ConceptHypothesis, merged_into: str | None, evidence: int) -> None:
    seen = (
        f"{concept.first_seen:%Y-%m-%d}..{concept.last_seen:%Y-%m-%d}"
        if concept.first_seen and concept.last_seen
        else "-"
    )
    click.echo(
        f"{safe_line(concept.title)}  [{concept.concept_id}] {concept.type}, {concept.state},"
        f" revision {concept.revision_count},"
        f" confidence {concept.confidence:.2f}, {len(concept.evidence_spans)} evidence, seen {seen}"
    )
    if merged_into:
        click.echo(f"    merged into {merged_into}")
    if concept.aliases:
        click.echo(f"    aliases: {safe_line(', '.join(concept.aliases))}")
    spans = concept.evidence_spans if evidence <= 0 else concept.evidence_spans[:evidence]
    for span in spans:
        click.echo(f"    evidence {span.message_id} ({span.confidence:.2f}): {cell(span.text)}")
    if len(spans) < len(concept.evidence_spans):
        click.echo(f"    ... {len(concept.evidence_spans) - len(spans)} more (--evidence 0 or --json)")
    for relation in concept.relations:
        click.echo(f"    {relation.relation} -> {relation.target_id} ({relation.confidence:.2f})")
