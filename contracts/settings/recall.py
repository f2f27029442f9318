"""Recall's settings: read by recall, the MCP server and the evaluation, never by a stage."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from contracts.memory import MAX_BUDGET_TOKENS

RECALL_FIELDS = (
    "decay_lambda_per_day",
    "theta",
    "max_depth",
    "budget_tokens",
    "other_role_weight",
    "next_weight",
    "session_prior",
    "day_prior",
    "hop_weight",
    "reply_weight",
    "speaker_prior",
    "session_lexical_weight",
    "session_dense_weight",
    "session_best_weight",
    "session_best_turns",
    "cue_weight",
    "cue_content_weight",
    "dense_weight",
    "lexical_weight",
    "fact_weight",
    "time_filter",
    "out_of_range_factor",
    "prepass_from",
    "prepass_top",
    "prepass_max_candidates",
    "min_similarity",
    "expand_with_llm",
    "expand_tags",
    "expand_pieces",
)
"""The fields that moved from `memory` to `recall`: CHATMEM_MEMORY__<FIELD> still sets them (Settings moves them)."""


class RecallSettings(BaseModel):
    """Active recall over the memory: read by recall, the MCP server and the evaluation only, never by a stage, so
    changing one rebuilds nothing (no stage's fingerprint covers this section)."""

    model_config = ConfigDict(extra="forbid")

    decay_lambda_per_day: float = Field(
        default=0.002,
        ge=0,
        description="λ of the temporal decay on tag -> content edges: w = sim * exp(-λ * days before `at`).",
    )
    theta: float = Field(
        default=0.4,
        ge=0,
        le=1,
        description="Activation spreading beyond a cue or tag whose combined path score (relative to the best) "
        "falls below this is pruned.",
    )
    max_depth: int = Field(default=3, ge=1, le=3, description="Hops of spreading activation: query->cue->tag->content.")
    budget_tokens: int = Field(
        default=2000, ge=1, le=MAX_BUDGET_TOKENS, description="Default token budget of a recalled context."
    )
    other_role_weight: float = Field(
        default=0.5, ge=0, le=1, description="Direct-match weight of content whose role is not in key_roles."
    )
    next_weight: float = Field(
        default=0.2,
        ge=0,
        description="Share of a neighbour's direct activation passed along NEXT/PREV (an answer often sits in "
        "the turn after the one that matches).",
    )
    session_prior: float = Field(
        default=0.5,
        ge=0,
        description="Weight of a conversation tag's activation (session keys and best turns, memory/session.py) fed "
        "back to its content.",
    )
    day_prior: float = Field(default=0.1, ge=0, description="Same, for day tags (temporal decay applies).")
    hop_weight: float = Field(
        default=0.1,
        ge=0,
        description="Weight of the second hop: the best first-hop content's cues -> the other content they link "
        "(memory.recall.second_hop).",
    )
    reply_weight: float = Field(
        default=0.5,
        ge=0,
        description="Share of a question's activation (a message with a '?') passed along NEXT to the message that "
        "replies to it (next_weight when lower): an answer is the reply to the turn that asks.",
    )
    speaker_prior: float = Field(
        default=0.3,
        ge=0,
        description="A speaker tag the query names (a person's name, memory/names.py) weighs that person's content "
        "1 + this times.",
    )
    session_lexical_weight: float = Field(
        default=1.0,
        ge=0,
        description="Weight, in a conversation tag's activation, of BM25 over the conversation read as one key "
        "(its key-role messages' keys; memory/session.py).",
    )
    session_dense_weight: float = Field(
        default=1.0,
        ge=0,
        description="Weight, in a conversation tag's activation, of the query against the conversation's key vector "
        "(the mean of its key-role message vectors).",
    )
    session_best_weight: float = Field(
        default=1.0,
        ge=0,
        description="Weight, in a conversation tag's activation, of its best turns' direct scores (the session "
        "prior from its best turns).",
    )
    session_best_turns: int = Field(
        default=2, ge=1, le=2, description="How many best turns (their mean) score a conversation: 1 is max pooling."
    )
    cue_weight: float = Field(
        default=0.3,
        ge=0,
        description="Weight of cue activation (query -> cue -> conversation tag) in a conversation tag's activation.",
    )
    cue_content_weight: float = Field(
        default=0.0,
        ge=0,
        description="Weight of the query's cues straight to their content (query -> cue -> content) in a content's "
        "score. 0: a query's words already count once in BM25 over the keys (keyphrase cues are those words); "
        "0.3 measured -0.01 to -0.05 evidence_recall@10 on LoCoMo (benchmarks/RESULTS.md).",
    )
    dense_weight: float = Field(default=1.0, ge=0, description="Weight of the query-to-key embedding similarity.")
    lexical_weight: float = Field(default=1.0, ge=0, description="Weight of BM25 over cue-expanded content keys.")
    # 0.25 since session 15: at 1.0 a message stating a fact that shares one word with the question outranked the
    # lexical and dense evidence together (each scaled 0..1), and the facts cost both dev sets (LongMemEval
    # recall_all@5 0.854 with them, 0.875 without; LoCoMo @10 0.854 / 0.861); at 0.25 a fact tips close calls
    # (0.875, ndcg@10 0.909; LoCoMo 0.858), and the current statement of a fact still ranks above a superseded one
    # whatever the weight (memory/fact_boost.py).
    fact_weight: float = Field(
        default=0.25,
        ge=0,
        description="Score added to content that states a fact of the question (the garden's facts): the full "
        "weight when the fact holds at `at`, half when a newer statement superseded it; 0: facts play no part.",
    )
    time_filter: bool = Field(
        default=True,
        description="An explicit time expression in the query ('last week', 'in May 2023') moves content outside "
        "that range down (never out); without one, nothing changes.",
    )
    out_of_range_factor: float = Field(
        default=0.6,
        ge=0,
        le=1,
        description="Score multiplier of content outside an explicit time range (inside a range around a named "
        "moment, 'four weeks ago', it falls from 1 at the moment to this at the range's edge).",
    )
    prepass_from: int = Field(
        default=50_000,
        ge=0,
        description="Content in the memory from which recall first picks candidates (BM25 postings, k-means lists "
        "of the key vectors, the query's cues) and activates only them and their conversations (memory/candidates.py)"
        "; below it every content node is scored.",
    )
    prepass_top: int = Field(
        default=300, ge=1, description="Candidates the pre-pass takes from each of BM25, key similarity and cues."
    )
    prepass_max_candidates: int = Field(
        default=6_000,
        ge=1,
        description="Most content the pre-pass hands to activation (whole conversations); a scope with no more "
        "than this in it is taken whole.",
    )
    min_similarity: float = Field(
        default=0.35,
        ge=-1,
        le=1,
        description="Relevance floor: a query none of whose words occur in any key in scope, activating no cue, "
        "and whose best raw key cosine is below this, recalls nothing (an empty result with the reason); such a "
        "query made only of words the MiniLM embedders split into word-piece fragments recalls nothing whatever "
        "its cosine.",
    )
    expand_with_llm: bool = Field(
        default=False,
        description="After the first pass, ask the extraction LLM (extract.llm settings) whether to expand each "
        "top conversation tag (read more of it) or stop; off or with no LLM configured: the deterministic default.",
    )
    expand_tags: int = Field(default=3, ge=0, le=10, description="Top conversation tags the expand step decides on.")
    expand_pieces: int = Field(
        default=4, ge=0, le=50, description="Pieces an expanded tag adds (its best content not already recalled)."
    )
    key_roles: list[str] = Field(
        default_factory=lambda: ["user", "other"],
        exclude=True,  # not dumped: Settings.model_validate(settings.model_dump()) must not set it
        description="The roles whose keys recall weighs in full: always memory.key_roles (copied from it when the "
        "settings are read; set memory.key_roles, not this).",
    )
