"""Up to which archive mark each graph target holds the archive layers: <data_dir>/load-archive.json.

    {"<target key>": {"mark": {"conversations": 1, "messages": 9, "version": 0, "origin": "...", "newest": "m9"}
                              | null,
                      "layers": "<fingerprint of the archive layers' SQL>", "rows": {"<layer>": n, ...}}}

Written by the load stage after a load that finished with every row recorded (the manifest then equals the
archive as of `mark`); cleared before a load that diffs everything (a killed one leaves the manifest part old,
part new, for rows of any conversation). A delta load that is killed leaves the old mark, but the next load diffs
everything once all the same: an unfinished load may have committed batches it never recorded, and the load
trusts its manifest only after a finished load (as for CREATE of relationships, load/cypher.py point 5). A file
that is missing or unreadable means no mark: full diffs, as before (staging/archive_changes.py says what a mark
is). `rows` are the manifest's row counts of the archive layers when the mark was recorded: a manifest that holds
other counts (staging.db replaced, its manifest cleared or edited, the file kept) voids the mark.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from staging.archive_changes import Mark

FILE = "load-archive.json"


def _read(data_dir: Path) -> dict[str, Any]:
    try:
        found = json.loads((data_dir / FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


def loaded_mark(data_dir: Path, target: str, layers: str, rows: dict[str, int]) -> Mark | None:
    """The target's mark, when it was recorded for the same archive layers (their SQL's fingerprint) and the
    manifest holds as many rows of each as it did then."""
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
