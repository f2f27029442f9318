"""Reading facts over time: what held at a date, what chatmem knew at a date, a concept's timeline, and the
sentence that says how an answer changed ("lives in: Paris until 2023-05-02, Berlin since").

Read-only functions of a staging.db connection (they work on a read-only one), in the staging layer so that
every stage package can use them: `chatmem facts`, recall (`facts_for_query` with `at`, from memory/) and the
MCP server's `timeline` tool. The garden stage (garden/) writes the table they read (staging/facts.py).

    facts_at(conn, at)                  event time: valid_from <= at < valid_to
    known_at(conn, at)                  ingestion time: recorded_at <= at < invalidated_at
    timeline(conn, subject=..., attribute=..., concept_id=...)   every interval, oldest first
    change_lines(records)               one sentence per (subject, attribute) whose value changed
    facts_for_query(conn, query, at)    the facts a question is about, valid ones at `at` first
    rank_facts(records, query, at)      the same over records already in memory (pure)
    fact_prior(records, query, at)      message_id -> recall's boost: 1 for a current fact, 0.5 for a superseded one
    fact_groups(records, query, at)     per fact of the question: (current messages, superseded messages)
    answer_lines(conn, query, at)       what recall prints: facts valid then, and how they changed
    as_of(records, at)                  records as they stood at `at` (nothing stated later)
    fact_rows(conn)                     timeline(conn) as plain contracts.fact_rules.FactRow (no pydantic)

The pure functions take either record type (FactRecord, or FactRow: what a recall process reads, without
importing pydantic) and return the type they were given.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, TypeVar

from contracts.fact_rules import FactRow, contradicts, said_of_the_user
from staging.facts import FACT_COLUMNS, has_facts

if TYPE_CHECKING:  # pydantic: a recall process reads FactRow (fact_rows) and never imports it
    from contracts.facts import FactRecord

R = TypeVar("R", "FactRecord", FactRow)

_WORD = re.compile(r"[a-z0-9]+")
_QUERY_STOP_TEXT = (
    "a an the i my me do did does is are was were what which where who how when have has had am to of in on at for"
    " with about now currently still ever before after used use"
)
_QUERY_STOP = frozenset(_QUERY_STOP_TEXT.split())
# A question names a kind of fact in a word the fact itself never holds: "what pets do I have?" asks about the
# facts of "user's dog called Max" and "user's cat called Luna". Each such word (folded as `_words` folds it) also
# matches the subject or the attribute of the facts of its kind, as the fact rules write them ("user's dog", "role",
# "works at", "uses"); not their values ("what is my job?" is not about the goal "work on my footwork").
_PETS = "dog cat puppy kitten parrot rabbit hamster retriever terrier labrador poodle beagle turtle"
_FAMILY = (
    "mom mum mother dad father parent sister brother sibling son daughter kid child children wife husband partner"
    " grandma grandpa grandmother grandfather niece nephew cousin aunt uncle"
)
_KIND_WORDS = {
    "pet": _PETS,
    "animal": _PETS,
    "family": _FAMILY,
    "relative": _FAMILY,
    "job": "role work employer",
    "occupation": "role work",
    "profession": "role work",
    "career": "role work experience",
    "employer": "work employer",
    "hometown": "from",
    "hobby": "like enjoy play interested",
    "hobbie": "like enjoy play interested",  # "hobbies", folded
    "tool": "use",
    "software": "use",
}  # not "plan" for goals: recall asks "what did we plan for the trip?" and every short goal would match
_KINDS = {kind: frozenset(words.split()) for kind, words in _KIND_WORDS.items()}


def _rows(conn: sqlite3.Connection, where: str, params: Sequence[object]) -> list[dict[str, object]]:
    if not has_facts(conn):
        return []
    rows = conn.execute(
        f"SELECT {', '.join(FACT_COLUMNS)} FROM facts WHERE {where}"
        " ORDER BY subject, attribute, valid_from IS NULL, valid_from, fact_id",
        tuple(params),
    )
    return [dict(zip(FACT_COLUMNS, row, strict=True)) for row in rows]


def fact_rows(conn: sqlite3.Connection) -> list[FactRow]:
    """Every interval, oldest first, as `timeline(conn)` returns them, as plain records (no pydantic)."""
    found = []
    for values in _rows(conn, "1", ()):
        values["message_ids"] = json.loads(str(values["message_ids"]))
        values["evidence"] = json.loads(str(values["evidence"]))
        found.append(FactRow.of(values))
    return found


def _records(conn: sqlite3.Connection, where: str = "1", params: Sequence[object] = ()) -> list[FactRecord]:
    from contracts.facts import FactRecord

    found = []
    for values in _rows(conn, where, params):
        found.append(
            FactRecord.model_validate(
                {
                    **{k: values[k] for k in FactRecord.model_fields if k in values},
                    "message_ids": json.loads(str(values["message_ids"])),
                    "evidence": json.loads(str(values["evidence"])),
                }
            )
        )
    return found


def _day(at: str) -> str:
    """A date given as YYYY-MM-DD means the end of that day (a fact stated that day holds 'at' it)."""
    return at + "T23:59:59.999999+00:00" if len(at) == 10 else at


def facts_at(conn: sqlite3.Connection, at: str, subject: str | None = None) -> list[FactRecord]:
    """The facts that held at event time `at` (ISO date or datetime), however late chatmem learned them."""
    when = _day(at)
    where = "state != 'retracted' AND valid_from IS NOT NULL AND valid_from <= ? AND (valid_to IS NULL OR valid_to > ?)"
    params: list[object] = [when, when]
    if subject is not None:
        where += " AND subject = ? COLLATE NOCASE"  # as a user types it: "User", "user's Dog"
        params.append(" ".join(subject.split()))
    return _records(conn, where, params)


def known_at(conn: sqlite3.Connection, at: str) -> list[FactRecord]:
    """The facts chatmem held as current at ingestion time `at`: recorded by then and not yet invalidated."""
    when = _day(at)
    return _records(conn, "recorded_at <= ? AND (invalidated_at IS NULL OR invalidated_at > ?)", [when, when])


def timeline(
    conn: sqlite3.Connection,
    *,
    subject: str | None = None,
    attribute: str | None = None,
    concept_id: str | None = None,
) -> list[FactRecord]:
    """Every interval of the matching facts (superseded and retracted ones included), oldest first.

    `concept_id`: the facts whose subject or value is that concept (the MCP server's `timeline` tool).
    """
    clauses, params = ["1"], []
    for column, value in (("subject", subject), ("attribute", attribute)):
        if value is not None:
            clauses.append(f"{column} = ? COLLATE NOCASE")  # stored folded; typed any case ("User", "Lives In")
            params.append(" ".join(value.split()))
    if concept_id is not None:
        clauses.append("(subject_concept_id = ? OR value_concept_id = ?)")
        params += [concept_id, concept_id]
    return _records(conn, " AND ".join(clauses), params)


def change_lines(records: Iterable[FactRecord] | Iterable[FactRow]) -> list[str]:
    """For each (subject, attribute) stated with more than one value over time, how it changed, in one line.

    Example: "user lives in: Paris from 2022-01-10 until 2023-05-02, Berlin since 2023-05-02". Values of which none
    was closed by another hold together and are said to: "user uses, all still holding (none replaced another):
    new blood pressure monitor since 2023-03-14; Mendeley since 2023-05-25".
    """
    groups: dict[tuple[str, str], list[FactRecord | FactRow]] = {}
    for record in records:
        if record.state != "retracted" and record.valid_from is not None:
            groups.setdefault((record.subject, record.attribute), []).append(record)
    lines = []
    for (subject, attribute), group in sorted(groups.items()):
        group.sort(key=lambda r: (r.valid_from, r.fact_id))
        if len({(r.value.casefold(), r.polarity) for r in group}) < 2:
            continue
        ended = [_interval(r) for r in group if r.valid_to is not None]
        holding = [_interval(r) for r in group if r.valid_to is None]
        if not ended:
            # nothing replaced anything: values that hold side by side ("uses Mendeley", "uses a hair mask") are
            # not a sequence of changes, and must not read as one
            lines.append(f"{subject} {attribute}, all still holding (none replaced another): {'; '.join(holding)}")
            continue
        parts = ", ".join(ended)
        if len(holding) == 1:
            parts += f", {holding[0]}"
        elif holding:
            parts += f"; now, side by side: {'; '.join(holding)}"
        lines.append(f"{subject} {attribute}: {parts}")
    return lines


def _interval(record: FactRecord | FactRow) -> str:
    value = said_of_the_user(record.value)  # "their partner": said of the user, as the subject is
    value = value if record.polarity == "positive" else f"not {value}"
    start = f"{record.valid_from:%Y-%m-%d}" if record.valid_from else "?"
    if record.valid_to is None:
        return f"{value} since {start}"
    return f"{value} from {start} until {record.valid_to:%Y-%m-%d}"


def _words(text: str) -> set[str]:
    """Content words, a trailing s folded ("lives" = "live", "videos" = "video")."""
    found = set()
    for word in _WORD.findall(text.casefold()):
        if word in _QUERY_STOP or len(word) < 2:  # "dog's" -> "dog", "s": the s of a possessive is no word
            continue
        found.add(word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word)
    return found


def _subject_words(subject: str) -> set[str]:
    """What a subject adds beyond "the user": "user's sister" -> {"sister"} (who is my sister? is about her)."""
    return {w for w in _words(subject) if len(w) > 1 and not w.startswith("user")}


def facts_for_query(conn: sqlite3.Connection, query: str, at: str | None = None) -> list[FactRecord]:
    """The facts a question is about (its words meet the fact's subject past "user", attribute or value, a word
    naming a kind of fact meeting the facts of that kind: "pets" meets "user's dog"), best first: `rank_facts`
    over every fact of the store that is not retracted."""
    return rank_facts(_records(conn, "state != 'retracted'"), query, at)


def rank_facts(records: Iterable[R], query: str, at: str | None = None) -> list[R]:
    """The records a question is about, best first. Pure (recall keeps the records in memory and calls this).

    With `at`, facts valid at that event time come first, then the others of the question, most recent first, so
    "where do I live?" answers with the city of that date and still shows where the user lived before; facts
    first stated after `at` are left out (not known then). Without `at`, facts still valid come first.
    """
    words = _words(query)
    if not words:
        return []
    when = _day(at) if at is not None else None
    scored = []
    for record in records:
        if record.state == "retracted":
            continue
        kind = _words(record.attribute) | _subject_words(record.subject)
        said = kind | _words(record.value)
        overlap = sum(1 for word in words if word in said or not _KINDS.get(word, frozenset()).isdisjoint(kind))
        if not overlap or (overlap < 2 and len(_words(record.value)) > 4):
            continue  # a long value (a goal as the user put it) needs two words of the question, not any one
        started = record.valid_from.isoformat() if record.valid_from else ""
        if when is not None and started and started > when:
            continue  # stated after `at`: not known then
        ended = record.valid_to.isoformat() if record.valid_to else None
        current = (ended is None or ended > when) if when is not None else ended is None
        scored.append((not current, -overlap, _neg(started), record.fact_id, record))
    scored.sort(key=lambda item: item[:4])
    return [item[4] for item in scored]


def fact_groups(
    records: Iterable[R],
    query: str,
    at: str | None = None,
    within: Callable[[str], bool] | None = None,
) -> list[tuple[list[str], list[str]]]:
    """Per (subject, attribute) of the question: the messages stating what holds at `at`, and those stating what
    a newer statement superseded. Recall puts the first above the second (memory/fact_boost.py); judged as in
    `fact_prior`."""
    prior = fact_prior(records, query, at, within)
    groups: dict[tuple[str, str], tuple[list[str], list[str]]] = {}
    for record in rank_facts(records, query, at):
        current, superseded = groups.setdefault((record.subject, record.attribute), ([], []))
        for message_id in record.message_ids:
            weight = prior.get(message_id)
            if weight is not None:
                (current if weight == 1.0 else superseded).append(message_id)
    return [(current, superseded) for current, superseded in groups.values() if current and superseded]


def fact_prior(
    records: Iterable[R],
    query: str,
    at: str | None = None,
    within: Callable[[str], bool] | None = None,
) -> dict[str, float]:
    """message_id -> how much recall should favour it for this question: 1.0 for a message stating a fact of the
    question that holds at `at` (or now), 0.5 for one stating a fact of the question that a newer one superseded
    (history is still relevant: "where did I live before?"). Messages of no fact of the question: absent.

    `within`: recall's scope (which messages may be shown). Facts are then judged among the facts in scope only,
    with the same rule the garden uses (`contracts.facts.contradicts`): a statement outside the scope (another
    user's haystack in a benchmark, a conversation left out) never makes one inside look superseded.

    How recall uses it: `score[i] += fact_weight * prior.get(ids[i], 0.0)`, with the records loaded once with the
    index (`timeline(staging)`), so that the current statement outranks the superseded one.
    """
    when = _day(at) if at is not None else None
    ranked = rank_facts(records, query, at)
    if within is not None:
        ranked = [r for r in ranked if any(within(m) for m in r.message_ids)]
    prior: dict[str, float] = {}
    for record in ranked:
        if within is None:
            ended = record.valid_to.isoformat() if record.valid_to else None
            current = ended is None or (when is not None and ended > when)
        else:
            current = not any(_closes(other, record) for other in ranked)
        for message_id in record.message_ids:
            if within is None or within(message_id):
                prior[message_id] = max(prior.get(message_id, 0.0), 1.0 if current else 0.5)
    return prior


def _closes(newer: FactRecord | FactRow, older: FactRecord | FactRow) -> bool:
    """Whether `newer` (stated later, same subject and attribute) ends `older`: the garden's rule."""
    if (newer.subject, newer.attribute) != (older.subject, older.attribute) or newer.fact_id == older.fact_id:
        return False
    if newer.valid_from is None or older.valid_from is None or newer.valid_from <= older.valid_from:
        return False
    return contradicts(
        older.attribute, older.value, older.polarity == "positive", newer.value, newer.polarity == "positive"
    )


def answer_lines(conn: sqlite3.Connection, query: str, at: str | None = None, limit: int = 5) -> list[str]:
    """What recall prints about a question's facts: the ones that hold at `at` (or now), each with since when,
    then how each changed over time ("user lives in: Paris from 2022-01-10 until 2023-05-02, Berlin since ...")."""
    found = facts_for_query(conn, query, at)
    when = _day(at) if at is not None else None
    lines = []
    for record in found[:limit]:
        ended = record.valid_to.isoformat() if record.valid_to else None
        if ended is not None and (when is None or ended <= when):
            continue
        value = said_of_the_user(record.value)  # "their partner": said of the user, as the subject is
        value = value if record.polarity == "positive" else f"not {value}"
        since = f" since {record.valid_from:%Y-%m-%d}" if record.valid_from else ""
        lines.append(f"{record.subject} {record.attribute} {value}{since}")
    keys = {(r.subject, r.attribute) for r in found[:limit]}
    history = change_lines(as_of((r for r in timeline(conn) if (r.subject, r.attribute) in keys), at))
    return lines + [f"changed over time: {line}" for line in history]


def as_of(records: Iterable[R], at: str | None) -> list[R]:
    """The records as they stood at event time `at`: facts first stated later are left out, and one that ended
    later still held then. `at` None: unchanged."""
    if at is None:
        return list(records)
    when = _day(at)
    kept = []
    for record in records:
        if record.valid_from is not None and record.valid_from.isoformat() > when:
            continue
        if record.valid_to is not None and record.valid_to.isoformat() > when:
            record = _reopened(record)
        kept.append(record)
    return kept


def _neg(text: str) -> tuple[int, ...]:
    """A sort key that orders ISO strings newest first."""
    return tuple(-ord(c) for c in text)


def _reopened(record: R) -> R:
    """The record as it stood before its end was known: still valid."""
    if isinstance(record, FactRow):
        return replace(record, valid_to=None, superseded_by=None, state="valid")
    return record.model_copy(update={"valid_to": None, "superseded_by": None, "state": "valid"})
