"""The graph, declared as data: one entry per node label or relationship type, each with the SQL that yields its rows.

The loader's core (plan, cypher, stage) knows nothing about conversations or messages: it reads `LAYERS`. A later
stage's layer (Segment, Concept, Topic, CONTAINS_MESSAGE, EVIDENCE_FOR, BELONGS_TO, concept relations) is one more
entry here, for example:

    NodeLayer("Concept", "staging", ("concepts",),
              "SELECT concept_id AS id, title, type, state, confidence FROM concepts WHERE state != 'merged'")
    EdgeLayer("EVIDENCE_FOR", "Message", "Concept", "staging", ("concept_evidence",),
              "SELECT message_id AS src, concept_id AS dst, MAX(confidence) AS confidence FROM concept_evidence"
              " GROUP BY message_id, concept_id", anchor="src")

A layer whose tables are missing is skipped (its stage has not run or not landed yet).

Rules a layer's SQL follows:
- nodes: the first column is `id` (TEXT, stable across runs), the others are properties;
- edges: the first columns are `src` and `dst` (the `id`s of the end nodes), the others are properties; there is
  one edge per (type, src, dst), so a layer that can yield the same pair twice aggregates (GROUP BY);
- the rows are the whole truth of the layer: a row that disappears is deleted from the graph (a merged concept's
  edges, a NEXT edge when a newer dump changes the active path), a row that changes is updated in place;
- a NULL property is not stored (Cypher removes a property set to null), so a value that becomes NULL disappears.

Labels and relationship types are interpolated into Cypher (they cannot be parameters), so they come only from the
allow-lists below, checked when a layer is declared and again where the Cypher is built. Property values always
travel as parameters.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

NODE_LABELS: tuple[str, ...] = ("Conversation", "Message", "Segment", "Concept", "Topic", "Cue", "Tag")
EDGE_TYPES: tuple[str, ...] = (
    "HAS_MESSAGE",
    "NEXT",
    "BRANCH",
    "CONTAINS_MESSAGE",
    "EVIDENCE_FOR",
    "BELONGS_TO",
    "CAUSES",
    "CONFLICTS_WITH",
    "SUPPORTS",
    "INSTANCE_OF",
    "ENABLES",
    "MERGED_INTO",
    "TAGGED",
    "CUES",
)
KEY = "id"
"""The key property of every node: MERGE matches on it and a uniqueness constraint backs it."""

Source = Literal["archive", "staging"]
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def check_label(label: str) -> str:
    if label not in NODE_LABELS:
        raise ValueError(f"node label {label!r} is not in the allow-list {NODE_LABELS}")
    return label


def check_type(rel_type: str) -> str:
    if rel_type not in EDGE_TYPES:
        raise ValueError(f"relationship type {rel_type!r} is not in the allow-list {EDGE_TYPES}")
    return rel_type


def _check_tables(tables: tuple[str, ...]) -> None:
    bad = [t for t in tables if not _IDENTIFIER.match(t)]
    if bad or not tables:
        raise ValueError(f"a layer needs the plain names of the tables it reads, got {tables!r}")


@dataclass(frozen=True)
class NodeLayer:
    """Nodes of one label. `sql` yields `id` first, then the properties."""

    label: str
    source: Source
    requires: tuple[str, ...]
    sql: str
    booleans: tuple[str, ...] = field(default=())
    """Columns SQLite stores as 0/1 that the graph should hold as booleans."""

    def __post_init__(self) -> None:
        check_label(self.label)
        _check_tables(self.requires)

    @property
    def name(self) -> str:
        return self.label

    @property
    def kind(self) -> Literal["node", "edge"]:
        return "node"


@dataclass(frozen=True)
class EdgeLayer:
    """Relationships of one type from `src` label to `dst` label. `sql` yields `src`, `dst`, then the properties.

    `anchor` is the end whose degree stays small (a message has one conversation, a conversation many messages):
    the Cypher starts its MERGE from there (see cypher.py for why).
    """

    type: str
    src: str
    dst: str
    source: Source
    requires: tuple[str, ...]
    sql: str
    anchor: Literal["src", "dst"] = "src"
    booleans: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        check_type(self.type)
        check_label(self.src)
        check_label(self.dst)
        _check_tables(self.requires)

    @property
    def name(self) -> str:
        return self.type

    @property
    def kind(self) -> Literal["node", "edge"]:
        return "edge"


Layer = NodeLayer | EdgeLayer

CONVERSATIONS = NodeLayer(
    "Conversation",
    "archive",
    ("conversations",),
    "SELECT id, title, created_at, updated_at, format, message_count FROM conversations",
)
MESSAGES = NodeLayer(
    "Message",
    "archive",
    ("messages",),
    "SELECT uuid AS id, conversation_id, role, author, content_type, text, created_at, is_active, is_hidden, seq,"
    " content_hash FROM messages",
    booleans=("is_active", "is_hidden"),
)
HAS_MESSAGE = EdgeLayer(
    "HAS_MESSAGE",
    "Conversation",
    "Message",
    "archive",
    ("messages",),
    "SELECT conversation_id AS src, uuid AS dst FROM messages",
    anchor="dst",
)
NEXT = EdgeLayer(
    "NEXT",
    "Message",
    "Message",
    "archive",
    ("message_chronology",),
    "SELECT prev_id AS src, uuid AS dst FROM message_chronology WHERE prev_id IS NOT NULL",
)
# Side branches: every parent -> child link whose child is off the active path (a regenerated reply, an edited
# turn and what follows it). NEXT and BRANCH together are the whole message tree; NEXT alone is the conversation
# as the user last saw it. The join keeps out children whose parent was quarantined (never in the archive).
BRANCH = EdgeLayer(
    "BRANCH",
    "Message",
    "Message",
    "archive",
    ("messages",),
    "SELECT child.parent_id AS src, child.uuid AS dst FROM messages AS child"
    " JOIN messages AS parent ON parent.uuid = child.parent_id WHERE child.is_active = 0",
    anchor="dst",
)

LAYERS: tuple[Layer, ...] = (CONVERSATIONS, MESSAGES, HAS_MESSAGE, NEXT, BRANCH)
"""In load order: node layers before the edges that join them."""


def node_layers(layers: tuple[Layer, ...] | list[Layer]) -> list[NodeLayer]:
    return [layer for layer in layers if isinstance(layer, NodeLayer)]


def edge_layers(layers: tuple[Layer, ...] | list[Layer]) -> list[EdgeLayer]:
    return [layer for layer in layers if isinstance(layer, EdgeLayer)]
