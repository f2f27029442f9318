"""The garden's facts of a question, as a recall returns them (RecallResult.facts, fact_changes).

    question_facts(index.facts, request, index) -> (facts, change lines)

Pure over the records memory.index.attach_facts loaded with the index (no database read per recall): the facts
the question's words meet (staging.fact_timeline.rank_facts), as they stood at `at` (a fact ended after `at`
still held then; one first stated after `at` was not known), the current ones first, then the superseded ones,
and how each (subject, attribute) changed over time. A conversation or source scope keeps the facts stated in
it only.
"""

from __future__ import annotations

import numpy as np

from contracts.fact_rules import FUNCTIONAL_ATTRIBUTES, FactRow, said_of_the_user
from memory.answer import Fact, RequestLike
from memory.index import MemoryIndex
from memory.relevance import KEY_SHARE, key_terms, near
from memory.text import term_set
from staging.fact_timeline import as_of, change_lines, rank_facts

LIMIT = 5


def _line(record: FactRow) -> str:
    value = said_of_the_user(record.value)  # "their partner": said of the user, as the subject is
    value = value if record.polarity == "positive" else f"not {value}"
    start = f"{record.valid_from:%Y-%m-%d}" if record.valid_from else None
    if record.valid_to is not None:
        return f"{record.subject} {record.attribute} {value} from {start or '?'} until {record.valid_to:%Y-%m-%d}"
    return f"{record.subject} {record.attribute} {value}" + (f" since {start}" if start else "")


def _in_scope(index: MemoryIndex, request: RequestLike, record: FactRow) -> bool:
    scope = request.scope
    if not (scope.conversation_ids or scope.sources):
        return True
    conversations = {index.conversation_code[c] for c in scope.conversation_ids if c in index.conversation_code}
    sources = {i for i, s in enumerate(index.sources) if s in scope.sources}
    for message_id in record.message_ids:
        i = index.fact_positions.get(message_id)
        if i is None:
            continue
        if conversations and int(index.conversation[i]) not in conversations:
            continue
        if sources and int(index.source[i]) not in sources:
            continue
        return True
    return False


def relevant(index: MemoryIndex, query: str, record: FactRow) -> bool:
    """The relevance floor the pieces meet (memory.relevance.KEY_SHARE), for a fact: it shares two of the query's
    words, or the ones it shares hold that share of the query's information (its words weighed by rarity in this
    memory), or the fact is about the one it shares (the word names its attribute, "number of videos", or is its
    whole value, a name). One word inside a longer value is not enough: "what did I buy for my cat?" does not meet
    "user goal buy a book there soon"."""
    keys = key_terms(index, query)
    if not keys.terms:
        return False
    shared = np.array([near(t, term_set(f"{record.subject} {record.attribute} {record.value}")) for t in keys.terms])
    if shared.sum() >= 2 or float(shared.astype(np.float64) @ keys.idf) / keys.total >= KEY_SHARE:
        return True
    attribute, value = term_set(record.attribute), term_set(record.value)
    named = [t for t, s in zip(keys.terms, shared, strict=True) if s]
    return any(near(t, attribute) for t in named) or (
        0 < len(value) <= 2 and all(any(near(t, {v}) for t in named) for v in value)
    )


def question_facts(index: MemoryIndex, request: RequestLike) -> tuple[list[Fact], list[str]]:
    """(the facts of the question at `at`, current first; how they changed over time)."""
    records = [r for r in index.facts if _in_scope(index, request, r)]
    at = request.at.isoformat() if request.at is not None else None
    ranked = [r for r in rank_facts(records, request.query, at) if relevant(index, request.query, r)]
    found = as_of(ranked[:LIMIT], at)
    found.sort(key=lambda r: r.valid_to is not None)  # stable: rank_facts' order within each
    facts = [
        Fact(
            subject=r.subject,
            attribute=r.attribute,
            value=r.value,
            polarity=r.polarity,
            valid_from=r.valid_from,
            valid_to=r.valid_to,
            superseded=r.valid_to is not None,
            message_ids=list(r.message_ids),
            line=_line(r),
        )
        for r in found
    ]
    # How a fact changed over time: every value of a functional attribute (where the user lives), but of one a
    # user holds many of at once (goals, tools, people) only the values of the question, never all of them.
    keys = {(r.subject, r.attribute) for r in found if r.attribute in FUNCTIONAL_ATTRIBUTES}
    ids = {r.fact_id for r in found}
    changes = change_lines(as_of((r for r in records if (r.subject, r.attribute) in keys or r.fact_id in ids), at))
    return facts, changes
