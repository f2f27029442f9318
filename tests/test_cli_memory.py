"""`chatmem recall` and `chatmem eval recall` end to end: the real pipeline (Prefect, ephemeral API) into a data dir,
then the CLI in-process. Slow-ish: each builds a memory with every stage up to cues."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from test_cli_startup import ROOT, into_a_closed_pipe

from flows.cli import cli
from staging.archive import open_archive
from staging.ledger import open_staging

pytestmark = [pytest.mark.prefect, pytest.mark.slow]

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data" / "benchmarks"
LOCOMO = SHARED / "locomo" / "locomo_dev2.json"
LONGMEMEVAL = SHARED / "longmemeval" / "longmemeval_s_dev50.jsonl.gz"

NOTES = [
    ("trip", "1", "user", "We are planning a trip to Lisbon in May; tram 28 is a must.", "2024-03-01T09:00:00Z"),
    ("trip", "2", "assistant", "Lisbon in May is lovely. Take tram 28 early in the morning.", "2024-03-01T09:01:00Z"),
    ("bread", "1", "user", "My sourdough starter smells of acetone, what should I do?", "2024-04-10T18:00:00Z"),
    ("bread", "2", "assistant", "Feed the starter twice a day for a few days.", "2024-04-10T18:01:00Z"),
    ("trip2", "1", "user", "Back from Lisbon: the tram rides were the best part of the trip.", "2024-06-02T10:00:00Z"),
]


def chatmem(*args: str | Path, data_dir: Path) -> Result:
    return CliRunner().invoke(cli, ["--data-dir", str(data_dir), *map(str, args)], catch_exceptions=False)


@pytest.fixture
def notes_dir(tmp_path: Path) -> Path:
    """A data dir built by `chatmem run` from a small JSONL export (cluster skipped: too few points)."""
    export = tmp_path / "notes.jsonl"
    lines = [{"conversation_id": c, "id": i, "role": r, "text": t, "created_at": when} for c, i, r, t, when in NOTES]
    export.write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")
    data_dir = tmp_path / "data"
    result = chatmem("--quiet", "run", export, data_dir=data_dir)
    assert result.exit_code == 0, result.output
    return data_dir


def test_the_run_stores_the_recall_index_so_the_first_recall_only_opens_it(notes_dir: Path) -> None:
    """A run whose cues stage did work leaves its recall index stored (flows/pipeline.py prepare_recall): the first
    `chatmem recall` opens it rather than building it; a run with nothing new keeps that index."""
    from memory.index_store import stored_runs
    from staging.memory import latest_run

    with closing(open_staging(notes_dir / "staging.db")) as staging:
        cues_run = latest_run(staging)
    assert cues_run is not None and stored_runs(notes_dir) == {cues_run}
    stored = {p.name: p.stat().st_mtime_ns for p in (notes_dir / "recall-index").iterdir()}
    assert chatmem("recall", "Lisbon tram", data_dir=notes_dir).exit_code == 0
    assert {p.name: p.stat().st_mtime_ns for p in (notes_dir / "recall-index").iterdir()} == stored


def test_a_run_whose_load_fails_still_stores_the_recall_index(tmp_path: Path) -> None:
    """The recall index is built on a thread from the moment the cues stage succeeds, beside the load
    (flows/pipeline.py RecallIndexBuild). A load that fails (no graph server where the settings point) fails the
    run, but its memory is complete: the index is stored all the same and recall answers from it."""
    import socket

    from contracts.errors import StageError
    from contracts.settings import Settings
    from contracts.settings.load import LoadSettings
    from flows.pipeline import run_pipeline
    from memory.index_store import stored_runs
    from staging.memory import latest_run

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    export = tmp_path / "notes.jsonl"
    lines = [{"conversation_id": c, "id": i, "role": r, "text": t, "created_at": when} for c, i, r, t, when in NOTES]
    export.write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")
    data_dir = tmp_path / "data"
    unreachable = LoadSettings(uri=f"bolt://127.0.0.1:{port}", retries=0, connect_timeout_s=2)
    with pytest.raises(StageError, match="load"):
        run_pipeline(Settings(data_dir=data_dir, load=unreachable), [export], quiet=True)
    with closing(open_staging(data_dir / "staging.db")) as staging:
        cues_run = latest_run(staging)
        statuses = dict(staging.execute("SELECT stage, status FROM stage_runs WHERE stage IN ('cues', 'load')"))
    assert statuses == {"cues": "succeeded", "load": "failed"}
    assert cues_run is not None and stored_runs(data_dir) == {cues_run}
    found = chatmem("recall", "Lisbon tram", "--json", data_dir=data_dir)
    assert found.exit_code == 0 and "trip:1" in {p["content_id"] for p in json.loads(found.stdout)["pieces"]}


def test_recall_answers_from_a_pipeline_built_memory_and_respects_at(notes_dir: Path) -> None:
    """The cues stage ran in the pipeline; recall finds the trip, and --at hides what was said later."""
    now = chatmem("recall", "Lisbon tram", "--json", data_dir=notes_dir)
    assert now.exit_code == 0, now.output
    found = json.loads(now.stdout)
    ids = {p["content_id"] for p in found["pieces"]}
    assert {"trip:1", "trip2:1"} <= ids and found["tokens"] <= found["budget_tokens"]
    assert all(p["path"][0]["kind"] == "query" and p["path"][-1]["id"] == p["content_id"] for p in found["pieces"])
    before = json.loads(chatmem("recall", "Lisbon tram", "--at", "2024-05-01", "--json", data_dir=notes_dir).stdout)
    assert before["pieces"] and "trip2:1" not in {p["content_id"] for p in before["pieces"]}
    scoped = chatmem("recall", "Lisbon", "--scope", "conversation:trip2", "--json", data_dir=notes_dir)
    assert {p["conversation_id"] for p in json.loads(scoped.stdout)["pieces"]} == {"trip2"}
    text = chatmem("recall", "sourdough starter", "--budget", "40", data_dir=notes_dir)
    assert text.exit_code == 0 and "acetone" in text.stdout


def test_recall_into_a_closed_pipe_exits_141_without_a_traceback(notes_dir: Path) -> None:
    """`chatmem recall Q | head -1`: a real pipe whose reader has gone; exit 141 (128 + SIGPIPE, as Unix tools),
    nothing on stderr (it was exit 1 from click, and Python's flush at exit could add a traceback). Through a shell
    pipe, head's line is recall's first."""
    for args in (["recall", "Lisbon tram"], ["recall", "Lisbon tram", "--json"]):
        done = into_a_closed_pipe("--data-dir", notes_dir, *args)
        assert done.returncode == 141 and done.stderr == b"", done.stderr
    usage = into_a_closed_pipe("--data-dir", notes_dir, "recall", "x", "--budget", "0")
    assert usage.returncode == 2 and b"Traceback" not in usage.stderr  # written to stderr only: its code stands
    script = '"$1" -m flows.cli --data-dir "$2" recall "Lisbon tram" --budget 2000 | head -1; echo rc=${PIPESTATUS[0]}'
    command = ["bash", "-c", script, "_", sys.executable, str(notes_dir)]
    shell = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120)
    whole = subprocess.run(  # the same answer read to its end: head got its first line (a fact line or "recall at")
        [sys.executable, "-m", "flows.cli", "--data-dir", str(notes_dir), "recall", "Lisbon tram", "--budget", "2000"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    first = whole.stdout.splitlines()[0]
    assert "recall at " in whole.stdout and shell.stdout.splitlines()[0] == first and shell.stderr == "", shell.stderr
    assert shell.stdout.splitlines()[-1] in ("rc=0", "rc=141")


def test_recall_usage_errors_exit_2(notes_dir: Path) -> None:
    """An unreadable --at or --scope, or an empty question, is a usage error with one line, exit code 2."""
    bad = chatmem("recall", "x", "--at", "yesterday-ish", data_dir=notes_dir)
    assert bad.exit_code == 2 and "--at" in bad.output
    assert chatmem("recall", "x", "--scope", "planet:mars", data_dir=notes_dir).exit_code == 2
    for scope in ("conversation:nope", "source:nosuchformat"):  # names nothing in the memory: said, not an empty answer
        result = chatmem("recall", "Lisbon", "--scope", scope, data_dir=notes_dir)
        assert result.exit_code == 2 and len(result.output.strip().splitlines()) == 1, result.output
        assert "not in the memory" in result.output or "no content in the memory" in result.output
    backwards = chatmem("recall", "x", "--scope", "since:2024-06-01", "--scope", "until:2024-01-01", data_dir=notes_dir)
    assert backwards.exit_code == 2 and "is after until" in backwards.output
    for empty in ("", "   "):
        result = chatmem("recall", empty, data_dir=notes_dir)
        assert result.exit_code == 2 and "Traceback" not in result.output
        assert len(result.output.strip().splitlines()) == 1 and "QUESTION is empty" in result.output


def test_a_plain_date_for_at_includes_that_whole_day(notes_dir: Path) -> None:
    """--at 2024-06-02 recalls the memory as it stood at the end of June 2nd: that day's message comes back."""
    that_day = json.loads(chatmem("recall", "Lisbon tram", "--at", "2024-06-02", "--json", data_dir=notes_dir).stdout)
    assert "trip2:1" in {p["content_id"] for p in that_day["pieces"]}
    morning = json.loads(
        chatmem("recall", "Lisbon tram", "--at", "2024-06-02T09:00", "--json", data_dir=notes_dir).stdout
    )
    assert "trip2:1" not in {p["content_id"] for p in morning["pieces"]}


def test_eval_recall_on_a_file_that_is_not_text_is_one_line(tmp_path: Path) -> None:
    """Random bytes as --data: exit 2 with one line naming the file, no traceback."""
    garbage = tmp_path / "garbage.json"
    garbage.write_bytes(bytes(range(128, 256)) * 8)
    result = chatmem("eval", "recall", "--benchmark", "locomo", "--data", garbage, data_dir=tmp_path / "data")
    assert result.exit_code == 2 and "Traceback" not in result.output and str(garbage) in result.output


def longmemeval_slice(path: Path, sessions: int = 6) -> Path:
    """The first non-abstention question of the dev file with its answer sessions and a few others."""
    with gzip.open(LONGMEMEVAL, "rt", encoding="utf-8") as handle:
        item = next(json.loads(line) for line in handle if not json.loads(line)["question_id"].endswith("_abs"))
    keep = [
        i for i, sid in enumerate(item["haystack_session_ids"]) if sid in item["answer_session_ids"] or i < sessions
    ]
    for name in ("haystack_session_ids", "haystack_dates", "haystack_sessions"):
        item[name] = [item[name][i] for i in keep]
    path.write_text(json.dumps(item) + "\n", encoding="utf-8")
    return path


def locomo_slice(path: Path, sessions: int = 3) -> Path:
    """The first sample of the dev file cut to its first sessions, with the questions they answer."""
    sample = json.loads(LOCOMO.read_text(encoding="utf-8"))[0]
    conversation = sample["conversation"]
    for key in [k for k in conversation if k.startswith("session_")]:
        number = int(key.split("_")[1])
        if number > sessions:
            del conversation[key]
    wanted = {f"D{n}:" for n in range(1, sessions + 1)}
    sample["qa"] = [
        qa for qa in sample["qa"] if qa.get("evidence") and all(e[: e.index(":") + 1] in wanted for e in qa["evidence"])
    ]
    path.write_text(json.dumps([sample]), encoding="utf-8")
    return path


def _check_report(report: dict[str, Any], headline: list[str]) -> None:
    for method in ("system", "bm25", "dense", "rrf"):
        values = report[method]
        assert values["questions"] >= 1 and values["latency_p95_ms"] >= values["latency_p50_ms"] >= 0
        assert all(0.0 <= values[name] <= 1.0 for name in headline)
        assert values["categories"]


@pytest.mark.skipif(not LONGMEMEVAL.exists(), reason="../shared/data is absent")
def test_eval_recall_on_a_longmemeval_slice(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One question (its answer sessions and six others) through the pipeline: session metrics for every method."""
    monkeypatch.setenv("CHATMEM_CLUSTER__MIN_POINTS", "100000")  # clustering is tested elsewhere; keep this fast
    result = chatmem(
        "eval", "recall", "--benchmark", "longmemeval", "--data", longmemeval_slice(tmp_path / "lme.jsonl"), "--json",
        data_dir=tmp_path / "data",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    _check_report(report, ["recall_all@3", "recall_any@5", "ndcg@10"])
    system = report["system"]
    assert system["recall_all@10"] >= system["recall_all@5"] >= system["recall_all@3"] >= system["recall_all@1"]
    assert system["recall_any@5"] >= system["recall_all@5"] and report["run"]["questions"] == 1
    assert 0 < system["context_tokens_mean"] <= 4000


@pytest.mark.skipif(not LOCOMO.exists(), reason="../shared/data is absent")
def test_eval_recall_on_a_locomo_slice(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Three questions of the first sample's first sessions: evidence recall@5/10/20, per category, ablations."""
    monkeypatch.setenv("CHATMEM_CLUSTER__MIN_POINTS", "100000")
    result = chatmem(
        "eval", "recall", "--benchmark", "locomo", "--data", locomo_slice(tmp_path / "locomo.json"), "--limit", "3",
        "--ablations", "--json",
        data_dir=tmp_path / "data",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    _check_report(report, ["evidence_recall@5", "evidence_recall@10", "evidence_recall@20"])
    assert report["run"]["questions"] == 3 and "no_tags_session_prior" in report["ablations"]
    chosen = report["run"]["key_model"]  # a few sessions fit the full model's budget: keys and queries use it
    assert chosen["setting"] == "auto" and chosen["model"] == "minilm-onnx"
    assert report["run"]["embedder_system"].startswith("minilm-onnx@")
    system = report["system"]
    assert system["evidence_recall@20"] >= system["evidence_recall@10"] >= system["evidence_recall@5"]


def test_a_budget_over_the_contract_bound_is_a_usage_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """--budget or memory.budget_tokens above 200,000 (the RecallRequest bound) exits 2 with one line, no traceback."""
    data_dir = tmp_path / "data"
    (tmp_path / "x.json").write_text("[]", encoding="utf-8")
    for args in (
        ("recall", "hawaii", "--budget", "200001"),
        ("eval", "recall", "--benchmark", "locomo", "--data", tmp_path / "x.json", "--budget", "300000"),
    ):
        result = CliRunner().invoke(cli, ["--data-dir", str(data_dir), *map(str, args)])
        assert result.exit_code == 2 and "Traceback" not in result.output, result.output
        assert "--budget" in result.output and "200000" in result.output
    monkeypatch.setenv("CHATMEM_MEMORY__BUDGET_TOKENS", "300000")
    result = CliRunner().invoke(cli, ["--data-dir", str(data_dir), "recall", "hawaii"])
    assert result.exit_code == 2, result.output
    assert "budget_tokens" in result.output and "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1, result.output


def test_recall_before_any_memory_says_which_command_builds_it(tmp_path: Path) -> None:
    """Recall on a data dir with no cues run yet: exit 1, one line naming commands that exist as written."""
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    open_archive(data_dir / "archive.db").close()  # what a run that stopped after ingest leaves
    open_staging(data_dir / "staging.db").close()
    done = chatmem("recall", "anything", data_dir=data_dir)
    assert done.exit_code == 1
    assert "no memory yet" in done.stderr
    assert f"chatmem --data-dir {data_dir} run --run-id RUN --from segment" in done.stderr


def test_ctrl_c_while_the_index_is_stored_says_the_run_is_complete(tmp_path: Path, monkeypatch: Any) -> None:
    """A Ctrl-C after the last stage, while the run stores its recall index: exit 130 with a line that says the run
    finished (not "nothing was run"), the ledger says succeeded, and recall still answers (it builds the index)."""
    from memory.service import Memory

    export = tmp_path / "notes.jsonl"
    lines = [{"conversation_id": c, "id": i, "role": r, "text": t, "created_at": when} for c, i, r, t, when in NOTES]
    export.write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")
    data_dir = tmp_path / "data"

    def interrupted(*args: Any, **kwargs: Any) -> None:
        raise KeyboardInterrupt  # what Python raises for a Ctrl-C in this step

    with monkeypatch.context() as patched:  # only this patch: the autouse network guard stays
        patched.setattr(Memory, "store", interrupted)
        result = chatmem("--quiet", "run", export, data_dir=data_dir)
    assert result.exit_code == 130, result.output
    assert "after run" in result.output and "finished" in result.output and "nothing was run" not in result.output
    with closing(open_staging(data_dir / "staging.db")) as staging:
        assert [row[0] for row in staging.execute("SELECT status FROM runs")] == ["succeeded"]
    assert not (data_dir / "recall-index").exists() or not any((data_dir / "recall-index").iterdir())
    assert chatmem("recall", "Lisbon tram", data_dir=data_dir).exit_code == 0


def test_the_recall_report_lists_methods_not_the_runs_facts(capsys: pytest.CaptureFixture[str]) -> None:
    """The report's "run" entry (work dir, question count) is no method: no `run 0 0 0` row in the table."""
    from flows.cli_eval_recall import print_report

    method = {"questions": 3, "recall_all@3": 0.5, "categories": {"single": {"questions": 3, "recall_all@3": 0.5}}}
    print_report("longmemeval", {"system": method, "bm25": dict(method), "run": {"questions": 3, "work_dir": "W"}})
    rows = [line.split()[0] for line in capsys.readouterr().out.splitlines()[1:] if line and not line.startswith(" ")]
    assert rows[:2] == ["system", "bm25"] and "run" not in rows
