"""A bulk writer into an empty local ArcadeDB graph, measured against the load stage's Bolt batches (issue 23).

Measured and NOT wired into the load (benchmarks/bench_bulk_load.py, RESULTS.md "An ArcadeDB bulk path for the
first load"): ArcadeDB's own batch API writes the graph at about the same CPU cost per row as the server's Cypher
CREATE batches over Bolt (1.18x less CPU at 50k on the real layers, none on a 200k archive), far from the 2x that
would pay for a second write path. Kept as the reference the figures came from.

What it does: ArcadeDB's `GraphBatch` (the `arcadedb-embedded` package that runs the server), embedded in a
process of its own (a database is opened by one process at a time: the server is stopped meanwhile), writes
every layer as the load reads it (`plan.source_rows`: the same rows, properties and row hashes): vertices per type
in large commits, edges joined by the record ids their vertices' creation returned (no key lookups). The manifest
rows go into staging's `load_manifest` in one transaction committed only after the database closed. The schema is
the load's: the benchmark creates the uniqueness constraints and property indexes over Bolt first; edge types get
one bucket each at their first edge, as the server's Cypher creates them. A NULL property is not stored; an edge
whose end node is missing is skipped and left out of the manifest. Prints one JSON line of counts.

    python benchmarks/arcadedb_bulk_writer.py --data-dir DATA_DIR --database DB_DIR --target KEY --run-id RUN
"""

from __future__ import annotations

import argparse
import json
import logging
import resource
import sqlite3
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import closing
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from load.layers import LAYERS, EdgeLayer, Layer, NodeLayer, load_order  # noqa: E402
from load.plan import ordered_sql, source_rows  # noqa: E402

log = logging.getLogger(__name__)

CHUNK = 20_000  # rows per crossing into the JVM: large enough to amortise it, small enough to stay flat


def _cpu() -> float:
    """CPU seconds of this process so far, the JVM's threads included."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _props(values: dict[str, Any]) -> dict[str, Any]:
    return {name: value for name, value in values.items() if value is not None}


def _chunks(rows: Iterator[Any], size: int) -> Iterator[list[Any]]:
    chunk: list[Any] = []
    for row in rows:
        chunk.append(row)
        if len(chunk) >= size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


class Writer:
    """Writes layers into an open embedded database and records their manifest rows in `manifest`."""

    def __init__(self, db: Any, manifest: sqlite3.Connection, target: str, run_id: str) -> None:
        self.db, self.manifest, self.target, self.run_id = db, manifest, target, run_id
        self.rids: dict[str, dict[str, str]] = {}
        self.counts: dict[str, int] = {"nodes": 0, "edges": 0, "edges_missing_ends": 0, "rows_read": 0}
        self.read: dict[str, int] = {}
        self.seconds: dict[str, float] = {}
        self.cpu: dict[str, float] = {}
        self._cpu_mark = _cpu()

    def _record(self, layer: Layer, rows: Sequence[tuple[str, int]]) -> None:
        self.manifest.executemany(
            "INSERT INTO load_manifest (target, layer, key, row_hash, run_id) VALUES (?, ?, ?, ?, ?)"
            " ON CONFLICT (target, layer, key) DO UPDATE SET row_hash = excluded.row_hash, run_id = excluded.run_id",
            [(self.target, layer.name, key, row_hash, self.run_id) for key, row_hash in rows],
        )

    def nodes(self, layer: NodeLayer, source: sqlite3.Connection) -> None:
        started, read = time.monotonic(), 0
        rids = self.rids.setdefault(layer.label, {})
        with self.db.graph_batch() as batch:
            for chunk in _chunks(source_rows(source.execute(ordered_sql(layer)), layer), CHUNK):
                read += len(chunk)
                fresh = [c for c in chunk if c.key not in rids]  # a key twice: the first row's node stays
                created = batch.create_vertices(
                    layer.label, [{"id": c.key, **_props(c.params["props"])} for c in fresh]
                )
                rids.update(zip((c.key for c in fresh), created, strict=True))
                self._record(layer, [(c.key, c.row_hash) for c in fresh])
                self.counts["nodes"] += len(fresh)
        self._done(layer, read, started)

    def edges(self, layer: EdgeLayer, source: sqlite3.Connection) -> None:
        started, read = time.monotonic(), 0
        src_rids, dst_rids = self.rids.get(layer.src, {}), self.rids.get(layer.dst, {})
        with self.db.graph_batch() as batch:
            for chunk in _chunks(source_rows(source.execute(ordered_sql(layer)), layer), CHUNK):
                read += len(chunk)
                found = [
                    (c, src_rids[c.params["src"]], dst_rids[c.params["dst"]])
                    for c in chunk
                    if c.params["src"] in src_rids and c.params["dst"] in dst_rids
                ]
                self.counts["edges_missing_ends"] += len(chunk) - len(found)
                if found:
                    self.db.schema.get_or_create_edge_type(layer.type, buckets=1)  # as Cypher: at the first edge
                    props = [_props(c.params["props"]) for c, _, _ in found]
                    batch.new_edges(
                        [s for _, s, _ in found],
                        layer.type,
                        [d for _, _, d in found],
                        props if any(props) else None,  # none: the ids cross as one string, not as JSON
                    )
                    self._record(layer, [(c.key, c.row_hash) for c, _, _ in found])
                    self.counts["edges"] += len(found)
        self._done(layer, read, started)

    def _done(self, layer: Layer, read: int, started: float) -> None:
        self.read[layer.name] = read
        self.counts["rows_read"] += read
        self.seconds[layer.name] = round(time.monotonic() - started, 2)
        cpu = _cpu()
        self.cpu[layer.name] = round(cpu - self._cpu_mark, 2)
        self._cpu_mark = cpu
        log.info("load - bulk %s: %d rows in %.1f s", layer.name, read, self.seconds[layer.name])


def write(
    archive_path: Path, staging_path: Path, database: Path, target: str, run_id: str, layers: Sequence[Layer], heap: str
) -> dict[str, Any]:
    """Write `layers` into the (stopped) database at `database` and their manifest into staging; the counts."""
    import arcadedb_embedded

    from staging.db import connect, connect_readonly

    with (
        closing(connect_readonly(archive_path)) as archive,
        closing(connect(staging_path)) as staging,
        closing(connect_readonly(staging_path)) as reader,
    ):
        staging.execute("BEGIN IMMEDIATE")
        try:
            db = arcadedb_embedded.open_database(str(database), jvm_kwargs={"heap_size": heap})
            try:
                writer = Writer(db, staging, target, run_id)
                for layer in load_order(layers):
                    source = archive if layer.source == "archive" else reader
                    if isinstance(layer, NodeLayer):
                        writer.nodes(layer, source)
                    else:
                        writer.edges(layer, source)
            finally:
                db.close()
            staging.execute("COMMIT")
        except BaseException:
            staging.execute("ROLLBACK")
            raise
    return {
        "counts": writer.counts,
        "read": writer.read,
        "seconds": writer.seconds,
        "cpu": writer.cpu,
        "total_cpu": _cpu(),
    }


def main(argv: list[str] | None = None) -> int:
    from contracts.settings import Settings
    from load.inputs import available_layers
    from staging.db import connect_readonly

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", type=Path, required=True, help="the chatmem data dir (archive.db, staging.db)")
    parser.add_argument("--database", type=Path, required=True, help="the ArcadeDB database folder (server stopped)")
    parser.add_argument("--target", required=True, help="the target key the manifest rows are recorded under")
    parser.add_argument("--run-id", required=True, help="the run the manifest rows are recorded for")
    parser.add_argument("--layers", default="", help="comma-separated layer names (default: every present layer)")
    parser.add_argument("--heap", default="2g", help="the JVM's maximum heap")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    settings = Settings(data_dir=args.data_dir)
    with (
        closing(connect_readonly(settings.archive_path)) as archive,
        closing(connect_readonly(settings.staging_path)) as staging,
    ):
        present, _ = available_layers(archive, staging, LAYERS)
    if args.layers:
        wanted = set(args.layers.split(","))
        present = [layer for layer in present if layer.name in wanted]
    result = write(
        settings.archive_path, settings.staging_path, args.database, args.target, args.run_id, present, args.heap
    )
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
