"""The real Bolt server for the load tests: one local ArcadeDB server per session, a fresh database per test.

A pytest plugin: test modules declare `pytest_plugins = ["tests.graph_fixtures"]` and import helpers from
tests/graph_helpers.py. The server is started by the same code as `chatmem graph up` (clients.graph_server.LocalServer)
in a temp dir and stopped at the end of the session. A test may kill or stop it: the next test that asks for
`graph` gets it back, on the same ports.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from clients.graph_server import LocalServer
from contracts.settings import NEO4J_ENV
from tests.graph_helpers import BoltServer, GraphEnv


@pytest.fixture(scope="session")
def bolt_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BoltServer]:
    """One local ArcadeDB Bolt server for the whole session (about 2-5 s to start)."""
    server = LocalServer(tmp_path_factory.mktemp("graph-server"), heap="1g", start_timeout_s=120)
    server.start()
    try:
        yield BoltServer(server)
    finally:
        server.stop()


@pytest.fixture
def graph(bolt_server: BoltServer, monkeypatch: pytest.MonkeyPatch) -> GraphEnv:
    """A fresh, empty database on the (running) session server; no NEO4J_* variable of the developer's leaks in."""
    for name in NEO4J_ENV:
        monkeypatch.delenv(name, raising=False)
    info = bolt_server.ensure_up()
    return GraphEnv(bolt_server, bolt_server.new_database(), info.uri)
