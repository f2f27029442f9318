"""Tokens an LLM extractor spends per 1k messages, measured on the real exports (issue 12, docs/scale.md).

The real exports in ../shared/data/exports go through ingest and segment, then through the extract stage with
the LLM extractor pointed at the loopback server of tests/llm_server.py, which records every request the stage
sends: the exact bodies of extract/llm_request.py. Each recorded request is counted with OpenAI's o200k_base
tokenizer (the `bpe-openai` package, which ships its vocabulary: no download; else ceil(chars / 4), said in the
output):

- input: every message's content, plus 3 tokens per message and 3 for the reply (OpenAI's chat framing), plus
  the strict JSON schema sent as response_format (providers put it in the prompt; counted once per request);
- visible output: the answer the contract asks for, approximated by the offline extractor's own answer for the
  same segment serialised as an ExtractionResponse (hypotheses and facts), whitespace-free;
- reasoning output at low effort: not measurable without a model; the plan states its assumption.

    pip install bpe-openai==0.1.4   # optional, for exact o200k counts
    python benchmarks/llm_tokens.py [--exports DIR] [--json]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from contracts.concepts import ExtractionResponse  # noqa: E402
from contracts.settings import LLMSettings, Settings  # noqa: E402
from extract.llm_request import strict_schema  # noqa: E402
from extract.offline import OfflineExtractor  # noqa: E402
from extract.stage_extract import _inputs  # noqa: E402
from flows.stage_runner import run_stage_now  # noqa: E402
from staging import segments as segment_store  # noqa: E402
from staging.archive import open_archive  # noqa: E402
from staging.ledger import open_run, open_staging  # noqa: E402
from tests.llm_server import FakeLLMServer  # noqa: E402

SHARED = ROOT.parent / "shared" / "data" / "exports"
NOT_EXPORTS = ("invalid-skeleton", "side-files", "shared_conversations.json", "model_comparisons.json")


def counter() -> tuple[str, Any]:
    try:
        import bpe_openai

        encoding = bpe_openai.get_encoding("o200k_base")
        return "o200k_base (bpe-openai 0.1.4)", lambda text: len(encoding.encode(text))
    except ImportError:
        return "estimate ceil(chars/4)", lambda text: math.ceil(len(text) / 4)


def measure(exports: list[Path]) -> dict[str, Any]:
    name, count = counter()
    server = FakeLLMServer().start()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            llm = LLMSettings(model="gpt-5-mini", base_url=server.base_url, api_key="unused", reasoning_effort="low")
            settings = Settings(data_dir=Path(tmp))
            settings.extract = settings.extract.model_copy(update={"llm": llm})
            archive, staging = open_archive(settings.archive_path), open_staging(settings.staging_path)
            open_run(
                staging, stages=["all"], exports=[str(p) for p in exports], settings={}, code_version="x", run_id="t"
            )
            run_stage_now("ingest", archive, staging, run_id="t", settings=settings, exports=exports)
            run_stage_now("segment", archive, staging, run_id="t", settings=settings)
            result = run_stage_now("extract", archive, staging, run_id="t", settings=settings)
            segments = list(segment_store.iter_current_segments(staging))
            offline = OfflineExtractor(settings.extract.offline_max_concepts)
            answers, message_texts = [], []
            for start in range(0, len(segments), 500):
                for segment in _inputs(archive, segments[start : start + 500]):
                    out = offline.extract(segment)
                    message_texts.extend(m.text for m in segment.messages)
                    answers.append(ExtractionResponse(hypotheses=out.hypotheses, facts=out.facts).model_dump_json())
            archive.close()
            staging.close()
    finally:
        server.stop()
    bodies = [r.body for r in server.requests if r.path == "/v1/chat/completions"]
    schema_tokens = count(json.dumps(strict_schema(), separators=(",", ":")))
    content = sum(count(m["content"]) for b in bodies for m in b["messages"])
    system = sum(count(m["content"]) for b in bodies for m in b["messages"] if m["role"] == "system")
    texts = sum(count(t) for t in message_texts)
    framing = sum(3 * len(b["messages"]) + 3 for b in bodies)
    messages = result.counts["messages_sent"]
    visible = sum(count(a) for a in answers)
    per_1k = 1000 / messages if messages else 0.0
    return {
        "tokenizer": name,
        "requests": len(bodies),
        "segments": len(segments),
        "messages_sent": messages,
        "input_tokens": content + framing + schema_tokens * len(bodies),
        "input_prompt_and_messages": content + framing,
        "input_schema_per_request": schema_tokens,
        "input_system_prompt_per_request": round(system / len(bodies)) if bodies else 0,
        "message_text_tokens": texts,
        "input_tokens_per_message_text_token": round((content + framing + schema_tokens * len(bodies)) / texts, 3)
        if texts
        else 0.0,
        "visible_output_tokens_proxy": visible,
        "input_tokens_per_1k_messages": round((content + framing + schema_tokens * len(bodies)) * per_1k),
        "visible_output_tokens_per_1k_messages": round(visible * per_1k),
        "requests_per_1k_messages": round(len(bodies) * per_1k, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--exports", type=Path, default=SHARED, help="Directory searched for *.json exports.")
    parser.add_argument("--json", action="store_true", help="Print the figures as JSON.")
    args = parser.parse_args()
    exports = sorted(p for p in args.exports.rglob("*.json") if not any(n in str(p) for n in NOT_EXPORTS))
    figures = measure(exports)
    print(json.dumps(figures, indent=2) if args.json else "\n".join(f"{k}: {v}" for k, v in figures.items()))


if __name__ == "__main__":
    main()
