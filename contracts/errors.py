"""The error tree. Every error chatmem raises on purpose is one of these.

    ChatmemError
    ├── ConfigError                 bad settings or CLI usage (exit code 2)
    ├── ExportError                 a whole export file cannot be read (exit code 1)
    │   ├── MalformedExportError    not valid JSON / JSONL, truncated, wrong encoding
    │   ├── UnsupportedFormatError  valid JSON, but a format chatmem does not ingest (names the format)
    │   ├── UnsafeArchiveError      a .zip with path traversal, a bomb, or no conversations file
    │   └── ExportsError            several files given and none can be read (names each, with why)
    ├── StageError                  a pipeline stage failed; names the stage, the run and how to re-run
    ├── StateError                  damaged, missing or unwritable state (a database, a full disk, the graph
    │                               password): names the file and what to do
    └── BusyError                   another run holds the data dir (names it)

A single bad *record* inside a good file is not an error: it becomes a quarantine row.
"""

from __future__ import annotations

from typing import Any

from contracts.redact import redact_text


class ChatmemError(Exception):
    """Base class of every error chatmem raises on purpose. Its text is redacted (contracts.redact): an error
    that quotes an endpoint URL or a server's reply never carries a credential to a log or a table."""

    exit_code = 1

    def __init__(self, *args: Any) -> None:
        super().__init__(*(redact_text(arg) if isinstance(arg, str) else arg for arg in args))

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled as what it is, its attributes included, without calling `__init__` again: a subclass whose
        `__init__` takes other arguments than its message (StageError, ExportError) comes back whole from a stage's
        own process (flows/stage_process.py) instead of failing to unpickle."""
        return (_rebuilt, (type(self), self.args, dict(self.__dict__)))


def _rebuilt(cls: type[ChatmemError], args: tuple[Any, ...], attributes: dict[str, Any]) -> ChatmemError:
    error = cls.__new__(cls, *args)
    error.args = args
    error.__dict__.update(attributes)
    return error


class ConfigError(ChatmemError):
    """Settings or arguments that cannot work."""

    exit_code = 2


class ExportError(ChatmemError):
    """An export file that cannot be ingested at all. The message names the file and the problem."""

    def __init__(self, path: str, problem: str) -> None:
        self.path = path
        self.problem = problem
        super().__init__(f"{path}: {problem}")


class MalformedExportError(ExportError):
    """The file is not valid JSON/JSONL (or not text at all)."""


class UnsupportedFormatError(ExportError):
    """The file is valid, but of a format chatmem does not ingest."""

    def __init__(self, path: str, detected: str, problem: str | None = None) -> None:
        self.detected = detected
        super().__init__(path, problem or f"detected format {detected!r} is not supported")


class UnsafeArchiveError(ExportError):
    """A zip archive that is unsafe or useless to open (zip-slip paths, bombs, no conversations file)."""


class ExportsError(ExportError):
    """Several export files given and none can be read: each is named with why (the first `shown` of them), so
    that all can be fixed at once rather than one per attempt."""

    SHOWN = 10

    def __init__(self, errors: list[ExportError], shown: int = SHOWN) -> None:
        self.path = errors[0].path
        named = "; ".join(str(error) for error in errors[:shown])
        more = f"; and {len(errors) - shown} more" if len(errors) > shown else ""
        self.problem = f"none of the {len(errors)} files given can be read: {named}{more}"
        ChatmemError.__init__(self, self.problem)


class StageError(ChatmemError):
    """A stage failed. The message says which stage, which run, why, and the command that re-runs it."""

    def __init__(self, stage: str, run_id: str, cause: str, rerun_hint: str | None = None) -> None:
        self.stage = stage
        self.run_id = run_id
        self.cause = redact_text(cause)
        self.rerun_hint = rerun_hint or f"chatmem stage {stage} --run-id {run_id}"
        self.hint_given = rerun_hint is not None  # else the runner gives the one that finishes the run (rehint)
        super().__init__(self._message())

    def _message(self) -> str:
        return f"stage {self.stage} failed in run {self.run_id}: {self.cause} (re-run: {self.rerun_hint})"

    def rehint(self, rerun_hint: str) -> None:
        """Say `rerun_hint` instead of the default (the stage alone): the runner knows the run's stages, a stage
        that raised this does not."""
        self.rerun_hint = rerun_hint
        self.hint_given = True
        self.args = (redact_text(self._message()),)


class StateError(ChatmemError):
    """State chatmem keeps (archive.db, staging.db, the graph's password) is damaged, missing or cannot be
    written. The message names the file and what to do: restore it, move it away, free space, re-run."""


class BusyError(ChatmemError):
    """Another process writes to the data dir: the message names its run and pid."""
