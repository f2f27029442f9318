"""The graph as the CSV files `neo4j-admin database import full` reads: the bulk path into an empty Neo4j.

Bolt batches write a first load of a large archive at a few thousand rows/s (the server checks a uniqueness
constraint and finds two ends per relationship in a transaction per batch). Neo4j's offline importer writes the
store files directly from CSV, into a database that must be empty and stopped: for a first build of a big archive
it is the fast path. This module writes one file per layer of `load/layers.py` (the rows the load stage would
send, the same properties) and the command that imports them:

    python -m load.bulk_csv --data-dir DATA_DIR OUT_DIR     # writes OUT_DIR/*.csv and OUT_DIR/import.sh

- nodes: `id:ID(Label)` then the properties, typed in the header (`seq:long`, `confidence:double`,
  `is_active:boolean`; text untyped); an ID space per label, as the load's uniqueness constraint per label;
- relationships: `:START_ID(Label)`, `:END_ID(Label)`, then the properties; the type is given on the command line
  (`--relationships=TYPE=file`), so two layers of one type (Segment- and Concept-BELONGS_TO-Topic) are two files;
- a message's text is capped as the load caps it (`layers.TEXT_CAP_BYTES`, with its `text_truncated`,
  `text_bytes` and `text_full_in` marks): the rows are `plan.source_rows`', and a field stays well under
  neo4j-admin's read buffer;
- a NULL is an empty unquoted field (not stored, as in the load); text is quoted and may hold newlines
  (`--multiline-fields=true`); an edge whose end has no node (the load counts them as missing ends) is skipped by
  `--skip-bad-relationships=true`.

After the import, run `chatmem stage load` against the database once with `NEO4J_URI`: it creates the uniqueness
constraints and property indexes, finds every row already there (it MERGEs: its manifest for that target is
empty) and from then on loads only what changed. Nothing here talks to a graph; tests/test_load_bulk_csv.py reads
the files back and compares them with the layers' rows.
"""

from __future__ import annotations

import argparse
import shlex
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import closing
from pathlib import Path
from typing import Any

from load.inputs import available_layers
from load.layers import LAYERS, Layer, NodeLayer
from load.plan import cap_marks, ordered_sql, source_rows

TYPES = {int: "long", float: "double", bool: "boolean"}


def column_types(conn: sqlite3.Connection, layer: Layer, columns: Sequence[str]) -> dict[str, str | None]:
    """Each property's header type from its values' SQLite storage classes: long, double, boolean or (text) None."""
    found: dict[str, str | None] = {}
    for name in columns:
        if name in layer.booleans:
            found[name] = "boolean"
            continue
        kinds = {
            str(row[0])
            for row in conn.execute(f'SELECT DISTINCT typeof("{name}") FROM ({layer.sql}) WHERE "{name}" IS NOT NULL')
        }
        found[name] = "long" if kinds == {"integer"} else "double" if kinds <= {"integer", "real"} and kinds else None
    return found


def header(layer: Layer, types: dict[str, str | None]) -> list[str]:
    props = [f"{name}:{kind}" if kind else name for name, kind in types.items()]
    if isinstance(layer, NodeLayer):
        return [f"id:ID({layer.label})", *props]
    return [f":START_ID({layer.src})", f":END_ID({layer.dst})", *props]


def rows(conn: sqlite3.Connection, layer: Layer) -> Iterator[list[Any]]:
    """The layer's rows in key order, as the load sends them (`plan.source_rows`: NULLs as None, the boolean
    columns as bools, a capped text cut and marked)."""
    for change in source_rows(conn.execute(ordered_sql(layer)), layer):
        params = change.params
        ends = [params["id"]] if isinstance(layer, NodeLayer) else [params["src"], params["dst"]]
        yield [*ends, *params["props"].values()]


def field(value: Any) -> str:
    """One CSV field: NULL empty and unquoted (neo4j-admin stores no property), numbers bare, text quoted with its
    quotes doubled (an empty text is `""`: an empty string, not a NULL)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, bytes):
        value = value.hex()
    return '"' + str(value).replace('"', '""') + '"'


def line(values: Sequence[Any]) -> str:
    return ",".join(field(v) for v in values) + "\n"


def file_name(layer: Layer) -> str:
    return f"{layer.name}.csv"


def write(archive: sqlite3.Connection, staging: sqlite3.Connection, out: Path, layers: Sequence[Layer] = LAYERS) -> str:
    """Write one CSV per present layer into `out`, and `import.sh`; returns the import command."""
    out.mkdir(parents=True, exist_ok=True)
    present, _ = available_layers(archive, staging, layers)
    nodes, edges = [], []
    for layer in present:
        conn = archive if layer.source == "archive" else staging
        cursor = conn.execute(f"SELECT * FROM ({layer.sql}) LIMIT 0")
        columns = [c[0] for c in cursor.description][1 if isinstance(layer, NodeLayer) else 2 :]
        types = column_types(conn, layer, columns)
        if isinstance(layer, NodeLayer):
            types |= cap_marks(c for c in columns if c in layer.capped)
        path = out / file_name(layer)
        with path.open("w", encoding="utf-8", newline="") as handle:
            handle.write(",".join(header(layer, types)) + "\n")
            handle.writelines(line(values) for values in rows(conn, layer))
        if isinstance(layer, NodeLayer):
            nodes.append(f"--nodes={layer.label}={shlex.quote(path.name)}")
        else:
            edges.append(f"--relationships={layer.type}={shlex.quote(path.name)}")
    command = " ".join(
        [
            "neo4j-admin database import full",
            *nodes,
            *edges,
            "--multiline-fields=true --skip-bad-relationships=true --overwrite-destination=false",
            '"${1:-neo4j}"',
        ]
    )
    script = out / "import.sh"
    script.write_text(
        "#!/bin/sh\n# Import into an empty, stopped Neo4j database (default: neo4j). Run from this folder.\n"
        f'cd "$(dirname "$0")" && {command}\n',
        encoding="utf-8",
    )
    script.chmod(0o755)
    return command


def main(argv: list[str] | None = None) -> int:
    from contracts.settings import Settings
    from staging.db import connect_readonly

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", type=Path, required=True, help="the chatmem data dir (archive.db, staging.db)")
    parser.add_argument("out", type=Path, help="folder for the CSV files and import.sh")
    args = parser.parse_args(argv)
    settings = Settings(data_dir=args.data_dir)
    with (
        closing(connect_readonly(settings.archive_path)) as archive,
        closing(connect_readonly(settings.staging_path)) as staging,
    ):
        print(write(archive, staging, args.out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
