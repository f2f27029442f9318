"""The one skip rule: a stage whose inputs, settings and code are unchanged since its last successful run is
skipped with a note saying so (`--force` recomputes).

A stage run's input fingerprint is a digest of
- the stage's code: the source of its own package and of the layers below it (clients, staging, contracts);
- its declared settings sections (`settings_sections`), as the ledger shows them (secrets redacted): the
  stage's context holds those sections only (clients/stage.py), so nothing else it could read is left out;
- the state of everything it `reads` (flows/registry.py): "exports" by path, size and modification time,
  "archive" by which dumps it holds and how many messages, and an earlier stage by the fingerprint of that
  stage's latest successful run. A stage that has failed or was killed since has no state to match, so
  everything after it runs. Deterministic stages given the same inputs produce the same rows, so a chain of
  equal fingerprints means equal outputs all the way down.

It is computed once per stage run, before the stage starts, by the runner (flows/stage_runner.py); no stage
computes one of its own. An input the stage itself changes (`writes`: ingest's archive, which it reads and
writes) is taken again when the stage finishes, and the stage run is recorded with the fingerprint of what it
left, so an unchanged dump is skipped on the next run.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

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


def settings_sections(settings: Settings, stage: StageSpec) -> dict[str, object]:
    """The stage's declared settings sections as the ledger records them (secrets redacted), by section name."""
    public = settings.public_dump()
    return {name: public.get(name) for name in stage.settings_sections}


def exports_state(exports: list[str]) -> list[list[object]]:
    """Each export by absolute path, size and mtime (a changed dump is re-read; ingest then checks its sha256); an
    unzipped export folder by its conversations files as well (rewritten in place, a file leaves its folder's own
    size and mtime as they were: `serve --watch` of a folder holding a conversations.json)."""
    from ingest.sources import conversation_files

    state: list[list[object]] = []
    for name in sorted(exports):
        path = Path(name)
        try:
            info = path.stat()
            entry: list[object] = [str(path.absolute()), info.st_size, info.st_mtime_ns]
            for part in conversation_files(path) if path.is_dir() else []:
                found = part.stat()
                entry += [part.name, found.st_size, found.st_mtime_ns]
            state.append(entry)
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


def read_state(
    name: str, settings: Settings, archive: sqlite3.Connection, staging: sqlite3.Connection, exports: list[str]
) -> object:
    """The state of one of the inputs a stage `reads`."""
    if name == "exports":
        return exports_state(exports)
    if name == "archive":
        return archive_fingerprint(archive)
    if name == "wordnet":
        return wordnet.state(settings.memory.wordnet_dir)
    return stage_state(staging, name)


@dataclass(frozen=True)
class Fingerprint:
    """A stage's input fingerprint and the parts it is the digest of (`after` takes the `writes` again)."""

    parts: dict[str, Any]

    @property
    def digest(self) -> str:
        return hashlib.sha256(json.dumps(self.parts, sort_keys=True, default=str).encode()).hexdigest()[:32]

    def after(
        self,
        stage: StageSpec,
        settings: Settings,
        archive: sqlite3.Connection,
        staging: sqlite3.Connection,
        exports: list[str],
    ) -> str:
        """The digest with the inputs the stage itself changes as it left them (the same digest when none)."""
        if not stage.writes:
            return self.digest
        reads = dict(self.parts["reads"])
        reads.update({name: read_state(name, settings, archive, staging, exports) for name in stage.writes})
        return Fingerprint({**self.parts, "reads": reads}).digest


def fingerprint_of(
    stage: StageSpec,
    settings: Settings,
    archive: sqlite3.Connection,
    staging: sqlite3.Connection,
    exports: list[str],
    force_format: str | None = None,
) -> Fingerprint:
    """The stage's input fingerprint (see the module docstring). A stage that reads the exports also keys on
    `--format` when one is given: the same bytes read as another format are another input."""
    parts: dict[str, Any] = {
        "stage": stage.name,
        "code": stage_code_version(stage),
        "settings": settings_sections(settings, stage),
        "reads": {name: read_state(name, settings, archive, staging, exports) for name in stage.reads},
    }
    if force_format is not None and "exports" in stage.reads:
        parts["format"] = force_format  # absent without --format: the digests of earlier runs stay valid
    return Fingerprint(parts)


def input_fingerprint(
    stage: StageSpec,
    settings: Settings,
    archive: sqlite3.Connection,
    staging: sqlite3.Connection,
    exports: list[str],
    force_format: str | None = None,
) -> str:
    """The digest the skip rule compares (see the module docstring)."""
    return fingerprint_of(stage, settings, archive, staging, exports, force_format).digest
