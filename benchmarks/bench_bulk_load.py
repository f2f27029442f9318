"""The first load of a data dir into an empty local ArcadeDB graph: Bolt batches against the bulk path (issue 23).

Both contenders load every layer present in a copy of a data dir `chatmem run` built, each into a fresh local
server of its own (fresh directory, fresh JVM):

- batched: the load stage as the pipeline runs it (UNWIND batches over Bolt);
- bulk: the uniqueness constraints over Bolt, the server stopped, benchmarks/arcadedb_bulk_writer.py (ArcadeDB's
  GraphBatch, embedded, in a process of its own) writing the same layers and their manifest, the server started.

Reported per contender: wall, CPU seconds (user + system) of this process, of the graph server's JVM (from its
start to the end) and of the bulk writer's process (JVM included); then the two graphs are compared: node and
relationship counts per label and type, and the properties of a sample of nodes and relationships of every layer.

Example:
    python benchmarks/bench_bulk_load.py --data-dir /work/scale/d50k
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

from bench_load import cpu_of, pipeline_data  # noqa: E402

from clients.graph import Graph, Target  # noqa: E402
from clients.graph_server import USER, LocalServer  # noqa: E402
from contracts.settings import Settings  # noqa: E402
from load import cypher  # noqa: E402
from load.layers import Layer, NodeLayer, node_layers  # noqa: E402
from load.plan import ordered_sql  # noqa: E402
from staging.archive import open_archive  # noqa: E402
from staging.ledger import open_run, open_staging  # noqa: E402


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def batched(settings: Settings, layers: list[Layer], directory: Path, heap: str) -> dict[str, Any]:
    from flows.stage_runner import run_stage_now

    server = LocalServer(directory, heap=heap)
    wall, cpu = time.perf_counter(), time.process_time()
    info, _ = server.start()
    target = Target(info.uri, USER, server.password(), info.database, key=f"local:{directory}#{info.database}")
    with closing(open_archive(settings.archive_path)) as archive, closing(open_staging(settings.staging_path)) as st:
        run_id = open_run(st, stages=["load"], exports=[], settings={}, code_version="bench")
        result = run_stage_now("load", archive, st, run_id=run_id, settings=settings, layers=layers, target=target)
    assert result.status == "succeeded", result
    figures = {
        "wall": time.perf_counter() - wall,
        "cpu": time.process_time() - cpu,
        "server_cpu": cpu_of(info.pid),
        "bulk_cpu": 0.0,
        "counts": result.counts,
    }
    return {"figures": figures, "server": server, "target": target}


def bulk(settings: Settings, layers: list[Layer], directory: Path, heap: str, bulk_heap: str) -> dict[str, Any]:
    server = LocalServer(directory, heap=heap)
    wall, cpu, child = time.perf_counter(), time.process_time(), children_cpu()
    info, _ = server.start()
    key = f"local:{directory}#{info.database}"
    target = Target(info.uri, USER, server.password(), info.database, key=key)
    with Graph(target) as graph:
        graph.check()
        cypher.ensure_constraints(graph, [layer.label for layer in node_layers(layers)])
    first_cpu = cpu_of(info.pid)
    server.stop()
    with closing(open_staging(settings.staging_path)) as st:
        run_id = open_run(st, stages=["load"], exports=[], settings={}, code_version="bench")
    began = time.perf_counter()
    process = subprocess.run(
        [
            sys.executable,
            str(HERE / "arcadedb_bulk_writer.py"),
            "--data-dir",
            str(settings.data_dir),
            "--database",
            str(directory / "arcadedb" / "databases" / info.database),
            "--target",
            key,
            "--run-id",
            run_id,
            "--layers",
            ",".join(layer.name for layer in layers),
            "--heap",
            bulk_heap,
        ],
        cwd=directory,  # the embedded engine writes its log/ folder into the working directory
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        check=False,
    )
    writer_wall = time.perf_counter() - began
    if process.returncode != 0:
        raise SystemExit(f"bulk writer failed:\n{process.stderr[-4000:]}")
    result = json.loads(process.stdout.strip().splitlines()[-1])
    info, _ = server.start()
    figures = {
        "wall": time.perf_counter() - wall,
        "cpu": time.process_time() - cpu,
        "server_cpu": first_cpu + cpu_of(info.pid),
        "bulk_cpu": children_cpu() - child,
        "writer_wall": writer_wall,
        "counts": result["counts"],
        "seconds": result["seconds"],
        "layer_cpu": result["cpu"],
        "writer_cpu_in_process": result["total_cpu"],
    }
    target = Target(info.uri, USER, server.password(), info.database, key=key)
    return {"figures": figures, "server": server, "target": target}


def sample_keys(settings: Settings, layer: Layer, n: int, seed: int) -> list[tuple[str, str]]:
    opener = open_archive if layer.source == "archive" else open_staging
    path = settings.archive_path if layer.source == "archive" else settings.staging_path
    with closing(opener(path)) as conn:
        if isinstance(layer, NodeLayer):
            keys = [(str(row[0]), "") for row in conn.execute(f"SELECT _key FROM ({ordered_sql(layer)})")]
        else:
            keys = [(str(r[1]), str(r[2])) for r in conn.execute(f"SELECT _key, src, dst FROM ({ordered_sql(layer)})")]
    return random.Random(seed).sample(keys, min(n, len(keys)))


def read_sample(graph: Graph, layer: Layer, keys: list[tuple[str, str]]) -> list[Any]:
    if isinstance(layer, NodeLayer):
        query = f"UNWIND $keys AS k MATCH (n:{layer.label} {{id: k}}) RETURN k, properties(n) AS p ORDER BY k"
        return graph.run(query, keys=[k for k, _ in keys])
    query = (
        f"UNWIND $keys AS k MATCH (a:{layer.src} {{id: k[0]}})-[r:{layer.type}]->(b:{layer.dst} {{id: k[1]}})"
        " RETURN k, properties(r) AS p ORDER BY k[0], k[1]"
    )
    return graph.run(query, keys=[list(k) for k in keys])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--work", type=Path, default=Path("/tmp/bench-bulk-load"))
    parser.add_argument("--heap", default="2g", help="the graph server's heap")
    parser.add_argument("--bulk-heap", default="2g", help="the bulk writer's heap")
    parser.add_argument("--sample", type=int, default=300, help="rows per layer whose properties are compared")
    parser.add_argument("--only", choices=("batched", "bulk"), help="run one contender")
    args = parser.parse_args(argv)
    shutil.rmtree(args.work, ignore_errors=True)
    args.work.mkdir(parents=True)
    import bench_load

    bench_load.OUT = args.work
    settings, layers = pipeline_data(args.data_dir)
    print(f"load average {os.getloadavg()}, layers {[layer.name for layer in layers]}", file=sys.stderr)
    runs = {}
    for name in ("batched", "bulk"):
        if args.only and args.only != name:
            continue
        directory = args.work / f"graph-{name}"
        if name == "batched":
            runs[name] = batched(settings, layers, directory, args.heap)
        else:
            runs[name] = bulk(settings, layers, directory, args.heap, args.bulk_heap)
        f = runs[name]["figures"]
        print(
            f"{name}: wall {f['wall']:.1f} s, CPU this process {f['cpu']:.1f} s, server {f['server_cpu']:.1f} s,"
            f" bulk writer {f['bulk_cpu']:.1f} s; total CPU {f['cpu'] + f['server_cpu'] + f['bulk_cpu']:.1f} s"
            f" (load average {os.getloadavg()})",
            file=sys.stderr,
        )
        print(json.dumps({k: v for k, v in f.items()}, default=str), file=sys.stderr)
    try:
        if len(runs) == 2:
            graphs = {}
            for name, run in runs.items():
                with Graph(run["target"]) as graph:
                    graph.check()
                    counts = graph.graph_counts()
                    samples = {
                        layer.name: read_sample(graph, layer, sample_keys(settings, layer, args.sample, 1))
                        for layer in layers
                    }
                    graphs[name] = (counts, samples)
            same_counts = graphs["batched"][0] == graphs["bulk"][0]
            print(f"counts equal: {same_counts}: {graphs['bulk'][0]}", file=sys.stderr)
            for layer in layers:
                a, b = graphs["batched"][1][layer.name], graphs["bulk"][1][layer.name]
                print(f"sample {layer.name}: {len(a)} rows, equal: {a == b}", file=sys.stderr)
    finally:
        for run in runs.values():
            run["server"].stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
