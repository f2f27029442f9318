"""`chatmem mcp` as a real process, driven by the MCP SDK's own client over stdio and over streamable HTTP.

One data dir for the module, built by the real pipeline (`chatmem run --to cues`: ingest, segment, embed,
extract, concepts, cluster, cues) from a generated JSONL export of four themes; clustering gets 1 Optuna trial
so that the 24 segments become topics in under a minute. Every test then only reads it.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import psutil
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp_types import CallToolResult

ROOT = Path(__file__).resolve().parents[1]
# The fixture runs the whole pipeline once (about a minute on an idle 2-core machine, most of it UMAP compiling).
pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

THEMES = {
    "garden": ("Vegetable garden", "2024-03", ["tomatoes", "zucchini", "carrots", "lettuce", "peppers", "beans"]),
    "trip": (
        "Lisbon trip",
        "2024-05",
        ["Belem tower", "Alfama", "the LX Factory", "Sintra", "the Oceanarium", "Cascais"],
    ),
    "postgres": ("Database migration", "2024-06", ["orders", "invoices", "customers", "payments", "sessions", "audit"]),
    "running": (
        "Marathon training",
        "2024-08",
        ["a long run", "hills", "tempo runs", "a jog", "a 30 km run", "sprints"],
    ),
}
TURNS = {
    "garden": [
        "I want to grow {x} in the vegetable garden this spring. The vegetable garden needs compost.",
        "{x} does well in a vegetable garden with compost, mulch and six hours of sun.",
        "Thanks, I will plant the {x} next to the basil in the vegetable garden.",
    ],
    "trip": [
        "For the Lisbon trip we want to see {x}. Lisbon has great tram rides.",
        "In Lisbon, {x} is best early in the morning; take tram 28 from Alfama.",
        "Add {x} to the Lisbon trip plan for the second day.",
    ],
    "postgres": [
        "The Postgres migration of the {x} table failed on the replica. The Postgres replica lags.",
        "Check the Postgres replication slot before migrating {x}; run pg_upgrade with --link.",
        "The Postgres migration of {x} worked after pg_upgrade.",
    ],
    "running": [
        "My marathon training plan this week has {x}. My left knee hurts after long runs.",
        "For marathon training, keep {x} easy and rest the knee; stretch the hamstrings.",
        "I did {x} and the knee felt fine during marathon training.",
    ],
}
TOOLS = {"recall", "search_concepts", "get_conversation", "timeline", "topics"}


def write_export(path: Path) -> Path:
    """Conversation `<theme>-<k>` (k = 0..5) has three turns on day k+1 of its theme's month."""
    lines = []
    for theme, (title, month, fills) in THEMES.items():
        for k, x in enumerate(fills):
            for i, text in enumerate(TURNS[theme]):
                line = {"conversation_id": f"{theme}-{k}", "id": str(i), "role": "assistant" if i == 1 else "user"}
                line |= {"text": text.format(x=x), "created_at": f"{month}-{k + 1:02d}T09:{i:02d}:00Z"}
                lines.append(json.dumps(line | {"conversation_title": f"{title} {k + 1}"}))
    path.write_text("\n".join(lines) + "\n")
    return path


def server_env() -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "CHATMEM_CLUSTER__MIN_POINTS": "12",
        "CHATMEM_CLUSTER__N_TRIALS": "1",
    }


def digest(data_dir: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(data_dir.glob("*.db"))}


@pytest.fixture(scope="module")
def memory_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data dir made by `chatmem run EXPORT --to cues` (a real process, the real stages)."""
    base = tmp_path_factory.mktemp("mcp")
    export = write_export(base / "export.jsonl")
    data_dir = base / "data"
    command = [sys.executable, "-m", "flows.cli", "--data-dir", str(data_dir), "-q", "run", str(export)]
    done = subprocess.run(
        [*command, "--to", "cues", "--json"], cwd=ROOT, env=server_env(), capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    stages = {s["stage"]: s for s in json.loads(done.stdout)["stages"]}
    assert stages["cluster"]["status"] == "succeeded" and stages["cues"]["status"] == "succeeded"
    return data_dir


def over_stdio(data_dir: Path, errlog: Path, session: Callable[[Client], Awaitable[Any]]) -> Any:
    """Spawn `python -m flows.cli --data-dir D mcp` and run `session` against it with the SDK's stdio client."""
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "flows.cli", "--data-dir", str(data_dir), "mcp"], env=server_env(), cwd=ROOT
    )

    async def main() -> Any:
        with errlog.open("w") as err:
            async with Client(stdio_client(params, errlog=err)) as client:
                return await session(client)

    return anyio.run(main)


@pytest.fixture(scope="module")
def http_server(memory_dir: Path) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    """`chatmem mcp --http 0` as a process: the URL it prints on stderr, and the process."""
    command = [sys.executable, "-m", "flows.cli", "--data-dir", str(memory_dir), "mcp", "--http", "0"]
    process = subprocess.Popen(command, cwd=ROOT, env=server_env(), stderr=subprocess.PIPE, text=True)
    try:
        assert process.stderr is not None
        line = process.stderr.readline()
        found = re.search(r"http://127\.0\.0\.1:\d+/mcp", line)
        assert found, f"no URL on stderr: {line!r}"
        yield found.group(0), process
    finally:
        process.terminate()
        process.wait(timeout=30)


def over_http(url: str, session: Callable[[Client], Awaitable[Any]]) -> Any:
    async def main() -> Any:
        async with Client(url) as client:
            return await session(client)

    return anyio.run(main)


def structured(result: CallToolResult) -> dict[str, Any]:
    assert not result.is_error, result.content
    assert isinstance(result.structured_content, dict)
    return result.structured_content


async def every_tool(client: Client) -> dict[str, Any]:
    """One call of each tool on known data, plus the listing."""
    listing = await client.list_tools()
    calls = {
        "recall": {"query": "postgres replica pg_upgrade", "at": "2024-06-03T23:59:00Z", "budget_tokens": 400},
        "search_concepts": {"query": "vegetable garden", "limit": 3, "evidence_limit": 2},
        "get_conversation": {"conversation_id": "trip-1", "around_message_id": "trip-1:1", "window": 0},
        "timeline": {"concept": "lisbon", "since": "2024-05-03T00:00:00Z"},
        "topics": {"keywords": 3},
    }
    found: dict[str, Any] = {"tools": listing.tools}
    for name, arguments in calls.items():
        found[name] = structured(await client.call_tool(name, arguments))
    return found


@pytest.fixture(scope="module")
def stdio_answers(memory_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Every tool once over stdio, with the databases' digests before and after."""
    before = digest(memory_dir)
    answers = over_stdio(memory_dir, tmp_path_factory.mktemp("stdio") / "stderr.log", every_tool)
    return answers | {"digest_before": before, "digest_after": digest(memory_dir)}


def test_the_tools_are_listed_with_described_schemas(stdio_answers: dict[str, Any]) -> None:
    """Five read-only tools; every input field and the output schema come from the contracts, all described."""
    tools = {t.name: t for t in stdio_answers["tools"]}
    assert set(tools) == TOOLS
    assert set(tools["recall"].input_schema["properties"]) == {
        "query", "at", "budget_tokens", "scope", "max_pieces", "order"
    }  # fmt: skip
    assert tools["recall"].input_schema["required"] == ["query"]
    assert tools["get_conversation"].input_schema["properties"]["limit"]["maximum"] == 500
    assert set(tools["timeline"].output_schema["properties"]) >= {"first_seen", "last_seen", "entries", "kinds"}
    for tool in tools.values():
        assert tool.description and tool.annotations and tool.annotations.read_only_hint is True
        assert tool.output_schema and tool.output_schema["type"] == "object"
        assert all(field.get("description") for field in tool.input_schema["properties"].values()), tool.name


def test_recall_over_stdio_reconstructs_from_the_right_conversations(stdio_answers: dict[str, Any]) -> None:
    """The best pieces are Postgres ones, nothing after `at`, each with message ids and a path from the query."""
    result = stdio_answers["recall"]
    assert result["pieces"] and result["tokens"] <= 400
    best = sorted(result["pieces"], key=lambda p: p["rank"])[:3]
    assert {p["conversation_id"].split("-")[0] for p in best} == {"postgres"}
    assert all(p["created_at"] <= "2024-06-03T23:59:00Z" for p in result["pieces"])
    assert all(p["message_ids"] and p["path"][0]["kind"] == "query" for p in result["pieces"])


def test_the_cli_and_the_mcp_tool_give_the_same_recall(stdio_answers: dict[str, Any], memory_dir: Path) -> None:
    """`chatmem recall --json` and the MCP `recall` tool return one RecallResult: pieces in the same (best-first)
    order, the same facts and fact changes, the same reasons (the CLI used to add the facts itself)."""
    from click.testing import CliRunner

    from flows.cli import cli

    argv = ["--data-dir", str(memory_dir), "recall", "postgres replica pg_upgrade", "--json"]
    argv += ["--at", "2024-06-03T23:59:00Z", "--budget", "400"]
    done = CliRunner().invoke(cli, argv, catch_exceptions=False)
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout) == stdio_answers["recall"]
    ranks = [p["rank"] for p in stdio_answers["recall"]["pieces"] if p["reply_to"] is None]  # replies: after theirs
    assert ranks == sorted(ranks) and stdio_answers["recall"]["order"] == "relevance"


def test_search_timeline_conversation_and_topics_answer_on_known_data(stdio_answers: dict[str, Any]) -> None:
    """Each tool's structured result on the generated export."""
    concept = stdio_answers["search_concepts"]["concepts"][0]
    assert concept["title"] == "Vegetable garden" and len(concept["evidence"]) == 2
    assert all(e["conversation_id"].startswith("garden-") for e in concept["evidence"])
    timeline = stdio_answers["timeline"]
    assert timeline["concept_id"] == "lisbon" and timeline["first_seen"] == "2024-05-01T09:00:00Z"
    assert timeline["last_seen"] == "2024-05-06T09:02:00Z" and timeline["total"] == len(timeline["entries"])
    dated = [e["at"] for e in timeline["entries"] if e["at"]]
    assert dated == sorted(dated) and timeline["kinds"][0] == "evidence"
    assert timeline["entries"][0]["at"] >= "2024-05-03" and timeline["entries"][0]["conversation_id"] == "trip-2"
    conversation = stdio_answers["get_conversation"]
    assert [m["message_id"] for m in conversation["messages"]] == ["trip-1:1"]
    assert conversation["title"] == "Lisbon trip 2" and conversation["path_length"] == 3
    assert conversation["more_before"] and conversation["more_after"]
    topics = stdio_answers["topics"]
    assert len(topics["topics"]) >= 2 and sum(t["size"] for t in topics["topics"]) <= 24
    for topic in topics["topics"]:  # the seeded clustering keeps each theme's conversations together
        assert len({c.split("-")[0] for c in topic["conversation_ids"]}) == 1 and len(topic["keywords"]) <= 3


def test_the_databases_are_not_written(stdio_answers: dict[str, Any]) -> None:
    """Read-only: archive.db and staging.db have the same bytes after every tool has run."""
    assert {"archive.db", "staging.db"} <= set(stdio_answers["digest_before"])
    assert stdio_answers["digest_after"] == stdio_answers["digest_before"]


def test_bad_arguments_are_tool_errors_and_the_server_keeps_serving(memory_dir: Path, tmp_path: Path) -> None:
    """Out-of-range and unknown arguments: is_error with a readable line; the next call still answers."""

    async def session(client: Client) -> list[CallToolResult]:
        return [
            await client.call_tool("search_concepts", {"query": "garden", "limit": -1}),
            await client.call_tool("get_conversation", {"conversation_id": "nope"}),
            await client.call_tool("timeline", {"concept": "no such thing"}),
            await client.call_tool("recall", {"query": ""}),
            await client.call_tool("topics", {}),
        ]

    *bad, fine = over_stdio(memory_dir, tmp_path / "stderr.log", session)
    texts = [r.content[0].text for r in bad]  # type: ignore[union-attr]
    assert all(r.is_error for r in bad)
    assert all("\n" not in t for t in texts), texts  # one line an agent can act on
    assert texts[0].startswith("invalid arguments to search_concepts: limit: input should be greater than or equal")
    assert "unknown conversation 'nope'" in texts[1] and "search_concepts" in texts[2] and "query" in texts[3]
    assert structured(fine)["topics"]


def test_streamable_http_serves_the_same_answers_on_loopback_only(
    http_server: tuple[str, subprocess.Popen[str]], stdio_answers: dict[str, Any]
) -> None:
    """Over HTTP every tool gives what stdio gave; the process listens on 127.0.0.1 and nowhere else."""
    url, process = http_server
    answers = over_http(url, every_tool)
    assert {t.name for t in answers["tools"]} == TOOLS
    for name in TOOLS:
        assert answers[name] == stdio_answers[name], name
    listening = [c.laddr for c in psutil.Process(process.pid).net_connections("inet") if c.status == "LISTEN"]
    assert listening and all(address.ip == "127.0.0.1" for address in listening)


def test_http_refuses_a_foreign_host_header(http_server: tuple[str, subprocess.Popen[str]]) -> None:
    """DNS-rebinding protection: a request naming another host is refused before it reaches a tool."""
    url, _ = http_server
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    headers = {"Host": "attacker.example", "Accept": "application/json, text/event-stream"}
    response = httpx.post(url, json=body, headers=headers, timeout=10)
    assert response.status_code in (403, 421) and "tools" not in response.text


def test_without_a_memory_the_command_exits_with_one_line(tmp_path: Path) -> None:
    """`chatmem mcp` on an empty data dir: exit 1 and a message saying what to run, before serving anything (a
    missing one: tests/test_cli_cold_faults.py)."""
    (tmp_path / "empty").mkdir()
    command = [sys.executable, "-m", "flows.cli", "--data-dir", str(tmp_path / "empty"), "mcp"]
    done = subprocess.run(command, cwd=ROOT, env=server_env(), capture_output=True, text=True, timeout=60)
    said = f"chatmem --data-dir {tmp_path / 'empty'} run"  # the hint as it can be pasted (flows/hints.py)
    assert done.returncode == 1 and said in done.stderr and done.stdout == ""


DOC_MARKER = "<!-- tested: tests/test_mcp_server.py::test_the_docs_client_example_recalls_over_stdio -->"


def docs_client_example() -> str:
    """The Python block that follows docs/mcp.md's `tested:` marker of the test below (the README's until it moved)."""
    after = (ROOT / "docs" / "mcp.md").read_text(encoding="utf-8").split(DOC_MARKER, 1)[1]
    return after.split("```python\n", 1)[1].split("```", 1)[0]


def test_the_docs_client_example_recalls_over_stdio(memory_dir: Path, tmp_path: Path) -> None:
    """docs/mcp.md's MCP client snippet, run as written (its data dir swapped for the built one, `chatmem` on
    PATH): it starts the server over stdio, calls recall and prints the Lisbon trip's pieces."""
    code = docs_client_example()
    assert '"/home/you/.chatmem"' in code
    script = tmp_path / "client.py"
    script.write_text(code.replace("/home/you/.chatmem", str(memory_dir)), encoding="utf-8")
    bin_dir = Path(sys.executable).parent
    if not (bin_dir / "chatmem").exists():  # not installed as a package: a stand-in for the console script
        bin_dir = tmp_path / "bin"
        bin_dir.mkdir()
        shim = bin_dir / "chatmem"
        shim.write_text(f'#!/bin/sh\nPYTHONPATH={ROOT} exec {sys.executable} -m flows.cli "$@"\n')
        shim.chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
    done = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    assert lines and "Lisbon trip" in lines[0], done.stdout
    assert sum("Lisbon trip" in line for line in lines) > len(lines) / 2, done.stdout
