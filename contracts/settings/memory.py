"""The cues stage's settings: how the Cue-Tag-Content graph is built (recall's are in recall.py)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class MemorySettings(BaseModel):
    """The Cue-Tag-Content graph the cues stage builds (its fingerprint covers these; recall's are `recall`)."""

    model_config = ConfigDict(extra="forbid")

    hub_share: float = Field(
        default=0.05,
        gt=0,
        le=1,
        description="A cue linked to more than this share of all content is a hub: its weight is down-weighted "
        "by IDF and it stops spreading to tags.",
    )
    hub_min_content: int = Field(
        default=20, ge=1, description="A cue needs at least this many content links to count as a hub at all."
    )
    rebuild_share: float = Field(
        default=0.1,
        ge=0,
        description="A cues run rebuilds only the conversations new, changed or gone since the previous run and "
        "shares the rest with it, the global counts (message count behind the IDFs, hubs) kept from the last full "
        "build, until either reaches this share: the conversations the run changes, of all conversations (a full "
        "build is then cheaper), or the messages added and removed since the last full build, of that build's "
        "message count (its counts are then stale). Then it builds everything. 0: always in full; above 1, no "
        "run's change alone forces a full build, only an archive grown by more than that share since it.",
    )
    prune_runs: bool = Field(
        default=True,
        description="After a cues run, forget older runs' memory (all but the new run, the run of the stored "
        "recall index and the run a graph target last loaded) and delete the rows only they saw: memory rows are "
        "shared across runs, so staging.db holds the current memory once plus what changed since the oldest kept "
        "run (docs/runs.md).",
    )
    keyphrases_per_content: int = Field(
        default=6,
        ge=0,
        description="Phrases linked as cues per content node beyond its concept evidence: the archive's concept "
        "titles (several words, or a name with inner capitals or digits) said in the message, most said first. "
        "Cues are these cased phrases, never single word stems (those only re-scored BM25 over the keys).",
    )
    phrase_weight: float = Field(
        default=0.5, ge=0, le=1, description="Weight of a cue -> content link made by a phrase said, not by evidence."
    )
    hypernym_depth: int = Field(
        default=5,
        ge=0,
        le=8,
        description="Category cues from WordNet: hypernyms up to this many steps above a concept's head noun "
        "('golden retriever' -> retriever, ..., dog, domestic animal), linked to the concept's content, so a "
        "question that names the category ('pet', 'health device') reaches the instance. 0: none.",
    )
    hypernym_weight: float = Field(
        default=0.5,
        ge=0,
        le=1,
        description="A category cue's link weight relative to its concept's, one step up; x0.8 per further step.",
    )
    wordnet_dir: str | None = Field(
        default="/usr/share/wordnet",
        description="WordNet 3.0 database files (index.noun, data.noun: Debian's wordnet-base package). Absent: no "
        "category cues (the cues run says so in its notes, and rebuilds when it appears).",
    )
    consolidate_threshold: float = Field(
        default=0.95,
        gt=0,
        le=1,
        description="Content in one conversation and one day whose key texts have at least this token Jaccard "
        "similarity and the same cues is merged into one node pointing at its originals.",
    )
    key_roles: list[str] = Field(
        default_factory=lambda: ["user", "other"],
        description="Roles whose messages are full-weight keys (the user's side of the conversation, where "
        "what a person said lives); other roles' messages are content too, at `other_role_weight`.",
    )
    key_embedder: Literal["auto", "embed", "minilm-onnx"] = Field(
        default="auto",
        description="What embeds content keys and queries: 'embed', the default embedder (static: nothing slow to "
        "compute); 'minilm-onnx', the full MiniLM model on the key roles' messages (cached by text; ~50x slower per "
        "key, LoCoMo evidence_recall@10 0.856 vs 0.797, benchmarks/RESULTS.md); 'auto', the full model when its "
        "estimated cost on this archive's key-role messages fits full_key_budget_s, else 'embed'. The cues run "
        "records the choice (memory_runs summary, stage notes); queries and the recall index follow it.",
    )
    full_key_budget_s: float = Field(
        default=120.0,
        ge=0,
        description="CPU seconds the full model may take to embed every key (estimated before anything is embedded: "
        "keys x full_key_ms_per_key + word pieces x full_key_ms_per_piece) for 'auto' to choose it. 120: a tenth of "
        "the 20-minute budget of a 46k-turn archive on 2 cores (~7k user turns: a few hundred conversations); "
        "0: never.",
    )
    full_key_ms_per_key: float = Field(
        default=2.0, ge=0, description="CPU ms per key of the full model, fixed part (benchmarks/bench_key_cost.py)."
    )
    full_key_ms_per_piece: float = Field(
        default=0.3, ge=0, description="CPU ms per word piece the full model reads (benchmarks/bench_key_cost.py)."
    )
    key_max_tokens: int = Field(
        default=128, ge=8, le=512, description="Word pieces of a key the full model reads (minilm-onnx only)."
    )
    expand_keys: bool = Field(
        default=True, description="Append each content node's cue names (extracted concepts) to its key text."
    )
