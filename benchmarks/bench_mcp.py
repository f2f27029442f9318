"""What the MCP transports add to each tool call: the same requests in-process (the baseline) and through
`chatmem mcp` over stdio and over streamable HTTP on 127.0.0.1, on one data dir.

    chatmem --data-dir benchmarks/out/demo run demo/longmemeval-demo.zip --to cues
    python benchmarks/bench_mcp.py --data-dir benchmarks/out/demo          # prints and writes its RESULTS.md section

Requests: one `recall` per question of the questions file (budget 1500 tokens), `search_concepts` with each
question's first words, `get_conversation` around each recall's best piece, `timeline` of each search's best
concept, and `topics`; every request set is run `--repeat` times after one warm-up round (the first recall of a
server process loads the index: reported on its own). Figures: p50 / p95 per tool in ms and the transport's p50
over the in-process p50. Not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from contracts.mcp import ConceptSearchRequest, ConversationRequest, TimelineRequest, TopicsRequest  # noqa: E402
from contracts.memory import RecallRequest  # noqa: E402
from contracts.settings import Settings  # noqa: E402
from memory.mcp_server import MemoryService  # noqa: E402

QUESTIONS = ROOT / "demo" / "longmemeval-demo-questions.json"
HEADING = "# MCP server: tool latency in-process, over stdio and over streamable HTTP"
Calls = list[tuple[str, dict[str, Any]]]


def plan(service: MemoryService, questions: list[str]) -> Calls:
    """The request set, made in-process so that every id in it exists."""
    calls: Calls = []
    for question in questions:
        recall = {"query": question, "budget_tokens": 1500}
        calls.append(("recall", recall))
        result = service.recall(RecallRequest.model_validate(recall))
        if result.pieces:
            best = min(result.pieces, key=lambda p: p.rank)
            around = {"conversation_id": best.conversation_id, "around_message_id": best.message_ids[0]}
            calls.append(("get_conversation", around))
        search = {"query": " ".join(question.split()[:6])}
        calls.append(("search_concepts", search))
        found = service.search_concepts(ConceptSearchRequest.model_validate(search))
        if found.concepts:
            calls.append(("timeline", {"concept": found.concepts[0].concept_id}))
    calls.append(("topics", {}))
    return calls


def in_process(service: MemoryService, calls: Calls, repeat: int) -> dict[str, list[float]]:
    bodies: dict[str, Callable[[dict[str, Any]], object]] = {
        "recall": lambda a: service.recall(RecallRequest.model_validate(a)),
        "search_concepts": lambda a: service.search_concepts(ConceptSearchRequest.model_validate(a)),
        "get_conversation": lambda a: service.get_conversation(ConversationRequest.model_validate(a)),
        "timeline": lambda a: service.timeline(TimelineRequest.model_validate(a)),
        "topics": lambda a: service.topics(TopicsRequest.model_validate(a)),
    }
    times: dict[str, list[float]] = {}
    for _ in range(repeat):
        for name, arguments in calls:
            started = time.perf_counter()
            bodies[name](arguments)
            times.setdefault(name, []).append(time.perf_counter() - started)
    return times


async def over_client(client: Client, calls: Calls, repeat: int) -> tuple[float, dict[str, list[float]]]:
    """(first recall's seconds: the index load, per-tool seconds of `repeat` rounds after a warm-up round)."""
    first = 0.0
    times: dict[str, list[float]] = {}
    for round_ in range(repeat + 1):
        for name, arguments in calls:
            started = time.perf_counter()
            result = await client.call_tool(name, arguments)
            took = time.perf_counter() - started
            if result.is_error:
                raise SystemExit(f"{name}({arguments}) failed: {result.content}")
            if round_ == 0 and name == "recall" and not first:
                first = took
            if round_ > 0:
                times.setdefault(name, []).append(took)
    return first, times


def stdio(data_dir: Path, calls: Calls, repeat: int) -> tuple[float, dict[str, list[float]]]:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "flows.cli", "--data-dir", str(data_dir), "mcp"], cwd=ROOT
    )

    async def main() -> tuple[float, dict[str, list[float]]]:
        with open(os.devnull, "w") as quiet:
            async with Client(stdio_client(params, errlog=quiet)) as client:
                return await over_client(client, calls, repeat)

    return anyio.run(main)


def http(data_dir: Path, calls: Calls, repeat: int) -> tuple[float, dict[str, list[float]]]:
    command = [sys.executable, "-m", "flows.cli", "--data-dir", str(data_dir), "mcp", "--http", "0"]
    process = subprocess.Popen(command, cwd=ROOT, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stderr is not None
        found = re.search(r"http://127\.0\.0\.1:\d+/mcp", process.stderr.readline())
        if not found:
            raise SystemExit("the HTTP server printed no URL")

        async def main() -> tuple[float, dict[str, list[float]]]:
            async with Client(found.group(0)) as client:
                return await over_client(client, calls, repeat)

        return anyio.run(main)
    finally:
        process.terminate()
        process.wait(timeout=30)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def section(figures: dict[str, Any], command: str) -> str:
    rows = [
        "| tool | calls | in-process p50 / p95 ms | stdio p50 / p95 ms | HTTP p50 / p95 ms | stdio ÷ in-process | "
        "HTTP ÷ in-process |",
        "|---|---|---|---|---|---|---|",
    ]
    base, over_stdio, over_http = figures["in_process"], figures["stdio"], figures["http"]
    for tool in sorted(base):
        b50, s50, h50 = (statistics.median(x[tool]) for x in (base, over_stdio, over_http))
        cells = [
            f"{percentile(x[tool], 0.5) * 1000:.1f} / {percentile(x[tool], 0.95) * 1000:.1f}"
            for x in (base, over_stdio, over_http)
        ]
        rows.append(f"| {tool} | {len(base[tool])} | {' | '.join(cells)} | {s50 / b50:.2f} | {h50 / b50:.2f} |")
    machine = figures["machine"]
    return "\n".join(
        [
            HEADING,
            "",
            f"Data dir: {figures['data_dir']} ({figures['messages']} messages); {figures['questions']} questions, "
            f"{figures['repeat']} rounds after a warm-up. Machine: {machine['platform']}, {machine['cpus']} CPUs, "
            f"load average {machine['load']} at the start (shared: orientation, not targets).",
            "",
            *rows,
            "",
            f"First `recall` of a server process (loads the recall index): stdio {figures['first_stdio']:.2f} s, "
            f"HTTP {figures['first_http']:.2f} s; later calls reuse the index.",
            "",
            "```",
            command,
            "```",
        ]
    )


def write_section(path: Path, text: str) -> None:
    """Replace this benchmark's section of RESULTS.md (heading to the next top-level heading), or append it."""
    old = path.read_text() if path.exists() else ""
    text = text.rstrip("\n") + "\n"
    start = old.find(HEADING)
    if start < 0:
        path.write_text(old.rstrip("\n") + "\n\n" + text)
        return
    end = old.find("\n# ", start + len(HEADING))
    path.write_text(old[:start] + text + ("\n" + old[end + 1 :] if end >= 0 else ""))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="Example: python benchmarks/bench_mcp.py --data-dir benchmarks/out/demo --repeat 3",
    )
    parser.add_argument("--data-dir", type=Path, required=True, help="a data dir the pipeline has run on (to cues)")
    parser.add_argument("--questions", type=Path, default=QUESTIONS, help="a JSON list of {question: ...}")
    parser.add_argument("--repeat", type=int, default=3, help="measured rounds after the warm-up round")
    parser.add_argument("--results", type=Path, default=ROOT / "benchmarks" / "RESULTS.md")
    parser.add_argument("--no-write", action="store_true", help="print only; RESULTS.md untouched")
    args = parser.parse_args(argv)
    questions = [q["question"] for q in json.loads(args.questions.read_text())]
    service = MemoryService(Settings(data_dir=args.data_dir))
    service.check()
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    calls = plan(service, questions)
    in_process(service, calls, 1)  # warm-up, as the servers get
    figures: dict[str, Any] = {"in_process": in_process(service, calls, args.repeat)}
    figures["first_stdio"], figures["stdio"] = stdio(args.data_dir, calls, args.repeat)
    figures["first_http"], figures["http"] = http(args.data_dir, calls, args.repeat)
    with service.databases() as (archive, _):
        messages = archive.execute("SELECT COUNT(*) FROM messages").fetchone()[0]
    figures |= {
        "data_dir": args.data_dir.name,
        "messages": messages,
        "questions": len(questions),
        "repeat": args.repeat,
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count(), "load": load},
    }
    command = "python benchmarks/bench_mcp.py " + " ".join(argv if argv is not None else sys.argv[1:])
    text = section(figures, command)
    print(text)
    if not args.no_write:
        write_section(args.results, text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
