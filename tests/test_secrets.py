"""Secrets never land: endpoint credentials (user:token@ in a URL) and API keys reach no table, log or error text.

Both endpoints (the LLM extractor's and the embeddings') point at the real loopback server with credentials in
the URL and an API key; the server fails some requests (retried), refuses others with a message that quotes
the credentials it was sent, and the pipeline runs through the real CLI. Then every byte of the data dir
(archive.db, staging.db, their WAL files, optuna.db, anything else) and of Prefect's home (its SQLite database
of flow runs and their parameters), every table dumped as SQL, the CLI's
output with --verbose logs, captured log records and the exception texts are searched for each secret.
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from contracts.concepts import ExtractionResponse
from contracts.errors import StageError
from contracts.redact import install_log_redaction, redact, redact_text, remember_secret
from contracts.settings import Settings
from tests import llm_guard, llm_server
from tests.llm_server import FakeLLMServer, Reply, quoting_responder

fake_llm = llm_server.fake_llm
no_real_model_requests = llm_guard.no_real_model_requests
pytestmark = pytest.mark.prefect

LLM_TOKEN = "llm-url-token-7f3a9c"
LLM_KEY = "sk-llm-key-91b2d4"
EMBED_TOKEN = "emb-url-token-c44d01"
EMBED_KEY = "sk-emb-key-5e6f88"
SECRETS = (LLM_TOKEN, LLM_KEY, EMBED_TOKEN, EMBED_KEY)


def _with_credentials(base_url: str, user: str, token: str) -> str:
    return base_url.replace("http://", f"http://{user}:{token}@")


@pytest.fixture
def secret_env(fake_llm: FakeLLMServer, data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Both endpoints configured with user:token@ URLs and API keys, as a user would, through the environment."""
    env = {
        "CHATMEM_DATA_DIR": str(data_dir),
        "CHATMEM_EXTRACT__LLM__BASE_URL": _with_credentials(fake_llm.base_url, "alice", LLM_TOKEN),
        "CHATMEM_EXTRACT__LLM__MODEL": "test-model",
        "CHATMEM_EXTRACT__LLM__API_KEY": LLM_KEY,
        "CHATMEM_EXTRACT__LLM__RETRY_BACKOFF_S": "0.01",
        "CHATMEM_EXTRACT__LLM__MAX_CONCURRENCY": "1",
        "CHATMEM_EMBED__BACKEND": "endpoint",
        "CHATMEM_EMBED__ENDPOINT__BASE_URL": _with_credentials(fake_llm.base_url, "bob", EMBED_TOKEN),
        "CHATMEM_EMBED__ENDPOINT__MODEL": "tiny-embed",
        "CHATMEM_EMBED__ENDPOINT__API_KEY": EMBED_KEY,
        "CHATMEM_EMBED__ENDPOINT__MAX_RETRIES": "1",
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    yield data_dir


def _export(path: Path, tag: str) -> Path:
    turns = {
        f"{tag}-garden": ["I want to grow a vegetable garden this spring.", "Start with compost and sun."],
        f"{tag}-trip": ["We are planning a trip to Lisbon in May.", "Take tram 28 early in the morning."],
    }
    lines = [
        json.dumps(
            {"conversation_id": c, "id": f"{c}-{i}", "role": "user" if i % 2 == 0 else "assistant", "text": t + tag}
        )
        for c, texts in turns.items()
        for i, t in enumerate(texts)
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _chatmem(*args: str | Path) -> Result:
    from flows.cli import cli

    return CliRunner().invoke(cli, ["--verbose", *map(str, args)])


def _everything_written(data_dir: Path) -> str:
    """Every table of every SQLite file under the data dir as SQL text, plus every file's raw bytes; each line
    starts with the file it came from, so a failure says where a secret landed."""
    parts: list[str] = []
    for path in sorted(p for p in data_dir.rglob("*") if p.is_file()):
        parts.append(f"{path.name} (bytes): {path.read_bytes().decode('utf-8', errors='replace')}")
        if path.suffix == ".db":
            conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
            parts.extend(f"{path.name}: {line}" for line in conn.iterdump())
            conn.close()
    return "\n".join(parts)


def _where(text: str) -> list[str]:
    return [line[:300] for line in text.splitlines() if _leaks(line) and " (bytes): " not in line]


def _leaks(text: str) -> list[str]:
    return [secret for secret in SECRETS if secret in text]


def test_no_secret_reaches_a_table_a_log_or_an_error(
    secret_env: Path, fake_llm: FakeLLMServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Retries, refusals quoting the credentials and a failed stage leave no URL token or API key anywhere."""
    caplog.set_level(logging.INFO)
    fake_llm.responder = quoting_responder()
    # extraction (one request at a time): a 500 (retried) and an answer, then a 401 that quotes the credentials
    # (that segment fails; it comes last, since after a refused key no other segment is sent)
    fake_llm.reply_with(Reply.fail(500), Reply.valid(ExtractionResponse(hypotheses=[], facts=[])), Reply.echoing(401))
    fake_llm.embedding_script.append(Reply.fail(503))  # embeddings: one transient failure, retried
    first = _chatmem("run", _export(tmp_path / "one.jsonl", "one"))
    assert first.exit_code == 1 and "1 segment failed" in first.output, first.output  # the 401: retried next run
    assert len(fake_llm.model_requests()) >= 3 and len(fake_llm.embedding_requests()) >= 2
    staging = sqlite3.connect(secret_env / "staging.db")
    statuses = [row[0] for row in staging.execute("SELECT status FROM llm_calls ORDER BY id")]
    assert {"transient_error", "error", "ok"} <= set(statuses)  # the failure paths really ran
    echoed = staging.execute("SELECT raw_response, error FROM llm_calls WHERE status = 'error'").fetchone()
    assert "invalid credentials" in (echoed[0] or "") + (echoed[1] or "")  # the server did quote something

    # a second export whose embeddings are refused with the credentials quoted: the embed stage fails
    fake_llm.embedding_script.append(Reply.echoing(401))
    second = _chatmem("run", _export(tmp_path / "two.jsonl", "two"))
    assert second.exit_code == 1, second.output
    assert "error: embeddings endpoint http://127.0.0.1" in second.output and "invalid credentials" in second.output
    failed = staging.execute("SELECT error FROM stage_runs WHERE stage = 'embed' AND status = 'failed'").fetchone()
    assert failed is not None and "HTTP 401" in failed[0]
    staging.close()
    settings = [row for row in _everything_written(secret_env).splitlines() if "base_url" in row]
    assert settings and all("127.0.0.1" in row for row in settings if "stage_runs" in row)

    prefect_home = Path(os.environ["PREFECT_HOME"])  # Prefect's own database: flow runs and their parameters
    assert any(prefect_home.rglob("*.db")), "Prefect's database was not where the test looks"
    written = _everything_written(secret_env) + "\n" + _everything_written(prefect_home)
    logged = "\n".join(f"{r.getMessage()} {r.exc_text or ''}" for r in caplog.records)
    errors = "\n".join(str(result.exception or "") + result.output for result in (first, second))
    assert not _leaks(written), f"a secret reached the data dir or Prefect's database: {_where(written)}"
    assert not _leaks(logged), "a secret reached a log record"
    assert not _leaks(errors), "a secret reached the CLI output or an exception text"


def test_settings_dumps_keep_the_endpoint_and_lose_its_credentials() -> None:
    """public_dump and every section dump keep host and path, drop user:token@ and omit API keys."""
    settings = Settings(
        extract={"llm": {"base_url": f"https://alice:{LLM_TOKEN}@llm.example/v1", "model": "m", "api_key": LLM_KEY}},
        embed={"backend": "endpoint", "endpoint": {"base_url": f"https://{EMBED_TOKEN}@emb.example/v1", "model": "e"}},
    )
    dumped = json.dumps(settings.public_dump())
    assert "https://llm.example/v1" in dumped and "https://emb.example/v1" in dumped
    assert not _leaks(dumped) and "**********" not in dumped  # secret fields left out, not masked


def test_text_redaction_masks_url_credentials_and_remembered_values() -> None:
    """URL userinfo is cut from any text; a remembered secret is masked wherever it appears, even mid-sentence."""
    remember_secret("tok-remembered-123")
    text = "GET https://u:pw@h.example/x failed; server said: bad key tok-remembered-123!"
    assert redact_text(text) == "GET https://h.example/x failed; server said: bad key ***!"
    assert redact({"api_key": "anything", "nested": [{"password": "p"}], "url": "bolt://n:x@db:7687"}) == {
        "api_key": "***",
        "nested": [{"password": "***"}],
        "url": "bolt://db:7687",
    }
    assert str(StageError("embed", "r1", "at https://me:tok-remembered-123@h/v1")).count("***") == 0
    assert "tok-remembered-123" not in str(StageError("embed", "r1", "said tok-remembered-123"))


def test_log_records_are_redacted_when_made(caplog: pytest.LogCaptureFixture) -> None:
    """With log redaction installed, a record's message and its traceback lose credentials and known secrets."""
    install_log_redaction()
    remember_secret("tok-in-a-log-456")
    caplog.set_level(logging.INFO)
    log = logging.getLogger("chatmem.test")
    log.info("calling %s with %s", "http://a:b@host/v1", "tok-in-a-log-456")
    try:
        raise RuntimeError("failed with tok-in-a-log-456")
    except RuntimeError:
        log.exception("boom")
    [info, error] = caplog.records
    assert info.getMessage() == "calling http://host/v1 with ***"
    assert "tok-in-a-log-456" not in (error.exc_text or "") and "***" in (error.exc_text or "")
