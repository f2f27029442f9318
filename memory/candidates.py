"""Recall's candidate pre-pass: on a large memory, activation runs over a few thousand candidates, not all content.

    narrow(index, query, vector, request, settings)  -> Narrowed(view, keep) or None (small: score everything)
    ranked(index, query, vector, request, settings, switches, limit) -> (the index ranked, its Ranking)

Scoring every content node costs ~20 passes over n floats and a read of every key vector: linear in the memory
(185 ms p95 at 600k content). Above `recall.prepass_from` content in scope, a cheap first pass picks:
  - the best `prepass_top` content by BM25 over the keys (posting lists of the query's terms only),
  - the best `prepass_top` by key similarity, read from a few k-means lists (memory/dense_lists.py),
  - the best `prepass_top` reached through the query's cues (cue -> content edges),
then widens them to their graph neighbourhood: the whole conversation (the conversation tag's content, so the
session prior pools the same content it would without the pre-pass), their NEXT/PREV turns and merged groups.
memory.recall.rank then runs unchanged over that view (an index of the candidates only, the lexical scores
computed over the whole memory so BM25's statistics do not change). A scope (or `at`) leaving at most
`prepass_max_candidates` content is taken whole, exactly. Below `prepass_from` content in the memory nothing
changes: the dev benchmarks stay exact.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import numpy as np
from threadpoolctl import ThreadpoolController

from memory.answer import RequestLike, at_moment
from memory.dense_lists import ConversationMembers, DenseLists, PrepassTables
from memory.index import Array, MemoryIndex, Subset
from memory.recall import Ranking, Switches, _utc, candidate_mask, rank
from memory.session import view_sessions
from memory.sparse import CSR
from memory.text import BM25, terms

if TYPE_CHECKING:
    from contracts.settings import RecallSettings

_THREADS = ThreadpoolController()
ALL_ON = Switches()


class ScoredBM25(BM25):
    """BM25 scores already computed over the whole memory, served for a view's rows (same statistics)."""

    def __init__(self, scores: Array, whole: BM25 | None = None, keep: Array | None = None) -> None:
        super().__init__({}, CSR.empty((0, len(scores))), np.zeros(0))
        self.scores = scores
        self.whole = whole  # the whole memory's BM25, and the view's rows in it (memory.relevance.held_terms)
        self.keep = keep

    def score(self, query: object, rows: Array | None = None) -> Array:
        return self.scores if rows is None else self.scores[rows]


@dataclass(frozen=True)
class Narrowed:
    view: MemoryIndex  # the candidates as an index of their own (positions 0..len(keep)-1)
    keep: Array  # their positions in the whole index, ascending


def prepare(index: MemoryIndex) -> PrepassTables:
    """The pre-pass tables of `index`, built once (kept on the index)."""
    if index.prepass is None:
        members = ConversationMembers.build(index.conversation, len(index.conversation_ids))
        has_vectors = bool(index.dense.shape[0]) and bool(np.any(index.dense[: min(index.size, 1000)]))
        lists = DenseLists.build(index.dense, index.projection, index.coarse) if has_vectors else None
        index.prepass = PrepassTables(members, lists)
    return index.prepass


def _top(scores: Array, among: Array, k: int) -> Array:
    """The best `k` positions of `among` by `scores` (positive scores only), best first."""
    among = among[scores[among] > 0]
    if len(among) > k:
        among = among[np.argpartition(-scores[among], k - 1)[:k]]
    return among[np.argsort(-scores[among], kind="stable")]


def _in_scope(index: MemoryIndex, tables: PrepassTables, request: RequestLike) -> tuple[Array, Array]:
    """(positions, mask over them): content in scope and not after `at`; a conversation scope reads only its own
    conversations' content instead of a pass over the whole memory."""
    at = _utc(request.at).timestamp() if request.at is not None else None
    codes = [index.conversation_code[c] for c in request.scope.conversation_ids if c in index.conversation_code]
    if request.scope.conversation_ids:
        pool = np.sort(tables.members.of(np.array(codes, dtype=np.int64)))
        view = _view(index, pool, np.zeros(len(pool), np.float32))
        return pool, candidate_mask(view, request, at)
    mask = candidate_mask(index, request, at)
    return np.arange(index.size), mask


def narrow(
    index: MemoryIndex, query: str, vector: Array | None, request: RequestLike, settings: RecallSettings
) -> Narrowed | None:
    """The candidates of a recall on a large memory (None: small enough to score every content node); a scope
    with at most `prepass_max_candidates` content in it is taken whole."""
    if index.size < settings.prepass_from:
        return None
    tables = prepare(index)
    pool, pool_mask = _in_scope(index, tables, request)
    inside = pool[pool_mask]
    if len(inside) <= settings.prepass_max_candidates:  # a small scope (or `at`): all of it, exactly
        candidates = np.zeros(index.size, dtype=bool)
        candidates[inside] = True
        return Narrowed(_view(index, inside, index.bm25.score(terms(query), inside), candidates), inside)
    # A larger scope is narrowed like the whole memory: the lists read stop once `prepass_top` in-scope vectors
    # are found, so a sparse scope costs a few more lists, never a gather of everything in it.
    words = terms(query)
    mask = np.zeros(index.size, dtype=bool)
    mask[inside] = True
    lexical = index.bm25.score(words)
    picked = [_top(lexical, np.flatnonzero((lexical > 0) & mask), settings.prepass_top)]
    if vector is not None and tables.lists is not None:
        picked.append(_dense_top(index, tables.lists, vector, mask, settings.prepass_top))
    picked.append(_cue_top(index, words, mask, settings))
    keep = _neighbourhood(index, tables.members, picked, mask, settings.prepass_max_candidates)
    return Narrowed(_view(index, keep, lexical[keep], mask), keep)


def _dense_top(index: MemoryIndex, lists: DenseLists, vector: Array, mask: Array, k: int) -> Array:
    """The best `k` in scope by exact key similarity (best first), among the vectors of the lists nearest the
    query; more lists are read while fewer than `k` of them are in scope (a narrow `at` or source)."""
    probes = max(4, lists.lists // 64)
    while True:
        found = lists.probe(vector, probes)
        found = found[mask[found]]
        if len(found) >= k or probes >= lists.lists:
            break
        probes *= 4
    scores = np.zeros(index.size, np.float32)
    scores[found] = np.clip(index.dense[found] @ vector.astype(np.float32), 1e-6, None)
    return _top(scores, found, k)


def _cue_top(index: MemoryIndex, words: list[str], mask: Array, settings: RecallSettings) -> Array:
    """The best content reached through the query's cues (the same cue activation as recall's first hop)."""
    if not len(index.cue_ids):
        return np.zeros(0, dtype=np.int64)
    raw = index.cue_bm25.score(words) * index.cue_idf
    raw[index.cue_hub] *= 0.25
    if raw.max() <= 0:
        return np.zeros(0, dtype=np.int64)
    active = np.flatnonzero(raw >= settings.theta * raw.max())
    content = index.cue_content.take_rows(active).rmatvec(raw[active].astype(np.float32))
    return _top(content, np.flatnonzero((content > 0) & mask), settings.prepass_top)


def _neighbourhood(
    index: MemoryIndex, members: ConversationMembers, picked: list[Array], mask: Array, limit: int
) -> Array:
    """The seeds (each list best first) widened to their whole conversations, the conversation of a better seed
    first, while under `limit`; every seed keeps its NEXT/PREV turns, and merged groups stay whole. In scope
    only, ascending."""
    seeds = np.concatenate(picked).astype(np.int64)
    ranks = np.concatenate([np.arange(len(p)) for p in picked])
    beside = np.concatenate([index.prev[seeds], index.next[seeds]])
    chosen = [seeds, beside[beside >= 0]]
    room = limit - len(seeds) - len(beside)
    codes = index.conversation[seeds]
    known = codes >= 0
    conversations, where = np.unique(codes[known], return_inverse=True)
    best = np.full(len(conversations), np.iinfo(np.int64).max)
    np.minimum.at(best, where, ranks[known])
    conversations = conversations[np.lexsort((conversations, best))]  # a better seed's conversation first
    sizes = members.offsets[conversations + 1] - members.offsets[conversations]
    fits = sizes <= max(room, 0) // 8  # one conversation never takes more than an eighth of the room
    conversations, sizes = conversations[fits], sizes[fits]
    taken = np.cumsum(sizes) <= room
    conversations, sizes = conversations[taken], sizes[taken]
    if len(conversations):  # every member of the taken conversations, without a Python loop
        starts = members.offsets[conversations]
        shift = np.repeat(starts - np.concatenate([[0], np.cumsum(sizes)[:-1]]), sizes)
        chosen.append(members.order[shift + np.arange(int(sizes.sum()))])
    keep = np.unique(np.concatenate(chosen))
    if index.group:
        heads = np.unique(index.head[keep])
        grouped = [np.array(index.group[h], dtype=np.int64) for h in heads.tolist() if h in index.group]
        keep = np.unique(np.concatenate([keep, heads, *grouped]))
    inside: Array = keep[mask[keep]]
    return inside


def _local(keep: Array, positions: Array) -> Array:
    """Positions in the whole index -> positions in the view (-1 when not in it)."""
    if not len(keep):
        return np.full(len(positions), -1, dtype=np.int64)
    at = np.clip(np.searchsorted(keep, positions), 0, len(keep) - 1)
    return np.where((positions >= 0) & (keep[at] == positions), at, -1).astype(np.int64)


def _view(index: MemoryIndex, keep: Array, lexical: Array, candidates: Array | None = None) -> MemoryIndex:
    """`keep` (ascending positions) as an index of its own: every per-content array sliced, neighbours and groups
    renumbered, cues, tags and texts shared with the whole index; session keys read as the whole memory's
    `candidates` (a mask) allow (memory/session.py `view_sessions`)."""
    head = _local(keep, index.head[keep])
    head = np.where(head >= 0, head, np.arange(len(keep)))
    group: dict[int, list[int]] = {}
    for h in np.flatnonzero(head == np.arange(len(keep))).tolist() if index.group else []:
        originals = index.group.get(int(keep[h]))
        if originals:
            local = [int(x) for x in _local(keep, np.array(originals, dtype=np.int64)) if x >= 0]
            group[h] = local or [h]
    content_cue = index.content_cue.take_rows(keep)
    wanted = {m: int(p) for m, p in index.fact_positions.items()}
    where = _local(keep, np.array(list(wanted.values()), dtype=np.int64))
    return replace(
        index,
        ids=Subset(index.ids, keep),
        conversation=index.conversation[keep],
        seq=index.seq[keep],
        role_code=index.role_code[keep],
        speaker=index.speaker[keep] if index.speaker is not None else None,
        asks=index.asks[keep] if index.asks is not None else None,
        times=index.times[keep],
        day=index.day[keep],
        tokens=index.tokens[keep],
        source=index.source[keep],
        head=head,
        group=group,
        bm25=ScoredBM25(lexical.astype(np.float32), index.bm25, keep),
        dense=index.dense[keep] if index.dense.shape[0] else index.dense,
        cue_content=content_cue.transpose(),
        content_cue=content_cue,
        prev=_local(keep, index.prev[keep]),
        next=_local(keep, index.next[keep]),
        fact_positions={m: int(p) for m, p in zip(wanted, where.tolist(), strict=True) if p >= 0},
        position={},
        sessions=(
            view_sessions(index.sessions, index.conversation, candidates, keep)
            if index.sessions is not None and candidates is not None
            else index.sessions
        ),
        coarse=None,
        projection=None,
        prepass=None,
    )


def ranked(
    index: MemoryIndex,
    query: str,
    vector: Array | None,
    request: RequestLike,
    settings: RecallSettings,
    switches: Switches = ALL_ON,
    limit: int | None = None,
) -> tuple[MemoryIndex, Ranking, Array | None]:
    """rank() over the pre-pass's candidates (or over everything when the memory is small): (the index the
    ranking refers to, the ranking, the view's positions in `index` or None when it is `index` itself)."""
    if request.at is None and index.size >= settings.prepass_from and np.isfinite(index.times).any():
        # "now" is the whole memory's newest content, not the view's (decay and `at` must not move)
        newest = float(np.nanmax(index.times))
        request = at_moment(request, datetime.fromtimestamp(newest, UTC))
    # One BLAS thread: a recall's products are a few thousand rows, too small to gain from threads, and on a busy
    # machine waking and joining them cost 5-10x the work itself (measured: 33 ms vs 3 ms per product at load 17).
    with _THREADS.limit(limits=1, user_api="blas"):
        narrowed = narrow(index, query, vector, request, settings)
        if narrowed is None:
            return index, rank(index, query, vector, request, settings, switches, limit), None
        view = narrowed.view
        return view, rank(view, query, vector, request, settings, switches, limit), narrowed.keep
