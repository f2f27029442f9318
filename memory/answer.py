"""What one recall is asked and answers, as plain dataclasses: the engine's own types, free of pydantic.

    Request(query, at, budget_tokens, scope, max_pieces, order)      Scope(conversation_ids, sources, since, until)
    Answer(query, at, pieces, ...)   Piece(..., path: [Step])   Fact(...)

They carry the fields of contracts.memory's RecallRequest / RecallResult, RecallPiece, ActivationStep, RecallFact
under the same names (a test keeps them equal). The engine (memory/recall.py, candidates.py, service.py) works on
these; `chatmem recall` asks and prints them without importing pydantic (its models cost ~0.1 s of every call);
the contract is built only where it is the interface: the MCP tools, `--json`, memory.service.Memory.recall
(`to_contract`). The engine also reads a RecallRequest as it is (the same attributes).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal, Protocol

if TYPE_CHECKING:
    from contracts.memory import RecallResult


class ScopeLike(Protocol):
    @property
    def conversation_ids(self) -> list[str]: ...
    @property
    def sources(self) -> list[str]: ...
    @property
    def since(self) -> datetime | None: ...
    @property
    def until(self) -> datetime | None: ...


class RequestLike(Protocol):
    """A Request or a contracts.memory.RecallRequest: what the engine reads of a question."""

    @property
    def query(self) -> str: ...
    @property
    def at(self) -> datetime | None: ...
    @property
    def budget_tokens(self) -> int: ...
    @property
    def scope(self) -> ScopeLike: ...
    @property
    def max_pieces(self) -> int: ...
    @property
    def order(self) -> Literal["relevance", "time"]: ...


@dataclass(frozen=True)
class Scope:
    conversation_ids: list[str] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)
    since: datetime | None = None
    until: datetime | None = None


@dataclass(frozen=True)
class Request:
    """A question, checked by its maker (the CLI's options; contracts.memory.RecallRequest validates the rest)."""

    query: str
    at: datetime | None = None
    budget_tokens: int = 2000
    scope: Scope = field(default_factory=Scope)
    max_pieces: int = 50
    order: Literal["relevance", "time"] = "relevance"


def at_moment(request: RequestLike, at: datetime) -> RequestLike:
    """The request asked at `at` (either kind)."""
    if isinstance(request, Request):
        return replace(request, at=at)
    copy: RequestLike = request.model_copy(update={"at": at})  # type: ignore[attr-defined]
    return copy


@dataclass
class Step:
    kind: Literal["query", "cue", "tag", "content"]
    id: str
    label: str
    score: float


@dataclass
class Piece:
    content_id: str
    message_ids: list[str]
    conversation_id: str
    conversation_title: str | None
    seq: int
    role: str
    created_at: datetime | None
    text: str
    tokens: int
    score: float
    rank: int
    weak: bool
    path: list[Step]
    full_tokens: int | None = None
    reply_to: str | None = None


@dataclass
class Fact:
    subject: str
    attribute: str
    value: str
    polarity: Literal["positive", "negative"]
    valid_from: datetime | None
    valid_to: datetime | None
    superseded: bool
    message_ids: list[str]
    line: str


@dataclass
class Answer:
    query: str
    at: datetime | None
    pieces: list[Piece]
    tokens: int
    budget_tokens: int
    candidates: int
    cues: list[Step]
    time_filter: str | None = None
    order: Literal["relevance", "time"] = "relevance"
    facts: list[Fact] = field(default_factory=list)
    fact_changes: list[str] = field(default_factory=list)
    expansion: Any = None  # a contracts.memory.ExpandOutcome (only when the LLM was asked: pydantic loaded then)
    empty_reason: str | None = None
    weak_reason: str | None = None
    budget_note: str | None = None


def to_contract(answer: Answer) -> RecallResult:
    """The RecallResult of an answer (imports pydantic's models)."""
    from contracts.memory import RecallResult

    data = {k: v for k, v in asdict(answer).items() if k != "expansion"}
    return RecallResult.model_validate({**data, "expansion": answer.expansion})
