"""Cues that carry meaning (issue 20): cased phrases from the concepts, never word stems, and WordNet category
cues that let a question naming a category reach the memory naming an instance. Real SQLite files, a memory
built by the real segment, extract, concepts and cues stages, recall through memory.service.Memory; WordNet is
Debian's wordnet-base database (.ci/run installs it)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from concept_support import Dbs, conversation, open_dbs, write_archive
from stage_support import cues_stage as cues
from stage_support import stage_concepts, stage_extract, stage_segment

from contracts.memory import RecallRequest
from flows.fingerprint import input_fingerprint
from flows.registry import STAGES
from memory import cues_state
from memory.graph import category_head, phrase_index, said_phrases
from memory.service import Memory
from memory.text import terms
from memory.wordnet import WordNet
from staging import memory as store
from staging.ledger import open_run

WORDNET = "/usr/share/wordnet"
needs_wordnet = pytest.mark.skipif(WordNet.open(WORDNET) is None, reason="Debian's wordnet-base is not installed")

CONVERSATIONS = {
    "dog": [
        ("user", "We finally adopted a golden retriever puppy last weekend and named him Biscuit."),
        ("assistant", "Congratulations on the new puppy! Golden retrievers love fetch and long walks."),
    ],
    "ears": [
        ("user", "My new hearing aids arrived today, they make conversations in restaurants much easier."),
        ("assistant", "Hearing aids take a few weeks to get used to; wear them a little longer each day."),
    ],
    "trip": [
        ("user", "We're planning a trip to Lisbon in May. Lisbon has great tram rides."),
        ("assistant", "Lisbon in May is lovely; take tram 28 early."),
    ],
    "code": [
        ("user", "How do I read a CSV file with pandas and drop empty rows? The unusual prices column breaks it."),
        ("assistant", "Use pandas read_csv and then dropna on the data frame; cast the prices column first."),
    ],
}


def built(tmp_path: Path, **memory: object) -> tuple[Dbs, str]:
    dbs = open_dbs(tmp_path, memory=memory) if memory else open_dbs(tmp_path)
    write_archive(dbs.archive, [conversation(k, v) for k, v in CONVERSATIONS.items()])
    run_id = dbs.run_id()
    for stage in (stage_segment, stage_extract, stage_concepts, cues):
        stage.run(dbs.archive, dbs.staging, run_id=run_id, settings=dbs.settings)
    return dbs, run_id


def best(memory: Memory, query: str) -> tuple[str, list[str]]:
    """The best piece's conversation and the cue on its activation path (if one brought it)."""
    result = memory.recall(RecallRequest(query=query, budget_tokens=500))
    top = min(result.pieces, key=lambda p: p.rank)
    return top.conversation_id, [s.label for s in top.path if s.kind == "cue"]


@needs_wordnet
def test_a_question_naming_a_category_reaches_the_instance_through_a_hypernym_cue(tmp_path: Path) -> None:
    """'pet' reaches the golden retriever (WordNet: retriever ... dog, domestic animal, whose gloss-sibling is pet)
    and 'health device' the hearing aids (electronic device, device), through a category cue, words unshared."""
    dbs, run_id = built(tmp_path)
    memory = Memory.open(dbs.settings)
    conversation_id, path = best(memory, "Which pet did I get?")
    assert conversation_id == "dog" and any("pet" in label.split(", ") for label in path)
    conversation_id, path = best(memory, "What health device do I use?")
    assert conversation_id == "ears" and any("device" in label for label in path)
    categories = {c.name for c in store.read_run(dbs.staging, run_id).cues if c.cue_id.startswith("wn:")}
    assert "dog, domestic dog, Canis familiaris" in categories and "electronic device" in categories


def test_cues_are_cased_phrases_never_word_stems(tmp_path: Path) -> None:
    """Every cue is a concept's cased title or a WordNet category, never a stem like 'unus' or 'pric'."""
    dbs, run_id = built(tmp_path)
    graph = store.read_run(dbs.staging, run_id)
    names = {c.name for c in graph.cues}
    assert not any(c.cue_id.startswith("kp:") for c in graph.cues)
    assert not names & {"unus", "unusual", "pric", "price", "column", "puppy"}
    concepts = {c.name for c in graph.cues if c.kind == "concept"}
    assert "Hearing aids" in concepts or "hearing aids" in {n.lower() for n in concepts}
    assert any(any(ch.isupper() for ch in name) for name in concepts)  # case kept ("CSV", "Biscuit")


def test_the_cues_build_works_without_wordnet_and_says_so(tmp_path: Path) -> None:
    """No WordNet database: concept and phrase cues only, and a note names what is missing. When the database then
    appears (same settings), the flows' skip rule, the stage's fingerprint and the incremental state all see it,
    and the rebuilt memory has category cues."""
    lexicon = tmp_path / "wordnet"
    dbs, run_id = built(tmp_path, wordnet_dir=str(lexicon))
    notes, before = dbs.staging.execute(
        "SELECT notes, input_fingerprint FROM stage_runs WHERE stage = 'cues' ORDER BY id DESC LIMIT 1"
    ).fetchone()
    assert "WordNet not found" in notes
    graph = store.read_run(dbs.staging, run_id)
    assert graph.cues and not any(c.cue_id.startswith("wn:") for c in graph.cues)
    assert best(Memory.open(dbs.settings), "golden retriever puppy")[0] == "dog"
    if WordNet.open(WORDNET) is None:
        return
    stage = next(s for s in STAGES if s.name == "cues")
    skip_before = input_fingerprint(stage, dbs.settings, dbs.archive, dbs.staging, [])
    digest_before = cues_state.settings_digest(dbs.settings)
    lexicon.mkdir()
    for name in ("index.noun", "data.noun", "noun.exc"):
        shutil.copy(Path(WORDNET) / name, lexicon / name)
    assert input_fingerprint(stage, dbs.settings, dbs.archive, dbs.staging, []) != skip_before
    assert cues_state.settings_digest(dbs.settings) != digest_before
    other = open_run(dbs.staging, stages=["cues"], exports=[], settings={}, code_version="t", run_id=f"{run_id}-w")
    result = cues.run(dbs.archive, dbs.staging, run_id=other, settings=dbs.settings)
    after = dbs.staging.execute(
        "SELECT input_fingerprint FROM stage_runs WHERE stage = 'cues' ORDER BY id DESC LIMIT 1"
    ).fetchone()[0]
    assert after != before and result.counts["category_cues"] > 0
    assert any(note.startswith("full build") for note in result.notes)
    assert any(c.cue_id.startswith("wn:") for c in store.read_run(dbs.staging, other).cues)


def test_a_concept_title_said_without_evidence_links_its_message() -> None:
    """A multi-word title or a name with inner capitals is found in a message's terms (longest first); a lone
    common word is not (it would be a stem cue again)."""
    concepts = {
        "concept:a": ("customer churn model", "entity"),
        "concept:b": ("customer churn", "entity"),
        "concept:c": ("PostgreSQL", "entity"),
        "concept:d": ("Data", "entity"),
    }
    index = phrase_index(concepts)
    words = terms("Our customer churn model reads from PostgreSQL; the data is customer churn data.")
    assert said_phrases(words, index) == ["concept:a", "concept:b", "concept:c"]


def test_names_of_products_are_not_filed_under_their_last_word() -> None:
    """'AWS Glue' is no glue and 'iPhone case' no legal case; 'Golden Retriever' is a retriever."""
    assert not category_head("AWS Glue") and not category_head("iPhone case")
    assert category_head("Golden Retriever") and category_head("hearing aids")


@needs_wordnet
def test_the_gloss_aliases_are_kept_between_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """WordNet's gloss aliases (a pass over every noun synset) are written to the cache dir once and read back by
    the next open, with the same answer; a damaged file is found again and rewritten."""
    from memory import wordnet

    fresh = WordNet.open(WORDNET)
    kept = WordNet.open(WORDNET, tmp_path)
    assert fresh is not None and kept is not None and kept.aliases_file is not None
    assert kept.aliases() == fresh.aliases() and kept.aliases_file.is_file()
    assert any("pet" in lemmas for lemmas in fresh.aliases().values())  # the docstring's example
    passes: list[int] = []
    monkeypatch.setattr(wordnet, "_offsets", lambda data: passes.append(1) or iter(()))  # a pass would find none
    again = WordNet.open(WORDNET, tmp_path)
    assert again is not None and again.aliases() == fresh.aliases() and not passes
    kept.aliases_file.write_text("{not json", encoding="utf-8")
    damaged = WordNet.open(WORDNET, tmp_path)
    assert damaged is not None and damaged.aliases() == {} and passes == [1]  # found again (here: none)
    assert WordNet.open(WORDNET, tmp_path).aliases() == {}  # the rewritten file holds the new answer
    monkeypatch.undo()
    blocked = tmp_path / "not-a-dir"
    blocked.write_text("", encoding="utf-8")  # a cache dir that cannot be entered or made: no cache, same answer
    unkept = WordNet.open(WORDNET, blocked / "cache")
    assert unkept is not None and unkept.aliases() == fresh.aliases()
