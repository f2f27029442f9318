"""The settings of the segment, extract, concepts and garden stages."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from contracts.settings.llm import LLMSettings


class SegmentSettings(BaseModel):
    """How each conversation's active path is cut into segments (token budget and lexical topic shifts)."""

    model_config = ConfigDict(extra="forbid")

    max_tokens: int = Field(
        default=1500,
        ge=16,
        description="Token budget of one segment (estimate: ceil(characters / 4)); a longer message stays whole.",
    )
    min_tokens: int = Field(
        default=300, ge=0, description="A topic shift starts a new segment only once the current one has this many."
    )
    window: int = Field(default=2, ge=1, description="Messages on each side compared when looking for a shift.")
    shift_threshold: float = Field(
        default=0.1,
        ge=0,
        le=1,
        description="Keyword cosine between the windows below which a topic shift is declared (0 turns it off).",
    )


class ExtractSettings(BaseModel):
    """Which extractor proposes ConceptHypothesis objects per segment: offline (default) or an LLM."""

    model_config = ConfigDict(extra="forbid")

    llm: LLMSettings | None = Field(
        default=None,
        description="An OpenAI-compatible endpoint; unset: the offline extractor (deterministic, no model). "
        "Set e.g. CHATMEM_EXTRACT__LLM__MODEL and CHATMEM_EXTRACT__LLM__BASE_URL.",
    )
    batch_size: int = Field(
        default=64, ge=1, description="Segments handed to the extractor at once and written per transaction."
    )
    offline_max_concepts: int = Field(
        default=6,
        ge=1,
        description="Most hypotheses the offline extractor proposes for one segment (past the fifth, only terms the"
        " user says), and then up to two names more, each citing one span (extract/offline.py NAMES_PAST_CAP).",
    )


class ConceptsSettings(BaseModel):
    """The concept loop: how hypotheses are resolved against the concept store, and when states change."""

    model_config = ConfigDict(extra="forbid")

    reject_below: float = Field(
        default=0.2, ge=0, le=1, description="Hypotheses with a lower confidence are rejected, not stored."
    )
    weak_below: float = Field(default=0.5, ge=0, le=1, description="A concept with a lower confidence is weak.")
    weak_min_evidence: int = Field(
        default=2, ge=1, description="A concept with fewer evidence spans than this is weak (thin evidence)."
    )
    fuzzy_threshold: float = Field(
        default=0.85, ge=0, le=1, description="difflib ratio of normalised titles at or above which two names match."
    )
    similarity: Literal["char-ngram", "embedding"] = Field(
        default="char-ngram",
        description="Similarity used after exact and fuzzy matching, behind the word veto: char-ngram (cosine of "
        "character 3-grams) or embedding (cosine of the names' vectors under the embed settings, cached in "
        "staging.db; names of different lengths may then match too, at longer_similarity_threshold).",
    )
    similarity_threshold: float = Field(
        default=0.8, ge=0, le=1, description="Similarity at or above which two names of one type match."
    )
    longer_similarity_threshold: float = Field(
        default=0.9,
        ge=0,
        le=1,
        description="similarity=embedding only: the bar for two names whose word counts differ (one adds "
        "trailing words) and that pass the veto.",
    )
    split_min_segments: int = Field(
        default=2, ge=1, description="A concept seen as two types, each in this many segments, is split in two."
    )
    batch_size: int = Field(default=500, ge=1, description="Hypotheses resolved per write transaction.")


class GardenSettings(BaseModel):
    """The garden stage: fact validity, and which concepts are archived as stale (measured per source)."""

    model_config = ConfigDict(extra="forbid")

    stale_after_days: int | None = Field(
        default=365,
        ge=1,
        description="Archive an active concept whose last evidence in every source it appears in is this much older "
        "than that source's newest message; null: never.",
    )
    weak_stale_after_days: int | None = Field(
        default=180,
        ge=1,
        description="The same for a weak concept (thin or unconfident evidence), which fades sooner; null: never.",
    )
    keep_per_conversation: int = Field(
        default=5,
        ge=0,
        description="A conversation's this many best-evidenced concepts are never archived as stale: what a "
        "conversation in the archive is about stays in the graph (only what it touched on fades; five, as the "
        "extractor's open ranks per segment); 0: staleness alone decides.",
    )
    keep_said_by_user: bool = Field(
        default=True,
        description="A concept with evidence in the user's own messages is never archived as stale: a subject is not "
        "false because it is old, and what the user brought up is what is asked about later; age fades only what "
        "replies alone touched on. false: the kept concepts and staleness alone decide.",
    )
