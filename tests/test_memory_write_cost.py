"""What made a full cues build cheaper leaves its output as it was: a full build's edges written at the end, sorted,
with the dst index built after (staging.memory.RunWriter); the phrase index's one lookup per title length
(memory.graph.said_phrases); the keys' vectors found through the message items (staging.embeddings.item_hashes).

Real staging.db files under tmp_path; the phrase matcher against the word-by-word reference it replaced.
"""

from __future__ import annotations

import random
import sqlite3
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import pytest
from stage_support import cues_stage

from clients.embedders import StaticMiniLM
from contracts.settings import Settings
from memory.graph import MessageInput, phrase_index, said_phrases
from memory.names import Names
from memory.text import terms
from staging import embeddings as vectors
from staging import memory as store
from staging.db import describe_storage_failure
from staging.ledger import open_staging
from staging.memory import ContentRow, CueRow, EdgeTuple, TagRow

RUN = "r20260101T000000-aaaaaa"


def _content(uuid: str, conversation: str) -> ContentRow:
    return ContentRow(uuid, "message", conversation, 0, "user", None, None, None, "jsonl", f"user: {uuid}", 3)


def _batches() -> list[tuple[list[ContentRow], list[EdgeTuple]]]:
    """Two batches of whole conversations whose edges interleave in key order (each spans every cue and tag)."""
    out = []
    for b, conversation in enumerate(("c1", "c2")):
        uuids = [f"m{b}{i}" for i in range(3)]
        edges: list[EdgeTuple] = [(f"concept:{k}", u, "cue-content", 0.5 + k / 10) for u in uuids for k in range(3)]
        edges += [(f"conv:{conversation}", u, "tag-content", 1.0) for u in uuids]
        out.append(([_content(u, conversation) for u in uuids], sorted(edges)))
    return out


def _write_full(staging: sqlite3.Connection, run_id: str, fail: bool = False) -> list[EdgeTuple]:
    written: list[EdgeTuple] = []
    with store.RunWriter(staging, run_id) as writer:
        for content, edges in _batches():
            writer.add(content, edges, [])
            written += edges
        cue_tag = [(f"concept:{k}", f"conv:c{c}", "cue-tag", 0.5) for k in range(3) for c in (1, 2)]
        writer.add_edges(cue_tag)
        written += cue_tag
        if fail:
            raise RuntimeError("killed before finish")
        writer.add_cues([CueRow(f"concept:{k}", f"t{k}", "concept", "entity", 6, 0.3, False) for k in range(3)])
        writer.add_tags([TagRow(f"conv:c{c}", "conversation", f"c{c}", 3) for c in (1, 2)])
        writer.finish({})
    return written


def _indexes(staging: sqlite3.Connection) -> set[str]:
    return {str(r[0]) for r in staging.execute("SELECT name FROM sqlite_master WHERE tbl_name = 'memory_edges'")}


def test_a_full_builds_edges_are_all_written_with_their_dst_index(tmp_path: Path) -> None:
    """Edges added batch by batch are in memory_edges once the run is written (counted as added), and the dst
    index is there and answers a lookup by dst."""
    staging = open_staging(tmp_path / "staging.db")
    indexes = _indexes(staging)
    assert "memory_edges_by_dst" in indexes
    written = _write_full(staging, RUN)
    graph = store.read_run(staging, RUN)
    assert [(e.src, e.dst, e.kind, e.weight) for e in graph.edges] == sorted(written)
    assert store.run_summary(staging, RUN)["edges"] == len(written)  # type: ignore[index]
    assert _indexes(staging) == indexes
    plan = " ".join(
        str(r[3]) for r in staging.execute("EXPLAIN QUERY PLAN SELECT src FROM memory_edges WHERE dst = 'm10'")
    )
    assert "memory_edges_by_dst" in plan
    found = staging.execute("SELECT src FROM memory_edges WHERE dst = 'm10' ORDER BY src").fetchall()
    assert [r[0] for r in found] == ["concept:0", "concept:1", "concept:2", "conv:c2"]
    assert staging.execute("SELECT name FROM temp.sqlite_master WHERE name LIKE 'memory_%'").fetchall() == []


def test_a_full_build_that_fails_before_finish_leaves_the_memory_and_its_index_as_they_were(tmp_path: Path) -> None:
    """A failure after the batches rolls back everything; the earlier run's edges and the index stay."""
    staging = open_staging(tmp_path / "staging.db")
    _write_full(staging, RUN)
    before = staging.execute("SELECT * FROM memory_edges ORDER BY src, dst, run_id").fetchall()
    with pytest.raises(RuntimeError):
        _write_full(staging, "r20260102T000000-bbbbbb", fail=True)
    assert staging.execute("SELECT * FROM memory_edges ORDER BY src, dst, run_id").fetchall() == before
    assert "memory_edges_by_dst" in _indexes(staging)
    assert store.latest_run(staging) == RUN


def test_a_duplicate_edge_in_a_full_build_still_fails_the_write(tmp_path: Path) -> None:
    """Two batches naming the same edge: the run is refused (the key is checked when the edges go in)."""
    staging = open_staging(tmp_path / "staging.db")
    with pytest.raises(sqlite3.IntegrityError), store.RunWriter(staging, RUN) as writer:
        writer.add([_content("m1", "c1")], [("concept:0", "m1", "cue-content", 0.5)], [])
        writer.add_edges([("concept:0", "m1", "cue-content", 0.5)])
        writer.finish({})
    assert store.latest_run(staging) is None
    assert "memory_edges_by_dst" in _indexes(staging)


def test_a_full_build_that_fills_the_temporary_store_fails_with_the_disk_full_error(tmp_path: Path) -> None:
    """The pending edges fill the temporary store (capped here, as a small SQLITE_TMPDIR would be): SQLite rolls the
    transaction back itself, and the run fails with that error, not with a failed ROLLBACK; nothing is written."""
    staging = open_staging(tmp_path / "staging.db")
    _write_full(staging, RUN)
    before = staging.execute("SELECT * FROM memory_edges ORDER BY src, dst, run_id").fetchall()
    staging.execute("PRAGMA temp.max_page_count = 16")
    with (
        pytest.raises(sqlite3.OperationalError, match="full") as failed,
        store.RunWriter(staging, "r20260102T000000-bbbbbb") as writer,
    ):
        for b in range(3):
            content = [_content(f"m{b}-{i:04d}", f"c{b}") for i in range(1000)]
            writer.add(
                content, [(f"concept:{k}", c.content_id, "cue-content", 0.5) for k in range(4) for c in content], []
            )
        writer.finish({})
    assert "disk is full" in describe_storage_failure(failed.value, staging)
    assert not staging.in_transaction
    assert staging.execute("SELECT * FROM memory_edges ORDER BY src, dst, run_id").fetchall() == before
    assert "memory_edges_by_dst" in _indexes(staging)
    assert store.latest_run(staging) == RUN


def test_a_failure_while_the_cue_counts_are_read_is_the_error_the_run_fails_with(tmp_path: Path) -> None:
    """An error raised while `cue_conversations` is iterated (its cursor still open, so its temporary table cannot
    be dropped: "database table is locked") is the one reported; the run is rolled back."""
    staging = open_staging(tmp_path / "staging.db")

    def cue_tag(rows: Iterator[tuple[str, str, int]]) -> Iterator[EdgeTuple]:
        for cue, conversation, _ in rows:
            raise ValueError(f"no tag for {cue} in {conversation}")
        yield from ()

    with pytest.raises(ValueError, match="no tag for concept:0"), store.RunWriter(staging, RUN) as writer:
        writer.add(
            [_content("m1", "c1")],
            [("concept:0", "m1", "cue-content", 0.5)],
            [],
            [("concept:0", "c1", 1), ("concept:1", "c1", 1)],
        )
        writer.add_edges(cue_tag(writer.cue_conversations()))
    assert not staging.in_transaction
    assert store.latest_run(staging) is None


def _reference_said(words: Sequence[str], concepts: Mapping[str, tuple[str, str]]) -> list[str]:
    """The word-by-word matcher said_phrases replaced: at each position every title sharing its first term,
    longest first (then by id), the first that matches taken and its words skipped."""
    index: dict[str, list[tuple[tuple[str, ...], str]]] = {}
    for phrase, cue_id in phrase_index(concepts).phrases.items():
        index.setdefault(phrase[0], []).append((phrase, cue_id))
    for entries in index.values():
        entries.sort(key=lambda e: (-len(e[0]), e[1]))
    counts: Counter[str] = Counter()
    length: dict[str, int] = {}
    i = 0
    while i < len(words):
        step = 1
        for phrase, cue_id in index.get(words[i], ()):
            if tuple(words[i : i + len(phrase)]) == phrase:
                counts[cue_id] += 1
                length[cue_id] = len(phrase)
                step = len(phrase)
                break
        i += step
    return sorted(counts, key=lambda c: (-counts[c], -length[c], c))


def test_said_phrases_match_the_word_by_word_reference() -> None:
    """Overlapping titles, titles sharing first terms, titles cut off at the end of the text: the same cues in the
    same order as the reference, over many random texts of a small vocabulary."""
    vocabulary = ["customer", "churn", "model", "data", "pipeline", "graph", "sql", "server"]
    rng = random.Random(7)
    concepts = {"concept:name": ("PostgreSQL", "entity"), "concept:data": ("Data", "entity")}
    for k in range(40):
        title = " ".join(rng.choice(vocabulary) for _ in range(rng.randint(2, 4)))
        concepts[f"concept:{k:02d}"] = (title, "entity")
    index = phrase_index(concepts)
    assert "postgresql" in index.lengths and ("data",) not in index.phrases  # a name yes, a common word no
    said = 0
    for _ in range(500):
        words = [rng.choice([*vocabulary, "postgresql"]) for _ in range(rng.randint(0, 30))]
        found = said_phrases(words, index)
        assert found == _reference_said(words, concepts)
        said += len(found)
    assert said > 500
    words = terms("the customer churn model runs on the customer churn")
    assert said_phrases(words, phrase_index({"concept:a": ("customer churn model", "entity")})) == ["concept:a"]


def test_item_hashes_give_the_hash_of_each_items_vector_under_one_model(tmp_path: Path) -> None:
    """Only the asked items of the asked kind and model; an item with no vector under that model is absent."""
    staging = open_staging(tmp_path / "staging.db")
    rows = [
        ("message", "m1", "static", "h1"),
        ("message", "m2", "static", "h2"),
        ("message", "m1", "full", "h9"),
        ("segment", "m3", "static", "h3"),
        ("message", "m4", "static", "h4"),
    ]
    staging.executemany(
        "INSERT INTO embedding_items (kind, item_id, model, content_hash, run_id) VALUES (?, ?, ?, ?, 'r')", rows
    )
    assert vectors.item_hashes(staging, "message", "static", ["m1", "m2", "m3", "m5"]) == {"m1": "h1", "m2": "h2"}
    assert vectors.item_hashes(staging, "message", "full", ["m1", "m2"]) == {"m1": "h9"}


def test_concepts_that_share_a_title_link_a_message_to_the_first_by_id() -> None:
    """Three concepts whose titles have the same terms (case aside), given in any order: a message saying the title
    is linked to the first by id, not to the last one read."""
    concepts = {
        "concept:c": ("customer churn model", "entity"),
        "concept:a": ("Customer Churn Model", "entity"),
        "concept:b": ("customer churn MODEL", "topic"),
    }
    words = terms("We retrained the customer churn model last week.")
    assert said_phrases(words, phrase_index(concepts)) == ["concept:a"]
    assert said_phrases(words, phrase_index(dict(reversed(concepts.items())))) == ["concept:a"]


def test_keys_not_found_through_the_message_items_are_looked_up_among_the_vectors(tmp_path: Path) -> None:
    """A key that is not the text its message's item points at (a speaker name masked out, or no item under the
    key model) is found cached when staging.embeddings holds its vector; only a key with no vector anywhere is
    left to embed (its message read again)."""
    staging = open_staging(tmp_path / "staging.db")
    embedder = StaticMiniLM()
    names = Names.of(["Alice"])
    texts = {
        "m1": "The oven runs hot on Sundays.",  # names nobody: its key is the text its item points at
        "m2": "Alice bakes sourdough every morning.",  # key masked, its vector cached by an earlier cues run
        "m3": "Alice paints the garden fence.",  # key masked, no vector for it
        "m4": "The bread needs a longer proof.",  # no item under the key model, its vector cached
    }
    messages = [
        MessageInput(u, "c1", None, i, "user", "Alice", None, t, "jsonl") for i, (u, t) in enumerate(texts.items())
    ]
    embedded = [texts["m1"], texts["m2"], texts["m3"], names.mask(texts["m2"]), texts["m4"]]
    assert names.mask(texts["m2"]) != texts["m2"] and names.mask(texts["m1"]) == texts["m1"]
    vectors.put_vectors(
        staging, embedder.key, "r", list(zip(map(vectors.text_hash, embedded), embedder.embed(embedded), strict=True))
    )
    vectors.put_items(
        staging, "message", embedder.key, "r", [(u, vectors.text_hash(texts[u])) for u in ("m1", "m2", "m3")]
    )
    settings = Settings(data_dir=tmp_path, memory={"key_embedder": "embed"})
    keys = cues_stage._Keys(staging, settings, names, embedder)
    keys.look_up(messages)
    assert keys.missing == ["m3"] and keys.found == 3
