"""Issue 22: what the CLI says after a failure is true and works. The hint "fix or remove the file" works when the
file is removed, and `chatmem stage` reports the run as the ledger has it (failed while stages are left), not
"succeeded". Through the real CLI and stages."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner, Result

from flows.cli import cli


def chatmem(data_dir: Path, *args: str | Path) -> Result:
    return CliRunner().invoke(cli, ["--data-dir", str(data_dir), "-q", *map(str, args)])


def test_a_bad_file_beside_a_good_one_is_named_and_fixed_by_running_again(tmp_path: Path) -> None:
    """A run whose second file is not JSON goes on with the good one (its stages run) and exits 1 naming the bad
    file and why; `staging failures` lists it; fixed and run again, the run succeeds and the failure is gone."""
    data_dir = tmp_path / "data"
    good = tmp_path / "good.jsonl"
    good.write_text(json.dumps({"conversation_id": "c", "id": "1", "role": "user", "text": "hello there"}) + "\n")
    bad = tmp_path / "bad.json"
    bad.write_text("this is { not json", encoding="utf-8")
    first = chatmem(data_dir, "run", good, bad, "--to", "segment")
    assert first.exit_code == 1, first.output
    [run] = json.loads(chatmem(data_dir, "staging", "runs", "--json").output)
    assert run["status"] == "incomplete" and run["stage_status"] == {"ingest": "succeeded", "segment": "succeeded"}, run
    assert f"1 file failed in run {run['id']}: {bad}: " in first.output, first.output
    assert "fix the file and run again" in first.output, first.output

    before = json.loads(chatmem(data_dir, "staging", "failures", "--json").output)
    assert [f["path"] for f in before["files"]] == [str(bad)], before
    still = chatmem(data_dir, "run", good, bad, "--to", "segment")  # not skipped as unchanged: tried again
    assert still.exit_code == 1 and f"{bad}: " in still.output and "nothing new" not in still.output, still.output
    bad.write_text(json.dumps({"conversation_id": "d", "id": "2", "role": "user", "text": "fixed now"}) + "\n")
    again = chatmem(data_dir, "run", good, bad, "--to", "segment")
    assert again.exit_code == 0, again.output
    assert again.output.splitlines()[0].endswith(": succeeded"), again.output
    failures = json.loads(chatmem(data_dir, "staging", "failures", "--json").output)
    assert failures["files"] == [], failures
