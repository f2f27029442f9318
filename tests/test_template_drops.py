"""A remembered replay of the template rule (extract/template_drops.py) is skipped without being recounted, so it
must be forgotten by every event that changes what its conversation would hand the rule: a sentence it cites
found or lost as boilerplate by other conversations, a new extraction in it, the concept store emptied. Each test
ends the schedule where a clean build over the same archive ends (issue 23: no recount, the same store)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from concept_support import T0, Dbs, ScriptedExtractor, conversation, open_dbs, write_archive
from stage_support import stage_concepts, stage_extract, stage_segment
from test_concepts_incremental import evidence_rows, live_titles

from extract import template_drops
from staging import template_state as state

A = ("Do not use brackets for array indexing.", "Use string concatenation for every output line.")
B = ("Always answer in formal English.", "Explain each step with great care.")
CODE = ["total = sum(prices[i] for i in range(n))", "print(names[0] + names[1])", "matrix[row][col] = 0"]


def chat(conversation_id: str, day: int, template: Sequence[str] = A) -> Any:
    """A user pastes a template (or none), then code of this conversation's own; the reply echoes nothing."""
    user = " ".join([*template, f"Here is my code: {CODE[day % 3]} # {conversation_id}"])
    reply = f"Sure, for {conversation_id}: here it is rewritten."
    return conversation(conversation_id, [("user", user), ("assistant", reply)], start=T0 + timedelta(days=day))


def answer(segment: Any) -> str:
    """Each sentence the user pasted is the evidence of its own concept (its last two words), the code of a third."""
    user = segment.messages[0]
    pasted, code = user.text.split("Here is my code: ")
    sentences = [s + "." for s in pasted.strip().rstrip(".").split(". ") if s]

    def one(title: str, text: str) -> dict[str, Any]:
        span = {"source_id": segment.segment_id, "message_id": user.message_id, "text": text, "confidence": 0.8}
        return {
            **{"concept_id": title.lower().replace(" ", "-"), "title": title, "type": "entity", "state": "active"},
            **{"description": f"about {title}", "confidence": 0.8, "aliases": [], "evidence_spans": [span]},
            **{"relations": [], "revision_count": 0, "first_seen": None, "last_seen": None},
        }

    hypotheses = [one(" ".join(s.rstrip(".").split()[-2:]).capitalize(), s) for s in sentences]
    hypotheses.append(one(f"Code of {segment.conversation_id}", code))
    return json.dumps({"hypotheses": hypotheses})


def run(dbs: Dbs, chats: Sequence[Any] = (), tag: str = "", extractor: Any = None) -> dict[str, int]:
    """One dump (if any) through segment, extract and concepts; the concepts stage's counts."""
    if chats:
        write_archive(dbs.archive, chats, tag=tag)
    run_id = dbs.run_id()
    stage_segment.run(dbs.archive, dbs.staging, run_id=run_id, settings=dbs.settings)
    extractor = extractor or ScriptedExtractor(answer)
    stage_extract.run(dbs.archive, dbs.staging, run_id=run_id, settings=dbs.settings, extractor=extractor)
    return stage_concepts.run(dbs.archive, dbs.staging, run_id=run_id, settings=dbs.settings).counts


def clean(data_dir: Path, chats: Sequence[Any]) -> Dbs:
    dbs = open_dbs(data_dir)
    run(dbs, chats, "c0")
    return dbs


def remembered(dbs: Dbs) -> set[str]:
    return set(state.drops(dbs.staging))


def test_a_sentence_lost_as_boilerplate_elsewhere_replays_the_conversations_citing_it(tmp_path: Path) -> None:
    """Four conversations paste template A and are remembered; two of them are exported again without it, so A is
    repeated in two conversations only and is no template any more. The other two, unchanged in the archive, cite
    it: they are replayed, and their A concepts are kept as a clean build keeps them."""
    dbs = open_dbs(tmp_path / "s")
    run(dbs, [chat(f"t{i}", i) for i in range(4)], "d0")
    run(dbs)  # a day with nothing new
    assert remembered(dbs) == {"t0", "t1", "t2", "t3"}
    assert "Array indexing" not in live_titles(dbs)
    final = [chat("t0", 0), chat("t1", 1), chat("t2", 2, ()), chat("t3", 3, ())]
    counts = run(dbs, final[2:], "d1")
    assert counts["boilerplate_sentences"] == 0 and remembered(dbs) == set()
    reference = clean(tmp_path / "c", final)
    assert "Array indexing" in live_titles(reference)
    assert live_titles(dbs) == live_titles(reference)
    assert evidence_rows(dbs) == evidence_rows(reference)


def test_a_store_rebuilt_for_a_new_template_forgets_every_replay(tmp_path: Path) -> None:
    """Template A's conversations are remembered; template B is pasted in two conversations (not yet a template:
    their B concepts are stored), then in a third: the store is emptied and rebuilt. A conversation of A still
    remembered then would be skipped and its own code concept, handled before, lost."""
    dbs = open_dbs(tmp_path / "s")
    a_chats = [chat(f"t{i}", i) for i in range(4)]
    b_chats = [chat(f"u{i}", 10 + i, B) for i in range(3)]
    run(dbs, [*a_chats, *b_chats[:2]], "d0")
    run(dbs)
    assert remembered(dbs) == {"t0", "t1", "t2", "t3"} and "Formal english" in live_titles(dbs)
    run(dbs, b_chats[2:], "d1")
    assert {f"Code of t{i}" for i in range(4)} <= live_titles(dbs)
    reference = clean(tmp_path / "c", [*a_chats, *b_chats])
    assert "Formal english" not in live_titles(reference)
    assert live_titles(dbs) == live_titles(reference)
    assert evidence_rows(dbs) == evidence_rows(reference)


def test_a_conversation_that_holds_a_known_template_again_has_its_old_evidence_checked(tmp_path: Path) -> None:
    """d pastes A while A is no template (its A concepts are stored); the next export edits d without A while three
    others paste A (A is found; d holds none); the export after that restores d. A is not new, but d is touched:
    its stored evidence cites A, so the store is rebuilt and ends as a clean build's (found by the review of the
    remembered replays: checking only new sentences kept d's A concepts for good)."""
    dbs = open_dbs(tmp_path / "s")
    run(dbs, [chat("d", 5), chat("p", 7, ())], "d0")
    assert "Array indexing" in live_titles(dbs)
    run(dbs, [chat("d", 5, ()), *(chat(f"t{i}", i) for i in range(3))], "d1")
    run(dbs, [chat("d", 5)], "d2")
    reference = clean(tmp_path / "c", [chat("d", 5), chat("p", 7, ()), *(chat(f"t{i}", i) for i in range(3))])
    assert "Array indexing" not in live_titles(reference)
    assert live_titles(dbs) == live_titles(reference)
    assert evidence_rows(dbs) == evidence_rows(reference)


def test_a_new_extraction_in_a_remembered_conversation_replays_it(tmp_path: Path) -> None:
    """A remembered conversation that the next export continues (its segment, and so its extraction, changes) is
    replayed; the others stay skipped and are not read; it is remembered again in the same run (it kept a
    concept, and dropped the template's: what it is handed next is those only)."""
    dbs = open_dbs(tmp_path / "s")
    run(dbs, [chat(f"t{i}", i) for i in range(4)], "d0")
    assert remembered(dbs) == {"t0", "t1", "t2", "t3"}
    first = chat("t1", 1)
    turns = [(m.role, m.text) for m in first.messages] + [("user", "Here is my code: y = 1"), ("assistant", "Ok.")]
    continued = run(dbs, [conversation("t1", turns, start=T0 + timedelta(days=1))], "d1")
    assert continued["extractions_read"] == 1 and remembered(dbs) == {"t0", "t1", "t2", "t3"}
    assert run(dbs)["extractions_read"] == 0


def test_new_extractions_of_an_unchanged_archive_replay_their_conversations(tmp_path: Path) -> None:
    """An extractor upgrade replaces every extraction while the archive stays as it was: each remembered
    conversation is handed new extractions, so it is replayed and their hypotheses are handled."""
    dbs = open_dbs(tmp_path / "s")
    run(dbs, [chat(f"t{i}", i) for i in range(4)], "d0")
    run(dbs)
    assert remembered(dbs) == {"t0", "t1", "t2", "t3"}

    def renamed(segment: Any) -> str:
        return answer(segment).replace('"Code of ', '"Snippet of ')

    counts = run(dbs, extractor=ScriptedExtractor(renamed, name="scripted2"))
    assert counts["extractions_read"] == 4
    assert {f"Snippet of t{i}" for i in range(4)} <= live_titles(dbs)


def test_skipped_conversations_are_not_looked_at(tmp_path: Path) -> None:
    """`unfinished_inputs` with the remembered conversations skipped answers the reference for the others."""
    from staging import concepts as store

    dbs = open_dbs(tmp_path / "s")
    run(dbs, [*(chat(f"t{i}", i) for i in range(4)), chat("p", 9, ())], "d0")
    every = state.unfinished_inputs(dbs.staging)
    assert every == store.unfinished_inputs(dbs.staging) and len(every) == 4  # the dropped ones' extractions
    rows = dbs.staging.execute("SELECT cache_key FROM template_extractions WHERE conversation_id IN ('t0', 't2')")
    skipped = {str(r[0]) for r in rows}
    assert len(skipped) == 2
    assert state.unfinished_inputs(dbs.staging, ["t0", "t2"]).keys() == every.keys() - skipped


def test_replays_remembered_by_the_older_code_are_forgotten_by_the_upgrade(tmp_path: Path) -> None:
    """The older code re-signed each remembered replay every run and kept a row through events it did not log (a
    run killed after its first transaction): staging.db migration 17 empties template_drops once (one replay)."""
    from staging.ledger import open_staging
    from staging.migrations import STAGING

    path = tmp_path / "staging.db"
    conn = open_staging(path)
    conn.execute("INSERT INTO template_drops VALUES ('t0', 'signature', 2)")
    conn.execute("DELETE FROM schema_migrations WHERE version >= 17")
    conn.execute("PRAGMA user_version = 16")
    conn.commit()
    conn.close()
    conn = open_staging(path)
    assert conn.execute("SELECT COUNT(*) FROM template_drops").fetchone()[0] == 0
    assert conn.execute("PRAGMA user_version").fetchone()[0] == STAGING[-1].version  # 17 and the ones after
    conn.close()


def echoing(conversation_id: str, day: int) -> Any:
    """Template A (none for a 'p' conversation) and code of its own; the reply says the template's words back; the
    user thanks. With `SEGMENT` each message is a segment of its own."""
    user = chat(conversation_id, day, () if conversation_id.startswith("p") else A).messages[0].text
    reply = f"Sure, for {conversation_id}: your code, rewritten without array indexing."
    thanks = f"Thanks, the loops of {conversation_id} work now."
    turns = [("user", user), ("assistant", reply), ("user", thanks)]
    return conversation(conversation_id, turns, start=T0 + timedelta(days=day))


SEGMENT = {"max_tokens": 16, "min_tokens": 0}


def echoing_answer(segment: Any) -> str:
    """The pasted message: `answer`'s hypotheses (the template's dropped, the code's kept). The reply: "Code" (kept:
    a kept title is no echo) and "Indexing" (an echo of the dropped "Array indexing", earlier: dropped too). The
    thanks: "Loops" (kept: an extraction left with nothing unfinished)."""
    [message] = segment.messages
    if "Here is my code: " in message.text:
        return answer(segment)
    titles = ["Code", "Indexing"] if message.role == "assistant" else ["Loops"]
    span = {"source_id": segment.segment_id, "message_id": message.message_id, "text": message.text, "confidence": 0.8}
    hypotheses = [
        {
            **{"concept_id": title.lower(), "title": title, "type": "entity", "state": "active"},
            **{"description": f"about {title}", "confidence": 0.8, "aliases": [], "evidence_spans": [span]},
            **{"relations": [], "revision_count": 0, "first_seen": None, "last_seen": None},
        }
        for title in titles
    ]
    hypotheses[0]["relations"] = [{"target_id": "Code", "relation": "supports", "confidence": 0.7}]
    return json.dumps({"hypotheses": hypotheses})


def store_digest(dbs: Dbs) -> dict[str, str]:
    """sha256 per concept-store table, over its sorted rows, run ids left out."""
    found = {}
    for table in ("concepts", "concept_evidence", "concept_relations", "concept_transitions", "concept_inputs"):
        columns = [r[1] for r in dbs.staging.execute(f"PRAGMA table_info({table})") if "run_id" not in r[1]]
        rows = dbs.staging.execute(f"SELECT {', '.join(columns)} FROM {table} ORDER BY {', '.join(columns)}")
        found[table] = hashlib.sha256(repr([tuple(r) for r in rows]).encode()).hexdigest()
    return found


@pytest.mark.parametrize("batch_size", [500, 1])  # 1: each conversation's segments split over batches
def test_a_conversation_that_kept_some_hypotheses_is_remembered_in_the_same_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, batch_size: int
) -> None:
    """A first build keeps each templated conversation's own concepts and drops its template ones (and the reply's
    echo of them, a segment later): the conversations are remembered at once, so the next run, which brings two new
    conversations, reads their extractions only, and the run after reads nothing. Each run leaves the store, the
    template_drops rows and the counts (but what it read) that remembering them one run later (the code before)
    leaves."""
    days = [[echoing(f"t{i}", i) for i in range(4)], [echoing("q", 20), echoing("p", 21)], []]
    extractor = ScriptedExtractor(echoing_answer)
    sections = {"segment": SEGMENT, "concepts": {"batch_size": batch_size}}
    new, before = open_dbs(tmp_path / "new", **sections), open_dbs(tmp_path / "before", **sections)
    drops: list[tuple[dict[str, tuple[str, int]], dict[str, tuple[str, int]]]] = []
    for day, chats in enumerate(days):
        counts = run(new, chats, f"d{day}", extractor)
        with monkeypatch.context() as patch:
            patch.setattr(template_drops, "_left_dropped", lambda *args: {})  # the code before: one run later
            reference = run(before, chats, f"d{day}", extractor)
        assert counts.pop("extractions_read") == [12, 6, 0][day]
        assert reference.pop("extractions_read") == [12, 14, 2][day]  # the replays: t0-t3, then q (2 segments each)
        assert counts == reference and counts["boilerplate_dropped"] == [12, 15, 15][day]
        assert store_digest(new) == store_digest(before)
        drops.append((state.drops(new.staging), state.drops(before.staging)))
    # each row as the code before writes it a run later (signature and count), none it would not write
    assert set(drops[0][0]) == {"t0", "t1", "t2", "t3"} and drops[0][1] == {}
    assert drops[0][0] == drops[1][1] and drops[1][0] == drops[2][1] == drops[2][0]
    assert {"Code of t0", "Code", "Indexing"} <= live_titles(new)  # "Indexing": p says it, with no template
    assert "Array indexing" not in live_titles(new)
