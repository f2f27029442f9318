"""The recall index of an incremental cues run is patched from the stored index of the run before
(memory/index_patch.py): only the touched conversations' rows are read, and after each of several incremental runs
the stored index equals a build from scratch, array for array, and answers the same."""

from __future__ import annotations

import os
from dataclasses import fields
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from concept_support import Dbs, conversation, write_archive
from test_index_reuse import NEW, first_build, run_stages
from test_index_store import answers, fresh, overwrite_in_place, same, stored

from memory import index_patch, index_store, mapped, vector_segments
from memory.index import MemoryIndex
from staging import memory as store

DUMPS: list[dict[str, list[tuple[str, str]]]] = [
    NEW,
    {  # a repeated question (a merged group) in an old conversation, and a new conversation
        "bread": [
            ("user", "I tried a banana bread recipe with walnuts."),
            ("assistant", "Add a pinch of salt next time."),
            ("user", "Should I toast the walnuts for banana bread first?"),
            ("user", "Should I toast the walnuts for banana bread first?"),
            ("assistant", "Yes, five minutes in the oven."),
        ],
        "music": [("user", "I started learning the cello in March."), ("assistant", "Practice scales daily.")],
    },
    {  # the merged conversation goes on, another one too
        "bread": [
            ("user", "I tried a banana bread recipe with walnuts."),
            ("assistant", "Add a pinch of salt next time."),
            ("user", "Should I toast the walnuts for banana bread first?"),
            ("user", "Should I toast the walnuts for banana bread first?"),
            ("assistant", "Yes, five minutes in the oven."),
            ("user", "The banana bread came out great with toasted walnuts."),
        ],
        "trip": [
            ("user", "We are planning a trip to Lisbon in May."),
            ("assistant", "Lisbon in May: take tram 28 early."),
            ("user", "Which Lisbon museum should we see first?"),
        ],
    },
    {  # a new conversation on a cue of others: their cue -> conversation edges re-weighted, their content shared
        "bake": [("user", "I tried a banana bread recipe with walnuts again."), ("assistant", "Nice, and the salt?")],
    },
]


@pytest.fixture(autouse=True)
def every_array_in_a_file(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(index_store, "STORED_FROM", 1)
    monkeypatch.setattr(index_patch, "PATCH_SHARE", 1.0)  # a small memory: most of it changes with each dump
    monkeypatch.setattr(vector_segments, "MAX_DEAD", 1.0)  # and many of its vector rows are retired
    monkeypatch.setattr(vector_segments, "MAX_UNTRAINED", 1.0)  # or new since the first build


def dump(dbs: Dbs, number: int) -> None:
    chats = DUMPS[number]
    start = datetime(2023, 2 + number, 1, 10, tzinfo=UTC)
    write_archive(
        dbs.archive,
        [conversation(c, t, start=start.replace(day=1 + i)) for i, (c, t) in enumerate(chats.items())],
        f"dump-{number}",
    )
    run_stages(dbs)


class Patches:
    """Records what each patch returned (None: declined)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.results: list[MemoryIndex | None] = []
        original = index_patch.patch_index

        def patch_index(*args: Any, **kwargs: Any) -> MemoryIndex | None:
            found = original(*args, **kwargs)
            self.results.append(found)
            return found

        monkeypatch.setattr(index_store, "patch_index", patch_index)


def test_an_index_patched_over_several_incremental_runs_equals_a_fresh_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dbs = first_build(tmp_path)
    previous = stored(dbs)
    patches = Patches(monkeypatch)
    reweighted = 0
    for number in range(len(DUMPS)):
        dump(dbs, number)
        with monkeypatch.context() as reads:  # no read of the whole run: only the touched conversations' rows
            reads.setattr(store, "read_run", lambda *a, **k: pytest.fail("the patch read the whole run"))
            index = stored(dbs)
        assert patches.results[-1] is not None, f"dump {number}: the patch declined"
        reweighted += reweighted_elsewhere(dbs, index.run_id)
        assert index.run_id > previous.run_id
        expected = fresh(dbs)
        for f in fields(MemoryIndex):
            if f.name not in ("texts", "prepass"):
                assert same(getattr(index, f.name), getattr(expected, f.name)), (number, f.name)
        kept_lists(index, previous, expected)
        assert answers(dbs, index) == answers(dbs, expected)
        shares_segments(dbs, index, previous)
        previous = index
    assert len(patches.results) == len(DUMPS)
    assert any(len(members) > 1 for members in previous.group.values()), "a merged group was patched"
    assert reweighted, "a cue -> conversation edge of an untouched conversation was re-weighted"


def kept_lists(index: MemoryIndex, previous: MemoryIndex, expected: MemoryIndex) -> None:
    """The patched index keeps the earlier index's k-means lists (nothing trained again) and puts each row in a list
    nearest to its vector; its conversations' members are a fresh build's."""
    assert index.prepass is not None and previous.prepass is not None and expected.prepass is not None
    assert same(index.prepass.members, expected.prepass.members)
    lists, earlier = index.prepass.lists, previous.prepass.lists
    assert lists is not None and earlier is not None
    for name in ("projection", "centroids", "half_norms"):
        assert same(getattr(lists, name), getattr(earlier, name)), name
    assert sorted(np.asarray(lists.order).tolist()) == list(range(index.size))
    scores = (np.asarray(index.dense) @ lists.projection) @ lists.centroids.T - lists.half_norms
    chosen = scores[np.arange(index.size), lists.assignment()]
    assert np.all(chosen >= scores.max(axis=1) - 1e-5), "a row is not in a nearest list"


def shares_segments(dbs: Dbs, index: MemoryIndex, previous: MemoryIndex) -> None:
    """The patched index reads the earlier index's vector segments where they are (not rewritten) and adds at most one
    of its new rows; the segments no index lists are gone."""
    assert isinstance(index.dense, mapped.Rows) and isinstance(previous.dense, mapped.Rows)
    earlier = [e["name"] for e in previous.dense.entries if e is not None]
    now = [e["name"] for e in index.dense.entries if e is not None]
    assert now[: len(earlier)] == earlier and len(now) - len(earlier) <= 1
    folder = dbs.settings.data_dir / vector_segments.DIRECTORY
    assert sorted(p.name for p in folder.iterdir()) == sorted(now)
    for entry in index.dense.entries:
        assert entry is not None and (folder / entry["name"]).stat().st_mtime_ns == entry["mtime"]


def reweighted_elsewhere(dbs: Dbs, run_id: str) -> int:
    """Cue -> conversation edges the run re-weighted in conversations whose content it did not write."""
    return int(
        dbs.staging.execute(
            "SELECT COUNT(*) FROM memory_edges e WHERE e.kind = 'cue-tag' AND e.retired_run_id = ?"
            " AND e.dst LIKE 'conv:%' AND NOT EXISTS (SELECT 1 FROM memory_content c WHERE c.run_id = ?"
            " AND 'conv:' || c.conversation_id = e.dst)",
            (run_id, run_id),
        ).fetchone()[0]
    )


@pytest.mark.parametrize("limit", ["MAX_SEGMENTS", "MAX_DEAD", "MAX_UNTRAINED", "damaged"])
def test_past_a_sharing_limit_the_patched_index_writes_its_vectors_again_as_a_fresh_build_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, limit: str
) -> None:
    """Sharing stops when an index would read too many segments, dead rows or rows the lists were not trained on:
    its vectors are written as one segment again, its k-means lists trained again: the index a build from scratch
    gives, array for array. Copying hashes the earlier segments first: one whose bytes changed without a new
    modification time (a disk error an open does not see) is not copied into the new segment."""
    if limit == "damaged":
        monkeypatch.setattr(vector_segments, "MAX_SEGMENTS", 1)
    else:
        monkeypatch.setattr(vector_segments, limit, 1 if limit == "MAX_SEGMENTS" else 0.0)
    dbs = first_build(tmp_path)
    first = stored(dbs)
    if limit == "damaged":
        assert isinstance(first.dense, mapped.Rows) and first.dense.entries[0] is not None
        segment = dbs.settings.data_dir / vector_segments.DIRECTORY / first.dense.entries[0]["name"]
        del first
        overwrite_in_place(segment, keep_time=True)
    patches = Patches(monkeypatch)
    for number in range(2):
        dump(dbs, number)
        index = stored(dbs)
        assert limit == "damaged" or patches.results[-1] is not None, f"dump {number}: the patch declined"
        expected = fresh(dbs)
        for f in fields(MemoryIndex):
            if f.name != "texts":
                assert same(getattr(index, f.name), getattr(expected, f.name)), (number, f.name)
        assert isinstance(index.dense, mapped.Rows) and len(index.dense.segments) == 1
        folder = dbs.settings.data_dir / vector_segments.DIRECTORY
        assert [p.name for p in folder.iterdir()] == [index.dense.entries[0]["name"]]  # type: ignore[index]


def test_a_segment_copied_without_its_time_is_hashed_then_listed_with_its_new_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A data dir copied without its files' times: the next patched index hashes the shared segment once and lists
    it with the time it has now, so later opens trust it again instead of hashing it each time."""
    dbs = first_build(tmp_path)
    first = stored(dbs)
    assert isinstance(first.dense, mapped.Rows) and first.dense.entries[0] is not None
    entry = dict(first.dense.entries[0])
    del first
    segment = dbs.settings.data_dir / vector_segments.DIRECTORY / entry["name"]
    os.utime(segment, ns=(entry["mtime"] + 10**9, entry["mtime"] + 10**9))  # as `cp -r` leaves it
    dump(dbs, 0)
    index = stored(dbs)
    assert isinstance(index.dense, mapped.Rows)
    listed = [e for e in index.dense.entries if e is not None and e["name"] == entry["name"]]
    assert listed and listed[0]["mtime"] == segment.stat().st_mtime_ns == entry["mtime"] + 10**9
    hashed: list[Path] = []
    original = vector_segments.sha256
    monkeypatch.setattr(vector_segments, "sha256", lambda path: hashed.append(path) or original(path))
    stored(dbs)
    assert segment not in hashed, "an open hashed the segment again"


def test_the_patch_declines_when_a_speaker_name_comes_or_goes(tmp_path: Path) -> None:
    """A new speaker changes every key's masking: the patch declines (the index is then built as before)."""
    dbs = first_build(tmp_path)
    previous = stored(dbs)
    dump(dbs, 0)
    run_id = max(str(r[0]) for r in dbs.staging.execute("SELECT run_id FROM memory_runs"))
    dbs.staging.execute("UPDATE memory_content SET author = 'Ada' WHERE run_id = ? AND role = 'user'", (run_id,))
    dbs.staging.commit()
    from memory.index import key_embedder

    assert (
        index_patch.patch_index(dbs.archive, dbs.staging, dbs.settings, key_embedder(dbs.settings), run_id, previous)
        is None
    )


def test_when_the_patch_declines_the_index_reusing_counts_and_vectors_equals_a_fresh_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The build it falls back to (memory/index_reuse.py: the whole run read, counts and vectors reused)."""
    monkeypatch.setattr(index_store, "patch_index", lambda *args, **kwargs: None)
    dbs = first_build(tmp_path)
    stored(dbs)
    for number in range(len(DUMPS)):
        dump(dbs, number)
        index, expected = stored(dbs), fresh(dbs)
        for f in fields(MemoryIndex):
            if f.name != "texts":
                assert same(getattr(index, f.name), getattr(expected, f.name)), (number, f.name)
