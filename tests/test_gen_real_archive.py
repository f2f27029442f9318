"""benchmarks/gen_real_archive.py: an export of real chat turns that the real ingest stage reads whole."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from stage_support import ingest_run

from contracts.settings import Settings
from staging.archive import archive_stats, open_archive
from staging.ledger import open_run, open_staging

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_real_archive", ROOT / "benchmarks" / "gen_real_archive.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("gen_real_archive", module)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def gen() -> ModuleType:
    """The generator module, loaded from its file (benchmarks/ is not a package)."""
    return _generator()


@pytest.fixture(scope="module")
def sessions(gen: ModuleType) -> list[Any]:
    """The real sessions, read once for the module."""
    sessions: list[Any] = gen.load_sessions(SHARED)
    return sessions


def _message_ids(export: Path) -> list[str]:
    return [
        node
        for conversation in json.loads(export.read_text())
        for node, v in conversation["mapping"].items()
        if v["message"] is not None
    ]


def test_generated_export_ingests_with_exact_count_and_distinct_ids(
    tmp_path: Path, gen: ModuleType, sessions: list[Any]
) -> None:
    """2,000 generated messages ingest as exactly 2,000 distinct messages, none quarantined, texts mostly distinct."""
    generator = gen.RealGenerator(5, 2000, sessions=sessions, stats=True)
    export = tmp_path / "conversations.json"
    written, conversations, _ = gen.generate(export, 2000, 5, generator=generator, report=lambda *a, **k: None)
    assert written == 2000

    settings = Settings(data_dir=tmp_path / "data")
    archive = open_archive(settings.archive_path)
    staging = open_staging(settings.staging_path)
    run_id = open_run(
        staging, stages=["ingest"], exports=[str(export)], settings=settings.public_dump(), code_version="test"
    )
    result = ingest_run(archive, staging, run_id=run_id, settings=settings, exports=[export])

    assert result.counts["quarantined"] == 0
    assert archive_stats(archive)["messages"] == 2000
    assert archive.execute("SELECT COUNT(DISTINCT uuid) FROM messages").fetchone()[0] == 2000
    assert archive.execute("SELECT COUNT(*) FROM conversations").fetchone()[0] == conversations
    assert generator.report()["distinct_share"] > 0.9


def test_same_seed_same_bytes_other_seed_no_shared_ids(tmp_path: Path, gen: ModuleType, sessions: list[Any]) -> None:
    """Deterministic for a seed; an export made with another seed shares no message id with it."""
    paths = []
    for name, seed in (("a", 1), ("b", 1), ("c", 2)):
        paths.append(tmp_path / f"{name}.json")
        generator = gen.RealGenerator(seed, 300, sessions=sessions)
        gen.generate(paths[-1], 300, seed, generator=generator, report=lambda *a, **k: None)
    assert paths[0].read_bytes() == paths[1].read_bytes()
    assert not set(_message_ids(paths[0])) & set(_message_ids(paths[2]))
    assert len(_message_ids(paths[2])) == 300


def test_real_sessions_alternate_and_drive_conversation_lengths(gen: ModuleType, sessions: list[Any]) -> None:
    """Every loaded real session starts with the user and alternates; conversations use their lengths."""
    assert len(sessions) > 2000
    for session in sessions:
        roles = [role for role, _ in session]
        assert roles == ["user", "assistant"] * (len(roles) // 2)
    generator = gen.RealGenerator(3, 100_000, sessions=sessions)
    assert generator.exchange_count() in {len(s) // 2 for s in sessions}
