"""Up to which segment mark each graph target holds the segment layers: <data_dir>/load-segments.json.

    {"<target key>": {"mark": {"version": 12, "origin": "..."} | null,
                      "layers": "<fingerprint of the segment layers' SQL>", "rows": {"<layer>": n, ...}}}

The same rules as load-archive.json (staging/archive_loaded.py): written by the load stage after a load that
finished with every row recorded (the manifest then equals the segment tables as of `mark`); cleared before a load
that diffs these layers whole; a missing or unreadable file, another fingerprint or other manifest row counts mean
no mark (staging/segment_changes.py says what a mark is).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from staging.segment_changes import Mark

FILE = "load-segments.json"


def _read(data_dir: Path) -> dict[str, Any]:
    try:
        found = json.loads((data_dir / FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


def loaded_mark(data_dir: Path, target: str, layers: str, rows: dict[str, int]) -> Mark | None:
    """The target's mark, when it was recorded for the same layers (their SQL's fingerprint) and the manifest
    holds as many rows of each as it did then."""
    entry = _read(data_dir).get(target)
    if not isinstance(entry, dict) or entry.get("layers") != layers or entry.get("rows") != rows:
        return None
    return Mark.from_json(entry.get("mark"))


def record(data_dir: Path, target: str, mark: Mark | None, layers: str, rows: dict[str, int] | None = None) -> None:
    """Replace one target's entry (a temporary file renamed into place: never half written)."""
    found = _read(data_dir)
    found[target] = {"mark": None if mark is None else mark.as_json(), "layers": layers, "rows": rows or {}}
    path = data_dir / FILE
    temporary = path.with_name(f".{FILE}.{os.getpid()}")
    temporary.write_text(json.dumps(found, sort_keys=True, indent=1), encoding="utf-8")
    os.replace(temporary, path)
