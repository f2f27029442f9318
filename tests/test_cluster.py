"""The cluster stage on real UMAP, HDBSCAN and Optuna (small seeded data, no mocks), its objective and helpers.

numba compiles UMAP once per process (~15-30 s): the stage runs once per module in a fixture and the tests
read what it wrote; the other UMAP calls are small.
"""

from __future__ import annotations

import json
import random
import socket
import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner
from stage_support import cluster_stage, ingest_stage, stage_embed, stage_embed_concepts, stage_segment

from clients.embedders import StaticMiniLM
from cluster import assign
from cluster.labels_llm import LabelCounts, llm_labels
from cluster.topics import ctfidf, labels_of, nearest_centres, reassign_outliers, renumber
from cluster.tuning import Objective, tune
from contracts.results import StageResult
from contracts.settings import LLMSettings, Settings
from flows.cli import cli
from staging import concepts as concept_store
from staging import llm_calls
from staging import topics as store
from staging.archive import open_archive
from staging.concepts import ConceptRow
from staging.ledger import open_run, open_staging
from tests import llm_guard, llm_server

no_real_model_requests = llm_guard.no_real_model_requests  # autouse: nothing leaves the machine
fake_llm = llm_server.fake_llm

VOCABULARIES = {
    "baking": "sourdough flour yeast oven crust dough bake bread knead starter loaf butter",
    "astronomy": "telescope jupiter moons orbit galaxy nebula planet saturn comet stars eclipse",
    "gardening": "tomato soil compost seedlings garden mulch prune roses watering fertilizer",
}
THEMES = {theme: words.split() for theme, words in VOCABULARIES.items()}


def themed_export(path: Path, per_theme: int = 20, seed: int = 3, conversation: str | None = None) -> Path:
    """Generic JSONL: `per_theme` two-turn conversations per theme (or all turns in one `conversation`)."""
    rng = random.Random(seed)
    lines = []
    for theme, words in THEMES.items():
        for n in range(per_theme):
            cid = conversation or f"{theme}-{n}"
            for turn in range(2):
                text = " ".join(rng.choice(words) for _ in range(12))
                mid = f"{theme}-{n}-{turn}"
                role = "user" if turn == 0 else "assistant"
                lines.append(json.dumps({"conversation_id": cid, "id": mid, "role": role, "text": text}))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def run_stages(
    settings: Settings, export: Path, run_id: str, embedder: StaticMiniLM, guesses: list[str] | None = None
) -> StageResult:
    """Ingest `export` through the cluster stage as run `run_id`; `guesses` gets what the runner's guess at the
    cluster run's size (cluster.assign.refit_reason, flows/stage_size.py) said just before it."""
    archive, staging = open_archive(settings.archive_path), open_staging(settings.staging_path)
    try:
        open_run(staging, stages=["all"], exports=[str(export)], settings={}, code_version="test", run_id=run_id)
        ingest_stage.run(archive, staging, run_id=run_id, settings=settings, exports=[export])
        stage_segment.run(archive, staging, run_id=run_id, settings=settings)
        stage_embed.run(archive, staging, run_id=run_id, settings=settings, embedder=embedder)
        stage_embed_concepts.run(archive, staging, run_id=run_id, settings=settings, embedder=embedder)
        if guesses is not None:
            guesses.append(assign.refit_reason(staging, settings, embedder.key, run_id))
        return cluster_stage.run(archive, staging, run_id=run_id, settings=settings, embedder=embedder)
    finally:
        archive.close()
        staging.close()


def small_settings(data_dir: Path, **cluster: Any) -> Settings:
    settings = Settings(data_dir=data_dir)
    settings.cluster = settings.cluster.model_copy(update={"n_trials": 4, **cluster})
    return settings


@pytest.fixture(scope="module")
def embedder() -> StaticMiniLM:
    return StaticMiniLM()


@pytest.fixture(scope="module")
def clustered(tmp_path_factory: pytest.TempPathFactory, embedder: StaticMiniLM) -> tuple[Settings, StageResult]:
    """60 segments in three themes, clustered once for the module (run r1)."""
    root = tmp_path_factory.mktemp("clustered")
    settings = small_settings(root / "data")
    return settings, run_stages(settings, themed_export(root / "themes.jsonl"), "r1", embedder)


def _staging(settings: Settings) -> sqlite3.Connection:
    conn = sqlite3.connect(settings.staging_path)
    conn.row_factory = sqlite3.Row
    return conn


def test_stage_finds_the_themes_and_links_every_member(clustered: tuple[Settings, StageResult]) -> None:
    """Three vocabularies give topics each drawn from one theme; links are weighted 0..1 and name real topics."""
    settings, result = clustered
    assert result.status == "succeeded" and result.counts["points"] == 60 and result.counts["topics"] >= 3
    with _staging(settings) as conn:
        links = conn.execute(
            "SELECT l.item_id, l.topic, l.weight, m.message_id FROM topic_links l JOIN "
            "segment_messages m ON m.segment_id = l.item_id WHERE l.run_id = 'r1'"
        ).fetchall()
        summary = store.run_summary(conn, "r1")
        topics = store.list_topics(conn, "r1")
    assert summary is not None and summary["outlier_share"] <= 0.2
    assert all(0 <= link["weight"] <= 1 for link in links)
    themes_by_topic: dict[int, set[str]] = {}
    for link in links:
        themes_by_topic.setdefault(link["topic"], set()).add(link["message_id"].split("-")[0])
    assert all(len(themes) == 1 for themes in themes_by_topic.values())  # no topic mixes two themes
    words = {w for t in topics for w in t["keywords"]}
    assert {"telescope", "sourdough", "compost"} & words
    assert sum(t["size"] for t in topics) == len({link["item_id"] for link in links})


def test_rerun_reuses_the_study_and_gives_the_same_topics(
    clustered: tuple[Settings, StageResult], embedder: StaticMiniLM
) -> None:
    """Same inputs, same seed: the stored study is reused (no new trial) and the topics are identical."""
    settings, _ = clustered
    archive, staging = open_archive(settings.archive_path), open_staging(settings.staging_path)
    try:
        open_run(staging, stages=["cluster"], exports=[], settings={}, code_version="test", run_id="r2")
        again = cluster_stage.run(archive, staging, run_id="r2", settings=settings, embedder=embedder)
        before, after = store.list_topics(staging, "r1"), store.list_topics(staging, "r2")
        trials = staging.execute("SELECT COUNT(*) FROM cluster_trials").fetchone()[0]
    finally:
        archive.close()
        staging.close()
    assert again.counts["trials_run"] == 0 and again.counts["trials_reused"] == 4 == trials
    assert [(t["topic_uid"], t["size"], t["label"]) for t in before] == [
        (t["topic_uid"], t["size"], t["label"]) for t in after
    ]
    assert (settings.data_dir / "optuna.db").exists()


def test_tuning_is_reproducible_with_the_same_seed(tmp_path: Path) -> None:
    """Two fresh studies on the same points and seed run the same trials to the same best parameters."""
    rng = np.random.default_rng(0)
    centres = rng.normal(size=(4, 16))
    points = np.concatenate([c + 0.2 * rng.normal(size=(25, 16)) for c in centres]).astype(np.float32)
    runs = [
        tune(points, storage_url=f"sqlite:///{tmp_path / f'{n}.db'}", seed=5, n_trials=3, objective=Objective())
        for n in range(2)
    ]
    assert runs[0].best == runs[1].best
    assert [t.value for t in runs[0].trials] == [t.value for t in runs[1].trials]


def test_outliers_join_a_topic_only_when_typical_enough() -> None:
    """A noise point as close to a centre as the members are joins (low weight); one far from all stays noise."""
    topic_a = np.array([[1, 0.1 * i, 0] for i in range(-2, 3)], dtype=np.float32)
    topic_b = np.array([[0, 1, 0.1 * i] for i in range(-2, 3)], dtype=np.float32)
    noise = np.array([[1, 0.05, 0], [0, 0, 1]], dtype=np.float32)
    points = np.concatenate([topic_a, topic_b, noise])
    points /= np.linalg.norm(points, axis=1, keepdims=True)
    labels = np.array([0] * 5 + [1] * 5 + [-1, -1])
    new, weights, moved = reassign_outliers(points, labels, np.ones(12), quantile=0.1)
    assert new[10] == 0 and moved[10] and 0 < weights[10] <= 1
    assert new[11] == -1 and not moved[11]
    assert list(renumber(np.array([1, 1, 0, -1, 1]))) == [0, 0, 1, -1, 0]


def test_ctfidf_keywords_tell_topics_apart() -> None:
    """Words frequent in one topic and rare elsewhere rank first; stop words and numbers never appear."""
    keywords = ctfidf({0: ["the yeast and the dough", "dough rises 42 times"], 1: ["the telescope sees jupiter"]}, 3)
    assert keywords[0][0] == "dough" and "telescope" in keywords[1]
    assert not {"the", "and", "42"} & {w for ws in keywords.values() for w in ws}
    assert ctfidf({0: ["the and of"], 1: [""]}, 3) == {0: [], 1: []}


@pytest.mark.parametrize("case", ["too-few", "identical"])
def test_degenerate_inputs_are_skipped_with_a_note(tmp_path: Path, embedder: StaticMiniLM, case: str) -> None:
    """Fewer segments than cluster.min_points, or only identical texts: a skipped run that says why."""
    export = themed_export(tmp_path / "x.jsonl", per_theme=3)
    if case == "identical":
        lines = [
            json.dumps({"conversation_id": f"c{i}", "id": f"m{i}", "role": "user", "text": "sourdough bread"})
            for i in range(40)
        ]
        export.write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = run_stages(small_settings(tmp_path / "data"), export, "r1", embedder)
    assert result.status == "skipped" and result.counts["topics"] == 0
    assert any("not clustered" in note for note in result.notes)
    if case == "identical":
        assert any("(1 distinct)" in note for note in result.notes)


def test_distinct_rows_is_exact_below_the_threshold_and_stops_early_above_it() -> None:
    """Few distinct rows among many are counted exactly; many distinct rows are counted on a prefix only."""
    rng = np.random.default_rng(0)
    few = np.repeat(rng.standard_normal((5, 8)).astype(np.float32), 600, axis=0)  # 3,000 rows, 5 distinct
    assert cluster_stage._distinct_rows(few, enough=30) == 5
    many = rng.standard_normal((5000, 8)).astype(np.float32)
    assert cluster_stage._distinct_rows(many, enough=30) == 1024  # the prefix settled it: >= 30
    assert cluster_stage._distinct_rows(many[:0], enough=30) == 0
    tail = np.concatenate([np.zeros((2000, 8), dtype=np.float32), many[:40]])  # distinct rows only past the prefix
    assert cluster_stage._distinct_rows(tail, enough=30) == 41


def _concept(concept_id: str, title: str, description: str) -> ConceptRow:
    return ConceptRow(
        concept_id,
        title,
        title.lower(),
        "topic",
        description,
        "active",
        0.9,
        [],
        0,
        1,
        None,
        None,
        None,
        ["offline"],
        "r0",
        "r0",
    )


def test_one_conversation_clusters_places_the_rest_and_links_concepts(tmp_path: Path, embedder: StaticMiniLM) -> None:
    """One long conversation in many segments; points beyond fit_max are placed (approximate_predict), and each
    concept links to the topic of its own theme."""
    settings = small_settings(tmp_path / "data", min_points=10, fit_max=30)
    settings.segment = settings.segment.model_copy(update={"max_tokens": 16, "min_tokens": 0})
    staging = open_staging(settings.staging_path)
    concept_store.upsert_concepts(
        staging,
        [
            _concept("c-bread", "Sourdough baking", "flour yeast dough oven crust bread"),
            _concept("c-sky", "Telescope astronomy", "telescope jupiter moons planet galaxy"),
        ],
    )
    staging.close()
    result = run_stages(
        settings, themed_export(tmp_path / "one.jsonl", per_theme=8, conversation="only"), "r1", embedder
    )
    assert result.status == "succeeded" and result.counts["points"] >= 40 and result.counts["topics"] >= 2
    assert result.counts["concept_links"] == 2
    with _staging(settings) as conn:
        sources = {r[0] for r in conn.execute("SELECT source FROM topic_links WHERE kind = 'segment'")}
        concept_topics = dict(conn.execute("SELECT item_id, topic FROM topic_links WHERE kind = 'concept'").fetchall())
        theme_of_topic = {
            r["topic"]: r["message_id"].split(":")[-1].split("-")[0]
            for r in conn.execute(
                "SELECT l.topic, m.message_id FROM topic_links l JOIN segment_messages m"
                " ON m.segment_id = l.item_id WHERE l.kind = 'segment'"
            )
        }
    assert "predicted" in sources  # 48 segments, fit on 30: the rest placed by their nearest fitted neighbours
    assert theme_of_topic[concept_topics["c-bread"]] == "baking"
    assert theme_of_topic[concept_topics["c-sky"]] == "astronomy"


def test_topics_and_report_commands_read_the_run(clustered: tuple[Settings, StageResult], tmp_path: Path) -> None:
    """`topics --json` has the outlier share and topics; `report` writes the map, sizes, history and HTML
    (the whole run report: tests/test_report.py, tests/test_browser.py)."""
    settings, _ = clustered
    runner = CliRunner()
    shown = runner.invoke(cli, ["--data-dir", str(settings.data_dir), "topics", "--json", "--run-id", "r1"])
    assert shown.exit_code == 0, shown.output
    data = json.loads(shown.output)
    assert set(data) >= {"outlier_share", "topics"} and data["topics"][0]["keywords"]
    report = ["--data-dir", str(settings.data_dir), "report", "--run-id", "r1", "--out", str(tmp_path / "r")]
    written = runner.invoke(cli, report)
    assert written.exit_code == 0, written.output
    names = {p.name for p in (tmp_path / "r").iterdir()}
    assert names >= {"topic_map.png", "topic_sizes.png", "optuna_history.png", "index.html"}
    assert (tmp_path / "r" / "topic_map.png").read_bytes()[:4] == b"\x89PNG"
    for command in ("topics", "report"):
        assert "Example:" in runner.invoke(cli, [command, "--help"]).output
    missing = runner.invoke(cli, ["--data-dir", str(settings.data_dir), "topics", "--run-id", "nope"])
    assert missing.exit_code == 2 and "unknown run id 'nope'" in missing.output


def test_llm_labels_name_topics_once_and_failures_keep_keywords(
    clustered: tuple[Settings, StageResult], embedder: StaticMiniLM, fake_llm: llm_server.FakeLLMServer
) -> None:
    """With extract.llm set, each topic gets the model's name (a chat completion); a re-run asks nothing (cached
    by topic); an endpoint that fails leaves the keyword labels and says so."""
    settings, _ = clustered
    llm = LLMSettings(model="tiny", base_url=fake_llm.base_url, reasoning_effort=None, max_retries=0)
    named = settings.model_copy(update={"extract": settings.extract.model_copy(update={"llm": llm})})
    fake_llm.responder = lambda body: llm_server.Reply.text('"Home baking."\n')
    archive, staging = open_archive(settings.archive_path), open_staging(settings.staging_path)
    try:
        for run_id in ("r3", "r4"):
            open_run(staging, stages=["cluster"], exports=[], settings={}, code_version="test", run_id=run_id)
        first = cluster_stage.run(archive, staging, run_id="r3", settings=named, embedder=embedder)
        again = cluster_stage.run(archive, staging, run_id="r4", settings=named, embedder=embedder)
        labels = {t["label"] for t in store.list_topics(staging, "r4")}
        broken = settings.model_copy(
            update={
                "extract": settings.extract.model_copy(
                    update={"llm": llm.model_copy(update={"model": "other", "max_retries": 1, "retry_backoff_s": 0.01})}
                )
            }
        )
        fake_llm.responder = lambda body: llm_server.Reply.fail(500)
        open_run(staging, stages=["cluster"], exports=[], settings={}, code_version="test", run_id="r5")
        failed = cluster_stage.run(archive, staging, run_id="r5", settings=broken, embedder=embedder)
        kept = store.list_topics(staging, "r5")
        fake_llm.responder = lambda body: llm_server.Reply.fail(401)  # a refused key: one request, the stage unfinished
        refused_llm = llm.model_copy(update={"model": "third"})
        refused_settings = settings.model_copy(
            update={"extract": settings.extract.model_copy(update={"llm": refused_llm})}
        )
        open_run(staging, stages=["cluster"], exports=[], settings={}, code_version="test", run_id="r6")
        before = len(fake_llm.model_requests())
        refused = cluster_stage.run(archive, staging, run_id="r6", settings=refused_settings, embedder=embedder)
        refused_requests = len(fake_llm.model_requests()) - before
        [fingerprint] = staging.execute("SELECT input_fingerprint FROM stage_runs WHERE run_id = 'r6'").fetchone()
        calls = {run: llm_calls.calls(staging, run) for run in ("r3", "r4", "r5")}
    finally:
        archive.close()
        staging.close()
    topics = first.counts["topics"]
    assert first.counts["llm_label_calls"] == topics and labels == {"Home baking"}
    assert again.counts["llm_label_calls"] == 0 and again.counts["llm_labels_cached"] == topics
    body = fake_llm.model_requests()[0].body
    assert body["model"] == "tiny" and "Keywords:" in body["messages"][-1]["content"]
    assert failed.status == "succeeded" and failed.counts["llm_labels_failed"] == topics
    assert [t["label"] for t in kept] == list(labels_of({t["topic"]: t["keywords"] for t in kept}).values())
    assert any("keyword label" in n for n in failed.notes)
    # every attempt is an llm_calls row, as extraction's are: one ok call per topic, none when cached, and
    # two transient failures per topic (the shared retry rule: 500 is retried max_retries times)
    assert [c["status"] for c in calls["r3"]] == ["ok"] * topics and calls["r4"] == []
    assert all(c["segment_id"].startswith("topic:") and c["model"] == "tiny" for c in calls["r3"])
    assert [(c["status"], c["attempt"]) for c in calls["r5"]] == [
        ("transient_error", 1),
        ("transient_error", 2),
    ] * topics
    assert refused.status == "succeeded" and refused_requests == 1 and refused.counts["llm_labels_refused"] == topics
    assert any("refused the API key" in n and "fix the key and run again" in n for n in refused.notes)
    assert fingerprint.endswith(":unfinished")  # the next run is not skipped: it names the topics


def test_llm_labels_stop_asking_once_the_endpoint_cannot_be_reached(tmp_path: Path) -> None:
    """A refused endpoint costs the first topic's retries only: the topics after it keep their keyword labels
    without a request (each one used to wait through every retry again)."""
    with socket.socket() as probe:  # a loopback port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    llm = LLMSettings(model="tiny", base_url=f"http://127.0.0.1:{port}/v1", max_retries=2, retry_backoff_s=0.01)
    staging = open_staging(tmp_path / "staging.db")
    topics = [{"topic": n, "topic_uid": f"uid{n}", "keywords": ["bread", "oven"]} for n in range(3)]
    counts = LabelCounts()
    try:
        found = llm_labels(staging, llm, topics, {}, counts, on_call=llm_calls.recorder(staging, "r-dead"))
        rows = llm_calls.calls(staging, "r-dead")
    finally:
        staging.close()
    assert found == {} and counts.failed == 3
    assert [(r["segment_id"], r["attempt"], r["status"]) for r in rows] == [
        ("topic:uid0", 1, "transient_error"),
        ("topic:uid0", 2, "transient_error"),
        ("topic:uid0", 3, "transient_error"),
    ]


def test_nearest_centres_is_the_one_by_one_comparison_exactly() -> None:
    """Each point's nearest topic centre and its product are those of comparing every centre one by one (the
    product as `float(point @ centre)` computes it, not the matrix product's rounding); ties go to the lower
    topic."""
    rng = np.random.default_rng(5)
    centres = {
        t: (v / np.linalg.norm(v)).astype(np.float32)
        for t, v in zip(range(40, 0, -1), rng.normal(size=(40, 384)), strict=True)
    }
    centres[99] = centres[7].copy()  # a tie: topic 7 wins
    points = rng.normal(size=(500, 384)).astype(np.float32)
    points[0] = centres[7] * 3
    nearest, sims = nearest_centres(points, centres)
    for row, point in enumerate(points):
        one_by_one = {t: float(point @ c) for t, c in centres.items()}
        best = max(one_by_one, key=lambda t: (one_by_one[t], -t))
        assert (nearest[row], sims[row]) == (best, one_by_one[best])
    assert nearest[0] == 7
    assert nearest_centres(points[:0], centres) == ([], [])
