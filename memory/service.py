"""One memory, opened once and asked many times: the entry point for a long-lived caller (an MCP server).

    memory = Memory.open(settings)      # loads the latest cues run of settings.data_dir (read-only)
    result = memory.recall(RecallRequest(query="...", at=..., scope=RecallScope(...)))

The CLI's `chatmem recall` is this for one question. The databases are read once, into the embedded engine
(memory.index); nothing is written.
"""

from __future__ import annotations

from dataclasses import dataclass

from clients.embedders import Embedder
from contracts.errors import ChatmemError, ConfigError
from contracts.memory import RecallRequest, RecallResult
from contracts.settings import Settings
from memory.index import MemoryIndex, key_embedder, load_index
from memory.recall import recall
from staging.db import connect_readonly


@dataclass
class Memory:
    settings: Settings
    index: MemoryIndex
    embedder: Embedder

    @classmethod
    def open(cls, settings: Settings, run_id: str | None = None) -> Memory:
        """The latest (or the given) cues run; ChatmemError (exit 1) when the data dir has none."""
        embedder = key_embedder(settings)
        try:
            archive = connect_readonly(settings.archive_path)
            staging = connect_readonly(settings.staging_path)
        except FileNotFoundError:
            raise ChatmemError(
                f"nothing in {settings.data_dir} yet: run `chatmem run EXPORT` first, or point --data-dir at a data dir"
            ) from None
        try:
            index = load_index(archive, staging, settings, embedder, run_id=run_id)
        finally:
            archive.close()
            staging.close()
        return cls(settings, index, embedder)

    def recall(self, request: RecallRequest) -> RecallResult:
        """Reconstruct a context; a scope that names nothing in the memory is a ConfigError (one line), not an
        empty answer that looks like "nothing was ever said about it"."""
        check_scope(self.index, request)
        return recall(self.index, self.embedder, request, self.settings.memory)


def check_scope(index: MemoryIndex, request: RecallRequest) -> None:
    scope = request.scope
    known = set(index.conversation_ids)
    unknown = [c for c in scope.conversation_ids if c not in known]
    if unknown:
        shown = ", ".join(repr(c) for c in unknown[:5]) + (" ..." if len(unknown) > 5 else "")
        raise ConfigError(
            f"scope names conversation(s) not in the memory: {shown}; use ids that recall or get_conversation return"
        )
    missing = [s for s in scope.sources if s not in set(index.sources)]
    if missing:
        present = ", ".join(sorted(set(index.sources))) or "none"
        raise ConfigError(
            f"scope names source(s) with no content in the memory: {', '.join(missing)} (present: {present})"
        )
    if scope.since is not None and scope.until is not None and scope.since > scope.until:
        raise ConfigError(f"scope: since {scope.since.isoformat()} is after until {scope.until.isoformat()}")
