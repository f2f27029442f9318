"""Incremental cluster runs: what is new goes into the topics of the saved model; nothing is tuned or refitted.

When (`plan`): an earlier clustered run under the same embedding model (the base) names the run that fitted its
model (`params.fit_run`); that model is saved (cluster/saved_model.py) under the same cluster settings; and the
segments new, changed or retired since the fit are fewer than `cluster.refit_share` of the segments it
clustered. The share is counted from the fit, not from the base, so a series of small dumps still ends in a
re-tune once they add up. Anything else: the stage tunes and fits as on a first run, and says why.

What (`assign`), against the base run:
- segments whose vector is new or changed since the base (embedding_items' run id, which stays put while the
  vector does) are placed as a full run places the points beyond its fit sample: UMAP transform +
  HDBSCAN approximate_predict (`cluster.topics.place_all`, through the runner's `map_batches`), then the same
  outlier rule against the saved reference; HDBSCAN labels map to the fit's topic numbers;
- concepts that are live and have a vector the base did not link (new, or re-embedded since) are placed the same
  way, the nearest saved topic centre when the model calls them noise (as a full run does);
- everything else is carried over from the base in SQL (staging.topics.write_assigned): links of segments still
  current and concepts not merged, and their map points (new segments get no map point: the map is a sample);
- topics keep the base's number, topic_uid, keywords and representatives (minus retired ones); sizes are
  recounted; the label is the keyword label again, then the LLM name when one is configured (cached by uid).
  Keywords computed under other keyword rules (the base's params hold no or another
  cluster.describe.KEYWORDS_VERSION) are computed again from the topics' segments after this run, once.
  A topic keeps its uid although its members grew: it is the same cluster of the same model, and a stable uid
  keeps the cues and load stages from rewriting every edge of a topic that gained one segment.

Every step depends only on the base run's rows, the saved model and the current vectors, so a killed run re-run
writes the same rows (one transaction); the base of a run is always an older run, never itself.
"""

from __future__ import annotations

import logging
import sqlite3
from dataclasses import dataclass
from typing import Any

import numpy as np

from clients.batches import MapBatches
from cluster import describe, phrase_space, saved_model, topic_space
from cluster import topics as fit_topics
from cluster.saved_model import SavedModel
from contracts.settings import Settings
from staging import concepts as concept_store
from staging import embeddings as vectors
from staging import segments as segment_store
from staging import topics as store

log = logging.getLogger(__name__)

Link = tuple[str, str, int, str, float, str]


class TopicEmptied(Exception):
    """A topic of the saved model lost every segment: the model no longer describes the archive."""


@dataclass(slots=True)
class Plan:
    base: dict[str, Any]  # the base run's cluster_runs summary
    model: SavedModel
    new_segments: list[str]  # current segments with a vector new or changed since the base
    changed_since_fit: int
    share: float


def plan(staging: sqlite3.Connection, settings: Settings, key: str, run_id: str) -> tuple[Plan | None, str]:
    """The incremental plan for this run, or None and why the run tunes and fits instead ('' on a first run)."""
    base, why = _base(staging, settings, key, run_id)
    if base is None:
        return None, why
    fit_run = str(base["params"]["fit_run"])
    digest = saved_model.settings_digest(settings.cluster)
    fitted_on = topic_space.model_key(settings, key)
    model, why = saved_model.load(settings.data_dir, fit_run, model=fitted_on, settings=digest)
    if model is None:
        return None, why
    changed, why = _changed_since_fit(staging, settings, key, fit_run, model.points)
    if why:
        return None, why
    new = store.segments_since(staging, key, str(base["run_id"]))
    return Plan(base, model, new, changed, changed / max(model.points, 1)), ""


def refit_reason(staging: sqlite3.Connection, settings: Settings, key: str, run_id: str) -> str:
    """Why this run will tune and fit (or may: a saved model is there but unread), '' when `plan`'s checks up to
    the model pass: `plan` without reading the model, for the runner's guess at the run's size (the fit's point
    count is in the base's params, or the fit's cluster_runs row, or estimated from the base's on the low side)."""
    base, why = _base(staging, settings, key, run_id)
    if base is None:
        return why or "no earlier clustered run under this model"
    fit_run = str(base["params"]["fit_run"])
    if not saved_model.path_for(settings.data_dir, fit_run).exists():
        return f"no saved topic model of run {fit_run}"
    points = base["params"].get("fit_points")  # absent from older fits; incremental runs carry their base's params
    if points is None:
        fitted = store.run_summary(staging, fit_run)
        if fitted is not None:
            points = fitted["points"]
        else:  # pruned, and older than fit_points: the base's count less what changed, never more than the fit's
            points = int(base["points"]) - len(store.segments_since(staging, key, fit_run))
    return _changed_since_fit(staging, settings, key, fit_run, int(points))[1]


def _base(staging: sqlite3.Connection, settings: Settings, key: str, run_id: str) -> tuple[dict[str, Any] | None, str]:
    """The base run, whose params name the run that fitted its model; or None and why not ('' on a first run)."""
    base = store.base_run(staging, run_id, key)
    if base is None:
        return None, ""
    if settings.cluster.refit_share <= 0:
        return None, "cluster.refit_share is 0: every run tunes and fits"
    if not (base.get("params") or {}).get("fit_run"):
        return None, f"run {base['run_id']} saved no topic model (clustered before models were kept)"
    return base, ""


def _changed_since_fit(
    staging: sqlite3.Connection, settings: Settings, key: str, fit_run: str, fitted_points: int
) -> tuple[int, str]:
    """Segments new, changed or retired since the fit, and why they call for a re-tune ('' while they do not)."""
    share_limit = settings.cluster.refit_share
    changed = len(store.segments_since(staging, key, fit_run)) + store.segments_retired_since(staging, fit_run)
    share = changed / max(fitted_points, 1)
    if share < share_limit:
        return changed, ""
    return changed, (
        f"{changed} segment(s) new, changed or retired since the topic model was fitted (run {fit_run}):"
        f" {share:.1%} of its {fitted_points}, not below cluster.refit_share={share_limit:g}"
    )


def _keywords_again(
    archive: sqlite3.Connection,
    staging: sqlite3.Connection,
    settings: Settings,
    base_id: str,
    placed: list[str],
    links: list[Link],
) -> dict[int, list[str]]:
    """Every topic's keywords from its segments after this run (the base's kept, and those placed now)."""
    members: dict[str, tuple[str, ...]] = {}
    conversation_of: dict[str, str] = {}
    for segment in segment_store.iter_current_segments(staging):
        members[segment.segment_id] = segment.message_ids
        conversation_of[segment.segment_id] = segment.conversation_id
    kept = store.kept_segment_links(staging, base_id, placed)
    now = [(item, topic) for kind, item, topic, *_ in links if kind == "segment"]
    return describe.topic_keywords(archive, members, kept + now, settings, conversation_of)


@dataclass(slots=True)
class Assigned:
    summary: dict[str, Any]
    topics: list[dict[str, Any]]
    links: list[Link]  # the new and re-placed ones only (the rest is carried over when written)
    replaced: list[tuple[str, str]]  # (kind, item_id) placed by this run, linked or not: not carried over
    counts: dict[str, int]
    notes: list[str]


def assign(
    archive: sqlite3.Connection,
    staging: sqlite3.Connection,
    settings: Settings,
    key: str,
    found: Plan,
    map_batches: MapBatches,
) -> Assigned:
    """Place what is new in the saved model; see the module docstring. Raises TopicEmptied."""
    cfg, model, base_id = settings.cluster, found.model, str(found.base["run_id"])
    ids, points = vectors.item_matrix(staging, "segment", key, found.new_segments)
    keep = np.linalg.norm(points, axis=1) > 0 if ids else np.zeros(0, dtype=bool)
    ids, points = [i for i, k in zip(ids, keep, strict=True) if k], points[keep] if ids else points
    if model.anchors is not None and ids:  # into the full model's space by their nearest anchors, as in the fit
        points = topic_space.place(model.anchors, points)
    if model.phrase_space is not None and ids:  # joined with their phrases, as the fit's points were
        members = segment_store.members_of(staging, ids)
        points = model.phrase_space.join(points, phrase_space.segment_keys(archive, members, ids, map_batches))
    labels, weights, source = _place_segments(model, points, cfg.outlier_quantile, map_batches)
    base_topics = {t["topic"]: t for t in store.list_topics(staging, base_id)}
    uids = {topic: row["topic_uid"] for topic, row in base_topics.items()}
    links: list[Link] = [
        ("segment", ids[i], int(labels[i]), uids[int(labels[i])], fit_topics.unit_weight(weights[i]), source[i])
        for i in np.flatnonzero(labels >= 0)
    ]
    sizes = store.kept_segment_sizes(staging, base_id, found.new_segments)
    for link in links:
        sizes[link[2]] = sizes.get(link[2], 0) + 1
    emptied = sorted(t for t in base_topics if sizes.get(t, 0) < 1)
    if emptied:
        raise TopicEmptied(f"topic(s) {emptied} of run {base_id} lost every segment")
    concept_ids, missing = store.concepts_to_place(staging, key, base_id)
    links += _place_concepts(staging, key, model, concept_ids, uids, map_batches)
    current = set(store.current_segment_ids(staging, [r for t in base_topics.values() for r in t["representatives"]]))
    keywords = {topic: list(row["keywords"]) for topic, row in base_topics.items()}
    params = dict(found.base.get("params") or {})
    again = params.get("keywords_version") != describe.KEYWORDS_VERSION
    if again:  # computed under other keyword rules: this run's topics, as a full fit describes them
        keywords.update(_keywords_again(archive, staging, settings, base_id, found.new_segments, links))
        params["keywords_version"] = describe.KEYWORDS_VERSION
    names = fit_topics.labels_of(keywords)
    topic_rows = [
        {
            **row,
            "keywords": keywords[topic],
            "label": names[topic],
            "size": sizes[topic],
            "representatives": [r for r in row["representatives"] if r in current],
        }
        for topic, row in sorted(base_topics.items())
    ]
    points_now = store.current_points(staging, key)
    linked = sum(sizes.values())
    outlier_share = max(0.0, 1.0 - linked / points_now) if points_now else 0.0
    notes = [
        f"model: {key}",
        f"incremental: {len(ids)} new or changed segment(s) placed in the topics of run {base_id} (model fitted in"
        f" run {model.fit_run}; {found.changed_since_fit} segment(s), {found.share:.1%}, changed since the fit,"
        f" below cluster.refit_share={cfg.refit_share:g}): no tuning, no refit",
    ]
    if missing:
        notes.append(f"{missing} concept(s) without a vector got no topic: run the embed_concepts stage")
    if again:
        notes.append(f"topic keywords and labels computed again (keyword rules v{describe.KEYWORDS_VERSION})")
    summary = {
        "status": "clustered",
        "model": key,
        "study_name": found.base.get("study_name"),
        "points": points_now,
        "topics": len(topic_rows),
        "outlier_share": round(outlier_share, 6),
        "outlier_share_raw": found.base.get("outlier_share_raw"),
        "validity": found.base.get("validity"),
        "params": params or None,
        "notes": notes,
    }
    counts = {
        "incremental": 1,
        "segments_placed": len(ids),
        "segments_placed_noise": int(np.sum(labels == -1)),
        "changed_since_fit": found.changed_since_fit,
        "changed_since_fit_pct": round(100 * found.share),
        "concepts_placed": sum(1 for link in links if link[0] == "concept"),
        "outliers": max(points_now - linked, 0),
        "outliers_reassigned": sum(1 for s in source if s == "reassigned"),
        "outlier_share_pct": round(100 * outlier_share),
    }
    replaced = [("segment", s) for s in found.new_segments] + [("concept", c) for c in concept_ids]
    return Assigned(summary, topic_rows, links, replaced, counts, notes)


def _place_segments(
    model: SavedModel, points: np.ndarray[Any, Any], quantile: float | None, map_batches: MapBatches
) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any], list[str]]:
    """Topic numbers, weights and sources of new points, as a full run labels the points beyond its fit sample."""
    if not len(points):
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64), []
    raw, strengths = fit_topics.place_all(model.reducer, model.clusterer, points, map_batches)
    labels = np.array([model.topic_of.get(int(label), -1) for label in raw.tolist()], dtype=np.int64)
    weights = np.where(labels >= 0, strengths, 0.0)
    source = ["predicted" if label >= 0 else "noise" for label in labels.tolist()]
    if quantile is not None:
        ref = model.reference
        labels, weights, moved = fit_topics.reassign_with(
            points, labels, weights, quantile, ref.centres, ref.member_sims
        )
        for i in np.flatnonzero(moved):
            source[i] = "reassigned"
    return labels, weights, source


def _place_concepts(
    staging: sqlite3.Connection,
    key: str,
    model: SavedModel,
    concept_ids: list[str],
    uids: dict[int, str],
    map_batches: MapBatches,
) -> list[Link]:
    """Concept -> Topic links of the given concepts: placed in the model, else the nearest saved topic centre."""
    found, matrix = vectors.item_matrix(staging, "concept", key, concept_ids)
    if not found or not any(t in uids for t in model.centres):
        return []
    if model.anchors is not None:
        matrix = topic_space.place(model.anchors, matrix)
    if model.phrase_space is not None:
        titles = concept_store.titles_of(staging, found)
        matrix = model.phrase_space.join(matrix, phrase_space.title_keys([titles.get(c, "") for c in found]))
    placed, strengths = fit_topics.place_all(model.reducer, model.clusterer, matrix, map_batches)
    topics = sorted(t for t in model.centres if t in uids)
    centres = np.stack([model.centres[t] for t in topics])
    links: list[Link] = []
    for row, concept_id in enumerate(found):
        topic = model.topic_of.get(int(placed[row]), -1)
        if topic >= 0 and topic in uids:
            links.append(
                ("concept", concept_id, topic, uids[topic], fit_topics.unit_weight(strengths[row]), "predicted")
            )
            continue
        sims = centres @ matrix[row]
        best = max(range(len(topics)), key=lambda i: (float(sims[i]), -topics[i]))
        topic = topics[best]
        links.append(
            (
                "concept",
                concept_id,
                topic,
                uids[topic],
                fit_topics.unit_weight(max(float(sims[best]), 0.0)),
                "reassigned",
            )
        )
    return links
