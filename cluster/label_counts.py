"""What the LLM topic labels did in one cluster run: a record of its own, so that a run without an endpoint does
not import the OpenAI SDK (cluster/labels_llm.py) to count nothing (~0.6 CPU-s per process)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True)
class LabelCounts:
    calls: int = 0
    cached: int = 0
    failed: int = 0
    refused: int = 0  # topics not asked, or refused, because the endpoint refused the key: left for the next run
