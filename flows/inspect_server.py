"""`chatmem inspect`: Datasette over archive.db and staging.db, read-only, on 127.0.0.1.

Datasette opens each file with `?mode=ro` (a mutable database it never writes to), so a run can go on while
you browse. The metadata and canned queries come from `staging.browse`; a small plugin object adds what
Datasette cannot know on its own, because the two files are separate databases:

- links across them and within them: a message id anywhere (a table, a row page, a canned query) links to its
  message in archive.db, a conversation id to its conversation, a concept id to its concept, a segment id to
  its segment, and a concept's evidence count to its evidence (the `concept_evidence` canned query, which
  shows the messages and their conversation). Datasette's own foreign-key links appear on table pages only,
  and show a NULL title as "None": these links replace them;
- archive.db attached read-only as `archive` to staging.db's connections, so canned queries can join them.

Only requests addressed to a loopback name are answered (`loopback_only`): a web page that points its own
host name at 127.0.0.1 (DNS rebinding) sends its own name as Host and gets 421, as the MCP HTTP server does.

The messages table gets a search box from the FTS5 index (`staging.fts`), and the "Search messages" query
takes any text (`staging.fts.match_expression`, registered on every connection).
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from datasette import hookimpl
from datasette.app import Datasette
from datasette.plugins import pm
from datasette.utils import tilde_encode
from markupsafe import Markup, escape

from staging import fts
from staging.browse import metadata

PLUGIN_NAME = "chatmem-inspect"
READ_ONLY_NAME = "chatmem-inspect-read-only"
HOST = "127.0.0.1"
LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "[::1]"})
"""Host header names answered (with any port): what a browser on this machine sends for the URL printed."""

# column name -> (database, table) of the row it names, in either database and in canned query results
LINKS: dict[str, tuple[str, str]] = {
    "message_id": ("archive", "messages"),
    "first_message_id": ("archive", "messages"),
    "last_message_id": ("archive", "messages"),
    "uuid": ("archive", "messages"),
    "parent_id": ("archive", "messages"),
    "prev_id": ("archive", "messages"),
    "next_id": ("archive", "messages"),
    "conversation_id": ("archive", "conversations"),
    "concept_id": ("staging", "concepts"),
    "target_id": ("staging", "concepts"),
    "merged_into": ("staging", "concepts"),
    "segment_id": ("staging", "segments"),
}


class ChatmemPlugin:
    """Datasette hooks for one data dir (registered on the plugin manager as an object, not a module)."""

    def __init__(self, archive_path: Path) -> None:
        self.__name__ = PLUGIN_NAME  # Datasette lists plugins by their module's name
        self.archive_uri = f"file:{archive_path.absolute()}?mode=ro"
        self.has_archive = archive_path.exists()

    @hookimpl
    def prepare_connection(self, conn: Any, database: str, datasette: Datasette) -> None:
        fts.register(conn)  # chatmem_match(:q) of the "Search messages" query: any typed text searches
        if database == "staging" and self.has_archive:
            conn.execute("ATTACH DATABASE ? AS archive", (self.archive_uri,))

    @hookimpl
    def render_cell(
        self, row: Any, value: Any, column: str, table: str | None, database: str, datasette: Datasette
    ) -> Markup | None:
        if isinstance(value, dict):  # a foreign key on a table page: {"value": id, "label": its label column}
            value = value.get("value")
        if value is None or isinstance(value, bytes):
            return None
        if database == "staging" and table == "concepts" and column == "evidence_count":
            concept = row["concept_id"]
            url = datasette.urls.database("staging") + "/concept_evidence?" + urlencode({"concept_id": concept})
            return Markup(f'<a href="{escape(url)}" class="chatmem-evidence">{escape(value)} evidence</a>')
        target = LINKS.get(column)
        if target is None:
            return None
        other_db, other_table = target
        if database == other_db and table == other_table:
            return None  # the row's own key: Datasette links it already
        url = datasette.urls.table(other_db, other_table) + "/" + tilde_encode(str(value))
        return Markup(f'<a href="{escape(url)}">{escape(value)}</a>')


class ReadOnlyPlugin:
    """Only GET and HEAD reach Datasette: anything else (POST /archive/sources/-/insert, a form) is 405 with
    one line, before any view runs; Datasette 0.65 has no write API, but the 404 it meant to answer became a
    500 (its default error handler asks rich for a traceback outside an `except` block, which raises)."""

    __name__ = READ_ONLY_NAME

    @hookimpl
    def asgi_wrapper(self, datasette: Datasette) -> Callable[[Any], Any]:
        def wrap(app: Any) -> Any:
            async def read_only(scope: dict[str, Any], receive: Any, send: Any) -> None:
                if scope.get("type") != "http" or scope.get("method") in ("GET", "HEAD"):
                    await app(scope, receive, send)
                    return
                body = b"chatmem inspect is read-only: only GET and HEAD\n"
                headers = [(b"content-type", b"text/plain; charset=utf-8"), (b"allow", b"GET, HEAD")]
                await send({"type": "http.response.start", "status": 405, "headers": headers})
                await send({"type": "http.response.body", "body": body})

            return read_only

        return wrap


def build(archive_path: Path, staging_path: Path) -> Datasette:
    """A Datasette over the databases that exist (at least one), with chatmem's metadata and plugin."""
    files = [str(p) for p in (archive_path, staging_path) if p.exists()]
    existing = pm.get_plugin(PLUGIN_NAME)
    if existing is not None:  # a second build in one process (tests): the newest data dir wins
        pm.unregister(existing, name=PLUGIN_NAME)
    pm.register(ChatmemPlugin(archive_path), name=PLUGIN_NAME)
    if pm.get_plugin(READ_ONLY_NAME) is None:
        pm.register(ReadOnlyPlugin(), name=READ_ONLY_NAME)
    # Datasette's default error handler prints a rich traceback with every local variable (about 170 lines)
    # for each error it answers, a rejected SQL statement included, and raises when called outside an
    # `except` block (a 404 from its router), turning that 404 into a 500. Without rich it answers the same
    # pages, prints nothing for a 4xx, and a plain traceback for a real 500.
    # (Imported here, after datasette.plugins: imported first, it registers itself half-initialised, hookless.)
    from datasette import handle_exception as default_handler

    default_handler.rich = None
    return Datasette(
        files=files,
        metadata=metadata(),
        settings={"sql_time_limit_ms": 5000, "truncate_cells_html": 400, "default_page_size": 50},
        cors=False,
    )


def host_is_loopback(host: str | None) -> bool:
    """Whether a Host header names this machine's loopback (`127.0.0.1:8001`, `localhost`, `[::1]:8001`)."""
    if not host:
        return False
    name = host.strip().lower()
    bracketed = name.startswith("[") and "]" in name  # [::1]:8001: the port follows the bracket
    return (name[: name.index("]") + 1] if bracketed else name.partition(":")[0]) in LOOPBACK_NAMES


def loopback_only(app: Any) -> Any:
    """ASGI middleware: an HTTP request whose Host is not a loopback name is answered 421 and never reaches
    Datasette (which would otherwise serve the chats and `?sql=` to any page that rebinds its name to 127.0.0.1)."""

    async def guarded(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope.get("type") in ("http", "websocket"):
            headers = dict(scope.get("headers") or [])
            host = headers.get(b"host", b"").decode("latin-1")
            if not host_is_loopback(host):
                body = b"Invalid Host header: chatmem inspect answers only 127.0.0.1, localhost and [::1]\n"
                if scope["type"] == "websocket":
                    await send({"type": "websocket.close", "code": 1008})
                    return
                await send(
                    {
                        "type": "http.response.start",
                        "status": 421,
                        "headers": [
                            (b"content-type", b"text/plain; charset=utf-8"),
                            (b"content-length", str(len(body)).encode()),
                        ],
                    }
                )
                await send({"type": "http.response.body", "body": body})
                return
        await app(scope, receive, send)

    return guarded


def bind(port: int | None) -> socket.socket:
    """A listening socket on 127.0.0.1 (port 0 or None: a free one), handed to the server as it is."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((HOST, port or 0))
    sock.listen(128)
    return sock


def serve(ds: Datasette, sock: socket.socket, announce: Callable[[str], None]) -> None:
    """Serve until interrupted (Ctrl-C); announces the URL once the server is listening."""
    import uvicorn

    asyncio.run(ds.invoke_startup())
    config = uvicorn.Config(loopback_only(ds.app()), log_level="warning", lifespan="on", access_log=False)
    server = uvicorn.Server(config)
    port = sock.getsockname()[1]
    announce(f"Datasette on http://{HOST}:{port}/ (archive.db and staging.db, read-only); Ctrl-C to stop")
    server.run(sockets=[sock])
