"""What kind of word a token is, as the phrase rules ask: the word lists and the lexicon's tests on one word.

The lists: words that open no name (NOT_NAMES), nouns that name nothing alone (GENERIC), openers a noun phrase
drops (common and qualifying ones), number words. The tests: a common verb that opens a sentence as a command
(`_imperative`), a verb's -s form, an adverb alone, a word written as a name, a number. Shared by the name rules
(extract/name_phrases.py), the noun-phrase rules (extract/noun_phrases.py, extract/phrase_trim.py) and the offline
scorer (GENERIC).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

from extract import lexicon
from extract.tokens import Token, _acronym, singular

# A name made only of these is no name: sentence openers, pronouns, greetings, calendar words.
_NOT_NAMES_TEXT = (
    "i i'm i've i'd i'll im ok okay hi hello hey thanks thank yes no please sure great also however here there"
    " this that these those the a an it its my your our their what which who how why when where can could would"
    " should will do does did is are was were be let so if then now today tomorrow yesterday monday tuesday"
    " wednesday thursday friday saturday sunday january february march april may june july august september"
    " october november december note step example answer question option first second third finally next"
    " lastly additionally overall conclusion summary user assistant chatgpt"
)


NOT_NAMES = frozenset(_NOT_NAMES_TEXT.split())


# Nouns that are everywhere in chat and in software talk and name nothing by themselves. A phrase made only of
# these ("sample data", "output value") is no concept either; inside a longer term they are fine ("data
# pipeline", "window function").
_GENERIC_TEXT = (
    "idea time day week month year question recommendation goal task thing way option step tip place people"
    " person list lot bit kind sort part area level amount number add answer advice detail example point reason"
    " result start end side case fact topic issue problem help information resource suggestion data code table"
    " input output function variable value name string str int float char text word words sentence file files"
    " line lines row rows column columns col cols field fields record records key keys item items element"
    " elements object objects class classes method methods parameter parameters argument arguments type types"
    " error errors exception message messages print output outputs return query queries command commands script"
    " program programs project projects task tasks test tests process system systems tool tools library"
    " libraries package packages module modules feature features version versions format formats syntax"
    " statement statements loop loops array arrays dict list lists tuple index id ids date dates analysis"
    " approach approaches solution solutions explanation description summary overview content contents section"
    " sections details info response responses reply prompt chat conversation user users assistant source target"
    " sample samples usage usages stuff something anything everything nothing someone anyone everyone today"
    " yesterday tomorrow right left top bottom use uses purpose benefit benefits advantage advantages"
    " disadvantage disadvantages difference differences comparison similarity similarities concept concepts term"
    " terms meaning definition context scenario scenarios situation requirement requirements operation operations"
    " task job jobs work works thing things note notes hello hi thanks sure okay set sets group groups size"
    " sizes count counts total sum average mean min max order step steps stage stages case cases instance"
    " instances unit units entry entries content structure structures level levels kind kinds form forms"
    " practice practices aspect aspects factor factors component components element way ways means result"
    " results change changes update updates option options choice choices goal goals plan plans need needs"
    " question questions answer answers help support issue issues problem problems error bug bugs fix fixes"
    " default defaults logic condition conditions rule rules mode modes state states status"
    # how text is written, not what it says: typography ("Comma", "Blank line", "Capital letter", "Decimal point")
    " comma commas period periods colon colons semicolon apostrophe hyphen dash dashes bracket brackets"
    " parenthesis parentheses quote quotes quotation space spaces tab tabs newline newlines whitespace indent"
    " indentation blank letter letters capital uppercase lowercase digit digits decimal character characters"
    " punctuation symbol symbols prefix prefixes suffix suffixes underscore slash backslash asterisk"
    # the parts every program and schema has ("Integer", "Keyword", "URL"): named by what they hold, not by these
    " integer integers boolean booleans keyword keywords url urls path paths link links folder folders directory"
    " directories expression expressions operator operators constant constants literal literals identifier"
    " identifiers placeholder placeholders pointer pointers byte bytes"
)


GENERIC = frozenset(_GENERIC_TEXT.split())


# Nouns that name nothing alone but do in any term: "schema" is the description of the tables, columns, fields and
# types above (each in GENERIC, each in the labels' `generic_never`), which no one files a conversation under; the
# labels write "schema evolution", "schema changes" (a GENERIC word beside it, so not in GENERIC: the phrase would go).
ALONE_GENERIC = frozenset(("schema", "schemas"))


_COMMON_OPENERS_TEXT = (
    "good new different simple best same following above below specific main certain other various whole full"
    " basic important common general overall entire particular several many few more most some any each every"
    " own real proper correct wrong right possible available single multiple additional extra further given"
    " current previous last next final initial original typical normal actual exact potential relevant"
    " necessary useful efficient large small big high low great long short easy hard complex similar separate"
    " total one two three four five six seven eight nine ten dozen"
)


_COMMON_OPENERS = frozenset(_COMMON_OPENERS_TEXT.split())


# The openers above that can say what kind a thing is rather than which one: with a noun they make collocations
# people file things under ("small business", "big data", "high availability", "real estate", "normal distribution").
# The plain rules cut them like the rest ("a small change"); the loose proposal puts them back, and the extractor
# keeps it where the user says it so and the segment twice (extract/offline.py). "common" and "long" are left out:
# they say how often or how far ("common pitfalls", "a long drive"), not what kind.
QUALIFYING_OPENERS = frozenset(("large", "small", "big", "high", "low", "short", "real", "complex", "normal"))


# Languages whose writing capitalises every noun ("Wohnung", "Monat"): there a capital says noun, not name.
NOUN_CAPITALISING = frozenset(["de", "lb"])


def capital_marks_name(language: str) -> bool:
    """Whether a word capitalised inside a sentence is a name in this language by its capital alone: Spanish,
    French, Russian and most others capitalise names only (and Chinese text has capitals only in the Latin names
    it quotes); not German, which capitalises every noun, nor English, where the lexicon decides ("Spark" is a
    name, "Ready" in a heading is not)."""
    return language != "en" and language not in NOUN_CAPITALISING


@lru_cache(maxsize=1 << 16)
def _adverb_only(lower: str) -> bool:
    """ "manually", "quickly": a heading's last word in Title Case, never the end of a name."""
    return lower.endswith("ly") and lexicon.parts_of_speech(lower) == {"ADV"}


@lru_cache(maxsize=1 << 16)
def _imperative(lower: str) -> bool:
    """A common word that can be a verb ("load", "track", "produce"): at a sentence's start, a command."""
    return "VERB" in lexicon.parts_of_speech(lower) and lexicon.zipf(lower) >= 4.0


def _command(words: Sequence[Token], i: int = 0) -> bool:
    """Whether words[i], opening a sentence or a heading, is a command and the words after it its object ("Load
    data", "Monitor Progress", "**Visit Yosemite**"): a common word that can be a verb (`_imperative`), unless it
    is the first word of a name (`_name_opener`: "Point Reyes National Seashore")."""
    return _imperative(words[i].lower) and not _name_opener(words, i)


def _name_opener(words: Sequence[Token], i: int) -> bool:
    """ "Point Reyes National Seashore", "Lake Tahoe Basin": a common noun in title case, then a proper noun (in
    title case, a word the English lexicon has no part of speech for: a place, a person) and one more word of a name
    is a name of three words or more that the noun opens, not a command and its object. A command takes one name
    ("Visit Yosemite"), common nouns ("Use Version Control", "Check Point Software": a name whose second word is a
    common word cannot be told from them) or no noun at all ("Install Docker Desktop": "install" is a verb only).
    The words after words[i] are taken as joined to it (the caller's run or piece)."""
    if i + 2 >= len(words):
        return False
    first, second, third = words[i], words[i + 1], words[i + 2]
    return (
        _title_case(first)
        and _title_case(second)
        and not second.sentence_start
        and not second.stop
        and len(second.text) > 2
        and second.text.isalpha()
        and third.capitalised
        and not third.sentence_start
        and not third.stop
        and third.lower not in NOT_NAMES  # "Make America Great Again": a slogan, a sentence in title case
        and not first.stop
        and first.lower not in NOT_NAMES  # "This Logan Square", "How Nebulizers Work": a sentence's own words
        and not lexicon.parts_of_speech(second.lower)
        and _noun_only(first.lower)
    )


@lru_cache(maxsize=1 << 14)
def _noun_only(lower: str) -> bool:
    """A noun, perhaps a verb, never an adjective: an adjective in title case before a name describes it ("Regional
    Indian Cuisine", "Classic Italian Dishes")."""
    tags = lexicon.parts_of_speech(lower)
    return "NOUN" in tags and "ADJ" not in tags


@lru_cache(maxsize=1 << 16)
def _verb_s(lower: str) -> bool:
    """ "uses", "creates", "provides": the -s form of a common verb (as a plural noun it rarely opens a term)."""
    if len(lower) < 4 or not lower.endswith("s") or lower.endswith("ss"):
        return False
    lemmas = lexicon.lemmas(lower).get("VERB", ())
    return any(lemma != lower for lemma in lemmas) and lexicon.zipf(lower) >= 3.5


def _number(token: Token) -> bool:
    """ "42", "3.11", "1,000", "million": a number, no word of a noun phrase (it opens none: "Python 3.11 runs"
    gives no "3.11 run", "a million fields" no "million field"); a name takes a version after it
    (extract.name_phrases._continues_name: "Python 3.11"), and a number word in a name is written with its capital
    ("Chapter Six")."""
    return token.lower.replace(".", "").replace(",", "").isdigit() or (
        token.lower in _NUMBER_WORDS and token.text == token.lower
    )


# Units a number measures in: after a number they are the quantity's ("1/2 oz agave syrup", "2 cups flour", "16 GB
# RAM"), no word of the term that follows.
_UNITS_TEXT = (
    "oz ounce ounces lb lbs pound pounds g gram grams kg mg mcg ml l liter liters litre litres cup cups tbsp tsp"
    " tablespoon tablespoons teaspoon teaspoons pinch dash inch inches cm mm km ft foot feet mile miles"
    " minute minutes min mins hour hours hr hrs second seconds sec secs day days week weeks month months year years"
    " kb mb gb tb x pcs piece pieces slice slices clove cloves serving servings percent"
)


_UNITS = frozenset(_UNITS_TEXT.split())


# Units that are no word of a term even where the number before them is gone (the prose view blanks "1/2" and "1/4"
# as it does paths: "   oz agave syrup", "   teaspoon cayenne pepper"), written in lower case ("Oz", "ML" are names).
_MEASURES = frozenset("oz ounce ounces tbsp tsp teaspoon teaspoons tablespoon tablespoons ml mg kg lb lbs".split())  # noqa: SIM905


# A number joined to its unit by a hyphen ("30-minute", "5-year", "2-3-day"): a measure that modifies a noun, no word
# of a term ("daily 30-minute cleaning routine").
_MEASURE = re.compile(r"\d[\d.,/-]*-[^\W\d_]+")


def _quantity(token: Token, previous: Token | None) -> bool:
    """A number, a number joined to its unit ("30-minute"), a unit after a number ("2 cups flour") or a unit of
    measure in lower case ("oz" of "1/2 oz agave syrup", whose fraction the prose view blanks)."""
    alone, unit = _quantity_word(token.text)
    return alone or (unit and previous is not None and _number(previous))


@lru_cache(maxsize=1 << 16)
def _quantity_word(text: str) -> tuple[bool, bool]:
    """(a quantity by itself, a unit that is one after a number) of a word, asked once per distinct word: the noun
    phrase rules ask it of every word of every message (a token's lower form is its text casefolded)."""
    lower = text.casefold()
    alone = (
        lower.replace(".", "").replace(",", "").isdigit()
        or (lower in _NUMBER_WORDS and text == lower)
        or _MEASURE.fullmatch(lower) is not None
        or (lower in _MEASURES and text == lower)
    )
    return alone, lower in _UNITS


# The cardinal numbers written as words that are no stop words ("one", "two" are).
_NUMBER_WORDS_TEXT = (
    "three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen"
    " nineteen twenty thirty forty fifty sixty seventy eighty ninety hundred thousand million billion trillion"
    " dozen"
)


_NUMBER_WORDS = frozenset(_NUMBER_WORDS_TEXT.split())


def _title_case(token: Token) -> bool:
    return token.capitalised and not token.all_caps and not token.inner_capital


def _generic(token: Token) -> bool:
    return token.lower in GENERIC or singular(token.lower) in GENERIC


def _written_as_name(token: Token) -> bool:
    return _acronym(token) or token.inner_capital or (token.capitalised and not token.sentence_start)


# A hyphenated word made an adjective ("Python-like", "Spark-based", "Moroccan-inspired", "Indigenous-led",
# "Indigenous-owned"): a name's modifier, never a concept alone.
ADJECTIVE_ENDS = (
    "-like", "-based", "-style", "-related", "-specific", "-friendly", "-oriented", "-driven", "-inspired", "-themed",
    "-focused", "-powered", "-centric", "-infused", "-led", "-owned", "-funded", "-backed",
)  # fmt: skip
