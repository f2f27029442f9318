"""Incremental cluster runs (cluster/assign.py): a few new segments go into the saved model's topics without tuning or
refitting; past cluster.refit_share, or without a usable saved model, the stage tunes and fits again.

Real UMAP, HDBSCAN and Optuna on small seeded data: one base run (r1, 60 segments in three themes) is built once
for the module and copied for each test.
"""

from __future__ import annotations

import json
import pickle
import random
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from stage_support import cluster_stage

from clients.embedders import StaticMiniLM
from cluster import assign, describe, saved_model
from contracts.results import StageResult
from contracts.settings import Settings
from staging.archive import open_archive
from staging.ledger import open_run, open_staging
from tests.test_cluster import THEMES, run_stages, small_settings, themed_export

# The saved model joins the phrase space here (not the default, 0), so that these tests also cover placing new
# segments in a fitted phrase space and refitting when the share changes.
PHRASE_SHARE = 0.3


@pytest.fixture(scope="module")
def embedder() -> StaticMiniLM:
    return StaticMiniLM()


@pytest.fixture(scope="module")
def base_dir(tmp_path_factory: pytest.TempPathFactory, embedder: StaticMiniLM) -> Path:
    """A data dir clustered once (run r1: 60 two-turn conversations, 20 per theme)."""
    root = tmp_path_factory.mktemp("incremental")
    settings = small_settings(root / "data", phrase_share=PHRASE_SHARE)
    result = run_stages(settings, themed_export(root / "themes.jsonl"), "r1", embedder)
    assert result.status == "succeeded" and result.counts["incremental"] == 0
    return root / "data"


def copy_of(base_dir: Path, tmp_path: Path, **cluster: Any) -> Settings:
    shutil.copytree(base_dir, tmp_path / "data")
    return small_settings(tmp_path / "data", **{"phrase_share": PHRASE_SHARE, **cluster})


def new_conversations(path: Path, per_theme: int, seed: int = 11) -> Path:
    """`per_theme` new two-turn conversations per theme, with ids the base export does not have."""
    rng = random.Random(seed)
    lines = []
    for theme, words in THEMES.items():
        for n in range(per_theme):
            for turn in range(2):
                text = " ".join(rng.choice(words) for _ in range(12))
                role = "user" if turn == 0 else "assistant"
                lines.append(
                    json.dumps(
                        {
                            "conversation_id": f"new-{theme}-{n}",
                            "id": f"new-{theme}-{n}-{turn}",
                            "role": role,
                            "text": text,
                        }
                    )
                )
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def rows(settings: Settings, sql: str, *params: object) -> list[tuple[Any, ...]]:
    with sqlite3.connect(settings.staging_path) as conn:
        return [tuple(r) for r in conn.execute(sql, params)]


def links(settings: Settings, run_id: str) -> dict[tuple[str, str], tuple[Any, ...]]:
    found = rows(
        settings, "SELECT kind, item_id, topic, topic_uid, weight, source FROM topic_links WHERE run_id = ?", run_id
    )
    return {(r[0], r[1]): r[2:] for r in found}


def theme_of(segment_topics: dict[str, int], settings: Settings) -> dict[int, set[str]]:
    """topic -> the themes of its members' messages."""
    members = rows(settings, "SELECT segment_id, message_id FROM segment_messages")
    themes: dict[int, set[str]] = {}
    for segment, message in members:
        if segment in segment_topics:
            themes.setdefault(segment_topics[segment], set()).add(
                message.split(":")[-1].removeprefix("new-").split("-")[0]
            )
    return themes


def refit_reason(settings: Settings, run_id: str, embedder: StaticMiniLM) -> str:
    """What the runner's guess (flows/stage_size.py) says of run `run_id`'s cluster stage, judged against the runs
    before it: '' = it will place what is new, without reading the model."""
    staging = open_staging(settings.staging_path)
    try:
        return assign.refit_reason(staging, settings, embedder.key, run_id)
    finally:
        staging.close()


def rerun_cluster(settings: Settings, run_id: str, embedder: StaticMiniLM) -> StageResult:
    archive, staging = open_archive(settings.archive_path), open_staging(settings.staging_path)
    try:
        return cluster_stage.run(archive, staging, run_id=run_id, settings=settings, embedder=embedder)
    finally:
        archive.close()
        staging.close()


def test_few_new_segments_join_the_saved_topics_without_a_refit(
    base_dir: Path, tmp_path: Path, embedder: StaticMiniLM
) -> None:
    """3 new segments (5 % of 60): placed in r1's topics (same uids), no trial run, r1's links carried over as they
    were, each new segment in the topic of its own theme; a re-run of the same run writes the same rows."""
    settings = copy_of(base_dir, tmp_path)
    guesses: list[str] = []
    result = run_stages(settings, new_conversations(tmp_path / "new.jsonl", per_theme=1), "r2", embedder, guesses)
    assert guesses == [""]  # the runner's guess, before the stage: a small run (it stays in the runner)
    assert result.status == "succeeded"
    assert result.counts["incremental"] == 1 and result.counts["segments_placed"] == 3
    assert result.counts["trials_run"] == 0 and result.counts["changed_since_fit"] == 3
    assert any("incremental: 3 new or changed segment(s) placed" in note for note in result.notes)
    before, after = links(settings, "r1"), links(settings, "r2")
    assert {k: v for k, v in after.items() if k in before} == before  # old links untouched
    new = {k[1]: v for k, v in after.items() if k not in before}
    assert len(new) == 3 and all(v[3] in ("predicted", "reassigned") for v in new.values())
    r1_topics = rows(settings, "SELECT topic, topic_uid, keywords FROM topics WHERE run_id = 'r1' ORDER BY topic")
    r2_topics = rows(settings, "SELECT topic, topic_uid, keywords, size FROM topics WHERE run_id = 'r2' ORDER BY topic")
    assert [r[:3] for r in r2_topics] == r1_topics
    assert sum(r[3] for r in r2_topics) == sum(1 for k in after if k[0] == "segment")
    themes = theme_of({k[1]: v[0] for k, v in after.items() if k[0] == "segment"}, settings)
    assert all(len(t) == 1 for t in themes.values())  # the new segments joined their own theme's topic
    assert sorted(p.name for p in (settings.data_dir / saved_model.MODEL_DIR).glob("*.pkl")) == ["r1.pkl"]
    model = pickle.loads((settings.data_dir / saved_model.MODEL_DIR / "r1.pkl").read_bytes())
    assert model.phrase_space is not None  # the new segments were joined with their phrases in r1's space
    again = rerun_cluster(settings, "r2", embedder)
    assert again.counts["incremental"] == 1 and links(settings, "r2") == after


def test_past_the_refit_share_the_stage_tunes_and_fits_again(
    base_dir: Path, tmp_path: Path, embedder: StaticMiniLM
) -> None:
    """12 new segments (20 % of 60, over the default 10 %): a full run with trials, saying why; its model replaces
    r1's."""
    settings = copy_of(base_dir, tmp_path)
    guesses: list[str] = []
    result = run_stages(settings, new_conversations(tmp_path / "new.jsonl", per_theme=4), "r2", embedder, guesses)
    assert result.status == "succeeded" and result.counts["incremental"] == 0 and result.counts["trials_run"] > 0
    assert result.counts["points"] == 72
    assert any("full run: 12 segment(s) new" in note and "refit_share=0.1" in note for note in result.notes)
    assert sorted(p.name for p in (settings.data_dir / saved_model.MODEL_DIR).glob("*.pkl")) == ["r2.pkl"]
    assert guesses[0].startswith("12 segment(s) new")  # the runner's guess, before the stage, agreed


@pytest.mark.parametrize("change", ["settings", "missing", "share"])
def test_without_a_usable_model_the_stage_refits_and_says_why(
    base_dir: Path, tmp_path: Path, embedder: StaticMiniLM, change: str
) -> None:
    """Changed cluster settings, a deleted model file, or refit_share 0: a full run, and the note says why."""
    updates = {"settings": {"label_docs": 50}, "missing": {}, "share": {"refit_share": 0.0}}[change]
    settings = copy_of(base_dir, tmp_path, **updates)
    if change == "missing":
        saved_model.path_for(settings.data_dir, "r1").unlink()
    staging = open_staging(settings.staging_path)
    open_run(staging, stages=["cluster"], exports=[], settings={}, code_version="test", run_id="r2")
    staging.close()
    # The runner's guess without reading the model: a deleted model or refit_share 0 is a large run; changed
    # settings it leaves to its generic rule (the ledger's recorded settings differ: tests/test_stage_size.py)
    guessed = {"settings": "", "missing": "no saved topic model of run r1", "share": "cluster.refit_share is 0"}
    assert refit_reason(settings, "r2", embedder).startswith(guessed[change]) and (
        change != "settings" or refit_reason(settings, "r2", embedder) == ""
    )
    result = rerun_cluster(settings, "r2", embedder)
    why = {"settings": "cluster settings changed", "missing": "no saved topic model", "share": "refit_share is 0"}
    assert result.counts["incremental"] == 0
    assert any(note.startswith("full run: ") and why[change] in note for note in result.notes)


@pytest.mark.parametrize("fit_points", [True, False])
def test_the_guess_sees_a_refit_due_after_the_fit_row_is_pruned(
    base_dir: Path, tmp_path: Path, embedder: StaticMiniLM, fit_points: bool
) -> None:
    """Three small dumps of 3 segments under refit_share 0.15: the runner's guess (assign.refit_reason) calls the
    first two small and the third, which re-tunes (9 of the fit's 60), large, although r1's cluster_runs row is
    pruned by then. Without `fit_points` in the params (a fit recorded before them), the guess estimates the
    fit's size on the low side and still sees it."""
    settings = copy_of(base_dir, tmp_path, refit_share=0.15)
    guesses: list[str] = []
    for n, run in enumerate(("r2", "r3", "r4")):
        if run == "r4" and not fit_points:
            with sqlite3.connect(settings.staging_path) as conn:
                conn.execute("UPDATE cluster_runs SET params = json_remove(params, '$.fit_points')")
        dump = new_conversations(tmp_path / f"{run}.jsonl", per_theme=1, seed=20 + n)
        dump.write_text(dump.read_text().replace('"new-', f'"{run}-'))  # ids of their own: new conversations
        result = run_stages(settings, dump, run, embedder, guesses)
        if run == "r3":
            assert rows(settings, "SELECT run_id FROM cluster_runs WHERE run_id = 'r1'") == []  # pruned
    assert guesses[:2] == ["", ""]
    assert guesses[2].startswith("9 segment(s) new, changed or retired since the topic model was fitted (run r1)")
    assert result.counts["incremental"] == 0  # the stage agreed: it tuned and fitted again


def test_phrase_share_zero_refits_on_the_text_vectors_alone(
    base_dir: Path, tmp_path: Path, embedder: StaticMiniLM
) -> None:
    """r1 was fitted on the text vectors joined with their phrases; with cluster.phrase_share 0 the saved model no
    longer fits the settings: the stage tunes and fits again, on the 384-d text vectors, with no phrase space."""
    settings = copy_of(base_dir, tmp_path, phrase_share=0.0)
    r1 = pickle.loads((settings.data_dir / saved_model.MODEL_DIR / "r1.pkl").read_bytes())
    assert r1.phrase_space is not None and r1.reducer._raw_data.shape[1] > 384
    staging = open_staging(settings.staging_path)
    open_run(staging, stages=["cluster"], exports=[], settings={}, code_version="test", run_id="r2")
    staging.close()
    result = rerun_cluster(settings, "r2", embedder)
    assert result.status == "succeeded" and result.counts["incremental"] == 0 and result.counts["trials_run"] > 0
    r2 = pickle.loads((settings.data_dir / saved_model.MODEL_DIR / "r2.pkl").read_bytes())
    assert r2.phrase_space is None and r2.reducer._raw_data.shape[1] == 384
    assert result.counts["topics"] >= 2


def test_keywords_of_older_rules_are_computed_again_once(
    base_dir: Path, tmp_path: Path, embedder: StaticMiniLM
) -> None:
    """An incremental run keeps its base's keywords, unless they were computed under other keyword rules (no or
    another cluster.describe.KEYWORDS_VERSION in the base's params, as a run of an older chatmem): then it computes
    them from its topics' segments, as a full fit would, labels the topics from them and records the version, so
    the next run keeps them again."""
    settings = copy_of(base_dir, tmp_path)
    fresh = rows(settings, "SELECT topic, keywords, label FROM topics WHERE run_id = 'r1' ORDER BY topic")
    assert (
        json.loads(rows(settings, "SELECT params FROM cluster_runs")[0][0])["keywords_version"]
        == describe.KEYWORDS_VERSION
    )
    with sqlite3.connect(settings.staging_path) as conn:  # r1 as an older chatmem wrote it
        conn.execute("UPDATE cluster_runs SET params = json_remove(params, '$.keywords_version')")
        conn.execute("UPDATE topics SET keywords = '[\"stale\", \"keywords\"]', label = 'stale'")
    staging = open_staging(settings.staging_path)
    for run in ("r2", "r3"):
        open_run(staging, stages=["cluster"], exports=[], settings={}, code_version="test", run_id=run)
    staging.close()
    result = rerun_cluster(settings, "r2", embedder)
    assert result.counts["incremental"] == 1 and result.counts["segments_placed"] == 0
    assert any("topic keywords and labels computed again" in note for note in result.notes)
    assert rows(settings, "SELECT topic, keywords, label FROM topics WHERE run_id = 'r2' ORDER BY topic") == fresh
    params = json.loads(rows(settings, "SELECT params FROM cluster_runs WHERE run_id = 'r2'")[0][0])
    assert params["keywords_version"] == describe.KEYWORDS_VERSION and params["fit_run"] == "r1"
    with sqlite3.connect(settings.staging_path) as conn:  # kept from here on: r3 does not read them again
        conn.execute("UPDATE topics SET keywords = '[\"kept\", \"keywords\"]' WHERE run_id = 'r2'")
    result = rerun_cluster(settings, "r3", embedder)
    assert not any("computed again" in note for note in result.notes)
    assert {r[0] for r in rows(settings, "SELECT keywords FROM topics WHERE run_id = 'r3'")} == {'["kept", "keywords"]'}
