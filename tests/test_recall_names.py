"""memory/names.py: the speakers' names are masked out of what the sentence embedder reads (keys and queries)."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest
from concept_support import conversation, open_dbs, write_archive
from stage_support import cues_stage as cues

from clients.embedders import StaticMiniLM
from contracts.records import ExportConversation
from memory.graph import dense_key
from memory.index import run_embedder
from memory.index_store import DIRECTORY
from memory.names import Names, speaker_names
from memory.recall import embed_query
from memory.service import Memory
from staging import embeddings as vectors

NAMES = Names.of(["Caroline", "Melanie", "Amy Ellis"])


def test_names_are_masked_whole_word_with_their_possessive_and_case_sensitive() -> None:
    """Full names, their parts and "X's" go; the same letters as an ordinary word, or inside a word, stay."""
    assert NAMES.mask("Thanks, Caroline! Melanie's kids loved it.") == "Thanks, ! kids loved it."
    assert NAMES.mask("Amy Ellis wrote it; Ellis is great") == "wrote it; is great"
    assert NAMES.mask("carolines and Carolineland, melanie") == "carolines and Carolineland, melanie"
    assert Names.of([None, " "]).mask("Caroline stays") == "Caroline stays"


def test_a_query_of_names_only_is_embedded_as_it_is() -> None:
    """Masking never leaves the embedder an empty query."""
    assert NAMES.query_text("What did Caroline research?") == "What did research?"
    assert NAMES.query_text("Caroline?") == "Caroline?"


def test_named_in_finds_speakers_by_full_name_or_part() -> None:
    """Which speakers a question names (a surname alone counts)."""
    assert NAMES.named_in("Did Ellis and Melanie's kids meet?") == ["Amy Ellis", "Melanie"]
    assert NAMES.named_in("what about melanie") == []


def test_only_people_are_names_roles_are_not() -> None:
    """Authors of user/other messages name people; an assistant's author or a role never does."""
    names = speaker_names([("user", "Jon"), ("assistant", "Gina"), ("user", None), ("other", "Caroline")])
    assert names.names == ("Caroline", "Jon")


def test_the_dense_key_is_the_masked_text_with_no_speaker_or_role_prefix() -> None:
    """Whoever said it, the key is what was said with the speakers' names masked: no 'user: ' prefix."""
    assert dense_key("Hi Melanie, I went hiking", NAMES) == "Hi , I went hiking"
    assert dense_key("Sure", Names()) == "Sure"


def test_a_text_that_names_nobody_is_its_own_key() -> None:
    """Masking leaves a text that names no speaker byte for byte (spaces too), so its key is the embed stage's text."""
    text = "  two  spaces, grace and a trailing newline\n"
    assert NAMES.mask(text) == text
    assert dense_key(text, NAMES) == text
    assert NAMES.mask("Hi  Melanie ") == "Hi"


def test_the_query_vector_is_the_masked_query_vector() -> None:
    """Recall embeds the query as the keys were embedded: names masked."""
    embedder = StaticMiniLM()
    got = embed_query(embedder, "What did Caroline paint?", NAMES)
    assert np.allclose(got, embedder.embed(["What did paint?"])[0])


def _named(conversation_id: str, lines: list[tuple[str, str]]) -> ExportConversation:
    built = conversation(conversation_id, [("user", text) for _, text in lines])
    messages = [m.model_copy(update={"author": who}) for m, (who, _) in zip(built.messages, lines, strict=True)]
    return built.model_copy(update={"messages": messages})


def test_the_cues_stage_caches_the_masked_keys_that_recall_reads(tmp_path: Path) -> None:
    """The stage embeds what the index looks up: a named speaker's key vector is found under its masked text."""
    dbs = open_dbs(tmp_path)
    chat = [("Caroline", "Melanie, I signed up for a pottery class"), ("Melanie", "Caroline, that's great news")]
    write_archive(dbs.archive, [_named("c1", chat)])
    run_id = dbs.run_id()
    cues.run(dbs.archive, dbs.staging, run_id=run_id, settings=dbs.settings)
    model = run_embedder(dbs.settings, dbs.staging)[1].key  # the model the run chose for its keys (a small one: full)
    masked = vectors.text_hash(", I signed up for a pottery class")
    prefixed = vectors.text_hash("Caroline: Melanie, I signed up for a pottery class")
    cached = vectors.load_vectors(dbs.staging, model, [masked, prefixed])
    assert masked in cached and prefixed not in cached
    memory = Memory.open(dbs.settings)
    assert memory.index.names.names == ("Caroline", "Melanie")
    first = memory.index.position["c1-m0"]
    assert np.allclose(memory.index.dense[first], cached[masked])


def test_a_memory_with_named_speakers_is_stored_and_reopened_without_a_rebuild(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The stored recall index of a named export opens as stored (the names' pattern pickles as the names)."""
    dbs = open_dbs(tmp_path, memory={"key_embedder": "embed"})
    chat = [("Caroline", "Melanie, I signed up for a pottery class"), ("Melanie", "Caroline, that's great news")]
    write_archive(dbs.archive, [_named("c1", chat)])
    cues.run(dbs.archive, dbs.staging, run_id=dbs.run_id(), settings=dbs.settings)
    first = Memory.open(dbs.settings)
    (stored,) = (dbs.settings.data_dir / DIRECTORY).iterdir()
    written = {p.name: p.stat().st_mtime_ns for p in stored.iterdir()}
    with caplog.at_level(logging.WARNING, logger="memory.index_store"):
        again = Memory.open(dbs.settings)
    rebuilt = [r for r in caplog.records if r.name == "memory.index_store" and r.levelno >= logging.WARNING]
    assert not rebuilt and {p.name: p.stat().st_mtime_ns for p in stored.iterdir()} == written
    assert again.index.names == first.index.names and again.index.names.mask("Caroline said hi") == "said hi"
