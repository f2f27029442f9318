"""Session 37's cold try: a key the user pasted into a chat message went to the LLM verbatim and was staged once
per attempt in staging.llm_calls. Secret shapes (contracts.redact.SECRET_SHAPES) are now masked in what chatmem
sends and writes outside the archive; the archive keeps the message as the user wrote it.

The LLM extractor points at the real loopback server (tests/llm_server.py), which fails once (a retry, so two
staged attempts) and then answers; the run goes through the real CLI up to the extract stage.
"""

from __future__ import annotations

import json
import logging
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from contracts.concepts import ExtractionResponse
from contracts.redact import mask_secret_shapes, redact_text
from tests import llm_guard, llm_server
from tests.llm_server import FakeLLMServer, Reply

fake_llm = llm_server.fake_llm
no_real_model_requests = llm_guard.no_real_model_requests
pytestmark = pytest.mark.prefect

PASTED = "sk-proj-Abc123def456GHI789jkl012mno345"  # a fake key of OpenAI's project shape
PEM = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAfakefakefake\n-----END RSA PRIVATE KEY-----"


def _dump(path: Path) -> str:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return "\n".join(conn.iterdump())
    finally:
        conn.close()


def test_a_key_pasted_in_a_chat_is_not_sent_nor_staged_but_archived(
    fake_llm: FakeLLMServer,
    data_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    for name, value in {
        "CHATMEM_DATA_DIR": str(data_dir),
        "CHATMEM_EXTRACT__LLM__BASE_URL": fake_llm.base_url,
        "CHATMEM_EXTRACT__LLM__MODEL": "test-model",
        "CHATMEM_EXTRACT__LLM__API_KEY": "configured-key-0000",
        "CHATMEM_EXTRACT__LLM__RETRY_BACKOFF_S": "0.01",
        "CHATMEM_EXTRACT__LLM__MAX_CONCURRENCY": "1",
    }.items():
        monkeypatch.setenv(name, value)
    texts = [f"My OpenAI key is {PASTED}, why does it fail? Rotate that key?\n{PEM}", "Rotate it now: it is in a chat."]
    export = tmp_path / "pasted.jsonl"
    export.write_text(
        "".join(
            json.dumps({"conversation_id": "c1", "id": f"m{i}", "role": ("user", "assistant")[i], "text": t}) + "\n"
            for i, t in enumerate(texts)
        ),
        encoding="utf-8",
    )
    fake_llm.reply_with(Reply.fail(500), Reply.valid(ExtractionResponse(hypotheses=[], facts=[])))
    from flows.cli import cli

    result = CliRunner().invoke(cli, ["--verbose", "run", str(export), "--to", "extract"])
    assert result.exit_code == 0, result.output

    sent = [json.dumps(r.body, ensure_ascii=False) for r in fake_llm.model_requests()]
    assert len(sent) == 2 and all("Rotate that key" in body for body in sent)  # the chat was sent, twice
    assert not any(PASTED in body or "MIIEowIBAAKCAQEA" in body for body in sent)  # ... without the secrets
    assert all("sk-***" in body for body in sent)  # masked in place: the model still sees a key was there
    staging = _dump(data_dir / "staging.db")
    assert "Rotate that key" in staging and staging.count("transient_error") >= 1  # both attempts staged
    assert PASTED not in staging and "MIIEowIBAAKCAQEA" not in staging
    archive = _dump(data_dir / "archive.db")
    assert PASTED in archive and "MIIEowIBAAKCAQEA" in archive  # the archive is the user's verbatim copy
    logged = "\n".join(r.getMessage() for r in caplog.records) + result.output
    assert PASTED not in logged


@pytest.mark.parametrize(
    "secret",
    [
        "sk-ant-api03-AbCdEf0123456789AbCdEf0123456789",
        "AKIAIOSFODNN7EXAMPLE",
        "ghp_0123456789abcdefABCDEF0123456789abcd",
        "github_pat_11ABCDEFG0123456789_abcdefghijklmnop",
        "xoxb-123456789012-abcdefABCDEF",
        "AIzaSyA0123456789abcdefghijklmnopqrstuv",
        "Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig",
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAA (the message was cut here)",
    ],
)
def test_each_well_known_secret_shape_is_masked(secret: str) -> None:
    text = f"here: {secret} end"
    body = secret.split()[-1] if secret.startswith("Bearer") else secret.splitlines()[-1][:20]
    assert body not in mask_secret_shapes(text) and body not in redact_text(text)
    assert "***" in mask_secret_shapes(text)


def test_words_shaped_like_prefixes_are_kept() -> None:
    words = "sk-learn-compatible-estimators, ask-me-anything, xoxo, the bearer of bad news, AKIA alone"
    assert mask_secret_shapes(words) == words
