"""The load stage: archive.db and staging.db rows in, the graph (Neo4j over Bolt) out, every batch in the ledger.

The steps (the runner, flows/stage_runner.py, keeps the ledger): read the inputs (which layers exist, their
watermark, the target graph, which is the local ArcadeDB server unless NEO4J_URI is set); compute what changed
(plan.py: a streaming diff of each layer against the manifest of what the graph holds); validate (labels and
types come from the allow-list, rows too big for the server are refused before they are sent); write
uniqueness constraints, then UNWIND batches, one transaction each, CREATE for rows new to the manifest where
that is provably safe and MERGE on stable ids otherwise (cypher.py, points 3 and 5), retried on transient
errors only; return the counts, or raise a StageError that names the graph, the cause and how to re-run.

Resuming: a batch's rows enter the manifest in the same staging transaction that marks the batch done. A load
that died (a killed server, a killed process) is re-run and diffs again: finished batches are not in the diff,
the unfinished one comes first and keeps its number; a batch the graph committed but staging did not record is
sent again, and MERGE makes that harmless.
"""

from __future__ import annotations

import logging
import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import closing, contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path

from clients.graph import Graph, Target, redact
from clients.graph_errors import GraphWriteError, LoadError
from clients.graph_target import resolve_target
from clients.progress import ProgressFactory, bar
from clients.stage import Outcome, StageContext
from contracts.errors import StageError
from contracts.settings import Settings
from load import archive_delta, cypher, memory_delta, staging_delta
from load.inputs import available_layers, input_watermark, retired_layers
from load.layers import LAYERS, EdgeLayer, Layer, NodeLayer, edge_layers, load_order, node_layers
from load.overlap import Prefetch, WriteBehind
from load.plan import Batch, Change, batches, count_sql, diff, ordered_sql, source_rows
from load.scoped import IdScope
from staging import archive_loaded, memory_loaded
from staging import memory as memory_store
from staging.db import connect, connect_readonly
from staging.load_state import (
    BatchKey,
    begin_batch,
    done_batches,
    fail_batch,
    finish_batch,
    forget_layer,
    iter_manifest,
    manifest_count,
    manifest_lists,
    record_target,
    retried_batch,
    target_watermark,
)

log = logging.getLogger(__name__)

STAGE = "load"
FIRST_BATCH = 1000  # a layer's first batch is small: the server starts on it while the reader reads the next
ARCADEDB_BATCH_BYTES = 12 * 1024 * 1024  # under ArcadeDB's 16 MiB Bolt message, with room for framing


@dataclass
class Tally:
    """What the load did, for the ledger and the StageResult. rows_read: the rows compared with the manifest (all
    of a layer's, or those of the conversations and memory rows that may have changed); rows_unchanged: those of
    them the graph holds already (the rest are upserted, or edges missing an end)."""

    counts: dict[str, int] = field(
        default_factory=lambda: dict.fromkeys(
            (
                "layers",
                "layers_missing",
                "rows_read",
                "rows_unchanged",
                "nodes_upserted",
                "nodes_deleted",
                "edges_upserted",
                "edges_deleted",
                "edges_missing_ends",
                "batches",
                "batches_created",
                "batches_resumed",
                "retries",
            ),
            0,
        )
    )
    notes: list[str] = field(default_factory=list)
    read: dict[str, int] = field(default_factory=dict)
    """rows_read of each layer (a note says them: what a load reads is what it costs)."""

    def add(self, name: str, value: int = 1) -> None:
        self.counts[name] += value


def run(
    ctx: StageContext,
    *,
    layers: Sequence[Layer] = LAYERS,
    target: Target | None = None,
) -> Outcome:
    """Load the layers whose tables exist into the graph; resume where an earlier attempt stopped."""
    archive, staging, settings = ctx.archive, ctx.staging, ctx.settings
    present, missing = available_layers(archive, staging, layers)
    tally = Tally()
    tally.counts["layers_missing"] = len(missing)
    if missing:
        tally.notes.append(
            f"layers not loaded (a table they read or a node layer they join is missing): {', '.join(missing)}"
        )
    try:
        if target is None:
            target, notes = resolve_target(settings, start=True)
            tally.notes.extend(notes)
        if target is None:
            return Outcome(notes=tally.notes, skipped=True)
        watermark = input_watermark(archive, staging, present)
        skipped = _load(ctx, target, present, watermark, tally)
    except LoadError as exc:
        raise StageError(STAGE, ctx.run_id, str(exc), ctx.rerun) from None
    written = sum(tally.counts[k] for k in ("nodes_upserted", "nodes_deleted", "edges_upserted", "edges_deleted"))
    sent = sum(tally.counts[k] for k in ("nodes_upserted", "edges_upserted", "edges_missing_ends"))
    tally.counts["rows_unchanged"] = max(0, tally.counts["rows_read"] - sent)
    return Outcome(
        rows_in=tally.counts["rows_read"], rows_out=written, counts=tally.counts, notes=tally.notes, skipped=skipped
    )


def _load(ctx: StageContext, target: Target, layers: list[Layer], watermark: str, tally: Tally) -> bool:
    """Write what changed. Returns True when nothing had to be done (the graph was up to date)."""
    archive, staging, settings, run_id = ctx.archive, ctx.staging, ctx.settings, ctx.run_id
    with Graph(target, connect_timeout_s=settings.load.connect_timeout_s) as graph:
        graph.check()
        cypher.ensure_constraints(graph, [layer.label for layer in node_layers(layers)])
        lost = _lost_layers(staging, graph, target, layers)
        stored, last_run = target_watermark(staging, target.key)
        if stored == watermark and not lost:
            tally.notes.append(f"graph {target.describe()} is up to date (loaded by run {last_run})")
            return True
        for layer in lost:
            forget_layer(staging, target.key, layer.name)
        delta, memory_run = _memory_delta(staging, settings, target, layers, lost)
        # A load that was killed or failed may have committed batches it never recorded: relationships are then
        # MERGEd (no constraint would catch a duplicate), until a load of this target finishes again.
        previous_finished = stored is not None or last_run is None
        # The archive layers: only the conversations changed since the mark the manifest equals (archive_delta.py)
        archived = archive_delta.plan(
            archive, staging, settings.data_dir, target.key, layers, lost, previous_finished=previous_finished
        )
        # The segment, evidence, concept and topic layers: only the ids changed since the target's mark
        # (staging_delta.py)
        staged = staging_delta.plan(
            staging, settings.data_dir, target.key, layers, lost, previous_finished=previous_finished
        )
        tally.notes.extend(note for note in (archived.note, *(found.note for found in staged)) if note)
        # Until this load succeeds, no later one may skip: forget the watermark first.
        uri = redact(target.uri)
        record_target(staging, target.key, uri=uri, database=target.database, watermark=None, run_id=run_id)
        # nodes before edges: an edge's ends are written before it; then what an older chatmem loaded and this one
        # does not (layers.RETIRED: their rows deleted, edges before nodes)
        ordered = [*load_order(layers), *retired_layers(staging, target.key)]
        # Each layer's reader starts while the layer before it is written: its SQL (a sort, a GROUP BY, a window)
        # runs before its first row, and the server would otherwise wait for it at every layer boundary.
        scopes = [scope for scope in (archived.delta, *(found.delta for found in staged)) if scope is not None]
        readers = [_LayerReader(archive, staging, graph, ordered[0], settings, delta, scopes)] if ordered else []
        try:
            for i, layer in enumerate(ordered):
                if i + 1 < len(ordered):
                    readers.append(_LayerReader(archive, staging, graph, ordered[i + 1], settings, delta, scopes))
                may_create = isinstance(layer, NodeLayer) or (
                    previous_finished and _edges_known(staging, graph, layer, ordered)
                )
                _load_layer(readers[i], ctx, graph, tally, may_create=may_create)
        finally:
            for reader in readers:
                reader.close()
        tally.counts["layers"] = len(layers)
        tally.notes.append("rows read per layer: " + ", ".join(f"{name} {n}" for name, n in tally.read.items()))
        if tally.counts["edges_missing_ends"]:
            # Those rows are not in the manifest; without a watermark the next load diffs again and resends them
            # (their ends may have landed by then) instead of skipping as up to date.
            tally.notes.append(
                f"{tally.counts['edges_missing_ends']} edge(s) found no end node: not marked loaded, retried next load"
            )
            if memory_run is not None:  # rows left out of the manifest: the next load diffs everything again
                memory_loaded.record(settings.data_dir, target.key, memory_run=None, loading=None)
            archive_loaded.record(settings.data_dir, target.key, None, archived.layers)
            staging_delta.forget(settings.data_dir, target.key, staged)
            return False
        record_target(staging, target.key, uri=uri, database=target.database, watermark=watermark, run_id=run_id)
        if memory_run is not None:
            memory_loaded.record(settings.data_dir, target.key, memory_run=memory_run, loading=None)
        archive_delta.record(staging, settings.data_dir, target.key, layers, archived)  # manifest = archive at mark
        staging_delta.record(staging, settings.data_dir, target.key, staged)  # manifest = staging layers at mark
        if delta is not None:
            tally.notes.append(
                f"memory layers: only what may differ from cues run {delta.loaded_run} was read"
                f" ({len(delta.ids['content'])} messages, {len(delta.ids['cues'])} cues)"
            )
    return False


def _memory_delta(
    staging: sqlite3.Connection, settings: Settings, target: Target, layers: list[Layer], lost: list[Layer]
) -> tuple[memory_delta.MemoryDelta | None, str | None]:
    """The memory layers' delta (load/memory_delta.py) when the target holds a known cues run, and the run this
    load brings it to; recorded as `loading` first, so a killed load is resumed from the same run or diffs all."""
    names = {layer.name for layer in layers}
    if not names & set(memory_delta.RESTRICT):
        return None, None
    if not set(memory_delta.RESTRICT) <= names:  # some memory layers not loaded now: their manifest falls behind
        memory_loaded.record(settings.data_dir, target.key, memory_run=None, loading=None)
        return None, None
    memory_run = memory_store.latest_run(staging)
    loaded, loading = memory_loaded.loaded_run(settings.data_dir, target.key)
    delta = None
    if not any(layer.name in memory_delta.RESTRICT for layer in lost):
        delta = memory_delta.plan(staging, loaded, loading)
    memory_loaded.record(
        settings.data_dir, target.key, memory_run=loaded if delta is not None else None, loading=memory_run
    )
    return delta, memory_run


def _lost_layers(staging: sqlite3.Connection, graph: Graph, target: Target, layers: list[Layer]) -> list[Layer]:
    """Layers the manifest cannot be trusted for: the graph holds fewer nodes than it lists (wiped, replaced).

    Node counts are cheap on both servers; edges hang on nodes, so a lost node layer re-sends every edge layer.
    Extra nodes are fine: a batch the graph committed but staging never recorded is sent again anyway.
    """
    # the node layers' ranges of the manifest only: counting every layer would walk the edges' millions of rows
    loaded = {layer.name: manifest_count(staging, target.key, layer.name) for layer in node_layers(layers)}
    labels = [layer.label for layer in node_layers(layers)]
    in_graph = cypher.node_counts(graph, labels)
    lost_nodes = [layer for layer in node_layers(layers) if in_graph[layer.label] < loaded.get(layer.name, 0)]
    if not lost_nodes:
        return []
    log.warning("load - the graph lost nodes (%s): those layers are sent again", ", ".join(n.name for n in lost_nodes))
    return [*lost_nodes, *[layer for layer in edge_layers(layers) if manifest_lists(staging, target.key, layer.name)]]


def _edges_known(staging: sqlite3.Connection, graph: Graph, layer: Layer, layers: Sequence[Layer]) -> bool:
    """True when the graph holds exactly the relationships of the layer's type that the manifest lists (summed
    over this load's layers that share the type): then a row new to the manifest is not in the graph, and CREATE
    is safe. A graph written by someone else, by a load that was not recorded, or by a layer not loaded now, holds
    more than that and is MERGEd."""
    assert isinstance(layer, EdgeLayer)
    names = [other.name for other in edge_layers(layers) if other.type == layer.type]
    listed = sum(manifest_count(staging, graph.target.key, name) for name in names)
    in_graph = cypher.edge_count(graph, layer.type)
    if in_graph != listed:
        log.info("load - %s: the graph holds %d %s, the manifest %d: MERGE", layer.name, in_graph, layer.type, listed)
    return in_graph == listed


class _LayerReader:
    """A layer's rows, diffed against the manifest and cut into batches, read ahead in a thread of its own."""

    def __init__(
        self,
        archive: sqlite3.Connection,
        staging: sqlite3.Connection,
        graph: Graph,
        layer: Layer,
        settings: Settings,
        delta: memory_delta.MemoryDelta | None = None,
        scopes: Sequence[IdScope] = (),
    ) -> None:
        self.layer, self.rows_read = layer, 0
        self.scoped = next((scope for scope in scopes if scope.covers(layer)), None)
        self.source = archive if layer.source == "archive" else staging
        key = graph.target.key
        max_bytes = settings.load.max_batch_bytes
        if graph.dialect == "arcadedb":
            max_bytes = min(max_bytes, ARCADEDB_BATCH_BYTES)
        rows_path, self.manifest_path = _path(self.source), _path(staging)

        def produce() -> Iterator[Batch]:  # runs in the reader thread, with connections of its own
            with _reader(rows_path) as rows_db, _reader(self.manifest_path) as manifest_db:
                if delta is not None and delta.covers(layer):  # an incremental cues run: only what may differ
                    changes = memory_delta.changes(rows_db, manifest_db, key, layer, delta, self._counted)
                elif self.scoped is not None:  # a change log names a few ids (archive_delta, staging_delta)
                    changes = self.scoped.changes(rows_db, manifest_db, key, layer, self._counted)
                else:
                    current = self._counted(source_rows(rows_db.execute(ordered_sql(layer)), layer))
                    changes = diff(layer, current, iter_manifest(manifest_db, key, layer.name))
                size = settings.load.batch_size
                yield from batches(layer, changes, batch_size=size, max_bytes=max_bytes, first_size=FIRST_BATCH)

        self.batches = Prefetch(produce)

    def _counted(self, rows: Iterator[Change]) -> Iterator[Change]:
        for row in rows:
            self.rows_read += 1  # only this reader's thread writes it; the stage reads it once the layer is done
            yield row

    def close(self) -> None:
        self.batches.close()


def _load_layer(
    reader: _LayerReader, ctx: StageContext, graph: Graph, tally: Tally, *, may_create: bool = False
) -> None:
    """Write one layer's changes in batches, as its reader yields them."""
    layer = reader.layer
    numbers = {kind: done_batches(ctx.staging, ctx.run_id, layer.name, kind) for kind in ("upsert", "delete")}
    if any(numbers.values()):
        tally.add("batches_resumed", sum(numbers.values()))
        log.info("load - %s: resuming after %s done batch(es) of run %s", layer.name, numbers, ctx.run_id)
    manifest_path = reader.manifest_path
    ledger: WriteBehind[sqlite3.Connection] = WriteBehind(lambda: connect(manifest_path), lambda conn: conn.close())
    try:
        with _bar(ctx.progress, reader) as advance:
            for batch in reader.batches:
                numbers[batch.kind] += 1
                _write_batch(ledger, ctx, graph, batch, numbers[batch.kind], tally, may_create)
                advance(len(batch.changes))
    except BaseException:
        with suppress(BaseException):  # the batch's failure is the error to report; the ledger has recorded it
            ledger.close()
        raise
    ledger.close()
    tally.add("rows_read", reader.rows_read)
    tally.read[layer.name] = reader.rows_read


def _write_batch(
    ledger: WriteBehind[sqlite3.Connection],
    ctx: StageContext,
    graph: Graph,
    batch: Batch,
    number: int,
    tally: Tally,
    may_create: bool,
) -> None:
    layer, target, settings, stage_run_id = batch.layer, graph.target, ctx.settings, ctx.stage_run_id
    if graph.dialect == "arcadedb" and batch.nbytes > ARCADEDB_BATCH_BYTES:
        raise GraphWriteError(
            f"graph {target.describe()}: {layer.name} row {batch.first_key!r} is {batch.nbytes / 2**20:.1f} MiB;"
            f" ArcadeDB refuses Bolt messages over {cypher.ARCADEDB_MAX_MESSAGE // 2**20} MiB (load into Neo4j)"
        )
    key = BatchKey(ctx.run_id, layer.name, batch.kind, number)
    rows, first, last = len(batch.changes), batch.first_key, batch.last_key
    ledger.submit(
        lambda conn: begin_batch(
            conn, key, stage_run_id=stage_run_id, target=target.key, rows=rows, first_key=first, last_key=last
        )
    )
    started = time.monotonic()

    def retried(_attempt: int, why: str) -> None:
        tally.add("retries")
        ledger.submit(lambda conn: retried_batch(conn, key, why))

    query, fallback, retry_as = _statements(batch, may_create)
    try:
        written = graph.write_retrying(
            query,
            batch.params,
            retries=settings.load.retries,
            backoff_s=settings.load.retry_backoff_s,
            on_retry=retried,
            on_conflict=fallback,
            retry_as=retry_as,
        )
    except BaseException as exc:
        error, seconds = str(exc) or type(exc).__name__, time.monotonic() - started
        ledger.submit(lambda conn: fail_batch(conn, key, seconds, error))
        raise
    seconds, target_key = time.monotonic() - started, target.key
    if query != cypher.upsert(layer) and batch.kind == "upsert":
        tally.add("batches_created")  # sent as CREATE (a node batch that fell back to MERGE counts too)
    kind = "nodes" if isinstance(layer, NodeLayer) else "edges"
    upserted: list[tuple[str, int]] = []
    deleted: list[str] = []
    if batch.kind == "delete":
        deleted = [c.key for c in batch.changes]
        tally.add(f"{kind}_deleted", len(batch.changes))
    elif kind == "edges" and written < len(batch.changes):
        # Some end nodes are missing: keep these rows out of the manifest so that a later load tries them again.
        tally.add("edges_missing_ends", len(batch.changes) - written)
        tally.add("edges_upserted", written)
    else:
        upserted = [(c.key, c.row_hash) for c in batch.changes]
        tally.add(f"{kind}_upserted", len(batch.changes))
    ledger.submit(
        lambda conn: finish_batch(
            conn, key, seconds, target=target_key, written=written, upserted=upserted, deleted=deleted
        )
    )
    tally.add("batches")


def _statements(batch: Batch, may_create: bool) -> tuple[str, str | None, str | None]:
    """The batch's statement, the one to send on a uniqueness conflict, the one to send on a retry.

    Rows new to the manifest are CREATEd (cypher.py, points 3 and 5): nodes fall back to MERGE on a conflict,
    relationships are retried as MERGE (the lost attempt may have committed)."""
    layer = batch.layer
    if batch.kind == "delete":
        return cypher.delete(layer), None, None
    if not (may_create and batch.all_new):
        return cypher.upsert(layer), None, None
    props = list(batch.changes[0].params["props"])  # a layer's rows all carry the same property names
    if isinstance(layer, NodeLayer):
        return cypher.create_nodes(layer, props), cypher.upsert(layer), None
    return cypher.create_edges(layer, props), None, cypher.upsert(layer)


def _path(conn: sqlite3.Connection) -> Path:
    return Path(next(row[2] for row in conn.execute("PRAGMA database_list") if row[1] == "main"))


@contextmanager
def _reader(path: Path) -> Iterator[sqlite3.Connection]:
    """A read-only connection to the file: a snapshot for the whole layer while the stage writes batches."""
    with closing(connect_readonly(path)) as reader:
        reader.execute("BEGIN")  # one read transaction: rows and manifest stay consistent for the whole layer
        yield reader


@contextmanager
def _bar(progress: ProgressFactory | None, reader: _LayerReader) -> Iterator[Callable[[int], object]]:
    layer, conn, total = reader.layer, reader.source, 0
    if progress is not None:
        scoped = reader.scoped
        total = scoped.count(conn, layer) if scoped else int(conn.execute(count_sql(layer)).fetchone()[0])
    with bar(progress, f"load {layer.name} (rows)", total) as advance:
        yield advance
