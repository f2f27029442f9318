"""One memory, opened once and asked many times: the entry point for a long-lived caller (an MCP server).

    memory = Memory.open(settings)      # loads the latest cues run of settings.data_dir (read-only)
    result = memory.recall(RecallRequest(query="...", at=..., scope=RecallScope(...)))   # the contract (MCP)
    answer = memory.answer(Request(query="...", ...))   # the same as plain dataclasses (memory/answer.py)

The CLI's `chatmem recall` is this for one question. The databases are read once, into the embedded engine
(memory.index); nothing is written. A recall is:
  1. the candidate pre-pass on a large memory (memory/candidates.py), activation over the candidates
     (memory.recall.rank), the pieces within the budget (memory.recall.to_result);
  2. the relevance floor: a query that matches no key's words and activates no cue recalls nothing, with the
     reason (RecallResult.empty_reason), when the embedder knows none of its words whole but stop words
     (word-piece fragments: no meaning to compare; memory.recall.has_meaning) or its best key cosine is below
     recall.min_similarity;
  3. optionally, the LLM's expand-or-stop decision on the top conversation tags (memory/expand.py);
  4. the garden's facts of the question as they stood at `at` (memory/recall_facts.py).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, time
from typing import TYPE_CHECKING

import numpy as np

from clients.embedders import Embedder
from contracts.errors import ChatmemError, ConfigError
from memory.answer import Answer, RequestLike, to_contract
from memory.candidates import prepare, ranked
from memory.index import Array, MemoryIndex, key_embedder
from memory.index_store import open_index, store_index
from memory.key_model import STATIC, for_run, with_model
from memory.recall import Ranking, embed_query, has_meaning, select, to_result
from memory.recall_facts import question_facts
from memory.text import terms
from staging.db import connect_readonly, read_snapshot
from staging.llm_calls import CallRecorder
from staging.memory import latest_run

if TYPE_CHECKING:
    from contracts.memory import RecallRequest, RecallResult
    from contracts.settings import RecallSettings, Settings


@dataclass
class Memory:
    settings: Settings
    index: MemoryIndex
    embedder: Embedder | None  # None: no dense scores (a hand-made memory in a test)

    @classmethod
    def open(
        cls, settings: Settings, run_id: str | None = None, *, quick_start: bool = True, facts: bool = True
    ) -> Memory:
        """The latest (or the given) cues run; ChatmemError (exit 1) when the data dir has none. The index is the
        one stored under the data dir (memory/index_store.py), built and stored on the first open of a run.
        `quick_start` (the default): a query is embedded by the unoptimised session (clients.embedders.OnnxMiniLM),
        whoever asks: `chatmem recall`, the MCP server and the run that stores the index then give the same answer
        bit for bit (the optimised session's vectors differ by ~1e-7, enough to move a rounded score). `facts=False`:
        the index without the garden's facts (index_store.open_index); a run that only stores it calls `store`."""
        settings, embedder, index = _open(settings, run_id, quick_start=quick_start, facts=facts)
        assert index is not None  # only a store returns none
        if index.size >= settings.recall.prepass_from:
            prepare(index)  # the pre-pass tables now, not on the first recall
        return cls(settings, index, embedder)

    @staticmethod
    def store(settings: Settings, run_id: str | None = None) -> None:
        """Build and store the latest (or the given) cues run's index unless it is stored already, and keep none of
        it in memory: what a run does for the first recall after it (flows/pipeline.py)."""
        _open(settings, run_id, quick_start=True, facts=False, store_only=True)

    def recall(self, request: RecallRequest, on_call: CallRecorder | None = None) -> RecallResult:
        """Reconstruct a context (the contract: the MCP tools, `--json`); see `answer`."""
        return to_contract(self.answer(request, on_call))

    def answer(self, request: RequestLike, on_call: CallRecorder | None = None) -> Answer:
        """Reconstruct a context; a scope that names nothing in the memory is a ConfigError (one line), not an
        empty answer that looks like "nothing was ever said about it"."""
        check_scope(self.index, request)
        settings = self.settings.recall
        vector = embed_query(self.embedder, request.query, self.index.names) if self.embedder is not None else None
        view, ranking, _ = ranked(self.index, request.query, vector, request, settings, limit=limit(request))
        result = to_result(view, request, ranking, settings)
        # recall.fact_weight 0 turns the facts off: in the ranking, and in the answer (CLI, --json and MCP alike)
        facts, changes = question_facts(self.index, request) if settings.fact_weight > 0 else ([], [])
        reason = empty_reason(
            view, ranking, vector, settings, self.embedder, request.query, scope=scope_words(request), at=request.at
        )
        if reason is not None:
            result = replace(result, pieces=[], tokens=0, empty_reason=reason, weak_reason=None, budget_note=None)
        elif settings.expand_with_llm and result.pieces:  # every LLM call goes to `on_call` (llm_calls rows)
            from memory.expand import expand  # the openai SDK: only a recall that asks the LLM pays its import

            chosen = select(view, ranking, request.budget_tokens, request.max_pieces)
            llm = self.settings.extract.llm
            changed, outcome = expand(view, ranking, chosen, request.query, settings, llm, on_call)
            if changed is not None:
                result = to_result(view, request, changed, settings)
            result = replace(result, expansion=outcome)
        return replace(result, facts=facts, fact_changes=changes)


def limit(request: RequestLike) -> int:
    """How many of the best candidates need an order: enough for the budget's pieces, and those skipped."""
    return max(8 * request.max_pieces, 1000)


def empty_reason(
    index: MemoryIndex,
    ranking: Ranking,
    vector: Array | None,
    settings: RecallSettings,
    embedder: Embedder | None = None,
    query: str = "",
    *,
    scope: str = "",
    at: datetime | None = None,
) -> str | None:
    """Why the recall should return nothing, or None. Dense scores are rescaled per query (the best candidate
    always scores 1), so without this floor a query about nothing in the memory still fills the budget.

    With no lexical or cue evidence, only the dense score is left, and it means something only for words the
    embedder knows: a query spelled entirely from word-piece fragments ("zxqv blorpt") averages to a vector near
    every key (cosine 0.44-0.58 with the static embedder, above any sane floor), so it recalls nothing.

    `scope` (scope_words) and `at`: a recall limited to part of the memory says that the part matched nothing,
    naming it, not that the memory holds nothing of the kind (the words may well be elsewhere in it)."""
    before = f" before {_when(at)}" if at is not None else ""
    if ranking.candidates == 0:
        if scope:
            return f"nothing in scope: the scope ({scope}) matches no content{before} to recall from"
        return f"nothing in scope: no content{before or ' in the memory'} to recall from"
    if float(ranking.lexical.max(initial=0.0)) > 0 or ranking.cue_activation:
        return None
    nothing = f"nothing relevant in the scope ({scope})" if scope else "nothing relevant"
    keys = "the scope's keys" if scope else "the memory's keys"
    if not terms(query):
        return f"{nothing}: the query has no word to search for (only stop words or single letters) and no cue matched"
    if embedder is not None and not has_meaning(embedder, query):
        return (
            f"{nothing}: no word of the query occurs in {keys}, no cue matched, and the embedder "
            "knows none of its words whole but stop words (the others are only word-piece fragments, so its "
            "similarity means nothing)"
        )
    best = -1.0
    if vector is not None and index.dense.shape[0]:
        j = int(np.argmax(ranking.dense))
        best = float(index.dense[j] @ np.asarray(vector, dtype=np.float32))
    if best >= settings.min_similarity:
        return None
    return (
        f"{nothing}: no word of the query occurs in {keys}, no cue matched, and the closest key's "
        f"similarity ({best:.2f}) is below recall.min_similarity ({settings.min_similarity:.2f})"
    )


def scope_words(request: RequestLike) -> str:
    """The request's scope as `--scope` values ("conversation:etl, since:2024-06-01"); "" when it has none."""
    scope = request.scope
    parts = [f"conversation:{c}" for c in scope.conversation_ids] + [f"source:{s}" for s in scope.sources]
    parts += [f"{name}:{_when(value)}" for name, value in (("since", scope.since), ("until", scope.until)) if value]
    return ", ".join(parts)


def _when(moment: datetime) -> str:
    """A day's first or last instant as the day (what `--scope until:2024-01-01` became), else to the minute."""
    if moment.time() in (time.min, time.max):
        return moment.date().isoformat()
    return moment.isoformat(timespec="minutes")


def check_scope(index: MemoryIndex, request: RequestLike) -> None:
    scope = request.scope
    unknown = [c for c in scope.conversation_ids if c not in index.conversation_code]
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


def _open(
    settings: Settings, run_id: str | None, *, quick_start: bool, facts: bool, store_only: bool = False
) -> tuple[Settings, Embedder, MemoryIndex | None]:
    """The settings of the run chosen, its key embedder and its index (index_store.open_index)."""
    try:
        archive = connect_readonly(settings.archive_path)
        staging = connect_readonly(settings.staging_path)
    except FileNotFoundError:  # the words of the CLI's read-only commands (flows/cli_data.py)
        missing = (settings.staging_path if settings.archive_path.exists() else settings.archive_path).name
        raise ChatmemError(
            f"nothing in {settings.data_dir} yet ({missing} does not exist): run `chatmem run EXPORT` first, or point"
            " --data-dir / CHATMEM_DATA_DIR at an existing data dir"
        ) from None
    try:
        # the run chosen and its index read from one snapshot (a cues run's prune may commit meanwhile)
        with read_snapshot(staging), read_snapshot(archive):
            run_id = run_id or latest_run(staging)
            if run_id is not None:  # queries are embedded by the model the run's keys were (memory/key_model.py)
                settings = for_run(settings, staging, run_id)
            chosen = with_model(settings, STATIC) if run_id is None else settings
            embedder = key_embedder(chosen, quick_start=quick_start)
            if store_only:
                store_index(archive, staging, settings, embedder, run_id=run_id)
                index = None
            else:
                index = open_index(archive, staging, settings, embedder, run_id=run_id, facts=facts)
    finally:
        archive.close()
        staging.close()
    return settings, embedder, index
