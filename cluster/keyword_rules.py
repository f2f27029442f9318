"""Keyword-only rules on phrases (cluster/phrases.py reads them when it counts a topic's keywords, never for the
tuning objective's phrases, so they never move a segment to another topic): where a keyword's noun phrase ends,
how a phrase is shown, and which keyword leads (the topic's label). Pure functions.

- `breaks`: a keyword's phrase ends at a preposition, interjection or contraction, at a word that can only be a
  verb (or can be one, after "to"), and at an -ing verb after a plural noun; `unglued`: at a word glued to a
  number or cut at an apostrophe too; `trailing`: a plural noun and an adjective after it ("feet flat") is no
  phrase; `shown_in_run`: a possessive followed by a word loses its 's ("Hamlet"); `sentence_case`: a capital
  only a sentence start gave is dropped ("Designate" was no name).
- `lead_first`: the keyword a person would file the topic under first: a phrase or name said nearly as widely as
  the best keyword, or, when the label would be one word common all over English (`generic`: "body", "company",
  "Museum"), a little less widely, or a longer form of that word ("morning routine" for "morning"), or, when it
  would be one lower-case word, a phrase with a name said as widely ("SQL query" for "clause");
  `partner_second`: when none is and the word stays first, the keyword it is shown with ("company and career":
  cluster/labels.py) second: the one that adds most of the topic's conversations to it, a specific one first;
  `plural_alone`: a broad word three quarters of the topic's conversations say, half of them in the plural, is
  shown alone in the plural ("games", not "game and exploration"), any other broad word that leads in the singular.
- `generic`, `nominal`, `can_pair`: the word tests the label reads too (cluster/labels.py).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence, Set
from functools import lru_cache

from clients.parts_of_speech import can_be_noun, closed_class, lemmas, only_verb, parts_of_speech

# A word glued to a number ("year-old" of "90-year-old", "star" of "5-star") or a contraction's clitic after a
# curly apostrophe, which the word pattern splits off ("ll" of "they\u2019ll"): pieces, not words.
_GLUED = re.compile(r"(?<=\d)-[A-Za-z][\w-]*|\u2019(?:ll|re|ve|d|m|t)\b", re.IGNORECASE)


# The assistant speaking of itself ("As an AI language model, I don't have personal preferences, but ..."; "I'm an
# AI", "as a language model"): up to the end of its clause or a "but", it says nothing of the conversation's subject.
_SELF_TALK = re.compile(
    r"\b(?:as|i am|i['\u2019]m|being)\s+an?\s+"
    r"(?:(?:ai|artificial intelligence)(?:\s+(?:language\s+)?model|\s+assistant)?|(?:large\s+)?language model)"
    r"(?=\s*[,.;:!?]|\s+(?:i|and|that|developed|trained|created|designed|by)\b)"
    r"[^.!?;\n]*?(?=\bbut\b|[.!?;\n]|$)",
    re.IGNORECASE,
)


# A line of data pasted as text, which the prose cleaner leaves when it is broken (a screenshot read by OCR): a
# quoted key and a colon ('"type": "Devil's Food" 1'), or a key and a colon before a number or a quote
# ("ITid'\uff1a \u201c10019"): its values are no subject ("Devil's Food" named a Spark topic; "ITid" a keyword).
_DATA_LINE = re.compile(
    r"^[ \t\[{(]*(?:[\"\u201c][^\"\u201d\n]{1,40}[\"\u201d][ \t]*[:\uff1a]"
    r"|\w+['\"\u201d]?[ \t]*[:\uff1a][ \t]*[\"\u201c\d\[{]).*$",
    re.MULTILINE,
)


# A line that is one quoted value and what closes it ('"batter"', '"Blueberry" ).', an OCR'd '"Regular™j,'): in
# a text with DATA_LINES lines of data it is a member of the same pasted JSON, not a quotation ("batter", "topping",
# "Chocolate" of a donut JSON labelled a topic about flattening nested JSON in Spark "batter").
_QUOTED_LINE = re.compile(
    r"^[ \t\[{(]*[\"\u201c][^\"\u201d\n]{1,40}(?:[\"\u201d][^\w\n]{0,6}\w{0,2}[^\w\n]{0,4})?$", re.MULTILINE
)
DATA_LINES = 2
# The field a line of data opens with, quoted ('"topping": [', '"batter"'): its name, one word.
_FIELD = re.compile(r"^[ \t\[{(]*[\"\u201c]([A-Za-z][A-Za-z0-9-]{1,30})[\"\u201d]", re.MULTILINE)


def unglued(text: str) -> str:
    """The text with every piece glued to a number or cut off at a curly apostrophe replaced by a stop word: it
    ends a keyword's phrase there and is no word of it; without the assistant's words about itself
    (`_SELF_TALK`: "AI language model", "personal" were keywords of the demo's topics) and lines of data
    (`_DATA_LINE`; and, in a text with DATA_LINES of them, lines of one quoted value, `_QUOTED_LINE`, and the
    names of the data's fields wherever the text says them: "explode the topping and batter columns" of a pasted
    donut JSON is about its fields, not a subject: "batter" labelled a topic about flattening nested JSON)."""
    data, lines = _DATA_LINE.subn(" , ", text)
    if lines >= DATA_LINES:
        fields = sorted({m.group(1) for m in _FIELD.finditer(text)}, key=lambda f: (-len(f), f))
        data = _QUOTED_LINE.sub(" , ", data)
        if fields:
            data = re.sub(rf"(?<!\w)(?:{'|'.join(map(re.escape, fields))})(?!\w)", " , ", data)  # "batter.id" too
    return _GLUED.sub(" the ", _SELF_TALK.sub(" , ", data))


def breaks(word: str, previous: str, opening: bool, after_to: bool = False, vague_next: bool = False) -> bool:
    """Where a keyword's phrase ends, beyond the stop words: a preposition, interjection or contraction
    ("regarding", "Wow", "they'll"), a word that can only be a verb, written in lower case or opening the clause
    ("minimize distractions", "Designate a shelf"; an -ing or -ed form can head or modify a noun: "time
    tracking", "grated cheese"), or an -ing verb after a plural noun (`previous`, the run's last word: "issues
    facing" is a participle), or a word that can be a verb after "to" (`after_to`: "to collect data", "to set
    reminders" give "data" and "reminders"), or a lower-case -ing verb that opens a clause before a vague noun
    (`vague_next`: cluster/phrases.py GENERIC; ", covering topics like ...", ", offering options": a participle and
    its object, not a noun phrase; "hiking trails" after a comma stays)."""
    if word.endswith("ing") and previous and _participle(word, previous):
        return True
    if vague_next and opening and word.islower() and word.endswith("ing") and "VERB" in parts_of_speech(word):
        return True
    if after_to and word.islower() and "VERB" in parts_of_speech(word):
        return True
    return _breaks(word, opening)


# Prepositions that neither the stop list (cluster/phrases.py STOP) nor clients/parts_of_speech.py's closed classes
# hold, which the extractor shares: "located near" was a keyword. Keyword-side only, like REQUESTS below.
_PREPOSITIONS_TEXT = "near alongside"
PREPOSITIONS = frozenset(_PREPOSITIONS_TEXT.split())


def _closed(word: str) -> bool:
    return closed_class(word) or word.lower() in PREPOSITIONS


@lru_cache(maxsize=200_000)
def _breaks(word: str, opening: bool) -> bool:
    if _closed(word):
        return True
    lower = word.lower()
    return (word.islower() or opening) and not lower.endswith(("ing", "ed")) and only_verb(lower)


@lru_cache(maxsize=200_000)
def _participle(word: str, previous: str) -> bool:
    return word.islower() and "VERB" in parts_of_speech(word) and _plural_noun(previous)


def _plural_noun(word: str) -> bool:
    """A plural noun written in lower case ("issues", "feet"; not "news", not "Sports")."""
    nouns = lemmas(word).get("NOUN", ()) if word.islower() else ()
    return bool(nouns) and word not in nouns


@lru_cache(maxsize=200_000)
def trailing(gram: tuple[str, ...]) -> bool:
    """A plural noun and what is said of it, not a noun phrase: a word that can be an adjective after it ("feet
    flat", "legs straight"; English compounds take the singular: "body fat")."""
    return len(gram) > 1 and _plural_noun(gram[-2]) and "ADJ" in parts_of_speech(gram[-1].lower())


def shown_in_run(gram: tuple[str, ...]) -> str:
    """An n-gram followed by a word in its clause, shown without the possessive 's that ties it to that word."""
    last = gram[-1]
    if last.lower().endswith("'s") and len(last) > 2:  # a curly apostrophe ends a word: "Luna" of "Luna\u2019s"
        return " ".join((*gram[:-1], last[:-2]))
    return " ".join(gram)


def sentence_case(phrase: str) -> str:
    """A phrase written only at sentence starts, without the capital of its first word when nothing else in it
    is capitalised and the word is one lemminflect knows ("Set clear goals", not "Yosemite", not "Fly Fishing")."""
    first, _, rest = phrase.partition(" ")
    if not (first[:1].isupper() and first[1:].islower()) or any(c.isupper() for c in rest):
        return phrase
    return phrase[:1].lower() + phrase[1:] if parts_of_speech(first.lower()) else phrase


# A keyword that is no word: a lower-case one of up to SHORT_PIECE letters no lexicon knows and rarer than
# PIECE_ZIPF ("clo" of a text that writes "clo aked"), or one of TYPO_LETTERS or more that wordfreq does not know, one
# edit from a word at least TYPO_NEAR_ZIPF common ("departhent"). Written in capitals it is an acronym ("CSV", "RDD");
# a name wordfreq does not know is one edit from no common word ("pyspark", "sqoop").
SHORT_PIECE = 3
PIECE_ZIPF = 3.0
TYPO_LETTERS = 5
TYPO_NEAR_ZIPF = 4.0
_ALPHABET = "abcdefghijklmnopqrstuvwxyz"


@lru_cache(maxsize=50_000)
def no_word(shown: str) -> bool:
    """Whether a one-word keyword, as shown, is a piece of a word or a misspelling rather than a word a person would
    file a topic under ("clo", "departhent")."""
    from wordfreq import zipf_frequency

    if not (shown.isascii() and shown.isalpha() and shown.islower()) or parts_of_speech(shown):
        return False
    if len(shown) <= SHORT_PIECE:
        return zipf_frequency(shown, "en") < PIECE_ZIPF
    if len(shown) < TYPO_LETTERS or zipf_frequency(shown, "en") > 0:
        return False
    return any(zipf_frequency(near, "en") >= TYPO_NEAR_ZIPF for near in _edits(shown))


TAIL_SHARE = 0.75  # a capitalised dictionary word written after another capital in this share of its uses


def name_tail(shown: str, tails: int, uses: int) -> bool:
    """A one-word keyword that is the last word of several names, not a name ("Airlines" of "Delta Airlines" and
    "United Airlines", "Park" of national parks, "Ultra" of "Galaxy S23 Ultra"): a dictionary word shown
    capitalised, written right after another capitalised word (`tails`) in TAIL_SHARE of its `uses`. One name
    said whole replaces it already (cluster/phrases.py `_pick`: "AWS Glue" over "Glue"); a name is said alone
    too ("Spark", "Hive")."""
    return (
        " " not in shown
        and shown[:1].isupper()
        and not shown.isupper()
        and bool(parts_of_speech(shown.lower()))
        and uses > 0
        and tails >= TAIL_SHARE * uses
    )


def _edits(word: str) -> Iterable[str]:
    """Every string one edit from `word`: a letter dropped, added or changed, or two neighbours swapped."""
    for i in range(len(word) + 1):
        left, right = word[:i], word[i:]
        for c in _ALPHABET:
            yield left + c + right
            if right and c != right[0]:
                yield left + c + right[1:]
        if right:
            yield left + right[1:]
        if len(right) > 1:
            yield left + right[1] + right[0] + right[2:]


LEAD_FROM = 3  # keywords the one shown first (the topic's label) is chosen from, with the best one's longer forms
LEAD_SHARE = 0.75  # a phrase or name leads when it is said in this share of the conversations the best one is
BROAD_ZIPF = 4.5  # wordfreq's Zipf (log10 uses per billion words) from which one common word is too broad a label
BROAD_FROM = 5  # keywords a broad best word's replacement is chosen from
BROAD_SHARE = 0.6  # a phrase or name replaces a broad best word when said in this share of its conversations
LONGER_SHARE = 0.4  # ...and a longer form of it ("morning routine", "classic sci-fi") in this share
PARTNER_FROM = 8  # keywords a broad word's partner ("company and career") is chosen from
PARTNER_SHARE = 1 / 3  # ...said in this share of the topic's conversations first (not one member's: "corruption")
ALONE_SHARE = 0.75  # a broad word said in this share of a topic's conversations, in the plural, is its label
PLURAL_SHARE = 0.5  # ...and this share of those write it in the plural ("books"; not "universes" of a sci-fi topic)


def lead_first(
    ranked: list[tuple[str, str, float]], spread: Mapping[str, int], modifying: Set[str] = frozenset()
) -> list[tuple[str, str, float]]:
    """The keywords with the one a person would file the topic under first: the first of the best LEAD_FROM, or of
    the best one's longer forms ("morning routine" for "morning"), that is a multi-word phrase or holds a name
    ("battery life" over "devices") and is said in LEAD_SHARE of the conversations (segments, in a topic of one)
    the best one is ("gift ideas", not "heartfelt message", over "gift"); when none is and the label would be a
    broad word (`generic`, the first keyword that can name something: "body", "company", "Museum"), the first of
    the best BROAD_FROM said in BROAD_SHARE of the conversations it is ("strength training" over "body") or of its
    longer forms said in LONGER_SHARE of them ("classic sci-fi" over "classic"); when it would be one lower-case
    word that is not broad, the first phrase with a name among the best BROAD_FROM said as widely ("SQL query" over
    "clause": `_phrase_as_wide`), or, when that one word mostly modifies another (`modifying`, its keys: "matching"
    of "matching rows"), what would replace a broad word; else the best. A broad
    dictionary word, capitalised or not, is never the specific one ("Museum", "History", "Pro"; "Paris" is no
    dictionary word, "Hamlet" no broad one)."""
    if not ranked:
        return ranked
    best = ranked[0][0]
    words = set(best.split())
    near = (i for i, (key, _, _) in enumerate(ranked) if i < LEAD_FROM or words < set(key.split()))
    lead = _first_specific(ranked, spread, near, LEAD_SHARE * spread[best])
    head = _head(ranked)
    if lead is None and head is not None and generic(ranked[head][1]):
        lead = _instead_of_broad(ranked, spread, head)
    elif lead is None and head is not None and _one_word(ranked[head][1]):
        lead = _phrase_as_wide(ranked, spread, head)
        if lead is None and ranked[head][0] in modifying:  # "matching" names no thing: what it modifies might
            lead = _instead_of_broad(ranked, spread, head)
    lead = lead or 0
    return [ranked[lead], *ranked[:lead], *ranked[lead + 1 :]]


def _head(ranked: list[tuple[str, str, float]]) -> int | None:
    """The keyword the label would be: the first that can name something (cluster/labels.py)."""
    return next((i for i, (_, shown, _) in enumerate(ranked) if nominal(shown)), None)


def _instead_of_broad(ranked: list[tuple[str, str, float]], spread: Mapping[str, int], head: int) -> int | None:
    key = ranked[head][0]
    words = set(key.split())
    fits = [i for i, (_, shown, _) in enumerate(ranked) if _specific(shown) and not generic(shown) and nominal(shown)]
    wide = [i for i in fits if i < BROAD_FROM and spread[ranked[i][0]] >= BROAD_SHARE * spread[key]]
    longer = [
        i for i in fits if words < set(ranked[i][0].split()) and spread[ranked[i][0]] >= LONGER_SHARE * spread[key]
    ]
    chosen = wide or longer
    return chosen[0] if chosen else None


def _one_word(shown: str) -> bool:
    return " " not in shown and shown.islower()


def _phrase_as_wide(ranked: list[tuple[str, str, float]], spread: Mapping[str, int], head: int) -> int | None:
    """In place of a one-word lower-case label that is not broad, the first phrase of several words that holds a
    name, among the best BROAD_FROM, said in as many of the topic's conversations: a part of something ("clause",
    of a topic about SQL queries for the highest salary) names less than the named thing it is a part of, said as
    widely ("SQL query"). A lower-case phrase does not replace it ("olive oil" is no more the subject of a pasta
    topic than "pasta"), nor a one-word name (one member's brand or tool: "Mendeley" for "thesis")."""
    said = spread[ranked[head][0]]
    return next(
        (
            i
            for i, (key, shown, _) in enumerate(ranked[:BROAD_FROM])
            if i != head and " " in shown and _named_phrase(shown) and nominal(shown) and spread[key] >= said
        ),
        None,
    )


def _named_phrase(shown: str) -> bool:
    return any(c.isupper() for c in shown)


def partner_second(
    ranked: list[tuple[str, str, float]],
    users_of: Callable[[Sequence[str]], Mapping[str, Set[str]]],
    conversations: int = 0,
) -> list[tuple[str, str, float]]:
    """The keywords with, when the first that can name something is a broad word (`generic`: it would be the
    label), the keyword shown with it ("company and career", cluster/labels.py) right after it: of the next
    PARTNER_FROM that can follow it (`can_pair`), one said in PARTNER_SHARE of the topic's `conversations` first
    (a word of one or two members named a part of no one else's: "film and corruption" of a film topic's 8
    conversations, 2 of them about Hamlet's and Willie Stark's), then a specific one (not broad) before a broad
    one, then the one whose conversations add most to the broad word's (`users_of`: for the keys given, the
    topic's conversations that say each; asked only here), then the best ranked."""
    head = _head(ranked)
    if head is None or not generic(ranked[head][1]):
        return ranked
    key, shown = ranked[head][0], ranked[head][1]
    options = [i for i, (_, other, _) in enumerate(ranked) if i > head and can_pair(shown, other)][:PARTNER_FROM]
    if not options:
        return ranked
    users = users_of([key, *(ranked[i][0] for i in options)])
    said = users.get(key, set())
    floor = PARTNER_SHARE * conversations

    def rank(i: int) -> tuple[bool, bool, int, int]:
        theirs = users.get(ranked[i][0], set())
        return len(theirs) >= floor, not (generic(ranked[i][1]) or generic(ranked[i][0])), len(said | theirs), -i

    pick = max(options, key=rank)
    rest = [r for i, r in enumerate(ranked) if i not in (head, pick)]
    return [ranked[head], ranked[pick], *rest]


def plural_alone(
    ranked: list[tuple[str, str, float]],
    spread: Mapping[str, int],
    conversations: int,
    forms_of: Callable[[str], Mapping[str, int]],
    plural_in: Callable[[str], int],
) -> list[tuple[str, str, float]]:
    """The keywords with a broad word that would be the label (`_head`) shown in the plural when at least
    ALONE_SHARE of the topic's `conversations` say it and PLURAL_SHARE of those write it in the plural
    (`plural_in`: for a key, how many of the topic's conversations do; asked only here; `forms_of`: how the key was
    written and how often): the topic is about those things, and that is what a person files it under ("games",
    "books"; cluster/labels.py shows a broad word in the plural alone). Otherwise it is shown in the singular when
    it is written so, with a partner (`partner_second`): "bird and habitats", never "birds" of a topic that is
    about more. The partner, which adds the conversations the broad word misses, named the other part of a topic
    the broad word covers nearly whole ("book and fiction", "game and exploration")."""
    head = _head(ranked)
    if head is None or not (generic(ranked[head][1]) or generic(ranked[head][0])):  # "trips": "trip" is broad
        return ranked
    key, shown, score = ranked[head]
    forms = forms_of(key)
    plural = _most_written(forms, plural_word)
    singular = _most_written(forms, lambda form: not plural_word(form))
    said = spread.get(key, 0)
    if plural and conversations >= 2 and said >= ALONE_SHARE * conversations and plural_in(key) >= PLURAL_SHARE * said:
        shown = plural
    elif singular and plural_word(shown):
        shown = singular
    return [*ranked[:head], (key, shown, score), *ranked[head + 1 :]]


def _most_written(forms: Mapping[str, int], wanted: Callable[[str], bool]) -> str | None:
    found = [(count, form) for form, count in forms.items() if wanted(form) and " " not in form]
    return min(found, key=lambda cf: (-cf[0], cf[1]))[1] if found else None


def plural_word(word: str) -> bool:
    """One word in the plural: lemminflect knows a singular noun of it ("games", "trips", "costs"; not "news",
    "series", "species")."""
    lower = word.lower()
    return " " not in word and any(noun != lower for noun in lemmas(lower).get("NOUN", ()))


def can_pair(word: str, other: str) -> bool:
    """Whether keyword `other` can be shown after the broad word `word` and "and" ("company and career"): it names
    something (`nominal`), is no one word that can be an adjective ("music and upbeat" reads as no noun phrase),
    and no word of one begins as a word of the other does, to its fourth letter ("birds and birding", "art and
    artwork", "Sikh and Sikhism" are one thing twice)."""
    if not nominal(other):
        return False
    if " " not in other and not any(c.isupper() for c in other) and "ADJ" in parts_of_speech(other.lower()):
        return False
    mine = [w.lower() for w in word.split()]
    theirs = [w.lower() for w in other.split()]
    return not any(a[: min(4, len(a), len(b))] == b[: min(4, len(a), len(b))] for a in mine for b in theirs)


def _first_specific(
    ranked: list[tuple[str, str, float]], spread: Mapping[str, int], among: Iterable[int], floor: float
) -> int | None:
    return next(
        (i for i in among if _specific(ranked[i][1]) and not generic(ranked[i][1]) and spread[ranked[i][0]] >= floor),
        None,
    )


@lru_cache(maxsize=4096)
def broad(phrase: str) -> bool:
    """One lower-case word common all over English ("day", "body", "space", "film"): it could head any number of
    topics, so a phrase or name the topic's conversations share says more."""
    from wordfreq import zipf_frequency

    return " " not in phrase and phrase.islower() and zipf_frequency(phrase, "en") >= BROAD_ZIPF


@lru_cache(maxsize=4096)
def generic(phrase: str) -> bool:
    """One word common all over English however it is written: a broad lower-case word ("company", "morning",
    "selling", "classic"), or a capitalised one the dictionary knows ("Museum", "Park", "Act"): a capital makes
    it no more specific. A name is none ("Paris", "Japan": no dictionary words; "Hamlet", "Spark": not broad)."""
    lower = phrase.lower()
    return " " not in phrase and (phrase.islower() or bool(parts_of_speech(lower))) and broad(lower)


# What a person asks for, not what the conversation is about: never a label alone, nor a broad word's partner
# ("language and guidance", "game and recommendations"); inside a phrase it is ("book recommendations"). Not in
# cluster/phrases.py's GENERIC, which the tuning's phrases read too: a label rule never moves a segment.
_REQUESTS_TEXT = """advice guidance recommendation recommendations suggestion suggestions tip tips idea ideas help
inspiration insight insights thought thoughts feedback assistance resource resources guide guides"""
# ...and nouns that say how something feels or who takes part, never what it is: "trip and charming"'s kin "rock
# and vibe", "company and roles", "donors and individuals" (inside a phrase they are: "job roles", "beach vibe").
_UNNAMING_TEXT = """vibe vibes atmosphere feel mood tone touch twist sense flair charm appeal essence aura role roles
individual individuals member members participant participants tension spot spots place places"""
REQUESTS = frozenset(_REQUESTS_TEXT.split()) | frozenset(_UNNAMING_TEXT.split())

ADVERB_ZIPF = 1.0  # an -ing word whose -ly adverb wordfreq knows this commonly is an adjective ("charmingly")


@lru_cache(maxsize=50_000)
def adjectival(word: str) -> bool:
    """An -ing word that is an adjective, not a gerund: English makes an adverb of it ("charming": "charmingly",
    "stunning", "challenging", "interesting"), never of an activity ("hiking", "cooking", "gardening", "selling":
    lemminflect knows all of them as verb forms only, so its tables cannot tell them apart)."""
    from wordfreq import zipf_frequency

    lower = word.lower()
    return lower.endswith("ing") and len(lower) > 5 and zipf_frequency(lower + "ly", "en") >= ADVERB_ZIPF


@lru_cache(maxsize=50_000)
def past_participle(word: str) -> bool:
    """An irregular past participle ("known", "grown", "shown", "written", "done"): a verb form in -n or -ne whose
    lemma differs. lemminflect lists some as nouns ("the known") but a topic is never called so; past tenses in -d
    or -se stay nouns ("ground", "wound", "rose"; -ed forms end no keyword: cluster/phrases.py). Read off the lemma
    table the label reads anyway: lemminflect's inflection table costs a second to load."""
    lower = word.lower()
    if not lower.endswith(("n", "ne")) or lower.endswith("ing"):
        return False
    return any(verb != lower for verb in lemmas(lower).get("VERB", ()))


def nominal(phrase: str) -> bool:
    """Words a topic can be called: a name, or words whose last can be a noun (a word lemminflect does not know
    counts as one: a product, a term; so does a gerund, "time tracking"), none a preposition, an interjection or
    a contraction. Not a verb ("elevate", "known": `past_participle`) or an adjective ("political", "stylish",
    "charming": `adjectival`) alone,
    nor what is asked for or how something feels alone (REQUESTS: "guidance", "recommendations", "vibe")."""
    words = phrase.split()
    last = words[-1].strip(".,;:!?()'\"").lower() if words else ""
    if not last or any(_closed(w) for w in words) or (len(words) == 1 and last in REQUESTS):
        return False
    if any(c.isupper() for c in phrase):
        return True
    return (can_be_noun(last) or last.endswith("ing")) and not adjectival(last) and not past_participle(last)


def _specific(phrase: str) -> bool:
    """A multi-word phrase or one that holds a name (a capital letter away from a sentence start: shown forms
    are)."""
    return len(phrase.split()) > 1 or any(c.isupper() for c in phrase)
