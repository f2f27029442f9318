"""The fact mapper: raw facts (the offline rules' dicts or an LLM's `facts` list) in, checked `Fact` objects out.

    map_raw_facts(raw: object, segment: SegmentInput) -> tuple[list[Fact], list[MapperDecision]]

The same rules as the concept mapper (extract/mapper.py), whose evidence check it shares: the cited message must
be in the segment and the quoted text must occur in it, or the fact is rejected; nothing is re-pointed. On top:
the message must be the user's own (an assistant's suggestion is not a fact about the user), subject, attribute
and value must be non-empty, the polarity must be one of the two (or a plain synonym of one). Names are folded
the same way whoever proposed them: "I", "me", "the user" -> "user"; "my phone" -> "user's phone". Decisions are
stored beside the concept mapper's, with the field prefixed `facts[i]` and rules prefixed `fact_`. Pure.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from typing import Any

from pydantic import ValidationError

from contracts.facts import USER_SUBJECT, Fact
from extract.mapper import MapperDecision, _confidence, _Log, _spans  # one evidence check for concepts and facts
from extract.text import clean_name, fold
from extract.types import SegmentInput

FACT_FIELDS = tuple(Fact.model_fields)
_SELF = frozenset({"i", "me", "myself", "user", "the user", "me myself", "self"})
_POLARITY = {
    "positive": "positive",
    "true": "positive",
    "yes": "positive",
    "affirmed": "positive",
    "holds": "positive",
    "negative": "negative",
    "false": "negative",
    "no": "negative",
    "not": "negative",
    "negated": "negative",
    "no longer": "negative",
}
_SPACE = re.compile(r"\s+")


def subject_key(subject: str) -> str:
    """The folded subject: 'user', or "user's phone" for "my phone" / "the user's phone"."""
    text = _SPACE.sub(" ", fold(subject).strip(' .,:;!?"')).strip()
    if text in _SELF:
        return USER_SUBJECT
    for prefix in ("my ", "the user's ", "user's ", "users ", "the user "):
        if text.startswith(prefix):
            rest = text[len(prefix) :].strip()
            return f"{USER_SUBJECT}'s {rest}" if rest else USER_SUBJECT
    return text


def attribute_key(attribute: str) -> str:
    """The folded attribute: lowercase words, single spaces, no surrounding punctuation."""
    return _SPACE.sub(" ", fold(attribute).replace("_", " ").strip(" .,:;!?\"'")).strip()


def map_raw_facts(raw: object, segment: SegmentInput) -> tuple[list[Fact], list[MapperDecision]]:
    """Normalise and verify raw facts for `segment` (see the module docstring)."""
    log = _Log()
    items = _items(raw, log)
    messages = {m.message_id: m for m in segment.messages}
    facts: list[Fact] = []
    seen: set[tuple[str, str, str, str, str]] = set()
    for index, item in enumerate(items):
        before = len(log.decisions)
        fact = _fact(index, item, segment, messages, log)
        # The evidence check names its fields "evidence_spans[0]": re-label them as this fact's.
        for position in range(before, len(log.decisions)):
            decision = log.decisions[position]
            field = decision.field.replace("evidence_spans[0]", "evidence")
            rule = decision.rule if decision.rule.startswith("fact_") else f"fact_{decision.rule}"
            log.decisions[position] = replace(decision, field=f"facts[{index}].{field}".rstrip("."), rule=rule)
        if fact is None:
            continue
        key = (fact.subject, fact.attribute, fold(fact.value), fact.polarity, fact.evidence.message_id)
        if key in seen:
            log.add("fact_duplicate", index, f"facts[{index}]", _dump(fact), None)
            continue
        seen.add(key)
        facts.append(fact)
    return facts, log.decisions


def _dump(fact: Fact) -> dict[str, Any]:
    return fact.model_dump(mode="json")


def _items(raw: object, log: _Log) -> list[object]:
    if isinstance(raw, str | bytes):
        try:
            raw = json.loads(raw)
        except ValueError:
            return []  # the concept mapper already recorded an answer that is not JSON
    if isinstance(raw, dict):
        raw = raw.get("facts", [])
    if isinstance(raw, list):
        return raw
    log.add("fact_list_shape", -1, "facts", raw, None, note="expected a list of facts")
    return []


# A double quote and its pair: trimming a value's ends must not leave one of a pair behind
_QUOTE_PAIRS = (('"', '"'), ("\u201c", "\u201d"))


def value_text(value: str) -> str:
    """A fact's value as shown: `clean_name`'s trim, then no double quote left without its pair. The trim takes the
    opening quote of a value that starts with a quoted name ('"Run Disney" 5K event at Disneyland' showed as 'Run
    Disney" 5K event at Disneyland', session 39's read of the demo); the name's quotes go, its words stay."""
    text = clean_name(value)
    for opening, closing in _QUOTE_PAIRS:
        same = opening == closing
        if (text.count(opening) % 2 == 1) if same else (text.count(opening) != text.count(closing)):
            text = _SPACES.sub(" ", text.replace(opening, "").replace(closing, "")).strip()
    return text


_SPACES = re.compile(r"\s+")


def _fact(index: int, item: object, segment: SegmentInput, messages: dict[str, Any], log: _Log) -> Fact | None:
    if not isinstance(item, dict):
        log.add("fact_not_an_object", index, "", item, None)
        return None
    for extra in sorted(set(item) - set(FACT_FIELDS)):
        log.add("fact_unknown_field", index, extra, item[extra], None)
    names: dict[str, str] = {}
    for name, normalise in (("subject", subject_key), ("attribute", attribute_key), ("value", value_text)):
        given = item.get(name)
        cleaned = normalise(given) if isinstance(given, str) else ""
        if not cleaned:
            log.add("fact_field_missing", index, name, given, None)
            return None
        if cleaned != given:
            log.add(f"fact_{name}_normalised", index, name, given, cleaned)
        names[name] = cleaned
    given_polarity = item.get("polarity")
    polarity = _POLARITY.get(fold(given_polarity)) if isinstance(given_polarity, str) else None
    if polarity is None:
        log.add("fact_polarity_unknown", index, "polarity", given_polarity, None)
        return None
    if polarity != given_polarity:
        log.add("fact_polarity_synonym", index, "polarity", given_polarity, polarity)
    confidence = _confidence(item.get("confidence"), 0.5, index, "confidence", log)
    spans = _spans(index, [item.get("evidence")], confidence, segment, messages, log)
    if not spans:
        log.add("fact_no_evidence", index, "", names, None)
        return None
    if messages[spans[0]["message_id"]].role != "user":
        log.add("fact_not_from_user", index, "evidence", spans[0], None, note="only the user's own words state facts")
        return None
    try:
        return Fact.model_validate({**names, "polarity": polarity, "evidence": spans[0], "confidence": confidence})
    except ValidationError as exc:  # every field was checked above; a contract change would land here
        log.add("fact_contract_violation", index, "", item, None, note=str(exc))
        return None


__all__ = ["MapperDecision", "attribute_key", "map_raw_facts", "subject_key"]
