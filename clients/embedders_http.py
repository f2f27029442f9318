"""The endpoint backend: any OpenAI-compatible embeddings API (OpenAI, Ollama, vLLM, LM Studio, llama.cpp).

Plain httpx, one POST {base_url}/embeddings per batch with `{"model", "input": [...], "encoding_format":
"float"}`; rows come back by `index` and are L2-normalised here (not every server normalises). Transient
failures (429, 5xx, timeouts, dropped connections) are retried with doubling back-off; anything else is an
EmbeddingError that names the endpoint and the status, never the key.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import httpx
import numpy as np

from clients.auth import basic_auth
from clients.embedders import normalise
from clients.retry import doubling, retrying
from contracts.errors import ChatmemError
from contracts.redact import redact_uri, remember_secret
from contracts.settings import EmbedEndpointSettings
from staging.embeddings import Matrix


class EmbeddingError(ChatmemError):
    """The endpoint refused or answered something that is not a list of embeddings."""


def is_transient(error: Exception) -> bool:
    """The one predicate that decides what is retried."""
    if isinstance(error, httpx.HTTPStatusError):
        return error.response.status_code == 429 or error.response.status_code >= 500
    return isinstance(error, httpx.TimeoutException | httpx.TransportError)


class EndpointEmbedder:
    def __init__(self, settings: EmbedEndpointSettings, *, key: str, backoff_s: float = 0.5) -> None:
        self.key = key
        self.dim = 0  # known after the first reply
        self.batch_size: int | None = None
        self.settings = settings
        self.backoff_s = backoff_s
        self._client: httpx.Client | None = None
        self._where = redact_uri(settings.base_url)  # what an error names: the endpoint without its credentials

    def _http(self) -> httpx.Client:
        if self._client is None:
            secret = self.settings.api_key.get_secret_value() if self.settings.api_key else None
            api_key = secret or os.environ.get("OPENAI_API_KEY")
            remember_secret(api_key)  # from the environment too: masked wherever an echo of it is written
            # the key as Bearer; with none, user:password@ of the base URL as Basic auth (clients.llm.make_client)
            headers = {"Authorization": f"Bearer {api_key}"} if api_key else basic_auth(self.settings.base_url)
            self._client = httpx.Client(
                # without user:password@ (httpx would send it as Basic auth in place of the key)
                base_url=(redact_uri(self.settings.base_url) or "").rstrip("/") + "/",
                headers=headers,
                timeout=self.settings.timeout_s,
            )
        return self._client

    def embed(self, texts: Sequence[str]) -> Matrix:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        body = {"model": self.settings.model, "input": list(texts), "encoding_format": "float"}

        def post(attempt: int) -> Any:
            response = self._http().post("embeddings", json=body)
            response.raise_for_status()
            return response.json()

        try:
            payload = retrying(
                post,
                transient=lambda error: isinstance(error, Exception) and is_transient(error),
                delay=doubling(self.backoff_s),
                max_retries=self.settings.max_retries,
            )
        except httpx.HTTPError as exc:
            raise EmbeddingError(f"embeddings endpoint {self._where}: {_describe(exc)}") from None
        return self._parse(payload, len(texts))

    def _parse(self, payload: Any, expected: int) -> Matrix:
        data = payload.get("data") if isinstance(payload, dict) else None
        if not isinstance(data, list) or len(data) != expected:
            got = len(data) if isinstance(data, list) else type(data).__name__
            raise EmbeddingError(f"embeddings endpoint {self._where}: expected {expected} rows, got {got}")
        rows = sorted(data, key=lambda row: int(row.get("index", 0)))
        matrix = np.asarray([row["embedding"] for row in rows], dtype=np.float32)
        if matrix.ndim != 2 or not np.isfinite(matrix).all():
            raise EmbeddingError(f"embeddings endpoint {self._where}: malformed embedding rows")
        self.dim = int(matrix.shape[1])
        return normalise(matrix)

    def close(self) -> None:
        if self._client is not None:
            self._client.close()


def _describe(error: httpx.HTTPError) -> str:
    if isinstance(error, httpx.HTTPStatusError):
        return f"HTTP {error.response.status_code} {error.response.text[:200]}"
    return f"{type(error).__name__}: {error}"
