"""Contracts: the strict-schema validator, strict models, settings, golden schemas."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from pydantic import BaseModel, ConfigDict, Field

from contracts import StrictBase
from contracts.concepts import SCHEMA_VERSION, ConceptHypothesis, ExtractionResponse
from contracts.errors import StageError
from contracts.mcp import (
    MCP_SCHEMA_VERSION,
    ConceptSearchRequest,
    ConceptSearchResult,
    ConversationRequest,
    ConversationResult,
    TimelineRequest,
    TimelineResult,
    TopicsRequest,
    TopicsResult,
)
from contracts.records import ExportConversation, QuarantineRecord
from contracts.results import StageResult
from contracts.schema_check import assert_strict_model, strict_schema_violations
from contracts.settings import Settings

GOLDEN = Path(__file__).parent / "golden"
# Bump a model's version (then run python tests/golden/regenerate.py) whenever its schema changes.
GOLDEN_MODELS: dict[str, tuple[type[BaseModel], int]] = {
    "ExportConversation": (ExportConversation, 1),
    "QuarantineRecord": (QuarantineRecord, 1),
    "StageResult": (StageResult, 1),
    "ConceptHypothesis": (ConceptHypothesis, SCHEMA_VERSION),
    "ExtractionResponse": (ExtractionResponse, SCHEMA_VERSION),
    # the MCP tools' arguments and structured results (what agents read)
    **{
        model.__name__: (model, MCP_SCHEMA_VERSION)
        for model in (
            ConceptSearchRequest,
            ConceptSearchResult,
            ConversationRequest,
            ConversationResult,
            TimelineRequest,
            TimelineResult,
            TopicsRequest,
            TopicsResult,
        )
    },
}


class _Leaf(StrictBase):
    name: str = Field(description="n")
    note: str | None = Field(description="optional values are null unions, still required")


class _Strict(StrictBase):
    leaves: list[_Leaf] = Field(description="nested objects are checked too")


class _LooseLeaf(BaseModel):
    model_config = ConfigDict(extra="ignore")
    name: str


class _WithDefault(StrictBase):
    name: str = "x"


class _Nested(StrictBase):
    items: list[_LooseLeaf]
    mapping: dict[str, int]


def test_strict_model_passes() -> None:
    """A StrictBase tree with every field required is strict at every depth."""
    schema = assert_strict_model(_Strict)
    assert schema["additionalProperties"] is False


def test_default_makes_a_property_not_required() -> None:
    """A field with a default is not in `required`: named as a violation."""
    assert strict_schema_violations(_WithDefault.model_json_schema()) == ["#: properties not required: name"]


def test_violations_name_the_path_at_depth() -> None:
    """A loose nested model and a dict field are reported with their JSON paths."""
    problems = strict_schema_violations(_Nested.model_json_schema())
    assert "#/$defs/_LooseLeaf: additionalProperties must be false" in problems
    assert any(p.startswith("#/properties/mapping") for p in problems)
    with pytest.raises(ValueError, match="_LooseLeaf"):
        assert_strict_model(_Nested)


def test_settings_read_nested_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """CHATMEM_DATA_DIR and CHATMEM_INGEST__BATCH_SIZE reach the settings object when it is created."""
    monkeypatch.setenv("CHATMEM_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("CHATMEM_INGEST__BATCH_SIZE", "7")
    settings = Settings()
    assert settings.data_dir == tmp_path and settings.ingest.batch_size == 7
    assert settings.archive_path == tmp_path / "archive.db"


def test_a_chatmem_variable_naming_no_section_is_warned_about_once(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """pydantic-settings ignores CHATMEM_EXTRAKT__BATCH_SIZE (no such section) without a word: chatmem names it,
    once per process, and the known sections; a known section's variable is not named."""
    import contracts.settings as settings_module

    monkeypatch.setattr(settings_module, "_WARNED", set())
    monkeypatch.setenv("CHATMEM_EXTRAKT__BATCH_SIZE", "3")
    monkeypatch.setenv("CHATMEM_LLM__API_KEY", "sk-not-a-setting")
    monkeypatch.setenv("CHATMEM_INGEST__BATCH_SIZE", "7")
    with caplog.at_level("WARNING", logger="chatmem.settings"):
        first = Settings()
        Settings()
    named = [r.getMessage() for r in caplog.records if r.name == "chatmem.settings"]
    assert len(named) == 2 and first.ingest.batch_size == 7
    assert named[0].startswith("CHATMEM_EXTRAKT__BATCH_SIZE is not a chatmem setting (ignored)")
    assert named[1].startswith("CHATMEM_LLM__API_KEY is not a chatmem setting") and "CHATMEM_EXTRACT" in named[1]
    assert "sk-not-a-setting" not in " ".join(named)


def test_a_chatmem_variable_is_named_as_unknown_by_its_section_whatever_its_case(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """pydantic-settings reads CHATMEM_* names ignoring case: `CHATMEM_Ingest__batch_size` sets the batch size, so
    it is not called ignored; `chatmem_extrakt__batch_size` is ignored like its upper-case spelling, and named."""
    import contracts.settings as settings_module

    monkeypatch.setattr(settings_module, "_WARNED", set())
    for name in [n for n in os.environ if n.upper().startswith("CHATMEM_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("CHATMEM_Ingest__batch_size", "7")
    monkeypatch.setenv("chatmem_extrakt__batch_size", "3")
    with caplog.at_level("WARNING", logger="chatmem.settings"):
        settings = Settings()
    named = [r.getMessage() for r in caplog.records if r.name == "chatmem.settings"]
    assert settings.ingest.batch_size == 7
    assert len(named) == 1 and named[0].startswith("chatmem_extrakt__batch_size is not a chatmem setting"), named


def test_every_settings_field_has_a_description() -> None:
    """Each setting documents itself (the CLI and docs read these)."""

    def fields(model: type[BaseModel]) -> list[tuple[str, str | None]]:
        out = []
        for name, info in model.model_fields.items():
            out.append((name, info.description))
            annotation = info.annotation
            if isinstance(annotation, type) and issubclass(annotation, BaseModel):
                out.extend(fields(annotation))
        return out

    missing = [name for name, description in fields(Settings) if not description]
    assert missing == []


def test_stage_error_names_stage_run_and_rerun_command() -> None:
    """A stage failure says which stage, which run and how to re-run."""
    error = StageError("ingest", "r1", "boom")
    assert str(error) == "stage ingest failed in run r1: boom (re-run: chatmem stage ingest --run-id r1)"


@pytest.mark.parametrize("name", sorted(GOLDEN_MODELS))
def test_schema_matches_golden_file(name: str) -> None:
    """A contract's JSON schema only changes together with a version bump and a new golden file."""
    model, version = GOLDEN_MODELS[name]
    golden = GOLDEN / f"{name}.v{version}.json"
    assert golden.exists(), f"no golden schema {golden.name}: run python tests/golden/regenerate.py"
    expected = json.loads(golden.read_text())
    assert model.model_json_schema() == expected, (
        f"{name} schema changed: bump its version in GOLDEN_MODELS and run python tests/golden/regenerate.py"
    )


def test_the_llm_response_schema_is_strict() -> None:
    """ExtractionResponse (with ConceptHypothesis inside) passes the strict structured-outputs check."""
    schema = assert_strict_model(ExtractionResponse)
    assert schema["required"] == ["hypotheses", "facts"]


def test_public_dump_strips_credentials_from_every_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    """A token written into an endpoint URL never reaches the run ledger."""
    monkeypatch.setenv("CHATMEM_EXTRACT__LLM__BASE_URL", "https://me:sk-secret@llm.example/v1")
    monkeypatch.setenv("CHATMEM_EXTRACT__LLM__MODEL", "m")
    monkeypatch.setenv("CHATMEM_EMBED__ENDPOINT__BASE_URL", "https://me:emb-secret@emb.example/v1")
    monkeypatch.setenv("CHATMEM_EMBED__ENDPOINT__MODEL", "e")
    dumped = json.dumps(Settings().public_dump())
    assert "sk-secret" not in dumped and "emb-secret" not in dumped
    assert "llm.example/v1" in dumped and "emb.example/v1" in dumped


def test_every_chatmem_error_survives_pickling_with_its_class_text_and_attributes() -> None:
    """A stage run in its own process (flows/stage_process.py) sends its error back pickled: a StageError or an
    ExportError, whose __init__ takes more than the message, must come back as itself (not a RuntimeError)."""
    import pickle

    from contracts import errors

    made = [
        errors.ChatmemError("plain"),
        errors.ConfigError("bad setting"),
        errors.ExportError("a.json", "truncated"),
        errors.MalformedExportError("a.json", "not JSON"),
        errors.UnsupportedFormatError("a.json", "slack"),
        errors.UnsafeArchiveError("a.zip", "zip-slip"),
        errors.ExportsError([errors.ExportError("a.json", "empty"), errors.MalformedExportError("b.json", "not JSON")]),
        errors.StageError("concepts", "r1", "concept store check failed", "chatmem run --from concepts"),
        errors.StateError("staging.db is damaged"),
        errors.BusyError("run r0 holds it"),
    ]
    assert {type(e) for e in made} >= {errors.ChatmemError, *_subclasses(errors.ChatmemError, errors.__name__)}
    for error in made:
        back = pickle.loads(pickle.dumps(error))
        assert type(back) is type(error) and str(back) == str(error) and back.args == error.args
        assert vars(back) == vars(error) and back.exit_code == error.exit_code
    stage = pickle.loads(pickle.dumps(made[7]))
    assert (stage.stage, stage.run_id, stage.cause, stage.rerun_hint) == (
        "concepts",
        "r1",
        "concept store check failed",
        "chatmem run --from concepts",
    )


def _subclasses(base: type, module: str) -> set[type]:
    found = {c for c in base.__subclasses__() if c.__module__ == module}
    return found.union(*(_subclasses(c, module) for c in found))
