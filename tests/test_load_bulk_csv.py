"""load/bulk_csv.py: the CSV files `neo4j-admin database import` reads hold exactly the rows the load sends.

neo4j-admin is not installable here (no Neo4j on this machine): the files are read back with Python's csv module
the way neo4j-admin reads them (header types, NULL as an empty unquoted field, quoted multi-line text) and
compared with the layers' rows from a real archive.db built by the real ingest stage.
"""

from __future__ import annotations

import csv
import json
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

from contracts.settings import Settings
from load import bulk_csv
from load.layers import ARCHIVE_LAYERS, LAYERS, TEXT_CAP_BYTES, NodeLayer
from load.plan import ordered_sql, source_rows
from staging.archive import open_archive
from staging.ledger import open_staging
from tests.graph_helpers import ingest, write_branchy_jsonl

TRICKY = 'She said "no, thanks",\nthen left; naïve café ☕'


def parse(value: str, kind: str | None) -> Any:
    if value == "":
        return None
    return {"long": int, "double": float, "boolean": lambda v: v == "true"}.get(kind or "", str)(value)


def read_back(path: Path) -> tuple[list[str], list[list[Any]]]:
    csv.field_size_limit(4 * 2**20)  # neo4j-admin's default --read-buffer-size (Python's default is 128 KiB)
    with path.open(encoding="utf-8", newline="") as handle:
        reader = csv.reader(handle)
        header = next(reader)
        kinds = [h.split(":")[1] if ":" in h and not h.startswith(":") and "(" not in h else None for h in header]
        return header, [[parse(v, k) for v, k in zip(row, kinds, strict=True)] for row in reader]


def test_each_layer_file_holds_the_rows_the_load_sends(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path / "data")
    export = write_branchy_jsonl(tmp_path / "a.jsonl")
    lines = export.read_text(encoding="utf-8").splitlines()
    first = json.loads(lines[0])
    first["text"] = TRICKY
    second = json.loads(lines[1])
    second["text"] = "z" * (TEXT_CAP_BYTES + 5)  # cut to the cap and marked, as the load sends it
    export.write_text("\n".join([json.dumps(first), json.dumps(second), *lines[2:]]) + "\n", encoding="utf-8")
    ingest(settings, export)
    out = tmp_path / "import"
    with closing(open_archive(settings.archive_path)) as archive, closing(open_staging(settings.staging_path)) as st:
        command = bulk_csv.write(archive, st, out)
        for layer in ARCHIVE_LAYERS:
            header, rows = read_back(out / bulk_csv.file_name(layer))
            sent = list(source_rows(archive.execute(ordered_sql(layer)), layer))
            if isinstance(layer, NodeLayer):
                assert header[0] == f"id:ID({layer.label})"
                expected = [[c.params["id"], *c.params["props"].values()] for c in sent]
            else:
                assert header[:2] == [f":START_ID({layer.src})", f":END_ID({layer.dst})"]
                expected = [[c.params["src"], c.params["dst"], *c.params["props"].values()] for c in sent]
            assert rows == expected and (rows or layer.name == "Message-BRANCH-Message"), layer.name
            assert f"--{'nodes' if isinstance(layer, NodeLayer) else 'relationships'}=" in command
    message_header = (out / "Message.csv").read_text(encoding="utf-8").splitlines()[0].split(",")
    assert "is_active:boolean" in message_header and "seq:long" in message_header
    assert "text_truncated:boolean" in message_header and "text_bytes:long" in message_header
    _, messages = read_back(out / "Message.csv")
    text, cut, size = (message_header.index(n) for n in ("text", "text_truncated:boolean", "text_bytes:long"))
    assert [(len(r[text]), r[cut], r[size]) for r in messages if r[cut]] == [(TEXT_CAP_BYTES, True, TEXT_CAP_BYTES + 5)]
    raw = (out / "Message.csv").read_text(encoding="utf-8")
    assert '"She said ""no, thanks"",\nthen left; naïve café ☕"' in raw  # quoted, quotes doubled, one field
    assert ',,"text"' in raw  # the NULL author: an empty unquoted field (no property), not ""
    with closing(sqlite3.connect(settings.staging_path)) as staging:
        present = {name for (name,) in staging.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert {f.name for f in out.glob("*.csv")} >= {bulk_csv.file_name(layer) for layer in ARCHIVE_LAYERS}
    assert all(layer.name != "Tag" for layer in LAYERS) and "segments" in present
    assert "--multiline-fields=true" in command and (out / "import.sh").read_text().count("neo4j-admin") == 1


def test_export_csv_command_writes_the_files_and_refuses_a_folder_of_other_files(tmp_path: Path) -> None:
    """`chatmem graph export-csv OUT`: the same files as the module, their sizes in --json, and import.sh; a second
    export into the same folder replaces the files the first one's import.sh names; a folder holding anything else
    (a file or folder of the user's, a CSV of their own) is a usage error (exit 2) that touches nothing; a data dir
    with nothing in it is a one-line error (exit 1)."""
    from click.testing import CliRunner

    from flows.cli import cli

    def chatmem(*args: str | Path, data_dir: Path) -> Any:
        return CliRunner().invoke(cli, ["--data-dir", str(data_dir), *map(str, args)])

    data_dir = tmp_path / "data"
    ingest(Settings(data_dir=data_dir), write_branchy_jsonl(tmp_path / "a.jsonl"))
    out = tmp_path / "import"
    first = chatmem("graph", "export-csv", out, "--json", data_dir=data_dir)
    assert first.exit_code == 0, first.output
    report = json.loads(first.stdout)
    assert report["files"] == {p.name: p.stat().st_size for p in out.glob("*.csv")}
    assert "Message.csv" in report["files"] and report["command"].startswith("neo4j-admin database import full")
    assert (out / "import.sh").read_text().count("neo4j-admin") == 1
    script = out / "import.sh"  # an earlier export that had one more layer: its file goes, as the script named it
    script.write_text(script.read_text().replace(" --multiline", " --nodes=Gone=Gone-LAYER.csv --multiline"))
    (out / "Gone-LAYER.csv").write_text("id:ID(Gone)\n", encoding="utf-8")
    again = chatmem("graph", "export-csv", out, data_dir=data_dir)
    assert again.exit_code == 0 and "import.sh" in again.stdout, again.output
    assert not (out / "Gone-LAYER.csv").exists() and (out / "Message.csv").exists()

    for name, make in (("busy", "notes.txt"), ("mine", "mydata.csv"), ("nested", "sub.csv/")):
        folder = tmp_path / name
        folder.mkdir()
        (folder / make.rstrip("/")).mkdir() if make.endswith("/") else (folder / make).write_text("mine")
        refused = chatmem("graph", "export-csv", folder, data_dir=data_dir)
        assert refused.exit_code == 2 and make.rstrip("/") in refused.output, refused.output
        assert sorted(p.name for p in folder.iterdir()) == [make.rstrip("/")]  # nothing of the user's touched
    empty = chatmem("graph", "export-csv", tmp_path / "out2", data_dir=tmp_path / "nothing")
    assert empty.exit_code == 1 and "does not exist, so it holds no archive" in empty.output, empty.output
    assert not (tmp_path / "out2").exists() and not (tmp_path / "nothing").exists()
