"""A message too big for a Bolt message is loaded with its text capped (load/plan.py, `TEXT_CAP_BYTES`), its node
says so and where the whole text is, archive.db keeps it whole, and later loads do not rewrite it. Real ingest,
real archive.db and staging.db, the real local Bolt server (tests/graph_fixtures.py)."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from dataclasses import replace
from pathlib import Path
from typing import Any

from load import archive_delta
from load.layers import MESSAGES, TEXT_CAP_BYTES, NodeLayer
from load.plan import cap_text, source_rows
from tests.graph_helpers import GraphEnv, expected, ingest, load

pytest_plugins = ["tests.graph_fixtures"]

BIG = "ab" + "€" * 7_000_000  # 21,000,002 bytes of UTF-8; the cap falls inside a 3-byte character


def export(path: Path, *, grown: tuple[str, ...] = ()) -> Path:
    """Four conversations of four turns; c0's m2 is BIG. `grown`: conversations continued by one more turn."""
    lines: list[dict[str, Any]] = []
    for c in range(4):
        conv = f"c{c}"
        for t in range(5 if conv in grown else 4):
            text = BIG if (conv, t) == ("c0", 2) else f"turn {t} of {conv}"
            lines.append(
                {
                    "conversation_id": conv,
                    "id": f"m{t}",
                    "role": "user" if t % 2 == 0 else "assistant",
                    "text": text,
                    "parent_id": f"m{t - 1}" if t else None,
                    "created_at": f"2024-05-0{1 + c}T10:{t:02d}:00Z",
                }
            )
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def message_rows_sent(staging: Path, run_id: str) -> int:
    with closing(sqlite3.connect(staging)) as conn:
        row = conn.execute(
            "SELECT COALESCE(SUM(rows), 0) FROM load_batches"
            " WHERE run_id = ? AND layer = 'Message' AND kind = 'upsert'",
            (run_id,),
        ).fetchone()
    return int(row[0])


def test_cap_text_cuts_between_characters() -> None:
    assert cap_text("ab€€", 6) == "ab€"  # 7 bytes would be needed for a second €: it is dropped whole
    assert cap_text("ab€€", 8) == "ab€€" and cap_text("", 4) == ""


def test_a_row_under_the_cap_hashes_as_it_did_before_capping_existed() -> None:
    """Capping rewrites no node of an existing graph: a short text's row hash is the uncapped layer's; a long one's
    differs (it is cut)."""
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE t (id TEXT, text TEXT)")
    conn.executemany("INSERT INTO t VALUES (?, ?)", [("a", "short"), ("b", "x" * (TEXT_CAP_BYTES + 1))])
    sql = "SELECT CAST(id AS TEXT) AS _key, id, text FROM t ORDER BY id"
    plain = NodeLayer("Message", "archive", ("t",), "SELECT id, text FROM t")
    capped = NodeLayer("Message", "archive", ("t",), "SELECT id, text FROM t", capped=("text",))
    before = [c.row_hash for c in source_rows(conn.execute(sql), plain)]
    after = list(source_rows(conn.execute(sql), capped))
    assert after[0].row_hash == before[0] and after[1].row_hash != before[1]
    marks = {"text_truncated": None, "text_bytes": None, "text_full_in": None}
    assert after[0].params["props"] == {"text": "short", **marks}


def test_the_cap_keeps_an_archive_mark_taken_without_it() -> None:
    """The upgrade does not read every archive row again: the archive mark is the same with or without the cap."""
    assert archive_delta.fingerprint([MESSAGES]) == archive_delta.fingerprint([replace(MESSAGES, capped=())])


def test_a_message_over_the_bolt_limit_loads_capped_and_is_not_rewritten_by_later_loads(
    graph: GraphEnv, tmp_path: Path
) -> None:
    settings = graph.settings(tmp_path / "data")
    first = load(settings, ingest(settings, export(tmp_path / "a.jsonl")))
    assert first.status == "succeeded"
    assert graph.counts() == expected(settings)
    [big] = graph.query(
        "MATCH (m:Message {id: 'c0:m2'}) RETURN m.text AS text, m.text_truncated AS cut, m.text_bytes AS size,"
        " m.text_full_in AS full_in"
    )
    text = big["text"]
    assert len(text.encode("utf-8")) == 2 + 3 * ((TEXT_CAP_BYTES - 2) // 3) <= TEXT_CAP_BYTES
    assert text == BIG[: len(text)] and text.endswith("€")  # a prefix, cut between characters
    assert big["cut"] is True and big["size"] == len(BIG.encode("utf-8"))
    assert "archive.db" in big["full_in"] and "messages" in big["full_in"]
    small = graph.query(
        "MATCH (m:Message {id: 'c0:m1'}) RETURN m.text AS text, m.text_truncated AS cut, m.text_bytes AS size"
    )
    assert small == [{"text": "turn 1 of c0", "cut": None, "size": None}]
    with closing(sqlite3.connect(settings.archive_path)) as archive:  # the source of truth keeps it whole
        assert archive.execute("SELECT text FROM messages WHERE uuid = 'c0:m2'").fetchone()[0] == BIG

    # c0 grows by a turn: the load reads c0 again (the big message included) and sends only the new message.
    second_run = ingest(settings, export(tmp_path / "b.jsonl", grown=("c0",)))
    second = load(settings, second_run)
    assert second.status == "succeeded" and any("only the 1 conversation(s)" in n for n in second.notes)
    assert message_rows_sent(settings.staging_path, second_run) == 1
    # Half the conversations grow: the load diffs every row, and again sends only the new messages.
    third_run = ingest(settings, export(tmp_path / "c.jsonl", grown=("c0", "c1", "c2")))
    third = load(settings, third_run)
    assert third.status == "succeeded" and any("diffed whole" in n for n in third.notes)
    assert message_rows_sent(settings.staging_path, third_run) == 2
    assert graph.counts() == expected(settings)
    assert graph.query("MATCH (m:Message {id: 'c0:m2'}) RETURN m.text_truncated AS cut") == [{"cut": True}]
