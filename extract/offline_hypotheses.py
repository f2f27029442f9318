"""A chosen candidate as a hypothesis (extract/offline.py, steps 4 and 5).

Typed by the cue of the user's sentence around its first mention (CUES), titled by its most frequent cased form,
with the sentences around its mentions as evidence spans, more of them for a better rank (`_spans_for`); a plain
dict, the shape an LLM answers in, for the semantic mapper.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from extract.goals import goal
from extract.offline_candidates import _Candidate
from extract.text import slug
from extract.types import SegmentInput

# Checked in this order: the first cue found in the sentence types the concept.
CUES: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (kind, re.compile(pattern, re.IGNORECASE))
    for kind, pattern in (
        ("tension", r"\b(struggl\w*|torn between|can'?t decide|conflict\w*|worried|stress\w*|dilemma|trade-?offs?)\b"),
        (
            "goal",
            r"\b(i want to|i'?d like to|i would like to|my goal|i'?m trying to|i am trying to|i hope to"
            r"|i plan to|i'?m planning to|i aim to|i need to|i'?m hoping to)\b",
        ),
        (
            "project",
            r"\b(working on|my project|i'?m building|i am building|renovat\w*|i'?m writing|organi[sz]ing"
            r"|setting up|launching|planning (?:a|an|my|the))\b",
        ),
        (
            "behavioral_pattern",
            r"\b(i usually|i always|i often|i tend to|every (?:day|morning|week|night|evening)"
            r"|daily|weekly|my routine|habit|i'?ve been \w+ing)\b",
        ),
        (
            "event",
            r"\b(yesterday|last (?:week|month|year|weekend|night|summer)|attended|went to|visited"
            r"|just got back|recently (?:got|went|attended|bought|finished|started))\b",
        ),
        ("belief", r"\b(i think|i believe|i feel (?:that|like)|in my opinion|i'?m convinced|i prefer)\b"),
    )
)


def _cue(candidate: _Candidate) -> tuple[str, str] | None:
    """The type cue of the first user sentence that has one for this candidate; a goal cue only when what follows
    is a goal (extract.goals.goal) holding the candidate ("I want to convert it into a style that uses string
    concatenation": string concatenation is no goal); a habit's word inside the term itself describes the thing,
    unless the user owns it ("daily csv" is a file that comes each day; "my daily walk" is a habit)."""
    for message, start, end in candidate.mentions:
        if message.message.role == "user":
            first, last = message.original(start, end)
            mention = message.message.text[first:last].casefold()
            before = message.message.text[max(0, first - 4) : first].casefold()
            for kind, said, goal_value in _sentence_cues(message.span(first, last)):
                if kind == "goal" and mention not in goal_value:
                    continue
                if kind == "behavioral_pattern" and said.casefold() in mention and not _OWNED.search(before):
                    continue
                return kind, said
    return None


# A habit is the user's: "every day", "daily", "weekly", "habit" type a term only where the user is its subject ("I do
# yoga every morning", "every morning I run", "my daily walk"); "daily routine of a data engineer" asks about a job,
# "daily csv to datalake ... if i receive" is about a feed.
_SUBJECT_BEFORE = re.compile(r"\b(?:i|we)(?:'m|'ve|'re)?\b", re.IGNORECASE)
_SUBJECT_AFTER = re.compile(r"[ \t]*,?[ \t]*(?:i|we)\b", re.IGNORECASE)
_SAID_BY_USER = ("i ", "i'", "my ")
_OWNED = re.compile(r"\b(?:my|our) $")


def _users_habit(hit: re.Match[str], sentence: str) -> bool:
    if hit.group(0).casefold().startswith(_SAID_BY_USER):
        return True
    before = sentence[: hit.start()].replace("’", "'")
    if _SUBJECT_BEFORE.search(before) or _OWNED.search(before.casefold()):
        return True
    return _SUBJECT_AFTER.match(sentence, hit.end()) is not None


@lru_cache(maxsize=1 << 14)
def _sentence_cues(sentence: str) -> tuple[tuple[str, str, str], ...]:
    """Every cue in one sentence, in CUES order: (kind, the words, for a goal the goal it names in lower case,
    "" when none). Cached: the candidates of a sentence share it."""
    found = []
    for kind, pattern in CUES:
        hit = pattern.search(sentence)
        if hit and kind == "behavioral_pattern" and not _users_habit(hit, sentence):
            continue
        if hit:
            named = goal(sentence[hit.end() :]).casefold() if kind == "goal" else ""
            found.append((kind, hit.group(0), named))
    return tuple(found)


def _spans_for(rank: int, open_ranks: int) -> int:
    """How many evidence spans a concept of this rank in its segment cites: the ranking, carried into the
    concept store's evidence counts (a conversation's concepts are ordered by their evidence). Each of the open
    ranks cites two or more where it has them, so a user's term added past them (one span) does not tie with
    them."""
    return 3 if rank < 2 else 2 if rank < open_ranks else 1


def _hypothesis(segment: SegmentInput, candidate: _Candidate, rank: int, open_ranks: int) -> dict[str, Any]:
    cue = _cue(candidate)
    kind = "entity" if cue is None or (candidate.named and cue[0] != "event") else cue[0]
    order = {m.message_id: i for i, m in enumerate(segment.messages)}
    ordered = sorted(
        candidate.mentions, key=lambda m: (m[0].message.role != "user", order[m[0].message.message_id], m[1])
    )
    # A mention found inside a tag (an artifact's type) counts, but its sentence is the tag: no evidence of it (every
    # such candidate is named in the prose too)
    ordered = [m for m in ordered if not m[0].in_tag(m[1], m[2])] or ordered
    spans: list[dict[str, Any]] = []
    for message, start, end in ordered:
        text = message.span(*message.original(start, end), *message.original(*message.unmarked(start, end)))
        # one message cited once per passage: not the same text again, nor a piece of a text already cited (a sentence
        # repeated in a long message, cut at the end of what is read: "... the lazy dog near" beside the whole one)
        if not text or any(
            s["message_id"] == message.message.message_id and (text in s["text"] or s["text"] in text) for s in spans
        ):
            continue
        spans.append(
            {
                "source_id": segment.segment_id,
                "message_id": message.message.message_id,
                "text": text,
                "confidence": 0.6 if message.message.role == "user" else 0.4,
            }
        )
        if len(spans) == _spans_for(rank, open_ranks):
            break
    title = candidate.title()
    mentions = len(candidate.mentions)
    confidence = 0.3 + 0.1 * min(mentions - 1, 3) + 0.15 * (cue is not None) + 0.1 * candidate.named
    why = f'; typed {kind} by the cue "{cue[1]}"' if cue is not None and kind == cue[0] else ""
    return {
        "concept_id": slug(title),
        "title": title,
        "type": kind,
        "description": f'Offline extractor (phrase rules, no model): "{title}" is mentioned {mentions} time(s) in'
        f" the segment that first named it{why}.",
        "state": "active",
        "confidence": round(min(confidence, 0.85), 2),
        "aliases": sorted(f for f in candidate.forms if f.casefold() != title.casefold())[:5],
        "evidence_spans": spans,
        "relations": [],
        "revision_count": 0,
        "first_seen": None,
        "last_seen": None,
    }
