"""UMAP + HDBSCAN hyper-parameters tuned by Optuna on a sample. Pure apart from the study's SQLite storage.

The objective (maximised) is `cluster.objective`: for the labels HDBSCAN gives one trial's parameters on the
sample, conversation cohesion (the segments of one conversation in one topic) plus the spread of distinct
conversations over topics plus a centroid silhouette of the topics in the embedding space plus the phrase
coherence of the topics (NPMI of their best c-TF-IDF phrases, when the stage passes the sample's phrases), minus
the noise share and a steep penalty on a largest topic above 25 % of the conversations. No labels are needed: which
segments share a conversation is known. HDBSCAN's `relative_validity_` (fast DBCV) is recorded per trial for
comparison, no longer scored (it rewarded one or two huge blobs; with a count term it picked the fewest topics
at that term's floor: 369 of 475 segments in one topic on the shared exports).

The search space: n_neighbors in {10, 15, 30, 50}, n_components in {5, 10}, min_dist in {0.0, 0.1} (a few
values each, so UMAP layouts repeat across trials and are computed once: `LayoutCache`, over one shared k-NN
graph); min_cluster_size log-uniform in [0.1 %, 2 %] of the points; min_samples log-uniform in [1,
min_cluster_size]; cluster_selection_method in {eom, leaf}. Every trial is seeded: same points, same
conversations, same seed, same trials and the same best parameters.

Resumed studies give what a clean one gives. A study is stored (optuna.db) and a re-run resumes it, so a run
stopped mid-tuning (Ctrl-C, SIGKILL, the safety cap) goes on where it stopped. A sampler seeded once per study would
not: its random stream restarts with the new process, so the resumed trials repeated the first ones' parameters
and the study ended with other best parameters, and other topics, than a clean run (29 run + 1 reused). Each
trial therefore gets a sampler of its own, seeded by the study's seed and the number of trials completed before
it: the k-th completed trial samples the same parameters, from the same history, whether the study ran in one
go or was resumed. A trial the stop left unfinished (FAIL after Ctrl-C, RUNNING after a kill) counts for
nothing: TPE leaves both out of its history (no constant liar: `_sampler`) and they change no seed; one left
RUNNING is marked FAIL as the study is resumed (`left_running`), so that the stored study says what happened.
"""

from __future__ import annotations

import hashlib
import logging
import math
import time
import warnings
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cluster.objective import Objective, PhraseSample, measure
from staging.embeddings import Matrix

__all__ = ["Objective", "Params", "tune"]

log = logging.getLogger(__name__)

OBJECTIVE_VERSION = "v4"  # part of the study name: a changed objective never reuses old trials (v4: small topics)
SAMPLING = "seed-per-trial"  # part of the study name: studies sampled the old way (one seed per study) are not resumed
NEIGHBORS = (10, 15, 30, 50)
COMPONENTS = (5, 10)
MIN_DISTS = (0.0, 0.1)
METHODS = ("eom", "leaf")


@dataclass(frozen=True, slots=True)
class Params:
    n_neighbors: int
    n_components: int
    min_dist: float
    min_cluster_size: int
    min_samples: int
    cluster_selection_method: str

    @classmethod
    def of(cls, values: dict[str, Any]) -> Params:
        return cls(**{name: values[name] for name in cls.__slots__})


@dataclass(slots=True)
class TrialRecord:
    number: int
    state: str
    value: float | None
    params: dict[str, Any]
    attrs: dict[str, Any]


@dataclass(slots=True)
class Tuned:
    study_name: str
    best: Params
    best_value: float
    trials: list[TrialRecord]
    trials_run: int  # completed in this call; the rest were reused from the stored study
    seconds: float


def neighbors_for(n_points: int) -> tuple[int, ...]:
    """The n_neighbors choices that fit `n_points` (k-NN needs k < n)."""
    return tuple(sorted({min(k, n_points - 1) for k in NEIGHBORS}))


def cluster_size_range(n_points: int) -> tuple[int, int]:
    low = max(3, round(n_points * 0.001))
    return low, max(low + 1, min(round(n_points * 0.02), 1000))


def study_name(
    sample: Matrix,
    seed: int,
    objective: Objective,
    tag: str,
    groups: Groups | None = None,
    phrases: PhraseSample | None = None,
) -> str:
    """Same points (bytes), conversations, phrases, seed, objective and search space -> same name -> the stored
    study is reused (a resume runs only its missing trials)."""
    digest = hashlib.sha256(np.ascontiguousarray(sample, dtype="<f4").tobytes())
    if groups is not None:
        digest.update(np.ascontiguousarray(groups, dtype="<i8").tobytes())
    if phrases is not None:
        # The phrases score every trial (the objective's phrase coherence) and come from the archive's texts and
        # cluster/phrases.py: a resume after either changed reused trials scored on other phrases beside new ones.
        # None (phrase_weight 0) adds nothing: those studies keep their names.
        matrix = phrases.matrix.sorted_indices()
        digest.update(b"phrases")
        for part in (phrases.rows, np.asarray(matrix.shape), matrix.indptr, matrix.indices):
            digest.update(np.ascontiguousarray(part, dtype="<i8").tobytes())
    space = (NEIGHBORS, COMPONENTS, MIN_DISTS, METHODS)
    digest.update(repr((seed, objective, *space, OBJECTIVE_VERSION, tag, SAMPLING)).encode())
    return f"cluster-{digest.hexdigest()[:20]}"


Knn = tuple[np.ndarray[Any, Any], np.ndarray[Any, Any], Any]
Groups = np.ndarray[Any, np.dtype[np.int64]]  # per sampled point: the index of its conversation


DEFAULT_TRIALS = 30
UNCAPPED_TRIALS = 10  # a safety cap never stops a study before this many trials (TPE's random start-up)
EXACT_KNN_MAX = 4096  # UMAP's own small-data threshold: below it, exact k-NN is one matrix product


def budget(n_points: int, n_trials: int | None, timeout_s: float | None) -> tuple[int, float | None]:
    """Optuna trials and the safety cap for `n_points`: what was configured, else DEFAULT_TRIALS under a cap
    that grows with the data.

    The trial count is the budget: the topics a run writes follow from the points, the conversations, the seed
    and this count, never from how busy the machine is. (Until session 8 the cap was wall-clock and sized to be
    met: 30 trials on a quiet machine, 27 of 30 on a loaded one, and the topics moved with the load.) The cap
    is counted in this process's CPU seconds (`time.process_time`: the same on a quiet and on a loaded machine,
    give or take cache effects) and set well above what DEFAULT_TRIALS cost: 300 CPU-s + 60 ms per point, at
    most 3,600 (30 trials on 20k points cost ~165 s on a quiet 2-core machine). It only guards against a
    pathological study; when it stops one, the stage says so in the run's notes ("safety cap") and a re-run
    resumes the stored study to the full count. The first UNCAPPED_TRIALS are never cut (numba's per-process
    compile, TPE's random start-up).
    """
    if n_trials is not None:
        return n_trials, timeout_s  # a configured trial count is run in full unless a cap is configured too
    return DEFAULT_TRIALS, timeout_s if timeout_s is not None else min(3600.0, 300.0 + 0.06 * n_points)


def exact_knn(points: Matrix, k: int) -> Knn:
    """Exact cosine k-NN (self first, as NN-descent returns it) with no search index: for small point sets,
    where NN-descent's numba compile alone costs more than the whole clustering."""
    unit = points / np.maximum(np.linalg.norm(points, axis=1, keepdims=True), 1e-12)
    sims = unit @ unit.T
    np.fill_diagonal(sims, np.inf)  # each point is its own nearest neighbour, whatever duplicates exist
    order = np.argsort(-sims, axis=1, kind="stable")[:, :k]
    dists = np.clip(1.0 - np.take_along_axis(sims, order, axis=1), 0.0, 2.0)
    dists[:, 0] = 0.0
    return order.astype(np.int32), dists.astype(np.float32), None


def knn_graph(points: Matrix, k: int, seed: int) -> Knn:
    """The k nearest neighbours (cosine) of every point and their search index (NN-descent, seeded); exact and
    without a search index up to EXACT_KNN_MAX points (then `cluster.topics.place` votes by neighbours).

    Computed once and shared by every UMAP fit on the same points; it is also the one k-NN code path, so numba
    compiles it once per process (UMAP's own exact path for small data would be a second compile).
    """
    from umap.umap_ import nearest_neighbors

    if len(points) <= EXACT_KNN_MAX:
        return exact_knn(points, min(k, len(points) - 1))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return nearest_neighbors(  # type: ignore[no-any-return]
            points, min(k, len(points) - 1), "cosine", {}, False, np.random.RandomState(seed), n_jobs=1
        )


def umap_layout(
    points: Matrix, n_neighbors: int, n_components: int, min_dist: float, seed: int, knn: Knn | None = None
) -> tuple[Matrix, Any]:
    """Reduce `points` with UMAP (cosine, seeded). Returns the layout and the fitted reducer (with `transform`)."""
    import umap

    knn = knn if knn is not None else knn_graph(points, n_neighbors, seed)
    # Sliced to exactly n_neighbors: umap does not prune a larger precomputed k-NN below 4,096 points itself.
    precomputed = (knn[0][:, :n_neighbors], knn[1][:, :n_neighbors], knn[2])
    reducer = umap.UMAP(
        n_neighbors=n_neighbors,
        n_components=n_components,
        min_dist=min_dist,
        metric="cosine",
        random_state=seed,
        n_jobs=1,  # a seeded UMAP is single-threaded anyway; saying so silences its warning
        low_memory=True,
        precomputed_knn=precomputed,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # spectral-init fallbacks and precomputed-k-NN notices on small data
        layout = reducer.fit_transform(points)
    return np.asarray(layout, dtype=np.float32), reducer


def run_hdbscan(layout: Matrix, params: Params, *, prediction_data: bool = False) -> Any:
    import hdbscan

    clusterer = hdbscan.HDBSCAN(
        min_cluster_size=params.min_cluster_size,
        min_samples=params.min_samples,
        cluster_selection_method=params.cluster_selection_method,
        gen_min_span_tree=True,
        prediction_data=prediction_data,
        core_dist_n_jobs=1,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clusterer.fit(layout)
    return clusterer


def validity_of(clusterer: Any) -> float:
    """relative_validity_, or -1 when HDBSCAN cannot compute it (fewer than two clusters)."""
    if len(set(clusterer.labels_.tolist()) - {-1}) < 2:
        return -1.0
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            value = float(clusterer.relative_validity_)
    except (ValueError, ZeroDivisionError, IndexError):
        return -1.0
    return value if math.isfinite(value) else -1.0


@dataclass(slots=True)
class SpectralMemo:
    """UMAP's spectral initial layouts, remembered by everything they are computed from.

    A seeded UMAP fit starts from a spectral layout of its fuzzy graph (eigenvectors of the graph's Laplacian, one
    eigen-solve per connected component: ~45 % of a tuning layout's CPU at 250k messages, more than the epochs). It
    depends on the graph, the dimension and the random state, not on min_dist, so the tuning's layouts that differ
    only in min_dist solve the same problem twice. `active` puts a remembering wrapper in place of
    `umap.umap_.spectral_layout` (the name UMAP's fit calls) for the calls made inside it: a call whose points,
    graph, dimension, options and random-state position were seen before gets a copy of that result and leaves the
    random state where that call left it; any other call runs UMAP's own function. The layouts are the same arrays
    as without it (tests/test_cluster_budget.py).
    """

    found: dict[bytes, tuple[Matrix, Any]] = field(default_factory=dict)
    hits: int = 0

    @contextmanager
    def active(self) -> Iterator[None]:
        import umap.umap_ as umap_module

        original = umap_module.spectral_layout

        def remembered(data: Any, graph: Any, dim: int, random_state: Any, **options: Any) -> Matrix:
            key = _spectral_key(data, graph, dim, random_state, options)
            if key in self.found:
                layout, after = self.found[key]
                random_state.set_state(after)
                self.hits += 1
                return layout.copy()
            layout = original(data, graph, dim, random_state, **options)
            self.found[key] = (np.array(layout, copy=True), random_state.get_state())
            return layout  # type: ignore[no-any-return]

        umap_module.spectral_layout = remembered
        try:
            yield
        finally:
            umap_module.spectral_layout = original


def _spectral_key(data: Any, graph: Any, dim: int, random_state: Any, options: dict[str, Any]) -> bytes:
    """A digest of every input of one spectral_layout call (the random state's position included)."""
    coo = graph.tocoo()
    digest = hashlib.sha256(repr((dim, coo.shape, sorted(options.items(), key=repr), np.shape(data))).encode())
    for part in (np.asarray(data), coo.row, coo.col, coo.data):
        digest.update(str(part.dtype).encode())
        digest.update(np.ascontiguousarray(part).tobytes())
    kind, keys, position, has_gauss, gauss = random_state.get_state()
    digest.update(repr((kind, position, has_gauss, gauss)).encode())
    digest.update(np.ascontiguousarray(keys).tobytes())
    return digest.digest()


@dataclass(slots=True)
class LayoutCache:
    """UMAP layouts of the sample by (n_neighbors, n_components, min_dist), over one k-NN graph (and one spectral
    initial layout per graph and dimension: SpectralMemo)."""

    points: Matrix
    seed: int
    knn: Knn | None = None
    layouts: dict[tuple[int, int, float], Matrix] = field(default_factory=dict)
    fits: int = 0
    spectral: SpectralMemo = field(default_factory=SpectralMemo)

    def get(self, n_neighbors: int, n_components: int, min_dist: float) -> Matrix:
        key = (n_neighbors, n_components, min_dist)
        if key not in self.layouts:
            if self.knn is None:
                self.knn = knn_graph(self.points, max(neighbors_for(len(self.points))), self.seed)
            with self.spectral.active():
                self.layouts[key], _ = umap_layout(self.points, *key, self.seed, self.knn)
            self.fits += 1
        return self.layouts[key]


def evaluate(
    cache: LayoutCache,
    params: Params,
    objective: Objective,
    groups: Groups | None = None,
    phrases: PhraseSample | None = None,
) -> tuple[float, dict[str, Any]]:
    """One trial: HDBSCAN on the cached layout, scored (cluster.objective). Returns the score and its parts."""
    started = time.monotonic()
    layout = cache.get(params.n_neighbors, params.n_components, params.min_dist)
    clusterer = run_hdbscan(layout, params)
    labels = np.asarray(clusterer.labels_, dtype=np.int64)
    written = labels
    if objective.outlier_quantile is not None and len(set(labels.tolist()) - {-1}) >= 2:
        from cluster.topics import reassign_outliers  # topics imports this module

        written, _, _ = reassign_outliers(cache.points, labels, np.zeros(len(labels)), objective.outlier_quantile)
    parts = measure(labels, groups, cache.points, written, phrases)
    score = objective.score(parts)
    attrs: dict[str, Any] = {"topics": int(parts.pop("topics"))}
    attrs.update({k: round(v, 6) for k, v in parts.items()})
    attrs["validity"] = round(validity_of(clusterer), 6)
    attrs["seconds"] = round(time.monotonic() - started, 3)
    return score, attrs


def trial_seed(seed: int, completed_before: int) -> int:
    """The sampler seed of the trial that follows `completed_before` completed trials of a study seeded `seed`."""
    digest = hashlib.sha256(f"{seed}:{completed_before}".encode()).digest()
    return int.from_bytes(digest[:4], "little")


def _sampler(seed: int, completed_before: int) -> Any:
    """The TPE sampler of the trial that follows `completed_before` completed trials. No "constant liar" (Optuna
    5's default, for parallel workers): it counts RUNNING trials as bad ones, and a trial a killed stage left
    RUNNING stays so for good, so every trial of the resumed study was sampled beside it (on spark-first the
    resumed study left a clean one's at its 13th trial: 19 topics, not 18). Trials run one at a time here; without
    liars a clean study samples exactly as with them (its only RUNNING trial is the one being sampled)."""
    import optuna

    return optuna.samplers.TPESampler(seed=trial_seed(seed, completed_before), constant_liar=False)


def completed(study: Any) -> int:
    """Trials of `study` that completed (the only ones TPE learns from, and the ones that count to n_trials)."""
    import optuna

    return len(study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,)))


def left_running(study: Any) -> list[int]:
    """Mark FAIL (Optuna's `tell`) the trials a killed stage left RUNNING in the loaded study, and return their
    numbers. Only one stage writes a data dir at a time (its write lock), and optuna.db is the data dir's, so a
    trial RUNNING as the stage opens the study belongs to a process that is gone: left so, it stayed RUNNING in
    optuna.db and `cluster_trials` for good. It changes no result: TPE learns from neither state (no constant
    liar, `_sampler`), the seeds count completed trials only, and each trial gets its sampler anew."""
    import optuna

    stale = [t.number for t in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,))]
    for number in stale:
        study.tell(number, state=optuna.trial.TrialState.FAIL, skip_if_finished=True)
    if stale:
        log.info("cluster - study %s: trial(s) %s a stopped run left unfinished marked FAIL", study.study_name, stale)
    return stale


def prune_studies(storage_url: str, keep: Collection[str]) -> list[str]:
    """Delete the stored studies of this module (named `cluster-...`) that are not in `keep`: those of the cluster
    runs no longer kept (docs/runs.md). A study to continue is always kept: it is a kept run's, or it is made again
    from the same seeded sample (a resumed study gives what a clean one gives). Returns the studies deleted."""
    import optuna

    storage = optuna.storages.RDBStorage(storage_url, engine_kwargs={"connect_args": {"timeout": 60}})
    try:
        stale = [
            name
            for name in optuna.study.get_all_study_names(storage)
            if name.startswith("cluster-") and name not in keep
        ]
        for name in stale:
            optuna.delete_study(study_name=name, storage=storage)
    finally:
        storage.remove_session()
        storage.engine.dispose()
    return stale


def tune(
    sample: Matrix,
    *,
    storage_url: str,
    seed: int,
    n_trials: int,
    objective: Objective,
    groups: Groups | None = None,
    tag: str = "",
    timeout_s: float | None = None,
    on_trial: Callable[[int], object] | None = None,
    phrases: PhraseSample | None = None,
) -> Tuned:
    """Run (or resume, or just reload) the study for `sample` (whose points come from conversations `groups`,
    None: each its own; `phrases`: the phrases some of them use, for the phrase coherence); returns the best
    parameters and every trial."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    started = time.monotonic()
    name = study_name(sample, seed, objective, tag, groups, phrases)
    study = optuna.create_study(
        study_name=name,
        storage=optuna.storages.RDBStorage(storage_url, engine_kwargs={"connect_args": {"timeout": 60}}),
        direction="maximize",
        sampler=_sampler(seed, 0),
        load_if_exists=True,
    )
    left_running(study)
    done = completed(study)
    todo = max(0, n_trials - done)
    n = len(sample)
    cache = LayoutCache(sample, seed)
    low, high = cluster_size_range(n)

    def trial_fn(trial: optuna.Trial) -> float:
        size = trial.suggest_int("min_cluster_size", low, high, log=True)
        params = Params(
            n_neighbors=trial.suggest_categorical("n_neighbors", neighbors_for(n)),
            n_components=trial.suggest_categorical("n_components", COMPONENTS),
            min_dist=trial.suggest_categorical("min_dist", MIN_DISTS),
            min_cluster_size=size,
            min_samples=trial.suggest_int("min_samples", 1, size, log=True),
            cluster_selection_method=trial.suggest_categorical("cluster_selection_method", METHODS),
        )
        score, attrs = evaluate(cache, params, objective, groups, phrases)
        for key, value in attrs.items():
            trial.set_user_attr(key, value)
        log.info("cluster - trial %d: %.4f %s %s", trial.number, score, params, attrs)
        if on_trial is not None:
            on_trial(1)
        # a NaN would make the trial FAIL, which changes no seed: the next trial would sample the same parameters
        return score if math.isfinite(score) else -math.inf

    if on_trial is not None and done:
        on_trial(min(done, n_trials))  # a progress bar counts reused trials as done
    if todo:
        log.info("cluster - study %s: %d trial(s) to run, %d reused, %d points", name, todo, done, n)
        # The first trials are never cut short: the first pays numba's per-process compile, and TPE's random
        # start-up trials are what the rest build on (a study stopped after 4 of them found 2 topics on 23k turns).
        first = min(todo, max(0, UNCAPPED_TRIALS - done)) if timeout_s is not None else todo
        deadline: float | None = None
        for index in range(todo):
            if index == first and timeout_s is not None:
                deadline = time.process_time() + timeout_s  # CPU seconds, from the end of the uncapped trials
            if deadline is not None and time.process_time() >= deadline:
                break  # the cap only stops new trials from starting (as Optuna's `timeout` did)
            # a sampler per trial, seeded by the completed trials before it: a resumed study samples as a clean one
            study.sampler = _sampler(seed, completed(study))
            study.optimize(trial_fn, n_trials=1, gc_after_trial=False)
    complete = [t for t in study.trials if t.state == optuna.trial.TrialState.COMPLETE]
    if not complete:
        raise RuntimeError(f"study {name} has no complete trial (timeout too short?)")
    best = max(complete, key=lambda t: (t.value if t.value is not None else -math.inf, -t.number))
    records = [TrialRecord(t.number, t.state.name, t.value, dict(t.params), dict(t.user_attrs)) for t in study.trials]
    run = len(complete) - done  # completed in this call: fewer than `todo` when the safety cap stopped the study
    return Tuned(name, Params.of(best.params), float(best.value or 0.0), records, run, time.monotonic() - started)
