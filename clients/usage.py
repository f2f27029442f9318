"""Tokens one LLM call spent: a record of its own, so that what only names it (extract/types.py, read by the
offline extractor and its worker processes) does not import the OpenAI SDK (~0.6 CPU-s per process)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Usage:
    """Tokens one call spent, as the server reported them."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    reasoning_tokens: int = 0
