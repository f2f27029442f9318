"""`chatmem recall`'s read path without pydantic, scipy or the pipeline: the copied defaults equal the models', the
plain answer types carry the contract's fields, the plain fact records (contracts.fact_rules.FactRow) equal the
garden's pydantic ones, and a real `chatmem recall` process on a stored index imports none of them (unless a
CHATMEM_ variable asks for the full settings)."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from dataclasses import fields
from pathlib import Path

import pytest

from contracts.memory import ActivationStep, RecallFact, RecallPiece, RecallRequest, RecallResult, RecallScope
from contracts.settings import DEFAULT_DATA_DIR, Settings
from contracts.times import parse_iso_time
from memory import answer, recall_settings

ROOT = Path(__file__).resolve().parents[1]


def test_the_copied_defaults_equal_the_settings_models() -> None:
    """memory/recall_defaults.json is Settings()'s dump of the sections a recall reads (regenerate it with
    `python -m memory.recall_settings` after changing a default)."""
    stored = json.loads(recall_settings.DEFAULTS.read_text())
    assert stored == recall_settings.dump_defaults()
    everything = Settings.model_construct().model_dump(mode="json")
    assert stored == {name: everything[name] for name in recall_settings.SECTIONS}
    assert recall_settings.DEFAULT_DATA_DIR == DEFAULT_DATA_DIR


def test_light_settings_only_without_overrides(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in [k for k in os.environ if k.upper().startswith("CHATMEM_")]:
        monkeypatch.delenv(name)
    light = recall_settings.light_settings(tmp_path)
    full = Settings(data_dir=tmp_path)
    assert light is not None and light.staging_path == full.staging_path and light.archive_path == full.archive_path
    for section in recall_settings.SECTIONS:
        for name, value in getattr(full, section).model_dump(mode="json").items():
            assert getattr(getattr(light, section), name) == value, (section, name)
    copy = light.model_copy(update={"memory": light.memory.model_copy(update={"key_embedder": "minilm-onnx"})})
    assert copy.memory.key_embedder == "minilm-onnx" and light.memory.key_embedder == full.memory.key_embedder
    monkeypatch.setenv("CHATMEM_DATA_DIR", str(tmp_path / "other"))
    found = recall_settings.light_settings(None)
    assert found is not None and found.data_dir == tmp_path / "other"
    monkeypatch.setenv("chatmem_memory__theta", "0.5")  # pydantic-settings ignores the case of the name
    assert recall_settings.light_settings(tmp_path) is None


def test_the_answer_types_carry_the_contracts_fields() -> None:
    pairs = [
        (answer.Request, RecallRequest),
        (answer.Scope, RecallScope),
        (answer.Step, ActivationStep),
        (answer.Piece, RecallPiece),
        (answer.Fact, RecallFact),
        (answer.Answer, RecallResult),
    ]
    for light, contract in pairs:
        assert {f.name for f in fields(light)} == set(contract.model_fields), light.__name__
    defaults = RecallRequest(query="q")
    plain = answer.Request(query="q")
    assert (plain.budget_tokens, plain.max_pieces, plain.order) == (
        defaults.budget_tokens,
        defaults.max_pieces,
        defaults.order,
    )


def _facts_table(path: Path) -> sqlite3.Connection:
    from staging.facts import upsert_facts
    from staging.ledger import open_staging

    conn = open_staging(path)
    base = {"subject": "user", "subject_concept_id": None, "value_concept_id": None}
    rows = [
        {
            **base,
            "fact_id": "f1",
            "attribute": "lives in",
            "value": "Paris",
            "value_key": "paris",
            "polarity": "positive",
            "valid_from": "2023-01-10T08:00:00.123456+00:00",
            "valid_to": "2023-05-02T09:30:00+00:00",
            "recorded_at": "2026-12-01T21:06:17+00:00",
            "invalidated_at": "2026-12-01T21:06:17+00:00",
            "state": "superseded",
            "superseded_by": "f2",
            "support": 2,
            "last_stated": "2023-02-01T10:00:00+00:00",
            "message_ids": ["m1", "m2"],
            "evidence": ["I live in Paris", "still in Paris"],
            "run_id": "r1",
        },
        {
            **base,
            "fact_id": "f2",
            "attribute": "lives in",
            "value": "Berlin",
            "value_key": "berlin",
            "polarity": "positive",
            "valid_from": "2023-05-02T09:30:00+00:00",
            "valid_to": None,
            "recorded_at": "2026-12-01T21:06:17+00:00",
            "invalidated_at": None,
            "state": "valid",
            "superseded_by": None,
            "support": 1,
            "last_stated": "2023-05-02T09:30:00+00:00",
            "message_ids": ["m3"],
            "evidence": ["moved to Berlin"],
            "run_id": "r1",
        },
        {
            **base,
            "fact_id": "f3",
            "attribute": "uses",
            "value": "Mendeley",
            "value_key": "mendeley",
            "polarity": "negative",
            "valid_from": None,
            "valid_to": None,
            "recorded_at": "2026-12-01T21:06:17+00:00",
            "invalidated_at": None,
            "state": "retracted",
            "superseded_by": None,
            "support": 1,
            "last_stated": None,
            "message_ids": [],
            "evidence": [],
            "run_id": "r1",
        },
    ]
    upsert_facts(conn, rows)
    conn.commit()
    return conn


def test_plain_fact_rows_equal_the_garden_records(tmp_path: Path) -> None:
    """FactRow has FactRecord's fields, and fact_rows(conn) reads the same values as timeline(conn): times with
    the same instant and offset, and the pure functions give the same answers over either."""
    from typing import get_args

    from contracts.concepts import Polarity
    from contracts.fact_rules import FactPolarity, FactRow
    from contracts.facts import FactRecord
    from staging.fact_timeline import as_of, change_lines, fact_prior, fact_rows, rank_facts, timeline

    assert [f.name for f in fields(FactRow)] == list(FactRecord.model_fields)
    assert get_args(FactPolarity) == get_args(Polarity)
    conn = _facts_table(tmp_path / "staging.db")
    rows, records = fact_rows(conn), timeline(conn)
    assert len(rows) == len(records) == 3
    for row, record in zip(rows, records, strict=True):
        assert vars(row) == record.model_dump()
        for name in ("valid_from", "valid_to", "recorded_at", "invalidated_at", "last_stated"):
            mine, theirs = getattr(row, name), getattr(record, name)
            assert (mine is None) == (theirs is None)
            if mine is not None:
                assert (mine.utcoffset(), mine.isoformat(), f"{mine:%Y-%m-%d}") == (
                    theirs.utcoffset(),
                    theirs.isoformat(),
                    f"{theirs:%Y-%m-%d}",
                )
    for query, at in [("where do I live", None), ("where do I live", "2023-03-01"), ("mendeley", None)]:
        assert [vars(r) for r in rank_facts(rows, query, at)] == [
            r.model_dump() for r in rank_facts(records, query, at)
        ]
        assert fact_prior(rows, query, at) == fact_prior(records, query, at)
        assert [vars(r) for r in as_of(rows, at)] == [r.model_dump() for r in as_of(records, at)]
        assert change_lines(as_of(rows, at)) == change_lines(as_of(records, at))


def test_parse_iso_time_is_the_contracts() -> None:
    from contracts import memory as contract

    assert contract.parse_iso_time is parse_iso_time
    assert RecallRequest(query="q", at="2024-05-01").at == parse_iso_time("2024-05-01", end_of_day=True)


def _imports_of_a_recall(data_dir: Path, environ: dict[str, str]) -> tuple[set[str], str]:
    code = (
        "import sys\n"
        "from flows.cli import main\n"
        "try:\n"
        f"    sys.argv = ['chatmem', '--data-dir', {str(data_dir)!r}, 'recall', 'Lisbon tram']\n"
        "    main()\n"
        "except SystemExit:\n"
        "    pass\n"
        "print('MODULES', ' '.join(sorted(sys.modules)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=environ, capture_output=True, text=True, check=True, timeout=300
    )
    modules = done.stdout.rsplit("MODULES ", 1)[1].split()
    return set(modules), done.stdout


def test_a_recall_process_imports_no_scipy_no_settings_models_no_pipeline(tmp_path: Path) -> None:
    """On a built memory with its stored index: no scipy, no pydantic at all (settings, contracts, the garden's
    fact records), no prefect, no stage package; with a CHATMEM_ override the full settings are read."""
    from test_index_store import CHATS, built_memory

    dbs = built_memory(tmp_path)
    _facts_table(dbs.settings.data_dir / "staging.db").close()  # the garden's facts are read at every open
    environ = {k: v for k, v in os.environ.items() if not k.upper().startswith("CHATMEM_")}
    _imports_of_a_recall(dbs.settings.data_dir, environ)  # the first open builds and stores the index
    modules, out = _imports_of_a_recall(dbs.settings.data_dir, environ)
    assert "piece(s), best first" in out and CHATS
    heavy = {"scipy", "scipy.sparse", "pydantic", "pydantic_settings", "contracts.settings", "contracts.memory"}
    heavy |= {"contracts.facts", "contracts.base", "prefect"}
    assert not heavy & modules, heavy & modules
    stages = ("ingest.", "extract.", "cluster.", "load.", "garden.", "memory.graph", "memory.stage")
    assert not [m for m in modules if m.startswith(stages)]
    environ["CHATMEM_MEMORY__BUDGET_TOKENS"] = "300"
    modules, out = _imports_of_a_recall(dbs.settings.data_dir, environ)
    assert "contracts.settings" in modules and "/300 tokens" in out


def test_one_text_static_vector_equals_the_batch_row() -> None:
    """StaticMiniLM embeds one query without scipy: the same float32 sums as the batch's sparse product."""
    import numpy as np

    from clients.embedders import StaticMiniLM

    embedder = StaticMiniLM()
    for text in ["what did I buy for my sister's birthday?", "Lisbon tram 28", "x", "the the hello hello", ""]:
        assert np.array_equal(embedder.embed([text])[0], embedder.embed([text, "another text here"])[0]), text
