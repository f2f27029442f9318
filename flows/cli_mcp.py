"""`chatmem mcp`: serve the memory to agents over MCP (memory/mcp_server.py), read-only, no prefect.

stdio by default (what desktop agents launch); `--http PORT` serves streamable HTTP on 127.0.0.1 only, with the
URL on stderr. stdout belongs to the protocol in stdio mode, so every line this command prints goes to stderr.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from contracts.errors import ChatmemError
from flows.cli_data import no_data_dir

if TYPE_CHECKING:
    from flows.cli_app import App


@click.command("mcp")
@click.option(
    "--http",
    "http_port",
    type=click.IntRange(0, 65535),
    metavar="PORT",
    help="Serve streamable HTTP at http://127.0.0.1:PORT/mcp instead of stdio (0: a free port, printed on stderr).",
)
@click.pass_obj
def mcp_command(app: App, http_port: int | None) -> None:
    """Serve the memory to an agent over MCP: recall, search_concepts, get_conversation, timeline, topics.

    Read-only: archive.db and staging.db are opened read-only. With no option it speaks MCP on stdin/stdout
    (add it to an MCP client as a command); --http serves on 127.0.0.1 only, never another interface.

    \b
    Example: chatmem --data-dir ~/.chatmem mcp --http 8765
    """
    # The SDK (starlette, uvicorn, ...) loads only for this command, so the other commands stay quick.
    from memory.mcp_server import MemoryService, build_server, serve_http, serve_stdio

    settings = app.settings()
    if not settings.data_dir.exists():  # the words of every other read-only command (flows/cli_data.py)
        raise ChatmemError(no_data_dir(settings))
    service = MemoryService(settings)
    service.check()  # no memory at all: one line and exit 1 now, not an error on every tool call later
    server = build_server(service)
    if http_port is None:
        if not settings.pipeline.quiet:  # stderr: a client shows it in its server log, a person sees what runs
            click.echo(f"chatmem mcp: MCP over stdin/stdout, read-only, data dir {settings.data_dir}", err=True)
        serve_stdio(server)
    else:
        serve_http(server, http_port, lambda line: click.echo(line, err=True))
