"""Active recall: query -> cues -> tags -> content over a MemoryIndex, then a context within a token budget.

Spreading activation, depth <= 3 (query -> cue -> tag -> content):
  1. the query reaches content directly (BM25 over cue-expanded keys, and the embedding of the query, the
     speakers' names masked, against each key) and reaches cues (BM25 over cue names; a cue's activation is
     scaled by its IDF, so hubs count little); cues whose activation is below θ x the best cue's are pruned;
     the speaker tags the query names (memory/names.py) weigh their content up;
  2. the first hop's best content spreads through its own cues to the other content they link (the second
     hop), and every content passes some activation along NEXT/PREV (more to the reply of a question);
  3. every conversation and day tag pools the activation of its best content (and what the query's cues send
     it); tags below θ x the best tag are pruned; the rest feed their pooled activation back to all their
     content as a prior, decayed by w = exp(-λ·Δt) with Δt measured from `at` (never the wall clock).
An explicit time expression in the query ("last month") moves content outside its range down (never out).
Content said after `at`, or outside the scope, never takes part.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import numpy as np

from clients.embedders import Embedder, reads_word_pieces, whole_words
from clients.shown import THINKING_ONLY, shown_text
from memory.answer import Answer, Piece, RequestLike, Step, to_contract
from memory.fact_boost import fact_boost
from memory.index import Array, MemoryIndex
from memory.names import Names
from memory.relevance import KEY_SHARE, could_hold, held_terms, key_terms, weak_reason, window
from memory.session import session_activation, unit
from memory.text import cue_terms, distinct_words, estimate_tokens, stop_words, term_set, terms, terms_of
from memory.timeexpr import TimeRange, find_range, range_factor

if TYPE_CHECKING:
    from contracts.memory import RecallResult
    from contracts.settings import RecallSettings

log = logging.getLogger(__name__)

DAY_S = 86400.0
HOP_SEEDS = 5  # the first hop's best content that spreads through its cues (memory.recall.second_hop)


@dataclass(frozen=True, slots=True)
class Switches:
    """Parts of the engine that an ablation can turn off (all on in normal use)."""

    cues: bool = True
    tags: bool = True
    decay: bool = True
    time_filter: bool = True
    dense: bool = True
    lexical: bool = True
    facts: bool = True  # the garden's facts: current statements first (memory/fact_boost.py)
    session_keys: bool = True  # a conversation read as one key (memory/session.py); off: its best turns only
    speakers: bool = True  # the speaker tags a query names (memory/names.py)
    second_hop: bool = True  # the best content's cues -> more content


@dataclass
class Ranking:
    """Every candidate's score and why; `order` is best first (one entry per merged group)."""

    order: Array
    score: Array
    lexical: Array
    dense: Array
    cue: Array
    tag: Array
    cue_activation: list[tuple[int, float]]
    conversation_activation: Array
    time_range: TimeRange | None
    at: datetime | None
    candidates: int


def _utc(value: datetime) -> datetime:
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def candidate_mask(index: MemoryIndex, request: RequestLike, at_s: float | None) -> Array:
    """Content in scope and not said after `at`."""
    mask = np.ones(index.size, dtype=bool)
    scope = request.scope
    if scope.conversation_ids:
        codes = index.conversation_code
        wanted = np.array([codes[c] for c in scope.conversation_ids if c in codes], dtype=np.int64)
        mask &= np.isin(index.conversation, wanted)
    if scope.sources:
        wanted = np.array([i for i, s in enumerate(index.sources) if s in scope.sources], dtype=np.int64)
        mask &= np.isin(index.source, wanted)
    if scope.since is not None:
        mask &= index.times >= _utc(scope.since).timestamp()
    if scope.until is not None:
        mask &= index.times <= _utc(scope.until).timestamp()
    if at_s is not None:
        mask &= ~(index.times > at_s)  # unknown times (NaN) cannot be shown to be later: kept
    return mask


def _pool(codes: Array, values: Array, mask: Array, size: int) -> Array:
    """Each group's best value among the candidates (groups with none: 0)."""
    pooled = np.zeros(size, dtype=np.float32)
    pick = np.flatnonzero(mask & (codes >= 0) & (values > 0))  # zeros change no maximum: skip them (speed)
    np.maximum.at(pooled, codes[pick], values[pick])
    return pooled


def rank(
    index: MemoryIndex,
    query: str,
    query_vector: Array | None,
    request: RequestLike,
    settings: RecallSettings,
    switches: Switches = Switches(),
    limit: int | None = None,
) -> Ranking:
    """Score every candidate for the query; `order` covers all of them (the benchmarks need full rankings), or
    only the best `limit` (what a recall needs)."""
    at = _utc(request.at) if request.at is not None else None
    newest = float(np.nanmax(index.times)) if index.size and np.isfinite(index.times).any() else None
    at_s = at.timestamp() if at is not None else newest
    mask = candidate_mask(index, request, at.timestamp() if at is not None else None)
    words = terms(query)
    lexical, dense = _direct(index, words, query_vector, mask, switches)
    cues = _cue_activation(index, words, mask, settings, switches)
    base = (
        settings.lexical_weight * lexical + settings.dense_weight * dense + settings.cue_content_weight * cues.content
    ) * _role_weight(index, settings)
    if switches.speakers and settings.speaker_prior > 0 and index.speaker is not None:
        base = base * speaker_prior(index, query, settings.speaker_prior)
    base[~mask] = 0.0
    if switches.cues and switches.second_hop and settings.hop_weight > 0 and len(index.cue_ids):
        base = (base + settings.hop_weight * second_hop(index, base, mask, settings)).astype(np.float32)
    if max(settings.next_weight, settings.reply_weight) > 0 and index.size:
        base = base + _beside(index, base, mask, settings)
    tag, conversation_activation = _tag_prior(index, words, query_vector, base, mask, at_s, cues, settings, switches)
    score = base + tag
    time_range = None
    if switches.time_filter and settings.time_filter and at_s is not None:
        time_range = find_range(query, datetime.fromtimestamp(at_s, UTC))
        if time_range is not None:
            score = score * range_factor(index.times, time_range, settings.out_of_range_factor)
    if switches.facts and settings.fact_weight > 0 and index.facts:
        score = score + _fact_boost(index, query, request, at_s, mask, score, settings.fact_weight)
    score = score.astype(np.float32)
    if index.group:  # a merged group competes once, with its best original's score, as its head
        np.maximum.at(score, index.head, score)
        mask = mask & (index.head == np.arange(index.size))
    return Ranking(
        order=_best_first(index, score, mask, limit),
        score=score,
        lexical=lexical,
        dense=dense,
        cue=cues.content,
        tag=tag,
        cue_activation=cues.active,
        conversation_activation=conversation_activation,
        time_range=time_range,
        at=datetime.fromtimestamp(at_s, UTC) if at_s is not None else None,
        candidates=int(mask.sum()),
    )


def _direct(
    index: MemoryIndex, words: list[str], query_vector: Array | None, mask: Array, switches: Switches
) -> tuple[Array, Array]:
    """The first hop, query -> content: (BM25 over the keys, key similarity), each scaled 0..1 over the mask."""
    lexical_raw = index.bm25.score(words) if switches.lexical else np.zeros(index.size, np.float32)
    lexical = unit(lexical_raw, mask)
    if switches.dense and query_vector is not None and index.dense.shape[0]:
        dense_raw = index.similarity(query_vector)
    else:
        dense_raw = np.zeros(index.size, np.float32)
    return lexical, unit(dense_raw, mask, shift=True)


@dataclass
class _Cues:
    content: Array  # per content: what the active cues send it (0..1 over the mask)
    active: list[tuple[int, float]]  # (cue, activation relative to the best), best first
    conversations: Array  # per conversation: what the active cues send its tag (not scaled)


def _cue_activation(
    index: MemoryIndex, words: list[str], mask: Array, settings: RecallSettings, switches: Switches
) -> _Cues:
    """query -> cue: BM25 over cue names x the cue's IDF (hubs a quarter), pruned below θ x the best; a cue none of
    whose content is a candidate was not known at `at` (or is out of scope): it neither activates nor shows."""
    none = _Cues(np.zeros(index.size, np.float32), [], np.zeros(len(index.conversation_ids), np.float32))
    if not switches.cues or not len(index.cue_ids):
        return none
    raw = index.cue_bm25.score(cue_terms(words)) * index.cue_idf  # not the words about the asking
    raw[index.cue_hub] *= 0.25  # a hub still counts, a little (it matched), but never leads
    if raw.max() > 0 and not mask.all():
        # (`recall "aws glue" --at` listed cues first seen weeks later)
        raw = raw * (index.cue_content.matvec(mask.astype(np.float32)) > 0)
    if raw.max() <= 0:
        return none
    raw = raw / raw.max()
    keep = np.flatnonzero(raw >= settings.theta)
    active = sorted(((int(c), float(raw[c])) for c in keep), key=lambda x: (-x[1], x[0]))
    weights = np.zeros(len(index.cue_ids), np.float32)
    weights[keep] = raw[keep]
    content = unit(index.content_cue.matvec(weights), mask)
    return _Cues(content, active, index.cue_conversation.rmatvec(weights).astype(np.float32))


def _role_weight(index: MemoryIndex, settings: RecallSettings) -> Array:
    by_role = np.array(
        [1.0 if r in settings.key_roles else settings.other_role_weight for r in index.roles] or [1.0], np.float32
    )
    return by_role[index.role_code]


def _beside(index: MemoryIndex, base: Array, mask: Array, settings: RecallSettings) -> Array:
    """One hop along NEXT/PREV: the turn beside a match; the reply to a question gets more of the question's."""
    beside = np.zeros(index.size, np.float32)
    has_prev, has_next = index.prev >= 0, index.next >= 0
    before = index.prev[has_prev]
    asked = index.asks[before] if index.asks is not None else np.zeros(len(before), dtype=bool)
    reply = max(settings.reply_weight, settings.next_weight)
    beside[has_prev] = base[before] * np.where(asked, reply, settings.next_weight)
    beside[has_next] = np.maximum(beside[has_next], settings.next_weight * base[index.next[has_next]])
    return np.where(mask, beside, 0.0).astype(np.float32)


def _tag_prior(
    index: MemoryIndex,
    words: list[str],
    query_vector: Array | None,
    base: Array,
    mask: Array,
    at_s: float | None,
    cues: _Cues,
    settings: RecallSettings,
    switches: Switches,
) -> tuple[Array, Array]:
    """content -> tag -> content: (each content's prior from its conversation and day tags, decayed from `at`;
    every conversation tag's activation after pruning)."""
    tag = np.zeros(index.size, np.float32)
    conversation_activation = np.zeros(len(index.conversation_ids), np.float32)
    if not (switches.tags and mask.any() and settings.max_depth >= 3):
        return tag, conversation_activation
    decay: Array | float = 1.0
    if switches.decay and at_s is not None and settings.decay_lambda_per_day > 0:
        age = np.clip((at_s - index.times) / DAY_S, 0, None)
        decay = np.exp(-settings.decay_lambda_per_day * np.nan_to_num(age, nan=0.0)).astype(np.float32)
    keyed = switches.session_keys
    pooled = session_activation(
        index.sessions,
        index.conversation,
        mask,
        words,
        query_vector if switches.dense else None,
        base,
        (
            settings.session_lexical_weight * keyed * switches.lexical,
            settings.session_dense_weight * keyed,
            settings.session_best_weight,
        ),
        settings.session_best_turns,
    )
    conv_from_cues = cues.conversations
    if conv_from_cues.max() > 0:
        pooled = pooled + settings.cue_weight * conv_from_cues / conv_from_cues.max() * pooled.max()
    conversation_activation = _prune(pooled, settings.theta)
    tag = settings.session_prior * conversation_activation[index.conversation] * decay
    days = int(index.day.max()) + 1 if index.size else 0
    if settings.day_prior > 0 and days > 0:  # no day at all: an export without timestamps
        day_activation = _prune(_pool(index.day, base, mask, days), settings.theta)
        tag += settings.day_prior * np.where(index.day >= 0, day_activation[index.day], 0.0) * decay
    tag[~mask] = 0.0
    return tag, conversation_activation


def _fact_boost(
    index: MemoryIndex, query: str, request: RequestLike, at_s: float | None, mask: Array, score: Array, weight: float
) -> Array:
    scope = request.scope
    scoped = bool(scope.conversation_ids or scope.sources or scope.since) or scope.until is not None
    at_time = datetime.fromtimestamp(at_s, UTC) if at_s is not None else None
    return fact_boost(index, query, at_time, mask, scoped, score, weight)


def _best_first(index: MemoryIndex, score: Array, mask: Array, limit: int | None) -> Array:
    """The candidates best first (ties: earlier seq first); only the best `limit` need an order (recall, not
    eval)."""
    candidates = np.flatnonzero(mask)
    if limit is not None and len(candidates) > limit:
        candidates = candidates[np.argpartition(-score[candidates], limit - 1)[:limit]]
    return candidates[np.lexsort((index.seq[candidates], -score[candidates]))]


def second_hop(index: MemoryIndex, base: Array, mask: Array, settings: RecallSettings) -> Array:
    """Spreading activation's second hop (0..1 per content): the first hop's best content (`HOP_SEEDS`, by their
    direct scores) activates its cues (weighted by the seed's score and the cue's IDF; hubs spread nothing; below
    θ x the best cue pruned), and those cues activate the content they link. A fact split over two turns that
    share an anchor ("my home country" ... "my home country, Sweden") is reached through it."""
    candidates = np.flatnonzero(mask & (base > 0))
    if not len(candidates):
        return np.zeros(index.size, np.float32)
    seeds = candidates[np.argsort(-base[candidates], kind="stable")[:HOP_SEEDS]]
    cues = index.content_cue.take_rows(seeds).rmatvec(base[seeds] / base[seeds].max()) * index.cue_idf
    cues[index.cue_hub] = 0.0
    if cues.max() <= 0:
        return np.zeros(index.size, np.float32)
    cues = cues / cues.max()
    cues[cues < settings.theta] = 0.0
    return unit(index.content_cue.matvec(cues.astype(np.float32)), mask)


def speaker_prior(index: MemoryIndex, query: str, weight: float) -> Array | float:
    """The speaker tags the query names, fed to their content: what a named person said counts 1 + weight times
    (a prior on the direct evidence, not evidence itself: a turn that matches nothing stays at nothing)."""
    named = index.names.named_in(query)
    if not named or index.speaker is None:
        return 1.0
    codes = [index.names.names.index(n) for n in named]
    return np.where(np.isin(index.speaker, codes), 1.0 + weight, 1.0).astype(np.float32)


def _prune(pooled: Array, theta: float) -> Array:
    """Tags scaled by the best one; those below θ spread nothing."""
    top = float(pooled.max()) if len(pooled) else 0.0
    if top <= 0:
        return np.zeros_like(pooled)
    scaled = pooled / top
    return np.where(scaled >= theta, scaled, 0.0).astype(np.float32)


@dataclass
class Selection:
    """The pieces of an answer: `chosen` best first; `windows`: chosen rows too big for the budget left, shown as a
    window of that many tokens; `skipped`: the next best row, left out (too big, and too little budget left for a
    window), as (row, its tokens, the tokens that were left): the answer ends before it."""

    chosen: list[int]
    windows: dict[int, int]
    skipped: list[tuple[int, int, int]]
    replies: dict[int, int] = field(default_factory=dict)  # a reply shown after its question: reply -> question

    @property
    def pieces(self) -> int:
        """What counts against max_pieces: a reply rides along with its question, the two one piece."""
        return len(self.chosen) - len(self.replies)


def plan(index: MemoryIndex, ranking: Ranking, budget: int, max_pieces: int) -> Selection:
    """The best pieces within the budget, best first. A piece too big for what is left is never silently dropped:
    with at least WINDOW_MIN_TOKENS left it comes as a window around the query's words (of what is left, at most
    half the budget while others may follow; the first piece whatever is left), else it is left out, said so
    (`skipped`), and the answer ends there: a smaller piece further down would fill the budget with worse ones.
    A turn showing nothing but a model's notes is no piece. A user's turn brings the reply to it (`_add_reply`),
    and the two count as one of `max_pieces`: a question alone answers nothing, even with `--max-pieces 1`."""
    selection = Selection([], {}, [])
    chosen, windows, skipped = selection.chosen, selection.windows, selection.skipped
    used = 0
    for i in ranking.order.tolist():
        if ranking.score[i] <= 0 or selection.pieces >= max_pieces:
            break
        if i in selection.replies:
            continue  # shown already, after the question it answers
        if shown_text(index.text(i)) == THINKING_ONLY:
            continue  # a model's notes only (a ChatGPT reasoning turn): nothing to show
        cost = _cost(index, i)
        left = budget - used
        if cost > left:
            if left >= WINDOW_MIN_TOKENS or (not chosen and left >= FIRST_WINDOW_MIN_TOKENS):
                if selection.pieces + 1 >= max_pieces:  # the last piece: what is left, less its reply's share
                    share = max(left - _reply_share(index, ranking, i, budget, selection), min(left, WINDOW_MIN_TOKENS))
                else:
                    share = min(left, max(budget // 2, WINDOW_MIN_TOKENS))
                chosen.append(i)
                windows[i] = share
                used += share
                used += _add_reply(index, ranking, i, budget, budget - used, selection)
                continue
            # too big for what is left: stop here rather than fill the rest with pieces further down, which are
            # worse by the ranking's own measure (the answer says a better piece was left out, `budget_note`)
            skipped.append((i, cost, left))
            break
        chosen.append(i)
        used += cost
        used += _add_reply(index, ranking, i, budget, budget - used, selection)
    return selection


def _add_reply(index: MemoryIndex, ranking: Ranking, i: int, budget: int, left: int, selection: Selection) -> int:
    """A user's turn chosen for the answer brings the assistant's reply to it, right after it: what a person asking
    their own archive wants is what they were told, not only that they asked (replies rank below the user's own
    words, which say what the conversation is about; and a request rarely ends in "?"). At most REPLY_SHARE of
    the budget, as a window around the query's words when longer; none when less than WINDOW_MIN_TOKENS is left,
    or the reply is chosen already. It counts with its question against max_pieces (`Selection.pieces`). The
    tokens it takes."""
    reply = _reply_to_show(index, ranking, i, selection)
    if reply < 0 or left < WINDOW_MIN_TOKENS:
        return 0
    cost = _cost(index, reply)
    share = min(left, max(int(budget * REPLY_SHARE), WINDOW_MIN_TOKENS))
    selection.chosen.append(reply)
    selection.replies[reply] = i
    if cost <= share:
        return cost
    selection.windows[reply] = share
    return share


def _reply_to_show(index: MemoryIndex, ranking: Ranking, i: int, selection: Selection) -> int:
    """The reply `_add_reply` would show after turn `i`, or -1: none for a turn that is not a user's, none merged
    into an earlier turn's node (shown there, whole, if at all), out of the request's scope or time (`rank` zeroes
    those), or chosen already."""
    reply = _reply_of(index, i) if index.roles[int(index.role_code[i])] == "user" else -1
    if reply < 0 or int(index.head[reply]) != reply or ranking.score[reply] <= 0 or reply in selection.chosen:
        return -1
    return reply


def _reply_share(index: MemoryIndex, ranking: Ranking, i: int, budget: int, selection: Selection) -> int:
    """The tokens to leave for the reply to turn `i` (`_add_reply` shows one only with WINDOW_MIN_TOKENS left): 0
    when it brings none."""
    reply = _reply_to_show(index, ranking, i, selection)
    if reply < 0:
        return 0
    return max(min(_cost(index, reply), int(budget * REPLY_SHARE)), WINDOW_MIN_TOKENS)


def _cost(index: MemoryIndex, i: int) -> int:
    """The tokens of row `i` shown whole (a merged group: all its originals)."""
    return int(index.tokens[index.group[i]].sum()) if i in index.group else int(index.tokens[i])


def _reply_of(index: MemoryIndex, i: int) -> int:
    """The assistant's turn answering turn `i`: the next turn that shows something, past a model's notes
    (ChatGPT's reasoning turns: "[thinking, not shown]"), tool turns and the user's own repeat of `i` (merged with
    it: the same question sent again), at most REPLY_STEPS turns on; -1 when a person speaks first, or none is
    found."""
    own = int(index.head[i])
    j = int(index.next[i])
    for _ in range(REPLY_STEPS):
        if j >= 0 and int(index.head[j]) == own:
            j = int(index.next[j])  # `i` said again, before any answer: the answer comes after the repeat
            continue
        if j < 0 or index.roles[int(index.role_code[j])] in ("user", "other"):
            return -1
        if index.roles[int(index.role_code[j])] == "assistant" and shown_text(index.text(j)) != THINKING_ONLY:
            return j
        j = int(index.next[j])
    return -1


def select(index: MemoryIndex, ranking: Ranking, budget: int, max_pieces: int) -> list[int]:
    """The rows of `plan`: the best pieces within the budget (a window of one too big for what is left)."""
    return plan(index, ranking, budget, max_pieces).chosen


def _path(index: MemoryIndex, ranking: Ranking, i: int, settings: RecallSettings) -> list[Step]:
    steps = [Step(kind="query", id="query", label="query", score=1.0)]
    if ranking.cue[i] > 0 and ranking.cue_activation:
        active = dict(ranking.cue_activation)
        cols, data = index.content_cue.row(i)
        strengths = [(float(w) * active[int(c)], int(c)) for c, w in zip(cols, data, strict=True) if c in active]
        if strengths:
            _, cue = max(strengths, key=lambda x: (x[0], -x[1]))
            steps.append(
                Step(kind="cue", id=index.cue_ids[cue], label=index.cue_names[cue], score=round(active[cue], 4))
            )
    if ranking.tag[i] > 0:
        conversation = index.conversation_ids[int(index.conversation[i])]
        steps.append(
            Step(
                kind="tag",
                id=f"conv:{conversation}",
                label=index.titles.get(conversation) or conversation,
                score=round(float(ranking.conversation_activation[int(index.conversation[i])]), 4),
            )
        )
    label = shown_text(index.text(i))[:80]
    steps.append(Step(kind="content", id=index.ids[i], label=label, score=round(float(ranking.score[i]), 4)))
    return steps


FIRST_WINDOW_MIN_TOKENS = 8  # the best piece comes as a window of even a tiny budget: the answer is never empty for it
REPLY_STEPS = 6  # turns looked at for the reply to a user's turn (thoughts, a recap, a tool call and result: 4)
REPLY_SHARE = 1 / 6  # of the budget, at most, for the reply to a user's turn the answer holds (~330 of 2,000)
WINDOW_MIN_TOKENS = 48  # a piece too big for what is left is shown as a window of it, if at least this much is left


def to_result(index: MemoryIndex, request: RequestLike, ranking: Ranking, settings: RecallSettings) -> Answer:
    """Pack the best pieces into the budget; best first, or along their conversations (`request.order`)."""
    selection = plan(index, ranking, request.budget_tokens, request.max_pieces)
    chosen = list(selection.chosen)
    rank_of = {int(i): r + 1 for r, i in enumerate(ranking.order[: max(len(chosen) * 4, 1000)])}
    if request.order == "time":
        first_time: dict[int, float] = {}
        for i in chosen:
            conversation = int(index.conversation[i])
            t = float(index.times[i]) if np.isfinite(index.times[i]) else float("inf")
            first_time[conversation] = min(first_time.get(conversation, float("inf")), t)
        # a reply right after its message, as in relevance order: not after a tool turn between them
        asked = selection.replies
        chosen.sort(
            key=lambda i: (
                first_time[int(index.conversation[i])],
                int(index.conversation[i]),
                int(index.seq[asked.get(i, i)]),
                i in asked,
            )
        )
    allowed = candidate_mask(index, request, _utc(request.at).timestamp() if request.at is not None else None)
    keys = key_terms(index, request.query)
    shown: list[tuple[list[int], str, list[Step]]] = []
    extra: list[set[str]] = []
    words: list[set[str]] = []  # each piece's distinct words, found once (a window reads them again)
    for i in chosen:
        # a merged group's originals said after `at` (or outside the scope) stay out: same day, not same moment
        members = [m for m in index.group.get(i, [i]) if allowed[m]] or [i]
        # the archive's text as recall shows it: no model's notes, an artifact by its title (clients/shown.py)
        text = "\n".join(shown_text(index.text(m)) for m in members) if len(members) > 1 else shown_text(index.text(i))
        path = _path(index, ranking, i, settings)
        shown.append((members, text, path))
        # what the piece holds: its whole text (the words that may hold the query's terms: stemming every word of a
        # pasted log cost seconds a recall), and the cue and conversation tag its path came through (a cue named
        # by the query's words that brought the piece counts, not only the cues linked to it)
        words.append(distinct_words(text))
        labels = " ".join(s.label for s in path if s.kind in ("cue", "tag"))
        extra.append(terms_of(could_hold(words[-1], keys)) | term_set(labels))
    held = held_terms(index, keys, chosen, extra)
    coverage = held.astype(np.float64) @ keys.idf / keys.total if keys.terms else np.ones(len(chosen))
    pieces = []
    for n, (i, (members, text, path)) in enumerate(zip(chosen, shown, strict=True)):
        conversation_id = index.conversation_ids[int(index.conversation[i])]
        created = datetime.fromtimestamp(float(index.times[i]), UTC) if np.isfinite(index.times[i]) else None
        whole = int(index.tokens[members].sum())
        room = selection.windows.get(i)
        cut = window(text, keys, room, words[n]) if room is not None else text
        pieces.append(
            Piece(
                content_id=index.ids[i],
                message_ids=[index.ids[m] for m in members],
                conversation_id=conversation_id,
                conversation_title=index.titles.get(conversation_id),
                seq=int(index.seq[i]),
                role=index.roles[int(index.role_code[i])],
                created_at=created,
                text=cut,
                tokens=estimate_tokens(cut) if cut != text else whole,
                score=round(float(ranking.score[i]), 6),
                rank=rank_of.get(i, len(rank_of) + 1),
                weak=bool(coverage[n] < KEY_SHARE),
                path=path,
                full_tokens=whole if cut != text else None,
                reply_to=index.ids[selection.replies[i]] if i in selection.replies else None,
            )
        )
    cues = [
        Step(kind="cue", id=index.cue_ids[c], label=index.cue_names[c], score=round(a, 4))
        for c, a in ranking.cue_activation[:20]
    ]
    return Answer(
        query=request.query,
        at=ranking.at,
        pieces=pieces,
        tokens=sum(p.tokens for p in pieces),
        budget_tokens=request.budget_tokens,
        candidates=ranking.candidates,
        cues=cues,
        time_filter=ranking.time_range.describe() if ranking.time_range else None,
        order=request.order,
        weak_reason=weak_reason(pieces, keys, held),
        budget_note=budget_note(pieces, selection, ranking, rank_of),
    )


def budget_note(pieces: list[Piece], selection: Selection, ranking: Ranking, rank_of: dict[int, int]) -> str | None:
    """What the budget changed, when it did: pieces shown as a window, better pieces left out (and how to see
    them)."""
    notes = []
    cut = [p for p in pieces if p.full_tokens is not None and p.reply_to is None]  # a reply's window is its share
    if cut:
        # by rank, what `chatmem recall` says beside a piece listed at another place (`#2 ..., rank 16`)
        shown = ", ".join(f"rank {p.rank} ({p.tokens} of {p.full_tokens} tokens)" for p in cut)
        notes.append(f"too big for the budget left, shown as a window around the query's words: {shown}")
    for i, cost, left in selection.skipped:  # the next best piece, which did not fit: the answer ends before it
        notes.append(f"the next piece, rank {rank_of.get(i, 0)} ({cost} tokens), did not fit the {left} token(s) left")
    if not notes:
        return None
    return "; ".join(notes) + "; a larger --budget (budget_tokens) shows more"


def embed_query(embedder: Embedder, query: str, names: Names) -> Any:
    """The query's vector, as the keys were embedded: the memory's speaker names masked (memory/names.py); None
    when it would mean nothing (`has_meaning`)."""
    return embedder.embed([names.query_text(query)])[0] if has_meaning(embedder, query) else None


def has_meaning(embedder: Embedder, query: str) -> bool:
    """Whether the query's vector is evidence: not when the embedder reads MiniLM word pieces and knows none of the
    query's words whole but stop words ("zebrafish42", "what was zebrafish42", "Kubernetes", gibberish;
    clients.embedders.whole_words). Such a query is embedded as an average of fragments (and words that say
    nothing) that sits near every key, and key similarity is scaled per query (the closest key scores 1, as much
    as a key holding the query's words): `recall zebrafish42` put an unrelated turn (cosine 0.14) first, above the
    reply and the pasted log that hold the token. It is ranked by its words and cues only, and recalls nothing
    when they match nothing (memory.service.empty_reason)."""
    if not reads_word_pieces(embedder):
        return True
    stop = stop_words()
    return any(word not in stop for word in whole_words(query))


def recall(
    index: MemoryIndex, embedder: Embedder | None, request: RequestLike, settings: RecallSettings
) -> RecallResult:
    """The entry point an agent (CLI, MCP server) calls: a reconstructed context for one question."""
    vector = embed_query(embedder, request.query, index.names) if embedder is not None else None
    ranking = rank(index, request.query, vector, request, settings, limit=max(8 * request.max_pieces, 1000))
    return to_contract(to_result(index, request, ranking, settings))
