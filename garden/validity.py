"""Bi-temporal validity of facts, computed from every current statement of them. Pure: no I/O, no clock.

    intervals(statements) -> list[Interval]          event time: valid_from / valid_to
    reconcile(intervals, stored, now) -> (rows, changes)   ingestion time: recorded_at / invalidated_at

Statements are grouped by (subject, attribute) and read in event-time order. Per group, a statement either
- restates an interval that still holds (same value, same polarity): its support grows, nothing new is made;
- or opens a new interval, and closes every open interval of the group it contradicts
  (`contracts.facts.contradicts`) at its own time, pointing at it (`superseded_by`).
A value stated again after it was superseded opens a new interval: disjoint intervals stay separate. Other
subjects and attributes are never compared. A statement without a time cannot be ordered: it gets an interval
of its own with no valid_from, which neither closes nor is closed by anything.

`reconcile` turns the intervals into stored rows against what was stored before: recorded_at is kept from the
first time an interval was seen, invalidated_at is set the first time it was closed (or retracted: its evidence
is no longer current). Nothing is ever deleted.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from contracts.facts import FUNCTIONAL_ATTRIBUTES, contradicts, is_quantity, quantity_kind

Change = tuple[str, str, str, Any, Any]  # kind, target, reason, before, after (a garden_changes row)


@dataclass(frozen=True, slots=True)
class Statement:
    """One statement of a fact: a fact mention with its message's time (ISO, UTC) and source."""

    mention_id: str
    message_id: str
    subject: str
    attribute: str
    value: str
    polarity: str
    text: str
    time: str | None


@dataclass(slots=True)
class Interval:
    """One interval during which one fact held."""

    fact_id: str
    subject: str
    attribute: str
    value: str
    polarity: str
    valid_from: str | None
    valid_to: str | None = None
    superseded_by: str | None = None
    statements: list[Statement] = field(default_factory=list)

    @property
    def value_key(self) -> str:
        return value_key(self.value)


def value_key(value: str) -> str:
    return " ".join(value.casefold().split())


def fact_id(subject: str, attribute: str, value: str, polarity: str, first: Statement) -> str:
    """Stable id of an interval: the fact and the statement that opened it."""
    text = "\x1f".join((subject, attribute, value_key(value), polarity, first.time or "", first.message_id))
    return "f-" + hashlib.blake2b(text.encode("utf-8"), digest_size=10).hexdigest()


def _order(statement: Statement) -> tuple[bool, str, str, str]:
    return (statement.time is None, statement.time or "", statement.message_id, statement.mention_id)


def intervals(statements: Iterable[Statement]) -> list[Interval]:
    """Every interval of validity the statements imply (see the module docstring)."""
    groups: dict[tuple[str, str], list[Statement]] = {}
    for statement in statements:
        groups.setdefault((statement.subject, statement.attribute), []).append(statement)
    result: list[Interval] = []
    for (subject, attribute), group in sorted(groups.items()):
        # At most one open (and one untimed) interval per (polarity, value): a dict finds it without a scan, which
        # matters for a many-valued attribute with thousands of values ("likes") at a million messages.
        open_ = _OpenIntervals(attribute)
        untimed: dict[tuple[str, str], Interval] = {}
        for statement in sorted(group, key=_order):
            key = _key(statement)
            if statement.time is None:
                same = untimed.get(key)
                if same is None:
                    same = untimed[key] = _open(subject, attribute, statement)
                    result.append(same)
                else:
                    same.statements.append(statement)
                continue
            held = open_.get(key)
            if held is not None:
                held.statements.append(statement)  # a restatement extends its support
                continue
            new = _open(subject, attribute, statement)
            positive = statement.polarity == "positive"
            for old_key in open_.rivals(key, positive, statement.value):  # distinct keys: closing one keeps the rest
                old = open_.by_key[old_key]
                if contradicts(attribute, old.value, old.polarity == "positive", statement.value, positive):
                    old.valid_to, old.superseded_by = statement.time, new.fact_id
                    open_.close(old_key)
            open_.add(key, new)
            result.append(new)
    return result


class _OpenIntervals:
    """The open intervals of one (subject, attribute), indexed by what can contradict them, so that a new statement
    is compared with its few possible rivals and not with every open value: "likes" at a million messages holds
    thousands of values, and comparing each new one with all of them was most of the stage's time (1.6M calls
    for 22k statements at 250k messages).

    `contracts.facts.contradicts` stays the rule; `rivals` only narrows whom it is asked about, to a superset of
    those it can say yes to: the same value with the other polarity, and for a positive statement every open
    positive value when the attribute is functional, else the open positive quantities of its kind."""

    def __init__(self, attribute: str) -> None:
        self.functional = attribute in FUNCTIONAL_ATTRIBUTES
        self.by_key: dict[tuple[str, str], Interval] = {}
        self.positives: dict[tuple[str, str], None] = {}  # insertion-ordered set
        self.quantities: dict[str, dict[tuple[str, str], None]] = {}  # quantity kind -> open positive keys

    def get(self, key: tuple[str, str]) -> Interval | None:
        return self.by_key.get(key)

    def rivals(self, key: tuple[str, str], positive: bool, value: str) -> list[tuple[str, str]]:
        other = ("negative" if positive else "positive", key[1])
        found = [other] if other in self.by_key else []
        if positive and self.functional:
            found.extend(self.positives)
        elif positive and is_quantity(value):
            found.extend(self.quantities.get(quantity_kind(value), ()))
        return found

    def add(self, key: tuple[str, str], interval: Interval) -> None:
        self.by_key[key] = interval
        if interval.polarity == "positive":
            self.positives[key] = None
            if is_quantity(interval.value):
                self.quantities.setdefault(quantity_kind(interval.value), {})[key] = None

    def close(self, key: tuple[str, str]) -> None:
        interval = self.by_key.pop(key)
        self.positives.pop(key, None)
        if interval.polarity == "positive" and is_quantity(interval.value):
            self.quantities[quantity_kind(interval.value)].pop(key, None)


def _key(statement: Statement) -> tuple[str, str]:
    return statement.polarity, value_key(statement.value)


def _open(subject: str, attribute: str, statement: Statement) -> Interval:
    return Interval(
        fact_id=fact_id(subject, attribute, statement.value, statement.polarity, statement),
        subject=subject,
        attribute=attribute,
        value=statement.value,
        polarity=statement.polarity,
        valid_from=statement.time,
        statements=[statement],
    )


def reconcile(
    computed: Sequence[Interval],
    stored: Mapping[str, Mapping[str, Any]],
    now: str,
    run_id: str,
    concept_ids: Mapping[str, str] | None = None,
) -> tuple[list[dict[str, Any]], list[Change]]:
    """The rows to write (new or changed only) and one change per difference, each with its reason."""
    names = concept_ids or {}
    by_id = {i.fact_id: i for i in computed}
    rows: list[dict[str, Any]] = []
    changes: list[Change] = []
    for interval in computed:
        before = stored.get(interval.fact_id)
        row = _row(interval, before, now, run_id, names, by_id)
        if before is not None and all(before.get(k) == row[k] for k in row if k != "run_id"):
            continue
        rows.append(row)
        changes.extend(_changes(interval, before, row, by_id))
    for fid, before in sorted(stored.items()):
        if fid in by_id or before["state"] == "retracted":
            continue
        row = {**before, "state": "retracted", "invalidated_at": before["invalidated_at"] or now, "run_id": run_id}
        rows.append(row)
        changes.append(
            ("fact_retracted", fid, "its statements are no longer in any current segment", _brief(before), None)
        )
    return rows, changes


def _row(
    interval: Interval,
    before: Mapping[str, Any] | None,
    now: str,
    run_id: str,
    names: Mapping[str, str],
    by_id: Mapping[str, Interval],
) -> dict[str, Any]:
    closed = interval.valid_to is not None
    invalidated = (before or {}).get("invalidated_at") if closed else None
    timed = [s.time for s in interval.statements if s.time is not None]
    return {
        "fact_id": interval.fact_id,
        "subject": interval.subject,
        "attribute": interval.attribute,
        "value": interval.value,
        "value_key": interval.value_key,
        "polarity": interval.polarity,
        "valid_from": interval.valid_from,
        "valid_to": interval.valid_to,
        "recorded_at": (before or {}).get("recorded_at") or now,
        "invalidated_at": (invalidated or now) if closed else None,
        "state": "superseded" if closed else "valid",
        "superseded_by": interval.superseded_by,
        "support": len(interval.statements),
        "last_stated": max(timed) if timed else None,
        "message_ids": [s.message_id for s in interval.statements],
        "evidence": [s.text for s in interval.statements],
        "subject_concept_id": names.get(interval.subject),
        "value_concept_id": names.get(interval.value_key),
        "run_id": run_id,
    }


def _brief(row: Mapping[str, Any]) -> dict[str, Any]:
    keys = ("subject", "attribute", "value", "polarity", "valid_from", "valid_to", "state", "support")
    return {k: row.get(k) for k in keys}


def _changes(
    interval: Interval, before: Mapping[str, Any] | None, row: Mapping[str, Any], by_id: Mapping[str, Interval]
) -> list[Change]:
    fid = interval.fact_id
    changes: list[Change] = []
    if before is None or before["state"] == "retracted":
        kind = "fact_recorded" if before is None else "fact_restored"
        changes.append(
            (
                kind,
                fid,
                f"stated {row['support']} time(s) from {row['valid_from'] or 'an unknown time'}",
                None,
                _brief(row),
            )
        )
    if row["valid_to"] is not None and (before is None or before.get("valid_to") != row["valid_to"]):
        newer = by_id[interval.superseded_by] if interval.superseded_by else None
        said = f'"{newer.value}" ({newer.polarity})' if newer else "a newer statement"
        reason = f"contradicted by {said} stated {row['valid_to']}"
        changes.append(("fact_superseded", fid, reason, _brief(before) if before else None, _brief(row)))
    elif before is not None and before.get("valid_to") is not None and row["valid_to"] is None:
        changes.append(
            ("fact_revalidated", fid, "the statement that closed it is no longer current", _brief(before), _brief(row))
        )
    for link in ("subject_concept_id", "value_concept_id"):
        if before is not None and before.get(link) != row[link]:
            reason = f"{link[:-3].replace('_', ' ')} now {row[link] or 'none'} (concepts merged, created or gone)"
            changes.append(("fact_link", fid, reason, before.get(link), row[link]))
    if before is not None and before.get("support") != row["support"] and before["state"] != "retracted":
        reason = f"restated: support {before.get('support')} -> {row['support']}, last stated {row['last_stated']}"
        changes.append(("fact_support", fid, reason, _brief(before), _brief(row)))
    return changes
