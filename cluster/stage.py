"""The cluster stage: segment embeddings -> topics (UMAP -> HDBSCAN, tuned by Optuna), weighted BELONGS_TO links.

The steps (the runner, flows/stage_runner.py, keeps the ledger): read the current segments' vectors (written
by the embed stage under the configured model) and the concepts'; move them into the full model's space
(cluster/topic_space.py, cluster.encoder: the anchors read by the full model, the rest placed by them); join each
with the phrases its segment uses (cluster/phrase_space.py, when cluster.phrase_share > 0: the segments' texts
from archive.db); compute (cluster.tuning: the study on a seeded sample of the anchors, stored in optuna.db under
the data dir and reused when the inputs are the same; cluster.topics: final fit, outlier handling;
cluster.title_merge: topics joined by their conversations' titles; c-TF-IDF labels, LLM names when extract.llm is
set, the 2-D map); check the links (`_check`: weights finite in 0..1, every link to a known topic, no empty topic);
replace this run's rows in staging.db in one transaction; return the counts.

Fewer points than `cluster.min_points` (a tiny archive, a test): nothing to tune, so the stage records a
skipped run with a note instead of forcing a meaningless clustering.
"""

from __future__ import annotations

import logging
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

from clients.batches import MapBatches, map_in_process
from clients.embedders import Embedder, embedder_key
from clients.progress import bar
from clients.stage import History, Outcome, StageContext
from cluster import assign, describe, phrase_space, saved_model, title_merge, topic_space
from cluster import topics as fit_topics
from cluster.label_counts import LabelCounts
from cluster.tuning import Objective, Tuned, budget, prune_studies, tune
from contracts.settings import Settings
from staging import concepts as concept_store
from staging import embeddings as vectors
from staging import segments as segment_store
from staging import topics as store

log = logging.getLogger(__name__)

STAGE = "cluster"
# Topics the LLM did not name because the endpoint refused the key: the stage is left unfinished (the next run
# is not skipped as unchanged, and names them once the key is fixed; the others come from the label cache)
REFUSED_NOTE = "{} topic(s) kept their keyword label: the endpoint refused the API key; fix the key and run again"
MAP_MAX = 20000  # points drawn on the topic map (a seeded sample beyond that)


def optuna_url(settings: Settings) -> str:
    return f"sqlite:///{(settings.data_dir / 'optuna.db').absolute()}"


def large_run(ctx: StageContext, history: History) -> str:
    """Why this run will tune and fit ('' when it will place what is new in the saved model): the runner's guess
    at its size (flows/stage_size.py), `assign.plan`'s checks without reading the model."""
    return assign.refit_reason(ctx.staging, ctx.settings, embedder_key(ctx.settings.embed), ctx.run_id)


def run(ctx: StageContext, *, embedder: Embedder | None = None) -> Outcome:
    """Cluster the current segments into topics and link segments and concepts to them; the points the final
    fit was not made on are placed through `ctx.map_batches` (in this process unless the runner says otherwise)."""
    archive, staging, run_id, settings = ctx.archive, ctx.staging, ctx.run_id, ctx.settings
    map_batches = ctx.map_batches or map_in_process
    key = embedder.key if embedder is not None else embedder_key(settings.embed)
    seconds: dict[str, float] = {}
    with _timed(seconds, "plan"):
        found, why_refit = assign.plan(staging, settings, key, run_id)
    if ctx.force:  # `chatmem run --force`: tuned and fitted again, not placed in the saved model's topics
        found, why_refit = None, "--force: tuned and fitted again"
    if found is not None:
        try:
            return _run_assigned(archive, staging, run_id, settings, key, found, map_batches, seconds)
        except assign.TopicEmptied as exc:
            why_refit = f"{exc}: tuned and fitted again"
    with _timed(seconds, "read"):
        points = _read_points(staging, key)
    notes = [f"model: {key}"] + ([f"full run: {why_refit}"] if why_refit else [])
    if points.without_vector:
        notes.append(f"{points.without_vector} segment(s) without a vector (empty, or not embedded)")
    cfg = settings.cluster
    distinct = _distinct_rows(points.matrix, enough=cfg.min_points)
    if distinct < cfg.min_points:
        return _not_clustered(staging, run_id, key, points, distinct, cfg.min_points, notes)
    if topic_space.enabled(settings):
        with _timed(seconds, "encode"):
            _encode_anchors(ctx, points, notes)
    if cfg.phrase_share > 0:
        with _timed(seconds, "phrase_space"):
            _join_phrases(archive, points, cfg.phrase_share, cfg.phrase_dims, cfg.seed, map_batches)
    tuned, sample = _tune(ctx, points, key, seconds, notes)
    fitted = _fit(ctx, points, tuned, key, map_batches, seconds, notes)
    if points.anchor_rows is not None:
        notes.extend(crowded(points.anchor_rows, fitted.labels, cfg.encode_max))
    notes.extend(unfiled([points.conversation_of[i] for i in points.ids], fitted.labels))
    with _timed(seconds, "map"):
        shown = sample[fit_topics.seeded_sample(len(sample), MAP_MAX, cfg.seed)]
        xy = fit_topics.map_layout(points.matrix[shown], tuned.best.n_neighbors, cfg.seed)
        labels, ids = fitted.labels, points.ids
        map_rows = [(ids[i], float(x), float(y), int(labels[i])) for i, (x, y) in zip(shown, xy, strict=True)]
    outlier_share = float(np.mean(labels == -1))
    summary = {
        "status": "clustered",
        "model": key,
        "study_name": tuned.study_name,
        "points": len(ids),
        "topics": len(fitted.topic_rows),
        "outlier_share": round(outlier_share, 6),
        "outlier_share_raw": round(float(np.mean(fitted.fit.labels == -1)), 6),
        "validity": round(fitted.fit.validity, 6),
        "params": {
            **_asdict(tuned.best),
            "objective": round(tuned.best_value, 6),
            "fit_run": run_id,
            "fit_points": len(ids),  # the base of cluster.refit_share (assign.refit_reason, after this row is pruned)
            "encoder": points.anchors.encoder if points.anchors is not None else key,  # what the topics were found on
            "keywords_version": describe.KEYWORDS_VERSION,  # an incremental run keeps keywords of this version only
        },
        "seconds": {k: round(v, 3) for k, v in seconds.items()},
        "notes": notes,
    }
    _check(fitted.topic_rows, fitted.links)
    with _timed(seconds, "save_model"):
        _save_model(settings, run_id, key, len(ids), fitted, points)
    with _timed(seconds, "write"):
        store.write_run(staging, run_id, summary, fitted.topic_rows, fitted.links, map_rows)
    saved_model.prune(settings.data_dir, keep=run_id)
    # optuna.db: only a full fit adds a study; the kept cluster runs' stay (docs/runs.md)
    pruned = prune_studies(optuna_url(settings), store.kept_studies(staging))
    counts = {
        "points": len(ids),
        "segments_encoded": len(points.anchors.ids) if points.anchors is not None else 0,
        "topics": len(fitted.topic_rows),
        "outliers": int(np.sum(labels == -1)),
        "outliers_reassigned": int(sum(s == "reassigned" for s in fitted.source)),
        "outlier_share_pct": round(100 * outlier_share),
        "trials_run": tuned.trials_run,
        "trials_reused": len([t for t in tuned.trials if t.state == "COMPLETE"]) - tuned.trials_run,
        "links": len(fitted.links),
        "concept_links": sum(1 for link in fitted.links if link[0] == "concept"),
        "llm_label_calls": fitted.named.calls,
        "llm_labels_cached": fitted.named.cached,
        "llm_labels_failed": fitted.named.failed,
        "llm_labels_refused": fitted.named.refused,
        "incremental": 0,
        "segments_placed": 0,
        "studies_pruned": len(pruned),
    }
    log.info("cluster - %s; %s", counts, summary["seconds"])
    rows_out = len(fitted.links) + len(fitted.topic_rows)
    unfinished = bool(fitted.named.refused)
    return Outcome(rows_in=len(ids), rows_out=rows_out, counts=counts, notes=notes, unfinished=unfinished)


@dataclass(slots=True)
class _Points:
    """The current segments' vectors under one model (zero vectors left out), and what each segment holds."""

    ids: list[str]
    matrix: np.ndarray[Any, Any]
    members: dict[str, tuple[str, ...]]  # segment id -> its message ids
    conversation_of: dict[str, str]
    without_vector: int  # current segments with no (or a zero) vector
    openers: set[str]  # each conversation's first current segment
    keys: list[tuple[str, ...]] | None = None  # each point's phrase keys, when cluster.phrase_share > 0
    space: phrase_space.PhraseSpace | None = None  # the phrase space `matrix` was joined with
    anchors: topic_space.Anchors | None = None  # the segments the full model read (cluster.encoder)
    anchor_rows: np.ndarray[Any, Any] | None = None  # their rows in `matrix`: what the tuning and the fit see


def _encode_anchors(ctx: StageContext, points: _Points, notes: list[str]) -> None:
    """The points moved into the full model's space (cluster/topic_space.py), in place: the anchors by their
    own full-model vectors, every other segment by its nearest anchors."""
    cfg = ctx.settings.cluster
    # never fewer than min_points: the tuning and the fit see the anchors only
    rows = topic_space.chosen(points.ids, max(cfg.encode_max, cfg.min_points), cfg.seed, points.openers)
    anchor_ids = [points.ids[i] for i in rows]
    encoded, encoder = topic_space.encode(
        ctx.archive, ctx.staging, ctx.settings, ctx.run_id, points.members, anchor_ids, progress=ctx.progress
    )
    points.anchors = topic_space.Anchors(anchor_ids, topic_space.unit(points.matrix[rows]), encoded, encoder)
    others = np.setdiff1d(np.arange(len(points.ids)), rows)
    matrix = np.empty((len(points.ids), encoded.shape[1]), dtype=np.float32)
    matrix[rows] = encoded
    matrix[others] = topic_space.place(points.anchors, points.matrix[others])
    points.matrix, points.anchor_rows = matrix, rows
    placed = f"; the other {len(others)} placed by their nearest ones" if len(others) else ""
    notes.append(f"topics found by {encoder} on the title and opening of {len(rows)} segment(s){placed}")


def unfiled(conversations: list[str], labels: np.ndarray[Any, Any]) -> list[str]:
    """A note of the conversations none of whose segments is in a topic (each one an outlier): `chatmem topics`
    lists no topic that holds them (`conversations`: each point's conversation, row for row with `labels`)."""
    filed = {c for c, topic in zip(conversations, labels.tolist(), strict=True) if topic >= 0}
    left = len(set(conversations)) - len(filed)
    if not left:
        return []
    return [f"{left} of {len(set(conversations))} conversation(s) in no topic: each of their segments an outlier"]


CROWDED_SHARE = 0.25  # a topic with more of the placed segments than this, and ...
CROWDED_RATIO = 1.5  # ... this many times its share of the read ones: the run says why


def crowded(read: np.ndarray[Any, Any], labels: np.ndarray[Any, Any], encode_max: int) -> list[str]:
    """A note when the segments placed by their nearest anchors crowd into one topic: it holds more than
    CROWDED_SHARE of them and CROWDED_RATIO times its share of the anchors (`read`: their rows in `labels`). A
    small cluster.encode_max does it: few anchors find few, coarse topics, and a placed segment (the mean of its
    nearest anchors) lands near the middle of them (50 read of the labelled set's 1,404: one topic held 62 %)."""
    placed = np.ones(len(labels), dtype=bool)
    placed[read] = False
    if not placed.any() or not (labels[placed] >= 0).any():
        return []
    topic = int(np.bincount(labels[placed & (labels >= 0)]).argmax())
    share = float(np.mean(labels[placed] == topic))
    among_read = float(np.mean(labels[~placed] == topic)) if (~placed).any() else 0.0
    if share <= CROWDED_SHARE or share <= CROWDED_RATIO * among_read:
        return []
    return [
        f"one topic holds {share:.0%} of the {int(placed.sum())} segment(s) placed by their nearest read ones, and"
        f" {among_read:.0%} of the {len(read)} the full model read (cluster.encode_max={encode_max}): too few read"
        " for this archive's topics; a larger CHATMEM_CLUSTER__ENCODE_MAX finds finer ones"
    ]


def _join_phrases(
    archive: sqlite3.Connection, points: _Points, share: float, dims: int, seed: int, map_batches: MapBatches
) -> None:
    """Each point's MiniLM vector joined with its segment's phrase vector (cluster/phrase_space.py), in place."""
    points.keys = phrase_space.segment_keys(archive, points.members, points.ids, map_batches)
    conversations = [points.conversation_of[i] for i in points.ids]
    points.space = phrase_space.fit(points.keys, conversations, dims, share, seed)
    points.matrix = points.space.join(points.matrix, points.keys)


def _read_points(staging: sqlite3.Connection, key: str) -> _Points:
    members: dict[str, tuple[str, ...]] = {}
    conversation_of: dict[str, str] = {}
    openers: dict[str, str] = {}  # conversation -> its first current segment (segments come by ordinal)
    for segment in segment_store.iter_current_segments(staging):
        members[segment.segment_id] = segment.message_ids
        conversation_of[segment.segment_id] = segment.conversation_id
        openers.setdefault(segment.conversation_id, segment.segment_id)
    ids, points = vectors.item_matrix(staging, "segment", key, list(members))
    keep = np.linalg.norm(points, axis=1) > 0 if len(ids) else np.zeros(0, dtype=bool)
    ids = [i for i, k in zip(ids, keep, strict=True) if k]
    points = points[keep] if len(ids) else points
    return _Points(ids, points, members, conversation_of, len(members) - len(ids), set(openers.values()))


def _not_clustered(
    staging: sqlite3.Connection,
    run_id: str,
    key: str,
    points: _Points,
    distinct: int,
    min_points: int,
    notes: list[str],
) -> Outcome:
    """Too few distinct points to tune anything: a skipped run with a note, no topics."""
    n = len(points.ids)
    same = f" ({distinct} distinct)" if distinct < n else ""
    notes.append(f"{n} segment vector(s){same}, fewer than cluster.min_points={min_points}: not clustered")
    store.write_run(staging, run_id, {"status": "skipped", "model": key, "points": n, "topics": 0, "notes": notes})
    counts = {"points": n, "topics": 0, "trials_run": 0, "trials_reused": 0, "links": 0}
    return Outcome(rows_in=n, rows_out=1, counts=counts, notes=notes, skipped=True)


def _tune(
    ctx: StageContext, points: _Points, key: str, seconds: dict[str, float], notes: list[str]
) -> tuple[Tuned, np.ndarray[Any, Any]]:
    """The Optuna study on a seeded sample (stored in optuna.db, continued by a re-run); its trials recorded."""
    cfg = ctx.settings.cluster
    objective = Objective(
        cfg.noise_weight,
        cfg.count_weight,
        cfg.min_topics,
        outlier_quantile=cfg.outlier_quantile,
        phrase_weight=cfg.phrase_weight,
    )
    pool = points.anchor_rows if points.anchor_rows is not None else np.arange(len(points.ids))
    sample = pool[fit_topics.seeded_sample(len(pool), cfg.sample_size, cfg.seed)]
    groups = _conversation_groups([points.conversation_of[points.ids[i]] for i in sample])
    n_trials, timeout_s = budget(len(sample), cfg.n_trials, cfg.timeout_s)
    phrases = None
    if cfg.phrase_weight > 0:
        with _timed(seconds, "phrases"):
            sample_ids = [points.ids[i] for i in sample]
            keys = None if points.keys is None else [points.keys[i] for i in sample]
            phrases = describe.phrase_sample(ctx.archive, points.members, sample_ids, cfg.seed, keys)
    with _timed(seconds, "tune"), bar(ctx.progress, "cluster trials", n_trials) as advance:
        tuned = tune(
            points.matrix[sample],
            storage_url=optuna_url(ctx.settings),
            seed=cfg.seed,
            n_trials=n_trials,
            objective=objective,
            groups=groups,
            tag=topic_space.model_key(ctx.settings, key),
            timeout_s=timeout_s,
            on_trial=advance,
            phrases=phrases,
        )
    complete = sum(t.state == "COMPLETE" for t in tuned.trials)
    if complete < n_trials:
        notes.append(
            f"tuning stopped after {complete} of {n_trials} trials (safety cap {timeout_s or 0:.0f} CPU-s):"
            " a re-run continues the stored study"
        )
    trials = [
        {"number": t.number, "state": t.state, "value": t.value, "params": t.params, **t.attrs} for t in tuned.trials
    ]
    store.write_trials(ctx.staging, ctx.run_id, tuned.study_name, trials)
    return tuned, sample


@dataclass(slots=True)
class _Fitted:
    """The final fit and what it gives: labels after outlier handling, topics, links."""

    fit: fit_topics.Fit
    labels: np.ndarray[Any, Any]
    source: list[str]
    reference: tuple[dict[int, np.ndarray[Any, Any]], dict[int, np.ndarray[Any, Any]]]  # outlier_reference
    centres: dict[int, np.ndarray[Any, Any]]
    topic_rows: list[dict[str, Any]]
    links: list[tuple[str, str, int, str, float, str]]
    named: LabelCounts
    joins: int = 0  # topics joined by their titles (cluster/title_merge.py)


def _fit(
    ctx: StageContext,
    points: _Points,
    tuned: Tuned,
    key: str,
    map_batches: MapBatches,
    seconds: dict[str, float],
    notes: list[str],
) -> _Fitted:
    """Fit on every point with the best parameters, handle outliers, describe and name the topics, link the
    segments and the concepts to them."""
    archive, staging, settings, cfg = ctx.archive, ctx.staging, ctx.settings, ctx.settings.cluster
    matrix, ids = points.matrix, points.ids
    with _timed(seconds, "fit"):
        fit = fit_topics.fit_all(
            matrix, tuned.best, seed=cfg.seed, fit_max=cfg.fit_max, map_batches=map_batches, pool=points.anchor_rows
        )
    labels, weights, source = fit.labels, fit.weights, list(fit.source)
    with _timed(seconds, "outliers"):
        reference = fit_topics.outlier_reference(matrix, labels)
        if cfg.outlier_quantile is not None:
            labels, weights, moved = fit_topics.reassign_with(matrix, labels, weights, cfg.outlier_quantile, *reference)
            for i in np.flatnonzero(moved):
                source[i] = "reassigned"
        labels = fit_topics.renumber(labels)
    joins = 0
    if cfg.title_merge > 0 and points.anchors is not None:  # titles read by the full model the topics are found by
        with _timed(seconds, "title_merge"):
            conversations = [points.conversation_of[i] for i in ids]
            anchored = {points.conversation_of[i] for i in points.anchors.ids}  # bounded as the anchors are
            title_vectors, titled = title_merge.title_vectors(
                archive, staging, settings, ctx.run_id, conversations, anchored
            )
            labels, joins = title_merge.merge(
                labels, conversations, title_vectors, titled, cfg.title_merge, cfg.title_merge_cap
            )
            labels = fit_topics.renumber(labels)
        if joins:
            notes.append(f"{joins} topic(s) joined to one whose conversations' titles are alike (cluster.title_merge)")
    with _timed(seconds, "labels"):
        read = None
        if points.anchor_rows is not None:  # the representatives are segments the full model read
            read = np.zeros(len(ids), dtype=bool)
            read[points.anchor_rows] = True
        topic_rows = describe.describe_topics(
            archive, points.members, matrix, labels, ids, key, settings, points.conversation_of, read
        )
    named = LabelCounts()
    if cfg.llm_labels and settings.extract.llm is not None and topic_rows:
        with _timed(seconds, "llm_labels"):
            describe.name_topics(archive, staging, points.members, topic_rows, settings.extract.llm, named, ctx.run_id)
        if named.failed:
            notes.append(f"{named.failed} topic(s) kept their keyword label: the LLM gave no usable name")
        if named.refused:
            notes.append(REFUSED_NOTE.format(named.refused))
    uids = {t["topic"]: t["topic_uid"] for t in topic_rows}
    links = [
        ("segment", ids[i], int(labels[i]), uids[int(labels[i])], fit_topics.unit_weight(weights[i]), source[i])
        for i in np.flatnonzero(labels >= 0)
    ]
    with _timed(seconds, "concepts"):
        missing: list[int] = []
        centres = fit_topics.centroids(matrix, labels)
        links += _concept_links(staging, fit, key, labels, centres, uids, missing, points)
        if missing:
            notes.append(f"{missing[0]} concept(s) without a vector got no topic: run the embed_concepts stage")
    return _Fitted(fit, labels, source, reference, centres, topic_rows, links, named, joins)


def _save_model(settings: Settings, run_id: str, key: str, count: int, fitted: _Fitted, points: _Points) -> None:
    """The fitted model, for the incremental runs that place new segments in its topics (cluster/assign.py)."""
    topic_of = _old_to_new(fitted.fit.labels, fitted.labels)
    centres, member_sims = fitted.reference
    reference = saved_model.OutlierReference(
        {topic_of[t]: c for t, c in centres.items() if t in topic_of},
        {topic_of[t]: m for t, m in member_sims.items() if t in topic_of},
    )
    if fitted.joins:  # several fitted labels make one topic: its reference is their members' together
        joined = np.array([topic_of.get(t, -1) for t in fitted.fit.labels.tolist()], dtype=np.int64)
        reference = saved_model.OutlierReference(*fit_topics.outlier_reference(points.matrix, joined))
    saved_model.save(
        settings.data_dir,
        saved_model.SavedModel(
            version=saved_model.MODEL_VERSION,
            fit_run=run_id,
            model=topic_space.model_key(settings, key),
            settings=saved_model.settings_digest(settings.cluster),
            points=count,
            reducer=fitted.fit.reducer,
            clusterer=fitted.fit.clusterer,
            topic_of=topic_of,
            reference=reference,
            centres=fitted.centres,
            phrase_space=points.space,
            anchors=points.anchors,
        ),
    )


def _run_assigned(
    archive: sqlite3.Connection,
    staging: sqlite3.Connection,
    run_id: str,
    settings: Settings,
    key: str,
    found: assign.Plan,
    map_batches: MapBatches,
    seconds: dict[str, float],
) -> Outcome:
    """The incremental path (cluster/assign.py): new segments and concepts placed in the saved model's topics."""
    cfg = settings.cluster
    with _timed(seconds, "assign"):
        done = assign.assign(archive, staging, settings, key, found, map_batches)
    named = LabelCounts()
    if cfg.llm_labels and settings.extract.llm is not None and done.topics:
        with _timed(seconds, "llm_labels"):
            reps = [r for t in done.topics for r in t["representatives"]]
            describe.name_topics(
                archive,
                staging,
                segment_store.members_of(staging, reps),
                done.topics,
                settings.extract.llm,
                named,
                run_id,
            )
        if named.failed:
            done.notes.append(f"{named.failed} topic(s) kept their keyword label: the LLM gave no usable name")
        if named.refused:
            done.notes.append(REFUSED_NOTE.format(named.refused))
    _check(done.topics, done.links)
    with _timed(seconds, "write"):
        done.summary["seconds"] = {k: round(v, 3) for k, v in seconds.items()}
        carried = store.write_assigned(
            staging, run_id, str(found.base["run_id"]), done.summary, done.topics, done.links, done.replaced
        )
    saved_model.prune(settings.data_dir, keep=found.model.fit_run)
    trials = store.study_trials(staging, str(found.base.get("study_name") or ""))
    links = carried + len(done.links)
    counts = {
        "points": int(done.summary["points"]),
        "topics": len(done.topics),
        **done.counts,
        "trials_run": 0,
        "trials_reused": sum(1 for t in trials if t["state"] == "COMPLETE"),
        "links": links,
        "links_carried": carried,
        "concept_links": store.count_links(staging, run_id, "concept"),
        "llm_label_calls": named.calls,
        "llm_labels_cached": named.cached,
        "llm_labels_failed": named.failed,
        "llm_labels_refused": named.refused,
    }
    log.info("cluster - incremental: %s; %s", counts, done.summary["seconds"])
    return Outcome(
        rows_in=len(found.new_segments),
        rows_out=len(done.links) + len(done.topics),
        counts=counts,
        notes=done.notes,
        unfinished=bool(named.refused),
    )


def _concept_links(
    staging: sqlite3.Connection,
    fit: fit_topics.Fit,
    key: str,
    labels: np.ndarray[Any, Any],
    centres: dict[int, np.ndarray[Any, Any]],
    uids: dict[int, str],
    missing: list[int],
    points: _Points,
) -> list[tuple[str, str, int, str, float, str]]:
    """Concept -> Topic links: each concept's vector placed in the fitted model, else its nearest topic.
    Concepts without a vector (the embed_concepts stage has not run since they appeared) are counted in
    `missing` and get no link. With anchors, a concept is placed by its nearest ones first (as a segment is);
    with a phrase space, its vector is then joined with its title's phrases."""
    if not uids or not concept_store.has_store(staging):
        return []
    concepts = {c.concept_id: c for c in concept_store.load_concepts(staging).values() if c.merged_into is None}
    if not concepts:
        return []
    found, matrix = vectors.item_matrix(staging, "concept", key, list(concepts))  # the embed_concepts stage's
    if len(found) < len(concepts):
        missing.append(len(concepts) - len(found))
    if not found:
        return []
    if points.anchors is not None:
        matrix = topic_space.place(points.anchors, matrix)
    space = points.space
    if space is not None:
        matrix = space.join(matrix, phrase_space.title_keys([concepts[c].title for c in found]))
    placed, strengths = fit_topics.place(fit.reducer, fit.clusterer, matrix)
    renumbered = _old_to_new(fit.labels, labels)
    topics = np.array([renumbered.get(int(p), -1) for p in placed.tolist()], dtype=np.int64)
    unplaced = np.flatnonzero(topics < 0)  # placed as noise: the nearest topic centre instead
    nearest, sims = fit_topics.nearest_centres(matrix[unplaced], centres)
    closest = dict(zip(unplaced.tolist(), zip(nearest, sims, strict=True), strict=True))
    links = []
    for row, concept_id in enumerate(found):
        topic = int(topics[row])
        if topic >= 0:
            links.append(
                ("concept", concept_id, topic, uids[topic], fit_topics.unit_weight(strengths[row]), "predicted")
            )
            continue
        best, sim = closest[row]
        links.append(("concept", concept_id, best, uids[best], fit_topics.unit_weight(max(sim, 0.0)), "reassigned"))
    return links


def _check(topic_rows: list[dict[str, Any]], links: list[tuple[str, str, int, str, float, str]]) -> None:
    """Step 4: what is about to be written holds together (a failure here is a bug: the stage fails)."""
    uids = {t["topic_uid"] for t in topic_rows}
    if any(t["size"] < 1 for t in topic_rows) or len(uids) != len(topic_rows):
        raise ValueError("a topic is empty or two topics share a topic_uid")
    bad = [link for link in links if link[3] not in uids or not 0.0 <= link[4] <= 1.0]
    if bad:
        raise ValueError(f"{len(bad)} BELONGS_TO link(s) name an unknown topic or a weight outside 0..1: {bad[0]}")


def _conversation_groups(conversations: list[str]) -> np.ndarray[Any, np.dtype[np.int64]]:
    """Per point, the number of its conversation (numbered in order of first appearance)."""
    numbers: dict[str, int] = {}
    return np.array([numbers.setdefault(c, len(numbers)) for c in conversations], dtype=np.int64)


def _distinct_rows(points: np.ndarray[Any, Any], *, enough: int) -> int:
    """How many distinct rows (to 5 decimals) `points` has, counted exactly only while below `enough`.

    A full `np.unique(axis=0)` sorts every 384-float row (seconds and a copy of the matrix at 100k segments)
    to answer a question a few hundred rows settle: the first rows are tried first, the whole matrix only when
    they hold fewer than `enough` distinct ones (a tiny or degenerate archive).
    """
    for size in (max(4 * enough, 1024), len(points)):
        distinct = len(np.unique(points[:size].round(5), axis=0)) if len(points) else 0
        if distinct >= enough or size >= len(points):
            return distinct
    return distinct


def _old_to_new(before: np.ndarray[Any, Any], after: np.ndarray[Any, Any]) -> dict[int, int]:
    """HDBSCAN's label -> the renumbered topic, from points that kept their fitted label."""
    mapping: dict[int, int] = {}
    for old, new in zip(before.tolist(), after.tolist(), strict=True):
        if old >= 0 and old not in mapping:
            mapping[old] = new
    return mapping


def _asdict(params: Any) -> dict[str, Any]:
    return {name: getattr(params, name) for name in params.__slots__}


@contextmanager
def _timed(seconds: dict[str, float], step: str) -> Iterator[None]:
    started = time.monotonic()
    try:
        yield
    finally:
        seconds[step] = seconds.get(step, 0.0) + time.monotonic() - started
