"""Settings: one pydantic-settings object with a section per stage.

Nothing reads the environment at import time: call `Settings()` (or `load_settings`) when you need values.
Environment variables use the prefix `CHATMEM_` and `__` between section and field, for example
`CHATMEM_INGEST__BATCH_SIZE=5000`; `CHATMEM_DATA_DIR` sets the data directory.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr
from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from contracts.memory import MAX_BUDGET_TOKENS
from contracts.redact import redact, remember_environment_secrets, remember_secret, remember_uri_secrets
from contracts.redact import redact_uri as redact_uri  # re-exported: older callers import it from here

DEFAULT_DATA_DIR = Path(".chatmem")


class IngestSettings(BaseModel):
    """How export files are read and written to the archive."""

    model_config = ConfigDict(extra="forbid")

    batch_size: int = Field(default=2000, ge=1, description="Conversations written to archive.db per transaction.")
    max_zip_member_bytes: int = Field(
        default=8 * 1024**3,
        ge=1,
        description="Largest uncompressed size accepted for one zip member (zip-bomb guard).",
    )
    max_zip_ratio: float = Field(
        default=200.0,
        gt=1,
        description="Largest accepted uncompressed/compressed ratio for a zip member (zip-bomb guard).",
    )
    max_raw_quarantine_bytes: int = Field(
        default=1_000_000,
        ge=1024,
        description="Raw text kept per quarantine row; larger records are truncated with a marker.",
    )


class LLMSettings(BaseModel):
    """The LLM extractor: any OpenAI-compatible endpoint (OpenAI, Ollama, vLLM, LM Studio, llama.cpp).

    The API key is a secret: it is never logged, never written to staging, and masked in every dump. When it
    is unset, the OPENAI_API_KEY environment variable is used (read when the extractor is built).
    """

    model_config = ConfigDict(extra="forbid")

    base_url: str | None = Field(
        default=None,
        description="Endpoint, e.g. http://localhost:11434/v1 for Ollama; unset: OPENAI_BASE_URL or OpenAI's API.",
    )
    model: str = Field(min_length=1, description="Model name as the endpoint knows it, e.g. gpt-5-mini, qwen3:8b.")
    api_key: SecretStr | None = Field(
        default=None, description="API key (secret); unset: OPENAI_API_KEY. Local servers accept any value."
    )
    reasoning_effort: Literal["none", "minimal", "low", "medium", "high"] | None = Field(
        default="low", description="reasoning_effort sent to the model; null: not sent (for servers that reject it)."
    )
    api: Literal["chat", "responses"] = Field(
        default="chat", description="chat: /v1/chat/completions; responses: /v1/responses (OpenAI only)."
    )
    structured_output: Literal["json_schema", "json_object"] = Field(
        default="json_schema",
        description="json_schema: strict structured outputs; json_object: {type: json_object, schema} for servers "
        "without json_schema support (llama.cpp's server). The schema is the same strict one either way.",
    )
    timeout_s: float = Field(default=120.0, gt=0, description="Seconds to wait for one reply before retrying it.")
    connect_timeout_s: float = Field(
        default=5.0,
        gt=0,
        description="Seconds to wait for the connection itself (capped by timeout_s): a dead host fails fast.",
    )
    max_concurrency: int = Field(default=4, ge=1, description="Requests in flight at once.")
    max_retries: int = Field(
        default=4, ge=0, description="Retries of one request after a transient error (429, 5xx, timeout, connection)."
    )
    retry_backoff_s: float = Field(default=1.0, ge=0, description="First retry delay; doubles on each retry.")
    retry_backoff_max_s: float = Field(
        default=60.0, ge=0, description="Longest delay between retries (also caps a server's retry-after)."
    )
    temperature: float | None = Field(default=None, ge=0, le=2, description="Sampling temperature; null: not sent.")
    seed: int | None = Field(default=None, description="Sampling seed; null: not sent.")
    max_output_tokens: int | None = Field(
        default=None,
        ge=1,
        description="Cap on output tokens; null: not sent. Sent as max_completion_tokens (json_schema mode) or "
        "max_tokens (json_object mode, for llama.cpp); small models ramble without it.",
    )
    token_budget: int | None = Field(
        default=None, ge=1, description="Stop starting new calls once this many tokens (in + out) are spent in a run."
    )
    cost_budget_usd: float | None = Field(
        default=None, gt=0, description="Stop starting new calls once this cost is reached (needs both prices)."
    )
    input_usd_per_mtok: float | None = Field(
        default=None, ge=0, description="Price of 1M input tokens, for the cost budget."
    )
    output_usd_per_mtok: float | None = Field(
        default=None, ge=0, description="Price of 1M output (incl. reasoning) tokens, for the budget."
    )
    batch_api: bool = Field(
        default=False, description="Submit the segments as one OpenAI Batch API job (cheaper, slower backfills)."
    )
    batch_poll_s: float = Field(default=30.0, gt=0, description="Seconds between polls of a submitted batch.")
    batch_max_wait_s: float = Field(
        default=24 * 3600.0, gt=0, description="Give up waiting for a batch after this long (it keeps running)."
    )

    def model_post_init(self, context: Any, /) -> None:
        """Secrets are remembered as soon as they are read, so every writer masks them (contracts.redact)."""
        remember_secret(self.api_key.get_secret_value() if self.api_key else None)
        remember_uri_secrets(self.base_url)


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
        default=5, ge=1, description="Most hypotheses the offline extractor proposes for one segment."
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


class EmbedEndpointSettings(BaseModel):
    """An OpenAI-compatible embeddings endpoint (OpenAI, Ollama, vLLM, LM Studio, llama.cpp): POST /embeddings.

    The API key is a secret: never logged, never written to staging. Unset: OPENAI_API_KEY, read when the
    embedder is built.
    """

    model_config = ConfigDict(extra="forbid")

    base_url: str = Field(
        min_length=1, description="Endpoint base, e.g. http://localhost:11434/v1 (POST {base}/embeddings)."
    )
    model: str = Field(min_length=1, description="Embedding model name as the endpoint knows it.")
    api_key: SecretStr | None = Field(default=None, description="API key (secret); unset: OPENAI_API_KEY, or none.")
    timeout_s: float = Field(default=60.0, gt=0, description="Seconds to wait for one reply.")
    max_retries: int = Field(default=3, ge=0, description="Retries of one request after a 429, a 5xx or a timeout.")

    def model_post_init(self, context: Any, /) -> None:
        """Secrets are remembered as soon as they are read, so every writer masks them (contracts.redact)."""
        remember_secret(self.api_key.get_secret_value() if self.api_key else None)
        remember_uri_secrets(self.base_url)


class EmbedSettings(BaseModel):
    """How messages, segments and concepts are embedded (cached by text hash and model in staging.db)."""

    model_config = ConfigDict(extra="forbid")

    backend: Literal["minilm-static", "minilm-onnx", "endpoint"] = Field(
        default="minilm-static",
        description="minilm-static: static token vectors distilled once from the packaged int8 all-MiniLM-L6-v2 "
        "(fast; default); minilm-onnx: the same model run in full by onnxruntime (better, ~100x slower on CPU); "
        "endpoint: an OpenAI-compatible embeddings endpoint (set `endpoint`).",
    )
    max_tokens: int = Field(
        default=256, ge=8, le=512, description="Word pieces per text the model reads (the rest is cut; MiniLM: 256)."
    )
    batch_size: int = Field(default=32, ge=1, description="Texts per model call (texts are sorted by length first).")
    device: Literal["cpu", "cuda"] = Field(
        default="cpu", description="Where minilm-onnx runs: cuda needs onnxruntime-gpu; ignored by the other backends."
    )
    threads: int | None = Field(default=None, ge=1, description="CPU threads for onnxruntime; null: its default.")
    model_cache_dir: Path | None = Field(
        default=None,
        description="Where the distilled static table is kept (built once from the packaged model, ~20 s); "
        "null: $XDG_CACHE_HOME/chatmem or ~/.cache/chatmem.",
    )
    endpoint: EmbedEndpointSettings | None = Field(
        default=None, description="The endpoint for backend=endpoint (e.g. CHATMEM_EMBED__ENDPOINT__MODEL)."
    )
    write_batch: int = Field(default=2000, ge=1, description="Vectors written to staging.db per transaction.")


class ClusterSettings(BaseModel):
    """Topic clustering: UMAP then HDBSCAN on segment embeddings, hyper-parameters tuned by Optuna on a sample."""

    model_config = ConfigDict(extra="forbid")

    seed: int = Field(default=42, description="Seed of the sample, UMAP, the Optuna sampler: same seed, same topics.")
    min_points: int = Field(
        default=30, ge=3, description="Fewer segments than this: clustering is skipped with a note (nothing to tune)."
    )
    n_trials: int | None = Field(
        default=None,
        ge=1,
        description="Optuna trials per study (a re-run reuses finished ones); null: 30 under a time cap that "
        "grows with the segments (cluster.tuning.budget); set: all of them run unless timeout_s is set too.",
    )
    sample_size: int = Field(default=20000, ge=10, description="Points Optuna tunes on (a seeded random sample).")
    fit_max: int = Field(
        default=50000,
        ge=10,
        description="Most points the final UMAP + HDBSCAN is fitted on; the rest are placed by UMAP transform "
        "and HDBSCAN approximate_predict.",
    )
    noise_weight: float = Field(
        default=0.5, ge=0, description="Objective: weight of the outlier share subtracted (cluster/objective.py)."
    )
    count_weight: float = Field(
        default=0.5, ge=0, description="Objective: weight of the shortfall below min_topics (when that is set)."
    )
    min_topics: int | None = Field(
        default=None, ge=2, description="Objective: topics below which a result is penalised; null: no floor."
    )
    outlier_quantile: float | None = Field(
        default=0.1,
        ge=0,
        le=1,
        description="A noise point joins its nearest topic when its cosine to the topic centre is at least this "
        "quantile of the members' own cosines; null: noise stays noise.",
    )
    timeout_s: float | None = Field(
        default=None,
        gt=0,
        description="Stop starting Optuna trials after this long (never before the 10th); null, with scaled "
        "n_trials: 60 s + 20 ms per sampled segment, at most 900 s.",
    )
    refit_share: float = Field(
        default=0.1,
        ge=0,
        le=1,
        description="Below this share of segments new, changed or retired since the saved topic model was fitted, "
        "a run places the new segments in that model's topics (no tuning, no refit: cost follows what is new); "
        "at or above it, or with no usable saved model, the run tunes and fits again. 0: every run refits.",
    )
    keywords: int = Field(default=10, ge=1, description="c-TF-IDF phrases kept per topic (the label: the best 1-2).")
    representatives: int = Field(default=3, ge=1, description="Representative segments kept per topic.")
    label_docs: int = Field(
        default=300, ge=1, description="Most segments per topic whose text feeds c-TF-IDF (a seeded sample)."
    )
    llm_labels: bool = Field(
        default=True,
        description="When extract.llm is set, ask that endpoint for a short name per topic (cached per topic); "
        "false, or no endpoint: the label is the best c-TF-IDF phrase or two.",
    )


class MemorySettings(BaseModel):
    """The Cue-Tag-Content graph (the cues stage) and active recall over it."""

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
        le=1,
        description="Below this share of conversations new, changed or gone since the last full cues build, a cues "
        "run rebuilds only those and carries the rest from the previous run, global counts (term and cue "
        "frequencies, hubs) kept from the full build; at or above it, the run builds everything. 0: always in full.",
    )
    prune_runs: bool = Field(
        default=True,
        description="After a cues run, delete older runs' memory rows (all but the new run and the run of the "
        "stored recall index): staging.db then holds one or two copies of the memory instead of one per run.",
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
    other_role_weight: float = Field(
        default=0.5, ge=0, le=1, description="Direct-match weight of content whose role is not in key_roles."
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
    fact_weight: float = Field(
        default=1.0,
        ge=0,
        description="Score added to content that states a fact of the question (the garden's facts): the full "
        "weight when the fact holds at `at`, half when a newer statement superseded it; 0: facts play no part.",
    )
    expand_keys: bool = Field(
        default=True, description="Append each content node's cue names (extracted concepts) to its key text."
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


class LoadSettings(BaseModel):
    """Where and how the graph is loaded (Neo4j 5 over Bolt, or the local ArcadeDB Bolt server)."""

    model_config = ConfigDict(extra="forbid")

    uri: str | None = Field(
        default=None,
        description="Bolt URI of the graph, e.g. neo4j://host:7687 (env NEO4J_URI or CHATMEM_LOAD__URI). Unset: "
        "the local ArcadeDB server under the data dir is used (if local_server is on).",
    )
    user: str = Field(default="neo4j", description="Graph user (env NEO4J_USER / NEO4J_USERNAME).")
    password: SecretStr | None = Field(
        default=None, description="Graph password (env NEO4J_PASSWORD). Never logged nor written to staging."
    )
    database: str | None = Field(
        default=None,
        description="Graph database (env NEO4J_DATABASE); unset: the server's default (Neo4j) or 'chatmem' (local).",
    )
    batch_size: int = Field(default=10_000, ge=1, le=100_000, description="Rows per UNWIND batch (one transaction).")
    max_batch_bytes: int = Field(
        default=8 * 1024**2,
        ge=64 * 1024,
        description="A batch is cut early at about this many bytes of property data (ArcadeDB refuses Bolt "
        "messages over 16 MiB).",
    )
    retries: int = Field(default=3, ge=0, le=20, description="Retries of a batch that failed on a transient error.")
    retry_backoff_s: float = Field(
        default=1.0, ge=0, description="First wait before a retry, in seconds; doubled after each one."
    )
    connect_timeout_s: float = Field(default=10.0, gt=0, description="Timeout of one connection attempt, seconds.")
    local_server: bool = Field(
        default=True,
        description="With no uri: start (or reuse) the local ArcadeDB Bolt server. Off: the load stage is skipped.",
    )
    local_dir: Path | None = Field(
        default=None, description="Directory of the local server (databases, password, log); default <data_dir>/graph."
    )
    local_bolt_port: int = Field(default=0, ge=0, le=65535, description="Local server's Bolt port; 0: a free one.")
    local_http_port: int = Field(default=0, ge=0, le=65535, description="Local server's HTTP port; 0: a free one.")
    local_heap: str = Field(
        default="2g", pattern=r"^[0-9]+[kKmMgG]$", description="Local server's Java max heap (-Xmx), e.g. 2g."
    )
    local_start_timeout_s: float = Field(
        default=90.0, gt=0, description="How long to wait for the local server to answer before giving up."
    )
    java: Path | None = Field(
        default=None, description="Java executable for the local server; default: the JRE bundled in arcadedb-embedded."
    )


NEO4J_ENV = {
    "NEO4J_URI": "uri",
    "NEO4J_USERNAME": "user",
    "NEO4J_USER": "user",
    "NEO4J_PASSWORD": "password",
    "NEO4J_DATABASE": "database",
}
"""The standard Neo4j variables, read into the `load` section (CHATMEM_LOAD__* win over them)."""


class _Neo4jEnvSource(PydanticBaseSettingsSource):
    """Reads NEO4J_URI / NEO4J_USER / NEO4J_PASSWORD / NEO4J_DATABASE into `load`, when the settings are built."""

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False  # unused: __call__ returns the whole section at once

    def __call__(self) -> dict[str, Any]:
        found = {field: os.environ[name] for name, field in NEO4J_ENV.items() if os.environ.get(name)}
        return {"load": found} if found else {}


class PipelineSettings(BaseModel):
    """How the Prefect pipeline runs."""

    model_config = ConfigDict(extra="forbid")

    quiet: bool = Field(default=False, description="Hide progress bars and default announcements.")
    lock_wait_s: float = Field(
        default=0.0,
        ge=0.0,
        description="How long a run waits for another run that holds the data dir (0: refuse at once, naming it).",
    )


class RunnerSettings(BaseModel):
    """Where the heavy batches of embed, extract and cluster's final assignment run (docs/scale.md)."""

    model_config = ConfigDict(extra="forbid")

    task_runner: Literal["local", "dask"] = Field(
        default="local",
        description="local: every batch in the stage's own process; dask: each batch a Prefect task on a Dask "
        "cluster (prefect-dask): the scheduler at dask_address, or a local cluster of dask_workers.",
    )
    dask_address: str | None = Field(
        default=None,
        description="Scheduler of an existing Dask cluster, e.g. tcp://10.0.0.5:8786 (implies task_runner=dask); "
        "null with task_runner=dask: a LocalCluster on this machine.",
    )
    dask_workers: int = Field(default=2, ge=1, description="Workers of the LocalCluster when no address is given.")
    dask_processes: bool = Field(
        default=True, description="LocalCluster workers as processes (true) or threads of this process (false)."
    )
    local_workers: int = Field(
        default=0,
        ge=0,
        description="Worker processes for the CPU-bound batches of embed and extract when task_runner is local: "
        "0 = one per core of this machine, 1 = none (every batch in the stage's own process). Output is the same "
        "row by row whatever the number.",
    )
    extract_batch: int = Field(
        default=50,
        ge=1,
        description="Segments per extract task. Embed tasks take embed.write_batch texts and cluster tasks 20,000 "
        "points: the cuts a single-process run makes, so what is computed never depends on the runner.",
    )

    @property
    def distributed(self) -> bool:
        return self.task_runner == "dask" or self.dask_address is not None


class Settings(BaseSettings):
    """All of chatmem's settings."""

    model_config = SettingsConfigDict(
        env_prefix="CHATMEM_", env_nested_delimiter="__", extra="forbid", validate_default=True
    )

    data_dir: Path = Field(
        default=DEFAULT_DATA_DIR,
        description="Directory holding archive.db and staging.db (env CHATMEM_DATA_DIR).",
    )
    ingest: IngestSettings = Field(default_factory=IngestSettings, description="Ingest stage settings.")
    segment: SegmentSettings = Field(default_factory=SegmentSettings, description="Segment stage settings.")
    extract: ExtractSettings = Field(default_factory=ExtractSettings, description="Extract stage settings.")
    concepts: ConceptsSettings = Field(default_factory=ConceptsSettings, description="Concepts stage settings.")
    garden: GardenSettings = Field(default_factory=GardenSettings, description="Garden stage settings.")
    embed: EmbedSettings = Field(default_factory=EmbedSettings, description="Embed stage settings.")
    cluster: ClusterSettings = Field(default_factory=ClusterSettings, description="Cluster stage settings.")
    memory: MemorySettings = Field(default_factory=MemorySettings, description="Cues stage and recall settings.")
    load: LoadSettings = Field(default_factory=LoadSettings, description="Graph load stage settings.")
    pipeline: PipelineSettings = Field(default_factory=PipelineSettings, description="Pipeline settings.")
    runner: RunnerSettings = Field(default_factory=RunnerSettings, description="Where heavy batches run (Dask).")

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """The standard NEO4J_* variables come right after chatmem's own environment variables."""
        return init_settings, env_settings, _Neo4jEnvSource(settings_cls), dotenv_settings, file_secret_settings

    @property
    def archive_path(self) -> Path:
        return self.data_dir / "archive.db"

    @property
    def staging_path(self) -> Path:
        return self.data_dir / "staging.db"

    @property
    def graph_dir(self) -> Path:
        """The local graph server's directory."""
        return self.load.local_dir if self.load.local_dir is not None else self.data_dir / "graph"

    def model_post_init(self, context: Any, /) -> None:
        """Every secret is remembered as soon as the settings are read, whatever its source: each SecretStr field
        at any depth, the URL credentials of the graph, and the variables the SDKs read by themselves
        (OPENAI_API_KEY): an endpoint that echoes the key then finds it masked in every writer."""
        _remember_secret_fields(self)
        remember_uri_secrets(self.load.uri)
        remember_uri_secrets(self.runner.dask_address)
        remember_environment_secrets(os.environ)

    def public_dump(self) -> dict[str, Any]:
        """Settings as JSON-able data for the run ledger: secret fields and URL credentials removed."""
        return section_dump(self)


def section_dump(section: BaseModel) -> dict[str, Any]:
    """Any settings section (or the whole Settings) as JSON-able data with every secret removed: what a stage
    records in `stage_runs.settings`. Secret fields are dropped, URLs lose their user:password@ part."""
    data = section.model_dump(mode="json", exclude=_secret_fields(section))
    redacted: dict[str, Any] = redact(data)
    return redacted


def _remember_secret_fields(model: BaseModel) -> None:
    for name in type(model).model_fields:
        value = getattr(model, name)
        if isinstance(value, SecretStr):
            remember_secret(value.get_secret_value())
        elif isinstance(value, BaseModel):
            _remember_secret_fields(value)


def _secret_fields(model: BaseModel) -> dict[str, Any] | set[str]:
    """The `exclude` argument of model_dump that leaves out every SecretStr field, at any depth."""
    exclude: dict[str, Any] = {}
    for name in type(model).model_fields:
        value = getattr(model, name)
        if isinstance(value, SecretStr):
            exclude[name] = True
        elif isinstance(value, BaseModel):
            inner = _secret_fields(value)
            if inner:
                exclude[name] = inner
    return exclude
