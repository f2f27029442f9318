"""The template rule's kept state (staging/template_state.py, extract/templates.py `find_boilerplate`), on real SQLite.

After every run of a schedule the state kept up to date must equal the state built from scratch over the same
databases, and its answer the one-pass scan's (`scan_boilerplate`): a sentence that becomes repeated with a new
conversation, a decision that changes through the one-hop coupling (a sentence's messages come to hold a second
repeated sentence, its own citations unchanged), and a sentence that stops being repeated when a conversation
is edited.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from concept_support import T0, Dbs, ScriptedExtractor, conversation, open_dbs, write_archive
from stage_support import stage_concepts, stage_extract, stage_segment

from extract import templates
from staging import concepts as store
from staging import template_state as state

A = "Always answer in plain English sentences"  # evidence as the mapper keeps it: no closing full stop
B = "Keep every answer under two hundred words"
E = "Explain each step before the final result"
RESTS = {
    "c0": "My garden tomatoes get yellow leaves after the heavy rain last week.",
    "c1": "Which train pass is cheapest for a month of commuting to Lyon?",
    "c2": "How do I replace the chain on an old steel road bicycle at home?",
    "b2": "Draft a polite note to my landlord about the broken heating.",
    "e1": "Plan a three day hiking trip in the Dolomites for beginners.",
    "e2": "Compare two mortgage offers with different fixed rate periods.",
}
TITLES = {A: "Plain English", B: "Short answers", E: "Step explanations"}


def chat(conversation_id: str, cited: Sequence[str], day: int) -> Any:
    """A user message holding `cited` sentences, then what this conversation is about; a short reply."""
    user = " ".join([*(f"{sentence}." for sentence in cited), RESTS[conversation_id]])
    return conversation(conversation_id, [("user", user), ("assistant", "Sure.")], start=T0 + timedelta(days=day))


CITES: dict[str, Sequence[str]] = {}  # conversation -> the sentences its extraction cites (set per dump)


def answer(segment: Any) -> str:
    """One concept per cited sentence, each with that sentence as its evidence."""
    user = segment.messages[0]
    hypotheses = []
    for sentence in CITES[segment.conversation_id]:
        title = TITLES[sentence]
        span = {"source_id": segment.segment_id, "message_id": user.message_id, "text": sentence, "confidence": 0.8}
        hypotheses.append(
            {
                "concept_id": title.lower().replace(" ", "-"),
                "title": title,
                "type": "entity",
                "state": "active",
                "description": f"about {title}",
                "confidence": 0.8,
                "aliases": [],
                "evidence_spans": [span],
                "relations": [],
                "revision_count": 0,
                "first_seen": None,
                "last_seen": None,
            }
        )
    return json.dumps({"hypotheses": hypotheses})


def dump(dbs: Dbs, tag: str, chats: dict[str, tuple[Sequence[str], int]]) -> None:
    """Ingest these conversations as one dump and run segment, extract and concepts over it."""
    CITES.update({c: cited for c, (cited, _) in chats.items()})
    write_archive(dbs.archive, [chat(c, cited, day) for c, (cited, day) in chats.items()], tag=tag)
    run_id = dbs.run_id()
    stage_segment.run(dbs.archive, dbs.staging, run_id=run_id, settings=dbs.settings)
    stage_extract.run(
        dbs.archive, dbs.staging, run_id=run_id, settings=dbs.settings, extractor=ScriptedExtractor(answer)
    )
    stage_concepts.run(dbs.archive, dbs.staging, run_id=run_id, settings=dbs.settings)


def snapshot(conn: sqlite3.Connection) -> dict[str, list[tuple[Any, ...]]]:
    tables = [t for t in state.TABLES if t not in ("template_mark", "template_drops")]
    return {t: sorted(tuple(r) for r in conn.execute(f"SELECT * FROM {t}")) for t in tables}


def kept_equals_fresh(dbs: Dbs) -> frozenset[str]:
    """The kept state equals one built from scratch, and both answer what the scan answers; the sentences found."""
    kept = snapshot(dbs.staging)
    dbs.staging.execute("BEGIN")
    again = templates.find_boilerplate(dbs.staging, dbs.archive)  # nothing changed since the run: no update
    assert snapshot(dbs.staging) == kept
    state.clear(dbs.staging)
    fresh = templates.find_boilerplate(dbs.staging, dbs.archive)
    assert snapshot(dbs.staging) == kept
    dbs.staging.execute("ROLLBACK")
    scan = templates.scan_boilerplate(dbs.staging, dbs.archive)
    assert state.unfinished_inputs(dbs.staging) == store.unfinished_inputs(dbs.staging)
    assert again.sentences == fresh.sentences == scan.sentences
    assert again.conversation_of == fresh.conversation_of == scan.conversation_of
    return scan.sentences


def repeated(dbs: Dbs) -> set[str]:
    return {str(r[0]) for r in dbs.staging.execute("SELECT text FROM template_repeated")}


@pytest.fixture
def schedule(tmp_path: Path) -> Dbs:
    """Day one: A in c0, c1, c2; B in c0, c1 and b2; E in c2 and e1 only. Every message holding A holds a second
    repeated sentence except c2's (E is not repeated yet), so A has two subjects of three: not boilerplate."""
    CITES.clear()
    dbs = open_dbs(tmp_path / "d")
    chats = {"c0": ([A, B], 0), "c1": ([A, B], 1), "c2": ([A, E], 2), "b2": ([B], 3), "e1": ([E], 4)}
    dump(dbs, "d0", chats)
    return dbs


def test_a_decision_follows_a_second_sentence_becoming_repeated_in_another_conversation(schedule: Dbs) -> None:
    """e2 cites E only: E becomes repeated, so c2's message now holds two repeated sentences and A (whose own
    citations did not change) becomes boilerplate; the kept state says so as a fresh build does."""
    dbs = schedule
    assert repeated(dbs) == {A, B}
    assert kept_equals_fresh(dbs) == frozenset()
    dump(dbs, "d1", {"e2": ([E], 5)})
    assert repeated(dbs) == {A, B, E}
    assert kept_equals_fresh(dbs) == {A}


def test_a_sentence_stops_being_repeated_when_a_conversation_is_edited(schedule: Dbs) -> None:
    """c2 is exported again without E: E is cited in two conversations, no longer repeated, and A is no longer
    boilerplate."""
    dbs = schedule
    dump(dbs, "d1", {"e2": ([E], 5)})
    assert kept_equals_fresh(dbs) == {A}
    dump(dbs, "d2", {"c2": ([A], 2)})
    assert repeated(dbs) == {A, B}
    assert kept_equals_fresh(dbs) == frozenset()


def test_a_run_parses_only_the_extractions_new_since_the_state(schedule: Dbs, monkeypatch: pytest.MonkeyPatch) -> None:
    dbs = schedule
    read: list[str] = []
    real = state.hypotheses

    def counted(conn: sqlite3.Connection, keys: Any) -> dict[str, str]:
        keys = list(keys)
        read.extend(keys)
        return real(conn, keys)

    monkeypatch.setattr(state, "hypotheses", counted)
    dump(dbs, "d1", {"e2": ([E], 5)})
    [new] = [
        str(r[0])
        for r in dbs.staging.execute(
            "SELECT cache_key FROM segment_extractions se JOIN segments s USING (segment_id)"
            " WHERE s.conversation_id = 'e2'"
        )
    ]
    assert read == [new]
    read.clear()
    stage_concepts.run(dbs.archive, dbs.staging, run_id=dbs.run_id(), settings=dbs.settings)
    assert read == []  # nothing new: nothing parsed


def test_a_state_without_its_archive_mark_is_built_again(schedule: Dbs) -> None:
    """Another archive, or one that does not log its changes, cannot say what changed: the state is rebuilt."""
    dbs = schedule
    dump(dbs, "d1", {"e2": ([E], 5)})
    dbs.staging.execute("UPDATE template_repeated SET found = 0")  # a stale decision a rebuild must replace
    dbs.staging.execute("DELETE FROM template_mark")
    dbs.staging.commit()
    dbs.staging.execute("BEGIN")
    found = templates.find_boilerplate(dbs.staging, dbs.archive)
    dbs.staging.execute("COMMIT")
    assert found.sentences == {A}
    assert kept_equals_fresh(dbs) == {A}


def test_a_conversation_that_drops_every_hypothesis_again_is_skipped_with_the_same_counts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A template's hypotheses are dropped, not handled: their extractions stay unfinished. The run that dropped
    them (and kept the code's) remembers them; later runs skip them (no extraction read) and count the same
    drops; a conversation the archive changes is replayed again; the store is the one replaying would write."""
    from test_concepts_incremental import digest, template_store, templated

    from extract import template_drops
    from staging import extractions as extraction_store

    chats = [templated(f"t{i}", i) for i in range(4)]
    dbs = template_store(tmp_path / "d", [chats])

    def again() -> tuple[dict[str, int], list[str]]:
        read: list[str] = []
        real = extraction_store.hypotheses_for

        def counted(conn: sqlite3.Connection, keys: Sequence[str]) -> dict[str, str]:
            read.extend(keys)
            return real(conn, keys)

        monkeypatch.setattr(extraction_store, "hypotheses_for", counted)
        result = stage_concepts.run(dbs.archive, dbs.staging, run_id=dbs.run_id(), settings=dbs.settings)
        monkeypatch.undo()
        return result.counts, read

    # the first run kept the code's concepts and dropped the template's: what is left is those, remembered
    assert set(state.drops(dbs.staging)) == {f"t{i}" for i in range(4)}
    store_before = digest(dbs.staging)
    skipped, read = again()
    assert read == [] and skipped["boilerplate_dropped"] == 8
    assert skipped["extractions_read"] == 0  # a skipped one is not even looked at
    assert digest(dbs.staging) == store_before
    replayed = skipped

    edited = templated("t1", 1)
    edited.title = "t1, exported again"
    write_archive(dbs.archive, [edited], tag="d9")  # the archive logs t1 as changed: its replay is forgotten
    changed, read = again()
    assert len(read) == 1 and changed["boilerplate_dropped"] == replayed["boilerplate_dropped"]
    assert digest(dbs.staging) == store_before

    monkeypatch.setattr(template_drops, "replayed", lambda *_: set())  # the path that replays every conversation
    every, read = again()
    assert len(read) == 4 and every["boilerplate_dropped"] == replayed["boilerplate_dropped"]
    assert digest(dbs.staging) == store_before


def test_removing_extractions_forgets_exactly_their_spans(tmp_path: Path) -> None:
    """`remove` takes each removed extraction's own spans and no other, a sentence two extractions cite included,
    and returns the sentences they cited (an upgrade removes every extraction: the spans go pair by pair, never
    every cited sentence looked up with every removed extraction)."""
    conn = sqlite3.connect(tmp_path / "staging.db")
    for ddl in state.SCHEMA:
        conn.execute(ddl)
    extractions = [(seq, f"s{seq}", f"k{seq}", "r1", "c") for seq in (1, 2, 3)]
    spans = [(10, 1, 0, "m1"), (10, 1, 1, "m2"), (11, 1, 0, "m1"), (11, 2, 0, "m3"), (12, 2, 0, "m3")]
    spans += [(11, 3, 0, "m4"), (13, 3, 0, "m4")]
    state.add(conn, extractions, spans, {1: 2, 2: 2, 3: 2})
    assert state.remove(conn, [1, 2]) == {10, 11, 12}
    assert conn.execute("SELECT sentence_key, seq, ord, message_id FROM template_spans ORDER BY 1, 2").fetchall() == [
        (11, 3, 0, "m4"),
        (13, 3, 0, "m4"),
    ]
    assert [seq for (seq,) in conn.execute("SELECT seq FROM template_extractions")] == [3]


def test_a_signature_follows_only_the_boilerplate_its_conversation_cites() -> None:
    """A sentence found (or lost) as boilerplate elsewhere in the archive leaves a conversation's replay signature
    as it was; one its own extractions cite changes it, as a new unfinished hypothesis does."""
    from extract import template_drops
    from staging.extractions import CurrentExtraction

    extractions = [CurrentExtraction("s1", "k1", "x"), CurrentExtraction("s2", "k2", "x")]
    unfinished = {"k1": {"k1:0", "k1:1"}, "k2": {"k2:0"}}
    cited = {"k1": {state.sentence_key(A), state.sentence_key(B)}, "k2": {state.sentence_key(E)}}

    def signed(sentences: set[str], handed: dict[str, set[str]] = unfinished) -> dict[str, str]:
        plate = templates.Boilerplate(sentences=frozenset(sentences), conversation_of={"s1": "c1", "s2": "c2"})
        return template_drops.signatures(extractions, handed, plate, cited)

    base = signed({A, "a sentence nobody here cites"})
    assert set(base) == {"c1", "c2"}
    elsewhere = signed({A})  # the uncited sentence is no longer boilerplate
    assert elsewhere == base
    assert signed({A, E})["c1"] == base["c1"] and signed({A, E})["c2"] != base["c2"]  # E is c2's
    assert signed({A, B})["c1"] != base["c1"]  # B is c1's
    assert signed({A}, {"k1": {"k1:0"}, "k2": {"k2:0"}})["c1"] != base["c1"]  # handed less


def test_the_conversations_holding_boilerplate_are_read_from_the_found_sentences(tmp_path: Path) -> None:
    """`found` reads the found sentences and then only their places (by the primary key), never every place of
    every repeated sentence: the plan that walked all places cost 4.9 s a run at 1M messages. Same answer."""
    conn = sqlite3.connect(tmp_path / "staging.db")
    for ddl in state.SCHEMA:
        conn.execute(ddl)
    conn.executemany(
        "INSERT INTO template_repeated (sentence_key, text, rank_seq, rank_ord, found) VALUES (?, ?, ?, 0, ?)",
        [(key, f"sentence {key}", key, int(key % 10 == 0)) for key in range(1, 201)],
    )
    conn.executemany(
        "INSERT INTO template_places (sentence_key, position, conversation_id, message_id) VALUES (?, ?, ?, ?)",
        [(key, pos, f"c{(key + pos) % 37:02d}", f"m{key}-{pos}") for key in range(1, 201) for pos in range(3)],
    )
    plan = " | ".join(str(row[-1]) for row in conn.execute(f"EXPLAIN QUERY PLAN {state.HOLDING}"))
    assert "SCAN r" in plan and "SEARCH p USING PRIMARY KEY" in plan, plan
    sentences, holding = state.found(conn)
    assert sorted(sentences) == sorted(f"sentence {key}" for key in range(10, 201, 10))
    assert holding == sorted({f"c{(key + pos) % 37:02d}" for key in range(10, 201, 10) for pos in range(3)})
