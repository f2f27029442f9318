"""Tidying the concept store: stale concepts archived per source, merged concepts' relations redirected to the
survivor, dangling links repaired. Pure functions over loaded rows; `garden.stage` reads and writes.

Stale, per source. An export is a snapshot of its own time: a 2021 export mixed with a 2025 one must not make
every 2021 concept stale. So a concept is stale only when, in every source it has evidence in, its last evidence
is more than N days older than that source's newest message (N: `stale_after_days` for an active concept,
`weak_stale_after_days` for a weak one). A concept is not false because it is old, so age archives few:
- what a conversation is about is never stale while the conversation is in the archive: its
  `keep_per_conversation` (5, the extractor's open ranks) best-evidenced concepts stay (an old export's
  conversations kept no concept at all, "Baseline schedule" with three spans archived with the rest; with 2,
  "Gift wrapping ideas", 4th of its conversation, was archived);
- nor is what the user named in their own words (`keep_said_by_user`: evidence in a user message): what the
  user brought up is what a memory is asked about later ("Coffee intake", "Holiday schedule", said once by the
  user in 2023 chats, were archived: recall takes no cues from an archived concept).
Age fades only what replies alone touched on in passing, past a conversation's best. A concept that was archived
but is no longer stale by these rules (the old whole-store rule archived it) comes back to the state its evidence
gives it.

Relations. A relation that starts or ends at a merged concept is moved to the survivor (the concept loop copied
only outgoing ones, so incoming ones pointed at a concept the loader does not draw); one that would point a
concept at itself is dropped. A relation whose end is not in the store at all is dropped, and so is an evidence
row of a concept that is not in the store. Merge pointers that
lead to another merged concept are shortened to the final survivor. Every one of these is a change with a reason.
"""

from __future__ import annotations

from collections.abc import Container, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import lru_cache

from contracts.settings import ConceptsSettings, GardenSettings
from garden.validity import Change
from staging.concepts import ConceptRow, Pointer, survivor

RelationKey = tuple[str, str, str]  # concept_id, relation, target_id


@dataclass(frozen=True, slots=True)
class EvidenceTime:
    concept_id: str
    message_id: str
    created_at: str | None
    text_key: str = ""


@dataclass(slots=True)
class ConceptPlan:
    """What the garden would change in the concept store."""

    states: list[tuple[str, str, str, str]] = field(default_factory=list)  # concept_id, from, to, reason
    relations: list[tuple[RelationKey, RelationKey | None, float]] = field(default_factory=list)  # old, new, conf
    pointers: list[tuple[str, str, str]] = field(default_factory=list)  # concept_id, old merged_into, new
    orphans: list[tuple[str, str, str]] = field(default_factory=list)  # evidence rows of no concept (key)
    changes: list[Change] = field(default_factory=list)


def plan_concepts(
    concepts: Mapping[str, ConceptRow],
    evidence: list[EvidenceTime],
    message_source: Mapping[str, int],
    source_newest: Mapping[int, str],
    relations: Iterable[tuple[str, str, str, float]],
    garden: GardenSettings,
    concept_settings: ConceptsSettings,
    message_conversation: Mapping[str, str] | None = None,
    user_messages: Container[str] = frozenset(),
) -> ConceptPlan:
    """`user_messages`: the ids of the evidence messages the user wrote (the rest are replies, tools, system)."""
    plan = ConceptPlan()
    kept = conversation_subjects(concepts, evidence, message_conversation or {}, garden.keep_per_conversation)
    said = said_by_user(evidence, user_messages) if garden.keep_said_by_user else set()
    _stale(plan, concepts, evidence, message_source, source_newest, garden, concept_settings, kept, said)
    tidy(plan, concepts, relations)
    orphans(plan, concepts, evidence)
    return plan


def tidy(plan: ConceptPlan, concepts: Mapping[str, Pointer], relations: Iterable[tuple[str, str, str, float]]) -> None:
    """Relations redirected or dropped, merge chains shortened: reads every relation and merge pointer (a few
    thousand rows; the incremental garden passes the pointers alone)."""
    _relations(plan, concepts, relations)
    _pointers(plan, concepts)


def orphans(plan: ConceptPlan, concepts: Container[str], evidence: Iterable[EvidenceTime]) -> None:
    """Evidence rows whose concept is not in the store point at nothing: dropped (the span stays in the archive)."""
    for item in evidence:
        if item.concept_id not in concepts:
            plan.orphans.append((item.concept_id, item.message_id, item.text_key))
            reason = f"dangling: evidence of {item.concept_id}, which is not in the concept store"
            plan.changes.append(
                ("evidence_dropped", f"{item.concept_id}/{item.message_id}", reason, item.text_key, None)
            )


def conversation_subjects(
    concepts: Mapping[str, ConceptRow],
    evidence: Iterable[EvidenceTime],
    message_conversation: Mapping[str, str],
    keep: int,
) -> set[str]:
    """Each conversation's `keep` concepts (live or archived) with the most evidence rows in it, ties by id."""
    if keep <= 0:
        return set()
    per_conversation: dict[str, dict[str, int]] = {}
    for item in evidence:
        conversation = message_conversation.get(item.message_id)
        row = concepts.get(item.concept_id)
        if conversation is None or row is None or row.state not in ("active", "weak", "archived"):
            continue
        counts = per_conversation.setdefault(conversation, {})
        counts[item.concept_id] = counts.get(item.concept_id, 0) + 1
    kept: set[str] = set()
    for counts in per_conversation.values():
        kept.update(best(counts, keep))
    return kept


def said_by_user(evidence: Iterable[EvidenceTime], user_messages: Container[str]) -> set[str]:
    """The concepts with evidence in a message the user wrote."""
    return {item.concept_id for item in evidence if item.message_id in user_messages}


def best(counts: Mapping[str, int], keep: int) -> list[str]:
    """The `keep` concepts with the most evidence rows in one conversation, ties by id."""
    return sorted(counts, key=lambda c: (-counts[c], c))[:keep] if keep > 0 else []


def _stale(
    plan: ConceptPlan,
    concepts: Mapping[str, ConceptRow],
    evidence: Iterable[EvidenceTime],
    message_source: Mapping[str, int],
    source_newest: Mapping[int, str],
    garden: GardenSettings,
    concept_settings: ConceptsSettings,
    kept: set[str],
    said: set[str],
) -> None:
    last = last_evidence(evidence, message_source)
    for concept_id, row in sorted(concepts.items()):
        seen = last.get(concept_id, {})
        found = judge(row, seen, source_newest, garden, concept_settings, concept_id in kept, concept_id in said)
        if found is not None:
            plan.states.append(found)
    for concept_id, before, after, reason in plan.states:
        plan.changes.append(("concept_state", concept_id, reason, before, after))


def last_evidence(evidence: Iterable[EvidenceTime], message_source: Mapping[str, int]) -> dict[str, dict[int, str]]:
    """Concept -> source -> its last evidence time there (evidence with no time or no source left out)."""
    last: dict[str, dict[int, str]] = {}
    for item in evidence:
        source = message_source.get(item.message_id)
        if item.created_at is None or source is None:
            continue
        per_source = last.setdefault(item.concept_id, {})
        if item.created_at > per_source.get(source, ""):
            per_source[source] = item.created_at
    return last


def judge(
    row: ConceptRow,
    seen: Mapping[int, str],
    source_newest: Mapping[int, str],
    garden: GardenSettings,
    concept_settings: ConceptsSettings,
    subject: bool,
    said: bool = False,
) -> tuple[str, str, str, str] | None:
    """One concept's transition (concept_id, from, to, reason), or None: what it is stays. `seen`: its last evidence
    time per source; `subject`: it is one of a conversation's kept concepts; `said`: the user named it in their own
    words (only asked with `keep_said_by_user`). The full and the incremental garden both ask this, so they decide
    alike."""
    if row.state not in ("active", "weak", "archived"):
        return None
    concept_id = row.concept_id
    evidence_state = _evidence_state(row, concept_settings)
    days = garden.stale_after_days if evidence_state == "active" else garden.weak_stale_after_days
    verdicts = [_stale_in(source, time, source_newest, days) for source, time in sorted(seen.items())]
    stale = bool(verdicts) and all(v is not None for v in verdicts)
    if row.state != "archived" and stale and not subject and not said:
        why = "; ".join(v for v in verdicts if v)
        return (concept_id, row.state, "archived", f"stale per source: {why}")
    if row.state == "archived" and not stale and verdicts:
        fresh = [s for (s, _), v in zip(sorted(seen.items()), verdicts, strict=True) if v is None]
        reason = f"not stale per source: recent evidence in source(s) {', '.join(map(str, fresh))}"
        return (concept_id, "archived", evidence_state, reason)
    if row.state == "archived" and subject:
        reason = f"what a conversation is about: one of its {garden.keep_per_conversation} best-evidenced concepts"
        return (concept_id, "archived", evidence_state, reason)
    if row.state == "archived" and said:
        return (concept_id, "archived", evidence_state, "the user named it in their own words: never stale")
    return None


def _evidence_state(row: ConceptRow, settings: ConceptsSettings) -> str:
    thin = row.evidence_count < settings.weak_min_evidence
    return "weak" if row.confidence < settings.weak_below or thin else "active"


def _stale_in(source: int, last: str, source_newest: Mapping[int, str], days: int | None) -> str | None:
    """Why the concept is stale in this source, or None when it is not."""
    newest = source_newest.get(source)
    if days is None or newest is None:
        return None
    cutoff = _cutoff(newest, days)
    if last >= cutoff:
        return None
    return f"source {source}: last evidence {last[:10]}, newest message {newest[:10]}, over {days} days"


@lru_cache(maxsize=4096)
def _cutoff(newest: str, days: int) -> str:
    """The time `days` before a source's newest message (asked once per concept and source: a few distinct)."""
    return (datetime.fromisoformat(newest) - timedelta(days=days)).isoformat()


def _relations(
    plan: ConceptPlan, concepts: Mapping[str, Pointer], relations: Iterable[tuple[str, str, str, float]]
) -> None:
    existing = {(s, r, t): c for s, r, t, c in relations}
    moved: dict[RelationKey, float] = {}
    for (source, relation, target), confidence in sorted(existing.items()):
        old = (source, relation, target)
        if source not in concepts or target not in concepts:
            missing = source if source not in concepts else target
            plan.relations.append((old, None, confidence))
            plan.changes.append(("relation_dropped", _name(old), f"dangling: {missing} is not in the concept store",
                                 _dict(old, confidence), None))  # fmt: skip
            continue
        new_source, new_target = survivor(concepts, source), survivor(concepts, target)
        if (new_source, new_target) == (source, target):
            continue
        new = (new_source, relation, new_target)
        if new_source == new_target:
            plan.relations.append((old, None, confidence))
            plan.changes.append(("relation_dropped", _name(old), "both ends merged into one concept",
                                 _dict(old, confidence), None))  # fmt: skip
            continue
        best = max(confidence, existing.get(new, 0.0), moved.get(new, 0.0))
        moved[new] = best
        plan.relations.append((old, new, best))
        gone, kept = (source, new_source) if new_source != source else (target, new_target)
        why = f"merged: {gone} -> {kept}"
        plan.changes.append(("relation_redirected", _name(old), why, _dict(old, confidence), _dict(new, best)))


def _pointers(plan: ConceptPlan, concepts: Mapping[str, Pointer]) -> None:
    for concept_id, row in sorted(concepts.items()):
        if row.merged_into is None or row.merged_into not in concepts:
            continue  # a missing survivor fails the concepts stage's own check
        final = survivor(concepts, concept_id)
        if final != row.merged_into and final != concept_id:
            plan.pointers.append((concept_id, row.merged_into, final))
            reason = f"merge chain shortened: {row.merged_into} was itself merged into {final}"
            plan.changes.append(("merge_pointer", concept_id, reason, row.merged_into, final))


def _name(key: RelationKey) -> str:
    return f"{key[0]} -{key[1]}-> {key[2]}"


def _dict(key: RelationKey, confidence: float) -> dict[str, object]:
    return {"concept_id": key[0], "relation": key[1], "target_id": key[2], "confidence": confidence}
