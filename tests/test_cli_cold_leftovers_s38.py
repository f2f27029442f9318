"""Faults session 37's cold try found and left (benchmarks/RESULTS.md, session 37's cold-try sections): each through
the real CLI (click's runner, or a process of its own) on real files under tmp_path with real SQLite."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

from click.testing import CliRunner, Result
from fault_support import chatmem_command, write_chats

from flows.cli import cli


def chatmem(data_dir: Path, *args: str | Path) -> Result:
    return CliRunner().invoke(cli, ["--data-dir", str(data_dir), *map(str, args)], env={"COLUMNS": "120"})


def _env() -> dict[str, str]:
    root = Path(__file__).resolve().parent.parent
    # Prefect's state in DATA/prefect, as a new user's is
    return {k: v for k, v in {**os.environ, "PYTHONPATH": str(root)}.items() if k != "PREFECT_HOME"}


def _lines(path: Path, records: list[dict[str, str]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def _message(conversation: str, number: int, text: str) -> dict[str, str]:
    role = "user" if number % 2 else "assistant"
    when = f"2024-05-01T10:0{number}:00Z"
    return {"conversation_id": conversation, "id": str(number), "role": role, "text": text, "created_at": when}


def test_a_conversation_two_export_files_hold_is_written_once_in_the_runs_count(tmp_path: Path) -> None:
    """The cold try's `run` of the shared exports said "conversations written 416" beside 415 in the archive: one
    conversation was in two export files, and the files' counts were summed. Now the run counts the distinct
    conversations it wrote; each file's own row still counts what that file wrote."""
    first = _lines(
        tmp_path / "a.jsonl",
        [
            _message("trip", 1, "Booking the Lisbon trip."),
            _message("trip", 2, "Alfama is close to the castle."),
            _message("dog", 1, "My retriever Max turned 3."),
        ],
    )
    later = _lines(
        tmp_path / "b.jsonl",  # a later dump of the same trip, one message longer
        [_message("trip", n, text) for n, text in ((1, "Booking the Lisbon trip."), (2, "Alfama."), (3, "May 3rd."))],
    )
    data_dir = tmp_path / "data"
    result = chatmem(data_dir, "run", "--to", "ingest", first, later)
    assert result.exit_code == 0, result.output
    stats = json.loads(chatmem(data_dir, "archive", "stats", "--json").stdout)
    assert stats["conversations"] == 2, stats
    assert "conversations written 2," in result.stdout, result.stdout
    files = json.loads(chatmem(data_dir, "staging", "show", "ingest_files", "--json").stdout)
    assert sorted(row["conversations"] for row in files) == [1, 2], files  # per file: what each wrote


def test_serve_once_on_a_held_data_dir_refuses_before_it_starts_prefect(tmp_path: Path) -> None:
    """`serve --once` on a data dir another command holds made prefect/ and started Prefect's API server on its
    database before its watch run met the lock: the race session 37 closed for `run` (a second server migrating the
    first's prefect.db). Now it takes the write lock first, as `run` does: refused in one line, no prefect/."""
    from staging.lock import data_dir_lock

    data_dir, watch = tmp_path / "data", tmp_path / "watch"
    write_chats(watch / "a.jsonl", 2)
    command = [*chatmem_command(), "--data-dir", str(data_dir), "serve", "--once", "--watch", str(watch)]

    def serve(*extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*command, *extra], capture_output=True, text=True, env=_env(), timeout=300, stdin=subprocess.DEVNULL
        )

    with data_dir_lock(data_dir, "r-first"):
        refused, as_json = serve(), serve("--json")
    assert refused.returncode == 1 and "Traceback" not in refused.stderr, refused.stderr[-3000:]
    assert f"{data_dir} is in use by run r-first (pid {os.getpid()}" in refused.stderr, refused.stderr
    assert as_json.returncode == 1, as_json.stderr[-3000:]
    assert "is in use by run r-first" in json.loads(as_json.stdout)["error"], as_json.stdout
    assert not (data_dir / "prefect").exists(), sorted(p.name for p in (data_dir / "prefect").iterdir())
    served = serve()
    assert served.returncode == 0, served.stderr[-3000:]
    assert f"ingested: {watch / 'a.jsonl'}" in served.stdout, served.stdout


KILLED_IN_A_TRIAL = """
import os, sys
import optuna
study = optuna.create_study(study_name=sys.argv[2], storage=sys.argv[1], direction="maximize", load_if_exists=True)
study.ask()
os._exit(9)  # as SIGKILL inside a trial: no cleanup, the trial stays RUNNING in the storage
"""


def test_a_trial_a_killed_stage_left_running_is_marked_failed_when_the_study_is_resumed(tmp_path: Path) -> None:
    """A stage killed inside a trial left it RUNNING in the data dir's optuna.db (and `cluster_trials`) for good.
    Now resuming the study marks it FAIL through Optuna's own `tell`; what the study gives does not change."""
    import sys

    import numpy as np
    import optuna

    from cluster.tuning import (
        COMPONENTS,
        METHODS,
        MIN_DISTS,
        Objective,
        cluster_size_range,
        neighbors_for,
        study_name,
        tune,
    )

    points = np.random.default_rng(0).normal(size=(150, 8)).astype(np.float32)
    storage = f"sqlite:///{tmp_path / 'optuna.db'}"
    name = study_name(points, 7, Objective(), "")
    low, high = cluster_size_range(len(points))
    params = {
        "min_cluster_size": low,
        "n_neighbors": neighbors_for(len(points))[0],
        "n_components": COMPONENTS[0],
        "min_dist": MIN_DISTS[0],
        "min_samples": 1,
        "cluster_selection_method": METHODS[0],
    }
    distributions = {
        "min_cluster_size": optuna.distributions.IntDistribution(low, high, log=True),
        "n_neighbors": optuna.distributions.CategoricalDistribution(neighbors_for(len(points))),
        "n_components": optuna.distributions.CategoricalDistribution(COMPONENTS),
        "min_dist": optuna.distributions.CategoricalDistribution(MIN_DISTS),
        "min_samples": optuna.distributions.IntDistribution(1, low, log=True),
        "cluster_selection_method": optuna.distributions.CategoricalDistribution(METHODS),
    }
    study = optuna.create_study(study_name=name, storage=storage, direction="maximize")
    study.add_trial(optuna.trial.create_trial(params=params, distributions=distributions, value=0.5))
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])}
    died = subprocess.run([sys.executable, "-c", KILLED_IN_A_TRIAL, storage, name], env=env, capture_output=True)
    assert died.returncode == 9, died.stderr[-2000:]

    resumed = tune(points, storage_url=storage, seed=7, n_trials=1, objective=Objective())  # 1 done: none to run
    assert [(t.number, t.state) for t in resumed.trials] == [(0, "COMPLETE"), (1, "FAIL")]
    stored = optuna.load_study(study_name=name, storage=storage).get_trials(deepcopy=False)
    assert [t.state.name for t in stored] == ["COMPLETE", "FAIL"]
    assert (resumed.best_value, resumed.trials_run) == (0.5, 0)


def test_inspect_stopped_by_ctrl_c_exits_130_in_one_line(tmp_path: Path) -> None:
    """`chatmem inspect` ended by Ctrl-C exited 0 (the KeyboardInterrupt uvicorn raises again as it shuts down was
    swallowed). Now it ends as Ctrl-C ends the other commands: exit 130, one line, no traceback."""
    data_dir = tmp_path / "data"
    assert chatmem(data_dir, "run", "--to", "ingest", write_chats(tmp_path / "a.jsonl", 2)).exit_code == 0
    log = tmp_path / "inspect.log"
    with log.open("w") as out, open(os.devnull) as nothing:
        process = subprocess.Popen(
            [*chatmem_command(), "--data-dir", str(data_dir), "inspect"],
            stdin=nothing, stdout=out, stderr=subprocess.STDOUT, env=_env(), start_new_session=True,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while "Datasette on http" not in log.read_text() and process.poll() is None:
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.2)
        process.send_signal(signal.SIGINT)
        process.wait(timeout=60)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)  # only the group this test started
            process.wait()
    text = log.read_text()
    assert process.returncode == 130, text[-3000:]
    assert "Traceback" not in text, text[-3000:]
    assert text.strip().splitlines()[-1] == "error: interrupted by Ctrl-C", text


def _archive(data_dir: Path, sql: str) -> list[tuple[object, ...]]:
    import sqlite3

    conn = sqlite3.connect(f"file:{data_dir / 'archive.db'}?mode=ro", uri=True)
    try:
        return [tuple(row) for row in conn.execute(sql)]
    finally:
        conn.close()


def test_two_bad_lines_are_two_quarantine_rows_and_lines_joined_by_a_written_backslash_n_say_so(tmp_path: Path) -> None:
    """Session 37's "1 record(s) quarantined" for "a file with two bad lines": its test wrote the lines joined by the
    two characters \\n, not line breaks: one line, one bad record (the count was right), and the good message after
    them was lost inside it. Two real bad lines are two rows with their reasons and every good line arrives; a line
    joined so now says it in its row's reason."""
    good = [json.dumps(_message("c0", n, f"text {n}")) for n in (1, 2)]
    meant = tmp_path / "meant.jsonl"
    meant.write_text("{not json\n{nor this\n" + "\n".join(good) + "\n", encoding="utf-8")
    data_dir = tmp_path / "data"
    result = chatmem(data_dir, "run", "--to", "ingest", meant)
    assert result.exit_code == 0, result.output
    assert f"2 record(s) quarantined: chatmem --data-dir {data_dir} staging failures" in result.stdout, result.stdout
    rows = _archive(data_dir, "SELECT locator, reason FROM quarantine ORDER BY locator")
    assert [row[0] for row in rows] == ["line 1", "line 2"] and all("invalid JSON" in str(r[1]) for r in rows), rows
    assert _archive(data_dir, "SELECT text FROM messages ORDER BY seq") == [("text 1",), ("text 2",)]

    written = tmp_path / "written.jsonl"  # as session 37's test wrote it
    written.write_text("{not json\\n{nor this\\n" + "\n".join(good) + "\n", encoding="utf-8")
    other = tmp_path / "other"
    result = chatmem(other, "run", "--to", "ingest", written)
    assert result.exit_code == 0 and "1 record(s) quarantined" in result.stdout, result.output
    [(locator, reason)] = _archive(other, "SELECT locator, reason FROM quarantine")
    assert locator == "line 1" and reason.startswith("invalid JSON: Expecting property name"), reason
    said = "the line holds 3 pieces joined by the two characters \\n, not by line breaks, 1 of them a whole JSON object"
    assert said in str(reason), reason
    assert _archive(other, "SELECT text FROM messages") == [("text 2",)]


def test_a_latin1_export_says_its_encoding_and_a_utf8_copy_mends_the_text(tmp_path: Path) -> None:
    """A Latin-1 JSONL file (the cold try's latin1.jsonl): its "München" arrived as "M\\ufffdnchen" with only a
    count of the bytes replaced. Now the note says the file is Latin-1 / Windows-1252, the word as written and to
    re-save it as UTF-8; the good line still arrives, and the re-saved file mends the text. Stray bad bytes in a
    UTF-8 file (no Latin-1 text) keep the count alone."""
    records = [_message("good", 1, "plain ascii line"), _message("lat", 1, "Ich wohne in München, Straße 5")]
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    export = tmp_path / "latin1.jsonl"
    export.write_bytes(text.encode("latin-1"))
    data_dir = tmp_path / "data"
    result = chatmem(data_dir, "run", "--to", "ingest", export)
    assert result.exit_code == 0, result.output
    note = next(line for line in result.stdout.splitlines() if str(export) in line)
    assert "2 invalid UTF-8 byte sequence(s) replaced with U+FFFD: the file is not UTF-8 but Latin-1" in note, note
    assert '("München" as written): re-save it as UTF-8 and run again' in note, note
    assert len(_archive(data_dir, "SELECT uuid FROM messages")) == 2
    export.write_text(text, encoding="utf-8")  # re-saved as UTF-8
    again = chatmem(data_dir, "run", "--to", "ingest", export)
    assert again.exit_code == 0 and "invalid UTF-8" not in again.stdout, again.output
    texts = _archive(data_dir, "SELECT text FROM messages WHERE conversation_id = 'lat'")
    assert texts == [("Ich wohne in München, Straße 5",)], texts

    stray = tmp_path / "stray.jsonl"  # UTF-8 text with two bytes that are no character
    stray.write_bytes(text.encode("utf-8").replace(b"plain", b"\xff\xfeplain"))
    result = chatmem(tmp_path / "data2", "run", "--to", "ingest", stray)
    assert result.exit_code == 0 and "2 invalid UTF-8 byte sequence(s) replaced with U+FFFD" in result.stdout
    assert "Latin-1" not in result.stdout, result.stdout
