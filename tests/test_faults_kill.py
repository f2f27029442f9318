"""The property the adversarial pass checked for data, over every stage: a run killed (SIGKILL) inside any stage
and then re-run plainly ends with tables equal to a clean run's, compared by content hash.

One data dir is killed once inside each stage in turn, ingest to cues, every kill followed by a plain re-run of
the same export (the next kill lands in the next stage of that re-run); a last plain run finishes it. A second
data dir runs the same export once, cleanly. Every table of archive.db and staging.db, ledger apart, must hold the
same rows: run ids and timings are normalised away, nothing else. The load stage's kills are tested against a
real Bolt server in tests/test_load_faults.py and tests/test_load_memory_delta.py.

Where each stage dies (tests/kill_chain.py): right after its second committed transaction (its ledger row, then
its first batch of output), except the cues stage, killed as it starts to embed its keys: its rows are committed
and its keys are not, the point where a killed run used to become the next run's incremental base.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from fault_support import ROOT, process_env

pytestmark = pytest.mark.slow

CHAIN = ROOT / "tests" / "kill_chain.py"
KILL_AT = {
    "ingest": ("commit", "2"),
    "segment": ("commit", "2"),
    "embed": ("commit", "2"),
    "extract": ("commit", "2"),
    "concepts": ("commit", "2"),
    "garden": ("commit", "2"),
    "embed_concepts": ("commit", "2"),
    "cluster": ("commit", "2"),
    "cues": ("call", "memory.stage:embed_cached"),
}
# What happened in each run, not what was computed: a killed run leaves its own rows there by design.
LEDGER = {"runs", "stage_runs", "ingest_files", "schema_migrations", "archive_epochs"}  # epochs: a token per write
VOLATILE = {"imported_at", "seconds", "created_run_id", "started_at", "finished_at", "duration_s"}
RUN_ID = re.compile(r"r\d{8}T\d{6}-[0-9a-f]{6}")
# An archive mark's origin is the first source's sha256 and import time: another data dir has another one
ORIGIN = re.compile(r'\\?"origin\\?": \\?"[^"\\]*\\?"')
# ... and its epoch a random token of the archive's newest write (staging/archive_changes.py `Mark.epoch`)
EPOCH = re.compile(r'\\?"epoch\\?": \\?"[0-9a-f]*\\?"')
WORDS = [
    *("garden", "kitchen", "python", "budget", "travel", "spanish", "lessons", "guitar", "marathon", "recipe"),
    *("sourdough", "invoice", "server", "docker", "holiday", "museum", "painting", "novel", "chapter", "tomato"),
]


def named_chats(path: Path, conversations: int = 40) -> Path:
    """Six-turn chats on varied topics whose user, Marta, says her name: her keys (names masked) are the cues
    stage's own work, not the texts the embed stage embedded."""
    rng = random.Random(3)
    lines = []
    for c in range(conversations):
        topic = rng.sample(WORDS, 4)
        for t in range(6):
            text = " ".join(rng.choice(topic) for _ in range(20)) + f". Marta is working on the {topic[0]} project."
            record = {"conversation_id": f"c{c}", "id": f"c{c}-{t}", "role": "user" if t % 2 == 0 else "assistant"}
            record |= {"text": text, "created_at": f"2024-05-{1 + c % 28:02d}T10:0{t}:00Z"}
            if t % 2 == 0:
                record["author"] = "Marta"
            lines.append(json.dumps(record))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def chain(data: Path, export: Path, env: dict[str, str], *kill: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, str(CHAIN), str(data), str(export), *kill]
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)


def contents(data: Path) -> dict[str, tuple[int, str]]:
    """Per table, (distinct rows, their digest) with run ids and timings normalised away."""
    out: dict[str, tuple[int, str]] = {}
    for name in ("archive.db", "staging.db"):
        conn = sqlite3.connect(f"file:{data / name}?mode=ro", uri=True)
        try:
            tables = [
                str(r[0])
                for r in conn.execute(
                    "SELECT name FROM sqlite_master WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite_%'"
                )
            ]
            for table in tables:
                if table in LEDGER or "fts" in table:
                    continue
                columns = [str(r[1]) for r in conn.execute(f'PRAGMA table_info("{table}")')]
                kept = ", ".join(f'"{c}"' for c in columns if c not in VOLATILE and c != "run_id")
                rows = sorted(
                    {
                        EPOCH.sub("EPOCH", ORIGIN.sub("ORIGIN", RUN_ID.sub("RUN", repr(r))))
                        for r in conn.execute(f'SELECT {kept} FROM "{table}"')
                    }
                )
                out[f"{name}:{table}"] = (len(rows), hashlib.sha256("\n".join(rows).encode()).hexdigest())
        finally:
            conn.close()
    return out


@pytest.mark.timeout(1800)  # ten chained pipeline processes: about 2 CPU-minutes, 230-300 s of wall at load 10
def test_a_run_killed_inside_any_stage_and_rerun_equals_a_clean_run(tmp_path: Path) -> None:
    """SIGKILL inside each stage in turn, each followed by a plain re-run: the tables end equal, by content hash,
    to those of one clean run (the cues kill used to lose the key vectors of the killed run for good)."""
    export = named_chats(tmp_path / "chats.jsonl")
    env = process_env(tmp_path / "prefect", CHATMEM_CLUSTER__N_TRIALS="4", CHATMEM_LOAD__LOCAL_SERVER="false")
    clean = chain(tmp_path / "clean", export, env)
    assert clean.returncode == 0, clean.stderr[-3000:]
    killed = tmp_path / "killed"
    for stage, (how, where) in KILL_AT.items():
        died = chain(killed, export, env, stage, how, where)
        assert died.returncode == -9, f"{stage}: not killed ({died.returncode}): {died.stdout} {died.stderr[-2000:]}"
        with sqlite3.connect(f"file:{killed / 'staging.db'}?mode=ro", uri=True) as conn:
            [status] = conn.execute(
                "SELECT status FROM stage_runs WHERE stage = ? ORDER BY id DESC LIMIT 1", (stage,)
            ).fetchone()
        assert status == "running", f"{stage} was not running when killed"  # the ledger row of a dead process
    last = chain(killed, export, env)
    assert last.returncode == 0, last.stderr[-3000:]
    assert "cues succeeded" in last.stdout
    expected, got = contents(tmp_path / "clean"), contents(killed)
    differ = sorted(t for t in expected.keys() | got.keys() if expected.get(t) != got.get(t))
    assert not differ, f"tables differ from a clean run's: {[(t, expected.get(t), got.get(t)) for t in differ]}"


TUNED_TABLES = ("topics", "topic_links", "cluster_points", "topic_labels")


@pytest.mark.timeout(1800)  # three pipeline runs of 12 trials each: about 3 CPU-minutes, far more at load 10+
def test_a_cluster_stage_killed_mid_tuning_and_rerun_ends_with_a_clean_runs_topics(tmp_path: Path) -> None:
    """SIGKILL inside the 7th Optuna trial of 12 (6 completed, one left RUNNING in optuna.db), then a plain re-run:
    the resumed study completes the same trials, with the same parameters in the same order, as a clean run's,
    and the topics are the same (the resumed sampler used to restart its random stream and repeat the first
    trials' parameters: other best parameters, other topics). The kill test above kills cluster before it tunes."""
    export = named_chats(tmp_path / "chats.jsonl")
    env = process_env(tmp_path / "prefect", CHATMEM_CLUSTER__N_TRIALS="12", CHATMEM_LOAD__LOCAL_SERVER="false")
    clean = chain(tmp_path / "clean", export, env)
    assert clean.returncode == 0, clean.stderr[-3000:]
    killed = tmp_path / "killed"
    died = chain(killed, export, env, "cluster", "call", "cluster.tuning:evaluate#7")
    assert died.returncode == -9, f"not killed ({died.returncode}): {died.stdout} {died.stderr[-2000:]}"
    with sqlite3.connect(f"file:{killed / 'optuna.db'}?mode=ro", uri=True) as conn:
        states = [str(r[0]) for r in conn.execute("SELECT state FROM trials ORDER BY number")]
    assert states == ["COMPLETE"] * 6 + ["RUNNING"], states  # killed mid-tuning, one trial left unfinished
    last = chain(killed, export, env)
    assert last.returncode == 0, last.stderr[-3000:]

    def completed_trials(data: Path) -> list[tuple[object, ...]]:
        with sqlite3.connect(f"file:{data / 'staging.db'}?mode=ro", uri=True) as conn:
            rows = conn.execute(
                "SELECT value, params, topics, noise_share FROM cluster_trials WHERE state = 'COMPLETE' ORDER BY number"
            )
            return [tuple(r) for r in rows]

    assert completed_trials(killed) == completed_trials(tmp_path / "clean")
    expected, got = contents(tmp_path / "clean"), contents(killed)
    tables = [f"staging.db:{t}" for t in TUNED_TABLES]
    differ = [t for t in tables if expected.get(t) != got.get(t)]
    assert not differ, f"topics differ from a clean run's: {[(t, expected.get(t), got.get(t)) for t in differ]}"
    assert all(expected[t][0] > 0 for t in tables[:2]), expected  # topics were made at all
