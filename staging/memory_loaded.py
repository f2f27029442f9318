"""Which cues run's memory rows each graph target holds: <data_dir>/load-memory.json, written by the load stage.

    {"<target key>": {"memory_run": "r2" | null, "loading": "r3" | null}}

`memory_run`: the cues run whose memory rows the target's manifest equals (the last load that finished with
every row recorded); `loading`: the run a load that has not finished was writing. The load diffs only the rows
that may differ between the two (load/memory_delta.py) and the cues stage keeps `memory_run`'s rows when it
prunes older runs. A file that is missing or unreadable means no target holds a known run: full diffs.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

FILE = "load-memory.json"


def read(data_dir: Path) -> dict[str, dict[str, Any]]:
    try:
        found = json.loads((data_dir / FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


def loaded_run(data_dir: Path, target: str) -> tuple[str | None, str | None]:
    """(memory_run, loading) of one target."""
    entry = read(data_dir).get(target) or {}
    return entry.get("memory_run"), entry.get("loading")


def record(data_dir: Path, target: str, *, memory_run: str | None, loading: str | None) -> None:
    """Replace one target's entry (a temporary file renamed into place: never half written)."""
    found = read(data_dir)
    found[target] = {"memory_run": memory_run, "loading": loading}
    path = data_dir / FILE
    temporary = path.with_name(f".{FILE}.{os.getpid()}")
    temporary.write_text(json.dumps(found, sort_keys=True, indent=1), encoding="utf-8")
    os.replace(temporary, path)


def held_runs(data_dir: Path) -> set[str]:
    """The cues runs some target's manifest equals or was moving from: their rows must not be pruned."""
    return {str(e["memory_run"]) for e in read(data_dir).values() if isinstance(e, dict) and e.get("memory_run")}
