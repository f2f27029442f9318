"""The offline extractor: ConceptHypothesis objects from the messages themselves, with no model at all.

It is what runs when no LLM endpoint is configured, so that the pipeline works end to end on any machine. It
is a heuristic, announced as such (name "offline", and every description says so), never passed off as LLM
output. For each segment:

1. every message but a tool's output is read through its prose view (clients/prose.py): code blocks, inline
   code, tracebacks, markup, tables of numbers and rows of delimited values, paths and URLs, a Claude reply's
   private notes and code artifacts are blanked, so no concept comes from them (an identifier written alone
   between double quotes stays: 'function calls "Multiplication_V"' names it; so does an artifact's title);
2. candidates (extract/phrases.py) are names ("AWS Glue", "PySpark", "Power BI") and, in English, noun
   phrases kept whole ("customer churn model"), from the user's words and from the prose of the replies;
   a word that can be a verb is cut where it is one (after a modal, a subject pronoun, an adverb: "they should
   show decimal points", "you can automatically collect web content"), and a command's options, a variable
   assigned in prose and number words are no words of a term ("--password cloudera", "city='Hyd'", "a million
   fields");
   a noun phrase with a modifier the plain rules cut ("a hashing algorithm", "performance tuning",
   "linguistic diversity") counts where the segment says it so twice, one opened by a qualifying word ("small
   business") where the user says it so too (a reply's "a small vase" describes); a message in another language
   gives names and the runs of content words the segment says twice (extract/phrases.py), one in Chinese its
   nouns and noun compounds (extract/chinese.py: 推荐系统, 机器学习); a word the user says that the segment
   writes as a function or a command in inline code ("if we use explode", then "the `explode` function") is a
   candidate however common, its code mentions
   counted; an API a reply names in inline code (a class in UpperCamelCase, "`StructType`"; a function called or
   followed by its kind, named as no English word is, "`DENSE_RANK()`") is a candidate too; a value typed in a
   statement ("set city='Hyd'", then quoted back by the reply) and the assistant's words for itself ("As an AI
   language model, I ...") are no candidates (a prompt template pasted into many conversations is found
   archive-wide, in the concepts stage:
   extract/templates.py);
3. each candidate is scored by its log-odds of being a concept a person would list (weights below, fitted on the
   dev labels' features): the user saying it, how often and in how many messages it recurs, a name's capital, the
   conversation's title naming it, a term of several words, and how specific it is against background word
   frequencies (wordfreq: "data" and "table" name nothing, "Sqoop" and "window function" do); a phrase said fewer
   than three times and only in replies (unless written as a name, "Point Reyes", made only of words the user or
   the title says, by lemma: "the bakery comparisons" for a user who asked how the bakeries compare, or one word
   heading a reply's list item: "Mutability: Lists are mutable"; a code block marked with a language the prose
   names, "```python", is a mention of it, and so is a Claude artifact of that kind: 'type="application/vnd.ant.react"'
   for React), a word no list holds said once (a typo, unless the user writes an identifier: "number_to_hex()"),
   identifiers in lower case with digits ("sqm3") and quoted values no lexicon holds ("'aal'"), single common words
   (the bar rises a little with each doubling of the mentions of a noun the user says and the replies repeat:
   "cache" said eight times; a proper noun the user writes with its capital, unknown to the lexicon, passes however
   common: "Europe", "Emily"), phrases of generic words, a misspelling of a word the segment spells right
   ("heirarchy" beside "hierarchy"), numbered variables ("XW0", "XW10") never qualify, and an acronym and its
   expansion are one candidate ("DAG", "Directed Acyclic Graph");
4. the best `max_concepts` (past the fifth, terms the user says, then terms the replies say three times or more;
   a term is skipped when a better one holds all its words: "Glue" after "AWS Glue", though a name is not
   covered by a phrase that uses it as a modifier, "Hive" after "partitioned Hive table"; a term of up to three
   words the user says after its head word is a concept of its own: "Hive external table" after "Hive", and goes
   before a common word it holds that scored higher: "litter box", then "litter", `_specific_first`), and past
   a full segment up to two names more, after all of them ("IKEA", which the user writes once beside six book
   titles; "StructType", which a reply introduces: `_names_past_cap`), are
   typed by a cue in the user's sentence around the first mention (tension, goal, project, behavioral_pattern,
   event, belief; otherwise entity) and titled by their most frequent cased form ("AWS Glue" over "aws glue");
5. evidence spans are the sentences (up to 240 characters) around the mentions, copied verbatim; the best
   ranked concepts cite more of them, so evidence counts carry the ranking into the concept store;
6. the result goes through the same semantic mapper as LLM output (`map_raw_hypotheses`), and facts the user
   states about themselves (extract/facts.py) through the fact mapper (extract/fact_mapper.py).

Linear in the size of a message: sentence bounds are found once per message, never once per mention.
Deterministic: the same segment gives the same hypotheses, byte for byte.
"""

from __future__ import annotations

import bisect
import math
import re
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from clients.chinese_words import HAN
from clients.prose import ARTIFACT_LANGUAGES, prose, unicode_view
from contracts.concepts import SCHEMA_VERSION
from extract import chinese, lexicon
from extract.fact_mapper import map_raw_facts
from extract.facts import FACT_RULES_VERSION, propose_facts
from extract.goals import goal
from extract.mapper import map_raw_hypotheses
from extract.phrases import (
    GENERIC,
    QUALIFYING_OPENERS,
    Phrase,
    Token,
    _shouted,
    capital_marks_name,
    key_of,
    phrases,
    plausible_word,
    singular,
    tokens,
)
from extract.stand_ins import drop_numbered, drop_placeholders, fold_expansions
from extract.text import READ_USER_CHARS, TERMINAL_ESCAPES, slug
from extract.types import ExtractionFailure, ExtractionOutput, SegmentInput, SegmentMessage

# v37: the prose view blanks unfenced code, tool tables and tool logs (clients/console_blocks.py, clients/console.py)
OFFLINE_VERSION = 37  # bump with any change to the rules below: it is part of the extraction cache key
MAX_SPAN_CHARS = 240
TAG_CHARS = 2000  # the longest tag looked through (an artifact's opening tag: clients/prose.py reads as far)
# How much of a message is read: the opening of a reply names what it is about, and a user's paste of 5 MB says
# no more than its first pages (READ_USER_CHARS, extract/text.py: the fact rules read as much). The cost of a
# message is bounded whatever its size (time and memory).
READ_REPLY_CHARS = 800
REPLY_PHRASE_CHARS = 700  # noun phrases are proposed from a reply's opening only; names from all that is read
# A noun phrase with the modifier the plain rules cut ("a hashing algorithm", "performance tuning", "healthy meal
# ideas": extract.phrases, loose proposals) is a candidate when the segment says it so this many times, in one
# message or more (a reply that explains "video editing" three times, asked in another language, names its subject).
LOOSE_SPREAD = 2
# A term the user says that holds a better-ranked one ("Hive external table" after "Hive") counts as a concept of
# its own up to this many words.
MAX_SUBTERM_WORDS = 3
# The first this many of a segment's concepts are the best ranked, whoever said them; past them (up to
# `max_concepts`) what the user says, then what the replies say `PAST_OPEN_SAID` times: a user's term outranked
# by the reply's names ("travel insurance" below six towns the reply lists) is still what they asked about, a
# reply's 6th name said once is not.
OPEN_RANKS = 5
NAME_PAST_OPEN = 0.3
# Past a full segment (`max_concepts`), this many more names it mentions (`_names_past_cap`).
NAMES_PAST_CAP = 2
# Past the open ranks, a term only the replies say counts where they say it this many times ("Caching" explained
# in three sentences of a reply on Spark's internals, "Repartition" in three).
PAST_OPEN_SAID = 3
# A single common word is a concept only under this background frequency (Zipf: "salary" 4.2, "cache" 3.6, "sqoop"
# 0); a noun the user says and the replies repeat gets this much more per doubling of its mentions.
COMMON_WORD_ZIPF = 3.4
REPEATED_ZIPF_STEP = 0.1
# A hyphenated word made an adjective ("Python-like", "Spark-based"): a name's modifier, never a name alone.
_ADJECTIVE_ENDS = ("-like", "-based", "-style", "-related", "-specific", "-friendly", "-oriented", "-driven")
# Fewer words than this, and a message takes its segment's language (`_settle_languages`).
SHORT_MESSAGE_WORDS = 6
# The least specificity of a one-word name in a language that capitalises names only (`_specificity`).
NAME_SPECIFICITY = 0.35
_STOPS = re.compile(r"[.!?。！？](?=\s)|\n")
_TITLE_WORD = re.compile(r"[^\W_][\w'’+#.&-]*", re.UNICODE)

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


# The first cache key parts of every extraction these rules make, whatever the settings: an extraction whose key
# starts otherwise was made by other rules and is never read again (staging.extractions.prune).
VERSION_PARTS = ("offline", f"rules-v{OFFLINE_VERSION}", f"facts-v{FACT_RULES_VERSION}", f"schema-v{SCHEMA_VERSION}")


class OfflineExtractor:
    """Implements extract.types.Extractor with the rules above (no model, no network, no randomness)."""

    name = "offline"

    def __init__(self, max_concepts: int = 6, open_ranks: int = OPEN_RANKS) -> None:
        self.max_concepts = max_concepts
        self.open_ranks = open_ranks
        self.cache_key_parts: tuple[str, ...] = (*VERSION_PARTS, f"open-{open_ranks}", f"max-{max_concepts}")

    def extract_many(
        self, segments: Sequence[SegmentInput]
    ) -> Iterator[tuple[SegmentInput, ExtractionOutput | ExtractionFailure]]:
        for segment in segments:
            yield segment, self.extract(segment)

    def extract(self, segment: SegmentInput) -> ExtractionOutput:
        raw = propose(segment, self.max_concepts, self.open_ranks)
        hypotheses, _ = map_raw_hypotheses({"hypotheses": raw}, segment)
        facts, _ = map_raw_facts(propose_facts(segment), segment)
        return ExtractionOutput(hypotheses=hypotheses, facts=facts)


@dataclass
class _Message:
    """One message as the extractor reads it: its prose view, words, sentence bounds and language."""

    message: SegmentMessage
    view: str  # prose view (NFC, escapes and code blanked)
    offsets: list[int] | None  # view offset -> message offset, when the view is not the text itself
    language: str
    stops: list[int] = field(default_factory=list)  # sentence ends in the message text, sorted
    words: list[Token] = field(default_factory=list)  # tokens of the view
    case_blind: bool = False  # written without a single capital ("how to use limit in linux"): no case evidence
    # identifiers written alone as inline code ("`explode`", "`cache()`"): (as written, view start, view end,
    # named as a function or command there: called, followed by its kind or shaped as an identifier; an API's
    # name there: see _api_name)
    code_names: list[tuple[str, int, int, bool, bool]] = field(default_factory=list)
    # the language a fenced code block is marked as ("```python"): (word, view start, view end)
    fences: list[tuple[str, int, int]] = field(default_factory=list)
    source: str = ""  # the text the view was made from (same offsets): what the view blanked is told apart by it

    def in_tag(self, start: int, end: int) -> bool:
        """Whether the mention view[start:end] was found inside a tag the view blanks (an artifact's type,
        'type="text/html"'), not in the prose: an artifact's title, kept, is prose."""
        if self.view[start:end].strip():
            return False
        source = self.source
        opens = source.rfind("<", max(start - TAG_CHARS, 0), start)
        if opens < 0 or source.rfind(">", opens, start) >= 0 or self.view[opens] != " ":
            return False
        closes = source.find(">", end, end + TAG_CHARS)
        return closes >= 0 and source.find("<", end, closes) < 0

    def unmarked(self, start: int, end: int) -> tuple[int, int]:
        """View bounds around the mention view[start:end] that leave out the markup beside it: where a tag's
        bracket was blanked between the mention and the sentence's edge, the bound is the blanked character
        nearest the mention ('title="LLM Pricing Calculator">' of a Claude artifact's tag gives its title alone);
        (0, len(view)) where there is no tag."""
        before = self._tag_edge(range(start - 1, max(start - MAX_SPAN_CHARS, 0) - 1, -1))
        after = self._tag_edge(range(end, min(end + MAX_SPAN_CHARS, len(self.view))))
        return (0 if before is None else before + 1), (len(self.view) if after is None else after)

    def _tag_edge(self, places: range) -> int | None:
        """Walking `places` away from a mention (to the line's end): the blanked character nearest the mention
        when a tag's bracket was blanked on the way, else None."""
        nearest = None
        for p in places:
            char = self.source[p]
            if char == "\n":
                return None
            if self.view[p] == " " and not char.isspace():
                nearest = p if nearest is None else nearest
                if char in "<>":
                    return nearest
        return None

    def original(self, start: int, end: int) -> tuple[int, int]:
        if self.offsets is None:
            return start, end
        return self.offsets[start], self.offsets[end - 1] + 1 if end > start else self.offsets[end]

    def span(self, start: int, end: int, lo: int = 0, hi: int | None = None) -> str:
        """The sentence around text[start:end], within text[lo:hi], cut to MAX_SPAN_CHARS around the mention; a
        substring."""
        text = self.message.text
        i = bisect.bisect_left(self.stops, start)
        left = max(self.stops[i - 1] + 1 if i > 0 else 0, lo)
        j = bisect.bisect_left(self.stops, end)
        right = min(self.stops[j] + 1 if j < len(self.stops) else len(text), len(text) if hi is None else hi)
        if right - left > MAX_SPAN_CHARS:
            half = (MAX_SPAN_CHARS - (end - start)) // 2
            left, right = max(left, start - half), min(right, end + max(half, 0))
        return text[left:right].strip()


def _read(message: SegmentMessage) -> _Message:
    limit = READ_USER_CHARS if message.role == "user" else READ_REPLY_CHARS
    view, offsets = unicode_view(message.text[:limit])
    code_names = (
        [(m.group(1), m.start(1), m.end(1), _names_code(m), _api_name(m)) for m in _CODE_NAME.finditer(view)]
        if "`" in view
        else []
    )
    fences = [(m.group(1), m.start(1), m.end(1)) for m in _FENCE.finditer(view)] if "```" in view else []
    if "<antArtifact" in view:
        fences += _artifact_kinds(view)
    source = view
    view = prose(TERMINAL_ESCAPES.sub(_blank_escape, view), quoted_names=True)
    # sentence ends as far as a span around what is read can reach (`span`: past it, a span is cut the same)
    stops = [m.start() for m in _STOPS.finditer(message.text, 0, limit + MAX_SPAN_CHARS + 1)]
    language = lexicon.language_of(view)
    words = chinese.tokens(view) if language == "zh" else tokens(view)  # Chinese is cut into words by jieba
    # str.islower: some cased letter and no capital at all (one pass in C; a script without case is never blind)
    return _Message(
        message,
        view,
        offsets,
        language,
        stops,
        words,
        view.islower(),
        code_names,
        fences,
        source,
    )


# The language a fenced code block is written in, as its opening fence names it ("```python", "```scala").
_FENCE = re.compile(r"(?m)^[ \t]*```[ \t]*([A-Za-z][\w+#-]{0,20})[ \t]*$")


# A Claude artifact's opening tag and its attributes: its type says what the artifact is written in, as a fence does
# ('type="application/vnd.ant.react"': React; 'type="application/vnd.ant.code" language="python"': Python).
_ARTIFACT_TAG = re.compile(r"<antArtifact\b[^<>]{0,2000}>")
_ATTRIBUTE = re.compile(r"""\b(type|language)\s*=\s*["']([^"'<>]{1,60})["']""")


def _artifact_kinds(view: str) -> list[tuple[str, int, int]]:
    """What each Claude artifact of the view is written in, as a fence's language: (word, view start, view end)."""
    kinds = []
    for tag in _ARTIFACT_TAG.finditer(view):
        attributes = {m.group(1): m for m in _ATTRIBUTE.finditer(view, tag.start(), tag.end())}
        kind = attributes.get("type")
        found = ARTIFACT_LANGUAGES.get(kind.group(2).strip().casefold()) if kind is not None else None
        language = found[0] if found else None
        if language is not None and kind is not None:
            kinds.append((language, kind.start(2), kind.end(2)))
        elif "language" in attributes:
            kinds.append((attributes["language"].group(2), *attributes["language"].span(2)))
    return kinds


# An identifier alone in inline code, bare or called with nothing ("`explode`", "`cache()`", "`ulimit`"), and the
# word after it: called, followed by its kind ("the `explode` function", "`explode` is a method") or shaped as an
# identifier ("`flatMap`"), it names a function or a command; a plain word that names a column, a field or a
# variable ("the `balance` field", "`zero` is ...") does not.
_CODE_NAME = re.compile(r"`([^\W\d_][\w-]{1,40})(\(\))?`(?:[ \t]+(?:is[ \t]+(?:an?|the)[ \t]+)?([A-Za-z]+))?")
_CODE_KINDS_TEXT = (
    "function functions method methods command commands keyword keywords clause clauses operator operators"
    " class statement utility transformation transformations action actions"
)
_CODE_KINDS = frozenset(_CODE_KINDS_TEXT.split())


def _names_code(match: re.Match[str]) -> bool:
    """An inline-code identifier is a function, a command or a method where it is called ("`cache()`"), followed
    by its kind ("the `limit` command") or shaped as an identifier ("`flatMap`", "`row_number`"): no English word
    is written so."""
    name = match.group(1)
    if match.group(2) or (match.group(3) or "").casefold() in _CODE_KINDS:
        return True
    return "_" in name.strip("_") or (name[:1].islower() and name != name.casefold())


def _api_name(match: re.Match[str]) -> bool:
    """An inline-code identifier that names an API: a class, written in UpperCamelCase ("`StructType`",
    "`CountVectorizer`", "`SparkSubmitOperator`"), or a function called or followed by its kind whose name no
    English word is written as (snake case, camel case or capitals: "`DENSE_RANK()`", "`partitionBy()`",
    "`row_number` function"); not a plain word ("`cache()`", "`explode`") nor a variable ("`my_table`")."""
    name = match.group(1)
    letters = name.replace("_", "")
    if not letters.isalnum():
        return False
    mixed = any(c.isupper() for c in letters[1:]) and any(c.islower() for c in letters)
    if name[:1].isupper() and mixed and "_" not in name:
        return True
    called = bool(match.group(2)) or (match.group(3) or "").casefold() in _CODE_KINDS
    # a keyword in capitals is an English word ("`DISTINCT`", "the `SELECT` statement": phrases._shouted), no API
    shaped = "_" in name.strip("_") or mixed or (name.isupper() and len(letters) >= 3 and not _shouted(name.casefold()))
    return called and shaped


def _blank_escape(match: re.Match[str]) -> str:
    return " " * len(match.group(0))


@dataclass
class _Candidate:
    key: tuple[str, ...]
    named: bool = False
    language: str = "en"
    forms: Counter[str] = field(default_factory=Counter)
    cased_mid: int = 0  # mentions capitalised inside a sentence ("we run Spark on YARN")
    lower_mid: int = 0  # mentions in lower case ("a spark of hope")
    blind: int = 0  # mentions in a message written without capitals: their case is the other mentions'
    mentions: list[tuple[_Message, int, int]] = field(default_factory=list)  # message, view start, view end
    first_user: bool = False  # mentioned in the segment's first user message
    not_subject: int = 0  # proposals written as a literal value or as the assistant's name for itself
    quoted: int = 0  # other proposals written in quotes ('equal to "CHN"')
    defined: bool = False  # a text's defined term for a party ('("Client")'): the role, not a subject
    firm: bool = False  # proposed by the plain rules at least once, not only with a modifier they cut (loose)
    coded: bool = False  # a word the user says that the segment writes as inline code: a function, command, keyword
    head: bool = False  # one word that heads a reply's list item ("- Mutability: Lists are mutable, ...")

    def proposals(self) -> int:
        return sum(self.forms.values())

    def user_mentions(self) -> int:
        return sum(m.message.role == "user" for m, _, _ in self.mentions)

    def title(self) -> str:
        """The most frequent cased form ("AWS Glue" over "aws glue"); an all-lower form gets a capital."""
        cased = {f: n for f, n in self.forms.items() if f != f.casefold()}
        best = max((cased or self.forms).items(), key=lambda kv: (kv[1], kv[0] != kv[0].casefold(), kv[0]))[0]
        return best if best != best.casefold() else best[:1].upper() + best[1:]


def propose(segment: SegmentInput, max_concepts: int, open_ranks: int = OPEN_RANKS) -> list[dict[str, Any]]:
    """The raw hypotheses (plain dicts, the shape an LLM answers in) for one segment."""
    # A tool's output (a web page the search fetched, "Successfully created text document ...", a run's result)
    # was written by no one in the conversation: what the assistant takes from it, its reply says.
    messages = [_read(m) for m in segment.messages if m.text and m.role != "tool"]
    _settle_languages(messages)
    candidates = _candidates(messages)
    fold_expansions(candidates)
    drop_numbered(candidates)
    drop_placeholders(candidates)
    for key in [k for k, c in candidates.items() if c.defined or 0 < c.not_subject >= c.proposals() - c.quoted]:
        del candidates[key]  # a value in a statement ('city="CHN"', then 'equal to "CHN"'); "As an AI model, I"
    title_words = {w.casefold() for w in _TITLE_WORD.findall(segment.title or "")}
    if HAN.search(segment.title or ""):
        title_words |= {t.lower for t in chinese.tokens(segment.title or "")}  # "学习机器学习": 学习, 机器, 学习
    asked = _Asked(messages, title_words)
    base = {key: _score(candidate, title_words, asked) for key, candidate in candidates.items()}
    names = {key: c for key, c in candidates.items() if base[key] > 0 and len(key) > 1 and _full_name(c.title())}
    inside = _inside_longer(names, candidates)
    nearby = _Vocabulary(messages)
    scored = []
    for candidate in candidates.values():
        score = base[candidate.key]
        if score > 0 and _spelt_right(candidate, nearby):
            score = 0.0  # "Heirarchy" typed, "hierarchy" in the reply: the word counts under its spelling
        if inside.get(candidate.key, 0) * 2 >= len(candidate.mentions) > 0:
            score = 0.0  # mostly said as part of a longer term ("Müller" in "Café Müller"): that term is the concept
        if score > MIN_LIKELIHOOD:
            scored.append((-score, candidate.title().casefold(), candidate))
    scored.sort(key=lambda item: (item[0], item[1]))
    chosen: list[dict[str, Any]] = []
    picked: list[_Candidate] = []
    taken: list[tuple[set[str], bool]] = []  # the words of each chosen term, and whether it is a full name
    repeated: list[_Candidate] = []  # past the open ranks, terms only the replies say, PAST_OPEN_SAID times or more
    for score, _, candidate in scored:
        if len(chosen) == max_concepts:
            break
        if len(chosen) >= open_ranks and candidate.user_mentions() == 0:
            if len(candidate.mentions) >= PAST_OPEN_SAID or _introduced_name(candidate, -score):
                repeated.append(candidate)
            continue  # past the open ranks, the user's words first
        if _choose(candidate, taken):
            picked.append(candidate)
            chosen.append(_hypothesis(segment, candidate, len(chosen), open_ranks))
    order = _specific_first(picked)
    if order != picked:
        chosen = [_hypothesis(segment, c, rank, open_ranks) for rank, c in enumerate(order)]
    # then what the replies keep saying, where room is left and where it cannot tie with an open rank: one that
    # cites a single span (said once) would share its evidence count, and its place in the conversation's top
    # five would be left to the titles' alphabetical order
    untied = all(len(h["evidence_spans"]) >= 2 for h in chosen[:open_ranks])
    if repeated and untied:
        for candidate in repeated:
            if len(chosen) == max_concepts:
                break
            if _choose(candidate, taken):
                chosen.append(_hypothesis(segment, candidate, len(chosen), open_ranks))
    if len(chosen) == max_concepts:
        _names_past_cap(segment, scored, chosen, taken, open_ranks, untied)
    return chosen


def _specific_first(picked: list[_Candidate]) -> list[_Candidate]:
    """The segment's chosen terms in rank order, but a common word moved to just after a longer term the user says
    that holds it ("Calculator" after "pricing calculator", "Neem" after "neem oil"): the user's term says which
    thing, so it takes the better rank and the more evidence; the word stays, a place lower. Names ("Hive" before
    "Hive external table") and words written as code keep their rank."""
    order: list[_Candidate] = []
    waiting: list[_Candidate] = []
    for i, candidate in enumerate(picked):
        if _common_word(candidate) and any(_holds(later, candidate) for later in picked[i + 1 :]):
            waiting.append(candidate)
            continue
        order.append(candidate)
        for word in [w for w in waiting if _holds(candidate, w)]:
            waiting.remove(word)
            order.append(word)
    return order + waiting


def _common_word(candidate: _Candidate) -> bool:
    name = candidate.named and candidate.cased_mid > candidate.lower_mid
    return len(candidate.key) == 1 and not name and not candidate.coded


def _holds(term: _Candidate, word: _Candidate) -> bool:
    """Whether `term` is a longer term the user says with `word` in it."""
    return len(term.key) > 1 and word.key[0] in term.key and term.user_mentions() > 0


def _names_past_cap(
    segment: SegmentInput,
    scored: list[tuple[float, str, _Candidate]],
    chosen: list[dict[str, Any]],
    taken: list[tuple[set[str], bool]],
    open_ranks: int,
    untied: bool,
) -> None:
    """Past a full segment, up to NAMES_PAST_CAP more of the names it mentions ("IKEA" beside six book titles,
    "StructType" below a reply's terms on schema changes): a person lists the things a conversation names, and each
    cites one span, after every term above, so a conversation's top five change only where fewer than five of its
    concepts cite more. A name only the replies say is added where it cannot tie with an open rank (as `propose`
    adds the replies' repeated terms)."""
    titles = {h["title"] for h in chosen}
    added = 0
    for score, _, candidate in scored:
        if added == NAMES_PAST_CAP:
            return
        if candidate.title() in titles or not _listed_name(candidate, -score):
            continue
        if candidate.user_mentions() == 0 and not untied:
            continue
        if _choose(candidate, taken):  # one span, whatever the cap: past it, below every term inside it
            chosen.append(_hypothesis(segment, candidate, max(len(chosen), open_ranks), open_ranks))
            added += 1


def _listed_name(candidate: _Candidate, score: float) -> bool:
    """A name in its own right: one the replies introduce (`_introduced_name`), or one the user writes as a name
    ("IKEA", "West Elm" in mid-sentence) or as an identifier ("number_to_hex()")."""
    if _introduced_name(candidate, score):
        return True
    if candidate.user_mentions() == 0:
        return False
    word = candidate.key[0]
    shaped = any(_acronym_or_inner(f) for f in candidate.forms) or (len(candidate.key) == 1 and "_" in word.strip("_"))
    return shaped or (candidate.named and candidate.cased_mid > candidate.lower_mid)


def _settle_languages(messages: list[_Message]) -> None:
    """A message of a few words says too little for the language identifier ("bitte 25 weitere" reads as English):
    it is read in the language most of its segment's words are in."""
    words: Counter[str] = Counter()
    for message in messages:
        if len(message.words) >= SHORT_MESSAGE_WORDS:
            words[message.language] += len(message.words)
    if words:
        language = words.most_common(1)[0][0]
        for message in messages:
            if len(message.words) < SHORT_MESSAGE_WORDS:
                message.language = language


def _introduced_name(candidate: _Candidate, score: float) -> bool:
    """ "Spark SQL", "National Park Service", "StructType": a name of several words, or one written with inner
    capitals, that the replies write as a name in mid-sentence and that ranks high: the conversation names it."""
    if score < NAME_PAST_OPEN or not candidate.cased_mid or candidate.cased_mid < candidate.lower_mid:
        return False
    several = len(candidate.key) > 1 and _full_name(candidate.title())
    return several or any(_acronym_or_inner(f) for f in candidate.forms)


def _choose(candidate: _Candidate, taken: list[tuple[set[str], bool]]) -> bool:
    """Whether a candidate is a concept beside the terms already taken (and if so, take its words)."""
    words_ = set(candidate.key)
    own = len(words_) <= MAX_SUBTERM_WORDS and candidate.user_mentions() > 0
    lone_name = (
        len(words_) == 1
        and candidate.named
        and candidate.cased_mid > candidate.lower_mid
        and not candidate.key[0].endswith(_ADJECTIVE_ENDS)  # "Python-like" in "Python-like pseudocode"
        and _noun_or_unknown(candidate.key[0])  # "Amplified" in "Amplified zombie types": a modifier
    )
    if any((words_ <= other and (full or not lone_name)) or (other <= words_ and not own) for other, full in taken):
        # "Glue" after "AWS Glue": that name covers it, but a name used as a modifier in a phrase ("Hive" after
        # "partitioned Hive table", "Rachel" after "friend Rachel") is a concept of its own; a term the user
        # says after its head word ("Hive external table" after "Hive") is one too; a reply's clause around
        # it ("DAG run reads XW0") or a long run is not
        return False
    taken.append((words_, _full_name(candidate.title())))
    return True


@lru_cache(maxsize=1 << 14)
def _noun_or_unknown(word: str) -> bool:
    """A word the English lexicon reads as a noun ("hive") or does not know ("rachel", "sqoop")."""
    tags = lexicon.parts_of_speech(word)
    return not tags or "NOUN" in tags


def _candidates(messages: list[_Message]) -> dict[tuple[str, ...], _Candidate]:
    """Every phrase of every message, with each of its occurrences in the segment (names and phrases found in
    one message are looked for in all of them: "churn model" said by the user, repeated in a reply)."""
    found: dict[tuple[str, ...], _Candidate] = {}
    for message in messages:
        user = message.message.role == "user"
        phrase_chars = None if user else REPLY_PHRASE_CHARS
        for phrase in phrases(message.view, message.language, message.words, phrase_chars, heads=not user):
            candidate = found.setdefault(phrase.key, _Candidate(phrase.key, language=message.language))
            candidate.named = candidate.named or phrase.named
            candidate.firm = candidate.firm or not phrase.loose
            candidate.head = candidate.head or (phrase.head and len(phrase.key) == 1)
            candidate.forms[_form(phrase, message)] += 1
            not_subject, quoted, defined = _not_a_subject(message.view, phrase, user)
            candidate.not_subject += not_subject
            candidate.quoted += quoted and not not_subject
            candidate.defined = candidate.defined or defined
    _propose_coded(messages, found)
    _index_mentions(messages, found)
    _index_fences(messages, found)
    for key in [k for k, c in found.items() if not c.firm and (len(c.mentions) < LOOSE_SPREAD or _described(c))]:
        del found[key]  # "a larger dataset" once: the adjective says which one; "linguistic diversity" twice: a term
    _truecase(found)
    return found


def _described(candidate: _Candidate) -> bool:
    """A loose phrase opened by a qualifying word ("small business", "a small vase") that only the replies say: the
    assistant describing a thing, where the user's own "small business" names the kind they ask about."""
    return candidate.key[0] in QUALIFYING_OPENERS and candidate.user_mentions() == 0


def _propose_coded(messages: list[_Message], found: dict[tuple[str, ...], _Candidate]) -> None:
    """A word the user says in prose that the segment writes as a function or a command in inline code ("if we use
    explode in pyspark", then "the `explode` function"; "how to use limit in linux", then "the `limit` command")
    names what the user asks about, however common the word ("the `balance` field" names a column: no). Its
    inline-code mentions count as mentions (`_index_mentions` reads prose only)."""
    _propose_apis(messages, found)
    coded = {name.casefold() for m in messages for name, _, _, function, _ in m.code_names if function}
    if not coded:
        return
    said: set[tuple[str, ...]] = set()
    for message in messages:
        if message.message.role != "user":
            continue
        for token in message.words:
            if token.lower in coded and not token.stop and plausible_word(token.text):
                key = key_of([token.lower])
                candidate = found.setdefault(key, _Candidate(key, language=message.language))
                candidate.named = candidate.firm = candidate.coded = True
                if key not in said:
                    said.add(key)
                    candidate.forms[token.lower] += 1
    for message in messages:
        for name, start, end, _, _ in message.code_names:
            key = key_of([name.casefold()])
            if key in said:
                found[key].mentions.append((message, start, end))
                found[key].forms[name] += 1


def _propose_apis(messages: list[_Message], found: dict[tuple[str, ...], _Candidate]) -> None:
    """An API a reply names in inline code ("use the `StructType` and `StructField` classes", "the `DENSE_RANK()`
    window function") is a name the conversation is about, though the prose view blanks code: a candidate, each
    such inline mention a mention written with its case (the scoring then asks a reply-only name for its capital
    or three mentions, as any other)."""
    for message in messages:
        if message.message.role == "user":
            continue
        for name, start, end, _, api in message.code_names:
            if not api or not plausible_word(name):
                continue
            key = key_of([name.casefold()])
            candidate = found.setdefault(key, _Candidate(key, language="en"))
            candidate.named = candidate.firm = True
            candidate.forms[name] += 1
            candidate.mentions.append((message, start, end))
            if name != name.casefold():
                candidate.cased_mid += 1
            else:
                candidate.lower_mid += 1


def _index_fences(messages: list[_Message], found: dict[tuple[str, ...], _Candidate]) -> None:
    """A code block marked with its language ("```python") says the reply's code is in that language: a mention of
    it, written as the name it is, where the prose names the language too ("Here's the code in Python:")."""
    for message in messages:
        for language, start, end in message.fences:
            candidate = found.get(key_of([language.casefold()]))
            if candidate is not None and candidate.named:
                candidate.mentions.append((message, start, end))
                candidate.cased_mid += 1


def _truecase(found: dict[tuple[str, ...], _Candidate]) -> None:
    """A mention in a message typed without capitals ("how to use limit in linux") takes the case the segment's
    other mentions agree on (the reply's "In Linux, ..."): a user who never presses shift says nothing about
    names, and counting their words as lower case made every name they typed look like a common word."""
    for candidate in found.values():
        if candidate.blind:
            if candidate.cased_mid > candidate.lower_mid:
                candidate.cased_mid += candidate.blind
            elif candidate.lower_mid > candidate.cased_mid:
                candidate.lower_mid += candidate.blind


# A value in a statement typed as prose ("set city='Hyd'", 'WHERE city="CHN"'): a literal, not a subject.
_LITERAL = re.compile(r"""[=<>]\s*['"‘“]$""")
# A word a text defines as its term for a party or a thing ('... providing the services] ("Provider")',
# '("Acuerdo")'): a role in that text (a contract, terms of service), in any language, not its subject.
_DEFINED_BEFORE = re.compile(r"""\(\s*['"‘“«]$""")
_DEFINED_AFTER = re.compile(r"""['"’”»]\s*\)""")
# The assistant describing itself ("As an AI language model, I ..."): no subject of the conversation.
_SELF = re.compile(r"(?:^|[.!?\n]\s*)(?:as|i am|i'm|i’m) an?\s+$", re.IGNORECASE)
_SELF_AFTER = re.compile(r"\s*,\s*I\b")
_QUOTES = frozenset("'\"‘’“”")
_NONE = (False, False, False)


def _not_a_subject(view: str, phrase: Phrase, user: bool) -> tuple[bool, bool, bool]:
    """(written as a literal value in a statement or as the assistant's name for itself, written in quotes,
    defined as a text's term for a party or thing)."""
    opening = view[phrase.start - 1 : phrase.start] if phrase.start else ""
    if opening not in _QUOTES and (user or view[phrase.end : phrase.end + 1] != ","):
        return _NONE  # most phrases: decided on two characters
    before = view[max(0, phrase.start - 12) : phrase.start]
    quoted = before[-1:] in _QUOTES and view[phrase.end : phrase.end + 1] in _QUOTES
    defined = (
        quoted
        and len(phrase.key) == 1
        and not phrase.surface.isupper()  # an acronym defined ('Personally Identifiable Information ("PII")') stays
        and _DEFINED_BEFORE.search(before) is not None
        and _DEFINED_AFTER.match(view, phrase.end) is not None
    )
    if _LITERAL.search(before) is not None:
        return True, quoted, defined
    own = not user and _SELF.search(before) is not None and _SELF_AFTER.match(view, phrase.end) is not None
    return own, quoted, defined


def _form(phrase: Phrase, message: _Message) -> str:
    """The phrase as written, without the capital that only opens its sentence ("Spark job" -> "spark job")."""
    surface = phrase.surface
    first = surface.split(" ", 1)[0]
    opens = phrase.start == 0 or _opens_sentence(message.view, phrase.start)
    if opens and first[:1].isupper() and first[1:] == first[1:].casefold() and not phrase.named:
        return surface[:1].casefold() + surface[1:]
    return surface


def _opens_sentence(view: str, start: int) -> bool:
    before = view[max(0, start - 3) : start]
    return not before.strip() or before.rstrip()[-1:] in ".!?:\n"


def _index_mentions(messages: list[_Message], found: dict[tuple[str, ...], _Candidate]) -> None:
    sizes: dict[str, set[int]] = {}
    for key in found:
        sizes.setdefault(key[0], set()).add(len(key))
        if len(key) == 1 and found[key].named:
            # a one-word key is singular ("kubernete", "hdf", "dataframe"): a name's mentions are written
            # "Kubernetes", "HDFS", "DataFrames" too (looked for under the key alone, a name ending in s, "Jenkins",
            # "Texas", "HDFS", had no mention at all). A common word's plural stays unread: the singular's background
            # frequency is no measure of it ("serie", "specie", "politic" look rare).
            for plural in _plurals(key[0]):
                sizes.setdefault(plural, set()).add(1)
    first_user = next((m for m in messages if m.message.role == "user"), None)
    for message in messages:
        words_ = message.words
        lowers = [t.lower for t in words_]
        opening = message is first_user
        blind = message.case_blind
        for i, word in enumerate(lowers):
            for size in sizes.get(word, ()):
                key = key_of(lowers[i : i + size])
                if len(key) == size and key in found:
                    candidate = found[key]
                    candidate.mentions.append((message, words_[i].start, words_[i + size - 1].end))
                    candidate.first_user = candidate.first_user or opening
                    first = words_[i]
                    if blind:
                        candidate.blind += 1
                    elif not first.sentence_start and first.capitalised:
                        candidate.cased_mid += 1
                    elif first.text == first.lower:
                        candidate.lower_mid += 1


@lru_cache(maxsize=1 << 14)
def _plurals(word: str) -> tuple[str, ...]:
    """The written forms that `singular` folds into this one ("partition" <- "partitions", "query" <- "queries")."""
    forms = [word + "s"]
    if word.endswith("y"):
        forms.append(word[:-1] + "ies")
    return tuple(f for f in forms if singular(f) == word)


def _specificity(candidate: _Candidate) -> float:
    """0 (a common word) .. 1 (a rare term), from background frequencies; several words count as specific."""
    frequencies = [lexicon.zipf(w, candidate.language) for w in candidate.key]
    rarest = min(frequencies)
    if len(candidate.key) == 1:
        value = (5.2 - rarest) / 3.0
        if candidate.named:
            value += 0.3
        if candidate.named and capital_marks_name(candidate.language):
            # a name in a language that capitalises names only: "Paris" is as common in French as "the" is rare,
            # and no less a name (its English counterpart stays above the bar on the named bonus alone)
            value = max(value, NAME_SPECIFICITY)
    else:
        value = 0.45 + (5.5 - rarest) / 6.0 + 0.1 * candidate.named
    return max(0.0, min(1.0, value))


def _single_word_ok(candidate: _Candidate) -> bool:
    """One word is a concept when it is a rare term ("backpropagation", "Sqoop"), an acronym or inner-capital
    name ("AWS", "PySpark"), or a word written with its capital inside sentences more often than without
    ("Spark", "Glue"); a common word alone ("model", "schedule", "salaries") names nothing in particular, and
    a word no list holds, said once, is more likely a typo than a term."""
    word = candidate.key[0]
    forms = list(candidate.forms)
    if all(f == f.casefold() for f in forms) and any(c.isdigit() for c in word):
        return False  # "sqm3", "df2", "table1": an identifier no one writes with a capital ("EC2", "S3", "GPT-4o" are)
    if candidate.quoted >= candidate.proposals() and _quoted_value(candidate):
        return False  # "there is 'aal' in label 1": a value quoted from the data, no English word
    if candidate.coded:
        return True  # "explode", "limit": a function or a command the user names, written as code
    frequency = lexicon.zipf(word, candidate.language)
    if any(_acronym_or_inner(f) for f in forms):
        # "AI", "HR", "MB": a two-letter acronym is a unit or a department more often than a subject
        return len(word) > 2 or len(candidate.mentions) >= 3
    if _proper_noun(candidate):
        return True
    if candidate.cased_mid and candidate.cased_mid >= candidate.lower_mid:
        return frequency < 4.8 and (candidate.cased_mid >= 2 or frequency < 3.5)
    if frequency == 0.0:
        # a typo is said once; an identifier the user writes ("using number_to_hex()") is named on purpose
        return len(candidate.mentions) >= 2 or ("_" in word and candidate.user_mentions() > 0)
    user = candidate.user_mentions()
    if user and len(candidate.mentions) > user and "NOUN" in lexicon.parts_of_speech(word):
        # a noun the user says and the replies repeat may be a little more common for each doubling of its mentions
        # ("Cache" said 8 times, "Artifact" 5 times); a word said once is held to the plain bar
        return frequency < COMMON_WORD_ZIPF + REPEATED_ZIPF_STEP * math.log2(len(candidate.mentions))
    return frequency < COMMON_WORD_ZIPF


def _proper_noun(candidate: _Candidate) -> bool:
    """ "Europe", "Emily", "Paris": a word the user writes with its capital inside sentences, never without it, that
    is a name however common: in English one the lexicon has no part of speech for (a place, a person, a brand), in
    a language that capitalises names only ("Sevilla", "Lyon", "Петербург") any; not a part of a longer name it is
    written beside ("York" in "New York", "Dr" in "Dr Jones"), nor a title ("Mrs", "Dr": the name follows). A German
    capital marks any noun: no name by it alone."""
    word = candidate.key[0]
    if candidate.language == "en":
        by_language = len(word) > 3 and not lexicon.parts_of_speech(word)
    else:
        by_language = capital_marks_name(candidate.language) and len(word) > 2
    return (
        by_language
        and candidate.cased_mid > 0
        and candidate.lower_mid == 0
        and candidate.user_mentions() > 0
        and not any(_beside_capital(m.view, start, end) for m, start, end in candidate.mentions)
    )


_CAPITAL_BEFORE = re.compile(r"[A-Z][\w.]*[ \t]$")
_CAPITAL_AFTER = re.compile(r"[ \t][A-Z]")


def _beside_capital(view: str, start: int, end: int) -> bool:
    return _CAPITAL_BEFORE.search(view, max(0, start - 24), start) is not None or (
        _CAPITAL_AFTER.match(view, end) is not None
    )


def _quoted_value(candidate: _Candidate) -> bool:
    """A lower-case English-context word the lexicon has no part of speech for ("aal", "chn"): quoted, a value."""
    return (
        candidate.language == "en"
        and all(f == f.casefold() for f in candidate.forms)
        and not lexicon.parts_of_speech(candidate.key[0])
    )


def _acronym_or_inner(form: str) -> bool:
    letters = [c for c in form if c.isalpha()]
    caps = sum(c.isupper() for c in letters)
    return len(letters) >= 2 and (caps == len(letters) or (caps >= 1 and not form[:1].isupper()) or caps >= 2)


class _Vocabulary:
    """The lower-case words of a segment, collected on the first question (most segments never ask)."""

    def __init__(self, messages: list[_Message]) -> None:
        self.messages = messages
        self.words: set[str] | None = None
        self.reply_words: set[str] | None = None

    def __contains__(self, word: object) -> bool:
        if self.words is None:
            self.words = {t.lower for m in self.messages for t in m.words}
        return word in self.words

    def in_replies(self, word: str) -> bool:
        """Whether a message that is not the user's writes `word` (lower case)."""
        if self.reply_words is None:
            self.reply_words = {t.lower for m in self.messages if m.message.role != "user" for t in m.words}
        return word in self.reply_words


def _spelt_right(candidate: _Candidate, nearby: _Vocabulary) -> bool:
    """Correct a candidate's words that misspell a common word said in the same segment (lexicon.misspelling)
    in its forms ("3rd highest salary deprtment" is titled "... department"); True when the candidate is one
    such word alone (it is not a concept of its own). Words written as names in mid-sentence are not asked."""
    if candidate.cased_mid > candidate.lower_mid:
        return False
    # a word of four letters is a slip only where no reply writes it too ("Weka" beside "a weak point"): assistants
    # correct a typo, they do not repeat it
    fixes = {
        w: right
        for w in candidate.key
        if (len(w) >= 5 or (len(w) == 4 and not nearby.in_replies(w)))
        and (right := lexicon.misspelling(w, nearby, candidate.language)) is not None
    }
    if not fixes:
        return False
    if len(candidate.key) == 1:
        return True
    forms: Counter[str] = Counter()
    for form, count in candidate.forms.items():
        words = [_respelt(w, fixes) for w in form.split(" ")]
        forms[" ".join(words)] += count
    candidate.forms = forms
    return False


def _respelt(word: str, fixes: dict[str, str]) -> str:
    right = fixes.get(word.casefold())
    if right is None:
        return word
    return right[:1].upper() + right[1:] if word[:1].isupper() else right


def _full_name(title: str) -> bool:
    """ "Café Müller", "AWS Glue", "Volkswagen Transporter": every word capitalised (a name, not "Hive table")."""
    return all(w[:1].isupper() or w[:1].isdigit() or w in ("of", "&", "de") for w in title.split())


def _inside_longer(
    viable: dict[tuple[str, ...], _Candidate], candidates: dict[tuple[str, ...], _Candidate]
) -> dict[tuple[str, ...], int]:
    """For each candidate, how many of its mentions are part of a longer viable candidate's ("Glue" inside "AWS
    Glue", "Müller" inside "Café Müller"): those belong to the longer term."""
    inside: dict[tuple[str, ...], int] = {}
    for key, candidate in viable.items():
        for size in range(1, len(key)):
            for start in range(len(key) - size + 1):
                part = key_of(key[start : start + size])  # "Liars" in "Liars' Gospel": the key ("liar",)
                if part in candidates and part != key:
                    inside[part] = inside.get(part, 0) + len(candidate.mentions)
    return inside


# The weights of a candidate's log-odds of being a concept a person would list for the conversation: a logistic
# regression over these features of the extractor's choices on the dev labels (benchmarks/labels, 571 choices;
# cross-validated AUC 0.84, against 0.71 for the hand-set product it replaces), rounded. What counts: the user
# saying it, how often it recurs and in how many messages, a name's capital, the conversation's title naming
# it, and a term of several words over a single word.
_BIAS = -3.8
_USER = 1.5  # the user says it at least once
_OTHER = 1.2  # per log(1 + mentions in replies)
_SPREAD = 0.3  # per log(messages that mention it)
_NAMED = 0.7  # proposed as a name
_CASED = 0.3  # written with its capital inside a sentence
_TITLE = 0.8  # a content word of the conversation's title
_FIRST = 0.2  # in the first user message of the segment
_TWO_WORDS = 0.3
_LONGER = 1.0  # three words or more
_SPECIFIC = 0.6  # per unit of background specificity (0..1)
MIN_LIKELIHOOD = 0.0


class _Asked:
    """The lemmas of the words the user and the title say, collected on the first question (most segments never
    ask): a reply's phrase made only of them words what the user asked about."""

    def __init__(self, messages: list[_Message], title_words: set[str]) -> None:
        self.messages = messages
        self.title_words = title_words
        self.lemmas: set[str] | None = None

    def all_said(self, key: tuple[str, ...]) -> bool:
        if self.lemmas is None:
            words = {t.lower for m in self.messages if m.message.role == "user" for t in m.words if not t.stop}
            self.lemmas = {lemma for w in words | self.title_words for lemma in _lemmas(w)}
        return all(not self.lemmas.isdisjoint(_lemmas(w)) for w in key)


def _verb_first(candidate: _Candidate) -> bool:
    """ "Run queries", "Handle exceptions", "Attending films": a lower-case word that can be a verb, then its
    object (a clause, not a term)."""
    word = candidate.key[0]
    return all(f == f.casefold() for f in candidate.forms) and "VERB" in lexicon.parts_of_speech(word)


@lru_cache(maxsize=1 << 16)
def _lemmas(word: str) -> frozenset[str]:
    """ "handling" -> {handling, handle}; a word the lexicon does not know is its own lemma."""
    return frozenset({word, singular(word), *(x for forms in lexicon.lemmas(word).values() for x in forms)})


def _score(candidate: _Candidate, title_words: set[str], asked: _Asked | None = None) -> float:
    """How much this candidate is what the segment is about (0: not a concept at all)."""
    key = candidate.key
    if not candidate.mentions or all(w in GENERIC or singular(w) in GENERIC for w in key):
        return 0.0
    user = candidate.user_mentions()
    if user == 0 and len(candidate.mentions) < 2 and len(key) == 1 and not candidate.cased_mid and not candidate.head:
        return 0.0  # one lower-case word said once in a reply (most candidates: decided before any lookup)
    if len(key) == 1 and not _single_word_ok(candidate):
        return 0.0
    specificity = _specificity(candidate)
    if specificity < 0.2:
        return 0.0
    other = len(candidate.mentions) - user
    named_term = candidate.cased_mid > 0 and specificity >= 0.6
    echo = len(key) > 1 and asked is not None and not _verb_first(candidate) and asked.all_said(key)
    if user == 0 and other < 3 and not named_term and not echo and not candidate.head:
        # Said once or twice, in replies only: how the assistant happened to explain ("load times", "network
        # overhead", "human-readable format"), not what the conversation is about, however specific its words;
        # a name it introduces ("Point Reyes", "KryoSerializer") is the exception. Said three times, it counts.
        return 0.0
    spread = len({id(m) for m, _, _ in candidate.mentions})
    in_title = any(w in title_words or singular(w) in title_words for w in key if w not in GENERIC)
    first_user = candidate.first_user
    logit = (
        _BIAS
        + _USER * (user > 0)
        + _OTHER * math.log1p(other)
        + _SPREAD * math.log(spread)
        + _NAMED * candidate.named
        + _CASED * (candidate.cased_mid > 0)
        + _TITLE * in_title
        + _FIRST * first_user
        + _TWO_WORDS * (len(key) == 2)
        + _LONGER * (len(key) >= 3)
        + _SPECIFIC * specificity
    )
    return 1.0 / (1.0 + math.exp(-logit))


def _cue(candidate: _Candidate) -> tuple[str, str] | None:
    """The type cue of the first user sentence that has one for this candidate; a goal cue only when what follows
    is a goal (extract.goals.goal) holding the candidate ("I want to convert it into a style that uses string
    concatenation": string concatenation is no goal)."""
    for message, start, end in candidate.mentions:
        if message.message.role == "user":
            first, last = message.original(start, end)
            mention = message.message.text[first:last].casefold()
            for kind, said, goal_value in _sentence_cues(message.span(first, last)):
                if kind != "goal" or mention in goal_value:
                    return kind, said
    return None


@lru_cache(maxsize=1 << 14)
def _sentence_cues(sentence: str) -> tuple[tuple[str, str, str], ...]:
    """Every cue in one sentence, in CUES order: (kind, the words, for a goal the goal it names in lower case,
    "" when none). Cached: the candidates of a sentence share it."""
    found = []
    for kind, pattern in CUES:
        hit = pattern.search(sentence)
        if hit:
            named = goal(sentence[hit.end() :]).casefold() if kind == "goal" else ""
            found.append((kind, hit.group(0), named))
    return tuple(found)


def _spans_for(rank: int, open_ranks: int = OPEN_RANKS) -> int:
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
        if not text or any(s["message_id"] == message.message.message_id and s["text"] == text for s in spans):
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
