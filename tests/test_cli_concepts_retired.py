"""`chatmem concepts` lists the concepts that stand for themselves (active, weak) unless asked for the rest: session
39's read of the graph found "SQL query" in the shared exports' top 40 beside the "SQL" it was merged into, and 971 of
the demo's 4,577 listed concepts merged or archived."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from flows.cli import cli


def chatmem(*args: str | Path) -> Result:
    return CliRunner().invoke(cli, [str(a) for a in args], prog_name="chatmem")


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real run to the concepts stage, then one concept retired as the garden or a fold leaves it."""
    root = tmp_path_factory.mktemp("retired")
    export = root / "trip.jsonl"
    texts = [
        "I use Obsidian every day for my notes about Lisbon and my Kubernetes cluster.",
        "Obsidian, Lisbon and Kubernetes, noted.",
    ] * 3
    rows = [
        {"conversation_id": f"c{i // 2}", "id": f"m{i}", "role": ("user", "assistant")[i % 2], "text": t}
        for i, t in enumerate(texts)
    ]
    export.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    data = root / "data"
    ran = chatmem("--data-dir", data, "-q", "run", export, "--to", "concepts")
    assert ran.exit_code == 0, ran.output
    return data


def _titles(output: str) -> list[str]:
    return [concept["title"] for concept in json.loads(output)]


def test_a_retired_concept_is_listed_only_when_asked_for(data_dir: Path) -> None:
    everything = _titles(chatmem("--data-dir", data_dir, "concepts", "--all", "--json").output)
    assert len(everything) >= 2, everything
    retired = everything[0]
    with sqlite3.connect(data_dir / "staging.db") as conn:
        assert conn.execute("UPDATE concepts SET state = 'archived' WHERE title = ?", (retired,)).rowcount == 1

    listed = _titles(chatmem("--data-dir", data_dir, "concepts", "--json").output)
    assert retired not in listed and set(listed) == set(everything) - {retired}
    text = chatmem("--data-dir", data_dir, "concepts", "--limit", "0")
    assert text.exit_code == 0 and f"{retired}  [" not in text.output
    assert "(1 merged, split or archived concept(s) ranked among these not listed: --all)" in text.output
    below = chatmem("--data-dir", data_dir, "concepts", "--limit", str(len(everything) - 1))
    assert "(1 merged" in below.output  # the retired one ranked first: among the top of the list

    assert retired in _titles(chatmem("--data-dir", data_dir, "concepts", "--all", "--json").output)
    asked = chatmem("--data-dir", data_dir, "concepts", "--state", "archived")
    assert asked.exit_code == 0 and f"{retired}  [" in asked.output and "not listed" not in asked.output


def test_only_retired_concepts_of_a_type_say_so_not_run_first(data_dir: Path) -> None:
    with sqlite3.connect(data_dir / "staging.db") as conn:
        kinds = dict(conn.execute("SELECT type, count(*) FROM concepts GROUP BY type").fetchall())
        kind = min(kinds, key=kinds.__getitem__)
        conn.execute("UPDATE concepts SET state = 'merged' WHERE type = ?", (kind,))
    result = chatmem("--data-dir", data_dir, "concepts", "--type", kind)
    assert result.exit_code == 0
    assert "run `chatmem run EXPORT` first" not in result.output
    assert f"({kinds[kind]:,} merged, split or archived concept(s) ranked among these not listed" in result.output


def test_no_footer_when_the_top_of_the_list_holds_no_retired_concept(data_dir: Path) -> None:
    with sqlite3.connect(data_dir / "staging.db") as conn:
        conn.execute("UPDATE concepts SET state = 'active' WHERE state != 'weak'")
        last = conn.execute("SELECT title FROM concepts ORDER BY evidence_count, title_key DESC LIMIT 1").fetchone()[0]
        conn.execute("UPDATE concepts SET state = 'archived' WHERE title = ?", (last,))
    top = chatmem("--data-dir", data_dir, "concepts", "--limit", "1")
    assert top.exit_code == 0 and "not listed" not in top.output
