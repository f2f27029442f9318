"""Settings: one pydantic-settings object with a section per stage, and `recall` for the query side.

Nothing reads the environment at import time: call `Settings()` (or `load_settings`) when you need values.
Environment variables use the prefix `CHATMEM_` and `__` between section and field, for example
`CHATMEM_INGEST__BATCH_SIZE=5000`; `CHATMEM_DATA_DIR` sets the data directory.

One module per section (or per group of stages), all re-exported here: `from contracts.settings import Settings,
MemorySettings` works as before the split.

    ingest.py    IngestSettings                 the ingest stage
    llm.py       LLMSettings                    the endpoint extract, topic names and recall's expand step call
    extract.py   Segment/Extract/Concepts/GardenSettings
    embed.py     EmbedEndpoint/Embed/ClusterSettings
    memory.py    MemorySettings                 the cues stage: how the graph is built (in its fingerprint)
    recall.py    RecallSettings                 recall, MCP, evaluation: no stage reads it (in no fingerprint)
    load.py      LoadSettings, NEO4J_ENV        the load stage and the standard Neo4j variables
    runner.py    Pipeline/RunnerSettings        how the pipeline runs, never what a stage computes
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, SecretStr, model_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from contracts.redact import redact, remember_environment_secrets, remember_secret, remember_uri_secrets
from contracts.redact import redact_uri as redact_uri  # re-exported: older callers import it from here
from contracts.settings.embed import ClusterSettings as ClusterSettings
from contracts.settings.embed import EmbedEndpointSettings as EmbedEndpointSettings
from contracts.settings.embed import EmbedSettings as EmbedSettings
from contracts.settings.extract import ConceptsSettings as ConceptsSettings
from contracts.settings.extract import ExtractSettings as ExtractSettings
from contracts.settings.extract import GardenSettings as GardenSettings
from contracts.settings.extract import SegmentSettings as SegmentSettings
from contracts.settings.ingest import IngestSettings as IngestSettings
from contracts.settings.llm import LLMSettings as LLMSettings
from contracts.settings.load import NEO4J_ENV as NEO4J_ENV
from contracts.settings.load import LoadSettings as LoadSettings
from contracts.settings.load import Neo4jEnvSource
from contracts.settings.memory import MemorySettings as MemorySettings
from contracts.settings.recall import RECALL_FIELDS as RECALL_FIELDS
from contracts.settings.recall import RecallSettings as RecallSettings
from contracts.settings.runner import PipelineSettings as PipelineSettings
from contracts.settings.runner import RunnerSettings as RunnerSettings

DEFAULT_DATA_DIR = Path(".chatmem")


class Settings(BaseSettings):
    """All of chatmem's settings."""

    model_config = SettingsConfigDict(
        env_prefix="CHATMEM_", env_nested_delimiter="__", extra="forbid", validate_default=True
    )

    data_dir: Path = Field(
        default=DEFAULT_DATA_DIR,
        description="Directory holding archive.db and staging.db (env CHATMEM_DATA_DIR).",
    )
    ingest: IngestSettings = Field(default_factory=IngestSettings, description="Ingest stage settings.")
    segment: SegmentSettings = Field(default_factory=SegmentSettings, description="Segment stage settings.")
    extract: ExtractSettings = Field(default_factory=ExtractSettings, description="Extract stage settings.")
    concepts: ConceptsSettings = Field(default_factory=ConceptsSettings, description="Concepts stage settings.")
    garden: GardenSettings = Field(default_factory=GardenSettings, description="Garden stage settings.")
    embed: EmbedSettings = Field(default_factory=EmbedSettings, description="Embed stage settings.")
    cluster: ClusterSettings = Field(default_factory=ClusterSettings, description="Cluster stage settings.")
    memory: MemorySettings = Field(default_factory=MemorySettings, description="Cues stage settings (the graph built).")
    recall: RecallSettings = Field(
        default_factory=RecallSettings, description="Recall settings (read by no stage: changing one rebuilds nothing)."
    )
    load: LoadSettings = Field(default_factory=LoadSettings, description="Graph load stage settings.")
    pipeline: PipelineSettings = Field(default_factory=PipelineSettings, description="Pipeline settings.")
    runner: RunnerSettings = Field(default_factory=RunnerSettings, description="Where heavy batches run (Dask).")

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """The standard NEO4J_* variables come right after chatmem's own environment variables."""
        return init_settings, env_settings, Neo4jEnvSource(settings_cls), dotenv_settings, file_secret_settings

    @model_validator(mode="before")
    @classmethod
    def _recall_moved(cls, data: Any) -> Any:
        """Recall's settings moved from `memory` to `recall`: CHATMEM_MEMORY__<FIELD> (or memory={...}) still sets
        them (CHATMEM_RECALL__<FIELD> wins when both are set). recall.key_roles is memory.key_roles, never set."""
        if not isinstance(data, dict):
            return data
        recall = data.get("recall")
        if isinstance(recall, dict) and "key_roles" in recall:
            raise ValueError("recall.key_roles follows memory.key_roles: set CHATMEM_MEMORY__KEY_ROLES instead")
        memory = data.get("memory")
        if not isinstance(memory, dict) or not set(memory) & set(RECALL_FIELDS):
            return data
        moved = {name: value for name, value in memory.items() if name in RECALL_FIELDS}
        if isinstance(recall, RecallSettings):
            recall = recall.model_copy(update={k: v for k, v in moved.items() if k not in recall.model_fields_set})
        else:
            recall = {**moved, **(recall or {})}
        kept = {name: value for name, value in memory.items() if name not in RECALL_FIELDS}
        return {**data, "memory": kept, "recall": recall}

    @property
    def archive_path(self) -> Path:
        return self.data_dir / "archive.db"

    @property
    def staging_path(self) -> Path:
        return self.data_dir / "staging.db"

    @property
    def graph_dir(self) -> Path:
        """The local graph server's directory."""
        return self.load.local_dir if self.load.local_dir is not None else self.data_dir / "graph"

    def model_post_init(self, context: Any, /) -> None:
        """Every secret is remembered as soon as the settings are read, whatever its source: each SecretStr field
        at any depth, the URL credentials of the graph, and the variables the SDKs read by themselves
        (OPENAI_API_KEY): an endpoint that echoes the key then finds it masked in every writer."""
        self.recall = self.recall.model_copy(update={"key_roles": list(self.memory.key_roles)})
        _remember_secret_fields(self)
        remember_uri_secrets(self.load.uri)
        remember_uri_secrets(self.runner.dask_address)
        remember_environment_secrets(os.environ)
        _warn_unknown_environment(os.environ)

    def public_dump(self) -> dict[str, Any]:
        """Settings as JSON-able data for the run ledger: secret fields and URL credentials removed."""
        return section_dump(self)


NOT_SETTINGS = frozenset({"CHATMEM_SCREENSHOT_DIR"})  # read by the test suite's browser helper, not by chatmem
_WARNED: set[str] = set()


def unknown_environment(environ: Mapping[str, str]) -> list[str]:
    """CHATMEM_* variables that name no settings section, which pydantic-settings ignores without a word: a typo
    (`CHATMEM_EXTRAKT__BATCH_SIZE`) or a guessed name (`CHATMEM_LLM__API_KEY`) would otherwise change nothing
    silently. A wrong field inside a known section is already an error (extra="forbid"). Names are compared
    ignoring case, as pydantic-settings reads them (`CHATMEM_Ingest__batch_size` sets ingest.batch_size)."""
    sections = {name.upper() for name in Settings.model_fields}
    return sorted(
        name
        for name in environ
        if name.upper().startswith("CHATMEM_")
        and name.upper() not in NOT_SETTINGS
        and name.upper().removeprefix("CHATMEM_").split("__")[0] not in sections
    )


def _warn_unknown_environment(environ: Mapping[str, str]) -> None:
    for name in unknown_environment(environ):
        if name not in _WARNED:  # once per process: Settings is built many times
            _WARNED.add(name)
            sections = ", ".join(f"CHATMEM_{n.upper()}" for n in Settings.model_fields)
            logging.getLogger("chatmem.settings").warning(
                "%s is not a chatmem setting (ignored): settings are %s, sections with __FIELD", name, sections
            )


def section_dump(section: BaseModel) -> dict[str, Any]:
    """Any settings section (or the whole Settings) as JSON-able data with every secret removed: what a stage
    records in `stage_runs.settings`. Secret fields are dropped, URLs lose their user:password@ part."""
    data = section.model_dump(mode="json", exclude=_secret_fields(section))
    redacted: dict[str, Any] = redact(data)
    return redacted


def _remember_secret_fields(model: BaseModel) -> None:
    for name in type(model).model_fields:
        value = getattr(model, name)
        if isinstance(value, SecretStr):
            remember_secret(value.get_secret_value())
        elif isinstance(value, BaseModel):
            _remember_secret_fields(value)


def _secret_fields(model: BaseModel) -> dict[str, Any] | set[str]:
    """The `exclude` argument of model_dump that leaves out every SecretStr field, at any depth."""
    exclude: dict[str, Any] = {}
    for name in type(model).model_fields:
        value = getattr(model, name)
        if isinstance(value, SecretStr):
            exclude[name] = True
        elif isinstance(value, BaseModel):
            inner = _secret_fields(value)
            if inner:
                exclude[name] = inner
    return exclude
