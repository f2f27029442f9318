"""The offline extractor: ConceptHypothesis objects from the messages themselves, with no model at all.

It is what runs when no LLM endpoint is configured, so that the pipeline works end to end on any machine. It
is a heuristic, announced as such (name "offline", and every description says so), never passed off as LLM
output. For each segment:

1. candidates come from the user's own messages (what the memory is about): named things (runs of
   capitalised words, acronyms, "iPhone 14") and keyphrases (RAKE-style runs of up to 4 content words
   between stopwords and punctuation);
2. each candidate is scored by how often it occurs in the whole segment, with a bonus for several words,
   for a name and for a cue (below); single common words need two mentions;
3. the best `max_concepts` are typed by a cue in the user's sentence around the first mention
   (tension, goal, project, behavioral_pattern, event, belief; otherwise entity);
4. evidence spans are the sentences (up to 240 characters) around up to three mentions, copied verbatim;
5. the result goes through the same semantic mapper as LLM output (`map_raw_hypotheses`);
6. facts the user states about themselves (extract/facts.py) go through the fact mapper (extract/fact_mapper.py).

Deterministic: the same segment gives the same hypotheses, byte for byte.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from contracts.concepts import SCHEMA_VERSION
from extract.fact_mapper import map_raw_facts
from extract.facts import FACT_RULES_VERSION, propose_facts
from extract.mapper import map_raw_hypotheses
from extract.text import TERMINAL_ESCAPES, is_stopword, slug, word_spans, words
from extract.types import ExtractionFailure, ExtractionOutput, SegmentInput, SegmentMessage

OFFLINE_VERSION = 1  # bump with any change to the rules below: it is part of the extraction cache key
MAX_SPAN_CHARS = 240
MAX_PHRASE_WORDS = 4

_SENTENCE = re.compile(r"[^.!?\n]+(?:[.!?]+|$)", re.MULTILINE)
_BREAK = re.compile(r"[,;:()\[\]{}\"“”|/]|\s[-–—]\s")
# Nouns that are everywhere in chat and name nothing in particular on their own ("any ideas?", "a question").
_GENERIC_TEXT = (
    "idea time day week month year question recommendation goal task thing way option step tip place people"
    " person list lot bit kind sort part area level amount number add answer advice detail example point"
    " reason result start end side case fact topic issue problem help information resource suggestion"
)
_GENERIC = frozenset(_GENERIC_TEXT.split())
_CALENDAR_TEXT = (
    "monday tuesday wednesday thursday friday saturday sunday january february march april may june july"
    " august september october november december today tomorrow yesterday"
)
_CALENDAR = frozenset(_CALENDAR_TEXT.split())
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


@dataclass
class _Candidate:
    key: tuple[str, ...]
    surface: str  # first occurrence, as written
    named: bool
    forms: list[str] = field(default_factory=list)


class OfflineExtractor:
    """Implements extract.types.Extractor with the rules above (no model, no network, no randomness)."""

    name = "offline"

    def __init__(self, max_concepts: int = 5) -> None:
        self.max_concepts = max_concepts
        self.cache_key_parts: tuple[str, ...] = (
            "offline",
            f"rules-v{OFFLINE_VERSION}",
            f"facts-v{FACT_RULES_VERSION}",
            f"schema-v{SCHEMA_VERSION}",
            f"max-{max_concepts}",
        )

    def extract_many(
        self, segments: Sequence[SegmentInput]
    ) -> Iterator[tuple[SegmentInput, ExtractionOutput | ExtractionFailure]]:
        for segment in segments:
            yield segment, self.extract(segment)

    def extract(self, segment: SegmentInput) -> ExtractionOutput:
        hypotheses, _ = map_raw_hypotheses({"hypotheses": propose(segment, self.max_concepts)}, segment)
        facts, _ = map_raw_facts(propose_facts(segment), segment)
        return ExtractionOutput(hypotheses=hypotheses, facts=facts)


def propose(segment: SegmentInput, max_concepts: int) -> list[dict[str, Any]]:
    """The raw hypotheses (plain dicts, the shape an LLM answers in) for one segment."""
    users = [m for m in segment.messages if m.role == "user"]
    sources = users or list(segment.messages)
    candidates: dict[tuple[str, ...], _Candidate] = {}
    for message in sources:
        # Phrases are found in the text without its terminal escapes (evidence spans still quote it verbatim).
        for sentence in _sentences(TERMINAL_ESCAPES.sub(" ", message.text)):
            for surface, named in _phrases(sentence):
                key = tuple(k for k, _, _ in word_spans(surface))
                found = candidates.setdefault(key, _Candidate(key, surface, named))
                found.named = found.named or named
                if surface not in found.forms:
                    found.forms.append(surface)
    index = _mention_index(segment.messages, candidates)
    scored = []
    for candidate in candidates.values():
        mentions = index.get(candidate.key, [])
        said = sum(m[0].role == "user" for m in mentions) if users else len(mentions)
        single = len(candidate.key) == 1
        if not mentions or (single and (candidate.key[0] in _GENERIC or (said < 2 and not candidate.named))):
            continue  # one common word said once, or a word that names nothing by itself, is not a concept
        cue = _cue(mentions, sources)
        # The user's own mentions count fully, the assistant's (long, generic replies) a little.
        score = said + 0.3 * min(len(mentions) - said, 5) + 0.75 * (len(candidate.key) - 1)
        score += candidate.named + 0.5 * (cue is not None)
        scored.append((-score, candidate.surface.casefold(), candidate, mentions, cue))
    scored.sort(key=lambda item: (item[0], item[1]))
    chosen: list[dict[str, Any]] = []
    taken: list[set[str]] = []
    for _, _, candidate, mentions, cue in scored:
        if len(chosen) == max_concepts:
            break
        words_ = set(candidate.key)
        if any(words_ <= chosen or chosen <= words_ for chosen in taken):
            continue  # "road race" after "10K road race", or the reverse: one phrase covers the other
        taken.append(words_)
        chosen.append(_hypothesis(segment, candidate, mentions, cue))
    return chosen


def _sentences(text: str) -> Iterator[str]:
    for match in _SENTENCE.finditer(text):
        sentence = match.group(0).strip()
        if sentence:
            yield sentence


def _phrases(sentence: str) -> Iterator[tuple[str, bool]]:
    """(surface, named) candidates of one sentence: capitalised runs, then stopword-delimited keyphrases."""
    tokens = words(sentence)
    run: list[str] = []
    for position, token in enumerate([*tokens, ""]):
        capital = token[:1].isupper() or (token[:1].isdigit() and bool(run))
        if capital and not is_stopword(token) and token.casefold() not in _CALENDAR:
            run.append(token)
            continue
        if run and (len(run) > 1 or position - len(run) > 0 or run[0].isupper()):
            yield _unpossessive(" ".join(run[:MAX_PHRASE_WORDS])), True  # a lone capital opening a sentence: no name
        run = []
    for chunk in _BREAK.split(sentence):
        run = []
        for token in [*words(chunk), ""]:
            lower = token.casefold()
            if token and not is_stopword(token) and lower not in _CALENDAR and not lower.isdigit():
                run.append(token)
                continue
            if run and len(run) <= MAX_PHRASE_WORDS and len(" ".join(run)) > 2:
                yield _unpossessive(" ".join(run)), False
            run = []


Mention = tuple[SegmentMessage, int, int]  # message, start and end offsets of one mention


def _unpossessive(phrase: str) -> str:
    """ "Rachel's" -> "Rachel": a phrase that ends on a possessive names its owner."""
    return phrase[:-2] if phrase.endswith(("'s", "’s")) else phrase


def _mention_index(
    messages: Sequence[SegmentMessage], keys: Iterable[tuple[str, ...]]
) -> dict[tuple[str, ...], list[Mention]]:
    """Where each candidate key occurs in the segment (one pass over each message's words)."""
    wanted = set(keys)
    sizes: dict[str, set[int]] = {}
    for key in wanted:
        sizes.setdefault(key[0], set()).add(len(key))
    index: dict[tuple[str, ...], list[Mention]] = {}
    for message in messages:
        spans = word_spans(message.text)
        words_ = [key for key, _, _ in spans]
        for i, word in enumerate(words_):
            for size in sizes.get(word, ()):
                if i + size > len(words_):
                    continue
                key = tuple(words_[i : i + size])
                if key in wanted:
                    index.setdefault(key, []).append((message, spans[i][1], spans[i + size - 1][2]))
    return index


def _span(text: str, start: int, end: int) -> str:
    """The sentence around text[start:end], cut to MAX_SPAN_CHARS around the mention; always a substring."""
    left = max(text.rfind(stop, 0, start) for stop in (". ", "! ", "? ", "\n"))
    left = 0 if left < 0 else left + 1
    rights = [i for stop in (". ", "! ", "? ", "\n") if (i := text.find(stop, end)) >= 0]
    right = min(rights) + 1 if rights else len(text)
    if right - left > MAX_SPAN_CHARS:
        half = (MAX_SPAN_CHARS - (end - start)) // 2
        left, right = max(left, start - half), min(right, end + half)
    return text[left:right].strip()


def _cue(mentions: list[Mention], sources: list[SegmentMessage]) -> tuple[str, str] | None:
    # Identity, not ==: `sources` holds the segment's own message objects, and a dataclass == per mention per
    # candidate was ~1 % of the stage at 100k messages.
    wanted = {id(m) for m in sources}
    for message, start, end in mentions:
        if id(message) in wanted:
            cue = _sentence_cue(_span(message.text, start, end))
            if cue is not None:
                return cue
    return None


@lru_cache(maxsize=1 << 14)
def _sentence_cue(sentence: str) -> tuple[str, str] | None:
    """The first cue (in CUES order) in one sentence. Cached: the candidates of a sentence share it, and six
    regex searches per candidate mention were a quarter of the offline extractor's time."""
    for kind, pattern in CUES:
        hit = pattern.search(sentence)
        if hit:
            return kind, hit.group(0)
    return None


def _hypothesis(
    segment: SegmentInput,
    candidate: _Candidate,
    mentions: list[Mention],
    cue: tuple[str, str] | None,
) -> dict[str, Any]:
    kind = "entity" if cue is None or (candidate.named and cue[0] != "event") else cue[0]
    ordered = sorted(mentions, key=lambda m: (m[0].role != "user", segment.messages.index(m[0]), m[1]))
    spans: list[dict[str, Any]] = []
    for message, start, end in ordered:
        text = _span(message.text, start, end)
        if any(s["message_id"] == message.message_id and s["text"] == text for s in spans):
            continue
        spans.append(
            {
                "source_id": segment.segment_id,
                "message_id": message.message_id,
                "text": text,
                "confidence": 0.6 if message.role == "user" else 0.4,
            }
        )
        if len(spans) == 3:
            break
    title = candidate.surface[:1].upper() + candidate.surface[1:]
    confidence = 0.3 + 0.1 * min(len(mentions) - 1, 3) + 0.15 * (cue is not None) + 0.1 * candidate.named
    why = f'; typed {kind} by the cue "{cue[1]}"' if cue is not None and kind == cue[0] else ""
    return {
        "concept_id": slug(title),
        "title": title,
        "type": kind,
        "description": f'Offline extractor (keyphrase rules, no model): "{candidate.surface}" is mentioned'
        f" {len(mentions)} time(s) in this segment{why}.",
        "state": "active",
        "confidence": round(min(confidence, 0.85), 2),
        "aliases": [f for f in candidate.forms if f.casefold() != candidate.surface.casefold()],
        "evidence_spans": spans,
        "relations": [],
        "revision_count": 0,
        "first_seen": None,
        "last_seen": None,
    }
