"""memory/key_model.py: the cues stage picks the key model by budget, records it, and recall follows it."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from concept_support import Dbs, conversation, open_dbs, write_archive
from stage_support import cues_stage as cues

from clients.embedders import OnnxMiniLM, StaticMiniLM
from contracts.memory import RecallRequest
from contracts.settings import MemorySettings
from memory.graph import dense_key
from memory.index import key_embedder, load_index
from memory.key_model import FULL, STATIC, KeyCost, run_choice
from memory.service import Memory

ROOT = Path(__file__).resolve().parents[1]
LOCOMO = ROOT.parent / "shared" / "data" / "benchmarks" / "locomo" / "locomo_dev2.json"


def sessions(first: int, last: int) -> list[list[tuple[str, str]]]:
    """LoCoMo conv-26's sessions first..last as (role, text): its first speaker is the user, the other answers."""
    sample = json.loads(LOCOMO.read_text())[0]["conversation"]
    user = sample["speaker_a"]
    return [
        [("user" if t["speaker"] == user else "assistant", t["text"]) for t in sample[f"session_{n}"]]
        for n in range(first, last + 1)
    ]


def estimate(turns: list[list[tuple[str, str]]]) -> float:
    """The full model's estimated CPU seconds for these sessions' user turns, as the stage counts them."""
    cost = KeyCost(MemorySettings())
    for session in turns:
        for role, text in session:
            cost.add(role, text)
    return cost.choice().estimate_s


def archive_with(tmp_path: Path, turns: list[list[tuple[str, str]]], **memory: object) -> Dbs:
    dbs = open_dbs(tmp_path, memory=memory)
    write_archive(dbs.archive, [conversation(f"s{i}", s) for i, s in enumerate(turns)])
    return dbs


def cues_run(dbs: Dbs) -> str:
    run_id = dbs.run_id()
    cues.run(dbs.archive, dbs.staging, run_id=run_id, settings=dbs.settings)
    return run_id


def test_a_small_archive_gets_the_full_model_for_keys_and_queries(tmp_path: Path) -> None:
    """Within the budget the keys are full-model vectors, the run says so, and a recall embeds queries with it."""
    dbs = archive_with(tmp_path, sessions(1, 2))
    run_id = cues_run(dbs)
    choice = run_choice(dbs.staging, run_id)
    assert choice["model"] == FULL and choice["setting"] == "auto" and choice["complete"]
    assert 0 < choice["full_estimate_s"] <= dbs.settings.memory.full_key_budget_s
    ledger = dbs.staging.execute("SELECT counts, notes FROM stage_runs WHERE stage = 'cues'").fetchone()
    assert json.loads(ledger[0])["keys_full_model"] == 1 and "keys: the full model" in ledger[1]
    full = OnnxMiniLM(max_tokens=dbs.settings.memory.key_max_tokens)
    assert dbs.staging.execute("SELECT count(*) FROM embeddings WHERE model = ?", (full.key,)).fetchone()[0] > 0
    memory = Memory.open(dbs.settings)
    assert memory.embedder.key == full.key
    answer = memory.recall(RecallRequest(query="What did Caroline research?", budget_tokens=300))
    assert answer.pieces


def test_past_the_budget_the_static_model_keys_and_queries(tmp_path: Path) -> None:
    """An archive whose estimate passes the budget keeps the static model, for keys and queries alike."""
    turns = sessions(1, 2)
    dbs = archive_with(tmp_path, turns, full_key_budget_s=estimate(turns) / 2)
    run_id = cues_run(dbs)
    choice = run_choice(dbs.staging, run_id)
    assert choice["model"] == STATIC and not choice["complete"]
    full = OnnxMiniLM(max_tokens=dbs.settings.memory.key_max_tokens)
    assert dbs.staging.execute("SELECT count(*) FROM embeddings WHERE model = ?", (full.key,)).fetchone()[0] == 0
    assert isinstance(Memory.open(dbs.settings).embedder, StaticMiniLM)


def test_an_archive_that_grows_past_the_budget_switches_model_and_never_mixes_vectors(tmp_path: Path) -> None:
    """Growth past the budget: the next cues run picks the static model; its index holds only static vectors."""
    small, grown = sessions(1, 2), sessions(1, 6)
    budget = (estimate(small) + estimate(grown)) / 2
    assert estimate(small) < budget < estimate(grown)
    dbs = archive_with(tmp_path, small, full_key_budget_s=budget)
    first = cues_run(dbs)
    assert run_choice(dbs.staging, first)["model"] == FULL
    assert isinstance(Memory.open(dbs.settings, run_id=first).embedder, OnnxMiniLM)
    write_archive(dbs.archive, [conversation(f"s{i}", s) for i, s in enumerate(grown)], tag="b")
    second = cues_run(dbs)
    assert second != first and run_choice(dbs.staging, second)["model"] == STATIC
    memory = Memory.open(dbs.settings, run_id=second)  # by id: two runs of one second sort by their random tail
    static = memory.embedder
    assert isinstance(static, StaticMiniLM) and memory.index.run_id == second
    index = memory.index
    users = np.flatnonzero(index.role_code == index.roles.index("user"))
    keys = [dense_key(index.text(int(i)), index.names) for i in users]
    assert np.allclose(index.dense[users], static.embed(keys), atol=1e-5)  # the static model's, every one of them
    full = OnnxMiniLM(max_tokens=dbs.settings.memory.key_max_tokens)
    with pytest.raises(ValueError, match="keys of this memory are"):
        load_index(dbs.archive, dbs.staging, dbs.settings, full, run_id=second)  # full-model queries, static keys


def test_a_model_named_in_the_settings_is_kept_and_recorded_as_set(tmp_path: Path) -> None:
    """memory.key_embedder = embed is not a choice: the run records it as set, and recall uses the static model."""
    dbs = archive_with(tmp_path, sessions(1, 1), key_embedder="embed")
    run_id = cues_run(dbs)
    assert run_choice(dbs.staging, run_id) == {
        "model": STATIC,
        "setting": "embed",
        "keys_counted": 0,
        "full_estimate_s": 0.0,
        "full_budget_s": dbs.settings.memory.full_key_budget_s,
        "complete": True,
    }
    assert key_embedder(dbs.settings).key == Memory.open(dbs.settings).embedder.key


def test_counting_stops_once_the_budget_is_passed() -> None:
    """A large archive pays for tokenizing only about what fits the budget, not for every message."""
    cost = KeyCost(MemorySettings(full_key_budget_s=1.0))
    for n in range(20_000):
        cost.add("user", f"message number {n} about the garden, the compost and the tomatoes this spring")
        cost.add("assistant", "an answer is no key: never counted")
    choice = cost.choice()
    assert choice.model == STATIC and not choice.complete and choice.keys <= 2_000 and choice.estimate_s > 1.0


def test_a_budget_of_zero_never_chooses_the_full_model() -> None:
    """memory.full_key_budget_s = 0 keeps the static model even for an archive with no key to embed."""
    assert KeyCost(MemorySettings(full_key_budget_s=0)).choice().model == STATIC
    assert KeyCost(MemorySettings()).choice().model == FULL
