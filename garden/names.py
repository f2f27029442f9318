"""The concept names the facts link to, kept between garden runs (staging/garden_state.py): `garden_names` holds
every concept's names in order (its id, title, aliases) with their folded key, `garden_name_map` the folded key ->
concept map the full garden builds (`folded`), so that a run refolds only the keys of the
concepts renamed, created, gone or merged since.

The map, as `staging.concepts.name_index_of` and `folded` build it: each name goes to the survivor of the
first concept (in id order, then name order) that has it; a folded key goes to the name, of those folding to it,
whose first appearance is the latest. Both depend only on the rows that have the key and on merge pointers, so a
key is recomputed from its `garden_names` rows. A concept whose merge pointer changes moves the names of every
concept merged into it (found through `garden_concepts`' merge pointers, unchanged for every row not renamed).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Mapping

from garden.validity import value_key
from staging.concepts import ConceptRow, NameRow, name_index_of, survivor
from staging.db import IN_VALUES, json_values, plain_rows

CHUNK = 20_000


def folded(concepts: Mapping[str, ConceptRow] | Mapping[str, NameRow]) -> dict[str, str]:
    """Folded name -> the live concept it names (the map the facts' links are read from)."""
    return {value_key(name): concept_id for name, concept_id in name_index_of(concepts).items()}


def build(staging: sqlite3.Connection, concepts: Mapping[str, ConceptRow], names: Mapping[str, str]) -> None:
    """The full path: every concept's names, and the map it computed."""
    staging.executemany(
        "INSERT INTO garden_names VALUES (?, ?, ?, ?)",
        (
            (concept_id, i, name, value_key(name))
            for concept_id, row in concepts.items()
            for i, name in enumerate((concept_id, row.title, *row.aliases))
        ),
    )
    staging.executemany("INSERT INTO garden_name_map VALUES (?, ?)", sorted(names.items()))


def update(staging: sqlite3.Connection, renamed: set[str]) -> int:
    """Bring the names and the map forward for the concepts renamed, created, gone or re-pointed; how many keys
    were refolded."""
    if not renamed:
        return 0
    affected = set(renamed)
    frontier = set(renamed)
    while frontier:  # every concept merged (through a chain) into a renamed one
        found = {
            str(r[0])
            for r in staging.execute(
                f"SELECT concept_id FROM garden_concepts WHERE merged_into IN {IN_VALUES}", (json_values(frontier),)
            )
        }
        frontier = found - affected
        affected |= found
    keys = _keys_of(staging, affected)
    staging.execute(f"DELETE FROM garden_names WHERE concept_id IN {IN_VALUES}", (json_values(renamed),))
    fresh = [
        (str(cid), i, name, value_key(name))
        for cid, title, aliases in plain_rows(
            staging, f"SELECT concept_id, title, aliases FROM concepts WHERE concept_id IN {IN_VALUES}",
            (json_values(renamed),),
        )
        for i, name in enumerate((str(cid), str(title), *json.loads(aliases)))
    ]  # fmt: skip
    staging.executemany("INSERT INTO garden_names VALUES (?, ?, ?, ?)", fresh)
    keys.update(row[3] for row in fresh)
    _refold(staging, sorted(keys))
    return len(keys)


def _keys_of(staging: sqlite3.Connection, concepts: set[str]) -> set[str]:
    return {
        str(r[0])
        for r in staging.execute(
            f"SELECT DISTINCT key FROM garden_names WHERE concept_id IN {IN_VALUES}", (json_values(concepts),)
        )
    }


def _refold(staging: sqlite3.Connection, keys: list[str]) -> None:
    for start in range(0, len(keys), CHUNK):
        chunk = keys[start : start + CHUNK]
        values = json_values(chunk)
        first: dict[str, dict[str, tuple[str, int]]] = {}  # key -> name -> its first (concept, position)
        for key, name, concept_id, position in plain_rows(
            staging, f"SELECT key, name, concept_id, ord FROM garden_names WHERE key IN {IN_VALUES}", (values,)
        ):
            seen = first.setdefault(str(key), {})
            here = (str(concept_id), int(position))
            if str(name) not in seen or here < seen[str(name)]:
                seen[str(name)] = here
        winners = {key: max(names.values()) for key, names in first.items()}
        survivors = survivors_of(staging, {concept_id for concept_id, _ in winners.values()})
        now = {key: survivors[concept_id] for key, (concept_id, _) in winners.items()}
        before = {
            str(k): str(c)
            for k, c in staging.execute(
                f"SELECT key, concept_id FROM garden_name_map WHERE key IN {IN_VALUES}", (values,)
            )
        }
        gone = [(k,) for k in before if k not in now]
        changed = [(k, c) for k, c in now.items() if before.get(k) != c]
        staging.executemany("DELETE FROM garden_name_map WHERE key = ?", gone)
        staging.executemany(
            "INSERT INTO garden_name_map VALUES (?, ?)"
            " ON CONFLICT (key) DO UPDATE SET concept_id = excluded.concept_id",
            changed,
        )


def pointers(staging: sqlite3.Connection, ids: Iterable[str]) -> dict[str, NameRow]:
    """The merge pointers of the given concepts and of every concept their chains reach (those in the store)."""
    found: dict[str, NameRow] = {}
    frontier = set(ids)
    while frontier:
        rows = plain_rows(
            staging,
            f"SELECT concept_id, merged_into FROM concepts WHERE concept_id IN {IN_VALUES}",
            (json_values(frontier),),
        ).fetchall()
        for concept_id, merged_into in rows:
            found[str(concept_id)] = NameRow(str(concept_id), "", [], merged_into)
        frontier = {str(r[1]) for r in rows if r[1] is not None} - found.keys() - frontier
    return found


def survivors_of(staging: sqlite3.Connection, ids: set[str]) -> dict[str, str]:
    """`staging.concepts.survivor` of each id, reading only the chains it follows."""
    chains = pointers(staging, ids)
    return {concept_id: survivor(chains, concept_id) for concept_id in ids}


def linked(staging: sqlite3.Connection, keys: Iterable[str]) -> dict[str, str]:
    """The map's entries for the given folded names."""
    values = sorted(set(keys))
    found: dict[str, str] = {}
    for start in range(0, len(values), CHUNK):
        found.update(
            (str(k), str(c))
            for k, c in staging.execute(
                f"SELECT key, concept_id FROM garden_name_map WHERE key IN {IN_VALUES}",
                (json_values(values[start : start + CHUNK]),),
            )
        )
    return found


def drifted(staging: sqlite3.Connection) -> set[tuple[str, str]]:
    """The groups of live facts whose subject or value the map now links otherwise than the stored row does."""
    return {
        (str(s), str(a))
        for s, a in staging.execute(
            "SELECT f.subject, f.attribute FROM facts f"
            " LEFT JOIN garden_name_map s ON s.key = f.subject LEFT JOIN garden_name_map v ON v.key = f.value_key"
            " WHERE f.state != 'retracted'"
            " AND (s.concept_id IS NOT f.subject_concept_id OR v.concept_id IS NOT f.value_concept_id)"
        )
    }
