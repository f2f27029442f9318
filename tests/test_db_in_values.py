"""staging.db's one helper for SQL IN lists: any length, one statement, the column's index still used."""

from __future__ import annotations

import sqlite3

from staging.db import IN_VALUES, json_values


def test_an_in_list_longer_than_sqlites_parameter_limit_is_one_statement() -> None:
    """50,000 ids (SQLite refuses more than 32,766 bound parameters) in one query, the index searched per id."""
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE t (id TEXT PRIMARY KEY, n INTEGER)")
    conn.executemany("INSERT INTO t VALUES (?, ?)", [(f"id-{i}", i) for i in range(60_000)])
    wanted = [f"id-{i}" for i in range(0, 100_000, 2)]  # half of them absent
    rows = conn.execute(f"SELECT id, n FROM t WHERE id IN {IN_VALUES}", (json_values(wanted),)).fetchall()
    assert len(rows) == 30_000 and all(n % 2 == 0 for _, n in rows)
    plan = " ".join(r[3] for r in conn.execute(f"EXPLAIN QUERY PLAN SELECT n FROM t WHERE id IN {IN_VALUES}", ("[]",)))
    assert "USING INDEX" in plan and "SCAN t" not in plan


def test_in_values_keeps_integers_and_text_apart() -> None:
    """Numbers stay numbers (an INTEGER column matches them) and text stays text, non-ASCII included."""
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE t (k INTEGER, s TEXT)")
    conn.executemany("INSERT INTO t VALUES (?, ?)", [(1, "café"), (2, "b"), (3, "c")])
    assert conn.execute(f"SELECT k FROM t WHERE k IN {IN_VALUES} ORDER BY k", (json_values([1, 3]),)).fetchall() == [
        (1,),
        (3,),
    ]
    assert conn.execute(f"SELECT k FROM t WHERE s IN {IN_VALUES}", (json_values(["café"]),)).fetchall() == [(1,)]
    assert conn.execute(f"SELECT k FROM t WHERE k IN {IN_VALUES}", (json_values([]),)).fetchall() == []
