"""What the load reads before it writes: which layers exist, what the graph should hold, the input watermark.

Plain SQL on archive.db and staging.db; nothing here talks to the graph.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Sequence

from contracts.version import code_version
from load.layers import LAYERS, Layer
from load.plan import count_sql

STAGE = "load"


def available_layers(
    archive: sqlite3.Connection, staging: sqlite3.Connection, layers: Sequence[Layer]
) -> tuple[list[Layer], list[str]]:
    """The layers whose tables exist, and the names of those skipped for a missing table."""
    names = {"archive": _table_names(archive), "staging": _table_names(staging)}
    present = [layer for layer in layers if set(layer.requires) <= names[layer.source]]
    return present, [layer.name for layer in layers if layer not in present]


def expected_counts(
    archive: sqlite3.Connection, staging: sqlite3.Connection, layers: Sequence[Layer] = LAYERS
) -> dict[str, dict[str, int]]:
    """What the graph should hold: each present layer's row count now (`chatmem graph stats`)."""
    present, _ = available_layers(archive, staging, layers)
    expected: dict[str, dict[str, int]] = {"nodes": {}, "edges": {}}
    for layer in present:
        source = archive if layer.source == "archive" else staging
        expected["nodes" if layer.kind == "node" else "edges"][layer.name] = int(
            source.execute(count_sql(layer)).fetchone()[0]
        )
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
