"""The semantic mapper: raw extractor output (JSON) in, checked ConceptHypothesis objects and decisions out.

Entry point, for every extractor (the offline one here, the LLM one in extract/llm.py, the eval harness):

    map_raw_hypotheses(raw: object, segment: SegmentInput, known_concepts: Mapping[str, str] | None = None)
        -> tuple[list[ConceptHypothesis], list[MapperDecision]]

- `raw`: what the model answered, parsed or not: a JSON string, `{"hypotheses": [...]}` (ExtractionResponse
  shape) or a bare list of hypothesis objects. It works on plain dicts, before pydantic: a Literal field
  would reject "Project" before anything could map it to "project".
- `segment`: the segment the answer is about; evidence is checked against its messages.
- `known_concepts`: any name of a known concept (concept_id, title or alias) -> its concept_id, compared with
  case, punctuation and plurals folded (`staging.concepts.name_index(conn)` builds it from the store).
  Relation targets resolve against these and the answer's own hypotheses; others are dropped. Wrap the store's
  index in `KnownNames` when mapping many segments against it: its folded keys are then computed once, not once
  per segment (folding every name of a 24k-concept store per segment was 10x extract's per-segment cost on an
  incremental run, when the store is full and the new segments are few).

It maps near-miss types and relations onto the ontology (`extract.synonyms`), normalises titles,
aliases and concept_id, clamps confidences to [0, 1], sets state/revision_count/first_seen/last_seen to what
chatmem decides, and verifies every evidence span: the message_id must be in the segment and the text must
occur in that message (NFKC, case and whitespace folded). Unverifiable spans are dropped; a hypothesis left
with no evidence is rejected. Nothing is repaired into a fact: a wrong message id is never re-pointed. Each
change is a MapperDecision (rule, before, after), stored by the extract stage. Pure: no I/O, no clock.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from typing import Any

from pydantic import ValidationError

from contracts.concepts import ConceptHypothesis
from extract import text as _text
from extract.synonyms import RELATION_SYNONYMS, TYPE_SYNONYMS, ontology_key
from extract.types import SegmentInput, SegmentMessage

# Pure functions of short strings (titles, aliases, concept ids, evidence spans) that every hypothesis goes through,
# cached: the offline extractor's are mapped twice (as proposed, then against the run's known concepts), and a
# conversation's concepts recur from segment to segment. (A message's whole text is folded by `_folded`.)
clean_name = lru_cache(maxsize=1 << 14)(_text.clean_name)
clean_title = lru_cache(maxsize=1 << 14)(_text.clean_title)
fold = lru_cache(maxsize=1 << 14)(_text.fold)
match_key = lru_cache(maxsize=1 << 16)(_text.match_key)
slug = lru_cache(maxsize=1 << 14)(_text.slug)

MIN_SPAN_CHARS = 3  # "a", "it": a span this short occurs everywhere and supports nothing
FIELDS = tuple(ConceptHypothesis.model_fields)
SPAN_FIELDS = ("source_id", "message_id", "text", "confidence")
RELATION_FIELDS = ("target_id", "relation", "confidence")


# Rules that reject a whole hypothesis (the others change, drop or default one field).
REJECT_RULES = frozenset(
    {"not_an_object", "title_missing", "type_unknown", "concept_id_missing", "no_evidence", "contract_violation"}
)


@dataclass(frozen=True, slots=True)
class MapperDecision:
    """One thing the mapper changed, dropped or rejected, and why."""

    rule: str
    hypothesis: int  # index in the raw answer; -1: the answer as a whole
    field: str  # "type", "evidence_spans[1]", "" for the whole hypothesis
    before: str | None  # JSON of the value as given
    after: str | None  # JSON of the value kept; None when dropped or rejected


class KnownNames(Mapping[str, str]):
    """A read-only name -> concept_id map that folds its names (`match_key`) once, on first use."""

    def __init__(self, names: Mapping[str, str]) -> None:
        self._names = dict(names)
        self._keyed: dict[str, str] | None = None

    def __getitem__(self, name: str) -> str:
        return self._names[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)

    def keyed(self) -> dict[str, str]:
        """Folded name -> concept_id (a later name with the same key wins, as in a per-call fold)."""
        if self._keyed is None:
            self._keyed = keyed_names(self._names)
        return self._keyed

    def __reduce__(self) -> tuple[type[KnownNames], tuple[dict[str, str]]]:
        return KnownNames, (self._names,)  # the folded keys are not shipped: a worker folds them once itself


def keyed_names(known_concepts: Mapping[str, str] | None) -> dict[str, str]:
    """Folded name -> concept_id, for relation targets (see the module docstring)."""
    if isinstance(known_concepts, KnownNames):
        return known_concepts.keyed()
    return {match_key(name): concept_id for name, concept_id in (known_concepts or {}).items()}


def map_raw_hypotheses(
    raw: object, segment: SegmentInput, known_concepts: Mapping[str, str] | None = None
) -> tuple[list[ConceptHypothesis], list[MapperDecision]]:
    """Normalise and verify raw hypotheses for `segment`; see the module docstring."""
    log = _Log()
    items = _items(raw, log)
    messages = {m.message_id: m for m in segment.messages}
    drafts: list[tuple[int, dict[str, Any]]] = []
    for index, item in enumerate(items):
        draft = _hypothesis(index, item, segment, messages, log)
        if draft is not None:
            drafts.append((index, draft))
    drafts = _dedupe(drafts, log)
    local = {match_key(d[f]): d["concept_id"] for _, d in drafts for f in ("concept_id", "title")}
    known = keyed_names(known_concepts)
    result: list[ConceptHypothesis] = []
    for index, draft in drafts:
        draft["relations"] = _relations(index, draft, local, known, log)
        try:
            result.append(ConceptHypothesis.model_validate(draft))
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
            log.add("contract_violation", index, "", draft, None, note=problems)
    return result, log.decisions


class _Log:
    def __init__(self) -> None:
        self.decisions: list[MapperDecision] = []

    def add(self, rule: str, index: int, field: str, before: object, after: object, note: str | None = None) -> None:
        after_text = None if after is None else _json(after)
        if note is not None:
            after_text = _json({"kept": after, "why": note})
        self.decisions.append(MapperDecision(rule, index, field, _json(before), after_text))


def _json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, default=str, sort_keys=True)


def _items(raw: object, log: _Log) -> list[object]:
    if isinstance(raw, str | bytes):
        try:
            raw = json.loads(raw)
        except ValueError as exc:
            log.add("response_not_json", -1, "", str(raw)[:2000], None, note=str(exc))
            return []
    if isinstance(raw, list):
        log.add("response_unwrapped", -1, "", "list", "{hypotheses: list}")
        return raw
    if isinstance(raw, dict) and isinstance(raw.get("hypotheses"), list):
        for extra in sorted(set(raw) - {"hypotheses", "facts"}):  # facts: extract/fact_mapper.py
            log.add("unknown_field", -1, extra, raw[extra], None)
        return list(raw["hypotheses"])
    log.add("response_shape", -1, "", raw, None, note='expected {"hypotheses": [...]}')
    return []


def _hypothesis(
    index: int, item: object, segment: SegmentInput, messages: Mapping[str, SegmentMessage], log: _Log
) -> dict[str, Any] | None:
    if not isinstance(item, dict):
        log.add("not_an_object", index, "", item, None)
        return None
    for extra in sorted(set(item) - set(FIELDS)):
        log.add("unknown_field", index, extra, item[extra], None)
    title = clean_title(item["title"]) if isinstance(item.get("title"), str) else ""
    if not title:
        log.add("title_missing", index, "title", item.get("title"), None)
        return None
    if title != item["title"]:
        log.add("title_normalised", index, "title", item["title"], title)
    kind = _mapped(item.get("type"), TYPE_SYNONYMS)
    if kind is None:
        log.add("type_unknown", index, "type", item.get("type"), None)
        return None
    if kind != item["type"]:
        log.add("type_synonym", index, "type", item["type"], kind)
    given_id = item.get("concept_id")
    concept_id = (slug(given_id) if isinstance(given_id, str) else "") or slug(title)
    if not concept_id:
        log.add("concept_id_missing", index, "concept_id", given_id, None)
        return None
    if concept_id != given_id:
        log.add("concept_id_normalised", index, "concept_id", given_id, concept_id)
    confidence = _confidence(item.get("confidence"), 0.5, index, "confidence", log)
    draft: dict[str, Any] = {
        "concept_id": concept_id,
        "title": title,
        "type": kind,
        "description": _description(index, item.get("description"), log),
        "state": "active",
        "confidence": confidence,
        "aliases": _aliases(index, item.get("aliases"), title, log),
        "evidence_spans": _spans(index, item.get("evidence_spans"), confidence, segment, messages, log),
        "relations": item.get("relations"),
        "revision_count": 0,
        "first_seen": None,
        "last_seen": None,
    }
    for field, fixed in (("state", "active"), ("revision_count", 0)):
        if field in item and item[field] != fixed:
            log.add(f"{field}_reset", index, field, item[field], fixed)
    if not draft["evidence_spans"]:
        log.add("no_evidence", index, "", title, None)
        return None
    times = sorted(t for s in draft["evidence_spans"] if (t := messages[s["message_id"]].created_at) is not None)
    draft["first_seen"], draft["last_seen"] = (times[0], times[-1]) if times else (None, None)
    for field in ("first_seen", "last_seen"):  # null ("unknown") is filled in silently; a wrong time is noted
        if item.get(field) is not None and _as_time(item.get(field)) != draft[field]:
            log.add("time_from_evidence", index, field, item.get(field), draft[field])
    return draft


def _mapped(value: object, table: Mapping[str, str]) -> str | None:
    return table.get(ontology_key(value)) if isinstance(value, str) else None


def _as_time(value: object) -> datetime | None:
    if isinstance(value, datetime):
        return value
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
    return None


def _confidence(value: object, default: float, index: int, field: str, log: _Log) -> float:
    number: float | None = None
    if isinstance(value, int | float) and not isinstance(value, bool):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(value.strip().rstrip("%")) / (100 if value.strip().endswith("%") else 1)
        except ValueError:
            number = None
    if number is None or math.isnan(number):
        log.add("confidence_defaulted", index, field, value, default)
        return default
    clamped = min(1.0, max(0.0, number))
    if clamped != value:
        log.add("confidence_parsed" if isinstance(value, str) else "confidence_clamped", index, field, value, clamped)
    return clamped


def _description(index: int, value: object, log: _Log) -> str:
    if not isinstance(value, str):
        log.add("description_defaulted", index, "description", value, "")
        return ""
    cleaned = " ".join(value.split())
    if cleaned != value:
        log.add("description_normalised", index, "description", value, cleaned)
    return cleaned


def _aliases(index: int, value: object, title: str, log: _Log) -> list[str]:
    if value is None or not isinstance(value, list):
        if value is not None:
            log.add("aliases_not_a_list", index, "aliases", value, [])
        return []
    seen = {match_key(title)}
    kept: list[str] = []
    for position, alias in enumerate(value):
        field = f"aliases[{position}]"
        cleaned = clean_title(alias) if isinstance(alias, str) else ""
        key = match_key(cleaned)
        if not key or key in seen:
            log.add("alias_dropped", index, field, alias, None, note="empty, repeated or the title")
            continue
        seen.add(key)
        if cleaned != alias:
            log.add("alias_normalised", index, field, alias, cleaned)
        kept.append(cleaned)
    return kept


def _spans(
    index: int,
    value: object,
    confidence: float,
    segment: SegmentInput,
    messages: Mapping[str, SegmentMessage],
    log: _Log,
) -> list[dict[str, Any]]:
    if not isinstance(value, list):
        log.add("evidence_not_a_list", index, "evidence_spans", value, None)
        return []
    kept: list[dict[str, Any]] = []
    for position, span in enumerate(value):
        field = f"evidence_spans[{position}]"
        if not isinstance(span, dict):
            log.add("evidence_not_an_object", index, field, span, None)
            continue
        message_id = span.get("message_id")
        message = messages.get(message_id) if isinstance(message_id, str) else None
        if message is None:
            log.add("evidence_message_not_in_segment", index, field, span, None)
            continue
        text = span.get("text")
        trimmed = clean_name(text) if isinstance(text, str) else ""
        trimmed = trimmed.strip("…").removeprefix("...").removesuffix("...").strip()
        folded = fold(trimmed)
        if len(folded) < MIN_SPAN_CHARS:
            log.add("evidence_text_too_short", index, field, span, None)
            continue
        # said as written: no need to fold the whole message (a 20 MB paste takes seconds to fold)
        if trimmed not in message.text and folded not in _folded(message):
            log.add("evidence_text_not_in_message", index, field, span, None)
            continue
        if trimmed != text:
            log.add("evidence_text_trimmed", index, f"{field}.text", text, trimmed)
        if span.get("source_id") != segment.segment_id:
            log.add("evidence_source_id", index, f"{field}.source_id", span.get("source_id"), segment.segment_id)
        for extra in sorted(set(span) - set(SPAN_FIELDS)):
            log.add("unknown_field", index, f"{field}.{extra}", span[extra], None)
        kept.append(
            {
                "source_id": segment.segment_id,
                "message_id": message.message_id,
                "text": trimmed,
                "confidence": _confidence(span.get("confidence"), confidence, index, f"{field}.confidence", log),
            }
        )
    return kept


@lru_cache(maxsize=256)
def _folded(message: SegmentMessage) -> str:
    """A message's folded text, computed once per message however many spans cite it."""
    return _text.fold(message.text)


def _dedupe(drafts: list[tuple[int, dict[str, Any]]], log: _Log) -> list[tuple[int, dict[str, Any]]]:
    """Two hypotheses with one concept_id in one answer become one (the first), with both sets of evidence."""
    first: dict[str, dict[str, Any]] = {}
    kept: list[tuple[int, dict[str, Any]]] = []
    for index, draft in drafts:
        earlier = first.get(draft["concept_id"])
        if earlier is None:
            first[draft["concept_id"]] = draft
            kept.append((index, draft))
            continue
        log.add("duplicate_hypothesis", index, "", draft["concept_id"], earlier["concept_id"])
        seen = {(s["message_id"], fold(s["text"])) for s in earlier["evidence_spans"]}
        for span in draft["evidence_spans"]:
            if (span["message_id"], fold(span["text"])) not in seen:
                earlier["evidence_spans"].append(span)
        keys = {match_key(a) for a in earlier["aliases"]} | {match_key(earlier["title"])}
        earlier["aliases"] += [a for a in [draft["title"], *draft["aliases"]] if match_key(a) not in keys]
        earlier["confidence"] = max(earlier["confidence"], draft["confidence"])
    return kept


def _relations(
    index: int, draft: dict[str, Any], local: Mapping[str, str], known: Mapping[str, str], log: _Log
) -> list[dict[str, Any]]:
    value = draft["relations"]
    if value is None or not isinstance(value, list):
        if value is not None:
            log.add("relations_not_a_list", index, "relations", value, [])
        return []
    kept: list[dict[str, Any]] = []
    seen: set[tuple[str, str]] = set()
    for position, relation in enumerate(value):
        field = f"relations[{position}]"
        if not isinstance(relation, dict):
            log.add("relation_not_an_object", index, field, relation, None)
            continue
        kind = _mapped(relation.get("relation"), RELATION_SYNONYMS)
        if kind is None:
            log.add("relation_type_unknown", index, field, relation, None)
            continue
        if kind != relation["relation"]:
            log.add("relation_synonym", index, f"{field}.relation", relation["relation"], kind)
        given = relation.get("target_id")
        key = match_key(given) if isinstance(given, str) else ""
        target = local.get(key) or known.get(key)
        if target is None:
            log.add("relation_target_unknown", index, field, relation, None)
            continue
        if target == draft["concept_id"] or (target, kind) in seen:
            log.add("relation_dropped", index, field, relation, None, note="self-relation or repeated")
            continue
        if target != given:
            log.add("relation_target_resolved", index, f"{field}.target_id", given, target)
        seen.add((target, kind))
        confidence = _confidence(relation.get("confidence"), draft["confidence"], index, f"{field}.confidence", log)
        kept.append({"target_id": target, "relation": kind, "confidence": confidence})
    return kept
