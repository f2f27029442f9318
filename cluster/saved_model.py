"""The fitted topic model of a full cluster run, kept under the data dir so a later run can place new segments in it.

A full run (tune, fit, outliers, renumber) ends by saving what placing a point needs: the UMAP reducer and the
HDBSCAN clusterer (with its prediction data), HDBSCAN's label -> the run's topic number, and the reference the
outlier rule and the concept fallback compare with (each topic's centre and its members' sorted cosines to it),
the phrase space the points were joined with (cluster.phrase_share > 0), and the anchors new points are placed
by (cluster.encoder: their static and full-model vectors, ~3 MB per 1,000).
A later run with few new segments (`cluster.refit_share`) loads it instead of tuning and fitting again
(cluster/assign.py).

One pickle per fitting run: `<data_dir>/cluster_models/<run_id>.pkl`, written to a temporary name and renamed,
so a killed run leaves either no file or a whole one; a re-run of the same run writes the same model again (UMAP,
HDBSCAN and the study are seeded). Only the newest model is kept once a run that uses it has been written
(`prune`). The file is read only from the user's own data dir (pickle runs code on load: never point a data dir
at files you did not write). A model that cannot be read, was written by another format version, another
embedding model or other cluster settings is not used: the stage says why and tunes again.

Placing points (UMAP's transform) runs numba functions that compile on first use in each process: ~8 CPU-s of an
incremental run's ~21 at 50k messages, whatever the number of new segments. `load` turns numba's on-disk cache on
for them (`cache_compiled`): the machine code is kept under `<data_dir>/cluster_models/jit-cache/` and the next
run loads it (0.3 CPU-s). The same functions run, so the same points come out; numba compiles again when umap's
source or the CPU changes. NUMBA_CACHE_DIR, when set, is used instead.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import pickle
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from cluster.phrase_space import PhraseSpace
from cluster.topic_space import Anchors
from cluster.tuning import OBJECTIVE_VERSION
from contracts.settings import ClusterSettings, section_dump
from staging.embeddings import Matrix

log = logging.getLogger(__name__)

MODEL_VERSION = 5  # bump when SavedModel's fields or their meaning change: older files are then refitted
# (4: the anchors' vectors are of their messages as shown, clients/shown.py, not of the raw text; 5: topics joined by
# their titles, cluster/title_merge.py: several fitted labels map to one topic, whose reference is theirs together)
MODEL_DIR = "cluster_models"
JIT_CACHE = "jit-cache"  # under MODEL_DIR: numba's compiled UMAP functions (cache_compiled)
NOT_FIT_SETTINGS = ("refit_share", "llm_labels")  # settings that do not shape the fitted model or its topics


@dataclass(slots=True)
class OutlierReference:
    """What the outlier rule compares a noise point with: each topic's unit centre and its members' cosines to it
    (sorted), taken from the labels before outlier handling, as `cluster.topics.reassign_outliers` takes them."""

    centres: dict[int, Matrix] = field(default_factory=dict)
    member_sims: dict[int, np.ndarray[Any, Any]] = field(default_factory=dict)


@dataclass(slots=True)
class SavedModel:
    version: int
    fit_run: str  # the run that tuned and fitted it
    model: str  # the embedding model's key (+ the topic encoder's: topic_space.model_key): no other vectors fit it
    settings: str  # settings_digest of the cluster settings it was fitted under
    points: int  # segments the fitting run clustered (the base of cluster.refit_share)
    reducer: Any
    clusterer: Any
    topic_of: dict[int, int]  # HDBSCAN label -> the fitting run's topic number
    reference: OutlierReference  # keyed by topic number
    centres: dict[int, Matrix]  # each topic's unit centre after outlier handling (the concept fallback)
    phrase_space: PhraseSpace | None = None  # what new points' vectors are joined with (cluster/phrase_space.py)
    anchors: Anchors | None = None  # the segments the full model read, new points placed by (cluster/topic_space.py)


def settings_digest(cfg: ClusterSettings) -> str:
    """A digest of the cluster settings that shape the fit, and of the tuning objective's version: any change to
    them means a new model (a model tuned under an older objective is refitted, not extended)."""
    shaping = {k: v for k, v in section_dump(cfg).items() if k not in NOT_FIT_SETTINGS}
    shaping["objective_version"] = OBJECTIVE_VERSION
    return hashlib.sha256(json.dumps(shaping, sort_keys=True).encode()).hexdigest()[:16]


def path_for(data_dir: Path, run_id: str) -> Path:
    return data_dir / MODEL_DIR / f"{run_id}.pkl"


def save(data_dir: Path, model: SavedModel) -> Path:
    """Write the model atomically (temporary file, fsync, rename) and return its path."""
    path = path_for(data_dir, model.fit_run)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(f".pkl.{os.getpid()}.partial")
    with partial.open("wb") as out:
        pickle.dump(model, out, protocol=pickle.HIGHEST_PROTOCOL)
        out.flush()
        os.fsync(out.fileno())
    os.replace(partial, path)
    return path


def cache_compiled(data_dir: Path) -> int:
    """Numba's on-disk cache on for the UMAP functions a transform compiles (see the module docstring); returns
    how many functions it turned on. Process-wide: the numba functions that cache already (pynndescent's) keep
    theirs under the same folder."""
    import umap.layouts  # imported here: a module that only names the model file needs none of umap
    import umap.umap_
    from numba.core import config as numba_config
    from numba.core.caching import NullCache
    from numba.core.registry import CPUDispatcher

    if not os.environ.get("NUMBA_CACHE_DIR"):
        folder = data_dir / MODEL_DIR / JIT_CACHE
        folder.mkdir(parents=True, exist_ok=True)
        setattr(numba_config, "CACHE_DIR", str(folder))  # noqa: B010 (numba reads it when a cache is made)
    turned = 0
    for module in (umap.umap_, umap.layouts):
        for function in vars(module).values():
            if isinstance(function, CPUDispatcher) and isinstance(getattr(function, "_cache", None), NullCache):
                function.enable_caching()
                turned += 1
    return turned


def load(data_dir: Path, fit_run: str, *, model: str, settings: str) -> tuple[SavedModel | None, str]:
    """The model fitted by `fit_run`, or None and the reason it cannot be used."""
    path = path_for(data_dir, fit_run)
    if not path.exists():
        return None, f"no saved topic model of run {fit_run} ({path})"
    cache_compiled(data_dir)
    try:
        with path.open("rb") as source:
            found = pickle.load(source)  # the data dir's own file, written by save() above
    except Exception as exc:  # any unreadable model means: fit again, and say why
        return None, f"the saved topic model {path} cannot be read ({type(exc).__name__}: {exc})"
    if not isinstance(found, SavedModel) or getattr(found, "version", None) != MODEL_VERSION:
        return None, f"the saved topic model {path} is of another format version"
    if found.model != model:
        return None, f"the saved topic model was fitted on {found.model} vectors, not {model}"
    if found.settings != settings:
        return None, "the cluster settings changed since the saved topic model was fitted"
    return found, ""


def prune(data_dir: Path, keep: str) -> int:
    """Delete every saved model but `keep`'s (and leftovers of killed saves); returns how many files went."""
    folder = data_dir / MODEL_DIR
    if not folder.is_dir():
        return 0
    removed = 0
    for path in folder.iterdir():
        if path.name != f"{keep}.pkl" and (path.suffix == ".pkl" or path.name.endswith(".partial")):
            path.unlink(missing_ok=True)
            removed += 1
    return removed
