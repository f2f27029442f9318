"""Shared fixtures: where the fixtures live, a fresh data dir, and Prefect's environment for the session."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from inspect_support import ingest_only, inspected  # noqa: F401  (session data dirs of the inspection tests)
from llm_guard import no_real_model_requests  # noqa: F401  (autouse in every test: loopback only)

from contracts.settings import NEO4J_ENV

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"
# The MIT-licensed example export of chatgpt2graph: one conversation with branches and hidden messages.
_CHATGPT_EXAMPLE = FIXTURES / "exports" / "chatgpt" / "chatgpt2graph" / "conversations.json"
_CHATGPT_EXAMPLE_SHARED = (
    ROOT.parent / "shared" / "data" / "exports" / "chatgpt" / "chatgpt2graph" / "examples" / "conversations.json"
)


@pytest.fixture(scope="session", autouse=True)
def prefect_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """Prefect's variables for the whole session: no outbound calls, an ephemeral API, state in a temp dir.

    Prefect reads them when it is first imported, so they are set once, before any test runs, and test
    modules import `flows.pipeline` / `flows.serve` inside tests, never at module level. One PREFECT_HOME
    for the session: its database migrates once (seconds) instead of once per test.
    """
    if "prefect" in sys.modules:
        raise pytest.UsageError("prefect was imported while collecting tests; import it inside the tests")
    values = {
        "DO_NOT_TRACK": "1",
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "PREFECT_SERVER_EPHEMERAL_ENABLED": "true",
        "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "240",
        "PREFECT_HOME": str(tmp_path_factory.mktemp("prefect-home")),
        "PREFECT_RESULTS_PERSIST_BY_DEFAULT": "false",
        "PREFECT_LOGGING_LEVEL": "WARNING",
        # `chatmem run` would start a local graph server (a JVM) for its load stage: the stage is skipped instead,
        # and says so. The graph tests point the stage at their own server (tests/graph_fixtures.py).
        "CHATMEM_LOAD__LOCAL_SERVER": "false",
        # Embed and extract run in the stage's process: a pool of spawned workers costs a few CPU-seconds per stage
        # run, in every pipeline test. tests/test_process_batches.py runs them with workers (same rows).
        "CHATMEM_RUNNER__LOCAL_WORKERS": "1",
        # Concepts, cluster and cues in the run's process too: a spawned stage process imports numpy, UMAP and numba
        # again (seconds) in every pipeline test. tests/test_stage_process.py runs them in their own (same rows).
        "CHATMEM_RUNNER__STAGE_PROCESSES": "false",
    }
    with pytest.MonkeyPatch.context() as patch:
        for name, value in values.items():
            patch.setenv(name, value)
        for name in ("PREFECT_API_URL", "CHATMEM_DATA_DIR", *NEO4J_ENV):  # a developer's own graph stays untouched
            patch.delenv(name, raising=False)
        yield values


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    """A data dir that does not exist yet (chatmem creates it)."""
    return tmp_path / "data"


@pytest.fixture(scope="session")
def fixtures_dir() -> Path:
    return FIXTURES


@pytest.fixture(scope="session")
def chatgpt_export() -> Path:
    """A real ChatGPT export (chatgpt2graph's example, MIT)."""
    return _CHATGPT_EXAMPLE if _CHATGPT_EXAMPLE.exists() else _CHATGPT_EXAMPLE_SHARED


def write_jsonl(path: Path, conversations: int = 2, turns: int = 3, prefix: str = "j") -> Path:
    """A small generic-JSONL export (docs/formats.md): `conversations` x `turns` messages."""
    lines = []
    for c in range(conversations):
        for t in range(turns):
            role = "user" if t % 2 == 0 else "assistant"
            message = {"conversation_id": f"{prefix}{c}", "id": f"{prefix}{c}-m{t}", "role": role}
            message |= {"text": f"turn {t} of {prefix}{c}", "created_at": f"2024-05-01T10:0{t}:00Z"}
            lines.append(json.dumps(message))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="session")
def make_jsonl() -> Callable[..., Path]:
    """`make_jsonl(path, conversations=2, turns=3, prefix="j")` writes a generic-JSONL export."""
    return write_jsonl


@pytest.fixture
def jsonl_export(tmp_path: Path) -> Path:
    """Two conversations of three messages each, as generic JSONL."""
    return write_jsonl(tmp_path / "exports" / "notes.jsonl")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every fault test (tests/test_*faults*.py: real signals, kills, full disks, servers) and the browser tests
    are `slow`: the developer's quick line `python -m pytest -q -m "not slow"` (README) leaves them out; CI runs all."""
    for item in items:
        name = item.path.name
        if "faults" in name or name == "test_browser.py":
            item.add_marker(pytest.mark.slow)
