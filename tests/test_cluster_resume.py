"""A study stopped mid-tuning and resumed ends as a clean one: the same completed trials, the same parameters in the
same order, the same best (issue 21's cold pass: a cluster stage interrupted mid-tuning and re-run ended with other
topics than a clean run, its sampler's random stream restarting with the new process).

In-process here (a KeyboardInterrupt from the trial callback, as Ctrl-C raises it); tests/test_faults_kill.py kills a
real process mid-tuning with SIGKILL and compares the topics."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from cluster.objective import PhraseSample
from cluster.tuning import Objective, Tuned, tune

pytestmark = pytest.mark.slow  # UMAP's numba compile and 36 trials: about a CPU minute
TRIALS = 12  # past TPE's 10 random start-up trials: the resumed ones include model-based ones


def blobs() -> np.ndarray[Any, Any]:
    rng = np.random.default_rng(0)
    centres = rng.normal(size=(5, 16))
    return np.concatenate([c + 0.3 * rng.normal(size=(30, 16)) for c in centres]).astype(np.float32)


def completed(tuned: Tuned) -> list[tuple[float | None, dict[str, Any]]]:
    return [(t.value, t.params) for t in tuned.trials if t.state == "COMPLETE"]


def test_a_study_stopped_after_some_trials_resumes_as_a_clean_study(tmp_path: Path) -> None:
    points = blobs()
    clean = tune(
        points, storage_url=f"sqlite:///{tmp_path / 'clean.db'}", seed=7, n_trials=TRIALS, objective=Objective()
    )
    storage = f"sqlite:///{tmp_path / 'stopped.db'}"
    seen: list[int] = []

    def stop_after_five(n: int) -> None:
        seen.append(n)
        if len(seen) == 5:
            raise KeyboardInterrupt("stopped by Ctrl-C")  # inside the 5th trial, once it is evaluated

    with pytest.raises(KeyboardInterrupt):
        tune(points, storage_url=storage, seed=7, n_trials=TRIALS, objective=Objective(), on_trial=stop_after_five)
    resumed = tune(points, storage_url=storage, seed=7, n_trials=TRIALS, objective=Objective())
    assert resumed.trials_run == TRIALS - 4  # 4 completed before the stop; the 5th failed and counts for nothing
    assert [t.state for t in resumed.trials].count("FAIL") == 1
    assert completed(resumed) == completed(clean)
    assert (resumed.best, resumed.best_value) == (clean.best, clean.best_value)


def test_a_study_resumed_twice_still_matches(tmp_path: Path) -> None:
    """Stopped after 3 trials, then given a cap of 7 trials, then the full 12: each stage matches a clean study."""
    points = blobs()
    clean = tune(
        points, storage_url=f"sqlite:///{tmp_path / 'clean.db'}", seed=3, n_trials=TRIALS, objective=Objective()
    )
    storage = f"sqlite:///{tmp_path / 'parts.db'}"
    for n_trials in (3, 7, TRIALS):
        part = tune(points, storage_url=storage, seed=3, n_trials=n_trials, objective=Objective())
        assert completed(part) == completed(clean)[:n_trials]
    assert part.best == clean.best


def test_a_study_descheduled_for_longer_than_its_cap_runs_every_trial(tmp_path: Path) -> None:
    """The safety cap counts this process's CPU seconds, not wall time: a study whose process waits (here each
    trial after the 10th is followed by a 1.2 s sleep, as a process waiting for a core on a loaded machine)
    for longer than its cap still runs every trial, and ends as a study with no cap does. A wall-clock cap of
    3 s would have stopped it at 13 of 14 trials (the cap counts from the 10th)."""
    import time

    points = blobs()
    clean = tune(points, storage_url=f"sqlite:///{tmp_path / 'clean.db'}", seed=5, n_trials=14, objective=Objective())
    seen = 0

    def descheduled(_: int) -> None:
        nonlocal seen
        seen += 1
        if seen > 10:
            time.sleep(1.2)

    waited = tune(
        points,
        storage_url=f"sqlite:///{tmp_path / 'waited.db'}",
        seed=5,
        n_trials=14,
        objective=Objective(),
        timeout_s=3.0,
        on_trial=descheduled,
    )
    assert waited.trials_run == 14 and len(completed(waited)) == 14
    assert completed(waited) == completed(clean) and waited.best == clean.best


SPARK = (
    Path(__file__).resolve().parents[2]
    / "shared"
    / "data"
    / "exports"
    / "chatgpt"
    / "spark-first"
    / "conversations.json"
)
# a study's name from the phrase keys of real user turns (spark-first), printed by a fresh interpreter
NAME_OF_REAL_PHRASES = """
import json, sys
import numpy as np
from cluster.objective import Objective, PhraseSample
from cluster.phrases import phrase_keys
from cluster.tuning import study_name
chats = json.load(open(sys.argv[1], encoding="utf-8"))[:40]
texts = [p for c in chats for n in c["mapping"].values() if n.get("message")
         for p in n["message"]["content"].get("parts") or [] if isinstance(p, str) and p.strip()]
keys = [phrase_keys(t) for t in texts]
points = np.random.default_rng(1).normal(size=(len(keys), 4)).astype(np.float32)
print(study_name(points, 7, Objective(), "tag", None, PhraseSample.of(np.arange(len(keys)), keys)))
"""


@pytest.mark.skipif(not SPARK.exists(), reason="../shared/data is absent")
def test_the_study_name_keys_the_phrases_that_score_its_trials() -> None:
    """The phrases score every trial (the objective's phrase coherence) but were not in the study's name: a resume
    after cluster/phrases.py (or the texts) changed went on with trials scored on other phrases. Now the same
    phrases name the same study, in any process (here real turns' phrases, under two hash seeds), and other
    phrases another; no phrases (phrase_weight 0) name the study as before."""
    import os
    import subprocess
    import sys

    from cluster.tuning import study_name

    names = set()
    for hash_seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed, "PYTHONPATH": str(Path(__file__).parents[1])}
        done = subprocess.run(
            [sys.executable, "-c", NAME_OF_REAL_PHRASES, str(SPARK)], env=env, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr[-2000:]
        names.add(done.stdout.strip())
    assert len(names) == 1 and names.pop().startswith("cluster-")
    points = blobs()
    keys = [{"tram", "lisbon"} if i % 2 else {"tomato", "garden"} for i in range(len(points))]
    same = [
        study_name(points, 7, Objective(), "t", None, PhraseSample.of(np.arange(len(keys)), k)) for k in (keys, keys)
    ]
    other = [*keys[:-1], {"tram", "porto"}]
    assert same[0] == same[1] != study_name(points, 7, Objective(), "t", None, PhraseSample.of(np.arange(150), other))
    assert study_name(points, 7, Objective(), "t") not in same


def test_a_study_with_phrases_stopped_and_resumed_reuses_its_trials_and_ends_as_a_clean_one(tmp_path: Path) -> None:
    """The stage's study (phrase coherence scored) stopped by Ctrl-C in its 4th trial, then run again: the 3
    completed trials are reused, only the missing ones run, and the study ends as an uninterrupted one."""
    points = blobs()
    keys = [{"tram", "lisbon"} if i % 3 else {"tomato", "garden", "lisbon"} for i in range(len(points))]
    phrases = PhraseSample.of(np.arange(len(points)), keys)
    trials = 6

    def run(db: str, **kwargs: Any) -> Tuned:
        return tune(
            points,
            storage_url=f"sqlite:///{tmp_path / db}",
            seed=7,
            n_trials=trials,
            objective=Objective(),
            phrases=phrases,
            **kwargs,
        )

    clean = run("clean.db")
    seen: list[int] = []

    def stop_in_the_fourth(n: int) -> None:
        seen.append(n)
        if len(seen) == 4:
            raise KeyboardInterrupt("stopped by Ctrl-C")

    with pytest.raises(KeyboardInterrupt):
        run("stopped.db", on_trial=stop_in_the_fourth)
    resumed = run("stopped.db")
    assert resumed.study_name == clean.study_name and resumed.trials_run == trials - 3
    assert completed(resumed) == completed(clean)
    assert (resumed.best, resumed.best_value) == (clean.best, clean.best_value)


KILLED_IN_A_TRIAL = """
import os, sys
sys.path.insert(0, sys.argv[2])
from test_cluster_resume import blobs
from cluster.tuning import Objective, tune
seen = []
def kill_in_the_fourth(n):
    seen.append(n)
    if len(seen) == 4:
        os._exit(9)  # as SIGKILL: no cleanup, the 4th trial stays RUNNING in the storage
tune(blobs(), storage_url=sys.argv[1], seed=11, n_trials=int(sys.argv[3]), objective=Objective(),
     on_trial=kill_in_the_fourth)
"""


def test_a_study_whose_process_was_killed_in_a_trial_resumes_as_a_clean_one(tmp_path: Path) -> None:
    """A stage killed inside a trial (SIGKILL, or a Ctrl-C forced after 5 s) leaves that trial RUNNING in optuna.db
    for good. Optuna 5's TPE counts RUNNING trials as "constant liars" (made for parallel workers), so every later
    trial of the resumed study was sampled beside that dead trial: on the spark-first export the resumed study left
    a clean one's at its 13th trial and ended with 19 topics instead of 18. Now the studies (serial) sample without
    liars: a resumed study matches a clean one trial for trial, and the dead trial is marked FAIL."""
    import os
    import subprocess
    import sys

    trials = 16  # past TPE's 10 random start-up trials, far enough for the dead trial to change a pick
    clean = tune(
        blobs(), storage_url=f"sqlite:///{tmp_path / 'clean.db'}", seed=11, n_trials=trials, objective=Objective()
    )
    storage = f"sqlite:///{tmp_path / 'killed.db'}"
    tests = str(Path(__file__).parent)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])}
    died = subprocess.run(
        [sys.executable, "-c", KILLED_IN_A_TRIAL, storage, tests, str(trials)], env=env, capture_output=True, text=True
    )
    assert died.returncode == 9, died.stderr[-2000:]
    resumed = tune(blobs(), storage_url=storage, seed=11, n_trials=trials, objective=Objective())
    states = [t.state for t in resumed.trials]  # the dead trial marked FAIL as the study was resumed
    assert states.count("FAIL") == 1 and "RUNNING" not in states and resumed.trials_run == trials - 3
    assert completed(resumed) == completed(clean)
    assert (resumed.best, resumed.best_value) == (clean.best, clean.best_value)
