"""Faults session 37's cold try met (helper-163's logs): each through the real CLI (a process of its own, or click's
runner) on real files under tmp_path with real SQLite and Prefect."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

from click.testing import CliRunner, Result
from fault_support import chatmem_command, write_chats
from test_ingest_stage import make_chatgpt_export, write_json

from flows.cli import cli


def chatmem(data_dir: Path, *args: str | Path) -> Result:
    return CliRunner().invoke(cli, ["--data-dir", str(data_dir), *map(str, args)], env={"COLUMNS": "120"})


def _env() -> dict[str, str]:
    root = Path(__file__).resolve().parent.parent
    # Prefect's state in DATA/prefect, as a new user's is: the two runs share its database
    return {k: v for k, v in {**os.environ, "PYTHONPATH": str(root)}.items() if k not in ("PREFECT_HOME",)}


def test_a_second_run_on_a_new_data_dir_refuses_before_it_touches_the_firsts_prefect_database(tmp_path: Path) -> None:
    """`chatmem run a &` then `chatmem run b` on a new data dir: the second refused, but only after its own
    Prefect API server had migrated prefect/'s database alongside the first's, whose server then died ("No such
    constraint: 'fk_flow_run__deployment_id__deployment'"): the first waited 240 s and ingested nothing. Now the
    command takes the data dir's lock before its server starts: the second refuses with no server, the first runs."""
    data_dir = tmp_path / "data"
    first_export, second_export = write_chats(tmp_path / "a.jsonl", 3), write_chats(tmp_path / "b.jsonl", 2)
    command = [*chatmem_command(), "--data-dir", str(data_dir), "run", "--only", "ingest"]
    env = _env()
    first = subprocess.Popen(
        [*command, str(first_export)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )
    deadline = time.monotonic() + 120
    while not (data_dir / "prefect").exists() and first.poll() is None:  # the first's server is starting
        assert time.monotonic() < deadline, "the first run never started Prefect"
        time.sleep(0.02)
    second = subprocess.run([*command, str(second_export)], capture_output=True, text=True, env=env, timeout=240)
    _out, err = first.communicate(timeout=300)
    assert first.returncode == 0, err[-3000:]
    assert "Traceback" not in err and "did not start" not in err, err[-3000:]
    if second.returncode != 0:  # the first still held the data dir (always, but on a machine far too slow)
        assert second.returncode == 1 and "Traceback" not in second.stderr, second.stderr[-3000:]
        assert f"{data_dir} is in use by" in second.stderr and f"pid {first.pid}" in second.stderr, second.stderr
    stats = subprocess.run(
        [*chatmem_command(), "--data-dir", str(data_dir), "archive", "stats", "--json"],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert json.loads(stats.stdout)["conversations"] >= 3, stats.stdout


def test_a_run_refused_by_the_lock_starts_no_prefect_server_on_the_data_dir(tmp_path: Path) -> None:
    """The cause of the crash above, deterministically: a run refused by another's lock had already made prefect/
    and started its API server on prefect.db (it created and migrated it). Now it refuses first: no prefect/."""
    from staging.lock import data_dir_lock

    data_dir = tmp_path / "data"
    export = write_chats(tmp_path / "a.jsonl", 2)
    with data_dir_lock(data_dir, "r-first"):
        refused = subprocess.run(
            [*chatmem_command(), "--data-dir", str(data_dir), "run", "--only", "ingest", str(export)],
            capture_output=True, text=True, env=_env(), timeout=240,
        )  # fmt: skip
    assert refused.returncode == 1 and "Traceback" not in refused.stderr, refused.stderr[-3000:]
    assert f"{data_dir} is in use by run r-first (pid {os.getpid()}" in refused.stderr, refused.stderr
    assert not (data_dir / "prefect").exists(), sorted(p.name for p in (data_dir / "prefect").iterdir())


def test_a_folder_whose_export_failed_to_parse_is_not_said_to_hold_no_export(tmp_path: Path) -> None:
    """`run exports/` with `invalid-skeleton/sample/conversations.json` invalid JSON: the summary said so, but the
    last error line said the folder "holds no export chatmem can read (it looked for a conversations.json ...)".
    Now the last line says what failed in it, as the summary does, and to fix the file."""
    exports = tmp_path / "exports"
    write_chats(exports / "good" / "a.jsonl", 2)
    (exports / "bad" / "sample").mkdir(parents=True)
    # as the real skeleton: a placeholder where a number should be, and a side file beside it
    (exports / "bad" / "sample" / "conversations.json").write_text('[{"title": "[title]", "create_time": EPOCH}]')
    (exports / "bad" / "sample" / "model_comparisons.json").write_text("[]")
    result = chatmem(tmp_path / "data", "run", "--only", "ingest", exports)
    assert result.exit_code == 1, result.output
    last = result.stderr.strip().splitlines()[-1]
    assert "no export chatmem can read" not in last and "it looked for" not in last, last
    assert f"{exports / 'bad' / 'sample' / 'conversations.json'}: invalid JSON" in last, last
    assert "fix the file and run again" in last, last


def test_an_empty_export_into_an_empty_data_dir_stops_after_the_ingest(tmp_path: Path) -> None:
    """`run empty_list.json` (`[]`) ran every stage (the graph server, 38 s of cluster) and said "no current
    segments: run the segment stage first". Now the ingest says the export holds no conversation, the run ends
    there (succeeded, the later stages recorded as not run), and the next export with conversations builds."""
    data_dir = tmp_path / "data"
    empty = tmp_path / "empty_list.json"
    empty.write_text("[]")
    result = chatmem(data_dir, "run", "--to", "segment", empty)
    assert result.exit_code == 0, result.output
    assert "no conversation in it (an empty export)" in result.stdout, result.stdout
    assert "nothing to build; the later stages were not run" in result.stdout, result.stdout
    assert "segment:" not in result.stdout and "run the segment stage first" not in result.output, result.stdout
    assert ": succeeded" in result.stdout.splitlines()[0 if "Prefect" not in result.stdout else 1], result.stdout
    built = chatmem(data_dir, "run", "--to", "segment", write_chats(tmp_path / "a.jsonl", 2))
    assert built.exit_code == 0, built.output
    assert "segment: succeeded" in built.stdout, built.stdout


def test_a_data_dir_that_is_the_export_folder_is_warned_of(tmp_path: Path) -> None:
    """`chatmem --data-dir exportdir run exportdir` was accepted silently and wrote archive.db, prefect/ ... beside
    the user's conversations.json. It works (re-runs are clean), so it is not refused: one warning line says it."""
    folder = tmp_path / "exportdir"
    folder.mkdir()
    write_json(folder / "conversations.json", make_chatgpt_export(1))
    result = chatmem(folder, "run", "--to", "ingest", folder)
    assert result.exit_code == 0, result.output
    assert f"warning: {folder}: the data dir is the export folder itself" in result.stderr, result.stderr
    assert "conversations written 1" in result.stdout, result.stdout


def test_a_zip_says_its_members_left_out_in_one_line_as_a_folder_does(tmp_path: Path) -> None:
    """`run junk.zip` (a good conversations.json, junk.bin and notes.txt) ignored the extra members silently where
    a folder says "left out". Now one line names them; a side file and an image are no news and are not said."""
    import zipfile

    export = tmp_path / "junk.zip"
    with zipfile.ZipFile(export, "w") as bundle:
        bundle.writestr("conversations.json", json.dumps(make_chatgpt_export(1)))
        bundle.writestr("junk.bin", b"\\x00" * 50)
        bundle.writestr("notes.txt", "notes")
        bundle.writestr("user.json", "{}")
        bundle.writestr("file-abc.png", b"\\x89PNG")
    result = chatmem(tmp_path / "data", "run", "--to", "ingest", export)
    assert result.exit_code == 0, result.output
    assert f"{export}: left out 2: junk.bin, notes.txt (not an export)" in result.stderr, result.stderr
    assert "conversations written 1" in result.stdout, result.stdout


def test_serve_once_says_the_quarantined_lines_as_run_does(tmp_path: Path) -> None:
    """`serve --once --watch DIR` on a JSONL file with 2 bad lines said only "ingested: .../mixed.jsonl" (exit 0),
    where `run` says "2 record(s) quarantined: chatmem staging failures". Now the tick says it in the same words."""
    watch, data_dir = tmp_path / "watch", tmp_path / "data"
    good = write_chats(tmp_path / "good.jsonl", 2).read_text(encoding="utf-8")
    watch.mkdir()
    # two lines: written "\\n" here before, they were one bad line that held the first good record too (1 quarantined)
    (watch / "mixed.jsonl").write_text("{not json\n{nor this\n" + good, encoding="utf-8")
    result = chatmem(data_dir, "serve", "--once", "--watch", watch)
    assert result.exit_code == 0, result.output
    assert f"ingested: {watch / 'mixed.jsonl'}" in result.stdout, result.stdout
    assert f"2 record(s) quarantined: chatmem --data-dir {data_dir} staging failures" in result.stdout, result.stdout
