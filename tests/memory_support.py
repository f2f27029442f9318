"""Small hand-made memories for the recall tests: messages with chosen times, built by the real graph builder."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import numpy as np

from contracts.settings import MemorySettings, RecallSettings
from memory.graph import EvidenceInput, MessageInput, build_graph
from memory.index import MemoryIndex, build_index

T0 = datetime(2024, 1, 1, 12, 0, tzinfo=UTC)


def msg(
    conversation: str, seq: int, text: str, day: int, role: str = "user", source: str = "jsonl", minute: int = 0
) -> MessageInput:
    """Message `<conversation>-<seq>` written `day` days (and `minute` minutes) after T0."""
    when = (T0 + timedelta(days=day, minutes=minute)).isoformat()
    return MessageInput(
        f"{conversation}-{seq}", conversation, f"title {conversation}", seq, role, None, when, text, source
    )


def memory(
    messages: Sequence[MessageInput],
    evidence: Sequence[EvidenceInput] = (),
    settings: RecallSettings | None = None,
) -> tuple[MemoryIndex, RecallSettings]:
    """The index of a graph built from `messages` (no vectors: dense scores are zero), and the recall settings."""
    config = settings or RecallSettings()
    graph, _ = build_graph(messages, evidence, [], MemorySettings())
    dense = np.zeros((len(messages), 8), dtype=np.float32)
    texts = {m.uuid: m.text for m in messages}
    return build_index(graph, "run-t", dense, texts=texts), config
