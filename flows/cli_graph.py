"""`chatmem graph up|down|status|stats|export-csv`: the local ArcadeDB Bolt server, what the graph holds, and the
bulk path into an empty Neo4j (the CSV files its offline importer reads).

The graph is the one NEO4J_URI names, else the local server under `<data_dir>/graph`. These commands never
import prefect or the pipeline; the neo4j driver loads only inside the commands that talk to a server.
"""

from __future__ import annotations

import shlex
import sqlite3
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from contracts.errors import ChatmemError
from flows.cli_data import require_data
from flows.cli_table import JSON_OPTION, emit, print_table
from staging.db import connect_readonly

if TYPE_CHECKING:
    from flows.cli_app import App


@click.group("graph")
def graph() -> None:
    """The graph: start or stop the local Bolt server, show its status and what it holds.

    With NEO4J_URI set, `status` and `stats` talk to that server; `up` and `down` always manage the local
    ArcadeDB server (bound to 127.0.0.1, files under <data_dir>/graph).

    \b
    Example: chatmem graph up && chatmem graph stats --json
    """


@graph.command("up")
@JSON_OPTION
@click.pass_obj
def graph_up(app: App, as_json: bool) -> None:
    """Start the local graph server (ArcadeDB with its Bolt plugin) unless it is running; wait until it answers.

    Prints the Bolt URI, database and user; the password stays in the file named (mode 0600).

    \b
    Example: chatmem graph up --json
    """
    from clients.graph_server import USER
    from clients.graph_target import local_server

    settings = app.settings()
    server = local_server(settings)
    info, started = server.start()
    data = {
        "status": "started" if started else "running",
        "uri": info.uri,
        "database": info.database,
        "user": USER,
        "password_file": str(server.password_path),
        "pid": info.pid,
        "log": str(server.log_path),
    }
    if settings.load.uri:
        data["note"] = "NEO4J_URI is set: the load stage writes there, not to this server"
    _show(data, as_json)


@graph.command("down")
@JSON_OPTION
@click.pass_obj
def graph_down(app: App, as_json: bool) -> None:
    """Stop the local graph server (it closes its databases cleanly); nothing to do if it is not running.

    \b
    Example: chatmem graph down
    """
    from clients.graph_target import local_server

    server = local_server(app.settings())
    stopped = server.stop()
    _show({"status": "stopped" if stopped else "not running", "dir": str(server.directory)}, as_json)


@graph.command("reset-password")
@JSON_OPTION
@click.pass_obj
def graph_reset_password(app: App, as_json: bool) -> None:
    """Give the local graph server a new root password, keeping every database (for a lost password file).

    Stops the server if it runs, removes root's entry from ArcadeDB's user file, writes a new password file
    (mode 0600) and starts the server again so that root is created with it. Waits for no run: it refuses
    while a run holds the data dir.

    \b
    Example: chatmem graph reset-password
    """
    from clients.graph_target import local_server
    from staging.lock import data_dir_lock

    settings = app.settings()
    server = local_server(settings)
    with data_dir_lock(settings.data_dir, "graph reset-password", wait_s=settings.pipeline.lock_wait_s):
        server.reset_password()
        info, _ = server.start()
    _show({"status": "password reset", "uri": info.uri, "password_file": str(server.password_path)}, as_json)


@graph.command("status")
@JSON_OPTION
@click.pass_obj
def graph_status(app: App, as_json: bool) -> None:
    """Say which graph the load stage writes to, and whether the local server is running.

    \b
    Example: chatmem graph status --json
    """
    from clients.graph_target import local_server

    settings = app.settings()
    require_data(settings)  # a data dir that does not exist (a mistyped --data-dir): said, not "not running"
    server = local_server(settings)
    info = server.status()
    local: dict[str, Any] = {"running": info is not None, "dir": str(server.directory)}
    if info is not None:
        local.update(uri=info.uri, database=info.database, pid=info.pid, started_at=info.started_at)
    strays = server.strays()
    if strays:  # started, its starter killed before it answered: it holds the database, unannounced
        local["unannounced_pids"] = strays
    data: dict[str, Any] = {"local_server": local}
    if settings.load.uri:  # the neo4j driver loads only to check a configured server
        from clients.graph import Graph, redact
        from clients.graph_errors import LoadError
        from clients.graph_target import resolve_target

        target, _ = resolve_target(settings, start=False)
        data["target"] = {"uri": redact(settings.load.uri), "database": settings.load.database}
        try:
            if target is not None:  # always, with a uri set
                with Graph(target, connect_timeout_s=settings.load.connect_timeout_s) as graph_client:
                    graph_client.check()
            data["target"]["reachable"] = True
        except LoadError as exc:
            data["target"].update(reachable=False, error=str(exc))
    elif settings.load.local_server:
        data["target"] = {"uri": info.uri if info else None, "database": local.get("database"), "local": True}
    else:
        data["target"] = None
    if as_json:
        emit(data)
        return
    target_line = data["target"]
    if target_line is None:
        click.echo("target: none (no NEO4J_URI, local server off): the load stage is skipped")
    elif target_line.get("local"):
        click.echo("target: the local server (set NEO4J_URI to load into Neo4j)")
    else:
        reach = "reachable" if target_line["reachable"] else f"NOT reachable: {target_line['error']}"
        click.echo(f"target: {target_line['uri']} (database {target_line['database'] or 'default'}), {reach}")
    state = f"running at {local['uri']} (pid {local['pid']})" if info else "not running"
    click.echo(f"local server: {state}; files in {local['dir']}")
    if strays:
        pids = ", ".join(map(str, strays))
        click.echo(f"local server process(es) {pids} hold the database but were never announced: chatmem graph down")


@graph.command("stats")
@JSON_OPTION
@click.pass_obj
def graph_stats(app: App, as_json: bool) -> None:
    """Count nodes per label and relationships per type in the graph, next to what staging expects.

    --json prints {"nodes": {label: n}, "edges": {type: n}, "expected": {"nodes": {...}, "edges": {...}}}.

    \b
    Example: chatmem graph stats --json
    """
    from clients.graph import Graph
    from clients.graph_target import NO_GRAPH, resolve_target
    from load.inputs import expected_counts

    settings = app.settings()
    require_data(settings)  # not "start the server" for a data dir that does not exist
    target, _ = resolve_target(settings, start=False)
    if target is None:
        raise ChatmemError(NO_GRAPH)
    with Graph(target, connect_timeout_s=settings.load.connect_timeout_s) as graph_client:
        graph_client.check()
        nodes, edges = graph_client.graph_counts()
    with _readonly(settings.archive_path) as archive_db, _readonly(settings.staging_path) as staging_db:
        expected = expected_counts(archive_db, staging_db)
    if as_json:
        emit({"nodes": nodes, "edges": edges, "expected": expected})
        return
    click.echo(f"graph {target.describe()}")
    rows: list[dict[str, Any]] = []
    for kind, found, wanted in (("node", nodes, expected["nodes"]), ("edge", edges, expected["edges"])):
        for name in sorted(set(found) | set(wanted)):
            rows.append({"kind": kind, "name": name, "graph": found.get(name, 0), "expected": wanted.get(name, "")})
    print_table(rows, ["kind", "name", "graph", "expected"])


@graph.command("export-csv")
@click.argument("out_dir", type=click.Path(file_okay=False, path_type=Path))
@JSON_OPTION
@click.pass_obj
def graph_export_csv(app: App, out_dir: Path, as_json: bool) -> None:
    """Write the graph as the CSV files `neo4j-admin database import full` reads, and OUT_DIR/import.sh.

    The bulk path for a first load of a large archive into an empty Neo4j (docs/graph.md): one file per layer,
    the rows and properties the load stage sends. Stop the database, run import.sh [DATABASE] on the Neo4j host,
    start it, then `chatmem stage load --run-id R` (R: the latest run, `chatmem staging runs`) with NEO4J_URI
    once: it adds the constraints and indexes, finds every row there and from then on loads what changed.
    OUT_DIR must be new, empty or an earlier export (the files its import.sh names are replaced; anything else
    there is refused). Reads the data dir only.

    \b
    Example: chatmem graph export-csv ~/neo4j-import && ~/neo4j-import/import.sh neo4j
    """
    from load import bulk_csv

    settings = app.settings()
    require_data(settings, settings.archive_path, settings.staging_path)
    earlier = _earlier_export(out_dir)
    with _readonly(settings.archive_path) as archive_db, _readonly(settings.staging_path) as staging_db:
        command = bulk_csv.write(archive_db, staging_db, out_dir)
    written = set(_named_files(command))
    for stale in earlier - written:  # a layer an earlier export had and this one has not: never imported again
        (out_dir / stale).unlink(missing_ok=True)
    files = {name: (out_dir / name).stat().st_size for name in sorted(written)}
    if as_json:
        emit({"out_dir": str(out_dir), "files": files, "command": command, "script": str(out_dir / "import.sh")})
        return
    click.echo(f"{len(files)} CSV file(s), {sum(files.values()):,} bytes, in {out_dir}")
    click.echo(f"import into an empty, stopped Neo4j database: {out_dir / 'import.sh'} [DATABASE]")


def _named_files(command: str) -> list[str]:
    """The CSV files an import command names (`--nodes=Label=file`, `--relationships=TYPE=file`)."""
    return [
        part.rsplit("=", 1)[1] for part in shlex.split(command) if part.startswith(("--nodes=", "--relationships="))
    ]


def _earlier_export(out_dir: Path) -> set[str]:
    """The files of an earlier `graph export-csv` in OUT_DIR (its import.sh and the CSV files that names), which a
    new export replaces; a UsageError (exit 2) when OUT_DIR holds anything else: nothing of the user's is
    overwritten or removed."""
    if not out_dir.exists():
        return set()
    script = out_dir / "import.sh"
    ours: set[str] = set()
    if script.is_file():
        text = script.read_text(encoding="utf-8", errors="replace")
        if "neo4j-admin database import full" in text:
            ours = {"import.sh", *_named_files(text.splitlines()[-1].split("&&", 1)[-1])}
    others = sorted(p.name for p in out_dir.iterdir() if p.name not in ours or not p.is_file())
    if others:
        shown = ", ".join(others[:3]) + (" ..." if len(others) > 3 else "")
        raise click.UsageError(f"{out_dir} holds other files ({shown}): give a new or empty folder")
    return ours - {"import.sh"}


@contextmanager
def _readonly(path: Path) -> Iterator[sqlite3.Connection]:
    """The database read-only, or an empty in-memory one when it does not exist yet (nothing is expected)."""
    conn = connect_readonly(path) if path.exists() else sqlite3.connect(":memory:")
    with closing(conn):
        yield conn


def _show(data: dict[str, Any], as_json: bool) -> None:
    if as_json:
        emit(data)
        return
    for name, value in data.items():
        click.echo(f"{name + ':':<15}{value}")
