"""A `--format` that names another format than the file certainly is (cold pass s17, finding M4): refused in one
line before Prefect starts (not imported), exit 1, nothing written; when detection is not certain the ingest
stage decides, as before."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from contracts.settings import Settings
from flows.preflight import refuse_bad_exports
from tests.conftest import write_jsonl

ROOT = Path(__file__).resolve().parents[1]
CLAUDE = [
    {
        "uuid": "c-1",
        "name": "a claude chat",
        "chat_messages": [{"uuid": "m-1", "sender": "human", "text": "hello", "created_at": "2024-01-01T00:00:00Z"}],
    }
]


def _run(data_dir: Path, *args: str | Path) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    """`chatmem --data-dir DATA run ARGS` in a fresh interpreter: (the process, the engine modules it imported)."""
    code = (
        "import json, sys\n"
        "from flows.cli import main\n"
        f"sys.argv = ['chatmem', '--data-dir', {str(data_dir)!r}, 'run', *{[str(a) for a in args]!r}]\n"
        "try:\n"
        "    main()\n"
        "finally:\n"
        "    loaded = sorted({m.split('.')[0] for m in sys.modules} & {'prefect', 'sklearn', 'umap', 'hdbscan'})\n"
        "    print('LOADED ' + json.dumps(loaded), file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    marker = [line for line in done.stderr.splitlines() if line.startswith("LOADED ")]
    return done, json.loads(marker[-1].removeprefix("LOADED ")) if marker else ["?"]


def test_a_format_that_detection_knows_is_wrong_is_refused_before_prefect(tmp_path: Path, chatgpt_export: Path) -> None:
    claude = tmp_path / "claude.json"
    claude.write_text(json.dumps(CLAUDE))
    for export, wrong, detected in ((chatgpt_export, "claude", "chatgpt"), (claude, "chatgpt", "claude")):
        data_dir = tmp_path / f"data-{detected}"
        done, loaded = _run(data_dir, "--format", wrong, export)
        assert done.returncode == 1, done.stderr
        errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
        assert len(errors) == 1 and "Traceback" not in done.stderr, done.stderr
        assert errors[0].startswith(f"error: {export.absolute()}: nothing could be read as {wrong} ")
        assert errors[0].endswith(f"; it looks like {detected}: run with --format {detected} (or without --format)"), (
            errors[0]
        )
        assert loaded == [], loaded
        assert not (data_dir / "staging.db").exists() and not (data_dir / "prefect").exists()


def test_a_format_detection_is_not_certain_of_is_left_to_the_ingest_stage(tmp_path: Path, chatgpt_export: Path) -> None:
    settings = Settings(data_dir=tmp_path / "data")
    jsonl = write_jsonl(tmp_path / "notes.jsonl")
    empty_list = tmp_path / "empty.json"
    empty_list.write_text("[]")
    refuse_bad_exports([jsonl], settings, "claude")  # a JSONL line's keys make no format certain
    refuse_bad_exports([empty_list], settings, "claude")  # nothing to tell formats apart by
    refuse_bad_exports([chatgpt_export], settings, "chatgpt")  # the right format
