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

Where each step lives: 1 in extract/offline_messages.py, 2 in extract/offline_candidates.py (the phrases themselves:
extract/phrases.py), 3 in extract/offline_scoring.py, the choice of step 4 here (`propose`), its types, titles and
the evidence spans of step 5 in extract/offline_hypotheses.py.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from clients.chinese_words import HAN
from contracts.concepts import SCHEMA_VERSION
from extract import chinese, lexicon
from extract.fact_mapper import map_raw_facts
from extract.facts import FACT_RULES_VERSION, propose_facts
from extract.lone_words import drop_lone_words
from extract.mapper import map_raw_hypotheses
from extract.offline_candidates import _Candidate, _candidates
from extract.offline_hypotheses import _hypothesis
from extract.offline_messages import _read, _settle_languages
from extract.offline_scoring import (
    MIN_LIKELIHOOD,
    _acronym_or_inner,
    _Asked,
    _full_name,
    _inside_longer,
    _score,
    _spelt_right,
    _Vocabulary,
)
from extract.stand_ins import drop_numbered, drop_placeholders, fold_expansions, fold_short_names
from extract.types import ExtractionFailure, ExtractionOutput, SegmentInput
from extract.word_kinds import ADJECTIVE_ENDS

# v37: a common noun opening a sentence and a name of 3+ words stays in it ("Point Reyes National Seashore")
# v38: the prose view blanks unfenced code, tool tables and tool logs (clients/console_blocks.py, clients/console.py)
# v39: a possessive before a title's words is one name ("Assassin's Creed Odyssey"), a verb's -s form after a singular
# subject ends a term ("This function takes"), the read limit ends on a word's end ("Projec"), glued sentences are cut
# ("executedWhere"), JSON keys in prose are no words, a four-letter word one letter short is a misspelling ("scal")
# v40: an acronym ending in S folds its expansion ("HDFS", "Hadoop Distributed File System"), a word written with a
# capital then a verb's -s form then an object is a clause ("Grandma loves the garden"), "-inspired" words are
# modifiers, "McDonald's" keeps its 's, "Happy Mother's Day" is "Mother's Day", and past a full open set up to four
# terms that rank nowhere: a reply's passing phrases, common nouns the user says (`_tail`)
# v41: sentences in another language inside an English message are blanked ("Chúng tôi ...", "Cảm ơn bạn"), a person's
# short name said after the full name folds into it ("Lloyd" into "Frank Lloyd"), an acronym meets an expansion with a
# compound word ("RDBMS"), a lower-case form takes the capitals the segment writes ("SQL query", "AWS services"), a
# quantity, a name's hyphenated modifier and the verb after an adjective and "to" open no term ("1/2 oz agave syrup",
# "Python-like pseudocode", "essential to support"), "Whoever" opens no name
# v42: a day of the week ("Mondays") and an identifier the segment's code defines that the user never says
# ("handleClick", "MyApp") are no concepts (extract/lone_words.py)
# v43: a piece of a longer name the name rules cut ("Zealand" of "New Zealand", "Gen" of "Next Gen"), a word used as
# a verb or a modifier in every mention ("to complement the sofa", "a cohesive look"), an abbreviation ("(Wis)"), a
# quoted example sentence ('"The dog runs."'), a numbered item ("store 10") and a browser extension's "Share Prompt"
# and lines of chords ("E D A Bm") are no concepts (extract/lone_words.py, extract/offline_messages.py)
# v44: a browser extension's "Please write in English language." footer and a Korean one's "지금 번역하기" are no
# prose, a quoted title opened by any capitalised word with a small word inside is one name ("Once Upon a Time in
# Hollywood"), a title's small words keep it a full name, an adjective written with a capital before its noun in every
# mention ("Indigenous communities") is no concept, nor is an "-led" or "-owned" word ("Indigenous-led")
# v45: a quoted value after a JSON key is data ('"type": "Chocolate with Sprinkles"'), a title with a small word the
# segment writes in lower case is a description ("Night Out with Friends"), a numbered item whose code compares its
# field to the number ("Store == 10"), "Schema" alone are no concepts
# v46: a span inside another span of the same message is not cited again (a repeated sentence cut where reading ends)
# v47: a habit's word ("daily", "every day", "weekly") types a term a habit only where the user is its subject and the
# word is not the term's own ("daily routine of a data engineer", "daily csv to datalake" are no habits)
# v48: a header row of a program's field names is no prose, with or without data rows ("id, type, name, ppu,
# batter.id, ..."), and the concepts stage's folds refuse a verb's forms that speak of other things ("Flicking" paint,
# "Flicks" of a game), a table made of a title-cased common phrase ("Glass coffee table", a "Glass Coffee" cafe), a
# kind through an abbreviation's alias ("Cv data", "CV" of "Computer Vision") and a word said outside the longer name
# that holds it ("start using Flutter" beside "the Flutter archive file")
OFFLINE_VERSION = 48  # bump with any change to the rules here or in the modules above: part of the extraction cache key


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


# Past a full open set, this many more terms that rank nowhere (`_tail`).
TAIL = 4


# Past the open ranks, a term only the replies say counts where they say it this many times ("Caching" explained
# in three sentences of a reply on Spark's internals, "Repartition" in three).
PAST_OPEN_SAID = 3


_TITLE_WORD = re.compile(r"[^\W_][\w'’+#.&-]*", re.UNICODE)


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


def propose(segment: SegmentInput, max_concepts: int, open_ranks: int = OPEN_RANKS) -> list[dict[str, Any]]:
    """The raw hypotheses (plain dicts, the shape an LLM answers in) for one segment."""
    # A tool's output (a web page the search fetched, "Successfully created text document ...", a run's result)
    # was written by no one in the conversation: what the assistant takes from it, its reply says.
    messages = [_read(m) for m in segment.messages if m.text and m.role != "tool"]
    _settle_languages(messages)
    candidates = _candidates(messages)
    fold_expansions(candidates)
    fold_short_names(candidates, {id(m): i for i, m in enumerate(messages)})
    drop_numbered(candidates)
    drop_placeholders(candidates)
    drop_lone_words(candidates, messages)
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
    open_full = len(chosen) >= open_ranks  # before the names past the cap: those cite one span each
    if len(chosen) == max_concepts:
        _names_past_cap(segment, scored, chosen, taken, open_ranks, untied)
    if untied and open_full:
        _tail(segment, candidates, base, _Tail(title_words, asked, nearby, inside), chosen, taken, open_ranks)
    return chosen


@dataclass(frozen=True)
class _Tail:
    """What `_tail` asks of the segment beside its candidates (the checks `propose` runs on the scores)."""

    title_words: set[str]
    asked: _Asked
    nearby: _Vocabulary
    inside: dict[tuple[str, ...], int]


def _tail(
    segment: SegmentInput,
    candidates: dict[tuple[str, ...], _Candidate],
    base: dict[tuple[str, ...], float],
    tail: _Tail,
    chosen: list[dict[str, Any]],
    taken: list[tuple[set[str], bool]],
    open_ranks: int,
) -> None:
    """Past a full open set whose terms each cite two spans or more, up to TAIL terms more that rank nowhere: what
    only a reply says, once or twice ("critical path", "broadcast join", "Uber" in a list of examples), and a common
    noun the user says that the replies repeat ("cuisine"). Neither is what the conversation is about, so neither
    ranks (`_score` gives 0), but a person listing what the conversation mentions names them. Each cites one span,
    so below every term above it: a conversation's top five change only where fewer than five of its concepts cite
    two."""
    titles = {h["title"] for h in chosen}
    extra = []
    for key, candidate in candidates.items():
        if base[key] > 0 or (candidate.user_mentions() and len(key) > 1) or candidate.title() in titles:
            continue
        if key[0][:1].isdigit():
            continue  # "14-16 grams", "1-2 inches": a quantity, no term
        score = _score(candidate, tail.title_words, tail.asked, tail=True)
        if score <= MIN_LIKELIHOOD or tail.inside.get(key, 0) * 2 >= len(candidate.mentions):
            continue
        if _spelt_right(candidate, tail.nearby):
            continue
        extra.append((-score, candidate.title().casefold(), candidate))
    extra.sort(key=lambda item: (item[0], item[1]))
    added = 0
    for _, _, candidate in extra:
        if added == TAIL:
            return
        if _choose(candidate, taken):
            chosen.append(_hypothesis(segment, candidate, max(len(chosen), open_ranks), open_ranks))
            added += 1


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
        and not candidate.key[0].endswith(ADJECTIVE_ENDS)  # "Python-like" in "Python-like pseudocode"
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
