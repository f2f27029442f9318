"""The gardener in recall: content that states a fact of the question gains score, the fact that holds at `at`
more than one a newer statement superseded, so "where do I live?" at 2023-06 brings Berlin first and Paris after.

    memory.index.attach_facts(index, staging)   once per index (load_index): the facts and their messages
    fact_boost(index, query, at, mask, ...)   per query: what to add to each content's score

The facts come from the garden stage (staging.facts, read through staging.fact_timeline); recall adds
`fact_boost(...)` to its scores (memory/recall.py) unless the `facts` switch is off (the ablation that measures
the gardener): `fact_weight` for a current statement of the question, half for a superseded one, and the current
one always above the superseded ones of the same fact. Within a scope, validity is judged among the facts in
scope only.
"""

from __future__ import annotations

from datetime import datetime

import numpy as np

from memory.index import Array, MemoryIndex
from staging.fact_timeline import fact_groups, fact_prior


def fact_boost(
    index: MemoryIndex, query: str, at: datetime | None, mask: Array, scoped: bool, score: Array, weight: float
) -> Array:
    """What to add to `score`: `weight` for content stating a fact of the question valid at `at`, half that for a
    superseded one; and, per fact, enough more that the current statement ranks above every superseded one."""
    add = np.zeros(index.size, np.float32)
    if not index.facts:
        return add
    positions = index.fact_positions

    def within(message_id: str) -> bool:
        i = positions.get(message_id)
        return i is not None and bool(mask[i])

    where = within if scoped else None
    when = at.isoformat() if at else None
    for message_id, share in fact_prior(index.facts, query, when, where).items():
        i = positions.get(message_id)
        if i is not None and mask[i]:
            add[i] = weight * share
    for current, superseded in fact_groups(index.facts, query, when, where):
        old = [positions[m] for m in superseded if m in positions and mask[positions[m]]]
        new = [positions[m] for m in current if m in positions and mask[positions[m]]]
        if not old or not new:
            continue
        floor = max(float(score[i] + add[i]) for i in old) + 1e-3
        for i in new:
            add[i] += max(0.0, floor - float(score[i] + add[i]))
    return add
