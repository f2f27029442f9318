"""The `chatmem` CLI: in-process with click's CliRunner (real flows, real SQLite), and as a real process.

Pipeline runs cost a Prefect flow each, so read-only tests share one ingested data dir (`ingested`).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner, Result

from flows.cli import cli
from flows.registry import STAGE_ORDER

ROOT = Path(__file__).resolve().parents[1]


def chatmem(*args: str | Path, data_dir: Path | None = None) -> Result:
    """Invoke the CLI in-process; `data_dir` becomes --data-dir."""
    argv = [str(a) for a in args]
    if data_dir is not None:
        argv = ["--data-dir", str(data_dir), *argv]
    return CliRunner().invoke(cli, argv, catch_exceptions=False)


def as_json(result: Result) -> Any:
    """stdout must be JSON and nothing else."""
    return json.loads(result.stdout)


def chatmem_process(
    *args: str | Path, cwd: Path, extra_env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run `chatmem` as its own process: the console script when installed, else its module."""
    script = Path(sys.executable).with_name("chatmem")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "flows.cli"]
    env = {**os.environ, "PYTHONPATH": str(ROOT), **(extra_env or {})}
    return subprocess.run([*command, *map(str, args)], cwd=cwd, env=env, capture_output=True, text=True, timeout=240)


@pytest.fixture(scope="module")
def ingested(
    tmp_path_factory: pytest.TempPathFactory, chatgpt_export: Path, make_jsonl: Callable[..., Path]
) -> Iterator[tuple[Path, dict[str, Any]]]:
    """One real `chatmem run --json` of a ChatGPT export and a JSONL file, for tests that only read."""
    base = tmp_path_factory.mktemp("ingested")
    jsonl = make_jsonl(base / "notes.jsonl")
    result = chatmem("run", chatgpt_export, jsonl, "--json", data_dir=base / "data")
    assert result.exit_code == 0, result.output
    yield base / "data", as_json(result)


def _commands(group: click.Group, prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    context = click.Context(group)
    for name in group.list_commands(context):  # the lazily loaded commands too
        command = group.get_command(context, name)
        yield (*prefix, name)
        if isinstance(command, click.Group):
            yield from _commands(command, (*prefix, name))


def test_every_command_has_help_with_an_example() -> None:
    paths = [(), *_commands(cli)]
    assert ("staging", "show") in paths and ("archive", "stats") in paths and ("serve",) in paths
    for path in paths:
        result = chatmem(*path, "--help")
        assert result.exit_code == 0, path
        assert "Example:" in result.stdout, f"`chatmem {' '.join(path)} --help` has no Example: line"


def test_stage_help_lists_every_stage_name_in_pipeline_order_with_an_example() -> None:
    """`chatmem stage --help` names the stages a user can pass, from the registry, and its example names one."""
    help_text = " ".join(chatmem("stage", "--help").stdout.split())  # click wraps the lines
    assert f"STAGE is one of, in pipeline order: {', '.join(STAGE_ORDER)}." in help_text, help_text
    [example] = [line for line in chatmem("stage", "--help").stdout.splitlines() if "Example:" in line]
    assert example.split()[3] in STAGE_ORDER, example  # Example: chatmem stage NAME --run-id R


def test_inspection_never_imports_the_engine(ingested: tuple[Path, dict[str, Any]]) -> None:
    """`import flows.cli` and the read-only commands leave prefect and flows.pipeline unimported."""
    data_dir, _ = ingested
    code = (
        "import sys\n"
        "from flows.cli import cli\n"
        "for argv in (['staging', 'runs'], ['staging', 'tables'], ['staging', 'failures'],\n"
        "             ['staging', 'show', 'runs'], ['archive', 'stats', '--json']):\n"
        f"    cli(['--data-dir', {str(data_dir)!r}, *argv], standalone_mode=False)\n"
        "engine = ('prefect', 'flows.pipeline', 'flows.serve', 'tqdm')\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] in engine or m in engine)\n"
        "assert not loaded, loaded\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert '"conversations": 3' in done.stdout


def test_run_then_archive_stats_counts_what_was_ingested(ingested: tuple[Path, dict[str, Any]]) -> None:
    data_dir, run = ingested
    assert run["status"] == "succeeded" and run["run_id"].startswith("r")
    stage = run["stages"][0]  # the later stages follow ingest in the same run
    assert stage["stage"] == "ingest" and stage["status"] == "succeeded"
    assert [f["status"] for f in run["files"]] == ["ingested", "ingested"]
    stats = as_json(chatmem("archive", "stats", "--json", data_dir=data_dir))
    assert stats["conversations"] == 3  # one ChatGPT conversation, two JSONL ones
    assert stats["messages"] == stage["counts"]["messages_inserted"] > 6
    assert stats["quarantined"] == 0
    text = chatmem("archive", "stats", data_dir=data_dir).stdout
    assert f"messages        {stats['messages']}" in text


def test_same_dump_twice_is_skipped_and_defaults_announced_once(
    tmp_path: Path, jsonl_export: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With no --data-dir the default .chatmem is used and said so; a second run says in one line that nothing is
    new, a forced one reads the file again (same sha256: every message unchanged)."""
    monkeypatch.chdir(tmp_path)
    first = chatmem("run", jsonl_export, "--only", "ingest")
    assert first.exit_code == 0, first.output
    assert first.stdout.count("data dir: .chatmem (default") == 1
    assert first.stdout.count("Prefect: local ephemeral API") == 1
    assert "ingest: succeeded" in first.stdout
    stats = chatmem("archive", "stats", "--json").stdout
    second = chatmem("-q", "run", jsonl_export, "--from", "ingest", "--to", "ingest")
    assert second.exit_code == 0, second.output
    # same file, same archive: the stage does not even start, and Prefect neither
    assert second.stdout.startswith("nothing new: 1 stage(s) unchanged since run")
    assert len(second.stdout.splitlines()) == 1 and "data dir:" not in second.stdout  # --quiet
    forced = chatmem("-q", "run", jsonl_export, "--only", "ingest", "--force", "--json")
    assert forced.exit_code == 0, forced.output
    [stage] = as_json(forced)["stages"]
    assert stage["status"] == "succeeded" and stage["counts"]["files_skipped"] == 0
    assert stage["counts"]["messages_unchanged"] == stage["counts"]["messages_read"] > 0
    assert chatmem("archive", "stats", "--json").stdout == stats
    assert (tmp_path / ".chatmem" / "archive.db").exists()


def test_bad_stage_options_are_usage_errors(data_dir: Path, jsonl_export: Path) -> None:
    cases = [
        ("run", jsonl_export, "--from", "nope"),
        ("run", jsonl_export, "--to", "nope"),
        ("run", jsonl_export, "--only", "ingest", "--from", "ingest"),
        ("stage", "nope", "--run-id", "r1"),
        ("run",),
    ]
    for args in cases:
        result = chatmem(*args, data_dir=data_dir)
        assert result.exit_code == 2, (args, result.output)
    assert "unknown stage" in chatmem("run", jsonl_export, "--from", "nope", data_dir=data_dir).stderr
    wrong = chatmem("stage", "nope", "--run-id", "r1", data_dir=data_dir).stderr
    assert "unknown stage(s) 'nope'" in wrong and "--only" not in wrong  # names what was typed
    assert not data_dir.exists()  # refused before anything started
    # a missing export is a file that cannot be read, as an empty one is: exit 1, naming it (test_cli_cold_pass.py)
    missing = chatmem("run", data_dir.parent / "missing.json", data_dir=data_dir)
    assert missing.exit_code == 1 and "missing.json: no such file" in missing.stderr
    assert not data_dir.exists()


def test_a_bad_setting_names_its_environment_variable_never_its_value(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cold try set CHATMEM_CLUSTER__ENCODE_MAX=abc and read `cluster.encode_max: Input should be a valid
    integer`: which variable to fix is now said; a value is never echoed (an API key's would be a leak)."""
    monkeypatch.setenv("CHATMEM_CLUSTER__ENCODE_MAX", "abc")
    monkeypatch.setenv("CHATMEM_EXTRACT__LLM__TIMEOUT_S", "sk-secret-looking-value")
    result = chatmem("archive", "stats", data_dir=data_dir)
    assert result.exit_code == 2 and "invalid settings" in result.stderr
    assert "cluster.encode_max (CHATMEM_CLUSTER__ENCODE_MAX): Input should be a valid integer" in result.stderr
    assert "(CHATMEM_EXTRACT__LLM__TIMEOUT_S)" in result.stderr and "sk-secret" not in result.stderr + result.output


@pytest.mark.slow
def test_malformed_file_fails_in_one_line_and_stage_rerun_fixes_it(
    tmp_path: Path, chatgpt_export: Path, jsonl_export: Path
) -> None:
    """A real `chatmem` process: a file cut inside its first conversation (nothing readable) beside a good one. The
    run goes on with the good one and exits 1 with one `error:` line naming the bad file and why; fixed, a re-run
    of the same command ingests it and the failure is gone. Alone, the file fails the ingest stage with the
    command that re-runs it."""
    data_dir = tmp_path / "data"
    broken = tmp_path / "conversations.json"
    broken.write_bytes(chatgpt_export.read_bytes()[:3000])  # cut inside the first conversation
    done = chatmem_process("--data-dir", data_dir, "run", broken, jsonl_export, "--json", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "Traceback" not in done.stderr, done.stderr
    report = json.loads(done.stdout)
    assert f"1 file failed in run {report['run_id']}: {broken}: " in errors[0]
    assert report["status"] == "incomplete" and "failed_stage" not in report  # exit 1: a file failed
    statuses = {f["path"]: f["status"] for f in report["files"]}
    assert statuses == {str(broken): "failed", str(jsonl_export): "ingested"}
    assert as_json(chatmem("archive", "stats", "--json", data_dir=data_dir))["conversations"] == 2

    failures = as_json(chatmem("staging", "failures", "--json", data_dir=data_dir))
    assert [f["path"] for f in failures["files"]] == [str(broken)]
    broken.write_bytes(chatgpt_export.read_bytes())  # the user fixes the file and runs again
    rerun = chatmem("run", broken, jsonl_export, data_dir=data_dir)
    assert rerun.exit_code == 0, rerun.output
    assert as_json(chatmem("archive", "stats", "--json", data_dir=data_dir))["conversations"] == 3
    failures = as_json(chatmem("staging", "failures", "--json", data_dir=data_dir))
    assert failures["files"] == []

    alone = tmp_path / "alone.json"
    alone.write_bytes(chatgpt_export.read_bytes()[:3000])
    failed = chatmem_process("--data-dir", data_dir, "run", alone, "--json", cwd=tmp_path)
    # the command that finishes the run (every stage from ingest on), not ingest alone
    finish = f"then: chatmem --data-dir {data_dir} run --from ingest --to load --run-id"
    assert failed.returncode == 1 and finish in failed.stderr, failed.stderr
    assert json.loads(failed.stdout)["failed_stage"] == "ingest"


def test_prefect_server_too_slow_to_start_is_one_line_naming_the_setting(tmp_path: Path, jsonl_export: Path) -> None:
    """When Prefect's local API server misses its start-up timeout: exit 1, one `error:` line naming the setting."""
    done = chatmem_process(
        "--data-dir",
        tmp_path / "data",
        "run",
        jsonl_export,
        cwd=tmp_path,
        extra_env={"PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "0", "PREFECT_API_URL": ""},
    )
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS" in errors[0], done.stderr


def test_stage_with_an_unknown_run_id_is_a_usage_error(ingested: tuple[Path, dict[str, Any]]) -> None:
    data_dir, _ = ingested
    result = chatmem("stage", "ingest", "--run-id", "r-nope", data_dir=data_dir)
    assert result.exit_code == 2
    assert "unknown run id 'r-nope'" in result.stderr and f"chatmem --data-dir {data_dir} staging runs" in result.stderr


def test_staging_runs_text_and_json(ingested: tuple[Path, dict[str, Any]]) -> None:
    data_dir, run = ingested
    runs = as_json(chatmem("staging", "runs", "--json", "--limit", "1", data_dir=data_dir))
    assert [(r["id"], r["status"], r["stage_status"]["ingest"]) for r in runs] == [
        (run["run_id"], "succeeded", "succeeded")
    ]
    text = CliRunner().invoke(cli, ["--data-dir", str(data_dir), "staging", "runs"], env={"COLUMNS": "200"}).stdout
    header = ["id", "status", "started_at", "took", "stages", "exports", "error", "resume"]
    assert text.splitlines()[0].split() == header
    statuses = as_json(chatmem("staging", "runs", "--json", "--limit", "1", data_dir=data_dir))[0]["stage_status"]
    succeeded = sum(status == "succeeded" for status in statuses.values())
    others = [f"{stage}:{status}" for stage, status in statuses.items() if status != "succeeded"]
    assert run["run_id"] in text and f"{succeeded} succeeded" in text  # the common status counted, the rest named
    assert all(other in text for other in others), text


def test_staging_tables_lists_both_databases_with_counts(ingested: tuple[Path, dict[str, Any]]) -> None:
    data_dir, _ = ingested
    tables = as_json(chatmem("staging", "tables", "--json", data_dir=data_dir))
    counts = {(t["database"], t["table"]): t["rows"] for t in tables}
    stats = as_json(chatmem("archive", "stats", "--json", data_dir=data_dir))
    assert counts[("archive", "messages")] == stats["messages"]
    assert counts[("staging", "ingest_files")] == 2 and ("staging", "runs") in counts
    assert "message_chronology" in chatmem("staging", "tables", data_dir=data_dir).stdout


def test_staging_show_filters_by_run_and_rejects_unknown_tables(
    ingested: tuple[Path, dict[str, Any]],
) -> None:
    data_dir, run = ingested
    rows = as_json(chatmem("staging", "show", "ingest_files", "--run-id", run["run_id"], "--json", data_dir=data_dir))
    assert len(rows) == 2 and {r["run_id"] for r in rows} == {run["run_id"]}
    messages = as_json(chatmem("staging", "show", "messages", "--limit", "3", "--json", data_dir=data_dir))
    assert len(messages) == 3 and {"uuid", "text", "is_active"} <= set(messages[0])
    shown = chatmem("staging", "show", "ingest_files", data_dir=data_dir).stdout.splitlines()
    assert "path" in shown[0] or any(line.startswith("path ") for line in shown)  # a table, or one block per row
    for table in ("nope", "runs; DROP TABLE runs"):
        result = chatmem("staging", "show", table, data_dir=data_dir)
        assert result.exit_code == 2 and "unknown table" in result.stderr
    assert chatmem("staging", "show", "messages", "--run-id", "x", data_dir=data_dir).exit_code == 2
    assert len(as_json(chatmem("staging", "runs", "--json", data_dir=data_dir))) >= 1  # nothing dropped


def test_staging_failures_when_all_is_well(ingested: tuple[Path, dict[str, Any]]) -> None:
    data_dir, _ = ingested
    assert as_json(chatmem("staging", "failures", "--json", data_dir=data_dir)) == {
        "runs": [],
        "stage_runs": [],
        "files": [],
        "quarantine": [],
        "superseded": [],  # cut files a later whole file replaced (ingest/supersede.py)
    }
    assert chatmem("staging", "failures", data_dir=data_dir).stdout.strip() == "no failures"


def test_inspection_of_a_data_dir_that_does_not_exist_exits_1_and_creates_nothing(data_dir: Path) -> None:
    """`archive stats` and its siblings on a data dir that does not exist (a mistyped --data-dir, or before any run):
    exit 1 with one line saying it holds no archive and the command that builds one there, --json too (they exited 0
    with an empty answer, as if an archive were there and empty); the data dir is not created."""
    commands = [
        ("archive", "stats"),
        ("archive", "stats", "--json"),
        ("staging", "runs"),
        ("staging", "runs", "--json"),
        ("staging", "tables"),
        ("staging", "failures"),
        ("staging", "show", "runs"),
        ("topics",),
        ("report",),
    ]
    for args in commands:
        result = chatmem(*args, data_dir=data_dir)
        assert result.exit_code == 1 and result.stdout == "", (args, result.output)
        [line] = result.stderr.splitlines()
        assert line.startswith(f"error: {data_dir} does not exist, so it holds no archive"), (args, line)
        assert f"`chatmem --data-dir {data_dir} run EXPORT`" in line, (args, line)
    assert not data_dir.exists()


def test_inspection_of_an_empty_data_dir_says_so(data_dir: Path) -> None:
    """The listings of a data dir with nothing yet give their empty answer, exit 0 (no runs, no failures is true),
    with one line on stderr naming the data dir and the command that fills it; what a stage builds exits 1."""
    data_dir.mkdir()  # there, but no run has written to it yet
    empty = {
        ("staging", "runs"): [],
        ("staging", "tables"): [],
        ("staging", "failures"): {"runs": [], "stage_runs": [], "files": [], "quarantine": [], "superseded": []},
        ("archive", "stats"): dict.fromkeys(
            ("sources", "conversations", "messages", "active_messages", "hidden_messages", "quarantined"), 0
        )
        | {"visible_messages": 0, "other_branch_messages": 0},  # the parts that add up to the messages (session 39)
    }
    for args, answer in empty.items():
        result = chatmem(*args, data_dir=data_dir)
        assert result.exit_code == 0 and "nothing in" in result.stderr and "chatmem run" in result.stderr, args
        assert str(data_dir) in result.stderr and result.stderr.count("\n") == 1, result.stderr
        listed = chatmem(*args, "--json", data_dir=data_dir)
        assert listed.exit_code == 0 and json.loads(listed.stdout) == answer, args
    assert chatmem("staging", "failures", data_dir=data_dir).stdout.strip() == "no failures"
    for args in (("topics",), ("staging", "show", "runs"), ("report",)):
        result = chatmem(*args, data_dir=data_dir)
        assert result.exit_code == 1 and "nothing in" in result.stderr, (args, result.stderr)
    assert list(data_dir.iterdir()) == []  # reading never creates anything
