"""The graph holds each thing once (issue 23), and the Cypher of docs/graph.md walks what the tags were.

One real pipeline (ingest, segment, embed, extract, concepts, embed_concepts, cluster, cues) over a small themed
export with timestamps, loaded into the real local Bolt server (tests/graph_fixtures.py). Every ```cypher block
of docs/graph.md runs against that graph, and its rows are compared with the memory's tags in staging.db.
"""

from __future__ import annotations

import json
import random
import re
import sqlite3
from collections import defaultdict
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from stage_support import cluster_stage, stage_concepts, stage_embed, stage_embed_concepts, stage_extract, stage_segment
from stage_support import cues_stage as cues

from clients.embedders import StaticMiniLM
from contracts.settings import Settings
from load.layers import LAYERS, NodeLayer
from staging import memory as store
from staging.archive import open_archive
from staging.ledger import open_staging
from staging.memory_history import LIVE
from tests.graph_helpers import GraphEnv, expected, ingest, load

pytest_plugins = ["tests.graph_fixtures"]

DOCS = Path(__file__).resolve().parents[1] / "docs" / "graph.md"
THEMES = {
    "baking": "sourdough flour yeast oven crust dough bread knead starter loaf butter",
    "astronomy": "telescope jupiter moons orbit galaxy nebula planet saturn comet stars eclipse",
    "gardening": "tomato soil compost seedlings garden mulch prune roses watering fertilizer",
}


def themed_export(path: Path, per_theme: int = 12) -> Path:
    """JSONL: `per_theme` three-turn conversations per theme, spread over two months."""
    rng = random.Random(7)
    lines = []
    for t, (theme, words) in enumerate(THEMES.items()):
        vocabulary = words.split()
        for n in range(per_theme):
            day = f"2024-0{1 + n % 2}-{10 + t + n % 3:02d}"
            for turn in range(3):
                text = " ".join(rng.choice(vocabulary) for _ in range(12)).capitalize() + "."
                lines.append(
                    {
                        "conversation_id": f"{theme}-{n}",
                        "id": f"{theme}-{n}-{turn}",
                        "role": "assistant" if turn % 2 else "user",
                        "text": text,
                        "parent_id": f"{theme}-{n}-{turn - 1}" if turn else None,
                        "created_at": f"{day}T0{turn}:00:00Z",
                    }
                )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A data dir after every stage but load (the cluster stage's UMAP compiles once: ~30 s)."""
    root = tmp_path_factory.mktemp("graph-once")
    settings = Settings(data_dir=root / "data", memory={"key_embedder": "embed"})
    settings.cluster = settings.cluster.model_copy(update={"n_trials": 3, "min_points": 10})
    run_id = ingest(settings, themed_export(root / "themes.jsonl"))
    embedder = StaticMiniLM()
    with closing(open_archive(settings.archive_path)) as archive, closing(open_staging(settings.staging_path)) as st:
        for stage, kwargs in (
            (stage_segment, {}),
            (stage_embed, {"embedder": embedder}),
            (stage_extract, {}),
            (stage_concepts, {}),
            (stage_embed_concepts, {"embedder": embedder}),
            (cluster_stage, {"embedder": embedder}),
            (cues, {}),
        ):
            result = stage.run(archive, st, run_id=run_id, settings=settings, **kwargs)
            assert result.status == "succeeded", (stage.__name__, result.notes)
    return root / "data", run_id


@pytest.fixture
def loaded(graph: GraphEnv, built: tuple[Path, str]) -> tuple[Settings, sqlite3.Connection]:
    data_dir, run_id = built
    settings = graph.settings(data_dir)
    result = load(settings, run_id)
    assert result.status == "succeeded" and result.counts["edges_missing_ends"] == 0
    conn = sqlite3.connect(settings.staging_path)
    return settings, conn


def docs_queries() -> dict[str, str]:
    """Every ```cypher block of docs/graph.md by the name on its first line (`// name: what it returns`)."""
    blocks = re.findall(r"```cypher\n(.*?)```", DOCS.read_text(encoding="utf-8"), flags=re.S)
    named = {}
    for block in blocks:
        first, _, rest = block.partition("\n")
        name = re.match(r"// ([a-z-]+):", first)
        assert name, f"a cypher block of docs/graph.md has no name line: {first!r}"
        named[name.group(1)] = rest
    return named


def tag_edges(conn: sqlite3.Connection, run_id: str, prefix: str, kind: str) -> dict[str, dict[str, float]]:
    """The memory's edges from tags (or to tags, for cue-tag) whose id starts with `prefix`: {tag: {other: w}}."""
    found: dict[str, dict[str, float]] = defaultdict(dict)
    if kind == "tag-content":
        sql = f"SELECT src, dst, weight FROM memory_edges WHERE {LIVE} AND kind = ? AND src LIKE ?"
        for src, dst, weight in conn.execute(sql, (run_id, run_id, kind, prefix + "%")):
            found[src.removeprefix(prefix)][dst] = weight
    else:
        sql = f"SELECT src, dst, weight FROM memory_edges WHERE {LIVE} AND kind = ? AND dst LIKE ?"
        for src, dst, weight in conn.execute(sql, (run_id, run_id, kind, prefix + "%")):
            found[src][dst.removeprefix(prefix)] = weight
    return found


def content_ids(conn: sqlite3.Connection, run_id: str) -> set[str]:
    rows = conn.execute(f"SELECT content_id FROM memory_content WHERE {LIVE} AND kind = 'message'", (run_id, run_id))
    return {str(r[0]) for r in rows}


def test_the_graph_holds_no_copy_of_another_nodes_content(graph: GraphEnv, loaded: tuple[Settings, Any]) -> None:
    """No Tag node, no TAGGED edge; every node id once; every label's nodes are the staging rows of one layer."""
    settings, conn = loaded
    counts = graph.counts()
    assert counts == expected(settings)
    assert "Tag" not in counts["nodes"] and "TAGGED" not in counts["edges"]
    assert {"Topic", "Cue", "Segment", "Concept"} <= set(counts["nodes"]) and "BELONGS_TO" in counts["edges"]
    duplicates = graph.query("MATCH (n) WITH n.id AS id, count(*) AS k WHERE k > 1 RETURN count(id) AS d")
    assert duplicates == [{"d": 0}]
    # A cue's id is never a message's, conversation's or topic's: the graph holds the cue, not a copy of them.
    labels = {layer.label for layer in LAYERS if isinstance(layer, NodeLayer)}
    overlap = graph.query("MATCH (n) WITH n.id AS id, count(DISTINCT labels(n)) AS k WHERE k > 1 RETURN id")
    assert overlap == [] and labels >= set(counts["nodes"])
    # Two relationships between the same two nodes in the same direction would repeat each other.
    repeated = graph.query("MATCH (a)-[r]->(b) WITH a, b, count(r) AS k WHERE k > 1 RETURN count(*) AS n")
    assert repeated == [{"n": 0}]
    conn.close()


def test_every_cypher_block_of_the_docs_returns_what_the_tags_were(
    graph: GraphEnv, loaded: tuple[Settings, Any], built: tuple[Path, str]
) -> None:
    """conv:, topic:, day:, month:, role:, source:, ctype: tags and cue -> conversation weights, from the walks."""
    _, conn = loaded
    run_id = store.latest_run(conn)
    assert run_id is not None
    queries = docs_queries()
    assert set(queries) == {
        "conversation-messages",
        "cue-conversations",
        "topic-messages",
        "cue-topics",
        "day-messages",
        "role-source-messages",
        "type-cues",
    }
    content = content_ids(conn, run_id)

    conversations = tag_edges(conn, run_id, "conv:", "tag-content")
    assert len(conversations) == 36
    for conversation_id, members in conversations.items():
        rows = graph.query(queries["conversation-messages"], conversation=conversation_id)
        assert [r["message"] for r in rows] == sorted(members, key=lambda m: int(m.rsplit("-", 1)[1]))

    shares = tag_edges(conn, run_id, "conv:", "cue-tag")
    assert shares
    for cue_id, by_conversation in shares.items():
        rows = graph.query(queries["cue-conversations"], cue=cue_id)
        assert {r["conversation"]: round(r["share"], 6) for r in rows} == by_conversation

    topics = tag_edges(conn, run_id, "topic:", "tag-content")
    assert topics, "the cluster stage found no topics: the topic walk is not tested"
    for topic_uid, members in topics.items():
        rows = graph.query(queries["topic-messages"], topic=topic_uid)
        walked = {r["message"]: round(min(max(r["weight"], 0.0), 1.0), 6) for r in rows if r["message"] in content}
        assert walked == members

    cue_id = next(iter(shares))
    rows = graph.query(queries["cue-topics"], cue=cue_id)
    by_topic: dict[str, set[str]] = defaultdict(set)
    cue_messages = {
        d for (d,) in conn.execute(f"SELECT dst FROM memory_edges WHERE {LIVE} AND src = ?", (run_id, run_id, cue_id))
    }
    for topic_uid, members in topics.items():
        by_topic[topic_uid] = set(members) & cue_messages
    assert {r["topic"]: r["messages"] for r in rows} == {t: len(m) for t, m in by_topic.items() if m}

    for prefix in ("day:", "month:"):
        for value, members in tag_edges(conn, run_id, prefix, "tag-content").items():
            rows = graph.query(queries["day-messages"], day=value)
            assert {r["message"] for r in rows} & content == set(members)

    roles, sources = tag_edges(conn, run_id, "role:", "tag-content"), tag_edges(conn, run_id, "source:", "tag-content")
    assert set(roles) == {"user", "assistant"} and set(sources) == {"jsonl"}
    for role, members in roles.items():
        rows = graph.query(queries["role-source-messages"], source="jsonl", role=role)
        assert {r["message"] for r in rows} & content == set(members)

    typed: dict[str, set[str]] = defaultdict(set)
    for cue, types in tag_edges(conn, run_id, "ctype:", "cue-tag").items():
        for ctype in types:
            typed[ctype].add(cue)
    assert typed
    hubs = {c for (c,) in conn.execute(f"SELECT cue_id FROM memory_cues WHERE {LIVE} AND hub", (run_id, run_id))}
    for ctype, members in typed.items():
        rows = graph.query(queries["type-cues"], type=ctype)
        assert {r["cue"] for r in rows} - hubs == members
    conn.close()
