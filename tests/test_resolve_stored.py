"""The concept resolver's index kept in staging.db between runs (extract/resolve_stored.py, issue 23), on real
SQLite: after every change to the store the stored index equals a full build's, the resolver read through it
decides as a full build's does (also after the run's own additions, merges and retypes), and the concepts stage
writes the same tables with the kept index as with one built from every concept each run.
"""

from __future__ import annotations

import random
import re
import shutil
import sqlite3
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest
from concept_support import open_dbs
from stage_support import stage_concepts
from test_concepts import chat, hyp
from test_concepts_incremental import digest, upstream

from extract import resolve_stored
from extract import stage_concepts as concepts_stage
from extract.resolve import Resolver, char_ngram_cosine
from extract.text import STOPWORDS
from staging import concepts as store
from staging import resolver_state
from staging.concepts import ConceptRow, survivor
from staging.ledger import open_staging

WORDS = [
    *("kitchen", "renovation", "renovations", "spark", "apache", "garden", "gardening", "tax", "2023", "2024"),
    *("e-mail", "e mail", "marathon", "training", "python", "learning", "kubernetes", "kubernets", "book", "club"),
]
TYPES = ["entity", "project", "goal"]


def make() -> Resolver:
    return Resolver(0.85, 0.8, char_ngram_cosine)


def full(concepts: dict[str, ConceptRow]) -> Resolver:
    """The index as `ConceptLoop` built it in memory before (every row, merged last)."""
    resolver = make()
    for row in sorted(concepts.values(), key=lambda r: (r.state == "merged", r.concept_id)):
        owner = survivor(concepts, row.concept_id)
        resolver.add(owner, concepts[owner].type, [row.title, *row.aliases])
    return resolver


def write(conn: sqlite3.Connection, concepts: dict[str, ConceptRow]) -> None:
    """The store as the concepts table holds it (the stage's `concepts` are loaded from it)."""
    with conn:
        conn.execute("DELETE FROM concepts")
        store.upsert_concepts(conn, concepts.values())


def name(rng: random.Random) -> str:
    words = rng.sample(WORDS, rng.choice([1, 1, 2, 2, 3]))
    text = " ".join(words)
    return text.title() if rng.random() < 0.3 else text


def concept(concept_id: str, rng: random.Random) -> ConceptRow:
    return ConceptRow(
        concept_id=concept_id,
        title=name(rng),
        title_key=concept_id,
        type=rng.choice(TYPES),
        description="",
        state=rng.choice(["active", "weak", "archived", "split"]),
        confidence=0.9,
        aliases=[name(rng) for _ in range(rng.choice([0, 0, 1, 2]))],
        revision_count=0,
        evidence_count=1,
        first_seen=None,
        last_seen=None,
        merged_into=None,
        extractors=["offline"],
        created_run_id="r",
        run_id="r",
    )


def ids_rows(concepts: dict[str, ConceptRow]) -> list[ConceptRow]:
    return list(concepts.values())


def mutate(concepts: dict[str, ConceptRow], rng: random.Random, serial: list[int]) -> None:
    """One change a run or the garden can make: a new concept, new aliases, a retitle, a retype, a merge (or a
    merge chain), a state change, a concept gone (a store rebuilt)."""
    ids = sorted(concepts)
    kind = rng.choice(["new", "new", "alias", "title", "type", "merge", "state", "drop"])
    if kind == "new" or not ids:
        serial[0] += 1
        concepts[f"k{serial[0]:03d}"] = concept(f"k{serial[0]:03d}", rng)
        return
    target = concepts[rng.choice(ids)]
    if kind == "alias":
        target.aliases = [*target.aliases, name(rng)]
    elif kind == "title":
        target.title = name(rng)
    elif kind == "type":
        target.type = rng.choice(TYPES)
    elif kind == "merge":
        live = [c for c in ids if concepts[c].state != "merged" and c != target.concept_id]
        if live and target.state != "merged":
            target.state, target.merged_into = "merged", rng.choice(live)
    elif kind == "state":
        target.state = rng.choice(["active", "weak", "archived"]) if target.state != "merged" else target.state
    elif (
        kind == "drop"
        and target.state != "merged"
        and all(c.merged_into != target.concept_id for c in ids_rows(concepts))
    ):
        del concepts[target.concept_id]


PROBES = ["kitchen renovations", "Kitchen Renovation", "spark", "Apache Spark", "gardening", "tax 2023",
          "e-mail", "email", "marathon trainings", "learning python", "kubernets", "book clubs", "club book",
          "garden kitchen", "renovation kitchen tax"]  # fmt: skip


def decisions(resolver: Resolver, concept_type: str) -> list[object]:
    return [(resolver.resolve(p, [], concept_type), resolver.owner(p)) for p in PROBES]


@pytest.mark.parametrize("seed", range(6))
def test_the_kept_index_equals_a_full_build_after_every_change(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    conn = open_staging(tmp_path / "staging.db")
    concepts: dict[str, ConceptRow] = {}
    serial = [0]
    for _ in range(30):
        mutate(concepts, rng, serial)
    paths = {"full": 0, "update": 0}
    for step in range(40):
        snapshot = {c: replace(r, aliases=list(r.aliases)) for c, r in concepts.items()}
        write(conn, snapshot)
        before = resolver_state.version(conn)
        resolver = resolve_stored.resolver_for(conn, snapshot, make)
        paths["update" if isinstance(resolver.exact, resolve_stored._Faulting) else "full"] += 1
        assert before is None or resolver_state.version(conn) == resolve_stored.keys_version()
        reference = full(snapshot)
        assert resolve_stored.stored_state(conn) == resolve_stored.memory_state(reference), step
        for concept_type in TYPES:
            assert decisions(resolver, concept_type) == decisions(reference, concept_type), step
        # the run's own changes live in memory only, and the read-through resolver follows them like a full one
        live = sorted(c for c, r in snapshot.items() if r.state != "merged")
        for index in (resolver, reference):
            index.add("new-one", "entity", ["garden tax", "python book"])
            if len(live) >= 2:
                index.move(live[0], live[1])
                index.retype(live[1], "goal")
        for concept_type in TYPES:
            assert decisions(resolver, concept_type) == decisions(reference, concept_type), step
        for _ in range(rng.choice([1, 1, 2, 5])):
            mutate(concepts, rng, serial)
    assert paths["update"] > 20  # the incremental path is what ran, not only full builds


def test_another_version_of_the_keys_builds_in_full(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    conn = open_staging(tmp_path / "staging.db")
    rng = random.Random(1)
    concepts = {f"k{i}": concept(f"k{i}", rng) for i in range(10)}
    write(conn, concepts)
    resolve_stored.resolver_for(conn, concepts, make)
    monkeypatch.setattr(resolve_stored, "VERSION", resolve_stored.VERSION + 1)
    resolver = resolve_stored.resolver_for(conn, concepts, make)
    assert not isinstance(resolver.exact, resolve_stored._Faulting)
    assert resolver_state.version(conn) == resolve_stored.keys_version()
    assert resolve_stored.stored_state(conn) == resolve_stored.memory_state(full(concepts))


def test_a_change_to_the_key_functions_unmarked_by_version_still_builds_in_full(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stop word added (a routine edit) with VERSION left as it was: the stored keys are no longer the ones the
    code makes, and the kept index is built again instead of being read."""
    conn = open_staging(tmp_path / "staging.db")
    rng = random.Random(2)
    concepts = {f"k{i}": concept(f"k{i}", rng) for i in range(10)}
    write(conn, concepts)
    resolve_stored.resolver_for(conn, concepts, make)
    stored = resolver_state.version(conn)
    assert stored == resolve_stored.keys_version()  # deterministic: the same digest on a second call
    monkeypatch.setattr(resolve_stored, "STOPWORDS", STOPWORDS | {"glue"})
    assert resolve_stored.keys_version() != stored
    resolver = resolve_stored.resolver_for(conn, concepts, make)
    assert not isinstance(resolver.exact, resolve_stored._Faulting)  # built, not read through
    assert resolver_state.version(conn) == resolve_stored.keys_version()


def test_the_stage_writes_the_same_tables_with_the_kept_index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two runs with new conversations between (attaches, new aliases, merges by alias, new concepts): the
    concept tables equal those of the stage building its index from every concept each run."""
    specs = {
        "c0": [hyp("Kitchen renovation"), hyp("Spark", aliases=["Apache Spark"])],
        "c1": [hyp("Kitchen renovations"), hyp("Tax return 2023")],
        "c2": [hyp("Apache Spark"), hyp("Marathon training", "goal")],
        "c3": [hyp("Kitchen remodel", aliases=["Kitchen renovation"]), hyp("Spark jobs")],
        "c4": [hyp("Tax return 2024"), hyp("Marathon trainings", "goal"), hyp("Email", aliases=["e-mail"])],
        "c5": [hyp("Spark job"), hyp("Kubernets"), hyp("Kubernetes", aliases=["k8s"])],
        "c6": [hyp("Book club"), hyp("Reading group")],
        "c7": [hyp("book clubs", aliases=["Kitchen remodel", "Reading group"]), hyp("Learning Python", "goal")],
    }
    for mode in ("kept", "built"):
        if mode == "built":
            monkeypatch.setattr(resolver_state, "present", lambda conn: False)
        else:
            monkeypatch.setattr(resolve_stored, "FULL_SHARE", 2.0)  # the update path whatever the share changed
        dbs = open_dbs(tmp_path / mode)
        for day, names in enumerate((["c0", "c1", "c2"], ["c3", "c4"], ["c5", "c6", "c7"])):
            run_id = upstream(dbs, [chat(n, i + 3 * day) for i, n in enumerate(names)], specs, f"d{day}")
            stage_concepts.run(dbs.archive, dbs.staging, run_id=run_id, settings=dbs.settings)
        dbs.close()
    kept, built = open_dbs(tmp_path / "kept"), open_dbs(tmp_path / "built")
    assert kept.staging.execute("SELECT COUNT(*) FROM resolver_entries").fetchone()[0] > 0
    assert built.staging.execute("SELECT COUNT(*) FROM resolver_entries").fetchone()[0] == 0
    assert digest(kept.staging) == digest(built.staging)
    assert kept.staging.execute("SELECT COUNT(*) FROM concepts WHERE state = 'merged'").fetchone()[0] > 0
    shutil.rmtree(tmp_path / "built")


def top_level_from(sql: str) -> bool:
    """An UPDATE whose own clause list has a FROM (UPDATE ... FROM, SQLite 3.33+), subqueries aside."""
    if not sql.lstrip().upper().startswith("UPDATE"):
        return False
    depth, outer = 0, []
    for ch in sql:
        depth += (ch == "(") - (ch == ")")
        outer.append(ch if depth == 0 else " ")
    return re.search(r"\bFROM\b", "".join(outer), re.IGNORECASE) is not None


def test_the_kept_index_is_written_without_update_from(tmp_path: Path) -> None:
    """No statement of a full build or an update of the kept index is an UPDATE ... FROM (SQLite 3.33+, newer than
    chatmem needs elsewhere); the rows' own columns (row_*) are still those of the concept rows after each."""
    conn = open_staging(tmp_path / "staging.db")
    rng = random.Random(4)
    concepts = {f"k{i:02d}": concept(f"k{i:02d}", rng) for i in range(20)}
    executed: list[str] = []
    conn.set_trace_callback(executed.append)
    for step in range(2):  # a full build, then an update of the rows changed
        write(conn, concepts)
        resolver = resolve_stored.resolver_for(conn, concepts, make)
        assert isinstance(resolver.exact, resolve_stored._Faulting) == (step == 1)
        copied = conn.execute(
            "SELECT COUNT(*) FROM resolver_rows r JOIN concepts c USING (concept_id) WHERE r.row_merged IS (c.state"
            " = 'merged') AND r.row_merged_into IS c.merged_into AND r.row_type IS c.type AND r.row_title IS c.title"
            " AND r.row_aliases IS c.aliases"
        ).fetchone()[0]
        assert copied == len(concepts) and resolver_state.changed_rows(conn) == set()
        concepts["k03"].title, concepts["k07"].aliases = "Apache Spark jobs", ["e-mail", "book club"]
        concepts["k05"].state, concepts["k05"].merged_into = "merged", "k06"
    conn.set_trace_callback(None)
    assert sum(s.lstrip().upper().startswith("UPDATE RESOLVER_ROWS SET") for s in executed) == 2
    assert [s for s in executed if top_level_from(s)] == []


def resolver_tables(conn: sqlite3.Connection) -> dict[str, list[tuple[object, ...]]]:
    """Every row of every resolver_* table, in a fixed order."""
    return {table: sorted(tuple(r) for r in conn.execute(f"SELECT * FROM {table}")) for table in resolver_state.TABLES}


KILL_SPECS = {
    "c0": [hyp("Kitchen renovation"), hyp("Spark", aliases=["Apache Spark"])],
    "c1": [hyp("Tax return 2023"), hyp("Marathon training", "goal")],
    "c2": [hyp("Kitchen remodel", aliases=["Kitchen renovation"]), hyp("Spark jobs")],
    "c3": [hyp("Email", aliases=["e-mail"]), hyp("Kubernetes", aliases=["k8s"])],
    "c4": [hyp("Book club"), hyp("Reading group")],
    "c5": [hyp("book clubs", aliases=["Reading group"]), hyp("Learning Python", "goal")],
}


def dies_after_a_write(staging: sqlite3.Connection, batch: Callable[..., None]) -> Callable[..., None]:
    """The stage's `_batch`, dying after the first one that committed new concepts (a kill between batches)."""
    before = staging.execute("SELECT COUNT(*) FROM concepts").fetchone()[0]

    def dies(*args: object, **kwargs: object) -> None:
        batch(*args, **kwargs)
        if staging.execute("SELECT COUNT(*) FROM concepts").fetchone()[0] > before:
            raise RuntimeError("killed between two batches")

    return dies


def test_a_run_killed_in_the_concepts_stage_and_re_run_keeps_the_resolver_tables_of_a_clean_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The second run's stage dies after its first batch committed (one segment a batch), and is re-run: the
    resolver_* tables, as the concept tables, end as a clean run leaves them (a function of the concept rows)."""
    batch = concepts_stage._batch
    for mode in ("clean", "killed"):
        dbs = open_dbs(tmp_path / mode, concepts={"batch_size": 1})
        run_id = upstream(dbs, [chat(n, i) for i, n in enumerate(["c0", "c1", "c2"])], KILL_SPECS, "d0")
        stage_concepts.run(dbs.archive, dbs.staging, run_id=run_id, settings=dbs.settings)
        run_id = upstream(dbs, [chat(n, 3 + i) for i, n in enumerate(["c3", "c4", "c5"])], KILL_SPECS, "d1")
        if mode == "killed":
            before = dbs.staging.execute("SELECT COUNT(*) FROM concepts").fetchone()[0]
            monkeypatch.setattr(concepts_stage, "_batch", dies_after_a_write(dbs.staging, batch))
            with pytest.raises(Exception, match="killed between two batches"):
                stage_concepts.run(dbs.archive, dbs.staging, run_id=run_id, settings=dbs.settings)
            monkeypatch.setattr(concepts_stage, "_batch", batch)
            assert dbs.staging.execute("SELECT COUNT(*) FROM concepts").fetchone()[0] > before
        stage_concepts.run(dbs.archive, dbs.staging, run_id=run_id, settings=dbs.settings)
        dbs.close()
    clean, killed = open_dbs(tmp_path / "clean"), open_dbs(tmp_path / "killed")
    assert digest(killed.staging) == digest(clean.staging)
    assert clean.staging.execute("SELECT COUNT(*) FROM resolver_entries").fetchone()[0] > 0
    assert resolver_tables(killed.staging) == resolver_tables(clean.staging)
    concepts = store.load_concepts(clean.staging)  # the tables are the index of the concept rows as they end
    assert resolve_stored.stored_state(clean.staging) == resolve_stored.memory_state(full(concepts))
