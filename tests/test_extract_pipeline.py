"""The offline path end to end: real exports and the demo zip through ingest -> segment -> extract -> concepts,
as Prefect flows (the CLI's path), then `chatmem concepts` on the result.

One module-scoped run is shared by the read-only tests (a pipeline run costs seconds).
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from contracts.concepts import ConceptHypothesis
from contracts.results import StageResult
from contracts.settings import Settings
from flows.cli import cli

pytestmark = pytest.mark.prefect

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data" / "exports"
STAGES = ["ingest", "segment", "extract", "concepts"]
# Files beside a conversations.json and a deliberately broken sample are refused by ingest, by design.
NOT_EXPORTS = ("invalid-skeleton", "side-files", "shared_conversations.json", "model_comparisons.json")


def real_exports() -> list[Path]:
    base = SHARED if SHARED.exists() else ROOT / "tests" / "fixtures" / "exports"
    found = sorted(p for p in base.rglob("*.json") if not any(part in str(p) for part in NOT_EXPORTS))
    return [*found, ROOT / "demo" / "longmemeval-demo.zip"]


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Settings, str, list[StageResult]]]:
    from flows.pipeline import run_pipeline

    settings = Settings(data_dir=tmp_path_factory.mktemp("offline-path") / "data")
    run_id, results = run_pipeline(settings, real_exports(), STAGES, quiet=True)
    yield settings, run_id, results


def test_the_offline_path_runs_every_stage_on_the_real_exports(ran: tuple[Settings, str, list[StageResult]]) -> None:
    """Four stages succeed; segments, offline extractions and concepts are stored; zero duplicate titles."""
    _, _, results = ran
    by_stage = {r.stage: r for r in results}
    assert [r.stage for r in results] == STAGES and all(r.status == "succeeded" for r in results)
    assert by_stage["segment"].counts["segments_written"] > 300
    assert by_stage["extract"].counts["hypotheses_kept"] > 1000 and by_stage["extract"].counts["failed"] == 0
    assert by_stage["extract"].counts["tokens_per_1k_messages"] == 0
    assert by_stage["concepts"].counts["concepts_total"] > 500 and by_stage["concepts"].counts["duplicate_titles"] == 0


def test_every_stored_evidence_span_is_in_its_archived_message(ran: tuple[Settings, str, list[StageResult]]) -> None:
    """Nothing invented: each evidence text occurs (folded) in the message it names, from the offline extractor."""
    from extract.text import fold

    settings, _, _ = ran
    staging = sqlite3.connect(settings.staging_path)
    staging.execute("ATTACH DATABASE ? AS a", (str(settings.archive_path),))
    rows = staging.execute(
        "SELECT e.text, m.text, e.extractor FROM concept_evidence e LEFT JOIN a.messages m ON m.uuid = e.message_id"
    ).fetchall()
    assert rows and all(message is not None and fold(span) in fold(message) for span, message, _ in rows)
    assert {extractor for _, _, extractor in rows} == {"offline"}
    titles = staging.execute("SELECT lower(title), COUNT(*) FROM concepts GROUP BY 1 HAVING COUNT(*) > 1").fetchall()
    assert titles == []


def test_a_prompt_template_repeated_across_conversations_is_no_evidence(
    ran: tuple[Settings, str, list[StageResult]],
) -> None:
    """rainchinchao pastes one code-conversion preamble into many conversations ("I have the following original
    code that uses array indexing ...", "Do not use brackets for array indexing"): the concepts stage finds those
    sentences archive-wide and they are evidence of nothing, so "String concatenation", "Array indexing" and
    "Function calls" leave the archive's top concepts. spark-first's question pasted again with its data into
    three conversations ("nested json read in spark and give flatten data structure") is no template."""
    from extract.templates import scan_boilerplate
    from staging import template_state
    from staging.graph_quality import archive_top

    settings, _, results = ran
    if not (SHARED / "chatgpt" / "rainchinchao").exists():
        pytest.skip("the real exports are absent (read from ../shared/data)")
    staging, archive = sqlite3.connect(settings.staging_path), sqlite3.connect(settings.archive_path)
    found = scan_boilerplate(staging, archive).sentences  # read-only; the stage's kept state says the same
    assert set(template_state.found(staging)[0]) == found
    # The sentences found are those the segments' concepts cite: since the quoted function names
    # ("Multiplication_V") outrank the preamble's phrases, the preamble is found through the sentences naming them.
    assert any(sentence.startswith("Replace array indexing with function calls") for sentence in found)
    assert not any("nested json read in spark" in sentence for sentence in found)
    assert {r.stage: r for r in results}["concepts"].counts["boilerplate_dropped"] > 10
    top = {t.casefold() for t in archive_top(staging)}
    assert top and not top & {"string concatenation", "array indexing", "function calls", "conditional logic"}
    assert {"spark", "pyspark", "hive"} <= top


def test_a_rerun_makes_no_extractor_call_and_changes_no_concept(ran: tuple[Settings, str, list[StageResult]]) -> None:
    """Same dumps again: every stage skipped as unchanged; forced, ingest reads the dumps again and segment cuts
    them again (the same rows), still zero extractor calls (the cache), and concepts rebuilds its store from every
    extraction into the same concepts."""
    from flows.pipeline import run_pipeline

    settings, _, _ = ran
    _, results = run_pipeline(settings, real_exports(), STAGES, quiet=True)
    assert all(r.status == "skipped" and "unchanged since run" in r.notes[0] for r in results)
    before = _concept_rows(settings.staging_path)
    _, forced = run_pipeline(settings, real_exports(), STAGES, quiet=True, force=True)
    by_stage = {r.stage: r for r in forced}
    assert by_stage["ingest"].status == by_stage["segment"].status == "succeeded"
    assert by_stage["segment"].counts["segments_written"] == 0
    assert by_stage["extract"].status == "skipped" and by_stage["extract"].counts["extractor_calls"] == 0
    assert any("--force: concept store rebuilt" in note for note in by_stage["concepts"].notes)
    assert by_stage["concepts"].counts["hypotheses"] > 0
    assert _concept_rows(settings.staging_path) == before


def _concept_rows(staging_path: Path) -> list[tuple[Any, ...]]:
    """Every concept, without the run that wrote it."""
    with sqlite3.connect(staging_path) as conn:
        names = [r[1] for r in conn.execute("PRAGMA table_info(concepts)") if "run" not in r[1]]
        return sorted(tuple(r) for r in conn.execute(f"SELECT {', '.join(names)} FROM concepts"))


def _concepts_cli(settings: Settings, *args: str) -> Any:
    result = CliRunner().invoke(cli, ["--data-dir", str(settings.data_dir), "concepts", *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result


def test_concepts_json_is_a_list_of_concept_hypotheses(ran: tuple[Settings, str, list[StageResult]]) -> None:
    """`chatmem concepts --json` prints contract objects, filtered by --type and --state."""
    settings, _, _ = ran
    items = json.loads(_concepts_cli(settings, "--json", "--limit", "0").stdout)
    parsed = [ConceptHypothesis.model_validate(item) for item in items]
    assert len(parsed) > 500 and all(h.evidence_spans for h in parsed if h.state != "merged")
    entities = json.loads(_concepts_cli(settings, "--json", "--type", "entity", "--state", "active").stdout)
    assert entities and {(h["type"], h["state"]) for h in entities} == {("entity", "active")}


def test_concepts_text_lists_evidence_and_revision(ran: tuple[Settings, str, list[StageResult]]) -> None:
    """The text view names each concept with its state, revision and evidence lines."""
    settings, _, _ = ran
    text = _concepts_cli(settings, "--limit", "2").stdout
    assert "revision" in text and "    evidence " in text


def test_concepts_command_never_imports_the_engine(ran: tuple[Settings, str, list[StageResult]]) -> None:
    """`chatmem concepts` answers from staging.db alone: prefect and flows.pipeline stay unimported."""
    settings, _, _ = ran
    code = (
        "import sys\n"
        "from flows.cli import main\n"
        f"sys.argv = ['chatmem', '--data-dir', {str(settings.data_dir)!r}, 'concepts', '--limit', '1']\n"
        "code = 0\n"
        "try:\n    main()\nexcept SystemExit as exit_:\n    code = exit_.code or 0\n"
        "assert code == 0, f'chatmem concepts exited {code}'\n"
        "assert 'prefect' not in sys.modules and 'flows.pipeline' not in sys.modules, 'engine imported'\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip(), "chatmem concepts printed nothing"
