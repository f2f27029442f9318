"""embed_concepts looks up in the vector cache only the concepts whose text changed since their item was written."""

from __future__ import annotations

from pathlib import Path

from test_concept_rows import _row

from clients.embed_cache import EmbedCounts
from clients.embedders import StaticMiniLM
from cluster.stage_embed_concepts import concept_text, embed_concepts
from contracts.settings import Settings
from staging.concepts import upsert_concepts
from staging.embeddings import text_hash
from staging.ledger import open_staging


def test_a_second_run_looks_up_only_the_changed_concept_and_counts_the_same(tmp_path: Path) -> None:
    """Five concepts embedded; one description changes: the next run embeds that one, counts the other four as
    cached without a lookup of their vectors (their items point at them), and points the item at the new one."""
    settings, embedder = Settings(data_dir=tmp_path), StaticMiniLM()
    staging = open_staging(tmp_path / "staging.db")
    rows = [_row(name) for name in ("kayak", "bread", "garden", "tax return", "violin")]
    upsert_concepts(staging, rows)
    first = EmbedCounts()
    assert embed_concepts(staging, embedder, "r1", settings, first) == 5
    rows[1].description = "sourdough starter and baking"
    upsert_concepts(staging, rows)
    statements: list[str] = []
    staging.set_trace_callback(statements.append)
    second = EmbedCounts()
    changed = embed_concepts(staging, embedder, "r2", settings, second)
    staging.set_trace_callback(None)
    assert (first.embedded, second.cached, second.embedded, second.written, changed) == (5, 4, 1, 1, 1)
    lookups = [s for s in statements if "FROM embeddings WHERE" in s]
    hashes = {r.concept_id: text_hash(concept_text(r.title, r.description)) for r in rows}
    assert hashes["bread"] in "".join(lookups)
    assert not any(h in s for s in lookups for name, h in hashes.items() if name != "bread")
    items = dict(staging.execute("SELECT item_id, content_hash FROM embedding_items WHERE kind = 'concept'"))
    assert items == hashes
