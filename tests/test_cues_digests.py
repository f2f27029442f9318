"""The cues stage digests only the conversations that may have changed since its base run (memory/cues_state.py
`digests_since`): those archive.db logged as changed after the base run's mark, and those with a message whose
concept evidence moved. The digests equal digesting every conversation again; the run's memory equals the run of a
base without the index (which digests everything, as before).

Real stages on a real data dir (tests/test_cues_incremental.py's export and new dump), SQL statements traced.
"""

from __future__ import annotations

import json
import pickle
import shutil
import sqlite3
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path

import pytest
from stage_support import cues_stage as cues
from stage_support import ingest_stage

from clients.embedders import StaticMiniLM
from contracts.settings import Settings
from memory import cues_state
from memory.graph import EvidenceInput, GraphBuilder
from staging import archive_changes
from staging import memory_inputs as inputs
from staging.archive import open_archive
from staging.archive_changes import Mark
from staging.archive_rows import content_hash
from staging.ledger import open_run, open_staging
from tests.test_cluster import themed_export
from tests.test_cues_incremental import (
    _Interrupted,
    _stages_before_cues,
    dated,
    named_dump,
    new_dump,
    rows,
    run_all,
    settings_for,
)

TABLES = ("memory_content", "memory_cues", "memory_tags", "memory_edges", "memory_merges")


@pytest.fixture(scope="module")
def embedder() -> StaticMiniLM:
    return StaticMiniLM()


@pytest.fixture(scope="module")
def base_dir(tmp_path_factory: pytest.TempPathFactory, embedder: StaticMiniLM) -> Path:
    """A data dir built through cues once (run r1, a full build that saves its digest index)."""
    root = tmp_path_factory.mktemp("cues-digests")
    result = run_all(settings_for(root / "data"), dated(themed_export(root / "themes.jsonl")), "r1", embedder)
    assert result.status == "succeeded" and result.counts["incremental"] == 0
    return root / "data"


def copy_of(base_dir: Path, tmp_path: Path, name: str = "data") -> Path:
    shutil.copytree(base_dir, tmp_path / name)
    return tmp_path / name


@contextmanager
def opened(settings: Settings) -> Iterator[tuple[sqlite3.Connection, sqlite3.Connection]]:
    with closing(open_archive(settings.archive_path)) as archive, closing(open_staging(settings.staging_path)) as st:
        yield archive, st


def builder_of(staging: sqlite3.Connection, settings: Settings) -> GraphBuilder:
    evidence = [EvidenceInput(*row) for row in inputs.live_evidence(staging)]
    return GraphBuilder(evidence, settings.memory)


@contextmanager
def traced(conn: sqlite3.Connection) -> Iterator[list[str]]:
    sent: list[str] = []
    conn.set_trace_callback(sent.append)
    try:
        yield sent
    finally:
        conn.set_trace_callback(None)


def digests_now(settings: Settings) -> tuple[cues_state.Digests, dict[str, str], list[str]]:
    """`digests_since` from the newest finished cues run (its statements traced), and every digest computed again."""
    with opened(settings) as (archive, staging):
        builder = builder_of(staging, settings)
        base = cues_state.load_base(staging, settings)
        with traced(archive) as sent:
            found = cues_state.digests_since(archive, builder.evidence, builder.concepts, base)
        return found, cues_state.conversation_digests(archive, builder.evidence, builder.concepts), sent


def message_reads(sent: list[str]) -> list[str]:
    return [sql for sql in sent if "visible_messages" in sql]


def test_a_new_dump_digests_only_its_conversations_and_equals_digesting_all(
    base_dir: Path, tmp_path: Path, embedder: StaticMiniLM
) -> None:
    data = copy_of(base_dir, tmp_path)
    settings = settings_for(data)
    state, index = cues_state.load_saved(data, "r1")
    assert state is not None and index is not None and index.mark is not None and index.evidence
    with opened(settings) as (archive, staging):
        builder = builder_of(staging, settings)
        assert cues_state.conversation_digests(archive, builder.evidence, builder.concepts) == state.conversations

    nothing, everything, sent = digests_now(settings)  # nothing changed since r1: nothing read from the messages
    assert nothing.conversations == everything and nothing.computed == 0 and message_reads(sent) == []

    dump = new_dump(tmp_path / "new.jsonl")  # two new conversations, one turn added to baking-0
    settings_r2 = settings_for(data)
    result = run_all(settings_r2, dump, "r2", embedder)
    assert result.status == "succeeded" and result.counts["incremental"] == 1
    assert result.counts["conversations_digested"] == 3
    state2, index2 = cues_state.load_saved(data, "r2")
    assert state2 is not None and index2 is not None
    with opened(settings) as (archive, staging):
        builder = builder_of(staging, settings)
        assert cues_state.conversation_digests(archive, builder.evidence, builder.concepts) == state2.conversations
    assert set(state2.conversations) == set(state.conversations) | {"airship-0", "airship-1"}


def test_the_digest_reads_follow_the_change_in_the_archive_and_in_the_evidence(base_dir: Path, tmp_path: Path) -> None:
    data = copy_of(base_dir, tmp_path)
    settings = settings_for(data)
    with closing(sqlite3.connect(settings.archive_path)) as conn, conn:  # a message edited in place (trigger-logged)
        uuid, conversation = conn.execute(
            "SELECT uuid, conversation_id FROM messages WHERE conversation_id = 'baking-0' ORDER BY seq LIMIT 1"
        ).fetchone()
        text = "Sourdough starter, edited: the oven crust story again."
        conn.execute("UPDATE messages SET text = ?, content_hash = ? WHERE uuid = ?", (text, content_hash(text), uuid))
    found, everything, sent = digests_now(settings)
    assert found.conversations == everything and found.computed == 1
    assert found.conversations[conversation] != cues_state.load_state(data, "r1").conversations[conversation]
    reads = message_reads(sent)
    assert reads and all('["baking-0"]' in sql for sql in reads)  # only that conversation's messages were read

    with closing(sqlite3.connect(settings.staging_path)) as conn, conn:  # a concept renamed: evidence moved
        concept_id, message = conn.execute(
            "SELECT e.concept_id, e.message_id FROM concept_evidence e JOIN concepts c USING (concept_id)"
            " WHERE c.state = 'active' ORDER BY e.concept_id LIMIT 1"
        ).fetchone()
        conn.execute("UPDATE concepts SET title = title || ' renamed' WHERE concept_id = ?", (concept_id,))
        evidence = conn.execute("SELECT message_id FROM concept_evidence WHERE concept_id = ?", (concept_id,))
        touched = {str(r[0]) for r in evidence}
    with closing(sqlite3.connect(settings.archive_path)) as conn:
        moved = {
            str(r[0])
            for r in conn.execute(
                f"SELECT DISTINCT conversation_id FROM messages WHERE uuid IN ({','.join('?' * len(touched))})",
                sorted(touched),
            )
        }
    assert message in touched and moved
    found, everything, _ = digests_now(settings)
    assert found.conversations == everything
    assert found.computed == len(moved | {"baking-0"})


def test_without_an_index_or_with_another_archive_every_conversation_is_digested(
    base_dir: Path, tmp_path: Path
) -> None:
    data = copy_of(base_dir, tmp_path)
    settings = settings_for(data)
    path = cues_state.state_path(data, "r1")
    state, index = cues_state.load_saved(data, "r1")
    assert state is not None and index is not None and index.mark is not None
    path.write_bytes(pickle.dumps(state))  # a state written before the index existed
    found, everything, sent = digests_now(settings)
    assert found.conversations == everything and found.computed == len(everything) and message_reads(sent)
    assert "no digest index" in found.note
    mark = (*index.mark[:3], "another archive")
    path.write_bytes(pickle.dumps(state) + pickle.dumps(cues_state.DigestIndex(mark, index.evidence)))
    found, everything, _ = digests_now(settings)
    assert found.conversations == everything and found.computed == len(everything)


def test_the_incremental_run_equals_one_that_digested_everything(
    base_dir: Path, tmp_path: Path, embedder: StaticMiniLM
) -> None:
    fast, slow = copy_of(base_dir, tmp_path, "fast"), copy_of(base_dir, tmp_path, "slow")
    state = cues_state.load_state(slow, "r1")
    cues_state.state_path(slow, "r1").write_bytes(pickle.dumps(state))  # no index: every conversation digested
    dump = new_dump(tmp_path / "new.jsonl")
    done = {}
    for data in (fast, slow):
        result = run_all(settings_for(data), dump, "r2", embedder)
        assert result.status == "succeeded" and result.counts["incremental"] == 1
        done[data.name] = result.counts
    assert done["fast"]["conversations_digested"] == 3 and done["slow"]["conversations_digested"] > 3
    assert {k: v for k, v in done["fast"].items() if k != "conversations_digested"} == {
        k: v for k, v in done["slow"].items() if k != "conversations_digested"
    }
    for table in TABLES:
        assert rows(fast / "staging.db", table, "r2") == rows(slow / "staging.db", table, "r2"), table
    assert cues_state.load_state(fast, "r2").conversations == cues_state.load_state(slow, "r2").conversations


def test_a_cues_run_interrupted_leaves_the_base_index_and_its_rerun_equals_a_clean_run(
    base_dir: Path, tmp_path: Path, embedder: StaticMiniLM
) -> None:
    """Ctrl-C while the cues stage embeds its keys (its rows committed, its state not saved): the re-run digests
    from the base run's index again, only the changed conversations, and ends with a clean run's memory."""
    clean, data = copy_of(base_dir, tmp_path, "clean"), copy_of(base_dir, tmp_path, "data")
    expected = run_all(settings_for(clean), named_dump(tmp_path / "named.jsonl"), "r2", embedder)
    assert expected.status == "succeeded" and expected.counts["conversations_digested"] == 3
    settings = settings_for(data)
    _stages_before_cues(settings, named_dump(tmp_path / "named.jsonl"), "r2", embedder)
    with opened(settings) as (archive, staging), pytest.raises(KeyboardInterrupt):
        cues.run(archive, staging, run_id="r2", settings=settings, embedder=_Interrupted(embedder))
    assert not cues_state.state_path(data, "r2").exists() and cues_state.load_saved(data, "r1")[1] is not None
    with opened(settings) as (archive, staging):
        again = cues.run(archive, staging, run_id="r2", settings=settings, embedder=embedder)
    assert again.status == "succeeded" and again.counts["conversations_digested"] == 3  # (a new speaker: a full build)
    for table in TABLES:
        assert rows(data / "staging.db", table, "r2") == rows(clean / "staging.db", table, "r2"), table
    assert cues_state.load_state(data, "r2").conversations == cues_state.load_state(clean, "r2").conversations


def scoped_now(settings: Settings) -> tuple[cues_state.Scoped, dict[str, str], list[str]]:
    """`scoped_digests` from the newest finished cues run (staging.db's statements traced), and every digest
    computed again from every message's evidence."""
    with opened(settings) as (archive, staging):
        base = cues_state.load_base(staging, settings)
        with traced(staging) as sent:
            found = cues_state.scoped_digests(archive, staging, base)
        builder = builder_of(staging, settings)
        assert found is not None
        return found, cues_state.conversation_digests(archive, builder.evidence, builder.concepts), sent


def conversations_citing(settings: Settings, concepts: list[str]) -> set[str]:
    with closing(sqlite3.connect(settings.staging_path)) as conn:
        found = conn.execute(
            f"SELECT DISTINCT message_id FROM concept_evidence WHERE concept_id IN ({','.join('?' * len(concepts))})",
            concepts,
        )
        messages = sorted(str(r[0]) for r in found)
    with closing(sqlite3.connect(settings.archive_path)) as conn:
        found = conn.execute(
            f"SELECT DISTINCT conversation_id FROM messages WHERE uuid IN ({','.join('?' * len(messages))})", messages
        )
        return {str(r[0]) for r in found}


def live_concepts(settings: Settings, n: int) -> list[str]:
    """`n` live concepts with evidence in distinct conversations' messages, by id."""
    with closing(sqlite3.connect(settings.staging_path)) as conn:
        found = conn.execute(
            "SELECT DISTINCT c.concept_id FROM concepts c JOIN concept_evidence e USING (concept_id)"
            " WHERE c.state = 'active' AND c.merged_into IS NULL ORDER BY c.concept_id"
        )
        return [str(r[0]) for r in found][:n]


def test_the_scoped_digests_read_the_evidence_of_what_changed_and_equal_digesting_all(
    base_dir: Path, tmp_path: Path
) -> None:
    """A full build saves the heads and staging.db's mark with its digests: the next run reads no message's
    evidence when nothing changed, and after a rename (logged as a concept change, not as evidence) or an evidence
    row's new confidence, only the conversations of the messages concerned; the digests equal digesting all."""
    data = copy_of(base_dir, tmp_path)
    settings = settings_for(data)
    state, index = cues_state.load_saved(data, "r1")
    assert index is not None and index.heads and index.staging_mark is not None
    found, everything, sent = scoped_now(settings)
    assert found.digests.conversations == everything == state.conversations and found.digests.computed == 0
    assert not [sql for sql in sent if "FROM concept_evidence" in sql and "cues_messages" in sql and "SELECT" in sql]

    renamed = live_concepts(settings, 1)
    with closing(sqlite3.connect(settings.staging_path)) as conn, conn:
        conn.execute("UPDATE concepts SET title = title || ' renamed' WHERE concept_id = ?", renamed)
    found, everything, _ = scoped_now(settings)
    assert found.digests.conversations == everything
    assert found.read == conversations_citing(settings, renamed) and found.digests.computed == len(found.read)

    with closing(sqlite3.connect(settings.staging_path)) as conn, conn:
        row = conn.execute(
            "SELECT concept_id, message_id FROM concept_evidence WHERE concept_id > ? ORDER BY 1, 2 LIMIT 1", renamed
        ).fetchone()
        conn.execute("UPDATE concept_evidence SET confidence = 0.123 WHERE concept_id = ? AND message_id = ?", row)
    found, everything, _ = scoped_now(settings)
    assert found.digests.conversations == everything
    assert conversations_citing(settings, [row[0]]) & found.read  # its message's conversation read


def test_an_incremental_run_with_scoped_evidence_equals_one_that_read_all_through_a_chain_of_merges(
    base_dir: Path, tmp_path: Path, embedder: StaticMiniLM
) -> None:
    """A merged into B (run r2), then B into C (run r3): the second merge logs B's evidence only, yet A's evidence,
    credited to B's survivor, moves to C: the heads saved with r2's digests find A's messages. Each run's memory
    equals a run that read every message's evidence and digested every conversation."""
    fast, slow = copy_of(base_dir, tmp_path, "fast"), copy_of(base_dir, tmp_path, "slow")
    a, b, c = live_concepts(settings_for(fast), 3)
    expected_a = conversations_citing(settings_for(fast), [a])
    for run, (merged, into) in (("r2", (a, b)), ("r3", (b, c))):
        counts = {}
        for data in (fast, slow):
            settings = settings_for(data)
            with closing(sqlite3.connect(settings.staging_path)) as conn, conn:
                conn.execute(
                    "UPDATE concepts SET state = 'merged', merged_into = ? WHERE concept_id = ?", (into, merged)
                )
            with closing(open_staging(settings.staging_path)) as staging:
                base = cues_state.load_base(staging, settings).run_id
            assert base is not None
            if data == slow:  # no index: every conversation digested from every message's evidence
                cues_state.state_path(slow, base).write_bytes(pickle.dumps(cues_state.load_state(slow, base)))
            elif run == "r3":
                found, everything, _ = scoped_now(settings)
                assert found.digests.conversations == everything and expected_a <= found.read
            with opened(settings) as (archive, staging):
                open_run(staging, stages=["cues"], exports=[], settings={}, code_version="t", run_id=run)
                result = cues.run(archive, staging, run_id=run, settings=settings, embedder=embedder)
            assert result.status == "succeeded" and result.counts["incremental"] == 1, result.notes
            counts[data.name] = result.counts
        assert counts["fast"]["conversations_digested"] < counts["slow"]["conversations_digested"]
        assert counts["fast"]["conversations_rebuilt"] == counts["slow"]["conversations_rebuilt"] > 0
        for table in TABLES:
            assert rows(fast / "staging.db", table, run) == rows(slow / "staging.db", table, run), (run, table)
        assert cues_state.load_state(fast, run).conversations == cues_state.load_state(slow, run).conversations


def _cues_run(data: Path, run: str, embedder: StaticMiniLM, *, read_all: bool) -> dict[str, int]:
    """A cues run; `read_all`: its base's digest index dropped first (every conversation digested, all evidence)."""
    settings = settings_for(data)
    if read_all:
        with closing(open_staging(settings.staging_path)) as staging:
            base = cues_state.load_base(staging, settings).run_id
        assert base is not None
        cues_state.state_path(data, base).write_bytes(pickle.dumps(cues_state.load_state(data, base)))
    with opened(settings) as (archive, staging):
        open_run(staging, stages=["cues"], exports=[], settings={}, code_version="t", run_id=run)
        result = cues.run(archive, staging, run_id=run, settings=settings, embedder=embedder)
    assert result.status == "succeeded", result.notes
    return result.counts


def test_after_a_scoped_run_a_run_that_cannot_scope_digests_every_conversation(
    base_dir: Path, tmp_path: Path, embedder: StaticMiniLM
) -> None:
    """A scoped run (r2) saves no message's evidence digest; the next run cannot scope (staging.db's change log was
    emptied) while one conversation lost all its evidence: comparing with r2's empty map would keep that
    conversation's old digest (and its old memory). It digests every conversation instead, r3 and r4 (the evidence
    back) equal runs that read everything (found by review: the digest stayed, r4 then skipped the rebuild)."""
    fast, slow = copy_of(base_dir, tmp_path, "fast"), copy_of(base_dir, tmp_path, "slow")
    (renamed,) = live_concepts(settings_for(fast), 1)
    with closing(sqlite3.connect(settings_for(fast).staging_path)) as staging:
        cited = [str(r[0]) for r in staging.execute("SELECT DISTINCT message_id FROM concept_evidence")]
    with closing(sqlite3.connect(settings_for(fast).archive_path)) as archive:
        by_conversation: dict[str, list[str]] = {}
        for message in cited:
            (conversation,) = archive.execute(
                "SELECT conversation_id FROM messages WHERE uuid = ?", (message,)
            ).fetchone()
            by_conversation.setdefault(str(conversation), []).append(message)
    messages = sorted(by_conversation[max(by_conversation)])
    where = f"FROM concept_evidence WHERE message_id IN ({', '.join('?' * len(messages))})"
    saved: dict[str, list[tuple[object, ...]]] = {}
    for data in (fast, slow):
        with closing(sqlite3.connect(settings_for(data).staging_path)) as conn, conn:
            conn.execute("UPDATE concepts SET title = title || ' x' WHERE concept_id = ?", (renamed,))
        assert _cues_run(data, "r2", embedder, read_all=data == slow)["incremental"] == 1
        if data == fast:
            index = cues_state.load_saved(fast, "r2")[1]
            assert index is not None and index.evidence == {} and not index.complete  # r2 was scoped
        with closing(sqlite3.connect(settings_for(data).staging_path)) as conn, conn:
            saved[data.name] = conn.execute("SELECT * " + where, messages).fetchall()
            conn.execute("DELETE FROM staging_changes")  # a log the next run cannot compare with r2's mark
            conn.execute("DELETE " + where, messages)
        _cues_run(data, "r3", embedder, read_all=data == slow)
    for table in TABLES:
        assert rows(fast / "staging.db", table, "r3") == rows(slow / "staging.db", table, "r3"), table
    assert cues_state.load_state(fast, "r3").conversations == cues_state.load_state(slow, "r3").conversations
    for data in (fast, slow):
        with closing(sqlite3.connect(settings_for(data).staging_path)) as conn, conn:
            marks = ", ".join("?" * len(saved[data.name][0]))
            conn.executemany(f"INSERT INTO concept_evidence VALUES ({marks})", saved[data.name])
        _cues_run(data, "r4", embedder, read_all=data == slow)
    for table in TABLES:
        assert rows(fast / "staging.db", table, "r4") == rows(slow / "staging.db", table, "r4"), table


def test_the_digest_index_reads_back_as_saved_when_it_repeats_an_object(tmp_path: Path) -> None:
    """The state and the index are two pickles in one file: the index is read by an unpickler of its own (one
    kept from the state's would resolve the index's memo references, a concept id used twice, to the state's
    objects)."""
    concept = "".join(["con", "cept-1"])  # one object, twice in the index: a memo reference
    heads: dict[str, tuple[str, str, str] | None] = {concept: (concept, "Title", "entity"), "gone": None}
    state = cues_state.load_state(Path("/nonexistent"), "r1")  # None: build one by hand
    assert state is None
    from memory.graph import FrozenCounts

    state = cues_state.CuesState("r1", "r1", "s", None, FrozenCounts(1, ["ann"], 0.0, [], []), {"c1": "d", "c2": "e"})
    index = cues_state.DigestIndex((1, 2, 3, "origin"), {"m1": b"x"}, (7, "origin r1"), heads)
    cues_state.save_state(tmp_path, state, {"r1"}, index)
    loaded_state, loaded = cues_state.load_saved(tmp_path, "r1")
    assert loaded_state == state and loaded is not None
    assert (loaded.mark, loaded.evidence, loaded.staging_mark, loaded.heads) == (
        index.mark,
        index.evidence,
        index.staging_mark,
        heads,
    )


def test_topic_changes_compare_the_segments_that_can_differ_and_equal_comparing_all_links(
    base_dir: Path, tmp_path: Path, embedder: StaticMiniLM
) -> None:
    """Two cluster runs (r1's fit, r2's placements of a new dump), then a topic relabelled and a link's weight
    changed in r2: `topic_changes` reads the links of the segments written or retired after the older run or linked
    to a relabelled topic, and answers as comparing both runs' links whole, in either order."""
    data = copy_of(base_dir, tmp_path)
    settings = settings_for(data)
    result = run_all(settings, new_dump(tmp_path / "new.jsonl"), "r2", embedder)
    assert result.status == "succeeded"
    with closing(open_staging(settings.staging_path)) as staging:
        runs = [str(r[0]) for r in staging.execute("SELECT run_id FROM cluster_runs ORDER BY run_id")]
        assert len(runs) == 2
        older, newer = runs
        with staging:
            staging.execute("UPDATE topics SET label = label || ' again' WHERE run_id = ? AND topic = 0", (newer,))
        for old, new in ((older, newer), (newer, older)):
            with traced(staging) as sent:
                found = cues_state.topic_changes(staging, old, new)
            assert found == cues_state._link_changes(staging, old, new, "") and found
            assert any("cues_topic_items" in sql and "EXCEPT" in sql for sql in sent)  # the scoped comparison
        relabelled = conversations_of_topic(staging, newer, 0)
        assert relabelled and relabelled <= cues_state.topic_changes(staging, older, newer)


def conversations_of_topic(staging: sqlite3.Connection, run: str, topic: int) -> set[str]:
    found = staging.execute(
        "SELECT DISTINCT s.conversation_id FROM topic_links l JOIN segments s ON s.segment_id = l.item_id"
        " WHERE l.run_id = ? AND l.kind = 'segment' AND l.topic = ?",
        (run, topic),
    )
    return {str(r[0]) for r in found}


def _edited_dump(base_dir: Path, path: Path, conversation: str, tag: str) -> Path:
    """The base export's lines of one conversation, its first message's text changed: an update, no new row."""
    lines = [json.loads(line) for line in (base_dir.parent / "themes.jsonl").read_text(encoding="utf-8").splitlines()]
    mine = [line for line in lines if line["conversation_id"] == conversation]
    mine[0]["text"] += f" ({tag})"
    path.write_text("\n".join(json.dumps(line) for line in mine) + "\n", encoding="utf-8")
    return path


def _ingest(settings: Settings, dump: Path, run_id: str) -> None:
    with opened(settings) as (archive, staging):
        open_run(staging, stages=["ingest"], exports=[str(dump)], settings={}, code_version="test", run_id=run_id)
        ingest_stage.run(archive, staging, run_id=run_id, settings=settings, exports=[dump])


def test_the_digest_index_keeps_the_archive_epoch_and_a_copy_from_before_it_is_digested_whole(
    base_dir: Path, tmp_path: Path
) -> None:
    """Both digest indexes (`digests_since`, `scoped_digests`) keep the mark's epoch (staging/archive_changes.py): an
    archive.db restored from a copy older than the mark, with only updates between them and enough updates after
    the restore to pass the mark's version, is refused, and every conversation is digested."""
    data = copy_of(base_dir, tmp_path)
    settings = settings_for(data)
    backup = tmp_path / "archive-backup.db"
    shutil.copyfile(settings.archive_path, backup)
    conversations = sorted({json.loads(line)["conversation_id"] for line in (base_dir.parent / "themes.jsonl").open()})
    _ingest(settings, _edited_dump(base_dir, tmp_path / "edit.jsonl", conversations[0], "edited"), "r2")
    with opened(settings) as (archive, staging):
        now = archive_changes.mark(archive)
        assert now.epoch
        base = cues_state.load_base(staging, settings)
        scoped = cues_state.scoped_digests(archive, staging, base)
        builder = builder_of(staging, settings)
        full = cues_state.digests_since(archive, builder.evidence, builder.concepts, base)
    assert scoped is not None and full.index.mark is not None and scoped.digests.index.mark is not None
    assert Mark(*full.index.mark) == now == Mark(*scoped.digests.index.mark)
    shutil.copyfile(backup, settings.archive_path)  # the copy from before the edit
    for n, other in enumerate(conversations[1:4]):  # updates only, past the mark's version
        _ingest(settings, _edited_dump(base_dir, tmp_path / f"again{n}.jsonl", other, f"again {n}"), f"r3-{n}")
    with opened(settings) as (archive, _):
        restored = archive_changes.mark(archive)
    assert (restored.origin, restored.messages, restored.newest) == (now.origin, now.messages, now.newest)
    assert restored.version >= now.version  # every check but the epoch passes
    state, _ = cues_state.load_saved(data, "r1")
    path = cues_state.state_path(data, "r1")
    path.write_bytes(pickle.dumps(state) + pickle.dumps(full.index))
    found, everything, _ = digests_now(settings)
    assert found.computed == len(everything) and "not the one" in found.note
    path.write_bytes(pickle.dumps(state) + pickle.dumps(scoped.digests.index))
    with opened(settings) as (archive, staging):
        assert cues_state.scoped_digests(archive, staging, cues_state.load_base(staging, settings)) is None
