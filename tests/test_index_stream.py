"""The recall index built as the stored index builds it (issue 23: memory.index.load_index with keep_texts=False
reads the message texts a VECTOR_CHUNK at a time and drops the content rows before the key vectors are filled;
memory.index_store writes the key vectors in k-means list order ROWS_CHUNK rows at a time) is, array for array and
file for file, the index of the build it replaced: every text in one dict, the rows and every edge held throughout."""

from __future__ import annotations

import json
from dataclasses import fields
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from concept_support import Dbs
from test_index_store import built_memory, index_dir, same, stored

from memory import index as index_module
from memory import index_store, text, vector_segments
from memory.candidates import prepare
from memory.index import MemoryIndex, attach_facts, build_index, embeds_role, fill_vectors, key_embedder, load_index
from memory.key_model import for_run
from memory.names import speaker_names
from staging import memory as store
from staging import memory_inputs as inputs
from staging.ledger import open_staging


@pytest.fixture(autouse=True)
def every_array_in_a_file(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(index_store, "STORED_FROM", 1)


@pytest.fixture
def built(tmp_path: Path) -> Dbs:
    return built_memory(tmp_path)


def whole_dict_build(dbs: Dbs) -> MemoryIndex:
    """load_index as it was before the streamed build: every message's text in one dict, the run's rows and
    edges (read_run with edges) held while build_index takes its columns, counts and cue weights from them."""
    run_id = store.latest_run(dbs.staging)
    assert run_id is not None
    settings = for_run(dbs.settings, dbs.staging, run_id)
    embedder = key_embedder(settings)
    graph = store.read_run(dbs.staging, run_id)
    rows = [c for c in graph.content if c.kind == "message"]
    ids = [c.content_id for c in rows]
    dense = np.zeros((len(ids), embedder.dim), dtype=np.float32)
    have = np.zeros(len(ids), dtype=bool)
    wanted = np.array([embeds_role(settings, r.role) for r in rows], dtype=bool)
    texts = inputs.message_texts(dbs.archive, ids)
    names = speaker_names((r.role, r.author) for r in rows)
    fill_vectors(dbs.staging, settings, embedder, dense, have, wanted, ids, texts, names)
    titles = inputs.conversation_titles(dbs.archive)
    index = build_index(graph, run_id, dense, texts=texts, titles=titles, key_roles=settings.memory.key_roles)
    return attach_facts(index, dbs.staging)


def test_streamed_build_is_the_whole_dict_build(built: Dbs, monkeypatch: pytest.MonkeyPatch) -> None:
    """Texts read two messages at a time, never all together; every field equal to the whole-dict build's (texts
    aside: the streamed build keeps none, archive.db gives them when shown); keep_texts=True keeps them all."""
    expected = whole_dict_build(built)
    assert expected.size > 4 and bool(np.any(expected.dense)), "a memory with several keyed messages"
    monkeypatch.setattr(index_module, "VECTOR_CHUNK", 2)
    asked: list[int] = []
    read = inputs.message_texts

    def counted(archive: object, ids: list[str]) -> dict[str, str]:
        asked.append(len(ids))
        return read(archive, ids)  # type: ignore[arg-type]

    monkeypatch.setattr(inputs, "message_texts", counted)
    embedder = key_embedder(built.settings)
    streamed = load_index(built.archive, built.staging, built.settings, embedder, keep_texts=False)
    assert asked and max(asked) <= 2 and sum(asked) == int(np.count_nonzero(np.any(expected.dense, axis=1)))
    for f in fields(MemoryIndex):
        if f.name != "texts":
            assert same(getattr(streamed, f.name), getattr(expected, f.name)), f.name
    assert dict(streamed.texts) == {}
    kept = load_index(built.archive, built.staging, built.settings, embedder)
    for f in fields(MemoryIndex):
        assert same(getattr(kept, f.name), getattr(expected, f.name)), f.name


def test_vectors_embedded_here_are_the_same_from_chunks(
    built: Dbs, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With an empty vector cache every key is embedded in fill_vectors: texts read chunk by chunk give the same
    vectors as one dict of every text."""
    run_id = store.latest_run(built.staging)
    assert run_id is not None
    settings = for_run(built.settings, built.staging, run_id)
    embedder = key_embedder(settings)
    rows = [c for c in store.read_run(built.staging, run_id, edges=False).content if c.kind == "message"]
    ids = [c.content_id for c in rows]
    wanted = np.array([embeds_role(settings, r.role) for r in rows], dtype=bool)
    names = speaker_names((r.role, r.author) for r in rows)
    empty = open_staging(tmp_path / "empty-staging.db")  # no cached vector: every key is embedded here
    monkeypatch.setattr(index_module, "VECTOR_CHUNK", 3)
    found = []
    for texts in (inputs.message_texts(built.archive, ids), lambda chunk: inputs.message_texts(built.archive, chunk)):
        dense = np.zeros((len(ids), embedder.dim), dtype=np.float32)
        have = np.zeros(len(ids), dtype=bool)
        fill_vectors(empty, settings, embedder, dense, have, wanted, ids, texts, names)
        found.append(dense)
    assert np.any(found[0]) and found[0].tobytes() == found[1].tobytes()


def test_stored_files_are_the_whole_dict_build_files(
    built: Dbs, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The files open_index stores hold the bytes the whole-dict build's index writes, file for file; the key
    vectors, written three rows at a time in list order as a segment (memory/vector_segments.py), are the bytes of
    np.save of the gathered array."""
    monkeypatch.setattr(vector_segments, "ROWS_CHUNK", 3)
    stored(built)
    directory = index_dir(built)
    manifest = json.loads((directory / index_store.MANIFEST).read_text())
    assert "dense.where" in manifest["files"] and len(manifest["segments"]) == 1, "the key vectors: one segment"
    expected = whole_dict_build(built)
    prepare(expected)
    assert expected.prepass is not None and expected.prepass.lists is not None
    reference = tmp_path / "recall-index" / "reference"
    reference.mkdir(parents=True)
    index_store._write(expected, reference, manifest["key"], manifest["meta"]["reuse"])
    written = sorted(p.name for p in directory.iterdir())
    assert written == sorted(p.name for p in reference.iterdir())
    for name in written:
        if name != index_store.MANIFEST:
            assert (directory / name).read_bytes() == (reference / name).read_bytes(), name
    again = json.loads((reference / index_store.MANIFEST).read_text())
    assert again["sha256"] == manifest["sha256"] and again["meta"] == manifest["meta"]
    (segment,) = manifest["segments"]
    (other,) = again["segments"]
    assert segment["sha256"] == other["sha256"] and segment["rows"] == other["rows"] == expected.size
    np.save(tmp_path / "gathered.npy", np.asarray(expected.dense)[expected.prepass.lists.order], allow_pickle=False)
    stored_bytes = (built.settings.data_dir / vector_segments.DIRECTORY / segment["name"]).read_bytes()
    assert (tmp_path / "gathered.npy").read_bytes() == stored_bytes
    assert vector_segments.sha256(tmp_path / "gathered.npy") == segment["sha256"], "hashed as written"


def old_from_counts(counts: Any, names: list[str], k1: float = 1.2, b: float = 0.75) -> tuple[Any, ...]:
    """BM25.from_counts before the chunked weights: (indptr, indices, postings, idf, tf, vocabulary)."""
    sorted_names = sorted(names)
    if list(names) != sorted_names:
        position = {t: i for i, t in enumerate(names)}
        counts = counts.tocsc()[:, [position[t] for t in sorted_names]]
    counts = counts.tocsc()
    counts.sum_duplicates()
    n = counts.shape[0]
    length = np.asarray(counts.sum(axis=1), dtype=np.float64).ravel()
    average = float(length.mean()) if len(length) and length.sum() else 1.0
    freq = counts.data.astype(np.float64, copy=False)
    norm = length[counts.indices]
    norm *= b
    norm /= average
    norm += 1 - b
    norm *= k1
    norm += freq
    vals = freq * (k1 + 1)
    vals /= norm
    df = np.diff(counts.indptr).astype(np.float64)
    idf = np.log(1 + (n - df + 0.5) / (df + 0.5))
    return counts.indptr, counts.indices, vals.astype(np.float32), idf, freq.astype(np.int32), sorted_names


@pytest.mark.parametrize("duplicates", [False, True])
def test_bm25_weights_in_chunks_are_the_one_pass_weights(monkeypatch: pytest.MonkeyPatch, duplicates: bool) -> None:
    """BM25.from_counts with its columns renumbered through the indices and its weights 5 entries at a time gives
    the arrays of the column-gathered CSC weighted in one pass (every dtype and byte)."""
    from scipy.sparse import coo_matrix, csr_matrix

    monkeypatch.setattr(text, "BM25_CHUNK", 5)
    rng = np.random.default_rng(3)
    names = [f"t{i:02d}" for i in rng.permutation(40)]  # numbered in order of appearance, not sorted
    rows, cols = rng.integers(0, 30, 300), rng.integers(0, 40, 300)
    counts = coo_matrix((rng.integers(1, 5, 300).astype(np.float64), (rows, cols)), shape=(30, 40)).tocsr()
    if duplicates:  # the first 20 entries twice: two entries for one (document, term), summed by both
        coo = counts.tocoo()  # (a COO -> CSR conversion would sum them: the CSR is built from its arrays)
        row, col, data = (np.r_[a, a[:20]] for a in (coo.row, coo.col, coo.data))
        order = np.lexsort((col, row))
        indptr = np.searchsorted(row[order], np.arange(31)).astype(np.int32)
        counts = csr_matrix((data[order], col[order].astype(np.int32), indptr), shape=(30, 40))
        pairs = set(zip(*counts.nonzero(), strict=True))
        assert counts.nnz == len(pairs) + 20, "the fixture holds 20 duplicate entries"
    before = counts.copy()
    bm25 = text.BM25.from_counts(counts, names)
    indptr, indices, postings, idf, tf, vocabulary = old_from_counts(before.copy(), names)
    for new, old in (
        (bm25.postings.indptr, indptr),
        (bm25.postings.indices, indices),
        (bm25.postings.data, postings),
        (bm25.idf, idf),
        (bm25.tf, tf),
    ):
        assert new is not None and new.dtype == old.dtype and new.tobytes() == old.tobytes()
    assert sorted(bm25.vocabulary, key=bm25.vocabulary.__getitem__) == vocabulary
    assert (counts != before).nnz == 0 and counts.indices.tobytes() == before.indices.tobytes()  # input untouched
