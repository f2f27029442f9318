"""Up to which staging.db mark each graph target holds each kind of staging layer: <data_dir>/load-staging.json.

    {"<target key>": {"<kind>": {"mark": {"version": 12, "origin": "...", "cluster_run": "..."} | null,
                                 "layers": "<fingerprint of those layers' SQL>", "rows": {"<layer>": n, ...}}}}

The same rules as load-archive.json (staging/archive_loaded.py), per group of layers (load/staging_delta.py:
segment, evidence, concept, topic, segment_topic, concept_topic): written by the load stage after a load that
finished with every row recorded (the manifest then equals those layers' rows as of `mark`); cleared before a load
that diffs them whole; a missing or unreadable file, another fingerprint or other manifest row counts mean no mark
(staging/staging_changes.py says what a mark is).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from staging.staging_changes import Mark

FILE = "load-staging.json"


def _read(data_dir: Path) -> dict[str, Any]:
    try:
        found = json.loads((data_dir / FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


def loaded_mark(data_dir: Path, target: str, kind: str, layers: str, rows: dict[str, int]) -> Mark | None:
    """The target's mark for one kind, when it was recorded for the same layers (their SQL's fingerprint) and the
    manifest holds as many rows of each as it did then."""
    entry = _read(data_dir).get(target)
    found = entry.get(kind) if isinstance(entry, dict) else None
    if not isinstance(found, dict) or found.get("layers") != layers or found.get("rows") != rows:
        return None
    return Mark.from_json(found.get("mark"))


def record(
    data_dir: Path, target: str, kind: str, mark: Mark | None, layers: str, rows: dict[str, int] | None = None
) -> None:
    """Replace one target's entry for one kind (a temporary file renamed into place: never half written)."""
    found = _read(data_dir)
    entry = found.get(target)
    if not isinstance(entry, dict):
        entry = found[target] = {}
    entry[kind] = {"mark": None if mark is None else mark.as_json(), "layers": layers, "rows": rows or {}}
    path = data_dir / FILE
    temporary = path.with_name(f".{FILE}.{os.getpid()}")
    temporary.write_text(json.dumps(found, sort_keys=True, indent=1), encoding="utf-8")
    os.replace(temporary, path)
