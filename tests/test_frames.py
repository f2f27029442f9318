"""staging/frames.py and `chatmem staging export`: typed polars frames of any table, files for analysis."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner
from inspect_support import FULL_STAGES, RUN_ID, Inspected

from contracts.errors import ConfigError
from flows.cli import cli
from staging.frames import Frames


def test_frames_type_columns_and_decode_json(inspected: Inspected) -> None:
    """Insertion order; declared types, JSON decoded to lists/structs, ISO times to UTC datetimes, flags to booleans."""
    frames = Frames(inspected.settings.data_dir)
    stages = frames.table("stage_runs", run_id=RUN_ID)
    assert stages["stage"].to_list() == list(FULL_STAGES)  # row order
    assert stages.schema["duration_s"] == pl.Float64
    assert stages.schema["started_at"] == pl.Datetime("us", "UTC")
    ingest = stages.filter(pl.col("stage") == "ingest").row(0, named=True)
    assert ingest["counts"]["quarantined"] == 1 and ingest["counts"]["messages_read"] == 84
    topics = frames.table("topics", run_id=RUN_ID)
    assert topics.schema["keywords"] == pl.List(pl.String) and topics["size"].sum() <= 42
    messages = frames.table("messages")
    assert messages.schema["is_active"] == pl.Boolean and messages.height == 84
    vectors = frames.table("embeddings")
    assert vectors.schema["vector"] == pl.Binary and len(vectors["vector"][0]) == 4 * vectors["dim"][0]
    runs = frames.table("runs")
    assert runs["settings"][0]["extract"]["llm"]["model"] == "test-model"
    assert "sk-test" not in json.dumps(runs["settings"].to_list())  # the ledger never held the key
    assert set(frames.tables()) == {"archive", "staging"} and "messages_fts_data" not in frames.tables()["archive"]


def test_frames_refuse_unknown_tables_and_run_filters_they_cannot_apply(inspected: Inspected) -> None:
    """An unknown table names the closest tables; --run-id on a table without run_id says to drop it."""
    frames = Frames(inspected.settings.data_dir)
    with pytest.raises(ConfigError, match=r"unknown table 'stage_run'; did you mean stage_runs\b"):
        frames.table("stage_run")
    with pytest.raises(ConfigError, match="no run_id column"):
        frames.table("messages", run_id=RUN_ID)


@pytest.mark.parametrize("fmt", ["parquet", "csv", "jsonl"])
def test_export_writes_every_row_of_the_run_in_each_format(inspected: Inspected, tmp_path: Path, fmt: str) -> None:
    """`chatmem staging export` writes the run's rows (42 extraction calls, 3 topic labels); parquet keeps types,
    csv and jsonl keep JSON as JSON."""
    out = tmp_path / f"calls.{fmt}"
    args = ["--data-dir", str(inspected.settings.data_dir), "staging", "export", "llm_calls", "--run-id", RUN_ID]
    result = CliRunner().invoke(cli, [*args, "--format", fmt, "--out", str(out), "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {"table": "llm_calls", "rows": 45, "format": fmt, "path": str(out)}
    if fmt == "parquet":
        back = pl.read_parquet(out)
        assert back.schema["started_at"] == pl.Datetime("us", "UTC") and back["request"][0]["model"] == "test-model"
    elif fmt == "csv":
        back = pl.read_csv(out)
        assert json.loads(back["request"][0])["model"] == "test-model"
    else:
        first = json.loads(out.read_text(encoding="utf-8").splitlines()[0])
        assert first["request"]["model"] == "test-model" and first["run_id"] == RUN_ID
    assert back.height == 45 if fmt != "jsonl" else len(out.read_text(encoding="utf-8").splitlines()) == 45


def test_export_of_binary_and_nested_columns_to_csv(inspected: Inspected, tmp_path: Path) -> None:
    """Vectors go to CSV as hex and struct columns as JSON text, so every table can be exported as CSV."""
    frames = Frames(inspected.settings.data_dir)
    path, rows = frames.export("embeddings", tmp_path / "e.csv", "csv")
    back = pl.read_csv(path)
    assert rows == back.height and len(back["vector"][0]) == 2 * 4 * back["dim"][0]
    path, _ = frames.export("cluster_runs", tmp_path / "c.csv", "csv")
    assert "n_neighbors" in json.loads(pl.read_csv(path)["params"][0])


def test_export_usage_errors_exit_2_and_help_has_an_example(inspected: Inspected, tmp_path: Path) -> None:
    """Unknown table or format: exit 2 with the reason; the command's help shows an example."""
    runner = CliRunner()
    base = ["--data-dir", str(inspected.settings.data_dir), "staging", "export"]
    unknown = runner.invoke(cli, [*base, "nope", "--out", str(tmp_path / "x.csv")])
    assert unknown.exit_code == 2 and "unknown table 'nope'" in unknown.output
    bad = runner.invoke(cli, [*base, "runs", "--format", "xlsx", "--out", str(tmp_path / "x")])
    assert bad.exit_code == 2
    assert "Example:" in runner.invoke(cli, ["staging", "export", "--help"]).output
    empty = runner.invoke(cli, ["--data-dir", str(tmp_path / "none"), "staging", "export", "runs", "--out", "x"])
    assert empty.exit_code == 1 and "does not exist, so it holds no archive" in empty.output
    assert not (tmp_path / "none").exists()
