"""Which graph to load: the one NEO4J_URI (or CHATMEM_LOAD__URI) names, else the local ArcadeDB server.

No URI and the local server switched off (CHATMEM_LOAD__LOCAL_SERVER=false) means no graph: the stage is skipped
and says so. The target's `key` names it in staging; it never contains the password (nor a password a user
wrote into the URI).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from clients.graph_errors import LocalServerError
from clients.graph_server import DEFAULT_DATABASE, USER, LocalServer

if TYPE_CHECKING:
    from clients.graph import Target
    from contracts.settings import Settings

NO_GRAPH = (
    "graph: not loaded: no NEO4J_URI is set and the local server is off (CHATMEM_LOAD__LOCAL_SERVER=false);"
    " set NEO4J_URI or turn the local server on"
)


def local_server(settings: Settings) -> LocalServer:
    """The local server of this data dir, configured from the settings."""
    load = settings.load
    return LocalServer(
        settings.graph_dir,
        database=load.database or DEFAULT_DATABASE,
        bolt_port=load.local_bolt_port,
        http_port=load.local_http_port,
        heap=load.local_heap,
        java=load.java,
        start_timeout_s=load.local_start_timeout_s,
    )


def resolve_target(settings: Settings, *, start: bool) -> tuple[Target | None, list[str]]:
    """The target graph and the lines that announce it; (None, [why]) when no graph is configured.

    With `start`, a local server that is not running is started (the run that needed it stops it as it ends:
    clients.graph_server.left_as_found).
    """
    from clients.graph import Target, redact  # the neo4j driver: not for `graph status` of the local server

    load = settings.load
    if load.uri:
        uri = redact(load.uri)
        password = load.password.get_secret_value() if load.password is not None else ""
        key = f"{uri}#{load.database or ''}"
        return Target(load.uri, load.user, password, load.database, key), []
    if not load.local_server:
        return None, [NO_GRAPH]
    server = local_server(settings)
    if start:
        info, started = server.start()
    else:
        found = server.status()
        if found is None:
            raise LocalServerError(
                f"the local graph server ({server.directory}) is not running: start it with `chatmem graph up`"
            )
        info, started = found, False
    # A server the run started is stopped when the run ends (clients.graph_server.left_as_found, flows/cli.py).
    if started:
        how = (
            "started the local ArcadeDB server for this run (stopped when it ends; `chatmem graph up` keeps one"
            " running for queries)"
        )
    elif server.stops_with_the_run():  # a killed run's server, left running: this run stops it as its own
        how = "using the local ArcadeDB server an earlier run started and left running (stopped when this run ends)"
    else:
        how = "using the local ArcadeDB server (running before this run: `chatmem graph down` stops it)"
    note = f"graph: {how} at {info.uri}, database {info.database}; set NEO4J_URI to load into Neo4j"
    key = f"local:{server.directory}#{info.database}"
    return Target(info.uri, USER, server.password(), info.database, key, local=True), [note]
