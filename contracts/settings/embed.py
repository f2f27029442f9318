"""The settings of the embed, embed_concepts and cluster stages."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr

from contracts.redact import remember_secret, remember_uri_secrets


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
        description="Optuna trials per study (a re-run reuses finished ones); null: 30, whatever the machine's "
        "load, under a CPU-time safety cap (cluster.tuning.budget); set: all of them run unless timeout_s is set.",
    )
    encoder: Literal["minilm-onnx", "embed"] = Field(
        default="minilm-onnx",
        description="What the topics are found on: minilm-onnx: the full MiniLM reads the title and opening of up "
        "to encode_max segments (the anchors), every other segment and concept is placed by its embed vector's "
        "nearest anchors (cluster/topic_space.py); embed: the embed stage's vectors alone (cheaper, topics a "
        "person agrees with less).",
    )
    encode_max: int = Field(
        default=20000,
        ge=10,
        description="Most segments the full model reads when encoder=minilm-onnx (~15 a second on 2 CPU cores, "
        "each once: cached in staging.db; never fewer than min_points); the tuning and the final fit see these "
        "only, the rest are placed.",
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
    phrase_weight: float = Field(
        default=1.0,
        ge=0,
        description="Objective: weight of the topics' phrase coherence (NPMI of each topic's best c-TF-IDF phrases "
        "over <= 5,000 sampled segments); 0: the phrases are not read (the v2 objective).",
    )
    # 0 by default since session 15: the phrases lifted the dev set's topic agreement (AMI 0.424 -> 0.475 over
    # seeds 42/7/11) but not the blind held-out set's (0.318 -> 0.302): the gain was the dev set's own.
    phrase_share: float = Field(
        default=0.0,
        ge=0,
        lt=1,
        description="Share of a point's similarity carried by the phrases its segment uses (TF-IDF over the "
        "c-TF-IDF phrase keys, reduced by SVD: the subject) next to its MiniLM vector (the genre); 0: the MiniLM "
        "vectors alone (cluster/phrase_space.py).",
    )
    phrase_dims: int = Field(
        default=32,
        ge=2,
        le=512,
        description="Dimensions of the phrase vectors (the SVD's rank), when phrase_share > 0.",
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
    title_merge: float = Field(
        default=0.4,
        ge=0,
        le=2,
        description="After the fit, topics whose conversations' titles (read alone by the full model, "
        "cluster.encoder=minilm-onnx) are within this cosine distance are joined, closest first "
        "(cluster/title_merge.py); 0: never.",
    )
    title_merge_cap: float = Field(
        default=0.08,
        gt=0,
        le=1,
        description="A join is made only while the joined topic is the dominant topic of at most this share of the "
        "conversations (a subject that fills much of the archive stays split).",
    )
    timeout_s: float | None = Field(
        default=None,
        gt=0,
        description="Safety cap: stop starting Optuna trials after this many CPU seconds of tuning (never "
        "before the 10th; a note says so); null, with n_trials null: 300 s + 60 ms per sampled segment, at most 3600.",
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
