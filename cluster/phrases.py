"""Topic keywords as phrases a person would write: prose cleaned of code and markup, noun-like candidate phrases
kept whole and cased as most often written, ranked by class-based TF-IDF. Pure functions.

- `clean`: the project's prose cleaner (clients/prose.py) with every table row blanked: fenced code blocks and
  inline code, lines that read as code or a traceback, HTML tags and entities, markdown markers (a link keeps
  its text), URLs, e-mail addresses, file paths and file names, snake_case and dotted.call() identifiers,
  citation markers and LaTeX. What is left is prose.
- `candidates`: runs of content words between stop words and punctuation (a run is cut at verbs and vague
  words too, so "write a Spark DataFrame join" gives "Spark DataFrame join"), and every 1-3 word n-gram inside
  a run. A phrase is counted under a key (lower case, a plural s dropped from its last word) and shown as its
  most frequent surface form away from a sentence start ("AWS Glue", "DataFrames", never "Aws glue"). For
  keywords, a text holding Chinese gives its Chinese noun terms too (cluster/chinese_keywords.py: jieba's words).
- `ctfidf_phrases`: the first DOC_CHARS of each segment, at most TOPIC_CHARS per topic, through BERTopic's
  class-based TF-IDF (each topic one document; tf normalised per topic, idf =
  log(1 + average phrases per topic / the phrase's frequency over all topics)) over those phrases, counted
  once per segment (a phrase repeated in one reply is not ten documents' worth) and, given each segment's
  conversation, weighted so that each conversation counts once (one long conversation does not name a topic
  of many: "BBQ" over a cocktails topic); kept when at least two of the topic's segments use it (one when the
  topic has fewer than four) and, in a topic of several conversations, two of them (when any phrase is). Names
  with a particle stay whole ("Los Angeles", never "Angeles"); a title ("Mrs") is never a keyword alone, nor a
  vague noun numbered or described ("Part II", "typical steps"); a keyword's phrase ends where a noun phrase
  does and is shown without a possessive or a capital only a sentence start gave (cluster/keyword_rules.py). A
  longer phrase replaces the words it contains when it is at least 0.6 of their uses in the topic ("AWS Glue"
  over "Glue"), and a word already shown in a kept phrase is not listed again; one word's forms are listed once
  ("culture", never beside "cultural" and "traditional": cluster/word_family.py), an adjective alone ("rich") and
  numbered names of code ("XW0", "XW00", "XW10": `numbered_series`) never, and a phrase that copies one member's
  conversation title goes last (`_titles_last`). The keyword the topic would be filed under leads, and a broad
  word that leads is followed by the one it is shown with ("company and startup"; cluster/keyword_rules.py
  `lead_first`, `partner_second`).

The labels made from these keywords: cluster/labels.py. `candidates` without `names` is what the tuning
objective's phrase coherence counts (cluster/objective.py, via `phrase_keys`): keyword-only rules stay out of it,
so that they never move a segment to another topic.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache, partial

from clients.chinese_words import HAN
from clients.parts_of_speech import ENGLISH_FUNCTION, ENGLISH_FUNCTION_SHARE, can_be_noun, parts_of_speech
from clients.prose import prose
from cluster import chinese_keywords
from cluster.keyword_rules import (
    adjectival,
    breaks,
    lead_first,
    name_tail,
    no_word,
    partner_second,
    plural_alone,
    plural_word,
    sentence_case,
    shown_in_run,
    trailing,
    unglued,
)
from cluster.word_family import one_per_family

# A word: letters, then letters, digits or joiners inside ("C++", "C#", "Node.js", "scikit-learn", "Power BI"); never
# letters glued after a digit, a number's unit ("mAh" of "5,000mAh", "GB" of "16GB", "px", "st" of "1st").
_WORD = re.compile(r"(?<![0-9A-Za-z])[A-Za-z][A-Za-z0-9]*(?:[.'+#-][A-Za-z0-9]+)*(?:\+\+|#)?")
# The same for keywords (`names`), with the letters of other alphabets written with spaces (accented Latin, Greek,
# Cyrillic): "Könnten", "München", "ремонт" are words, never "nnten" or "nchen". Not for the tuning's phrases, so that
# no segment moves to another topic; not Chinese or Japanese, written without spaces (a sentence is no keyword):
# Chinese words are jieba's (cluster/chinese_keywords.py).
_LETTERS = "A-Za-z\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u024f\u0370-\u03ff\u0400-\u052f\u1e00-\u1eff"
_ANY_WORD = re.compile(rf"(?<![0-9{_LETTERS}])[{_LETTERS}][{_LETTERS}0-9]*(?:[.'+#-][{_LETTERS}0-9]+)*(?:\+\+|#)?")
_HAN_RUN = re.compile(HAN.pattern + "+")
_SPLIT = re.compile(r"[.!?;:,()\[\]{}\"“”…|/\\=<>]|\s-\s|\s–\s|\s—\s|\n")

# sklearn's English stop words, plus verbs, vague nouns and adjectives that make a phrase no one would file
# under: a candidate run is cut at every one of these.
_STOP_TEXT = """
a about above across after afterwards again against all almost alone along already also although always am
among amongst amount an and another any anyhow anyone anything anyway anywhere are around as at back be became
because become becomes becoming been before beforehand behind being below beside besides between beyond both bottom
but by can cannot cant co con could couldnt de do done down due during each eg eight either eleven else elsewhere
enough etc even ever every everyone everything everywhere except few fifteen fifty first five for former formerly
forty four from front further had has hasnt have he hence her here hereafter hereby herein hereupon hers herself
him himself his how however hundred i ie if in inc indeed into is it its itself last latter latterly least less ltd
many may me meanwhile might mine more moreover most mostly much must my myself namely neither never nevertheless
next nine no nobody none noone nor not nothing now nowhere of off often on once one only onto or other others
otherwise our ours ourselves out over own per perhaps please rather re same seem seemed seeming seems several she
should since six sixty so some somehow someone something sometime sometimes somewhere still such ten than that the
their them themselves then thence there thereafter thereby therefore therein thereupon these they third this those
though three through throughout thru thus to together too toward towards twelve twenty two un under until up upon
us very via was we well were what whatever when whence whenever where whereafter whereas whereby wherein whereupon
wherever whether which while whither who whoever whole whom whose why will with within without would yet you your
yours yourself yourselves i'm i've i'd i'll you're you've you'd you'll it's that's there's let's don't doesn't
didn't isn't aren't wasn't can't won't wouldn't shouldn't couldn't here's what's he's she's we're they're we've
they've ok okay yes yeah hi hello thanks thank sure great good better best bad nice new old different similar
various certain specific following example examples like just really actually basically simply use used uses
using make makes made making create creates created creating write writes wrote written explain explains explained
tell tells told want wants wanted need needs needed know knows knew understand help helps helped provide provides
provided providing try tried trying work works worked run runs ran look looks looking looked think thought
consider considering include includes including included ensure allow allows allowed let lets follow follows
followed say says said ask asked asking mean means meant important possible able available common main key
overall based specifically typically usually generally commonly additionally multiple single particular given
shall does did doing go goes going gone come comes came coming get gets got getting give gives gave giving take
takes took taken taking see sees saw seen seeing find finds found finding keep keeps kept put puts call calls
called calling change changes changed changing add adds added adding remove removes removed removing return
returns returned returning start starts started starting end ends ended stop stops stopped check checks checked
checking print prints printed printing handle handles handled improve improves improved apply applies applied
perform performs performed store stores stored convert converts converted define defines defined specify
specified implement implements implemented implementing hope glad happy feel free below above sorry certainly
absolutely here's correct incorrect true false right wrong yes no simple easy hard difficult large small big
little high low long short full empty whole entire own other another such instead ready perfect additional
interested assuming containing greater iterate update respond paste listed analyze analyse covers aid choice
suggestion suggestions opportunities progress support challenges combined visit rules acknowledge stage
el la las los del en que por para con una unos unas es al lo se su sus le les des et est pour dans une der die
das und ist mit von den dem nicht ein eine zu auf o os um uma em não com remember recommend recommended suggest
suggested discuss discussed enjoy enjoyed prefer preferred decide decided choose chose offer offers offered explore
explores focus focuses replace replaces contain contains read reads select selects generate generates increase
increases adjust adjusts listen stay stays incorporate incorporating fresh sweet unique popular online potential
high-quality original total explicit overall related relevant various""".strip()
STOP = frozenset(_STOP_TEXT.split())

# Nouns too vague to name a topic alone: kept inside a longer phrase ("window functions", "data pipeline"), never
# a keyword by themselves.
_GENERIC_TEXT = """
way ways thing things lot lots kind kinds type types case cases time times step steps point points question
questions answer answers topic topics sentence sentences word words note notes number numbers value values result
results output input level levels set sets approach approaches process overview summary detail details information
info idea ideas option options feature features benefit benefits purpose purposes task tasks part parts area areas
aspect aspects factor factors issue issues problem problems solution solutions method methods technique techniques
tip tips list lists item items section sections line lines code snippet snippets function functions variable
variables file files table tables column columns row rows data field fields object objects element elements name
names string strings text texts user users assistant chatgpt claude response responses request requests message
messages conversation conversations chat chats work working run running use usage example explanation difference
differences scenario scenarios concept concepts term terms version versions format formats context content
contents structure structures operation operations query queries system systems tool tools model models
program programs application applications project projects person people experience experiences"""
GENERIC = frozenset(_GENERIC_TEXT.split())

_MAX_WORDS = 3
DOC_CHARS = 2000  # the opening of a segment read for its phrases: the question and the start of the answer
TOPIC_CHARS = 150_000  # read per topic at most (~75 segments): labels cost the same at 1M messages as at 10k
LONGER_SHARE = 0.6  # a longer phrase replaces a phrase it contains when it is this share of its uses in the topic


@dataclass(slots=True)
class PhraseCounts:
    """Segment frequencies of phrase keys and how each key was written (away from a sentence start first); for
    keywords (`add_conversation`), also how many conversations use each key and its uses weighted so that each
    conversation counts once."""

    df: Counter[str] = field(default_factory=Counter)
    surfaces: dict[str, Counter[str]] = field(default_factory=dict)
    initial: dict[str, Counter[str]] = field(default_factory=dict)
    weight: dict[str, float] = field(default_factory=dict)
    spread: Counter[str] = field(default_factory=Counter)
    tails: Counter[str] = field(default_factory=Counter)  # one-word uses right after a capitalised word (keywords)
    modifying: Counter[str] = field(default_factory=Counter)  # one-word uses before another word of its noun phrase

    def add(self, text: str, *, names: bool = False) -> set[str]:
        """Count one segment's phrases (`names`: names with a particle kept whole, "Los Angeles"); its keys."""
        seen: set[str] = set()
        tails, modifying = (self.tails, self.modifying) if names else (None, None)
        found = candidates(text[:DOC_CHARS], names=names, tails=tails, modifying=modifying)
        for key, surface, at_start in found:
            target = self.initial if at_start else self.surfaces
            forms = target.get(key)
            if forms is None:  # not setdefault(key, Counter()): that builds a Counter per candidate (~7M at 250k)
                forms = target[key] = Counter()
            forms[surface] += 1
            seen.add(key)
        self.df.update(seen)
        return seen

    def add_conversation(self, texts: Sequence[str]) -> None:
        """Count the segments of one conversation read in a topic, for keywords: each of its segments weighs
        1 / their number, and a key it uses counts once in `spread`."""
        used: set[str] = set()
        for text in texts:
            seen = self.add(text, names=True)
            for key in seen:
                self.weight[key] = self.weight.get(key, 0.0) + 1.0 / len(texts)
            used |= seen
        self.spread.update(used)

    def forms(self, key: str) -> Counter[str]:
        """How a key was written and how often, at a sentence start or away from one."""
        return self.surfaces.get(key, Counter()) + self.initial.get(key, Counter())

    def shown(self, key: str) -> str:
        """The phrase as most often written away from a sentence start, else as written at one, where the capital
        of a dictionary word that only a sentence start gave it is dropped ("Designate", "Business" were no names:
        a label reads a capital as one; "Hamlet's soliloquy" keeps it when "Hamlet" is written so elsewhere), and
        so is one that the ends of names gave it ("Park" of "Yosemite National Park" and "Central Park" is shown
        "park" where it is written so: cluster/keyword_rules.py `name_tail`)."""
        forms = self.surfaces.get(key)
        if forms:
            shown = _most(forms)
            if self.tails[key] and name_tail(
                shown, self.tails[key], sum(n for f, n in forms.items() if f[:1].isupper())
            ):
                lower = Counter({f: n for f, n in forms.items() if f.islower()})
                return _most(lower) if lower else shown
            return shown
        forms = self.initial.get(key)
        if not forms:
            return key
        phrase = _most(forms)
        alone = self.surfaces.get(key_of(phrase.split()[:1]))
        return phrase if alone and _most(alone)[:1].isupper() else sentence_case(phrase)


def _most(forms: Counter[str]) -> str:
    return min(forms.items(), key=lambda kv: (-kv[1], kv[0]))[0]


def phrase_keys(text: str) -> set[str]:
    """The keys of the candidate phrases in the opening DOC_CHARS of a segment's text (what c-TF-IDF counts)."""
    return {key for key, _, _ in candidates(text[:DOC_CHARS])}


def clean(text: str) -> str:
    """The prose of a message: code, tracebacks, markup, tables, URLs and paths blanked (clients/prose.py, with
    every table row: a table's cells label no topic)."""
    return prose(text, table_rows=True)


@lru_cache(maxsize=200_000)
def _key_cached(words: tuple[str, ...]) -> str:
    return _key(words)


def key_of(words: Sequence[str]) -> str:
    """The counting key of a phrase: lower case, the plural s of its last word dropped."""
    return _key_cached(tuple(words))


def _key(words: Sequence[str]) -> str:
    """The counting key of a phrase: lower case, the plural s of its last word dropped."""
    lowered = [w.lower().removesuffix("'s").removesuffix("’s") for w in words]
    last = lowered[-1]
    if len(last) > 4 and last.endswith("ies"):
        lowered[-1] = last[:-3] + "y"
    elif len(last) > 4 and last.endswith(("sses", "xes", "ches", "shes")):
        lowered[-1] = last[:-2]
    elif len(last) > 3 and last.endswith("s") and not last.endswith(("ss", "us", "is")):
        lowered[-1] = last[:-1]
    return " ".join(lowered)


def candidates(
    text: str, *, names: bool = False, tails: Counter[str] | None = None, modifying: Counter[str] | None = None
) -> Iterable[tuple[str, str, bool]]:
    """(key, surface form, at a sentence start) of every 1-3 word n-gram of every run of content words in the
    cleaned text. With `names` (the keywords' phrases, cluster/keyword_rules.py): a capitalised particle before a
    capitalised word joins the run ("Los Angeles", "Van Gogh"), and no n-gram ends with one or cuts the name after
    it (no "Angeles" alone); the run is cut where a noun phrase ends ("minimize distractions" gives
    "distractions", "feet flat" is none), and a possessive that ends an n-gram a word follows is shown without its
    's ("Hamlet" of "Hamlet's soliloquy"; "lunch at McDonald's." keeps it). `tails` counts a one-word n-gram
    right after a capitalised word, `modifying` one before another word of its run ("matching" of "matching
    rows")."""
    prose = clean(text)
    foreign = names and _not_english(prose)
    if names and chinese_keywords.has_chinese(prose):  # its Chinese words by jieba; the rest as any text's
        yield from ((key, surface, False) for key, surface in chinese_keywords.candidates(prose))
        prose = _HAN_RUN.sub(" the ", prose)  # Latin words are a run only when no Chinese is written between them
    for clause in _SPLIT.split(unglued(prose) if names else prose):
        run: list[str] = []
        start = 0
        words = (_ANY_WORD if names else _WORD).findall(clause)
        if foreign:
            words = [w if not _foreign_function_word(w.lower()) else "," for w in words]
        for index, word in enumerate([*words, ""]):
            if (
                word
                and (_content(word) or (names and _particle(word, words[index + 1 : index + 2])))
                and not (
                    names
                    and breaks(
                        word,
                        run[-1] if run else "",
                        index == 0,
                        words[index - 1 : index] == ["to"],
                        not index and _vague_second(words),
                    )
                )
            ):
                if not run:
                    start = index
                run.append(word)
                continue
            for size in range(1, _MAX_WORDS + 1):
                for offset in range(len(run) - size + 1):
                    gram = tuple(run[offset : offset + size])
                    if _alone_ok(gram) and not (names and (_cut_name(run, offset, size) or trailing(gram))):
                        inside = names and (offset + size < len(run) or bool(word))  # a word follows it
                        if tails is not None and size == 1 and offset and run[offset - 1][:1].isupper():
                            tails[key_of(gram)] += gram[0][:1].isupper()  # "Airlines" of "Delta Airlines"
                        if modifying is not None and size == 1 and offset + 1 < len(run):
                            modifying[key_of(gram)] += 1  # "matching" of "matching rows"
                        yield key_of(gram), shown_in_run(gram) if inside else " ".join(gram), start + offset == 0
            run = []


def _vague_second(words: Sequence[str]) -> bool:
    """Whether a clause's second word is a vague noun (GENERIC: ", covering topics like ...", `breaks`)."""
    return len(words) > 1 and words[1].lower() in GENERIC


# Particles of names that the stop list holds ("los", "de", "von"): written capitalised before a capitalised word
# they are part of a name ("Los Angeles", "De Niro", "Von Trier"), for keywords and labels only.
_PARTICLES_TEXT = "el la las los del de da di du le les des der die das von van al"
PARTICLES = frozenset(_PARTICLES_TEXT.split())


def _particle_at(word: str) -> bool:
    return word.istitle() and word.lower() in PARTICLES


def _cut_name(run: Sequence[str], offset: int, size: int) -> bool:
    """The n-gram run[offset:offset+size] ends with a particle or starts right after one."""
    return _particle_at(run[offset + size - 1]) or (offset > 0 and _particle_at(run[offset - 1]))


def _particle(word: str, following: Sequence[str]) -> bool:
    return _particle_at(word) and bool(following) and following[0][:1].isupper() and _content(following[0])


# The function words of the languages written with spaces that wordfreq knows ("und", "aus", "para", "pour",
# "это"): in a text that is not English they cut a keyword's run as the English stop list does.
_FUNCTION_LANGUAGES = ("de", "es", "fr", "it", "pt", "nl", "ru", "pl", "sv", "da", "nb", "cs", "tr", "ca", "ro", "uk")
_FUNCTION_WORDS = 200  # the lists hold common nouns too ("gobierno", "país"): no keyword alone either
FOREIGN_BELOW_ZIPF = 4.2  # ...unless as common in English ("die", "son", "per": a text in English never asks)


@lru_cache(maxsize=1)
def _foreign_function_words() -> frozenset[str]:
    from wordfreq import top_n_list, zipf_frequency

    found = set()
    for language in _FUNCTION_LANGUAGES:
        found.update(top_n_list(language, _FUNCTION_WORDS))
    return frozenset(w for w in found if zipf_frequency(w, "en") < FOREIGN_BELOW_ZIPF)


def _foreign_function_word(lower: str) -> bool:
    return lower in _foreign_function_words()


def _not_english(prose: str) -> bool:
    """Whether a text has too few of English's function words to be English, as the extractor judges a message
    (its keywords then cut at the function words of other languages)."""
    words = [w.lower() for w in _ANY_WORD.findall(prose[:4000])]
    return len(words) >= 4 and sum(w in ENGLISH_FUNCTION for w in words) < ENGLISH_FUNCTION_SHARE * len(words)


@lru_cache(maxsize=200_000)
def _content(word: str) -> bool:
    lower = word.lower()
    if lower in STOP or len(word) < 2 or (lower.endswith("ly") and len(lower) > 4):
        return False
    if any(c.isdigit() for c in word) and not any(c.isupper() for c in word):
        return False  # "sqm3", "col-start-2": a name in code or a class, not a subject ("S3", "EC2" stay)
    if word[0].islower() and any(c.isupper() for c in word[2:]):
        return False  # camelCase: an identifier ("activeSection")
    return not (word.isupper() and len(word) > 6)  # a shouted word or a constant, not a name


@lru_cache(maxsize=200_000)
def _alone_ok(gram: tuple[str, ...]) -> bool:
    """Not every word vague, no past participle at the end ("data stored", "Distributed" alone), no adjective
    alone."""
    lowered = [w.lower() for w in gram]
    if all(w in GENERIC for w in lowered):
        return False
    if len(lowered) == 1 and lowered[0].endswith(("ous", "ful")) and gram[0].islower():
        return False  # an adjective alone ("delicious", "helpful")
    return not lowered[-1].endswith("ed")


@dataclass(slots=True)
class Ranked:
    phrases: list[str]  # shown forms, best first
    scores: list[float]


def ctfidf_phrases(
    docs: Mapping[int, Sequence[str]],
    top_k: int,
    groups: Mapping[int, Sequence[str]] | None = None,
    titles: Mapping[str, str] | None = None,
) -> dict[int, Ranked]:
    """Top `top_k` class-based TF-IDF phrases per topic (see the module docstring); `groups`, row for row with
    `docs`, name each text's conversation: a conversation then counts once however many of its segments are read,
    and a topic with several conversations keeps the phrases that two or more of them use; `titles`, each
    conversation's title: one member's title said by it alone never leads (`_titles_last`)."""
    per_topic: dict[int, PhraseCounts] = {}
    spread: dict[int, int] = {}
    read_by: dict[int, dict[str, list[str]]] = {}
    for topic, texts in docs.items():
        read = _read_count(texts)
        owners = list(groups[topic])[:read] if groups is not None else [str(i) for i in range(read)]
        by_owner: dict[str, list[str]] = {}
        for text, owner in zip(texts[:read], owners, strict=True):
            by_owner.setdefault(owner, []).append(text)
        counts = PhraseCounts()
        for owner in sorted(by_owner):
            counts.add_conversation(by_owner[owner])
        per_topic[topic] = counts
        read_by[topic] = by_owner
        spread[topic] = len(set(owners)) if groups is not None else 1
    totals: dict[str, float] = {}
    for counts in per_topic.values():
        for key, weight in counts.weight.items():
            totals[key] = totals.get(key, 0.0) + weight
    live = [t for t in per_topic if per_topic[t].df]
    average = sum(totals.values()) / max(len(live), 1)
    result: dict[int, Ranked] = {}
    for topic in docs:
        counts = per_topic[topic]
        floor = 2 if len(docs[topic]) >= 4 else 1
        size = sum(counts.weight.values()) or 1.0
        numbered = numbered_series(counts.df, [text for texts in read_by[topic].values() for text in texts])
        usable = [
            k
            for k, df in counts.df.items()
            if df >= floor
            and _keyword_ok(k)
            and (" " in k or not (_piece(counts, k) or _adjective_alone(counts, k) or k in numbered))
        ]
        shared = [k for k in usable if counts.spread[k] >= 2] if spread[topic] >= 2 else usable
        scored = {k: (counts.weight[k] / size) * math.log(1.0 + average / totals[k]) for k in shared or usable}
        chosen = _pick(scored, counts.df, top_k)
        merged = _merge_shown([(k, counts.shown(k), scored[k]) for k in chosen])
        merged = _with_nouns(one_per_family(merged, counts.spread, counts.weight), top_k)
        if titles and len(read_by[topic]) >= 2:
            merged = _titles_last(merged, counts.spread, read_by[topic], titles)
        merged = lead_first(merged, {k: counts.spread[k] for k, _, _ in merged}, _modifiers(counts, merged))
        merged = partner_second(merged, partial(_users, read_by[topic]), len(read_by[topic]))
        merged = plural_alone(
            merged, counts.spread, len(read_by[topic]), counts.forms, partial(_plural_users, read_by[topic])
        )
        merged = [r for r in merged if not adjective_alone(r[1])]  # once the lead is chosen (`adjective_alone`)
        result[topic] = Ranked([p for _, p, _ in merged], [s for _, _, s in merged])
    return result


def _piece(counts: PhraseCounts, key: str) -> bool:
    """A one-word key that is a piece of a word, a misspelling, or the last word of several names and never written
    in lower case ("clo", "Ultra" of "Galaxy S23 Ultra": cluster/keyword_rules.py `no_word`, `name_tail`)."""
    shown = counts.shown(key)
    capitals = sum(n for form, n in counts.surfaces.get(key, Counter()).items() if form[:1].isupper())
    return no_word(shown) or name_tail(shown, counts.tails[key], capitals)


def _adjective_alone(counts: PhraseCounts, key: str) -> bool:
    """A one-word key shown as an adjective in -ing ("stunning", "charming", "interesting": cluster/keyword_rules.py
    `adjectival`): never a label nor a partner already, and as a keyword alone it says how something is, not what
    the topic is about ("trip, city, restaurant, stunning"); inside a phrase it stays ("stunning views"), and so
    does one that is a noun too ("understanding", "feeling")."""
    shown = counts.shown(key)
    return shown.islower() and adjectival(shown) and not can_be_noun(shown)  # "understanding", "feeling" stay


@lru_cache(maxsize=50_000)
def adjective_alone(shown: str) -> bool:
    """A one-word lower-case keyword lemminflect knows as an adjective and never as a noun ("cultural",
    "traditional", "rich", "stylish", "consistent"): it says how something is, not what a topic is about, and is
    no label or partner (cluster/keyword_rules.py `nominal`, `can_pair`). Shown in no topic's keywords, but dropped
    only once the lead is chosen (`lead_first`, `partner_second`): their bars are shares of the best keyword's
    spread, which v6's labels were chosen by ("missing", broad, made "Eclipse project" lead; without it
    "documentation" did). The label is read off the list without them. Inside a phrase it stays ("cultural
    heritage"), and so does one that is a noun too ("classic", "professional")."""
    return " " not in shown and shown.islower() and "ADJ" in parts_of_speech(shown) and not can_be_noun(shown)


def _with_nouns(ranked: list[tuple[str, str, float]], top_k: int) -> list[tuple[str, str, float]]:
    """The best of `ranked` up to `top_k` that are no adjective alone, and the adjectives among them (dropped once
    the label is chosen: `adjective_alone`), so a topic still shows `top_k` keywords."""
    kept, nouns = [], 0
    for row in ranked:
        if nouns >= top_k:
            break
        kept.append(row)
        nouns += not adjective_alone(row[1])
    return kept


SERIES = 3  # one-word keys alike but for their numbers ("XW0", "XW00", "XW10") that make a series of names in code


def numbered_series(keys: Iterable[str], texts: Sequence[str] = ()) -> set[str]:
    """The one-word keys with digits that SERIES or more words of a topic's `keys` or raw `texts` (code included:
    the cleaner blanks it for keywords) share but for their numbers ("XW0", "XW00", "XW10": variables a script
    numbers, left in prose as "'XW0' + str(i)"): names of things in code, not what the topic is about. A name with
    a number said alone ("S3", "EC2") has no such siblings."""
    wanted = [key for key in keys if " " not in key and any(c.isdigit() for c in key)]
    if not wanted:
        return set()
    series: dict[str, set[str]] = {}
    for word in [*wanted, *(w.lower() for text in texts for w in _NUMBERED.findall(text))]:
        series.setdefault(_DIGITS.sub("#", word), set()).add(word)
    return {k for k in wanted if len(series[_DIGITS.sub("#", k)]) >= SERIES}


_DIGITS = re.compile(r"\d+")
_NUMBERED = re.compile(r"(?<![\w.])[A-Za-z][A-Za-z0-9]*\d[A-Za-z0-9]*(?![\w])")
_TITLE_WORD = re.compile(r"[^\W_]+(?:[.'+#-][^\W_]+)*", re.UNICODE)


def _titles_last(
    ranked: list[tuple[str, str, float]],
    spread: Mapping[str, int],
    by_owner: Mapping[str, Sequence[str]],
    titles: Mapping[str, str],
) -> list[tuple[str, str, float]]:
    """The keywords with those that copy one conversation's title ("Interactive Bakery Comparison", the name of a
    Claude artifact and of its conversation, "Interactive Bakery Comparison Visualization") last, when that
    conversation alone says it and holds less than half of the topic's segments read: it names one member, not
    the topic (a topic of two conversations that share no phrase keeps every phrase of each). A title said by
    several conversations, or by the one that is most of the topic, stays where it is."""
    read = sum(len(texts) for texts in by_owner.values())
    words = {owner: {w.lower() for w in _TITLE_WORD.findall(titles.get(owner, ""))} for owner in by_owner}
    copied = set()
    for key, shown, _ in ranked:
        mine = {w.lower() for w in shown.split()}
        if len(mine) < 2 or spread.get(key, 0) != 1:
            continue
        owners = [o for o, theirs in words.items() if mine <= theirs]
        if len(owners) == 1 and 2 * len(by_owner[owners[0]]) < read and _says(by_owner[owners[0]], key):
            copied.add(key)
    return [r for r in ranked if r[0] not in copied] + [r for r in ranked if r[0] in copied]


def _says(texts: Sequence[str], key: str) -> bool:
    return any(found == key for text in texts for found, _, _ in _named(text))


MODIFIER_SHARE = 2 / 3  # a one-word key written before another word of its noun phrase in this share of its uses


def _modifiers(counts: PhraseCounts, ranked: Sequence[tuple[str, str, float]]) -> set[str]:
    """The one-word lower-case keys of `ranked` that mostly modify another word ("matching rows", "matching
    records", "matching keys": cluster/keyword_rules.py `lead_first` reads them as it reads a broad word): written
    before another word of their noun phrase in MODIFIER_SHARE of their uses."""
    return {
        key
        for key, shown, _ in ranked
        if " " not in shown
        and shown.islower()
        and counts.modifying[key] >= max(1.0, MODIFIER_SHARE * sum(counts.forms(key).values()))
    }


def _users(by_owner: Mapping[str, Sequence[str]], keys: Sequence[str]) -> dict[str, set[str]]:
    """The conversations of a topic (its texts read, by conversation) that say each of `keys`, read again: asked
    for a few keywords of the few topics led by a broad word (cluster/keyword_rules.py `partner_second`), so the
    counts keep no set per phrase."""
    wanted = set(keys)
    users: dict[str, set[str]] = {key: set() for key in keys}
    for owner, texts in by_owner.items():
        for text in texts:
            for key, _, _ in candidates(text[:DOC_CHARS], names=True):
                if key in wanted:
                    users[key].add(owner)
    return users


def _plural_users(by_owner: Mapping[str, Sequence[str]], key: str) -> int:
    """How many conversations of a topic (its texts read, by conversation) write `key` in the plural, read again:
    asked for the broad word of the few topics it would label alone (cluster/keyword_rules.py `plural_alone`)."""
    return sum(
        any(found == key and plural_word(surface) for text in texts for found, surface, _ in _named(text))
        for texts in by_owner.values()
    )


def _named(text: str) -> Iterable[tuple[str, str, bool]]:
    return candidates(text[:DOC_CHARS], names=True)


def _read_count(texts: Sequence[str]) -> int:
    """How many of a topic's texts are read: up to TOPIC_CHARS of their openings."""
    read = 0
    for index, text in enumerate(texts):
        if read >= TOPIC_CHARS:
            return index
        read += min(len(text), DOC_CHARS)
    return len(texts)


# Titles that are no subject alone ("Mrs", "Dr"): kept inside a name ("Mrs Dalloway"), never a keyword by themselves.
_HONORIFICS_TEXT = "mr mrs ms miss mx dr prof sir madam mme mlle jr sr st"
HONORIFICS = frozenset(_HONORIFICS_TEXT.split())


def _keyword_ok(key: str) -> bool:
    """Not a title alone, not a letter or a stop word alone, not a vague noun numbered or described (what a person
    would not file a topic under)."""
    words = key.split()
    return not all(w.rstrip(".") in HONORIFICS or w in STOP or len(w) < 2 for w in words) and not vague(key)


_NUMERAL = re.compile(r"(?:\d+|[ivx]+)")  # "2", "II" (a roman numeral, in a key's lower case)


@lru_cache(maxsize=200_000)
def vague(key: str) -> bool:
    """A vague noun that only a number or an adjective goes with ("Part II", "typical steps", "crucial step"), or a
    numeral alone ("II"): every word vague (GENERIC), a numeral or an adjective that cannot be a noun, and one at
    least vague or all numerals. A name made of such words names a part of something the topic's other keywords
    name ("Horizon Zero Dawn")."""
    words = key.lower().split()
    kinds = [
        "vague" if w in GENERIC else "other" if not (_NUMERAL.fullmatch(w) or _adjective(w)) else "modifier"
        for w in words
    ]
    return "other" not in kinds and ("vague" in kinds or all(_NUMERAL.fullmatch(w) for w in words))


def _adjective(word: str) -> bool:
    tags = parts_of_speech(word)
    return "ADJ" in tags and not tags & {"NOUN", "PROPN"}


def _pick(scored: dict[str, float], uses: Counter[str], top_k: int) -> list[str]:
    """Best keys first; a longer phrase takes the place of a contained one when it is LONGER_SHARE of its uses,
    and a single word already inside a kept phrase is skipped."""
    order = sorted(scored, key=lambda k: (-scored[k], k))
    longer: dict[str, str] = {}
    for key in order:  # for each key, the best-scoring longer phrase that contains it
        words = key.split()
        for size in range(1, len(words)):
            for offset in range(len(words) - size + 1):
                inner = " ".join(words[offset : offset + size])
                if inner in scored and inner not in longer and uses[key] >= LONGER_SHARE * uses[inner]:
                    longer[inner] = key
    kept: list[str] = []
    for key in order:
        best = longer.get(key, key)
        while best in longer and longer[best] != best:
            best = longer[best]
        if best in kept:
            continue
        bag = set(best.split())
        if len(bag) == 1 and any(bag <= set(k.split()) for k in kept):
            continue
        if len(bag) > 1 and any(set(k.split()) == bag for k in kept):
            continue
        kept.append(best)
        if len(kept) >= top_k * 2:
            break
    return kept


def _merge_shown(ranked: list[tuple[str, str, float]]) -> list[tuple[str, str, float]]:
    """Drop a (key, shown phrase, score) shown the same as a better one (case aside)."""
    seen: set[str] = set()
    merged: list[tuple[str, str, float]] = []
    for key, phrase, score in ranked:
        if phrase.lower() not in seen:
            seen.add(phrase.lower())
            merged.append((key, phrase, score))
    return merged
