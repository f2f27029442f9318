"""`chatmem concepts`: the concept store, read-only (staging.db opened read-only; prefect never imported)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import click

from flows.cli_data import open_readonly, require_stage
from flows.cli_table import CELL_WIDTH, JSON_OPTION, count_option, emit, terminal_width
from flows.terminal import safe_line

if TYPE_CHECKING:
    from contracts.concepts import ConceptHypothesis
    from flows.cli_app import App

# contracts.concepts.CONCEPT_TYPES / CONCEPT_STATES (a pydantic module: loaded only when the command runs, so
# that a usage error answers at once); tests/test_cli_startup.py keeps them equal
CONCEPT_TYPES = ("behavioral_pattern", "project", "event", "tension", "goal", "belief", "entity")
CONCEPT_STATES = ("active", "weak", "merged", "split", "archived")
# States of a concept that no longer stands for itself (folded into another, split, retired by the garden): listed
# only when asked for (`--state`, `--all`). Session 39's read of the graph found 971 of the demo's 4,577 listed
# concepts in them, "SQL query" in the exports' top 40 beside the "SQL" it was merged into.
RETIRED_STATES = ("merged", "split", "archived")


@click.command("concepts")
@click.option("--type", "concept_type", type=click.Choice(CONCEPT_TYPES), help="Only concepts of this type.")
@click.option("--state", type=click.Choice(CONCEPT_STATES), help="Only concepts in this state.")
@click.option("--all", "show_all", is_flag=True, help="Also merged, split and archived ones.")
@count_option("--limit", default=50, help_text="How many concepts, most evidence first (0: all).")
@count_option("--evidence", default=3, help_text="Evidence spans shown per concept in text (0: all).")
@JSON_OPTION
@click.pass_obj
def concepts(
    app: App, concept_type: str | None, state: str | None, show_all: bool, limit: int, evidence: int, as_json: bool
) -> None:
    """List concepts with their evidence (message_id, text, confidence), relations, state and revision count.

    Active and weak concepts by default: merged, split and archived ones only with --all or --state.
    --json prints a list of ConceptHypothesis objects (the contract in contracts/concepts.py), every evidence
    span included.

    \b
    Example: chatmem concepts --type project --state active --json
    """
    from staging.concepts import kind_counts, list_concepts

    settings = app.settings()
    kinds: dict[tuple[str, str], int] = {}
    with open_readonly(settings.staging_path, settings) as conn:
        found = list_concepts(conn, concept_type=concept_type, state=state)
        retired = 0
        if state is None and not show_all:
            found, retired = _standing(found, limit)
        if not found:
            require_stage(conn, "concepts", "concepts")
            kinds = kind_counts(conn)
    if limit > 0:
        found = found[:limit]
    if as_json:
        emit([hypothesis.model_dump(mode="json") for hypothesis, _ in found])
        return
    if not found and not retired:
        click.echo(_none_found(kinds, concept_type, state))
    for hypothesis, merged_into in found:
        _show(hypothesis, merged_into, evidence)
    if retired:
        click.echo(f"({retired:,} merged, split or archived concept(s) ranked among these not listed: --all)")


def _standing(
    found: list[tuple[ConceptHypothesis, str | None]], limit: int
) -> tuple[list[tuple[ConceptHypothesis, str | None]], int]:
    """The concepts not retired, and how many retired ones ranked among those the list shows (within `limit` of
    them, 0: all): a footer says that many were left out, and none when the top of the list held none."""
    kept: list[tuple[ConceptHypothesis, str | None]] = []
    retired = 0
    for hypothesis, into in found:
        if hypothesis.state not in RETIRED_STATES:
            kept.append((hypothesis, into))
        elif limit <= 0 or len(kept) < limit:
            retired += 1
    return kept, retired


def _none_found(kinds: dict[tuple[str, str], int], concept_type: str | None, state: str | None) -> str:
    """Why the list is empty: no concept at all (run first), or none of this --type / --state among those there
    are, named with what there is (the cold try read "run first" beside 993 concepts)."""
    if not kinds:
        return "(no concepts: run `chatmem run EXPORT` first)"
    asked = " and ".join(f"{name} {value}" for name, value in (("--type", concept_type), ("--state", state)) if value)
    present: dict[str, dict[str, int]] = {"type": {}, "state": {}}
    for (kind, in_state), n in kinds.items():
        if state is None or in_state == state:  # the types there are in the state asked for
            present["type"][kind] = present["type"].get(kind, 0) + n
        if concept_type is None or kind == concept_type:  # the states the type asked for is in
            present["state"][in_state] = present["state"].get(in_state, 0) + n
    lines = [f"(no concept matches {asked}; there are {sum(kinds.values()):,} concepts in all)"]
    for name, value in (("type", concept_type), ("state", state)):
        if value and present[name]:
            counts = ", ".join(f"{k} {n:,}" for k, n in sorted(present[name].items(), key=lambda kv: (-kv[1], kv[0])))
            among = f" of {state} concepts" if name == "type" and state else ""
            among = f" of {concept_type} concepts" if name == "state" and concept_type else among
            lines.append(f"  {name}s{among}: {counts}")
    return "\n".join(lines)


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
    names = [concept.title, *concept.aliases]
    for span in spans:
        head = f"    evidence {span.message_id} ({span.confidence:.2f}): "
        width = max(CELL_WIDTH, terminal_width() - len(head))
        click.echo(head + around(span.text, names, width))
    if len(spans) < len(concept.evidence_spans):
        click.echo(f"    ... {len(concept.evidence_spans) - len(spans)} more (--evidence 0 or --json)")
    for relation in concept.relations:
        click.echo(f"    {relation.relation} -> {relation.target_id} ({relation.confidence:.2f})")


_NAME_WORD = re.compile(r"[^\W_]{3,}")


def around(text: str, names: list[str], width: int) -> str:
    """The span on one line in at most `width` characters: a window around the concept's surface form (the words
    of its title and aliases, the stretch holding the most of them), "…" where it was cut. The middle of a span
    is where the concept was found, so it is never the part cut out."""
    line = safe_line(text)
    if len(line) <= width:
        return line
    words = {w.casefold() for name in names for w in _NAME_WORD.findall(name)}
    lower = line.casefold()
    spots = [
        (m.start(), word)
        for word in sorted(words)  # sorted: ties between windows go the same way on every call (a set's order
        # follows the process's hash seed)
        for m in re.finditer(rf"\b{re.escape(word[:-1] if len(word) > 4 and word.endswith('s') else word)}", lower)
    ]
    from memory.text import excerpt  # here: memory.text imports numpy, which `--help` and usage errors never need

    return excerpt(line, spots, width - 2, len, tail=8, snap=20)  # width - 2: room for the two ellipses
