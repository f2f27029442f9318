"""The words of a message's prose view and the phrase every candidate is made as.

`tokens` cuts a prose view into `Token`s, each with its offsets, whether it opens a sentence and its shape (lower
case, capitals, stop word, verb-only), computed once per distinct word; a command's options, a variable assigned in
prose and a number's digit groups are stop words there. `Phrase` is one candidate (`_phrase` makes one from its
tokens), `key_of` its key. With the tests on a single word's shape that every rule asks: an acronym, a common word
shouted in capitals, a plausible word (no number, hash or colour), two words joined by a space.

The phrase rules (extract/phrases.py) read a message through these; extract/chinese.py cuts Chinese into the same
tokens.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache
from typing import NamedTuple

from extract import lexicon
from extract.text import is_stopword

MAX_WORDS = 4


_TOKEN = re.compile(r"[^\W_](?:[\w'’+#.&-]*[^\W_+#.&'’-]|[+#]+)?", re.UNICODE)


_SENTENCE_END = re.compile(r"[.!?。！？]\s|\n|\s{3,}")


_BREAK_GAP = re.compile(r"^[ \t]?$|^ ?[-–] ?$")  # only a space (or a hyphen) between two words of one phrase


_BREAK_WORDS = frozenset(["vs", "versus", "etc", "e.g", "i.e", "eg", "ie", "via", "aka"])


class Token:
    """One word of a prose view: its text, offsets, lower-case form and shape. The shape of a word is computed
    once per process (`_shape`), not once per occurrence: chat repeats its words, and this is per-token work."""

    __slots__ = (
        "all_caps",
        "capitalised",
        "end",
        "inner_capital",
        "lower",
        "sentence_start",
        "start",
        "stop",
        "text",
        "verbish",
    )

    def __init__(self, text: str, start: int, end: int, sentence_start: bool) -> None:
        self.text, self.start, self.end, self.sentence_start = text, start, end, sentence_start
        self.lower, self.capitalised, self.all_caps, self.inner_capital, self.stop, self.verbish = _shape(text)


_Shape = tuple[str, bool, bool, bool, bool, bool]


_SHAPES: dict[str, _Shape] = {}


_SHAPES_MAX = 1 << 18


def _shape(text: str) -> _Shape:
    """(lower, capitalised, all caps, inner capital, stop word, only a verb or adverb) of a word, cached."""
    found = _SHAPES.get(text)
    if found is not None:
        return found
    lower = text.casefold()
    upper = text != lower
    capitalised = upper and text[:1].isupper()
    all_caps = upper and len(text) >= 2 and text.isupper() and sum(c.isalpha() for c in text) >= 2
    rest = text[1:]
    inner_capital = upper and not all_caps and rest != rest.casefold() and rest != rest.upper()
    stop = _is_stop(lower) or lower in _BREAK_WORDS or _member_access(lower)
    verbish = not stop and lexicon.only_verb_or_adverb(lower)
    if len(_SHAPES) >= _SHAPES_MAX:
        _SHAPES.clear()
    found = _SHAPES[text] = (lower, capitalised, all_caps, inner_capital, stop, verbish)
    return found


# The last part of a dotted word that names a site or a library ("Booking.com", "ResumeBooster.ai", "node.js");
# after any other, a dotted word is code: a member or a file ("number.key", "IsHoliday.x", "org.apache", "pack.obj").
_NAME_SUFFIXES = frozenset(
    "com org net io ai js co app dev gov edu me tv fm ly gg uk de fr es it nl jp cn in us ca au ch info biz".split()  # noqa: SIM905
)


def _member_access(lower: str) -> bool:
    if "." not in lower:
        return False
    parts = lower.split(".")
    if not all(p.isalpha() for p in parts) or all(len(p) == 1 for p in parts):
        return False  # "1.5", "gpt-4.0", "u.s", "e.g"
    return parts[-1] not in _NAME_SUFFIXES


# Contractions typed without their apostrophe ("whats wrong", "dont know"): function words all the same.
_BARE_CONTRACTIONS = frozenset(
    [
        "whats",
        "thats",
        "dont",
        "doesnt",
        "didnt",
        "isnt",
        "arent",
        "wasnt",
        "werent",
        "cant",
        "wont",
        "wouldnt",
        "shouldnt",
        "couldnt",
        "havent",
        "hasnt",
        "im",
        "ive",
        "youre",
        "youve",
        "youll",
        "theyre",
        "theyve",
        "theres",
        "heres",
        "hows",
        "whos",
        "wheres",
        "whens",
        "lets",
    ]
)


# Pronouns of "-ever" that open a clause ("Whoever Bai is talking to ...") and that extract.text's list (which the
# segment stage's keyword overlap reads too) leaves out: no word of a name or a term.
_EVER_PRONOUNS = frozenset("whoever whomever whichever wherever whenever".split())  # noqa: SIM905


@lru_cache(maxsize=1 << 16)
def _is_stop(lower: str) -> bool:
    if lower in _EVER_PRONOUNS or lower in _BARE_CONTRACTIONS:
        return True
    return is_stopword(lower) or lower in lexicon.ENGLISH_FUNCTION


class Phrase(NamedTuple):
    """One candidate in a message (a tuple: every phrase of the stage is made here, and a frozen dataclass's fields
    cost a call each to set)."""

    surface: str  # as written
    key: tuple[str, ...]  # lower-case words
    start: int
    end: int
    named: bool
    # Kept with a modifier that the plain rules cut ("a hashing algorithm", "performance tuning", "linguistic
    # diversity"): a term only where the segment says it so twice or more (extract.offline).
    loose: bool = False
    head: bool = False  # a list item's head ("- Mutability: ...", "1. **Data Partitioning**: ..."): what the item is on


@lru_cache(maxsize=1 << 16)
def singular(word: str) -> str:
    """ "partitions" -> "partition": the plural folded so that both forms are one candidate."""
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is", "'s")):
        return word[:-3] + "y" if word.endswith("ies") and len(word) > 4 else word[:-1]
    return word


def key_of(words: Sequence[str]) -> tuple[str, ...]:
    """A candidate's key: its lower-case words, the last one singular ("window functions" = "window function")."""
    return (*words[:-1], singular(words[-1])) if words else ()


def tokens(prose: str) -> list[Token]:
    """Words of a prose view, each with its offsets and whether it opens a sentence ("Emma's" reads "Emma")."""
    found: list[Token] = []
    append = found.append
    shapes = _SHAPES
    new = Token.__new__
    previous_end = 0
    opens = True
    after_option = False  # the word before was a command's option: this one may be its value
    value_end = -1  # where the quoted value after a JSON key ends: its words are data, no prose
    for match in _TOKEN.finditer(prose):
        start, end = match.span()
        word = match.group()
        if word[-2:] in _GENITIVE and len(word) > 2:
            word, end = word[:-2], end - 2
        if found:
            gap = prose[previous_end:start]
            opens = gap != " " and (_SENTENCE_END.search(gap) is not None or gap.strip() in _OPENING_MARKS)
        else:
            gap = prose[max(0, start - 3) : start]
        shape = shapes.get(word) or _shape(word)
        if shape[3] and (cut := _glued(word)):
            # "executedWhere is the data loaded": two sentences joined without a space; the second opens there
            append(Token(word[:cut], start, start + cut, opens))
            word, start, opens = word[cut:], start + cut, True
            shape = _shape(word)
        # Token(word, start, end, opens), built in place: this loop makes every token of the stage
        token = new(Token)
        token.text, token.start, token.end, token.sentence_start = word, start, end, opens
        token.lower, token.capitalised, token.all_caps, token.inner_capital, token.stop, token.verbish = shape
        # "--password cloudera", "-m 1": a command's option and its value, no prose words; "set city='Hyd'": a
        # variable (cheap tests first: this runs for every word)
        option = prose[start - 1 : start] == "-" and _option(gap, word)
        after = prose[end : end + 1]
        key = after in _CLOSING_QUOTES and _KEY.match(prose, end)
        assigned = (after == "=" and _ASSIGNED.match(prose, end) is not None) or bool(key)
        if key and prose[key.end() - 1 : key.end()] in _OPENING_QUOTES:
            value_end = _value_end(prose, key.end())
        if (
            option
            or assigned
            or start < value_end
            or (after_option and _option_value(prose, gap, end))
            or (word[:1].isdigit() and _digit_group(prose, start))  # the call only where a digit opens the word
        ):
            token.stop = True
        after_option = option
        append(token)
        previous_end = end
    return found


_GENITIVE = ("'s", "’s")


# The words that open a sentence and never an identifier's second part: where one is glued to a lower-case word
# ("executedWhere", "anyWhat"), a sentence ended there and its space was lost (a paste from a form or a PDF).
# Identifiers join other words ("groupBy", "getOrCreate", "isEmpty", "toDF").
_SENTENCE_OPENERS = frozenset(
    "What Where When Why How Which Who Whose The This These Those There Here Please We You They".split()  # noqa: SIM905
)


@lru_cache(maxsize=1 << 12)
def _glued(word: str) -> int:
    """Where a word glued to the sentence after it ends ("executedWhere": 8), 0 if it is not one: a lower-case
    English word, then a capitalised sentence opener (`_SENTENCE_OPENERS`) to the end."""
    for cut in range(2, len(word) - 1):
        if word[cut].isupper():
            head, tail = word[:cut], word[cut:]
            if tail in _SENTENCE_OPENERS and head.isalpha() and head.islower():
                return cut if _is_stop(head) or lexicon.parts_of_speech(head) else 0
            return 0
    return 0


# A number written with thousands separators, and its unit when glued to it, is a quantity, never a word: a group of
# three digits after a digit and a separator the tokens were cut at ("000mAh" of "5,000mAh", "000" of "5 000 mAh"),
# or a token that holds its separators ("1'500mAh", "5.000mAh").
_DIGIT_GROUP = re.compile(r"(?<=\d[,'’ \u00a0\u202f\u2009])\d{3}(?!\d)|\d{1,3}(?:['’.]\d{3})+(?!\d)")


def _digit_group(prose: str, start: int) -> bool:
    return prose[start : start + 1].isdigit() and _DIGIT_GROUP.match(prose, start) is not None


_OPENING_MARKS = (":", "-", "*", "•")  # a gap of only one of these opens a sentence (a list item, a label's value)


# A command-line option written in prose ("sqoop import --username root --password cloudera"): the option's name
# and its value are a command's arguments, never a term ("Password cloudera").
_OPTION = re.compile(r"(?:^|\s)--$")


_SHORT_OPTION = re.compile(r"[ \t]-$")


# "city='Hyd'", "id==1": a word with "=" written right after it is a variable, assigned or compared ("the learning
# rate = 0.01", spaced, is prose).
_ASSIGNED = re.compile(r"==?['\"\w]")


# '"ppu": 0.55', 'ITid\'\uff1a “10019' (a JSON object typed or OCR'd into prose, its colon full-width): a word in
# quotes before a colon and a value is a key, no term ('the term "Spark": a framework ...' is prose: a word follows
# the colon).
_CLOSING_QUOTES = frozenset("'\"’”")


_KEY = re.compile(r"""['"’”][ \t]*[:：][ \t]*(?:$|['"‘“\d\[{])""", re.MULTILINE)


# '"type": "Chocolate with Sprinkles"': the quoted value after a key is a value of the data, as the key is its
# field: no words of a term ("Chocolate with Sprinkles", "Powdered Sugar" of a donut menu's JSON pasted as text).
_OPENING_QUOTES = frozenset("'\"‘“")


# The quote that closes a value, by the one that opens it ("Devil's Food" holds an apostrophe); a line's end at the
# latest.
_CLOSERS = (('"', '"”'), ("“", '”"'), ("'", "'’"), ("‘", "’'"))
_VALUE_CLOSE = {opener: re.compile(rf"[{closers}]|$", re.MULTILINE) for opener, closers in _CLOSERS}


def _value_end(prose: str, start: int) -> int:
    """Where a quoted value opened just before `start` closes (its line's end at the latest)."""
    found = _VALUE_CLOSE[prose[start - 1]].search(prose, start)
    return found.start() if found else len(prose)


def _option(gap: str, word: str) -> bool:
    """A word written right after "--" ("--username"), or a letter ("-m 1", "-X POST") or two lower-case ones
    ("-it") after " -" inside a line: not a dash that opens a line (a list's: "-AI ethics"), one before a number
    ("UTC -5": a sign) or one before two capitals ("-ML ops")."""
    if _OPTION.search(gap) is not None:
        return True
    short = len(word) == 1 or (len(word) == 2 and word.islower())  # "-X POST", "-R", "-it"; not "-ML ops"
    return short and word.isalpha() and _SHORT_OPTION.search(gap) is not None


# The gap between an option and its value: "=" or a quote joins them ("--user=root", "--name 'etl'"); a bare word
# after a space is the option's value only when another option follows it ("--username root --password"): a flag
# takes none ("pip install --upgrade pandas", "docker run -it ubuntu").
_OPTION_JOINED = re.compile(r"[ \t]*(?:=[ \t]*)?['\"]|[ \t]*=[ \t]*")


_NEXT_OPTION = re.compile(r"['\"]?[ \t]+--?[A-Za-z]")


def _option_value(prose: str, gap: str, end: int) -> bool:
    return _OPTION_JOINED.fullmatch(gap) is not None or (
        gap.strip(" \t") == "" and "\n" not in gap and _NEXT_OPTION.match(prose, end) is not None
    )


def _joined(prose: str, left: Token, right: Token) -> bool:
    gap = prose[left.end : right.start]
    return gap == " " or _BREAK_GAP.match(gap) is not None  # one space, the common gap, decided without the pattern


def _acronym(token: Token) -> bool:
    return token.all_caps and not _shouted(token.lower)


@lru_cache(maxsize=1 << 16)
def _shouted(lower: str) -> bool:
    """An all-caps word that is a common English word ("DELETE", "FINAL", "IMPORTANT"): a keyword or a heading
    written in capitals, not an acronym (acronyms of four letters or more are rarely words: "HDFS", "JSON")."""
    return len(lower) >= 4 and lower.isalpha() and bool(lexicon.parts_of_speech(lower)) and lexicon.zipf(lower) >= 3.0


_LETTER_AND_SYMBOLS = re.compile(r"[^\W\d_](?:\+\+|#)")


def plausible_word(text: str) -> bool:
    """Not a number, a hash, a colour or a cell reference: more letters than digits, and no run of hex; a letter
    with ++ or # is a language's name ("C++", "C#", "F#")."""
    if text.isalpha():
        return len(text) >= 2
    if _LETTER_AND_SYMBOLS.fullmatch(text):
        return True
    letters = sum(c.isalpha() for c in text)
    digits = sum(c.isdigit() for c in text)
    if letters < 2 or digits > letters:
        return False
    # six hex digits or more with a digit among them: a hash or a colour ("F7DC6F", "1E90FF", "a3f9c2d1")
    return not (len(text) >= 6 and digits and all(c in "0123456789abcdefABCDEF" for c in text))


def _phrase(prose: str, phrase: list[Token], loose: bool = False, head: bool = False) -> Phrase:
    named = False  # any word written as a name (an acronym, inner capitals, a capital inside a sentence): a loop,
    for t in phrase:  # not any() over a generator: every noun phrase of the stage is made here
        if t.inner_capital or (t.capitalised and not t.sentence_start) or (t.all_caps and not _shouted(t.lower)):
            named = True
            break
    first, last = phrase[0], phrase[-1]
    return Phrase(
        prose[first.start : last.end], key_of([t.lower for t in phrase]), first.start, last.end, named, loose, head
    )
