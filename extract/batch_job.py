"""The extract stage's task for another runner (a Dask worker): a batch of segments -> one result per segment,
in the batch's order, with the LLM attempts made for each.

The worker builds its own extractor from the extract settings (the offline rules, or an `LLMExtractor` with no
call recorder: the attempts come back with the results and the stage process records them, and spends them
against the budget, in batch order). Pickled, the job keeps the settings' public dump only; an LLM endpoint's
key or URL credentials are read again from the worker's own CHATMEM_* environment (clients.batches.unship).
A worker whose extractor would key its extractions differently (another model, prompt or rules version) is
refused rather than let it write answers under the run's cache keys.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from clients.batches import shippable, unship
from clients.gc_pace import fewer_collections
from contracts.errors import ConfigError
from contracts.settings import ExtractSettings, Settings
from extract.mapper import KnownNames, MapperDecision, map_raw_hypotheses
from extract.offline import OfflineExtractor
from extract.types import ExtractionFailure, ExtractionOutput, Extractor, SegmentInput
from staging.llm_calls import LLMCall

Result = ExtractionOutput | ExtractionFailure
Outcome = tuple[Result, list[LLMCall]]  # a segment's result and the LLM attempts it took (none offline)


@dataclass(slots=True)
class MappedOutput(ExtractionOutput):
    """An offline output already passed through the semantic mapper with the run's known concepts: the stage
    stores `hypotheses` and `decisions` as they are (as it does an LLM output's)."""

    decisions: list[MapperDecision] = field(default_factory=list)


class ExtractJob:
    """Segments -> outcomes, in order; see the module docstring."""

    def __init__(self, settings: ExtractSettings, known_concepts: Mapping[str, str], key_parts: Sequence[str]) -> None:
        self.settings = settings
        self.known_concepts = KnownNames(known_concepts)  # folded once per worker, not once per segment
        self.key_parts = tuple(key_parts)
        self._extractor: Extractor | None = None

    def __call__(self, segments: Sequence[SegmentInput]) -> list[Outcome]:
        extractor = self._worker_extractor()
        if isinstance(extractor, OfflineExtractor):
            with fewer_collections():  # the worker's share of the stage's short-lived objects (clients/gc_pace.py)
                return [(self._mapped(extractor.extract(s), s), []) for s in segments]
        one: Callable[[SegmentInput], Outcome] = extractor.extract_one  # type: ignore[attr-defined]
        llm = self.settings.llm
        workers = llm.max_concurrency if llm is not None else 1
        with ThreadPoolExecutor(workers, thread_name_prefix="chatmem-llm") as pool:
            return list(pool.map(one, segments))  # in the batch's order, whatever order the replies came in

    def _mapped(self, output: ExtractionOutput, segment: SegmentInput) -> MappedOutput:
        """The offline output as the stage would map it against the known concepts (extract.stage_extract._row),
        mapped here: the mapper is a fifth of the stage's work, and the stage's process is the one that writes."""
        raw = {"hypotheses": [h.model_dump(mode="json") for h in output.hypotheses]}
        hypotheses, decisions = map_raw_hypotheses(raw, segment, self.known_concepts)
        return MappedOutput(hypotheses=hypotheses, usage=output.usage, facts=output.facts, decisions=decisions)

    def _worker_extractor(self) -> Extractor:
        if self._extractor is None:
            extractor = build_worker_extractor(self.settings, self.known_concepts)
            if tuple(extractor.cache_key_parts) != self.key_parts:
                raise ConfigError(
                    f"this worker's extractor keys extractions as {extractor.cache_key_parts}, the run's as"
                    f" {self.key_parts}: give the workers the same chatmem version and CHATMEM_EXTRACT__* settings"
                )
            self._extractor = extractor
        return self._extractor

    def __getstate__(self) -> dict[str, Any]:
        public, from_env = shippable(self.settings)
        return {"public": public, "from_env": from_env, "known": self.known_concepts, "parts": self.key_parts}

    def __setstate__(self, state: dict[str, Any]) -> None:
        pick: Callable[[Settings], ExtractSettings] = lambda s: s.extract  # noqa: E731
        self.settings = unship(ExtractSettings, state["public"], state["from_env"], pick, "the extract stage")
        self.known_concepts, self.key_parts, self._extractor = state["known"], state["parts"], None


def build_worker_extractor(settings: ExtractSettings, known_concepts: Mapping[str, str]) -> Extractor:
    """The extractor a worker runs: the one the stage would build, minus the call recorder (no staging here)."""
    if settings.llm is None:
        return OfflineExtractor(settings.offline_max_concepts)
    module = importlib.import_module("extract.llm")  # lazily, as the stage does: offline runs never load openai
    extractor: Extractor = module.LLMExtractor(settings.llm, known_concepts=known_concepts, on_call=None)
    return extractor
