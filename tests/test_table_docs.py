"""staging/table_docs.py and staging/browse.py: every table and column described, canned queries that answer."""

from __future__ import annotations

import importlib
import pkgutil
import sqlite3
from pathlib import Path

from inspect_support import FULL_STAGES, RUN_ID, Inspected

import staging
from staging import fts
from staging.archive import open_archive
from staging.browse import QUERIES, metadata
from staging.ledger import open_staging
from staging.table_docs import databases

FTS_SHADOWS = ("messages_fts_data", "messages_fts_idx", "messages_fts_docsize", "messages_fts_config")


def _every_schema(tmp_path: Path) -> dict[str, sqlite3.Connection]:
    """Both databases with every table the staging package knows how to create (each module's ensure_schema)."""
    archive, staging_db = open_archive(tmp_path / "archive.db"), open_staging(tmp_path / "staging.db")
    for module in pkgutil.iter_modules(staging.__path__):
        ensure = getattr(importlib.import_module(f"staging.{module.name}"), "ensure_schema", None)
        if ensure is not None:
            ensure(staging_db)
    return {"archive": archive, "staging": staging_db}


def _schema(conn: sqlite3.Connection) -> dict[str, list[str]]:
    names = [
        str(r[0])
        for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite_%'"
        )
    ]
    return {n: [str(c[1]) for c in conn.execute(f'PRAGMA table_info("{n}")')] for n in names if n not in FTS_SHADOWS}


def test_every_table_and_column_has_a_description_and_no_entry_is_stale(tmp_path: Path) -> None:
    """A table or column added to a schema without a description (or removed while described) fails here."""
    for name, conn in _every_schema(tmp_path).items():
        schema, docs = _schema(conn), databases()[name]
        assert sorted(schema) == sorted(docs), f"{name}: tables without docs or docs without tables"
        for table, columns in schema.items():
            doc = docs[table]
            assert doc.title and doc.description, table
            assert sorted(doc.columns) == sorted(columns), f"{name}.{table}: columns and docs differ"
            assert all(text.strip() for text in doc.columns.values()), table
            for kind in (doc.json, doc.times, doc.flags):
                assert kind <= set(columns), f"{name}.{table}: a kind names a missing column"
            assert doc.label_column is None or doc.label_column in columns


def test_datasette_metadata_describes_every_table_and_carries_the_canned_queries() -> None:
    """The metadata has a title, description and column descriptions per table, and every canned query."""
    data = metadata()["databases"]
    for name, tables in databases().items():
        for table, doc in tables.items():
            meta = data[name]["tables"][table]
            assert meta["title"] == doc.title and meta["columns"] == doc.columns
        assert set(data[name]["queries"]) == set(QUERIES[name])
    assert data["archive"]["tables"]["messages"]["fts_table"] == "messages_fts"
    assert data["staging"]["tables"]["concepts"]["label_column"] == "title"


def _run(conn: sqlite3.Connection, sql: str, **params: str) -> list[sqlite3.Row]:
    conn.row_factory = sqlite3.Row
    return conn.execute(sql, params).fetchall()


def test_canned_queries_answer_on_a_real_run(inspected: Inspected) -> None:
    """Each staging query runs with archive.db attached as `archive` and returns what the run did."""
    conn = sqlite3.connect(f"file:{inspected.settings.staging_path}?mode=ro", uri=True)
    conn.execute("ATTACH DATABASE ? AS archive", (f"file:{inspected.settings.archive_path}?mode=ro",))
    q = QUERIES["staging"]
    stages = _run(conn, q["run_stages"]["sql"], run_id=RUN_ID)
    assert [r["stage"] for r in stages] == list(FULL_STAGES)
    assert len(_run(conn, q["run_stages"]["sql"], run_id="")) == len(stages)  # empty: every run
    calls = _run(conn, q["run_llm_calls"]["sql"], run_id=RUN_ID)
    assert len(calls) == 45 and {r["status"] for r in calls} == {"ok"}  # 42 extractions, 3 topic labels
    assert calls[0]["cost_usd"] == (100 * 1.25 + 50 * 10.0) / 1e6  # the fake server's usage at the run's prices
    evidence = _run(conn, q["concept_evidence"]["sql"], concept_id="tomato-garden")
    assert len(evidence) == 14 and all(r["conversation_id"].startswith("gardening-") for r in evidence)
    assert all(r["span"] in r["message_text"] for r in evidence)  # spans are verbatim from the cited message
    decisions = _run(conn, q["concept_mapper_decisions"]["sql"], concept_id="tomato-garden")
    assert len(decisions) == 14 and {r["rule"] for r in decisions} == {"evidence_text_not_in_message"}
    members = _run(conn, q["topic_members"]["sql"], run_id=RUN_ID, topic="0")
    assert members and all(r["topic"] == 0 for r in members)
    assert _run(conn, q["stage_failures"]["sql"], run_id="") == []
    archive = sqlite3.connect(f"file:{inspected.settings.archive_path}?mode=ro", uri=True)
    fts.register(archive)  # what `chatmem inspect` does on each connection (the search query's chatmem_match)
    [bad] = _run(archive, QUERIES["archive"]["quarantined"]["sql"])
    assert bad["source"].endswith("themes.jsonl") and bad["reason"]
    [hit] = _run(archive, QUERIES["archive"]["search_messages"]["sql"], q="zanzibarian")
    assert hit["uuid"] == "baking-0:baking-0-0" and "[zanzibarian]" in hit["snippet"]


def test_every_canned_query_compiles_against_every_schema(tmp_path: Path) -> None:
    """Queries name only tables and columns that exist (load_batches included, which the run above lacks)."""
    dbs = _every_schema(tmp_path)
    dbs["staging"].execute("ATTACH DATABASE ? AS archive", (str(tmp_path / "archive.db"),))
    for conn in dbs.values():
        fts.register(conn)
    for name, queries in QUERIES.items():
        for query in queries.values():
            params = {p: "" for p in ("run_id", "concept_id", "topic", "q")}
            dbs[name].execute("EXPLAIN " + query["sql"], params)  # raises on an unknown table or column
