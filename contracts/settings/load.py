"""The load stage's settings, and the standard NEO4J_* variables read into them."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, SecretStr
from pydantic.fields import FieldInfo
from pydantic_settings import PydanticBaseSettingsSource


class LoadSettings(BaseModel):
    """Where and how the graph is loaded (Neo4j 5 over Bolt, or the local ArcadeDB Bolt server)."""

    model_config = ConfigDict(extra="forbid")

    uri: str | None = Field(
        default=None,
        description="Bolt URI of the graph, e.g. neo4j://host:7687 (env NEO4J_URI or CHATMEM_LOAD__URI). Unset: "
        "the local ArcadeDB server under the data dir is used (if local_server is on).",
    )
    user: str = Field(default="neo4j", description="Graph user (env NEO4J_USER / NEO4J_USERNAME).")
    password: SecretStr | None = Field(
        default=None, description="Graph password (env NEO4J_PASSWORD). Never logged nor written to staging."
    )
    database: str | None = Field(
        default=None,
        description="Graph database (env NEO4J_DATABASE); unset: the server's default (Neo4j) or 'chatmem' (local).",
    )
    batch_size: int = Field(default=10_000, ge=1, le=100_000, description="Rows per UNWIND batch (one transaction).")
    max_batch_bytes: int = Field(
        default=8 * 1024**2,
        ge=64 * 1024,
        description="A batch is cut early at about this many bytes of property data (ArcadeDB refuses Bolt "
        "messages over 16 MiB).",
    )
    retries: int = Field(default=3, ge=0, le=20, description="Retries of a batch that failed on a transient error.")
    retry_backoff_s: float = Field(
        default=1.0, ge=0, description="First wait before a retry, in seconds; doubled after each one."
    )
    connect_timeout_s: float = Field(default=10.0, gt=0, description="Timeout of one connection attempt, seconds.")
    local_server: bool = Field(
        default=True,
        description="With no uri: start (or reuse) the local ArcadeDB Bolt server. Off: the load stage is skipped.",
    )
    local_dir: Path | None = Field(
        default=None, description="Directory of the local server (databases, password, log); default <data_dir>/graph."
    )
    local_bolt_port: int = Field(default=0, ge=0, le=65535, description="Local server's Bolt port; 0: a free one.")
    local_http_port: int = Field(default=0, ge=0, le=65535, description="Local server's HTTP port; 0: a free one.")
    local_heap: str = Field(
        default="2g", pattern=r"^[0-9]+[kKmMgG]$", description="Local server's Java max heap (-Xmx), e.g. 2g."
    )
    local_start_timeout_s: float = Field(
        default=90.0, gt=0, description="How long to wait for the local server to answer before giving up."
    )
    java: Path | None = Field(
        default=None, description="Java executable for the local server; default: the JRE bundled in arcadedb-embedded."
    )


NEO4J_ENV = {
    "NEO4J_URI": "uri",
    "NEO4J_USERNAME": "user",
    "NEO4J_USER": "user",
    "NEO4J_PASSWORD": "password",
    "NEO4J_DATABASE": "database",
}
"""The standard Neo4j variables, read into the `load` section (CHATMEM_LOAD__* win over them)."""


class Neo4jEnvSource(PydanticBaseSettingsSource):
    """Reads NEO4J_URI / NEO4J_USER / NEO4J_PASSWORD / NEO4J_DATABASE into `load`, when the settings are built."""

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False  # unused: __call__ returns the whole section at once

    def __call__(self) -> dict[str, Any]:
        found = {field: os.environ[name] for name, field in NEO4J_ENV.items() if os.environ.get(name)}
        return {"load": found} if found else {}
