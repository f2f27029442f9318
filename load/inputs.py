"""What the load reads before it writes: which layers exist, what the graph should hold, the input watermark.

Plain SQL on archive.db and staging.db; nothing here talks to the graph.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Sequence

from contracts.version import code_version
from load.layers import LAYERS, RETIRED, Layer, NodeLayer, load_order, node_layers
from load.plan import count_sql
from staging.load_state import manifest_lists

STAGE = "load"


def available_layers(
    archive: sqlite3.Connection, staging: sqlite3.Connection, layers: Sequence[Layer]
) -> tuple[list[Layer], list[str]]:
    """The layers to load, in load order, and the names of those skipped.

    A layer is skipped when a table it reads is missing, and an edge layer also when the node layer of its src or
    dst label is skipped: its edges would find no end (the loader keeps such rows out of the manifest, but a whole
    layer of them is better reported as waiting). A label with no node layer in `layers` at all is the caller's
    (a load of edge layers alone, into a graph whose nodes are already there, as the benchmark does).
    """
    names = {"archive": _table_names(archive), "staging": _table_names(staging)}
    present = [layer for layer in layers if set(layer.requires) <= names[layer.source]]
    waiting = {layer.label for layer in node_layers(layers)} - {layer.label for layer in node_layers(present)}
    present = [layer for layer in present if isinstance(layer, NodeLayer) or not {layer.src, layer.dst} & waiting]
    return load_order(present), [layer.name for layer in layers if layer not in present]


def expected_counts(
    archive: sqlite3.Connection, staging: sqlite3.Connection, layers: Sequence[Layer] = LAYERS
) -> dict[str, dict[str, int]]:
    """What the graph should hold now, per label and relationship type (`chatmem graph stats`): the present
    layers' row counts, summed over layers that share a type (Segment- and Concept-BELONGS_TO-Topic)."""
    present, _ = available_layers(archive, staging, layers)
    expected: dict[str, dict[str, int]] = {"nodes": {}, "edges": {}}
    for layer in present:
        source = archive if layer.source == "archive" else staging
        counts = expected["nodes" if isinstance(layer, NodeLayer) else "edges"]
        key = layer.label if isinstance(layer, NodeLayer) else layer.type
        counts[key] = counts.get(key, 0) + int(source.execute(count_sql(layer)).fetchone()[0])
    return expected


def input_watermark(archive: sqlite3.Connection, staging: sqlite3.Connection, layers: Sequence[Layer]) -> str:
    """A fingerprint of everything the layers read: the archive's sources, the latest succeeded stage run of
    any other stage, the layers' own SQL and the code version. Equal to the last succeeded load's: skip."""
    parts: list[object] = [code_version(), [f"{layer.name}:{layer.source}:{layer.sql}" for layer in layers]]
    if "sources" in _table_names(archive):
        parts.append(
            list(archive.execute("SELECT COUNT(*), MAX(id), SUM(status = 'complete') FROM sources").fetchone())
        )
    if "stage_runs" in _table_names(staging):
        found = staging.execute("SELECT MAX(id) FROM stage_runs WHERE stage != ? AND status = 'succeeded'", (STAGE,))
        parts.append(found.fetchone()[0])
    return hashlib.sha256(json.dumps(parts, default=str).encode()).hexdigest()[:32]


def _table_names(conn: sqlite3.Connection) -> set[str]:
    return {str(row[0]) for row in conn.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}


def retired_layers(staging: sqlite3.Connection, target: str) -> list[Layer]:
    """The retired layers (layers.RETIRED) whose rows the target's manifest still lists, edges before nodes."""
    return [layer for layer in RETIRED if manifest_lists(staging, target, layer.name)]
