"""The concepts stage reads only the extractions with a hypothesis not handled yet (issue 23), on real SQLite.

A run over a store where most extractions are done must parse only the new ones and end with the same concept
tables as the path that reads every current extraction (the stage before this change).
"""

from __future__ import annotations

import hashlib
import shutil
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from concept_support import Dbs, ScriptedExtractor, open_dbs, write_archive
from stage_support import stage_concepts, stage_extract, stage_segment
from test_concepts import answer, chat, hyp

from staging import concepts as store
from staging import extractions as extraction_store

TABLES = ("concepts", "concept_evidence", "concept_relations", "concept_transitions", "concept_inputs")


def digest(conn: sqlite3.Connection) -> dict[str, str]:
    """sha256 per concept table, over its rows in a fixed order, run ids left out."""
    found = {}
    for table in TABLES:
        columns = [r[1] for r in conn.execute(f"PRAGMA table_info({table})") if "run_id" not in r[1]]
        rows = conn.execute(f"SELECT {', '.join(columns)} FROM {table} ORDER BY {', '.join(columns)}").fetchall()
        found[table] = hashlib.sha256(repr([tuple(r) for r in rows]).encode()).hexdigest()
    return found


def every_current(conn: sqlite3.Connection) -> dict[str, set[str]]:
    """The stage before the change: every current extraction read, with every input handled before the run."""
    handled = {str(r[0]) for r in conn.execute("SELECT input_key FROM concept_inputs")}
    return {e.cache_key: handled for e in extraction_store.iter_current(conn)}


def upstream(dbs: Dbs, chats: Sequence[Any], specs: dict[str, Any], tag: str) -> str:
    write_archive(dbs.archive, chats, tag=tag)
    run_id = dbs.run_id()
    stage_segment.run(dbs.archive, dbs.staging, run_id=run_id, settings=dbs.settings)
    stage_extract.run(
        dbs.archive, dbs.staging, run_id=run_id, settings=dbs.settings, extractor=ScriptedExtractor(answer(specs))
    )
    return run_id


@pytest.mark.parametrize("batch_size", [1, 3, 50])
def test_an_incremental_run_reads_only_the_new_extractions_and_writes_what_reading_all_would(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, batch_size: int
) -> None:
    names = [f"c{i}" for i in range(12)]
    specs = {
        name: [hyp("Kitchen renovation" if i % 3 == 0 else f"Topic {i}", spans=1 + i % 2), hyp(f"Tool {i % 4}")]
        for i, name in enumerate(names)
    }
    first = open_dbs(tmp_path / "a", concepts={"batch_size": batch_size})
    run_id = upstream(first, [chat(n, i) for i, n in enumerate(names[:10])], specs, "a")
    stage_concepts.run(first.archive, first.staging, run_id=run_id, settings=first.settings)
    # the next export: two new conversations, one of them older than some stored ones (it sorts in between)
    run_id = upstream(first, [chat(names[10], 30), chat(names[11], 4)], specs, "b")
    first.close()
    shutil.copytree(tmp_path / "a", tmp_path / "b")

    incremental = open_dbs(tmp_path / "a", concepts={"batch_size": batch_size})
    read: list[str] = []
    real = extraction_store.hypotheses_for

    def counted(conn: sqlite3.Connection, keys: Sequence[str]) -> dict[str, str]:
        read.extend(keys)
        return real(conn, keys)

    monkeypatch.setattr(extraction_store, "hypotheses_for", counted)
    result = stage_concepts.run(incremental.archive, incremental.staging, run_id=run_id, settings=incremental.settings)
    new_keys = {
        str(r[0])
        for r in incremental.staging.execute(
            "SELECT se.cache_key FROM segment_extractions se JOIN segments s USING (segment_id)"
            " WHERE s.conversation_id IN ('c10', 'c11')"
        )
    }
    assert len(new_keys) == 2 and sorted(read) == sorted(new_keys)
    assert result.counts["extractions_read"] == 2 and result.counts["hypotheses"] == 4

    monkeypatch.setattr(extraction_store, "hypotheses_for", real)
    monkeypatch.setattr(store, "unfinished_inputs", every_current)
    reference = open_dbs(tmp_path / "b", concepts={"batch_size": batch_size})
    stage_concepts.run(reference.archive, reference.staging, run_id=run_id, settings=reference.settings)
    assert digest(incremental.staging) == digest(reference.staging)
    assert incremental.staging.execute("SELECT COUNT(*) FROM concept_inputs").fetchone()[0] == 24


def test_a_partly_handled_extraction_is_read_and_only_its_other_inputs_handled(tmp_path: Path) -> None:
    """An extraction whose first hypothesis was handled and second not (a run stopped between them, or a
    dropped one) is unfinished: the run handles the second only; a finished store reads nothing."""
    specs = {"a": [hyp("Kitchen renovation"), hyp("Save money", "goal")], "b": [hyp("Kitchen renovation")]}
    dbs = open_dbs(tmp_path)
    run_id = upstream(dbs, [chat("a"), chat("b", 1)], specs, "a")
    stage_concepts.run(dbs.archive, dbs.staging, run_id=run_id, settings=dbs.settings)
    assert store.unfinished_inputs(dbs.staging) == {}
    [key] = [
        str(r[0])
        for r in dbs.staging.execute(
            "SELECT cache_key FROM segment_extractions WHERE segment_id"
            " IN (SELECT segment_id FROM segments WHERE conversation_id = 'a')"
        )
    ]
    dbs.staging.execute("DELETE FROM concept_inputs WHERE input_key = ?", (f"{key}:1",))
    dbs.staging.commit()
    assert store.unfinished_inputs(dbs.staging) == {key: {f"{key}:0"}}
    again = stage_concepts.run(dbs.archive, dbs.staging, run_id=dbs.run_id(), settings=dbs.settings)
    assert again.counts["extractions_read"] == 1 and again.counts["hypotheses"] == 1
    assert store.unfinished_inputs(dbs.staging) == {}


TEMPLATE = ("Do not use brackets for array indexing.", "Use string concatenation for every output line.")


def templated(conversation_id: str, day: int) -> Any:
    """A user pastes the two-sentence template, then code of this conversation's own; the reply echoes it."""
    from datetime import timedelta

    from concept_support import T0, conversation

    code = ["total = sum(prices[i] for i in range(n))", "print(names[0] + names[1])", "matrix[row][col] = 0"][day % 3]
    user = f"{TEMPLATE[0]} {TEMPLATE[1]} Here is my code: {code}"
    reply = f"Sure, for {conversation_id}: rewritten with string concatenation and without array indexing."
    return conversation(conversation_id, [("user", user), ("assistant", reply)], start=T0 + timedelta(days=day))


def template_answer(segment: Any) -> str:
    """Each template sentence is the evidence of its own concept; the code is the evidence of a third."""
    import json

    user = segment.messages[0]
    own = user.text.split("Here is my code: ")[1]

    def one(title: str, text: str) -> dict[str, Any]:
        span = {"source_id": segment.segment_id, "message_id": user.message_id, "text": text, "confidence": 0.8}
        return {
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

    hypotheses = [one("Array indexing", TEMPLATE[0]), one("String concatenation", TEMPLATE[1])]
    hypotheses.append(one(f"Code of {segment.conversation_id}", own))
    return json.dumps({"hypotheses": hypotheses})


def evidence_rows(dbs: Dbs) -> set[tuple[str, str, str]]:
    rows = dbs.staging.execute(
        "SELECT c.title, e.message_id, e.text FROM concept_evidence e JOIN concepts c USING (concept_id)"
        " WHERE c.state NOT IN ('merged', 'split')"
    )
    return {(str(t), str(m), str(x)) for t, m, x in rows}


def live_titles(dbs: Dbs) -> set[str]:
    return {str(r[0]) for r in dbs.staging.execute("SELECT title FROM concepts WHERE state NOT IN ('merged', 'split')")}


def template_store(data_dir: Path, dumps: Sequence[Sequence[Any]]) -> Dbs:
    dbs = open_dbs(data_dir)
    for i, chats in enumerate(dumps):
        write_archive(dbs.archive, chats, tag=f"d{i}")
        run_id = dbs.run_id()
        stage_segment.run(dbs.archive, dbs.staging, run_id=run_id, settings=dbs.settings)
        extractor = ScriptedExtractor(template_answer)
        stage_extract.run(dbs.archive, dbs.staging, run_id=run_id, settings=dbs.settings, extractor=extractor)
        stage_concepts.run(dbs.archive, dbs.staging, run_id=run_id, settings=dbs.settings)
    return dbs


def test_a_template_found_at_its_third_conversation_leaves_the_store_a_clean_build_would_have(tmp_path: Path) -> None:
    """A template sentence is boilerplate from its third conversation on (extract/templates.py rule 1). A clean
    build over the three conversations has no template concept; a schedule that brought two conversations first
    and the third a run later should end the same."""
    chats = [templated(f"t{i}", i) for i in range(3)]
    clean = template_store(tmp_path / "clean", [chats])
    assert not live_titles(clean) & {"Array indexing", "String concatenation"}
    incremental = template_store(tmp_path / "incremental", [chats[:2], chats[2:]])
    assert live_titles(incremental) == live_titles(clean)
    assert evidence_rows(incremental) == evidence_rows(clean)  # the same concepts, backed by the same messages
    again = stage_concepts.run(
        incremental.archive, incremental.staging, run_id=incremental.run_id(), settings=incremental.settings
    )
    assert not any("rebuilt" in note for note in again.notes)  # rebuilt once: no stored evidence cites a template now
    assert live_titles(incremental) == live_titles(clean)
