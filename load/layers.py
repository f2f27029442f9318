"""The graph, declared as data: one entry per node label or relationship type, each with the SQL that yields its rows.

The loader's core (plan, cypher, stage) knows nothing about conversations or messages: it reads `LAYERS`. A later
stage's layer is one more entry here, for example:

    NodeLayer("Concept", "staging", ("concepts",),
              "SELECT concept_id AS id, title, type, state, confidence FROM concepts WHERE state != 'merged'")
    EdgeLayer("EVIDENCE_FOR", "Message", "Concept", "staging", ("concept_evidence",),
              "SELECT message_id AS src, concept_id AS dst, MAX(confidence) AS confidence FROM concept_evidence"
              " GROUP BY message_id, concept_id", anchor="src")

A layer whose tables are missing is skipped (its stage has not run or not landed yet), and so is an edge layer
whose end label has no node layer to load (its edges could only miss their ends). Node layers load before edge
layers (`load_order`), so an edge's ends are in the graph before the edge is sent.

A layer's `name` keys its state in staging (manifest, batches): a node layer's name is its label, an edge layer's
is `Src-TYPE-Dst` (two layers may write one type: Segment-BELONGS_TO-Topic and Concept-BELONGS_TO-Topic).

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
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

NODE_LABELS: tuple[str, ...] = ("Conversation", "Message", "Segment", "Concept", "Topic", "Cue", "Tag")
"""`Tag` and `TAGGED` stay allowed only so that a load can delete what an older chatmem wrote (`RETIRED`)."""
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
    text_ids: bool = False
    """`id` is an indexed TEXT column: the loader reads it in index order (streaming) instead of sorting the
    whole layer first (the order is the same: BINARY, as the manifest's keys sort)."""
    capped: tuple[str, ...] = field(default=())
    """TEXT columns cut to `TEXT_CAP_BYTES` of UTF-8 in the graph (see `TEXT_CAP_BYTES`): every row then carries
    `<column>_truncated`, `<column>_bytes` and `<column>_full_in`, null (not stored) unless its value was cut."""

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
        """Distinct per layer even when two layers share a type (the manifest and batches are keyed by it)."""
        return f"{self.src}-{self.type}-{self.dst}"

    @property
    def kind(self) -> Literal["node", "edge"]:
        return "edge"


Layer = NodeLayer | EdgeLayer

TEXT_CAP_BYTES = 1024 * 1024
"""The most UTF-8 bytes of a capped column (`NodeLayer.capped`) the graph holds. archive.db keeps every message
whole (the source of truth); the graph is derived, and a row bigger than a Bolt message cannot be loaded at all
(ArcadeDB refuses messages over 16 MiB: a 50 MB pasted log would fail every load, every day). A longer value is
cut on a character boundary and its node says so: `text_truncated: true`, `text_bytes` (the whole text's UTF-8
size) and `text_full_in` (where the whole text is: `FULL_TEXT_AT`)."""
FULL_TEXT_AT = "archive.db: SELECT text FROM messages WHERE uuid = <the node's id>"

CONVERSATIONS = NodeLayer(
    "Conversation",
    "archive",
    ("conversations",),
    "SELECT id, title, created_at, updated_at, format, message_count FROM conversations",
    text_ids=True,
)
MESSAGES = NodeLayer(
    "Message",
    "archive",
    ("messages",),
    "SELECT uuid AS id, conversation_id, role, author, content_type, text, created_at, is_active, is_hidden, seq,"
    " content_hash FROM messages",
    booleans=("is_active", "is_hidden"),
    text_ids=True,
    capped=("text",),
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


# ---------------------------------------------------------------- later stages (staging.db)
#
# Each reads the current output of its stage, the way that stage's own readers do:
# - segments: the rows not retired by a newer segmentation (staging.segments.iter_current_segments);
# - concepts: the concept store as it stands. A concept is a node while it is live (active, weak, archived: the
#   `state` property says which). A merged concept (its evidence and relations copied to the survivor) and a split
#   parent (its evidence copied to the children) are not: their nodes are deleted with their edges on the next
#   load, and every concept edge below joins its ends to live concepts, so none is left pointing at them;
# - topics: the newest cluster run (staging.topics.latest_run, what `chatmem topics` shows). A run the cluster
#   stage recorded as skipped (too few points to cluster) has no topics: the graph then holds none either.

LIVE_CONCEPT = "state IN ('active', 'weak', 'archived')"
LATEST_CLUSTER_RUN = "(SELECT MAX(run_id) FROM cluster_runs)"

SEGMENTS = NodeLayer(
    "Segment",
    "staging",
    ("segments",),
    "SELECT segment_id AS id, conversation_id, ordinal, boundary, message_count, token_estimate, first_message_id,"
    " last_message_id, first_time, last_time, content_hash FROM current_segments",
    text_ids=True,
)
CONCEPTS = NodeLayer(
    "Concept",
    "staging",
    ("concepts",),
    "SELECT concept_id AS id, title, type, description, state, confidence, aliases, revision_count, evidence_count,"
    f" first_seen, last_seen FROM concepts WHERE {LIVE_CONCEPT}",
    text_ids=True,
)
# No cluster run id on the node: an incremental cluster run keeps the topics of its fit (their uids) and changes few
# of them (4 of 924 a day at 250k), and a run id would rewrite every Topic node at every run; `chatmem topics` says
# which run. NULL AS run_id: a graph loaded before carries the run id on each Topic, and a null removes it (SET +=).
TOPICS = NodeLayer(
    "Topic",
    "staging",
    ("topics", "cluster_runs"),
    "SELECT topic_uid AS id, label, size, keywords, representatives, topic AS number, NULL AS run_id FROM topics"
    f" WHERE run_id = {LATEST_CLUSTER_RUN}",
)
# A message sits in one current segment, a segment holds many messages: MERGE starts from the message.
CONTAINS_MESSAGE = EdgeLayer(
    "CONTAINS_MESSAGE",
    "Segment",
    "Message",
    "staging",
    ("segments", "segment_messages"),
    "SELECT m.segment_id AS src, m.message_id AS dst, m.position FROM segment_messages AS m"
    " JOIN current_segments AS s ON s.segment_id = m.segment_id",
    anchor="dst",
)
# One edge per (message, concept): a message may hold several spans of one concept; the edge carries the most
# confident one's text (SQLite takes a bare column from the row that holds the MAX) and how many there are.
EVIDENCE_FOR = EdgeLayer(
    "EVIDENCE_FOR",
    "Message",
    "Concept",
    "staging",
    ("concepts", "concept_evidence"),
    "SELECT e.message_id AS src, e.concept_id AS dst, MAX(e.confidence) AS confidence, e.text, COUNT(*) AS spans"
    f" FROM concept_evidence AS e JOIN concepts AS c ON c.concept_id = e.concept_id WHERE c.{LIVE_CONCEPT}"
    " GROUP BY e.message_id, e.concept_id",
)


def _relation(rel_type: str) -> EdgeLayer:
    """(Concept)-[:TYPE {confidence}]->(Concept) from concept_relations, both ends live concepts."""
    return EdgeLayer(
        rel_type,
        "Concept",
        "Concept",
        "staging",
        ("concepts", "concept_relations"),
        "SELECT r.concept_id AS src, r.target_id AS dst, r.confidence FROM concept_relations AS r"
        " JOIN concepts AS a ON a.concept_id = r.concept_id JOIN concepts AS b ON b.concept_id = r.target_id"
        f" WHERE r.relation = '{rel_type.lower()}' AND a.{LIVE_CONCEPT} AND b.{LIVE_CONCEPT}",
    )


CONCEPT_RELATIONS = tuple(_relation(t) for t in ("CAUSES", "CONFLICTS_WITH", "SUPPORTS", "INSTANCE_OF", "ENABLES"))
# Weighted membership of the newest cluster run. A link whose item is no longer current (a segment retired by a
# newer segmentation, a concept merged since the clustering) is left out: its node is not in the graph.
SEGMENT_TOPIC = EdgeLayer(
    "BELONGS_TO",
    "Segment",
    "Topic",
    "staging",
    ("topic_links", "cluster_runs", "segments"),
    "SELECT l.item_id AS src, l.topic_uid AS dst, l.weight, l.source FROM topic_links AS l"
    " JOIN current_segments AS s ON s.segment_id = l.item_id"
    f" WHERE l.kind = 'segment' AND l.run_id = {LATEST_CLUSTER_RUN}",
)
CONCEPT_TOPIC = EdgeLayer(
    "BELONGS_TO",
    "Concept",
    "Topic",
    "staging",
    ("topic_links", "cluster_runs", "concepts"),
    "SELECT l.item_id AS src, l.topic_uid AS dst, l.weight, l.source FROM topic_links AS l"
    " JOIN concepts AS c ON c.concept_id = l.item_id"
    f" WHERE l.kind = 'concept' AND l.run_id = {LATEST_CLUSTER_RUN} AND c.{LIVE_CONCEPT}",
)

# The Cue-Tag-Content graph of the newest cues run (staging.memory), each thing once (issue 23). Content nodes are
# the Message nodes above (a merged group is a recall-time view over its originals, not a node of its own); cues
# are nodes, with weighted (Cue)-[:CUES]->(Message) edges. Tags are not copied into the graph: a tag that is a
# node already is that node, a tag that is a property stays that property (indexed, PROPERTY_INDEXES):
# - `conv:` the Conversation: (Message)<-[:HAS_MESSAGE]-(Conversation); a cue's share of a conversation, the old
#   Cue-TAGGED-Tag weight, is count(CUES edges into its messages) / cue.df;
# - `topic:` the Topic: (Message)<-[:CONTAINS_MESSAGE]-(Segment)-[:BELONGS_TO {weight}]->(Topic);
# - `role:` Message.role, `source:` Conversation.format, `day:`/`month:` a prefix of Message.created_at,
#   `ctype:` Cue.concept_type.
# docs/graph.md has the Cypher of each walk; recall reads the tags from staging, not from the graph.
# The newest run's memory is the current rows (staging/memory_history.py: rows are shared across runs).
CURRENT_MEMORY = "retired_run_id IS NULL"

CUES = NodeLayer(
    "Cue",
    "staging",
    ("memory_cues", "memory_runs"),
    f"SELECT cue_id AS id, name, kind, concept_type, df, idf, hub FROM memory_cues WHERE {CURRENT_MEMORY}",
    booleans=("hub",),
    text_ids=True,
)
# A message has a few cues, a cue many messages: MERGE starts from the message.
CUE_CONTENT = EdgeLayer(
    "CUES",
    "Cue",
    "Message",
    "staging",
    ("memory_edges", "memory_runs"),
    "SELECT src, dst, weight FROM memory_edges"
    f" WHERE {CURRENT_MEMORY} AND kind = 'cue-content' AND dst NOT LIKE 'merged:%'",
    anchor="dst",
)

# Layers an older chatmem loaded and this one does not: a load into a target whose manifest still lists their rows
# deletes them from the graph (edges first, then the nodes, in batches like any other delete) and forgets them.
# Their SQL yields nothing, so the diff against the manifest is all deletes; `retired_layers` picks those with rows.
RETIRED: tuple[Layer, ...] = (
    EdgeLayer(
        "TAGGED",
        "Tag",
        "Message",
        "staging",
        ("load_manifest",),
        "SELECT NULL AS src, NULL AS dst WHERE 0",
        anchor="dst",
    ),
    EdgeLayer("TAGGED", "Cue", "Tag", "staging", ("load_manifest",), "SELECT NULL AS src, NULL AS dst WHERE 0"),
    NodeLayer("Tag", "staging", ("load_manifest",), "SELECT NULL AS id WHERE 0"),
)

# Properties that stand for what were tags (see above): indexed, so that a walk filtered by them starts from the
# index. Created with the uniqueness constraints, for the labels this load writes.
PROPERTY_INDEXES: tuple[tuple[str, str], ...] = (
    ("Message", "role"),
    ("Message", "created_at"),
    ("Conversation", "format"),
    ("Cue", "concept_type"),
)

ARCHIVE_LAYERS: tuple[Layer, ...] = (CONVERSATIONS, MESSAGES, HAS_MESSAGE, NEXT, BRANCH)
LAYERS: tuple[Layer, ...] = (
    CONVERSATIONS,
    MESSAGES,
    SEGMENTS,
    CONCEPTS,
    TOPICS,
    CUES,
    HAS_MESSAGE,
    NEXT,
    BRANCH,
    CONTAINS_MESSAGE,
    EVIDENCE_FOR,
    *CONCEPT_RELATIONS,
    SEGMENT_TOPIC,
    CONCEPT_TOPIC,
    CUE_CONTENT,
)
"""In load order: node layers before the edges that join them (`load_order` keeps any list so)."""


def load_order(layers: Sequence[Layer]) -> list[Layer]:
    """Node layers first, then edge layers, each in the order given: an edge's ends are written before it."""
    return [*node_layers(layers), *edge_layers(layers)]


def node_layers(layers: Sequence[Layer]) -> list[NodeLayer]:
    return [layer for layer in layers if isinstance(layer, NodeLayer)]


def edge_layers(layers: Sequence[Layer]) -> list[EdgeLayer]:
    return [layer for layer in layers if isinstance(layer, EdgeLayer)]
