"""The synonym tables of the semantic mapper: near-miss types and relations -> the seed ontology.

Keys are compared after `ontology_key` (folded, words joined by "_", plurals folded), so "Behavioral Patterns",
"behavioural-pattern" and "habit" all reach behavioral_pattern. A value with no entry is not guessed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from contracts.concepts import CONCEPT_TYPES, RELATION_TYPES
from extract.text import fold, stem


def ontology_key(value: str) -> str:
    """'Behavioral Patterns' -> 'behavioral_pattern', 'conflicts-with' -> 'conflict_with'."""
    return "_".join(stem(part) for part in re.split(r"[^a-z0-9]+", fold(value)) if part)


def _table(groups: Mapping[str, str]) -> dict[str, str]:
    table: dict[str, str] = {}
    for target, names in groups.items():
        for name in (target, *names.split()):
            table[ontology_key(name)] = target
    return table


TYPE_SYNONYMS = _table(
    {
        "project": "projects initiative undertaking endeavor endeavour venture plan task work assignment",
        "goal": "objective aim aspiration target intention intent desire wish ambition resolution",
        "event": "occurrence incident happening milestone appointment occasion meeting trip",
        "belief": "opinion view value conviction stance principle preference attitude",
        "behavioral_pattern": "behavioural_pattern behavior_pattern behaviour behavior pattern habit routine tendency"
        " practice",
        "tension": "conflict dilemma struggle challenge concern worry problem tradeoff trade_off",
        "entity": "person people place location tool organization organisation company product thing object"
        " software technology pet animal brand org institution team topic",
    }
)
RELATION_SYNONYMS = _table(
    {
        "causes": "cause caused caused_by_this leads_to lead_to results_in result_in triggers produces",
        "conflicts_with": "conflicts conflict conflict_with contradicts opposes competes_with in_conflict_with",
        "supports": "support supported helps help reinforces strengthens aids contributes_to",
        "instance_of": "instance is_a example_of type_of kind_of a_kind_of",
        "enables": "enable enabled allows makes_possible facilitates unlocks prerequisite_for",
    }
)
assert set(TYPE_SYNONYMS.values()) == set(CONCEPT_TYPES) and set(RELATION_SYNONYMS.values()) == set(RELATION_TYPES)
