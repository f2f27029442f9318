"""The concept store's rows read back (`staging.concepts.load_concepts`): as written, each with lists of its own."""

from __future__ import annotations

from pathlib import Path

from staging.concepts import ConceptRow, load_concepts, name_index, name_index_of, upsert_concepts
from staging.ledger import open_staging


def _row(concept_id: str, **values: object) -> ConceptRow:
    base: dict[str, object] = {
        "concept_id": concept_id,
        "title": concept_id.title(),
        "title_key": concept_id,
        "type": "topic",
        "description": f"about {concept_id}",
        "state": "active",
        "confidence": 0.8,
        "aliases": [],
        "revision_count": 0,
        "evidence_count": 1,
        "first_seen": None,
        "last_seen": "2024-01-01T00:00:00+00:00",
        "merged_into": None,
        "extractors": ["offline"],
        "created_run_id": "r1",
        "run_id": "r1",
    }
    base.update(values)
    return ConceptRow(**base)  # type: ignore[arg-type]


def test_concepts_read_back_as_written_each_with_its_own_lists(tmp_path: Path) -> None:
    """Rows come back equal to what was written, in id order, and no two rows share an aliases or extractors list
    (the concept loop edits them in place: an edit to one must not show in another)."""
    rows = [
        _row("kayak", aliases=["sea kayak", "Kayaking ’trips’"], extractors=["offline", "llm"], settled=True),
        _row("bread", merged_into="sourdough", state="merged", confidence=0.25, revision_count=3),
        _row("sourdough", first_seen="2023-05-01", extractors=["offline", "llm"]),
        _row("garden", aliases=[], extractors=["llm"], description=""),
    ]
    staging = open_staging(tmp_path / "staging.db")
    upsert_concepts(staging, rows)
    loaded = load_concepts(staging)
    assert list(loaded) == sorted(r.concept_id for r in rows)
    assert loaded == {r.concept_id: r for r in rows}
    assert all(type(r.settled) is bool for r in loaded.values())
    loaded["kayak"].extractors.append("edited")
    loaded["bread"].aliases.append("edited")
    assert loaded["sourdough"].extractors == ["offline", "llm"] and loaded["garden"].aliases == []
    assert name_index(staging) == name_index_of(loaded | {"kayak": rows[0], "bread": rows[1]})
    assert name_index(staging)["bread"] == "sourdough"
