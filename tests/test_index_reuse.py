"""The recall index of a scheduled run takes the term counts and key vectors of the rows it shares with the run
before from that run's stored index (memory/index_reuse.py), and is the same index, array for array, as a build
from scratch; it answers the same. An index it cannot trust (another key model, a run since undone) is not used."""

from __future__ import annotations

import logging
from dataclasses import fields
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from concept_support import Dbs, conversation, open_dbs, write_archive
from stage_support import cues_stage as cues
from stage_support import garden_stage as garden
from stage_support import stage_concepts, stage_extract, stage_segment
from test_index_store import CHATS, answers, fresh, index_dir, overwrite_in_place, same, stored

from memory import index_reuse, index_store
from memory.index import MemoryIndex
from memory.text import TermCounts

NEW = {
    "paris": [
        ("user", "I live in Paris and I love the bakeries here."),
        ("assistant", "Try the covered passages."),
        ("user", "Which bakery near the Louvre bakes the best croissants?"),
    ],
    "garden": [("user", "My tomato plants have yellow leaves."), ("assistant", "Check the watering and the soil.")],
}


@pytest.fixture(autouse=True)
def every_array_in_a_file(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(index_store, "STORED_FROM", 1)


def run_stages(dbs: Dbs) -> None:
    run_id = dbs.run_id()
    for stage in (stage_segment, stage_extract, stage_concepts, garden, cues):
        stage.run(dbs.archive, dbs.staging, run_id=run_id, settings=dbs.settings)


def first_build(tmp_path: Path) -> Dbs:
    """The test_index_store memory, with cues runs incremental whatever share of it changes."""
    dbs = open_dbs(tmp_path, memory={"key_embedder": "embed", "prepass_from": 1, "rebuild_share": 10.0})
    start = datetime(2023, 1, 1, 10, tzinfo=UTC)
    write_archive(
        dbs.archive, [conversation(c, t, start=start.replace(day=1 + i)) for i, (c, t) in enumerate(CHATS.items())]
    )
    run_stages(dbs)
    return dbs


def next_dump(dbs: Dbs) -> None:
    """The service's next export: a new message in one conversation, one new conversation."""
    start = datetime(2023, 2, 1, 10, tzinfo=UTC)
    write_archive(
        dbs.archive, [conversation(c, t, start=start.replace(day=1 + i)) for i, (c, t) in enumerate(NEW.items())], "b"
    )
    run_stages(dbs)


class Counted:
    """Records how many texts each build counted from scratch."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.sizes: list[int] = []
        original = TermCounts.of_texts.__func__  # type: ignore[attr-defined]

        def of_texts(cls: type[TermCounts], texts: Any) -> TermCounts:
            counts = original(cls, texts)
            self.sizes.append(counts.matrix.shape[0])
            return counts

        monkeypatch.setattr(TermCounts, "of_texts", classmethod(of_texts))


def test_the_next_runs_index_reuses_the_shared_rows_and_equals_a_fresh_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dbs = first_build(tmp_path)
    first = stored(dbs)
    next_dump(dbs)
    counted = Counted(monkeypatch)
    index = stored(dbs)  # built now, from the first run's stored index
    assert index.run_id != first.run_id and index.size > first.size
    written = {
        str(r[0])
        for r in dbs.staging.execute("SELECT content_id FROM memory_content WHERE run_id = ?", (index.run_id,))
    }
    assert written and len(written) < index.size  # an incremental run: most rows shared
    assert counted.sizes[0] == len(written & set(index.ids))  # only the rows written since were counted
    expected = fresh(dbs)
    for f in fields(MemoryIndex):
        if f.name != "texts":
            assert same(getattr(index, f.name), getattr(expected, f.name)), f.name
    assert answers(dbs, index) == answers(dbs, expected)


def test_an_index_of_another_key_model_or_of_a_run_since_undone_is_not_reused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dbs = first_build(tmp_path)
    stored(dbs)
    next_dump(dbs)
    monkeypatch.setattr(index_store, "reuse_key", lambda settings, embedder: "another model")
    assert (
        index_store._reusable(
            dbs.settings.data_dir / index_store.DIRECTORY,
            tmp_path / "none",
            dbs.staging,
            dbs.settings,
            _embedder(dbs),
            "r9",
        )
        is None
    )
    monkeypatch.undo()
    monkeypatch.setattr(index_store, "STORED_FROM", 1)
    root = dbs.settings.data_dir / index_store.DIRECTORY
    latest = max(str(r[0]) for r in dbs.staging.execute("SELECT run_id FROM memory_runs"))
    assert index_store._reusable(root, tmp_path / "none", dbs.staging, dbs.settings, _embedder(dbs), latest) is not None
    earlier = min(str(r[0]) for r in dbs.staging.execute("SELECT run_id FROM memory_runs"))
    dbs.staging.execute("UPDATE memory_runs SET content = content + 1 WHERE run_id = ?", (earlier,))
    dbs.staging.commit()  # the earlier run's row as a re-run leaves it: its index no longer matches
    assert index_store._reusable(root, tmp_path / "none", dbs.staging, dbs.settings, _embedder(dbs), latest) is None
    assert index_reuse.Reuse.of(dbs.staging, earlier, stored(dbs, run_id=earlier)) is None  # never from itself


def test_an_earlier_index_damaged_in_place_is_not_reused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The earlier run's term counts overwritten in place, size and modification time kept: the manifest's sha256
    finds it, the new index is built from scratch (every text counted) with a warning, and equals a fresh build."""
    dbs = first_build(tmp_path)
    stored(dbs)
    earlier = index_dir(dbs)
    next_dump(dbs)
    overwrite_in_place(earlier / "bm25.tf.npy", keep_time=True)
    counted = Counted(monkeypatch)
    with caplog.at_level(logging.WARNING, logger="memory.index_store"):
        index = stored(dbs)
    assert "bm25.tf.npy does not hold the bytes written" in caplog.text and "cannot be reused" in caplog.text
    assert counted.sizes[0] == index.size  # nothing taken from the damaged index
    expected = fresh(dbs)
    for f in fields(MemoryIndex):
        if f.name != "texts":
            assert same(getattr(index, f.name), getattr(expected, f.name)), f.name
    assert answers(dbs, index) == answers(dbs, expected)


def _embedder(dbs: Dbs) -> Any:
    from memory.index import key_embedder

    return key_embedder(dbs.settings)
