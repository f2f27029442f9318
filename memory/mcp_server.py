"""The MCP server: the memory's agent interface, read-only, over stdio or streamable HTTP on 127.0.0.1.

    recall            RecallRequest         -> RecallResult         memory.service.Memory (the loaded index)
    search_concepts   ConceptSearchRequest  -> ConceptSearchResult  memory/queries.py
    get_conversation  ConversationRequest   -> ConversationResult   memory/queries.py
    timeline          TimelineRequest       -> TimelineResult       memory/timeline.py
    topics            TopicsRequest         -> TopicsResult         memory/queries.py

Every tool's parameters are the fields of its request contract (flat, each with its description and bounds), and
its structured output is the result contract, so an agent sees one schema and the code one source of truth.
Databases are opened read-only for each call (SQLite connections stay on the worker thread that made them); the
recall index is loaded once per process, on the first recall, and reloaded only when a newer cues run appears.
An error the agent can fix (an unknown id, no memory yet) comes back as a tool error with one readable line;
anything else is logged here and reported as a generic tool failure (the SDK keeps internals off the wire).
"""

from __future__ import annotations

import inspect
import logging
import socket
import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Annotated, Any, TypeVar, cast

import uvicorn
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp_types import ToolAnnotations
from pydantic import BaseModel, Field, ValidationError

from contracts.errors import ChatmemError
from contracts.mcp import (
    ConceptSearchRequest,
    ConceptSearchResult,
    ConversationRequest,
    ConversationResult,
    TimelineRequest,
    TimelineResult,
    TopicsRequest,
    TopicsResult,
)
from contracts.memory import RecallRequest, RecallResult
from contracts.settings import Settings
from memory import queries
from memory import timeline as timelines
from memory.mcp_stdio import serve_stdio_screened
from memory.service import Memory
from staging import agent_reads
from staging import memory as memory_store
from staging.db import connect_readonly
from staging.llm_calls import LLMCall

logger = logging.getLogger(__name__)

HOST = "127.0.0.1"  # never another interface: the memory is private, and the server has no authentication
HTTP_PATH = "/mcp"
Request = TypeVar("Request", bound=BaseModel)

INSTRUCTIONS = """chatmem: the user's past conversations with chat assistants, reconstructed as memory (read-only).
Start with `recall` for a question: it returns the relevant messages best first, each with its
message ids, conversation, time and why it was recalled. Then read around a piece with `get_conversation`
(conversation_id + around_message_id). `search_concepts` finds named projects, goals, people and events;
`timeline` shows how one concept evolved over time; `topics` gives an overview of what the conversations are about.
Pass `at` to recall the memory as it stood on a date."""


class MemoryService:
    """What the tools read: the data dir's two databases, and the recall index (loaded once, shared by threads)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._memory: Memory | None = None
        self._lock = threading.Lock()
        self._catalog: queries.ConceptCatalog | None = None
        self._catalog_lock = threading.Lock()

    def check(self) -> None:
        """Fail before serving when the data dir has no memory at all (ChatmemError, one line)."""
        for path in (self.settings.archive_path, self.settings.staging_path):
            if not path.exists():
                raise ChatmemError(
                    f"nothing in {self.settings.data_dir} yet ({path.name} does not exist): run `chatmem run EXPORT`"
                    " first, or point --data-dir / CHATMEM_DATA_DIR at an existing data dir"
                )

    @contextmanager
    def databases(self) -> Iterator[tuple[sqlite3.Connection, sqlite3.Connection]]:
        """(archive, staging), both opened read-only (mode=ro), closed afterwards."""
        self.check()
        archive = connect_readonly(self.settings.archive_path)
        try:
            staging = connect_readonly(self.settings.staging_path)
            try:
                yield archive, staging
            finally:
                staging.close()
        finally:
            archive.close()

    def memory(self, staging: sqlite3.Connection) -> Memory:
        """The latest cues run, opened once (memory.service.Memory) and reopened only when a newer run appears."""
        latest = memory_store.latest_run(staging)
        with self._lock:  # one load at a time; concurrent recalls wait for it instead of loading it twice
            if self._memory is None or (latest is not None and latest != self._memory.index.run_id):
                logger.info("memory - loading the recall index of run %s", latest)
                self._memory = Memory.open(self.settings, run_id=latest)
            return self._memory

    def catalog(self, staging: sqlite3.Connection) -> queries.ConceptCatalog:
        """The concept catalog search_concepts scores: built once per state of the concept store."""
        version = agent_reads.concepts_version(staging)
        with self._catalog_lock:
            if self._catalog is None or self._catalog.version != version:
                self._catalog = queries.concept_catalog(staging)
            return self._catalog

    # ------------------------------------------------------------ the tools' bodies

    def recall(self, request: RecallRequest) -> RecallResult:
        with self.databases() as (_, staging):
            memory = self.memory(staging)
        # Read-only: the expand step's LLM calls (recall.expand_with_llm) go to this server's log, not llm_calls.
        return memory.recall(request, on_call=log_call)

    def search_concepts(self, request: ConceptSearchRequest) -> ConceptSearchResult:
        with self.databases() as (archive, staging):
            return queries.search_concepts(staging, archive, request, self.catalog(staging))

    def get_conversation(self, request: ConversationRequest) -> ConversationResult:
        with self.databases() as (archive, _):
            return queries.get_conversation(archive, request)

    def timeline(self, request: TimelineRequest) -> TimelineResult:
        with self.databases() as (archive, staging):
            concepts = {row.concept_id: row for row in self.catalog(staging).rows}
            return timelines.timeline(staging, archive, request, concepts=concepts)

    def topics(self, request: TopicsRequest) -> TopicsResult:
        with self.databases() as (_, staging):
            return queries.topics(staging, request)


def one_line(tool: str, exc: ValidationError) -> str:
    """A validation error as one line an agent can act on: each bad field, what it must be, and what was sent."""
    problems = []
    for error in exc.errors():
        where = ".".join(str(part) for part in error["loc"] if part != "arguments") or "arguments"
        got = repr(error.get("input"))
        got = got if len(got) <= 40 else got[:37] + "..."
        message = " ".join(str(error["msg"]).split())
        problems.append(f"{where}: {message[:1].lower()}{message[1:]} (got {got})")
    return f"invalid arguments to {tool}: " + "; ".join(problems) + " - fix them and call again (see its input schema)"


class ChatmemServer(MCPServer[Any]):
    """The SDK's server, with argument errors as one line (the SDK sends pydantic's multi-line text), and every
    unreadable stdio line answered."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.request_models: dict[str, type[BaseModel]] = {}

    async def run_stdio_async(self) -> None:
        """stdio where a line the SDK cannot read still gets a JSON-RPC error reply (memory/mcp_stdio.py)."""
        await serve_stdio_screened(self._lowlevel_server)

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        model = self.request_models.get(name)
        if model is not None and set(arguments or {}) - set(model.model_fields):
            # the SDK drops arguments a tool does not take; the request contract forbids them (extra="forbid"),
            # so validating against it gives the same one line as an unknown key inside `scope`
            try:
                model.model_validate(arguments)
            except ValidationError as exc:
                raise ToolError(one_line(name, exc)) from exc
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(cause, ValidationError) and not isinstance(exc, UnexpectedToolError):
                raise ToolError(one_line(name, cause)) from cause
            raise


def log_call(call: LLMCall) -> None:
    logger.info("recall - expand-or-stop LLM call: %s, attempt %d, %.2f s", call.status, call.attempt, call.latency_s)


def _parameters(model: type[BaseModel]) -> list[inspect.Parameter]:
    """The request contract's fields as keyword parameters: type, bounds and description kept, defaults too."""
    parameters = []
    for name, field in model.model_fields.items():
        # Annotated[T, *bounds, description] built at run time: the SDK turns it into the tool's input schema.
        annotation = cast(Any, Annotated)[(field.annotation, *field.metadata, Field(description=field.description))]
        default = inspect.Parameter.empty if field.is_required() else field.get_default(call_default_factory=True)
        parameters.append(
            inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation)
        )
    return parameters


def contract_tool(
    server: MCPServer[Any],
    name: str,
    title: str,
    description: str,
    request_model: type[Request],
    result_model: type[BaseModel],
    body: Callable[[Request], BaseModel],
) -> None:
    """Register `body` as a read-only tool whose parameters are `request_model`'s fields."""

    def call(**arguments: Any) -> BaseModel:
        try:
            return body(request_model.model_validate(arguments))
        except ValidationError as exc:
            raise ToolError(one_line(name, exc)) from exc
        except ChatmemError as exc:
            raise ToolError(" ".join(str(exc).split())) from exc

    call.__signature__ = inspect.Signature(_parameters(request_model), return_annotation=result_model)  # type: ignore[attr-defined]
    call.__name__ = name
    if isinstance(server, ChatmemServer):
        server.request_models[name] = request_model
    server.add_tool(
        call,
        name=name,
        title=title,
        description=description,
        annotations=ToolAnnotations(
            title=title, read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
        ),
        structured_output=True,
    )


def build_server(service: MemoryService) -> MCPServer[Any]:
    """The MCP server with the five read-only tools over `service`."""
    server: MCPServer[Any] = ChatmemServer(
        "chatmem", title="chatmem memory", instructions=INSTRUCTIONS, version="1", log_level="WARNING"
    )
    contract_tool(
        server,
        "recall",
        "Recall from memory",
        "Reconstruct what the memory holds about a question: the relevant past messages within a token budget, "
        "best first (order=time: along each conversation), each with its message ids, conversation, time, score, "
        "rank and the activation path (query -> cue -> tag -> content) that brought it; `weak` marks a piece that "
        "holds under half of the question's information (its words weighed by rarity). Use `at` to ask as of a past "
        "date (nothing later is returned) and "
        "`scope` to search only some conversations, sources or a time window. `facts` lists what the user stated "
        "about the question as it stood at `at` (valid_from, valid_to, superseded); an empty result says why in "
        "`empty_reason`. A piece too big for the budget comes as a window around the question's words "
        "(`full_tokens` set) and `budget_note` says so, or names the next piece that did not fit. A user's message "
        "comes with the assistant's reply right after it (`reply_to` set on the reply). The same answer as "
        "`chatmem recall --json`. Follow up with get_conversation to read around a piece.",
        RecallRequest,
        RecallResult,
        service.recall,
    )
    contract_tool(
        server,
        "search_concepts",
        "Search concepts",
        "Find concepts the memory extracted from the conversations (projects, goals, entities, events, beliefs, "
        "tensions, behavioural patterns) by words in their title, aliases or description, optionally of one type "
        "or state. Each comes with its evidence: the messages it was read from (message and conversation ids). "
        "Pass a concept_id to timeline to see how it evolved.",
        ConceptSearchRequest,
        ConceptSearchResult,
        service.search_concepts,
    )
    contract_tool(
        server,
        "get_conversation",
        "Read a conversation",
        "Read a conversation's messages along its active path (the branch the user kept), in order: from the "
        "start (page with offset/limit) or centered on one message (around_message_id with `window` messages "
        "either side). more_before / more_after say whether there is more to read. A very long message comes cut "
        "after its first part (full_tokens set, a marker says how much was left out); recall shows a window of it "
        "around the words you look for. Messages read as recall shows them (no model's private notes, artifacts "
        "by title, long code cut); raw=true reads them as stored.",
        ConversationRequest,
        ConversationResult,
        service.get_conversation,
    )
    contract_tool(
        server,
        "timeline",
        "Concept timeline",
        "Show how one concept appears over time: first and last seen, every dated mention (the evidence message, "
        "its conversation and the span that mentions it) and the facts recorded about it with when they held "
        "(at .. valid_to; a fact with a valid_to was superseded), oldest first, optionally within since/until. "
        "Name the concept by its concept_id (from search_concepts) or its exact title or alias.",
        TimelineRequest,
        TimelineResult,
        service.timeline,
    )
    contract_tool(
        server,
        "topics",
        "List topics",
        "List the topics the conversations cluster into, largest first: a label, the number of segments, "
        "characteristic keywords, the conversations that represent it and the concepts most linked to it. Use it "
        "for an overview of what the memory is about; read a conversation with get_conversation.",
        TopicsRequest,
        TopicsResult,
        service.topics,
    )
    return server


def serve_stdio(server: MCPServer[Any]) -> None:
    """Serve on stdin/stdout until the client closes them (nothing else may write to stdout meanwhile)."""
    server.run("stdio")


def loopback_socket(port: int) -> socket.socket:
    """A listening TCP socket on 127.0.0.1:`port` (0: a free port the system picks)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((HOST, port))
    except OSError as exc:
        sock.close()
        raise ChatmemError(f"cannot listen on {HOST}:{port}: {exc.strerror or exc}") from None
    sock.listen(128)  # connections made before uvicorn starts wait in the backlog instead of being refused
    return sock


def serve_http(server: MCPServer[Any], port: int, announce: Callable[[str], None]) -> None:
    """Serve streamable HTTP on http://127.0.0.1:PORT/mcp (DNS-rebinding protection on) until interrupted."""
    sock = loopback_socket(port)
    app = server.streamable_http_app(streamable_http_path=HTTP_PATH, host=HOST)
    announce(f"chatmem mcp: streamable HTTP on http://{HOST}:{sock.getsockname()[1]}{HTTP_PATH}")
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    uvicorn.Server(config).run(sockets=[sock])
