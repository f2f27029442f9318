"""Every Cypher statement the loader sends, built from a layer. Labels and types are checked against the
allow-lists here, at the one place they are interpolated; every value is a parameter (`$rows`).

The statements are the Neo4j 5 forms, and ArcadeDB's Bolt plugin runs them unchanged. Where ArcadeDB behaves
differently, the adaptation is made here and only here:

1. Relationship MERGE. ArcadeDB checks whether the relationship exists by walking the edges of the node written
   first in the MERGE pattern, so `MERGE (conversation)-[:HAS_MESSAGE]->(message)` costs O(messages in the
   conversation) per row (measured: 179 rows/s falling to 31 rows/s as one conversation grew to 30k messages).
   Written from the sparse end, `MERGE (message)<-[:HAS_MESSAGE]-(conversation)`, it is ~12k rows/s. Both forms
   mean the same relationship in the same direction, and Neo4j plans either one the same way, so the layer names
   its sparse end (`anchor`) and the pattern starts there.
2. Counting. Neo4j answers `MATCH ()-[r:T]->() RETURN count(r)` from its count store; ArcadeDB scans every edge
   (0.5 s per 30k). ArcadeDB answers `CALL apoc.meta.stats()` from its type counters in milliseconds, but in a
   shape of its own (one `value` map; Neo4j's APOC, when installed, yields columns). So `graph_counts` in graph.py
   asks ArcadeDB for apoc.meta.stats and Neo4j for one count per label and type.
3. New nodes. MERGE on a unique key costs ArcadeDB an index lookup per row on top of the insert (measured on
   26k messages: 16.4k rows/s against 19.1k for CREATE under the same constraint). A batch of nodes that are all
   new to the manifest is sent as CREATE: the uniqueness constraint, created before the first batch, turns a
   node that exists after all (a batch the graph committed but staging never recorded, a graph loaded by
   someone else) into a ConstraintValidationFailed for the whole transaction, which is then re-sent as MERGE.
   So a duplicate can never be written, and the result is the MERGE's. Relationships have no such constraint:
   see point 5. This holds on Neo4j too (same error, same rollback).
4. Message size. ArcadeDB refuses a Bolt message over 16 MiB and then leaves the connection hanging; batches are
   cut by bytes (`max_batch_bytes`, 8 MiB by default) and a single row above the limit is refused before it is
   sent (`ARCADEDB_MAX_MESSAGE`). A message's text is capped (`layers.TEXT_CAP_BYTES`, 1 MiB), so only a row of
   another layer can still be that big.
5. New relationships. MERGE of a relationship costs a walk of the anchor's edges before the insert; CREATE does
   not. No constraint can catch a duplicate relationship, so an edge batch goes as CREATE only when staging can
   prove that none of its rows is in the graph: the rows are new to the manifest (and not repeated in the layer),
   the previous load of this target finished (a killed or failed one may have committed batches it never
   recorded) and the graph holds exactly as many relationships of the type as the manifest lists (nobody else
   wrote any). Otherwise the layer is MERGEd, as before (load/stage.py: `_edges_known`).
6. Properties in the CREATE. `CREATE (n {id: row.id}) SET n += row.props` writes each record twice: created
   small, then grown at commit by the SET, and ArcadeDB grows a record in its page by shifting every record
   after it (LocalBucket.shiftFollowingRecordsRight: 18 % of the server's CPU while loading 100k real turns).
   The CREATEs name every property in the pattern instead (`{id: row.id, title: row.props.title, ...}`): the
   record is written once. Measured (micro-benchmark): 49 -> 30 µs of server CPU per relationship, 43 -> 21-28 per
   node; on the 100k real-turn data dir's 2.3M rows 140 -> 88 CPU-s for the whole load. A null
   value is not stored, as with `SET +=`. MERGE keeps `SET +=` (it updates existing records too).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from clients.graph import Graph
from load.layers import KEY, PROPERTY_INDEXES, EdgeLayer, Layer, NodeLayer, check_label, check_type

ARCADEDB_MAX_MESSAGE = 16 * 1024 * 1024
_PROPERTY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def constraint(label: str) -> str:
    """A uniqueness constraint on the key (it also creates the index MERGE looks up)."""
    label = check_label(label)
    return f"CREATE CONSTRAINT chatmem_{label.lower()}_{KEY} IF NOT EXISTS FOR (n:{label}) REQUIRE n.{KEY} IS UNIQUE"


def upsert(layer: Layer) -> str:
    """MERGE each row on its key and overwrite the properties it carries (`SET +=`; a null removes one).

    Returns `written`: the rows that found their nodes (an edge whose end node is missing writes nothing).
    """
    if isinstance(layer, NodeLayer):
        label = check_label(layer.label)
        return f"UNWIND $rows AS row MERGE (n:{label} {{{KEY}: row.id}}) SET n += row.props RETURN count(n) AS written"
    return f"UNWIND $rows AS row {_ends(layer)} MERGE {_pattern(layer)} SET r += row.props RETURN count(r) AS written"


def create_nodes(layer: NodeLayer, props: Sequence[str]) -> str:
    """CREATE for a batch of nodes the manifest has never seen (see point 3 above): the uniqueness constraint
    makes it fail, whole, if any of them exists after all; the batch is then sent again with `upsert`.

    `props` are the layer's property names: they are written in the CREATE itself (point 6)."""
    label = check_label(layer.label)
    return f"UNWIND $rows AS row CREATE (n:{label} {_node_map(props)}) RETURN count(n) AS written"


def create_edges(layer: EdgeLayer, props: Sequence[str]) -> str:
    """CREATE for a batch of relationships staging proves absent from the graph (see point 5 above), with their
    properties in the CREATE itself (point 6).

    Returns `written` like `upsert`: an edge whose end node is missing matches nothing and writes nothing."""
    return f"UNWIND $rows AS row {_ends(layer)} CREATE {_pattern(layer, props)} RETURN count(r) AS written"


def delete(layer: Layer) -> str:
    """Remove the graph elements of rows that vanished (a node with its relationships)."""
    if isinstance(layer, NodeLayer):
        label = check_label(layer.label)
        return f"UNWIND $rows AS row MATCH (n:{label} {{{KEY}: row.id}}) DETACH DELETE n RETURN count(*) AS written"
    return f"UNWIND $rows AS row {_ends(layer)} MATCH {_pattern(layer)} DELETE r RETURN count(*) AS written"


def create_raw(layer: Layer, props: Sequence[str]) -> str:
    """The benchmark's reference: the same rows with CREATE (properties in the CREATE, as the loader sends them),
    no MERGE and no uniqueness check."""
    if isinstance(layer, NodeLayer):
        label = check_label(layer.label)
        return f"UNWIND $rows AS row CREATE (n:{label} {_node_map(props)}) RETURN count(*) AS written"
    return f"UNWIND $rows AS row {_ends(layer)} CREATE {_pattern(layer, props)} RETURN count(*) AS written"


def plain_index(label: str) -> str:
    """A non-unique index on the key: what the benchmark's raw reference needs to find edge ends."""
    label = check_label(label)
    return f"CREATE INDEX chatmem_{label.lower()}_{KEY}_plain IF NOT EXISTS FOR (n:{label}) ON (n.{KEY})"


def count_nodes(label: str) -> str:
    return f"MATCH (n:{check_label(label)}) RETURN count(n) AS n"


def count_edges(rel_type: str) -> str:
    return f"MATCH ()-[r:{check_type(rel_type)}]->() RETURN count(r) AS n"


def _ends(layer: EdgeLayer) -> str:
    src, dst = check_label(layer.src), check_label(layer.dst)
    first, second = (f"(a:{src} {{{KEY}: row.src}})", f"(b:{dst} {{{KEY}: row.dst}})")
    if layer.anchor == "dst":
        first, second = second, first
    return f"MATCH {first} MATCH {second}"


def _pattern(layer: EdgeLayer, props: Sequence[str] | None = None) -> str:
    rel_type = check_type(layer.type)
    inner = f"r:{rel_type} {_map(props, {})}" if props else f"r:{rel_type}"
    return f"(a)-[{inner}]->(b)" if layer.anchor == "src" else f"(b)<-[{inner}]-(a)"


def _node_map(props: Sequence[str]) -> str:
    return _map(props, {KEY: "row.id"})


def _map(props: Sequence[str], fixed: dict[str, str]) -> str:
    """`{k: row.props.k, ...}`: every property name checked as a plain identifier and backtick-quoted (they
    come from the layers' SQL column names, never from data). A null value is not stored, as with `SET +=`."""
    for name in props:
        if not _PROPERTY.match(name):
            raise ValueError(f"property name {name!r} is not a plain identifier")
    entries = [f"`{k}`: {v}" for k, v in fixed.items()] + [f"`{name}`: row.props.`{name}`" for name in props]
    return "{" + ", ".join(entries) + "}"


def property_index(label: str, prop: str) -> str:
    """A plain index on a property that stands for what used to be a tag (layers.PROPERTY_INDEXES)."""
    label = check_label(label)
    if not _PROPERTY.match(prop):
        raise ValueError(f"property name {prop!r} is not a plain identifier")
    return f"CREATE INDEX chatmem_{label.lower()}_{prop.lower()} IF NOT EXISTS FOR (n:{label}) ON (n.{prop})"


def ensure_constraints(graph: Graph, labels: Sequence[str]) -> None:
    """Uniqueness constraints on the key of every label, then the property indexes of those labels, before the
    first batch (IF NOT EXISTS: idempotent)."""
    for label in labels:
        graph.run(constraint(label))
    for label, prop in PROPERTY_INDEXES:
        if label in labels:
            graph.run(property_index(label, prop))


def edge_count(graph: Graph, rel_type: str) -> int:
    """Relationships of one type; cheap on both servers (ArcadeDB's type counter, Neo4j's count store)."""
    if graph.dialect == "arcadedb":
        return graph.graph_counts()[1].get(check_type(rel_type), 0)
    return int(graph.run(count_edges(rel_type))[0]["n"])


def node_counts(graph: Graph, labels: Sequence[str]) -> dict[str, int]:
    """Nodes per label; cheap on both servers (a counter, not a scan)."""
    return {label: int(graph.run(count_nodes(label))[0]["n"]) for label in labels}
