"""What session 36's cold try found (a new user, a fresh clone, files of their own in /work/s36/cold-bad): each
through the real CLI (click's runner) on real files under tmp_path, with real SQLite."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner, Result
from test_ingest_stage import make_chatgpt_export, write_json

from flows.cli import cli


def chatmem(data_dir: Path, *args: str | Path, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(
        cli, ["--data-dir", str(data_dir), *map(str, args)], env={"COLUMNS": "120", **(env or {})}
    )


def test_a_folder_scan_leaves_out_another_chatmem_data_dir_in_one_line(tmp_path: Path) -> None:
    """`chatmem --data-dir X run --to ingest DIR` where DIR holds other data dirs (dd-*) read their state as exports:
    dd-*/chatmem.lock, graph/server.json, load-*.json failed "JSON object of an unknown shape", exit 1, "fix the
    files", and their databases were said one by one. Now a folder that is a data dir (staging.db, archive.db or
    chatmem.lock in it) is left out whole, said once with why; the run's own data dir is still not said."""
    downloads = tmp_path / "downloads"
    (downloads / "chatgpt").mkdir(parents=True)
    write_json(downloads / "chatgpt" / "conversations.json", make_chatgpt_export(2))
    other = downloads / "dd-other"
    built = chatmem(other, "run", "--to", "ingest", downloads / "chatgpt")
    assert built.exit_code == 0, built.output
    assert (other / "chatmem.lock").is_file() and (other / "staging.db").is_file()
    write_json(other / "load-archive.json", {"local:/x/graph#chatmem": {"nodes": 3}})  # as load writes it
    own = downloads / "dd-own"
    scan = chatmem(own, "run", "--to", "ingest", downloads)
    assert scan.exit_code == 0, scan.output
    assert "failed:" not in scan.output and "chatmem.lock" not in scan.output, scan.output
    [said] = [line for line in scan.stderr.splitlines() if "left out" in line]
    assert "left out 1: dd-other/ (a chatmem data dir: its state, no export)" in said, said
    assert "dd-own" not in said and "staging.db" not in said, said
    # a folder of data dirs only: nothing to read, said as such with the data dirs left out (not "fix the files")
    only = tmp_path / "only"
    only.mkdir()
    other.rename(only / "dd-other")
    alone = chatmem(tmp_path / "dd-3", "run", "--to", "ingest", only)
    assert alone.exit_code == 1 and "no export found" in alone.stderr, alone.output
    assert "dd-other/ (a chatmem data dir" in alone.stderr and "fix the file" not in alone.stderr, alone.stderr
