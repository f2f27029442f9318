"""The facts' half of the incremental garden: only the (subject, attribute) groups whose intervals can have moved.

A group's intervals are a function of its current statements alone (garden.validity: other subjects and
attributes are never compared), and a stored fact row changes only when its interval, its statements or the
concepts its subject and value name change. So a run recomputes and reconciles the groups

- logged in `garden_fact_dirty` by the triggers of staging/garden_state.py (a mention written or deleted, an
  extraction or a segment changed: what `current_mentions` reads);
- with a statement whose message's time changed in the archive (`garden_fact_times`, refreshed from the
  conversations the archive logs as changed);
- with a fact whose concept link the concept names no longer give (a concept created, renamed, merged or gone):
  the live facts' links compared in SQL with the kept map of folded names (garden/names.py).

Every other group's rows would come out as stored (a full reconcile writes nothing for them), and none of its
stored facts is retracted (they are exactly its intervals), so reconciling the changed groups alone writes the same
rows and changes, in the same order, as a full one.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping
from typing import Any

from garden.names import drifted
from garden.validity import Statement
from staging import concepts as concept_store
from staging.db import IN_VALUES, json_values, plain_rows
from staging.facts import FACT_COLUMNS

Group = tuple[str, str]
CHUNK = 20_000


def groups_to_redo(staging: sqlite3.Connection, messages: Mapping[str, tuple[int, str, str | None]]) -> set[Group]:
    """The groups whose facts may change: logged, re-timed or re-linked (see the module docstring); the concept
    names' map (garden/names.py) is brought forward first."""
    groups: set[Group] = {(str(s), str(a)) for s, a in staging.execute("SELECT * FROM garden_fact_dirty")}
    uuids = list(messages)
    retimed: list[tuple[str | None, str]] = []
    for start in range(0, len(uuids), CHUNK):
        for uuid, created_at in staging.execute(
            f"SELECT message_id, created_at FROM garden_fact_times WHERE message_id IN {IN_VALUES}",
            (json_values(uuids[start : start + CHUNK]),),
        ):
            now = messages[str(uuid)][2]
            if created_at != now:
                retimed.append((now, str(uuid)))
    if retimed:
        staging.executemany("UPDATE garden_fact_times SET created_at = ? WHERE message_id = ?", retimed)
        groups.update(
            (str(s), str(a))
            for s, a in staging.execute(
                f"SELECT DISTINCT subject, attribute FROM fact_mentions WHERE message_id IN {IN_VALUES}",
                (json_values(u for _, u in retimed),),
            )
        )
    groups |= drifted(staging)
    return groups


def _pairs(groups: set[Group]) -> str:
    return json.dumps(sorted(groups), ensure_ascii=False)


def statements_of(archive: sqlite3.Connection, staging: sqlite3.Connection, groups: set[Group]) -> list[Statement]:
    """Every current statement of the groups, with its message's time (kept; the archive's for a new message)."""
    if not groups:
        return []
    rows = plain_rows(
        staging,
        "SELECT m.cache_key || ':' || m.ordinal, m.message_id, m.subject, m.attribute, m.value, m.polarity, m.text,"
        " t.message_id IS NOT NULL, t.created_at"
        " FROM json_each(?) g"
        " JOIN fact_mentions m ON m.subject = json_extract(g.value, '$[0]')"
        "  AND m.attribute = json_extract(g.value, '$[1]')"
        " JOIN segment_extractions se ON se.cache_key = m.cache_key AND se.segment_id = m.segment_id"
        " JOIN current_segments s ON s.segment_id = m.segment_id"
        " LEFT JOIN garden_fact_times t ON t.message_id = m.message_id"
        " ORDER BY m.cache_key, m.ordinal",
        (_pairs(groups),),
    ).fetchall()
    unknown = {str(r[1]) for r in rows if not r[7]}
    times: dict[str, str | None] = {}
    if unknown:
        times = {u: None for u in unknown}
        times.update(concept_store.message_times(archive, unknown))
        staging.executemany("INSERT INTO garden_fact_times VALUES (?, ?)", sorted(times.items()))
    return [
        Statement(
            str(r[0]),
            str(r[1]),
            str(r[2]),
            str(r[3]),
            str(r[4]),
            str(r[5]),
            str(r[6]),
            r[8] if r[7] else times[str(r[1])],
        )
        for r in rows
    ]


def stored_of(staging: sqlite3.Connection, groups: set[Group]) -> dict[str, dict[str, Any]]:
    """The stored fact rows of the groups, as `staging.facts.load_facts` gives them."""
    found: dict[str, dict[str, Any]] = {}
    if not groups:
        return found
    columns = ", ".join(f"f.{c}" for c in FACT_COLUMNS)
    for row in staging.execute(
        f"SELECT {columns} FROM json_each(?) g JOIN facts f ON f.subject = json_extract(g.value, '$[0]')"
        " AND f.attribute = json_extract(g.value, '$[1]') ORDER BY f.fact_id",
        (_pairs(groups),),
    ):
        values = dict(zip(FACT_COLUMNS, row, strict=True))
        values["message_ids"] = json.loads(values["message_ids"])
        values["evidence"] = json.loads(values["evidence"])
        found[values["fact_id"]] = values
    return found


def totals(staging: sqlite3.Connection) -> dict[str, int]:
    """The counts a full plan gives of every statement and interval, read after the plan is written (the live
    facts are exactly the intervals)."""
    statements = staging.execute(
        "SELECT COUNT(*) FROM fact_mentions m"
        " JOIN segment_extractions se ON se.cache_key = m.cache_key AND se.segment_id = m.segment_id"
        " JOIN current_segments s ON s.segment_id = m.segment_id"
    ).fetchone()[0]
    facts, valid, restated = staging.execute(
        "SELECT COUNT(*), COALESCE(SUM(valid_to IS NULL), 0), COALESCE(SUM(support > 1), 0) FROM facts"
        " WHERE state != 'retracted'"
    ).fetchone()
    return {
        "statements": int(statements),
        "facts": int(facts),
        "facts_valid": int(valid),
        "facts_superseded": int(facts) - int(valid),
        "facts_restated": int(restated),
    }


def record_times(staging: sqlite3.Connection, statements: list[Statement]) -> None:
    """The full path: every statement's message time, kept."""
    staging.execute("DELETE FROM garden_fact_times")
    staging.executemany(
        "INSERT INTO garden_fact_times VALUES (?, ?) ON CONFLICT (message_id) DO NOTHING",
        sorted({(s.message_id, s.time) for s in statements}),
    )
