"""The one skip rule: a stage whose inputs, settings and code are unchanged since its last successful run is
skipped with a note saying so (`--force` recomputes).

A stage run's input fingerprint is a digest of
- the stage's code: the source of its own package and of the layers below it (clients, staging, contracts);
- its settings section, as the ledger shows it (secrets redacted);
- the state of everything it `reads` (flows/registry.py): "exports" by path, size and modification time,
  "archive" by which dumps it holds and how many messages, and an earlier stage by the fingerprint of that
  stage's latest successful run. A stage that has failed or was killed since has no state to match, so
  everything after it runs. Deterministic stages given the same inputs produce the same rows, so a chain of
  equal fingerprints means equal outputs all the way down.

The fingerprint is recorded when the stage finishes, of its inputs as they stand then: for ingest, whose output
is the archive it also reads, that is the archive it left, so an unchanged dump is skipped on the next run.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from functools import cache
from pathlib import Path

from contracts.settings import Settings
from flows.registry import StageSpec
from memory import wordnet
from staging.ledger import latest_attempt
from staging.segments import archive_fingerprint

BASE_PACKAGES = ("clients", "staging", "contracts")


@cache
def code_digest(package: str) -> str:
    """sha256 of a package's Python sources (names and bytes): changes whenever its code does."""
    root = Path(__file__).resolve().parents[1] / package
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def stage_code_version(stage: StageSpec) -> str:
    packages = (stage.entry.split(".")[0], *BASE_PACKAGES)
    return hashlib.sha256(":".join(code_digest(p) for p in packages).encode()).hexdigest()[:16]


def settings_section(settings: Settings, stage: StageSpec) -> object:
    """The stage's settings as the ledger records them (secrets redacted)."""
    return settings.public_dump().get(stage.settings_section) if stage.settings_section else None


def exports_state(exports: list[str]) -> list[list[object]]:
    """Each export by absolute path, size and mtime (a changed dump is re-read; ingest then checks its sha256)."""
    state: list[list[object]] = []
    for name in sorted(exports):
        path = Path(name)
        try:
            info = path.stat()
            state.append([str(path.absolute()), info.st_size, info.st_mtime_ns])
        except OSError as exc:  # missing now: ingest will say so; the fingerprint just differs
            state.append([str(path), type(exc).__name__])
    return state


def stage_state(staging: sqlite3.Connection, stage: str) -> str:
    """An earlier stage's output, named by the fingerprint of its latest run when that run succeeded."""
    latest = latest_attempt(staging, stage)
    if latest is None:
        return "never run"
    if latest.status in ("succeeded", "skipped"):
        return latest.input_fingerprint
    return f"{latest.status} in stage run {latest.id}"  # unique: nothing downstream can match it


def input_fingerprint(
    stage: StageSpec,
    settings: Settings,
    archive: sqlite3.Connection,
    staging: sqlite3.Connection,
    exports: list[str],
) -> str:
    """The digest the skip rule compares (see the module docstring)."""
    reads: dict[str, object] = {}
    for name in stage.reads:
        if name == "exports":
            reads[name] = exports_state(exports)
        elif name == "archive":
            reads[name] = archive_fingerprint(archive)
        elif name == "wordnet":
            reads[name] = wordnet.state(settings.memory.wordnet_dir)
        else:
            reads[name] = stage_state(staging, name)
    parts = {
        "stage": stage.name,
        "code": stage_code_version(stage),
        "settings": settings_section(settings, stage),
        "reads": reads,
    }
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:32]
