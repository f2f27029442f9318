"""MCP over stdin/stdout where every line the client sends gets an answer.

The SDK's stdio transport drops a line it cannot read (not JSON, a lone surrogate escape its parser refuses,
JSON nested 100,000 deep) after logging it at debug level, and reads a request whose id is an object as a
notification, which is never answered: either way the client waits for its timeout. Here each line is screened
first (`screen`): one the SDK would read is passed on unchanged; any other is answered with a JSON-RPC error,
-32700 (parse error) or -32600 (invalid request), carrying the request's id when it has a usable one (a string
or an integer) and null otherwise, as JSON-RPC 2.0 says.

    serve_stdio_screened(lowlevel_server)    what ChatmemServer.run_stdio_async runs

The SDK's own `stdio_server` still owns stdout (it points fd 1 at stderr while serving, so a stray print cannot
corrupt the wire); stdin is read here. A refused line reaches the SDK as a marker line that fails its parsing,
and the relay between the transport and the server swaps the SDK's exception for the prepared reply: replies
go out through the SDK's one writer, in order.
"""

from __future__ import annotations

import io
import itertools
import json
import sys
from collections.abc import AsyncIterator
from typing import Any

import anyio
import mcp_types as types
from mcp.server.stdio import stdio_server
from mcp.shared._context_streams import create_context_streams
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

MARKER = "\x00chatmem-refused "  # a line no JSON parser accepts, carrying the number of a prepared reply
MAX_DETAIL = 200


def _error(request_id: str | int | None, code: int, message: str) -> types.JSONRPCError:
    detail = " ".join(message.split())[:MAX_DETAIL]
    return types.JSONRPCError(jsonrpc="2.0", id=request_id, error=types.ErrorData(code=code, message=detail))


def screen(line: str) -> types.JSONRPCError | None:
    """None when the SDK reads `line` as a message it will handle; else the error reply the client is owed."""
    text = line.strip()
    try:
        data: Any = json.loads(text)
    except RecursionError:
        return _error(None, types.PARSE_ERROR, "Parse error: JSON nested too deeply")
    except ValueError as exc:
        where = f" at character {exc.pos}" if isinstance(exc, json.JSONDecodeError) else ""
        reason = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
        return _error(None, types.PARSE_ERROR, f"Parse error: not JSON ({reason}{where})")
    request_id = data.get("id") if isinstance(data, dict) else None
    usable = isinstance(request_id, str) or (isinstance(request_id, int) and not isinstance(request_id, bool))
    if isinstance(data, dict) and request_id is not None and not usable:
        kind = type(request_id).__name__
        return _error(None, types.INVALID_REQUEST, f"Invalid request: id must be a string or an integer, not {kind}")
    try:
        types.jsonrpc_message_adapter.validate_json(text, by_name=False)
    except ValidationError as exc:
        first = exc.errors()[0]
        code = types.PARSE_ERROR if first["type"] == "json_invalid" else types.INVALID_REQUEST
        label = "Parse error" if code == types.PARSE_ERROR else "Invalid request"
        where = ".".join(str(part) for part in first["loc"])
        return _error(
            request_id if usable else None, code, f"{label}: {first['msg']}" + (f" ({where})" if where else "")
        )
    return None


class _ScreenedStdin:
    """The lines of stdin for the SDK's reader, a refused line replaced by a marker; its reply kept in `replies`."""

    def __init__(self) -> None:
        self.replies: dict[int, types.JSONRPCError] = {}
        self._numbers = itertools.count()
        text = io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace", newline="\n")
        self._file = anyio.wrap_file(text)

    async def __aiter__(self) -> AsyncIterator[str]:
        async for line in self._file:
            if not line.strip():
                continue  # a blank line is no message; the SDK would only log it
            reply = screen(line)
            if reply is None:
                yield line
                continue
            number = next(self._numbers)
            self.replies[number] = reply
            yield f"{MARKER}{number}\n"

    def reply_for(self, problem: Exception) -> types.JSONRPCError:
        """The prepared reply for the marker the SDK failed to read (a generic parse error for anything else)."""
        if isinstance(problem, ValidationError):
            for error in problem.errors():
                found = str(error.get("input", ""))
                if found.startswith(MARKER):
                    reply = self.replies.pop(int(found[len(MARKER) :].strip()), None)
                    if reply is not None:
                        return reply
        return _error(None, types.PARSE_ERROR, "Parse error: the message could not be read")


async def serve_stdio_screened(lowlevel: Any) -> None:
    """Run the SDK's low-level server over stdio, answering every unreadable line (see the module docstring)."""
    stdin = _ScreenedStdin()
    async with stdio_server(stdin=stdin) as (read_stream, write_stream):  # type: ignore[arg-type]
        send, receive = create_context_streams[SessionMessage | Exception](0)

        async def relay() -> None:
            async with send:
                async for item in read_stream:
                    if isinstance(item, Exception):
                        await write_stream.send(SessionMessage(stdin.reply_for(item)))
                    else:
                        await send.send(item)

        async with anyio.create_task_group() as group:
            group.start_soon(relay)
            await lowlevel.run(receive, write_stream, lowlevel.create_initialization_options())
            group.cancel_scope.cancel()
