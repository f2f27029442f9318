"""The garden stage: facts kept current, stale and merged concepts tidied, every change a row with its reason.

The steps (the runner, flows/stage_runner.py, keeps the ledger): read the current fact mentions (staging) with
their messages' times (archive), the stored facts, the concept store and, per source, its newest message
(archive); compute with pure functions (`garden.validity` for facts, `garden.concepts` for the store); validate
(no fact closed by a statement about another subject or attribute, no interval that ends before it starts);
write in one transaction (facts, concept states with transitions, relations, merge pointers, the change log
`garden_changes`); return the counts.

`plan_garden` is the read-only half: `chatmem garden --dry-run` prints what it returns and writes nothing.

A scheduled run takes the incremental path (`plan_changed`): what the decisions read is kept in staging.db
(staging/garden_state.py), brought forward from what changed since the last garden run, and only the concepts and
fact groups whose inputs moved are judged again (garden/incremental.py, garden/facts_delta.py, garden/names.py),
with the same result as the full path. The full path runs, and rebuilds that state, when it is missing, of
another version, made with other settings or over another archive, or when much changed. Both run inside one
write transaction with the writes: a killed run leaves the state of the last finished one.
"""

from __future__ import annotations

import logging
import sqlite3
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from clients.stage import Outcome, StageContext
from contracts.errors import StageError
from contracts.settings import Settings
from garden import facts_delta, incremental
from garden import names as concept_names
from garden.concepts import ConceptPlan, EvidenceTime, judge, orphans, plan_concepts, tidy
from garden.incremental import FullInputs
from garden.validity import Change, Statement, intervals, reconcile, value_key
from staging import archive_changes, garden_state
from staging import concepts as concept_store
from staging import facts as fact_store
from staging.db import IN_VALUES, Transaction, json_values, plain_rows

log = logging.getLogger(__name__)

STAGE = "garden"


@dataclass(slots=True)
class GardenPlan:
    """Everything one garden run would change."""

    fact_rows: list[dict[str, Any]] = field(default_factory=list)
    concepts: ConceptPlan = field(default_factory=ConceptPlan)
    fact_changes: list[Change] = field(default_factory=list)
    counts: Counter[str] = field(default_factory=Counter)
    stored: dict[str, dict[str, Any]] = field(default_factory=dict)  # the stored facts the plan was made against
    names: dict[str, str] = field(default_factory=dict)  # folded name -> concept (the full path's)
    statements: list[Statement] = field(default_factory=list)

    @property
    def changes(self) -> list[Change]:
        return [*self.fact_changes, *self.concepts.changes]

    @property
    def concept_changes(self) -> list[Change]:
        return self.concepts.changes


def _table(conn: sqlite3.Connection, name: str) -> bool:
    return conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)).fetchone() is not None


def read_statements(archive: sqlite3.Connection, staging: sqlite3.Connection) -> list[Statement]:
    """Every current fact mention, with its message's time from archive.db."""
    if not _table(staging, "fact_mentions"):
        return []
    mentions = fact_store.current_mentions(staging)
    times = concept_store.message_times(archive, (m.message_id for m in mentions))
    return [
        Statement(
            m.mention_id, m.message_id, m.subject, m.attribute, m.value, m.polarity, m.text, times.get(m.message_id)
        )
        for m in mentions
    ]


def plan_garden(
    archive: sqlite3.Connection,
    staging: sqlite3.Connection,
    settings: Settings,
    *,
    run_id: str,
    now: str,
    inputs: list[FullInputs] | None = None,
) -> GardenPlan:
    """What the garden would change now (reads only; works on read-only connections): the full path, reading
    every evidence row. `inputs`: append what it read, for the incremental state (garden/incremental.py)."""
    has_concepts = concept_store.has_store(staging)
    concepts = concept_store.load_concepts(staging) if has_concepts else {}
    plan = plan_facts(archive, staging, concepts, run_id=run_id, now=now)
    if has_concepts:
        evidence = [
            EvidenceTime(str(r[0]), str(r[1]), r[2], str(r[3]))
            for r in plain_rows(
                staging, "SELECT concept_id, message_id, created_at, text_key FROM concept_evidence ORDER BY rowid"
            )
        ]
        sources, conversations, users = _message_places(archive, {e.message_id for e in evidence})
        newest = {
            int(r[0]): (str(r[1]), str(r[2]))
            for r in archive.execute(
                "SELECT source_id, MAX(created_at), uuid FROM messages WHERE created_at IS NOT NULL GROUP BY source_id"
            )
        }
        plan.concepts = plan_concepts(
            concepts,
            evidence,
            sources,
            {s: t for s, (t, _) in newest.items()},
            _relations(staging),
            settings.garden,
            settings.concepts,
            conversations,
            users,
        )
        if inputs is not None:
            inputs.append(FullInputs(concepts, evidence, sources, conversations, newest, plan.statements, plan.names))
    for kind, *_ in plan.concept_changes:
        plan.counts[kind] += 1
    return plan


def plan_facts(
    archive: sqlite3.Connection,
    staging: sqlite3.Connection,
    concepts: Mapping[str, concept_store.ConceptRow] | Mapping[str, concept_store.NameRow],
    *,
    run_id: str,
    now: str,
) -> GardenPlan:
    """The facts' half of a plan: every current statement's interval against the stored facts."""
    plan = GardenPlan()
    statements = read_statements(archive, staging)
    stored = fact_store.load_facts(staging) if _table(staging, "facts") else {}
    plan.names = concept_names.folded(concepts)
    _reconcile(plan, statements, stored, plan.names, run_id=run_id, now=now)
    return plan


def _reconcile(
    plan: GardenPlan,
    statements: list[Statement],
    stored: dict[str, dict[str, Any]],
    names: dict[str, str],
    *,
    run_id: str,
    now: str,
) -> None:
    computed = intervals(statements)
    plan.fact_rows, plan.fact_changes = reconcile(computed, stored, now, run_id, names)
    plan.stored, plan.statements = stored, statements
    plan.counts["statements"] = len(statements)
    plan.counts["facts"] = len(computed)
    plan.counts["facts_valid"] = sum(i.valid_to is None for i in computed)
    plan.counts["facts_superseded"] = sum(i.valid_to is not None for i in computed)
    plan.counts["facts_restated"] = sum(len(i.statements) > 1 for i in computed)
    for kind, *_ in plan.fact_changes:
        plan.counts[kind] += 1


def plan_changed(
    archive: sqlite3.Connection,
    staging: sqlite3.Connection,
    settings: Settings,
    delta: incremental.Delta,
    *,
    run_id: str,
    now: str,
) -> GardenPlan:
    """The incremental path: the same plan as `plan_garden`, judging only the concepts `delta` names and
    reconciling only the fact groups that can have moved (garden/facts_delta.py)."""
    plan = GardenPlan()
    groups = facts_delta.groups_to_redo(staging, delta.messages)
    statements = facts_delta.statements_of(archive, staging, groups)
    names = concept_names.linked(staging, {k for s in statements for k in (s.subject, value_key(s.value))})
    _reconcile(plan, statements, facts_delta.stored_of(staging, groups), names, run_id=run_id, now=now)
    delta.counts["fact_groups_redone"] = len(groups)
    judged = plan.concepts
    seen, kept = incremental.seen_and_kept(staging, delta.judge)
    said = incremental.said_by_user(archive, staging, delta.judge) if settings.garden.keep_said_by_user else set()
    rows = concept_store.load_concepts(staging, delta.judge)
    for concept_id in sorted(delta.judge):
        row = rows.get(concept_id)
        found = (
            None
            if row is None
            else judge(
                row,
                seen.get(concept_id, {}),
                delta.newest,
                settings.garden,
                settings.concepts,
                concept_id in kept,
                concept_id in said,
            )
        )
        if found is not None:
            judged.states.append(found)
            judged.changes.append(("concept_state", concept_id, found[3], found[1], found[2]))
    relations = _relations(staging)
    merged = {
        str(r[0]) for r in staging.execute("SELECT concept_id FROM garden_concepts WHERE merged_into IS NOT NULL")
    }
    ends = {concept_id for source, _, target, _ in relations for concept_id in (source, target)}
    pointers = concept_names.pointers(staging, merged | delta.renamed | ends)
    tidy(judged, dict(sorted(pointers.items())), relations)
    if delta.gone:
        gone = [
            EvidenceTime(str(r[0]), str(r[1]), r[2], str(r[3]))
            for r in plain_rows(
                staging,
                "SELECT concept_id, message_id, created_at, text_key FROM concept_evidence"
                f" WHERE concept_id IN {IN_VALUES} ORDER BY rowid",
                (json_values(delta.gone),),
            )
        ]
        orphans(judged, rows, gone)  # every id in `gone` is out of the store
    for kind, *_ in plan.concept_changes:
        plan.counts[kind] += 1
    plan.counts.update({f"incremental_{k}": v for k, v in delta.counts.items()})
    return plan


def _relations(staging: sqlite3.Connection) -> list[tuple[str, str, str, float]]:
    return [
        (str(r[0]), str(r[1]), str(r[2]), float(r[3]))
        for r in staging.execute("SELECT concept_id, relation, target_id, confidence FROM concept_relations")
    ]


def _message_places(archive: sqlite3.Connection, ids: set[str]) -> tuple[dict[str, int], dict[str, str], set[str]]:
    """Each message's source and conversation, and which of them the user wrote."""
    rows = plain_rows(
        archive,
        f"SELECT uuid, source_id, conversation_id, role = 'user' FROM messages WHERE uuid IN {IN_VALUES}",
        (json_values(ids),),
    )
    sources: dict[str, int] = {}
    conversations: dict[str, str] = {}
    users: set[str] = set()
    shared: dict[str, str] = {}  # one string per conversation, not one per message
    for uuid, source, conversation, by_user in rows:
        sources[str(uuid)] = int(source)
        conversations[str(uuid)] = shared.setdefault(str(conversation), str(conversation))
        if by_user:
            users.add(str(uuid))
    return sources, conversations, users


def validate(plan: GardenPlan, stored: dict[str, dict[str, Any]]) -> list[str]:
    """Step 4: the invariants a correct plan keeps. Each problem is one line."""
    rows = {**stored, **{r["fact_id"]: r for r in plan.fact_rows}}
    problems = []
    for row in rows.values():
        closer = rows.get(row["superseded_by"]) if row["superseded_by"] else None
        if row["superseded_by"] and closer is None:
            problems.append(f"{row['fact_id']} superseded by unknown fact {row['superseded_by']}")
        if closer is not None and (closer["subject"], closer["attribute"]) != (row["subject"], row["attribute"]):
            problems.append(f"{row['fact_id']} closed by a fact about another subject or attribute")
        if row["valid_from"] and row["valid_to"] and row["valid_to"] < row["valid_from"]:
            problems.append(f"{row['fact_id']} ends before it starts")
    return problems


def run(ctx: StageContext, *, now: str | None = None) -> Outcome:
    """Garden the store: facts' validity, stale concepts per source, merged concepts' relations, dangling links."""
    staging, archive, settings, run_id = ctx.staging, ctx.archive, ctx.settings, ctx.run_id
    when = now or datetime.now(UTC).isoformat(timespec="seconds")
    with Transaction(staging):  # the plan, the writes and the kept state: one transaction, whole or not at all
        kept = concept_store.has_store(staging) and garden_state.present(staging) and archive_changes.tracked(archive)
        mark = archive_changes.mark(archive) if kept else None
        # `chatmem run --force`: the full plan over every fact and concept (its kept state built again from it)
        found = incremental.usable(archive, staging, settings) if kept and not ctx.force else None
        delta = incremental.update(archive, staging, settings, found) if found is not None else None
        inputs: list[FullInputs] = []
        if delta is not None:
            plan = plan_changed(archive, staging, settings, delta, run_id=run_id, now=when)
        else:
            plan = plan_garden(archive, staging, settings, run_id=run_id, now=when, inputs=inputs)
        problems = validate(plan, plan.stored)
        if problems:
            raise StageError(STAGE, run_id, f"garden check failed: {'; '.join(problems[:5])}")
        apply_plan(staging, plan, run_id)
        if mark is not None and delta is not None:
            states = {concept_id for concept_id, *_ in plan.concepts.states}
            states.update(concept_id for concept_id, *_ in plan.concepts.pointers)
            garden_state.sync_concepts(staging, delta.changed_rows | delta.renamed | delta.gone | states)
            incremental.finish(staging, settings, mark)
            for key, total in facts_delta.totals(staging).items():  # what a full plan counts of every fact
                plan.counts[key] = total
        elif mark is not None and inputs:
            incremental.build(staging, inputs[0], settings, mark)
    counts = dict(plan.counts)
    counts["incremental"] = 1 if delta is not None else 0
    counts["facts_recorded"] = plan.counts["fact_recorded"]
    counts["facts_superseded_now"] = plan.counts["fact_superseded"]
    counts["concepts_archived"] = sum(1 for *_, after, _ in plan.concepts.states if after == "archived")
    counts["relations_redirected"] = plan.counts["relation_redirected"]
    log.info("garden - %s", counts)
    return Outcome(
        rows_in=plan.counts["statements"],
        rows_out=len(plan.changes),
        counts=counts,
        notes=[f"{len(plan.changes)} change(s); see chatmem staging show garden_changes --run-id {run_id}"]
        + (["--force: gardened in full (every fact and concept)"] if ctx.force else []),
    )


def apply_plan(staging: sqlite3.Connection, plan: GardenPlan, run_id: str) -> None:
    """Write the plan (inside the caller's transaction)."""
    fact_store.upsert_facts(staging, plan.fact_rows)
    ordinals = concept_store.transition_counts(staging, {concept_id for concept_id, *_ in plan.concepts.states})
    for concept_id, before, after, reason in plan.concepts.states:
        staging.execute("UPDATE concepts SET state = ?, run_id = ? WHERE concept_id = ?", (after, run_id, concept_id))
        ordinal = ordinals.get(concept_id, 0)
        ordinals[concept_id] = ordinal + 1
        concept_store.add_transition(
            staging, concept_id, ordinal, from_state=before, to_state=after, reason=reason, other_id=None, run_id=run_id
        )
    for old, new, confidence in plan.concepts.relations:
        staging.execute("DELETE FROM concept_relations WHERE concept_id = ? AND relation = ? AND target_id = ?", old)
        if new is not None:
            staging.execute(
                "INSERT INTO concept_relations (concept_id, relation, target_id, confidence, run_id)"
                " VALUES (?, ?, ?, ?, ?) ON CONFLICT (concept_id, relation, target_id) DO UPDATE SET"
                " confidence = MAX(confidence, excluded.confidence), run_id = excluded.run_id",
                (*new, confidence, run_id),
            )
    for concept_id, _, final in plan.concepts.pointers:
        staging.execute(
            "UPDATE concepts SET merged_into = ?, run_id = ? WHERE concept_id = ?", (final, run_id, concept_id)
        )
    staging.executemany(
        "DELETE FROM concept_evidence WHERE concept_id = ? AND message_id = ? AND text_key = ?", plan.concepts.orphans
    )
    fact_store.add_changes(staging, run_id, plan.changes, dry=False)
