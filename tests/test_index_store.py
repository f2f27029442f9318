"""The stored recall index (memory/index_store.py) on a real small memory built by the stages: it answers exactly
as a fresh in-memory build, is read back instead of rebuilt, and a damaged, half-written or stale one is rebuilt."""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import fields
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from concept_support import Dbs, conversation, open_dbs, write_archive
from stage_support import cues_stage as cues
from stage_support import garden_stage as garden
from stage_support import stage_concepts, stage_extract, stage_segment

from contracts.memory import RecallRequest, RecallScope
from memory import index_store, mapped, vector_segments
from memory.candidates import prepare
from memory.index import MemoryIndex, attach_facts, key_embedder, load_index
from memory.index_store import DIRECTORY, MANIFEST, open_index
from memory.mapped import ArchiveTexts
from memory.service import Memory
from staging.db import connect_readonly

CHATS = {
    "paris": [("user", "I live in Paris and I love the bakeries here."), ("assistant", "Try the covered passages.")],
    "berlin": [("user", "I moved to Berlin last week. Which cafes are good?"), ("assistant", "Kreuzberg cafes.")],
    "bread": [("user", "I tried a banana bread recipe with walnuts."), ("assistant", "Add a pinch of salt next time.")],
    "trip": [("user", "We are planning a trip to Lisbon in May."), ("assistant", "Lisbon in May: take tram 28 early.")],
}
QUERIES = ["what recipe did I try for banana bread", "where do I live?", "Lisbon tram", "cafes in Berlin"]


@pytest.fixture(autouse=True)
def every_array_in_a_file(monkeypatch: pytest.MonkeyPatch) -> None:
    """A small memory's arrays are all below STORED_FROM: store each one as a file, as a large memory does."""
    monkeypatch.setattr(index_store, "STORED_FROM", 1)


@pytest.fixture
def built(tmp_path: Path) -> Dbs:
    """Four conversations through the real stages; the pre-pass on from one content node (its tables are stored)."""
    return built_memory(tmp_path)


def built_memory(tmp_path: Path) -> Dbs:
    dbs = open_dbs(tmp_path, memory={"key_embedder": "embed", "prepass_from": 1})
    chats = [
        conversation(c, turns, start=datetime(2023, 1, 1 + i, 10, tzinfo=UTC))
        for i, (c, turns) in enumerate(CHATS.items())
    ]
    write_archive(dbs.archive, chats)
    run_id = dbs.run_id()
    for stage in (stage_segment, stage_extract, stage_concepts, garden, cues):
        stage.run(dbs.archive, dbs.staging, run_id=run_id, settings=dbs.settings)
    return dbs


def stored(dbs: Dbs, run_id: str | None = None) -> MemoryIndex:
    archive, staging = connect_readonly(dbs.settings.archive_path), connect_readonly(dbs.settings.staging_path)
    try:
        return open_index(archive, staging, dbs.settings, key_embedder(dbs.settings), run_id=run_id)
    finally:
        archive.close()
        staging.close()


def fresh(dbs: Dbs) -> MemoryIndex:
    index = load_index(dbs.archive, dbs.staging, dbs.settings, key_embedder(dbs.settings))
    prepare(index)
    return index


def same(a: Any, b: Any) -> bool:
    """Equal values, arrays compared element by element (dtype included), stored strings and lookups as the lists
    and dicts they stand for."""
    if isinstance(a, mapped.Rows):  # the key vectors stored list by list, read as the array they stand for
        a = np.asarray(a)
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and a.dtype == b.dtype and np.array_equal(a, b, equal_nan=True)
    if hasattr(a, "__dataclass_fields__"):
        return type(a) is type(b) and all(same(getattr(a, f.name), getattr(b, f.name)) for f in fields(a))
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return dict(a) == dict(b)
    if isinstance(a, Sequence) and isinstance(b, Sequence) and not isinstance(a, str):
        return list(a) == list(b)
    return bool(a == b)


def answers(dbs: Dbs, index: MemoryIndex) -> list[dict[str, Any]]:
    memory = Memory(dbs.settings, index, key_embedder(dbs.settings))
    requests = [RecallRequest(query=q, budget_tokens=400) for q in QUERIES]
    requests.append(RecallRequest(query="bread", scope=RecallScope(conversation_ids=["bread"])))
    return [memory.recall(r).model_dump() for r in requests]


def index_dir(dbs: Dbs) -> Path:
    (found,) = [p for p in (dbs.settings.data_dir / DIRECTORY).iterdir() if not p.name.startswith(".")]
    return found


def test_stored_index_equals_a_fresh_build_and_recalls_the_same(built: Dbs) -> None:
    """Every field of the stored index (after a build and after a re-open) equals the in-memory build's, and
    recalls give the same ranked pieces, scores and texts."""
    expected = fresh(built)
    for index in (stored(built), stored(built)):  # the first open builds and stores, the second only reads
        for f in fields(MemoryIndex):
            if f.name != "texts":
                assert same(getattr(index, f.name), getattr(expected, f.name)), f.name
        assert isinstance(index.texts, ArchiveTexts)
        assert {i: index.texts[i] for i in index.ids} == dict(expected.texts)
        assert answers(built, index) == answers(built, expected)
    assert answers(built, expected)[0]["pieces"], "the banana bread question recalls something"


def test_second_open_reads_the_stored_arrays_without_rebuilding(built: Dbs) -> None:
    """The first open writes the index; the second maps its arrays read-only from those files, unchanged."""
    stored(built)
    directory = index_dir(built)
    written = {p.name: p.stat().st_mtime_ns for p in directory.iterdir()}
    assert MANIFEST in written and all(n.endswith(".npy") for n in written if n != MANIFEST)
    assert not any("pickle" in n for n in written)  # nothing is unpickled: every array is a file of its own
    index = stored(built)
    assert {p.name: p.stat().st_mtime_ns for p in directory.iterdir()} == written
    assert index.prepass is not None and not index.prepass.members.order.flags.writeable


def test_store_only_writes_the_index_a_later_open_reads_and_maps_nothing_back(
    built: Dbs, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a run does (Memory.store): the index is built and stored, nothing is read back while the build is
    held; a second store finds it stored and builds nothing; the next open reads it and equals a fresh build."""
    reads: list[Path] = []
    read = index_store._read
    monkeypatch.setattr(
        index_store, "_read", lambda directory, *a, **k: reads.append(directory) or read(directory, *a, **k)
    )
    Memory.store(built.settings)
    assert reads == []  # the first store: nothing was stored yet, and what it wrote is not read back
    directory = index_dir(built)
    written = {p.name: p.stat().st_mtime_ns for p in directory.iterdir()}
    Memory.store(built.settings)
    assert reads == [directory]  # found stored: read (checked), not rebuilt
    assert {p.name: p.stat().st_mtime_ns for p in directory.iterdir()} == written
    expected = fresh(built)
    index = stored(built)
    assert all(
        same(getattr(index, f.name), getattr(expected, f.name)) for f in fields(MemoryIndex) if f.name != "texts"
    )


def test_a_memory_with_speaker_names_is_stored_and_reopened_without_a_rebuild(tmp_path: Path) -> None:
    """The index of a memory whose speakers have names (their masking pattern is part of it) is read back from
    its files on the second open, not rebuilt as damaged."""
    dbs = open_dbs(tmp_path, memory={"key_embedder": "embed"})
    chats = []
    for i, (c, turns) in enumerate(CHATS.items()):
        chat = conversation(c, turns, start=datetime(2023, 1, 1 + i, 10, tzinfo=UTC))
        named = [m.model_copy(update={"author": "Caroline" if m.role == "user" else "Melanie"}) for m in chat.messages]
        chats.append(chat.model_copy(update={"messages": named}))
    write_archive(dbs.archive, chats)
    run_id = dbs.run_id()
    for stage in (stage_segment, stage_extract, stage_concepts, garden, cues):
        stage.run(dbs.archive, dbs.staging, run_id=run_id, settings=dbs.settings)
    first = stored(dbs)
    assert first.names.names  # the speakers' names are in the index
    written = {p.name: p.stat().st_mtime_ns for p in index_dir(dbs).iterdir()}
    again = stored(dbs)
    assert {p.name: p.stat().st_mtime_ns for p in index_dir(dbs).iterdir()} == written
    assert again.names.mask("Caroline said hi") == first.names.mask("Caroline said hi") != "Caroline said hi"


@pytest.mark.parametrize("damage", ["truncate-array", "cut-manifest", "drop-manifest-key", "remove-array"])
def test_damaged_index_is_rebuilt_not_used(built: Dbs, damage: str) -> None:
    """A truncated or missing array, a cut manifest or a foreign one (format 1: the pickle of older versions): the
    index is rebuilt and answers as a fresh build."""
    stored(built)
    directory = index_dir(built)
    array = sorted(directory.glob("*.npy"))[0]
    if damage == "truncate-array":
        array.write_bytes(array.read_bytes()[:-8])
    elif damage == "remove-array":
        array.unlink()
    elif damage == "cut-manifest":
        text = (directory / MANIFEST).read_text()
        (directory / MANIFEST).write_text(text[: len(text) // 2])
    else:
        (directory / MANIFEST).write_text('{"format": 1, "key": "another", "files": {}}')
    assert answers(built, stored(built)) == answers(built, fresh(built))
    assert array.exists() and (directory / MANIFEST).exists()


def overwrite_in_place(path: Path, *, keep_time: bool) -> None:
    """Other values in the array's file, of the same size, written into the same file. `keep_time`: its
    modification time as before (a disk error), else a second later (a write; file times are coarse, so set)."""
    before = path.stat()
    array = np.load(path, allow_pickle=False)
    with open(path, "r+b") as file:
        file.seek(before.st_size - array.nbytes)
        file.write((array + 1).astype(array.dtype).tobytes())
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns + (0 if keep_time else 10**9)))
    assert path.stat().st_size == before.st_size and not np.array_equal(np.load(path), array)


def assert_fresh(built: Dbs, index: MemoryIndex) -> None:
    """`index` equals a build from scratch, array for array, and answers as it does."""
    expected = fresh(built)
    for f in fields(MemoryIndex):
        if f.name != "texts":
            assert same(getattr(index, f.name), getattr(expected, f.name)), f.name
    assert answers(built, index) == answers(built, expected)


def test_an_array_overwritten_in_place_is_found_and_the_index_rebuilt(
    built: Dbs, caplog: pytest.LogCaptureFixture
) -> None:
    """A stored file written to since (same size, other bytes): its sha256 is not the manifest's, and the index is
    rebuilt and answers as a fresh build, never from the other bytes."""
    stored(built)
    overwrite_in_place(index_dir(built) / "bm25.idf.npy", keep_time=False)
    with caplog.at_level(logging.WARNING, logger="memory.index_store"):
        index = stored(built)
    assert "bm25.idf.npy does not hold the bytes written" in caplog.text
    assert_fresh(built, index)


@pytest.mark.parametrize("damage", ["overwrite", "truncate", "remove"])
def test_a_damaged_vector_segment_is_found_and_the_index_rebuilt(
    built: Dbs, damage: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The key vectors live in a segment beside the index (memory/vector_segments.py): other bytes written into it,
    a cut or a missing segment make the index unreadable, and it is rebuilt and answers as a fresh build."""
    first = stored(built)
    assert isinstance(first.dense, mapped.Rows)
    (entry,) = first.dense.entries
    assert entry is not None
    segment = built.settings.data_dir / vector_segments.DIRECTORY / entry["name"]
    del first
    if damage == "overwrite":
        overwrite_in_place(segment, keep_time=False)
    elif damage == "truncate":
        segment.write_bytes(segment.read_bytes()[:-8])
    else:
        segment.unlink()
    with caplog.at_level(logging.WARNING, logger="memory.index_store"):
        index = stored(built)
    assert "cannot be used" in caplog.text
    assert_fresh(built, index)
    assert not segment.exists(), "no index lists the damaged segment: removed with the store"
    assert isinstance(index.dense, mapped.Rows) and index.dense.entries[0] is not None
    assert index.dense.entries[0]["name"] != entry["name"]


def test_a_store_that_fails_leaves_no_vector_segment_behind(built: Dbs, monkeypatch: pytest.MonkeyPatch) -> None:
    """The disk fills after the key vectors' segment was written: recall goes on from the index in memory, and the
    segment that no index will list is removed at once (it can be GBs at 1M messages), not at the next store."""

    def full(*args: Any, **kwargs: Any) -> Any:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(index_store._Writer, "bm25", full)
    index = stored(built)
    assert answers(built, index) == answers(built, fresh(built))
    folder = built.settings.data_dir / vector_segments.DIRECTORY
    assert folder.is_dir() and list(folder.iterdir()) == []


def test_segments_no_stored_index_lists_are_removed_by_the_next_store(built: Dbs) -> None:
    """Segments of a killed build or of an index since replaced go with the next store; one a running process
    wrote (it is storing the index that will list it) stays."""
    first = stored(built)
    assert isinstance(first.dense, mapped.Rows)
    (old_entry,) = first.dense.entries
    assert old_entry is not None
    del first
    folder = built.settings.data_dir / vector_segments.DIRECTORY
    killed, half, running = folder / "r1-999999-aa.npy", folder / ".tmp-r1-999999-bb.npy", folder / "r1-1-cc.npy"
    for path in (killed, half, running):  # pid 999999: no such process; pid 1 runs as long as the machine
        path.write_bytes(b"x")
    cues.run(built.archive, built.staging, run_id=built.run_id(), settings=built.settings)
    second = max(str(r[0]) for r in built.staging.execute("SELECT run_id FROM memory_runs"))
    index = stored(built, run_id=second)
    assert isinstance(index.dense, mapped.Rows)
    listed = {e["name"] for e in index.dense.entries if e is not None}
    assert sorted(p.name for p in folder.iterdir()) == sorted(listed | {running.name})
    assert old_entry["name"] in listed, "the same content again: the earlier segment is shared, not copied"


def test_half_written_build_is_never_used(built: Dbs) -> None:
    """A killed build (a temporary directory, or a target without its manifest) is ignored, removed and rebuilt."""
    stored(built)
    directory = index_dir(built)
    (directory / MANIFEST).unlink()  # as if killed before the last write
    leftover = directory.parent / f".tmp-{directory.name}-99999"
    leftover.mkdir()
    (leftover / "ids.bytes.npy").write_bytes(b"half")
    assert answers(built, stored(built)) == answers(built, fresh(built))
    assert (directory / MANIFEST).exists() and not leftover.exists()


def test_a_killed_builds_leftover_is_cleared_before_the_next_store_writes(built: Dbs) -> None:
    """A build killed while writing leaves its `.tmp-*` folder, about as large as the index. The next store removes
    it before it writes, not only once its own index is in place: the two need not fit on the disk together (here a
    real small filesystem, a tmpfs the leftover nearly fills). A live build's folder stays."""
    first = stored(built)
    page = 4096  # what each file takes on a tmpfs, at least
    used = sum(-(-f.stat().st_size // page) * page for f in index_dir(built).iterdir())
    del first
    root = built.settings.data_dir / DIRECTORY
    shutil.rmtree(root)
    root.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={used * 3 // 2 // 1024}k", "tmpfs", str(root)])
    if mounted.returncode != 0:
        pytest.skip("mounting a tmpfs needs root")
    try:
        killed, running = root / ".tmp-r1-aaaa-999999", root / ".tmp-r1-bbbb-1"  # pid 999999: none; pid 1: always
        for folder in (killed, running):
            folder.mkdir()
        (killed / "dense.npy").write_bytes(b"x" * (used * 4 // 5))
        (running / "dense.npy").write_bytes(b"x")
        index = stored(built)
        assert answers(built, index) == answers(built, fresh(built))
        run_id = index.run_id
        del index  # its files are mapped: unmapped before the tmpfs goes
        assert index_store.stored_runs(built.settings.data_dir) == {run_id}, "the store did not fit"
        assert sorted(p.name for p in root.iterdir()) == sorted([running.name, index_dir(built).name])
        assert (index_dir(built) / MANIFEST).exists()
    finally:
        subprocess.run(["umount", "-l", str(root)], check=True)


@pytest.mark.prefect
def test_a_run_that_skips_cues_stores_the_index_a_killed_run_did_not(built: Dbs) -> None:
    """A run killed after its cues stage, while its recall index was being written beside the load, leaves the
    memory with no stored index (a `.tmp-*` folder instead). The re-run does not run cues again (here the load alone,
    as the resume line says); it stores the index all the same, so the first recall opens it rather than building it
    (minutes at 1M messages), and the killed build's folder goes. A run whose memory has its index builds nothing."""
    from flows.pipeline import run_pipeline
    from staging.memory import latest_run

    root = built.settings.data_dir / DIRECTORY
    killed = root / f".tmp-{latest_run(built.staging)}-aaaa-999999"  # no pid 999999: a build killed while writing
    killed.mkdir(parents=True)
    (killed / "ids.bytes.npy").write_bytes(b"half")
    run_id = built.run_id()
    _, results = run_pipeline(built.settings, [], stages=["load"], run_id=run_id, quiet=True)
    assert [r.status for r in results] == ["skipped"]  # no graph in the tests: the load has nothing to do
    assert index_store.stored_runs(built.settings.data_dir) == {latest_run(built.staging)}
    assert not killed.exists()
    stored_at = {p.name: p.stat().st_mtime_ns for p in index_dir(built).iterdir()}
    run_pipeline(built.settings, [], stages=["load"], run_id=run_id, quiet=True)
    assert {p.name: p.stat().st_mtime_ns for p in index_dir(built).iterdir()} == stored_at


def test_new_cues_run_gets_a_new_index_and_the_old_one_goes(built: Dbs) -> None:
    """A re-run of cues is another memory: its index is built anew, and the previous run's is removed."""
    first = stored(built)
    before = index_dir(built)
    cues.run(built.archive, built.staging, run_id=built.run_id(), settings=built.settings)
    runs = {str(r[0]) for r in built.staging.execute("SELECT run_id FROM memory_runs")}
    (second,) = runs - {first.run_id}  # named: two runs within a second need not sort by time
    index = stored(built, run_id=second)
    after = index_dir(built)
    assert after != before and not before.exists()
    assert index.run_id == second and second in after.name


def test_garden_facts_and_titles_are_read_fresh(built: Dbs) -> None:
    """Facts and titles are not stored: a reopened index carries the garden's facts as staging.db has them now."""
    stored(built)
    index = stored(built)
    expected = attach_facts(fresh(built), built.staging)
    assert index.facts == expected.facts and index.fact_positions == expected.fact_positions
    assert index.titles == expected.titles


def test_unwritable_data_dir_falls_back_to_the_in_memory_index(built: Dbs) -> None:
    """When the index directory cannot be created, recall still answers, from the index built in memory."""
    (built.settings.data_dir / DIRECTORY).write_text("not a directory")
    assert answers(built, stored(built)) == answers(built, fresh(built))


def test_an_index_stored_before_checksums_is_rebuilt_as_an_older_format(
    built: Dbs, caplog: pytest.LogCaptureFixture
) -> None:
    """A data dir upgraded from a chatmem that wrote no checksums: its index is built again (and says why, not
    'damaged'), and the new one carries them."""
    stored(built)
    path = index_dir(built) / MANIFEST
    manifest = json.loads(path.read_text())
    del manifest["sha256"], manifest["mtimes"]
    path.write_text(json.dumps(manifest))
    with caplog.at_level(logging.WARNING, logger="memory.index_store"):
        index = stored(built)
    assert "written by an older chatmem, without checksums" in caplog.text and "damaged" not in caplog.text
    assert "sha256" in json.loads(path.read_text())
    assert answers(built, index) == answers(built, fresh(built))
