"""Helpers of the load tests: the session's Bolt server wrapper, a fresh database's settings, small exports,
and the ingest and load stages called directly (no Prefect). The fixtures are in tests/graph_fixtures.py.
"""

from __future__ import annotations

import itertools
import json
import os
import signal
import time
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from clients.graph import Graph, Target
from clients.graph_server import USER, LocalServer, ServerInfo
from contracts.results import StageResult
from contracts.settings import Settings
from staging.archive import open_archive
from staging.ledger import open_run, open_staging

_NAMES = itertools.count(1)


@dataclass
class BoltServer:
    """The session's server and what tests do with it."""

    server: LocalServer

    @property
    def info(self) -> ServerInfo:
        info = self.server.status()
        assert info is not None, "the test server is not running"
        return info

    def ensure_up(self) -> ServerInfo:
        info, _ = self.server.start()
        return info

    def kill(self) -> None:
        """SIGKILL the Java process, as a crash would."""
        pid = self.info.pid
        os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 30
        while self.server.status() is not None and time.monotonic() < deadline:
            time.sleep(0.05)

    def new_database(self) -> str:
        name = f"t{os.getpid()}_{next(_NAMES)}"
        self.server.create_database(name)
        return name


@dataclass
class GraphEnv:
    """A fresh database on the session server, and settings that point the load stage at it."""

    bolt: BoltServer
    database: str
    uri: str  # stays the same across a kill and restart: the server keeps its ports

    @property
    def password(self) -> str:
        return self.bolt.server.password()

    def load_settings(self, **overrides: Any) -> dict[str, Any]:
        values = {"uri": self.uri, "user": USER, "password": self.password, "database": self.database}
        return {**values, **overrides}

    def settings(self, data_dir: Path, **overrides: Any) -> Settings:
        return Settings(data_dir=data_dir, load=self.load_settings(**overrides))

    def env(self, monkeypatch: pytest.MonkeyPatch, **overrides: str) -> None:
        """Point the CLI at this database through the standard NEO4J_* variables."""
        values = {"NEO4J_URI": self.uri, "NEO4J_USER": USER, "NEO4J_PASSWORD": self.password}
        values |= {"NEO4J_DATABASE": self.database, **overrides}
        for name, value in values.items():
            monkeypatch.setenv(name, value)

    def target(self) -> Target:
        return Target(self.uri, USER, self.password, self.database, key=f"test#{self.database}")

    def query(self, cypher: str, **params: Any) -> list[dict[str, Any]]:
        with Graph(self.target()) as graph:
            return graph.run(cypher, **params)

    def counts(self) -> dict[str, dict[str, int]]:
        """{"nodes": {label: n}, "edges": {type: n}} as the graph reports them (zero counts left out)."""
        with Graph(self.target()) as graph:
            graph.check()
            nodes, edges = graph.graph_counts()
        return {"nodes": {k: v for k, v in nodes.items() if v}, "edges": {k: v for k, v in edges.items() if v}}


def write_branchy_jsonl(path: Path, conversations: int = 3, turns: int = 6, *, edit: bool = False) -> Path:
    """A JSONL export whose conversations each have a side branch of two messages off the second turn.

    With `edit`, the same export one day later: the first message's text changed and a new reply to the second
    turn became the active leaf, so the old third-to-last turns drop off the active path.
    """
    lines = []
    for c in range(conversations):
        conv = f"c{c}"
        for t in range(turns):
            text = f"turn {t} of {conv}" + (" (edited)" if edit and t == 0 else "")
            role = "user" if t % 2 == 0 else "assistant"
            lines.append(
                {
                    "conversation_id": conv,
                    "id": f"m{t}",
                    "role": role,
                    "text": text,
                    "parent_id": f"m{t - 1}" if t else None,
                    "created_at": f"2024-05-0{1 + c}T10:{t:02d}:00Z",
                }
            )
        lines.append(
            {
                "conversation_id": conv,
                "id": "alt",
                "role": "assistant",
                "text": "an earlier reply",
                "parent_id": "m1",
                "created_at": f"2024-05-0{1 + c}T09:00:00Z",
            }
        )
        lines.append(
            {
                "conversation_id": conv,
                "id": "alt2",
                "role": "user",
                "text": "and a follow-up",
                "parent_id": "alt",
                "created_at": f"2024-05-0{1 + c}T09:01:00Z",
            }
        )
        if edit:
            lines.append(
                {
                    "conversation_id": conv,
                    "id": "new",
                    "role": "assistant",
                    "text": "a newer reply",
                    "parent_id": "m1",
                    "created_at": f"2024-05-0{1 + c}T11:00:00Z",
                }
            )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def ingest(settings: Settings, *exports: Path, run_id: str | None = None) -> str:
    """Run the ingest stage (no Prefect) into the settings' data dir; returns the run id."""
    from stage_support import ingest_stage

    with closing(open_archive(settings.archive_path)) as archive, closing(open_staging(settings.staging_path)) as st:
        run_id = open_run(
            st,
            stages=["ingest", "load"],
            exports=[str(p) for p in exports],
            settings=settings.public_dump(),
            code_version="test",
            run_id=run_id,
        )
        ingest_stage.run(archive, st, run_id=run_id, settings=settings, exports=list(exports))
    return run_id


def load(settings: Settings, run_id: str, **kwargs: Any) -> StageResult:
    """Run the load stage (no Prefect) for `run_id`."""
    from stage_support import load_stage

    with closing(open_archive(settings.archive_path)) as archive, closing(open_staging(settings.staging_path)) as st:
        return load_stage.run(archive, st, run_id=run_id, settings=settings, **kwargs)


def expected(settings: Settings) -> dict[str, dict[str, int]]:
    """What staging says the graph should hold (zero counts left out)."""
    from load.inputs import expected_counts

    with closing(open_archive(settings.archive_path)) as archive, closing(open_staging(settings.staging_path)) as st:
        found = expected_counts(archive, st)
    return {kind: {k: v for k, v in counts.items() if v} for kind, counts in found.items()}
