"""Session-level keys and the session prior: a conversation tag read as one document, and scored by its best turns.

What published work measured on LongMemEval: a whole session as one key (the user's side of it) beats single
turns as keys (R@5 0.706 vs 0.582), and scoring a session by its best turns, used as a prior on every turn's
score, beats plain max or mean pooling. Here a conversation tag gets three readings, each scaled 0..1 over the
conversations that have candidates, and fused with fixed weights (`MemorySettings.session_*_weight`):

    key lexical   BM25 over the conversation's key-role messages as one document (their cue-expanded keys)
    key dense     the query against the conversation's key vector (the mean of its key-role message vectors)
    best turns    the mean of its best `session_best_turns` turns' direct scores (lexical + dense + cue)

A conversation of which only some messages are candidates (a scope window or `at` cuts through it) is read by
its best turns only: its whole-session key would let what is out of scope (or said after `at`) leak in.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from memory.text import BM25, TermCounts

Array = np.ndarray[Any, Any]


@dataclass
class SessionKeys:
    """One key per conversation (index order of `MemoryIndex.conversation_ids`)."""

    bm25: BM25  # one document per conversation: its key-role messages' key texts
    dense: Array  # conversations x dim, unit rows (zero where no key-role message has a vector)
    messages: Array  # messages per conversation (all of them: a candidate count below it means a cut session)


def build_session_keys(
    keys: Sequence[str],
    roles: Sequence[str],
    conversation: Array,
    conversations: int,
    dense: Array,
    key_roles: Sequence[str],
) -> SessionKeys:
    """Session keys from the messages' key texts and roles (index order), conversation codes and key vectors."""
    keyed = np.array([role in key_roles for role in roles], dtype=bool)
    counts = TermCounts.of_texts(key if k else "" for key, k in zip(keys, keyed, strict=True))
    return session_keys(counts, keyed, conversation, conversations, dense)


def session_vectors(keyed: Array, conversation: Array, conversations: int, dense: Array) -> Array:
    """Each conversation's key vector: the unit mean of its keyed messages' vectors (zero when none), summed in
    index order (a conversation's row depends on its own messages only)."""
    pick = np.flatnonzero(keyed & (conversation >= 0))
    dim = dense.shape[1] if dense.ndim == 2 else 0
    vectors = np.zeros((conversations, dim), dtype=np.float32)
    if dim and len(pick):
        np.add.at(vectors, conversation[pick], dense[pick])
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        vectors = np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0)
    return vectors


def conversation_counts(counts: TermCounts, keyed: Array, conversation: Array, conversations: int) -> TermCounts:
    """Each conversation's document: the sum of its keyed messages' term counts (terms no document holds left
    out)."""
    from scipy.sparse import csr_matrix  # build time only

    pick = np.flatnonzero(keyed & (conversation >= 0))
    member = csr_matrix((np.ones(len(pick)), (conversation[pick], pick)), shape=(conversations, counts.matrix.shape[0]))
    summed = (member @ counts.matrix).tocsc()
    used = np.flatnonzero(np.diff(summed.indptr))  # the terms some key-role message holds
    return TermCounts(summed[:, used], [counts.names[int(i)] for i in used])


def session_keys(
    counts: TermCounts,
    keyed: Array,
    conversation: Array,
    conversations: int,
    dense: Array,
    vectors: Array | None = None,
    summed: TermCounts | None = None,
) -> SessionKeys:
    """Session keys from the messages' term counts (memory.text.TermCounts, index order), which of them are of a
    key role, conversation codes and key vectors: a conversation's document is the sum of its keyed messages'
    counts (the same as BM25 over their terms joined). `vectors`, when given, are `session_vectors`' (an index
    patched from an earlier one keeps the untouched conversations' rows, memory/index_patch.py), and so are
    `summed`, the conversations' documents (no empty term column)."""
    if summed is None:
        summed = conversation_counts(counts, keyed, conversation, conversations)
    bm25 = BM25.from_counts(summed.matrix, summed.names)
    if vectors is None:
        vectors = session_vectors(keyed, conversation, conversations, dense)
    valid = conversation[conversation >= 0]
    return SessionKeys(
        bm25=bm25,
        dense=vectors,
        messages=np.bincount(valid, minlength=conversations).astype(np.int64),
    )


def unit(values: Array, mask: Array, *, shift: bool = False) -> Array:
    """Scale to 0..1 over `mask`: divided by the best, or min-max (`shift`, for cosines that can be negative)."""
    out = np.zeros_like(values, dtype=np.float32)
    if not mask.any():
        return out
    low, high = float(values[mask].min()), float(values[mask].max())
    if high <= 0:
        return out
    if not shift or high - low <= 1e-9:
        out[mask] = np.clip(values[mask] / high, 0, None)
        return out
    out[mask] = (values[mask] - low) / (high - low)
    return out


def best_turns(codes: Array, values: Array, mask: Array, size: int, turns: int) -> Array:
    """Each group's mean of its best `turns` (1 or 2) values among the candidates; a group with fewer candidates
    averages what it has. Two linear passes, no sort (recall runs over every candidate)."""
    pick = np.flatnonzero(mask & (codes >= 0))
    first = np.full(size, -np.inf, dtype=np.float32)
    np.maximum.at(first, codes[pick], values[pick])
    first = np.where(np.isfinite(first), first, 0.0).astype(np.float32)
    if turns < 2 or not len(pick):
        return first
    # each group's first holder of its best value steps aside; the rest compete for second place
    top = pick[values[pick] >= first[codes[pick]]]
    _, where = np.unique(codes[top], return_index=True)
    rest = np.ones(len(values), dtype=bool)
    rest[top[where]] = False
    rest = pick[rest[pick]]
    second = np.full(size, -np.inf, dtype=np.float32)
    np.maximum.at(second, codes[rest], values[rest])
    has_second = np.isfinite(second)
    return np.where(has_second, (first + np.where(has_second, second, 0.0)) / 2, first).astype(np.float32)


def session_activation(
    sessions: SessionKeys | None,
    conversation: Array,
    mask: Array,
    words: Sequence[str],
    query_vector: Array | None,
    base: Array,
    weights: tuple[float, float, float],
    turns: int,
) -> Array:
    """Each conversation's fused session score (0..1 over the conversations with candidates, before pruning).

    `weights` are (key lexical, key dense, best turns); `base` is every content's direct score (0 outside `mask`).
    Without session keys (`sessions` None, or both key weights 0) the best turns alone score a conversation.
    """
    size = int(conversation.max()) + 1 if len(conversation) else 0
    if sessions is not None:
        size = max(size, len(sessions.messages))
    pick = mask & (conversation >= 0)
    present = np.bincount(conversation[pick], minlength=size)
    has = present > 0
    best = unit(best_turns(conversation, base, mask, size, turns), has)
    lexical_w, dense_w, best_w = weights
    if sessions is None or lexical_w + dense_w <= 0:
        return best
    whole = has & (present >= sessions.messages[:size])  # cut sessions are read by their best turns only
    fused, total = best_w * best, best_w
    if lexical_w > 0:
        fused, total = fused + lexical_w * unit(sessions.bm25.score(words), whole), total + lexical_w
    if dense_w > 0 and query_vector is not None and sessions.dense.shape[1] == len(query_vector):
        cosine = sessions.dense @ query_vector.astype(np.float32)
        fused, total = fused + dense_w * unit(cosine, whole, shift=True), total + dense_w
    fused = np.where(whole, fused / max(total, 1e-9), best)
    return np.where(has, fused, 0.0).astype(np.float32)


def view_sessions(sessions: SessionKeys, conversation: Array, candidates: Array, keep: Array) -> SessionKeys:
    """The session keys as a view of the content at `keep` reads them (the candidate pre-pass, memory/candidates.py):
    a conversation no scope or `at` cuts (all its content among `candidates`, a mask over the whole memory) stays
    whole in the view, however much of it the view keeps; a cut one stays cut."""
    size = len(sessions.messages)
    whole = np.bincount(conversation[candidates & (conversation >= 0)], minlength=size) >= sessions.messages
    kept = conversation[keep]
    in_view = np.bincount(kept[kept >= 0], minlength=size)
    return replace(sessions, messages=np.where(whole, in_view, np.iinfo(np.int64).max))
