"""The OpenAI-compatible endpoint the extract stage (and topic names, recall's expand step) call."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr

from contracts.redact import remember_secret, remember_uri_secrets


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
