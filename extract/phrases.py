"""Candidate concepts in one message's prose: named things and noun phrases, with where each one occurs.

Input is the prose view of a message (clients/prose.py: code, markup, paths and URLs already blanked), so a
candidate can only come from words a person wrote as prose. Two kinds of candidate, both kept whole (up to
four words, "role-based access control", "AWS Glue job"):

- a **name**: a run of capitalised, all-caps or inner-capital words that does not open the sentence
  ("Power BI", "AWS Glue", "PySpark", "EC2"), with "of", "&", "de" allowed inside ("Bank of America") and a
  plural's apostrophe ("The Liars' Gospel"); an adjective of the stop list in title case opens one ("New York");
  a work's title in quotes keeps its article ('"The Power" by Naomi Alderman');
  a sentence-initial word counts when it is all caps or has inner capitals, or is rare in the language;
- a **noun phrase** (English only): a run of content words between function words and punctuation, with
  leading verbs and adverbs dropped (and the verb after "how to", "want to": "how to deal aggressive customer"),
  cut where a verb-only word stands inside, and ending on a word that can
  be a noun ("customer churn model", "window functions"); a name's kind head is cut ("Shopify platform",
  "Parquet file", "SQL statement" are Shopify, Parquet, SQL); a plural ends it, for English compounds take the
  singular ("simulations increases", "strategies businesses (use)" are no terms; "sales tax" is one), and a
  clause on the plural ends before its verb ("the transformations Spark implements"), an adverb of time after it is
  cut ("the support group yesterday"), a verb's -s form before "to" and a verb is the clause's verb ("the Client wishes
  to engage"), a number opens none ("3.11 run") but stays inside a name ("Gemini 1.5 Flash"); a proper noun takes no
  common word before it ("learning Spanish", "idea Brazil", a greeting to a name: "Bye Caroline!" are the name
  alone); a genitive after "a" or "an" describes its head and is part of the term ("a Master's programme").

A word called with nothing in prose ("**coalesce()**: ...", "using input_define()") is a name: a function the
text is about (clients/prose.py keeps such a call in the extractor's view).

A dotted word is code, no part of either ("number.key", "IsHoliday.x", "pack.obj"), unless it names a site or a
library ("Booking.com", "node.js"); a name in a Title Case heading ends before a last adverb ("the Schema Manually").

A list item's head of up to two words ("1. **Caching**: ...", "Use partitioning: ...") is a noun phrase whole, its
-ing word too (the plain rules cut "Caching" as a verb), without the command that opens it.

Where the rules above cut a modifier off a noun phrase (a participle after a determiner: "a hashing algorithm",
"a stored procedure"; an -ing head that ends a run after a noun: "performance tuning"; a common adjective in
front: "linguistic diversity"; a qualifying opener, "small business", QUALIFYING_OPENERS), the phrase with it is
proposed as well, marked loose: the extractor keeps it only where the segment says it so twice or more (a
collocation, not "a larger dataset" said once), and one with a qualifying opener only where the user says it so.

For a message in another language there is no part-of-speech lexicon here, so fewer kinds of candidate: names
(where the language capitalises names only, Spanish, French, Russian..., a capital inside a sentence is a name's
however common the word, "Sevilla", "Lyon"; a common noun with a capital after an article is a term a contract
defines, "el Cliente"; German capitalises every noun, so there a capital is a name's only on a word that is no
common German noun: "Siemens", "Schwabing", not "Monat") and, in the languages wordfreq has frequencies for,
runs of two or three content words ("paella valenciana", "aceite de oliva", "ремонт кухни"; `_content_runs`),
none of them among the language's most frequent words nor a form of a verb (simplemma's lemma says which), each
loose: a term where the segment says it twice. Chinese has a part-of-speech tagger here (jieba): its nouns and
noun compounds too (extract/chinese.py, on the words extract.chinese.tokens cuts). A language without frequencies
(and Japanese and Korean text, which need a segmenter) gives names only: fewer concepts beat wrong ones.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from functools import lru_cache
from typing import NamedTuple

from extract import lexicon
from extract.text import is_stopword

MAX_WORDS = 4
_TOKEN = re.compile(r"[^\W_](?:[\w'’+#.&-]*[^\W_+#.&'’-]|[+#]+)?", re.UNICODE)
_SENTENCE_END = re.compile(r"[.!?。！？]\s|\n|\s{3,}")
_BREAK_GAP = re.compile(r"^[ \t]?$|^ ?[-–] ?$")  # only a space (or a hyphen) between two words of one phrase
_BREAK_WORDS = frozenset(["vs", "versus", "etc", "e.g", "i.e", "eg", "ie", "via", "aka"])
_CONNECTORS = frozenset(["of", "&", "de", "du", "la", "von", "van", "der", "for"])
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
# Heads that only say what kind of text a thing was discussed in: "Spark code" is Spark, "pandas library" pandas.
_META_HEADS_TEXT = (
    "code codes snippet snippets library libraries script scripts example examples program programs syntax"
    " solution solutions approach approaches explanation explanations method methods details version versions"
    " question questions answer answers implementation implementations tutorial tutorials"
)
_META_HEADS = frozenset(_META_HEADS_TEXT.split())
# Words that point to a time from the moment of speaking: after a noun phrase they are adverbs of the clause ("I went
# to the support group yesterday"), never its head.
_DEICTIC_TIMES = frozenset("yesterday today tomorrow tonight".split())  # noqa: SIM905
# Adverbs of place that the lexicon also lists as nouns ("the outside"): lower case after a noun phrase they say
# where it is ("a section underneath the calculator", "students outside the university"), never what it is.
_PLACE_ADVERBS = frozenset("underneath outside inside above behind upstairs downstairs nearby overseas".split())  # noqa: SIM905
# Heads that, after a name, only say what kind of thing the name is: "Shopify platform" is Shopify, "Parquet
# file" Parquet, "Hive table" Hive, "SQL statement" SQL. Cut only when every word before the head is written as
# a name and the head is not ("Amazon Web Services" keeps its last word); the generic nouns above count too.
_KIND_HEADS_TEXT = (
    "platform platforms framework frameworks language languages service services software app apps application"
    " applications engine engines tool tools component components directory directories environment"
    " environments interface api apis website site"
)
_KIND_HEADS = frozenset(_KIND_HEADS_TEXT.split())


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


@lru_cache(maxsize=1 << 16)
def _is_stop(lower: str) -> bool:
    return is_stopword(lower) or lower in lexicon.ENGLISH_FUNCTION or lower in _BARE_CONTRACTIONS


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
        # Token(word, start, end, opens), built in place: this loop makes every token of the stage
        token = new(Token)
        token.text, token.start, token.end, token.sentence_start = word, start, end, opens
        shape = shapes.get(word) or _shape(word)
        token.lower, token.capitalised, token.all_caps, token.inner_capital, token.stop, token.verbish = shape
        # "--password cloudera", "-m 1": a command's option and its value, no prose words; "set city='Hyd'": a
        # variable (cheap tests first: this runs for every word)
        option = prose[start - 1 : start] == "-" and _option(gap, word)
        assigned = prose[end : end + 1] == "=" and _ASSIGNED.match(prose, end) is not None
        if option or assigned or (after_option and _option_value(prose, gap, end)) or _digit_group(prose, start):
            token.stop = True
        after_option = option
        append(token)
        previous_end = end
    return found


_GENITIVE = ("'s", "’s")
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


def phrases(
    prose: str,
    language: str,
    words: list[Token] | None = None,
    phrase_chars: int | None = None,
    heads: bool = False,
) -> Iterator[Phrase]:
    """Every candidate phrase of one message's prose view (names first, then noun phrases); `words` are its
    tokens when the caller has them already; noun phrases only from the first `phrase_chars` characters; with
    `heads`, its list items' heads (a reply's, not a user's: a user's heads are a prompt's sections)."""
    words = tokens(prose) if words is None else words
    if not words:
        return
    yield from _names(prose, words, language)
    if language == "zh":
        from extract import chinese  # imported here: it builds on this module

        yield from chinese.phrases(prose, words, phrase_chars)
    if phrase_chars is not None and words[-1].start >= phrase_chars:
        words = [t for t in words if t.start < phrase_chars]
    if language == "en":
        yield from _noun_phrases(prose, words)
        if heads:
            yield from _heads(prose, words)
    elif capital_marks_name(language) and language in lexicon.LANGUAGES_WITH_FREQUENCIES:
        yield from _content_runs(prose, words, language)


# A list item's head: the opening of a line, up to its first colon ("1. **Data Partitioning**: ...", "Caching:"),
# list markers and emphasis already blanked.
_HEAD = re.compile(r"(?m)^[ \t]*([^\W\d_][^\n:]{0,60}?)[ \t]*:")
_HAS_APOSTROPHE = re.compile(r"['’]")


def _heads(prose: str, words: list[Token]) -> Iterator[Phrase]:
    """A list item's head names the item ("Data Partitioning:", "Caching:", "Color correction:"): kept whole,
    its -ing words too (the plain rules cut "Caching" as a verb); a command that opens it is no part of it
    ("Use caching:" is caching). Up to two words: a longer head is a clause ("Implementing efficient workflows:",
    "Hadoop's input format:")."""
    if ":" not in prose:
        return
    starts = {t.start: i for i, t in enumerate(words)}
    for match in _HEAD.finditer(prose):
        i = starts.get(match.start(1))
        if i is None:
            continue
        head = []
        while i < len(words) and words[i].end <= match.end(1):
            head.append(words[i])
            i += 1
        if len(head) > 1 and _imperative(head[0].lower) and head[0].text[:1].isupper():
            head = head[1:]
        while head and (head[0].lower in _COMMON_OPENERS or head[0].lower in NOT_NAMES):
            head = head[1:]  # "Current points:", "Overall Performance:"
        if (
            not head
            or len(head) > 2
            or any(t.stop for t in head)
            or _HAS_APOSTROPHE.search(prose, head[0].start, head[-1].end)
        ):
            continue
        if all(_generic(t) for t in head) or not all(plausible_word(t.text) for t in head):
            continue
        last = head[-1]
        if _adverb_only(last.lower) or not (
            lexicon.can_be_noun(last.lower) or last.lower.endswith("ing") or _acronym(last) or last.inner_capital
        ):  # "Fully Managed:" is no term
            continue
        yield _phrase(prose, head, head=True)


def _joined(prose: str, left: Token, right: Token) -> bool:
    gap = prose[left.end : right.start]
    return gap == " " or _BREAK_GAP.match(gap) is not None  # one space, the common gap, decided without the pattern


# Languages whose writing capitalises every noun ("Wohnung", "Monat"): there a capital says noun, not name.
NOUN_CAPITALISING = frozenset(["de", "lb"])


def capital_marks_name(language: str) -> bool:
    """Whether a word capitalised inside a sentence is a name in this language by its capital alone: Spanish,
    French, Russian and most others capitalise names only (and Chinese text has capitals only in the Latin names
    it quotes); not German, which capitalises every noun, nor English, where the lexicon decides ("Spark" is a
    name, "Ready" in a heading is not)."""
    return language != "en" and language not in NOUN_CAPITALISING


def _is_name_word(token: Token, language: str) -> bool:
    if not token.capitalised and not token.inner_capital:
        return False
    if token.lower in NOT_NAMES or token.text.isdigit() or len(token.text) < 2 or token.stop:
        return False
    if token.all_caps:
        return not token.lower.isdigit() and not _shouted(token.lower)
    if token.inner_capital:
        return len(token.text) >= 2 and not token.lower.isdigit()
    if not token.capitalised:
        return False
    if not token.sentence_start:
        return language not in NOUN_CAPITALISING or _capitalised_name(token.lower, language)
    # A capital that opens a sentence says nothing; a word this rare is a name all the same ("Kafka is ..."),
    # unless it can only be a verb: a list of steps opens its lines with them ("Initializes an empty list",
    # "Populates it with ...").
    return lexicon.zipf(token.lower, language) < 2.5 and lexicon.zipf(token.lower, "en") < 2.5 and not token.verbish


# In German every noun has a capital: one is a name's where the word is not a common noun of the language
# (a coined name or a compound, "Schwabing", "Datenanalystin") or where English text uses it nearly as much (a name
# both languages write: "Siemens", "Hamburg", "Python"); "Monat", "Jahren", "Wohnung" are nouns.
_COMMON_NOUN_ZIPF = 4.0
_NAME_ZIPF_GAP = 1.6


@lru_cache(maxsize=1 << 14)
def _capitalised_name(lower: str, language: str) -> bool:
    own = lexicon.zipf(lower, language)
    return own < _COMMON_NOUN_ZIPF or lexicon.zipf(lower, "en") > own - _NAME_ZIPF_GAP


# A work's title in quotes, its article first: "The Power", "A Little Life", “The Seven Husbands of Evelyn Hugo”.
_QUOTED_TITLE = re.compile(
    r"[\"“](?P<title>(?:The|A|An)[ \t]+[A-Z][\w'’-]*(?:[ \t]+(?:[A-Z][\w'’-]*|of|the|and|in|on|to|for|a|an)){0,5})[\"”]"
)


def _names(prose: str, words: list[Token], language: str) -> Iterator[Phrase]:
    for word in words:
        if prose[word.end : word.end + 2] == "()" and not word.stop and plausible_word(word.text):
            # a function the prose names by its call ("**coalesce()**:", "using number_to_hex()"): an identifier
            yield Phrase(word.text, key_of([word.lower]), word.start, word.end, True)
    if '"' in prose or "“" in prose:
        yield from _quoted_titles(prose, words)
    run: list[Token] = []
    defines = capital_marks_name(language)
    for i, token in enumerate([*words, None]):
        # Most words are lower case and no run is open: decided without a call (this loop sees every token).
        named = token is not None and (token.capitalised or token.inner_capital) and _is_name_word(token, language)
        if named and defines and i and token is not None and _defined_term(words[i - 1], token, prose, language):
            named = False
        if not run:
            if named or (
                token is not None
                and token.stop
                and token.capitalised
                and not token.sentence_start
                and _opens_name(token, words, i, prose, language)
            ):
                run.append(token)  # type: ignore[arg-type]
            continue
        wanted = named or (token is not None and _continues_name(token, run, words, i, prose, language))
        if (
            wanted
            and token is not None
            and (_joined(prose, run[-1], token) or _plural_possessive(prose, run[-1], token))
        ):
            run.append(token)
            continue
        yield from _emit_name(prose, run, language)
        run = [token] if token is not None and named else []


# Definite articles (alone or joined to a preposition) of languages that capitalise names only: only the words that
# are no preposition of the language as well ("a", "à", "de" are).
_ARTICLES: dict[str, frozenset[str]] = {
    language: frozenset(text.split())
    for language, text in (
        ("es", "el la los las lo del al"),
        ("fr", "le la les l' l’ du des au aux"),
        ("it", "il lo la i gli le l' l’ del dello della dei degli delle al allo alla ai agli alle"),
        ("pt", "o os as do da dos das no na nos nas ao aos"),
        ("ca", "el la els les l' l’ del dels al als"),
    )
}


def _defined_term(before: Token, token: Token, prose: str, language: str) -> bool:
    """ "el Cliente", "le Prestataire", "la Empresa": a common noun written with a capital after an article is a
    term a contract or a set of terms defines, not a name (names rarely take one, and those that do are no common
    words: "el Prado", "la Alhambra")."""
    articles = _ARTICLES.get(language)
    if not articles:
        return False
    elided = prose[before.start : token.start].casefold()  # "l'Entreprise": one token "l'Entreprise" (below)
    return (
        ((before.lower in articles and _joined(prose, before, token)) or elided in articles)
        and not token.all_caps
        and lexicon.zipf(token.lower, language) >= _COMMON_NOUN_ZIPF
    )


def _opens_name(token: Token, words: list[Token], i: int, prose: str, language: str) -> bool:
    """An adjective the stop list holds, written in title case inside a sentence right before a name word, opens
    that name ("New York", "New Delhi", "Big Sur"): mid-sentence, an adjective takes a capital only as a name's
    first word. Never a sentence's first word (its capital says nothing), a word in capitals ("IN AWS"), one that
    is a noun or a verb as well ("Good", "Get", "Way": a title's words) or one that is no name's ("I", "May")."""
    if not _title_case(token) or token.sentence_start or token.lower in NOT_NAMES or i + 1 >= len(words):
        return False
    if lexicon.parts_of_speech(token.lower) != {"ADJ"}:
        return False
    after = words[i + 1]
    return (
        not after.sentence_start and not after.stop and _is_name_word(after, language) and _joined(prose, token, after)
    )


def _quoted_titles(prose: str, words: list[Token]) -> Iterator[Phrase]:
    """A run of title-case words in quotes that opens with an article names a work ("The Power", "A Little Life"):
    the article is part of the title, and the name rules, which never start a name on "The", would keep only a
    common word of it ("Power"). Its last word is capitalised (a quoted sentence, "The end of it", is no title)."""
    starts = {t.start: i for i, t in enumerate(words)}
    for match in _QUOTED_TITLE.finditer(prose):
        i = starts.get(match.start("title"))
        if i is None:
            continue
        run = []
        while i < len(words) and words[i].end <= match.end("title"):
            run.append(words[i])
            i += 1
        if len(run) >= 2 and len(run) <= MAX_WORDS and run[-1].capitalised and run[-1].end == match.end("title"):
            yield Phrase(
                prose[run[0].start : run[-1].end], key_of([t.lower for t in run]), run[0].start, run[-1].end, True
            )


def _plural_possessive(prose: str, left: Token, right: Token) -> bool:
    """ "The Liars' Gospel", "Farmers' Market": a plural's apostrophe inside a name joins its words."""
    return left.lower.endswith("s") and prose[left.end : right.start] in ("' ", "’ ")


def _continues_name(token: Token, run: list[Token], words: list[Token], i: int, prose: str, language: str) -> bool:
    """A connector ("of", "&") inside a name, or a number after one ("Python 3", "iPhone 14")."""
    if token.text[:1].isdigit() and len(token.text) <= 4:
        return True
    if token.lower in _CONNECTORS and i + 1 < len(words):
        after = words[i + 1]
        return _is_name_word(after, language) and not after.sentence_start and _joined(prose, token, after)
    return False


def _emit_name(prose: str, run: list[Token], language: str) -> Iterator[Phrase]:
    while run and (
        run[-1].lower in _CONNECTORS or (len(run) > 1 and (len(run[-1].text) == 1 or _adverb_only(run[-1].lower)))
    ):
        run = run[:-1]  # "Bank of", "Mumbai F" (a row of data: a city, then a sex), "Define the Schema Manually"
    if not run:
        return
    if len(run) > MAX_WORDS:
        return  # a heading in title case, or a name too long to be a concept's title: any part is a fragment
    if len(run) == 1 and len(run[0].text) < 2:
        return
    if len(run) == 1 and (not _specific_name(run[0], language) or not plausible_word(run[0].text)):
        return
    yield Phrase(prose[run[0].start : run[-1].end], key_of([t.lower for t in run]), run[0].start, run[-1].end, True)


@lru_cache(maxsize=1 << 16)
def _adverb_only(lower: str) -> bool:
    """ "manually", "quickly": a heading's last word in Title Case, never the end of a name."""
    return lower.endswith("ly") and lexicon.parts_of_speech(lower) == {"ADV"}


def _common_adjective(token: Token) -> bool:
    """ "larger", "detailed", "structured": an adjective this common says which one, not what it is."""
    if token.all_caps or token.inner_capital or "-" in token.text or (token.capitalised and not token.sentence_start):
        return False  # "Directed" in "the Directed Acyclic Graph": part of a name
    return _common_adjective_word(token.lower)


@lru_cache(maxsize=1 << 16)
def _common_adjective_word(lower: str) -> bool:
    tags = lexicon.parts_of_speech(lower)
    return bool(tags) and "NOUN" not in tags and "ADJ" in tags and lexicon.zipf(lower) >= 3.5


def _acronym(token: Token) -> bool:
    return token.all_caps and not _shouted(token.lower)


@lru_cache(maxsize=1 << 16)
def _shouted(lower: str) -> bool:
    """An all-caps word that is a common English word ("DELETE", "FINAL", "IMPORTANT"): a keyword or a heading
    written in capitals, not an acronym (acronyms of four letters or more are rarely words: "HDFS", "JSON")."""
    return len(lower) >= 4 and lower.isalpha() and bool(lexicon.parts_of_speech(lower)) and lexicon.zipf(lower) >= 3.0


@lru_cache(maxsize=1 << 16)
def _imperative(lower: str) -> bool:
    """A common word that can be a verb ("load", "track", "produce"): at a sentence's start, a command."""
    return "VERB" in lexicon.parts_of_speech(lower) and lexicon.zipf(lower) >= 4.0


@lru_cache(maxsize=1 << 16)
def _verb_s(lower: str) -> bool:
    """ "uses", "creates", "provides": the -s form of a common verb (as a plural noun it rarely opens a term)."""
    if len(lower) < 4 or not lower.endswith("s") or lower.endswith("ss"):
        return False
    lemmas = lexicon.lemmas(lower).get("VERB", ())
    return any(lemma != lower for lemma in lemmas) and lexicon.zipf(lower) >= 3.5


def _vague_pair(modifier: Token, head: Token) -> bool:
    """ "Concise summary", "Maximum number", "Human-readable format": a vague noun ("summary", "number",
    "format") that an adjective only qualifies names nothing a person would file. Names are not asked."""
    if modifier.all_caps or modifier.inner_capital or (modifier.capitalised and not modifier.sentence_start):
        return False
    if head.lower not in GENERIC and singular(head.lower) not in GENERIC:
        return False
    return _adjective(modifier.lower)


@lru_cache(maxsize=1 << 16)
def _adjective(lower: str) -> bool:
    tags = lexicon.parts_of_speech(lower)
    if tags:
        return "ADJ" in tags and "NOUN" not in tags  # "concise", "manageable"; not "maximum" ("the maximum")
    return "-" in lower and lower.endswith(("able", "ible", "ed", "ive", "ful", "less"))  # "human-readable"


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


def _specific_name(token: Token, language: str) -> bool:
    """A single capitalised word is a name when it is an acronym or has inner capitals ("AWS", "PySpark"), or
    when it is not a common word of the language capitalised for emphasis or in a heading ("Ready", "Presets",
    "FINAL"); a common word that is a name ("Spark", "Glue") is kept by its capital in the middle of sentences,
    which the scoring counts. In a language that capitalises names only (`capital_marks_name`), a capital in the
    middle of a sentence is a name's however common the word: "Sevilla", "Lyon", "Петербург"."""
    if token.capitalised and not token.all_caps and not token.sentence_start and capital_marks_name(language):
        return True
    letters = sum(c.isalpha() for c in token.text)
    if token.all_caps:
        return letters >= 2 and lexicon.zipf(token.lower, language) < 4.0
    return token.inner_capital or lexicon.zipf(token.lower, language) < 4.5


def _noun_phrases(prose: str, words: list[Token]) -> Iterator[Phrase]:
    run: list[Token] = []
    before: Token | None = None  # the word before the run
    infinitive = False  # the run follows "how to", "should", "we", ...: its first word is a verb
    previous: Token | None = None
    earlier: Token | None = None  # the word before `previous`
    for i, token in enumerate([*words, None]):
        if (
            token is not None
            and not token.stop
            and (not _number(token) or _inner_version(prose, run, words, i))
            and (
                not run
                or (_joined(prose, run[-1], token) and not token.sentence_start)
                or (len(run) == 1 and _descriptive_genitive(prose, before, run[0], token))
            )
        ):
            if not run:
                before, infinitive = previous, _verb_slot(earlier, previous)
            run.append(token)
            earlier, previous = previous, token
            continue
        if infinitive and run and run[0].text == run[0].lower and _can_be_verb(run[0].lower):
            # "how to deal aggressive customer", "they should show decimal points", "when you display prices"
            before, run = run[0], run[1:]
        if len(run) >= 2 and token is not None and token.lower == "to" and _verb_before_to(run, words, i + 1):
            run = run[:-1]  # "the Client wishes to engage", "emp reports to lead": a subject, then its verb
        yield from _split_run(prose, run, before)
        run = [token] if token is not None and not token.stop and not _number(token) else []
        before, infinitive = previous, _verb_slot(earlier, previous)
        earlier, previous = previous, token


def _inner_version(prose: str, run: list[Token], words: list[Token], i: int) -> bool:
    """ "Gemini 1.5 Flash-8B models": a version number between two words written as names is inside the name, so
    inside the noun phrase (cut there, "Flash-8B models" was a term of its own); after a name and before a common
    word it ends the phrase ("Python 3.11 runs": the name rules keep "Python 3.11")."""
    if not run or i + 1 >= len(words) or not _written_as_name(run[-1]):
        return False
    number, after = words[i], words[i + 1]
    return (
        len(number.text) <= 4
        and (after.capitalised or after.inner_capital)
        and not after.sentence_start
        and _joined(prose, run[-1], number)
        and _joined(prose, number, after)
    )


def _verb_before_to(run: list[Token], words: list[Token], after: int) -> bool:
    """ "The Client wishes to engage", "emp reports to lead": a run that ends in a verb's -s form after a singular
    noun, then "to" and a verb, is a subject and its verb ("wishes to engage"), not a term ("Client wishes"); a
    plural noun's "to" takes an object ("schema changes to the table", "answers to questions")."""
    last = run[-1]
    if last.text != last.lower or not _verb_s(last.lower) or run[-2].lower.endswith("s") or after >= len(words):
        return False
    following = words[after]
    return following.text == following.lower and not following.stop and _can_be_verb(following.lower)


def _number(token: Token) -> bool:
    """ "42", "3.11", "1,000", "million": a number, no word of a noun phrase (it opens none: "Python 3.11 runs"
    gives no "3.11 run", "a million fields" no "million field"); a name takes a version after it
    (extract.phrases._continues_name: "Python 3.11"), and a number word in a name is written with its capital
    ("Chapter Six")."""
    return token.lower.replace(".", "").replace(",", "").isdigit() or (
        token.lower in _NUMBER_WORDS and token.text == token.lower
    )


# The cardinal numbers written as words that are no stop words ("one", "two" are).
_NUMBER_WORDS_TEXT = (
    "three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen"
    " nineteen twenty thirty forty fifty sixty seventy eighty ninety hundred thousand million billion trillion"
    " dozen"
)
_NUMBER_WORDS = frozenset(_NUMBER_WORDS_TEXT.split())


def _descriptive_genitive(prose: str, article: Token | None, owner: Token, head: Token) -> bool:
    """ "a Master's programme", "a children's book", "an artist's residency": after "a" or "an", a genitive says
    what kind of thing the head is, not whose it is (a possessor is a determiner of its own: "a Emma's birthday"
    is no English), so the two are one term."""
    return (
        article is not None
        and article.lower in ("a", "an")
        and prose[owner.end : head.start] in ("'s ", "’s ")
        and not head.sentence_start
    )


# Words after which "to" marks an infinitive, never a place or a recipient: the word after "how to" is a verb
# ("how to deal aggressive customer"), and so after "want to", "need to", "trying to", "able to", "ways to".
_INFINITIVE_HEADS_TEXT = (
    "how want wants wanted wanting need needs needed trying try tries tried able unable going have has had"
    " like love would ways way steps tips best easiest decided plan planning hoping hope learn learning"
)
_INFINITIVE_HEADS = frozenset(_INFINITIVE_HEADS_TEXT.split())


def _to_infinitive(earlier: Token | None, to: Token | None) -> bool:
    return to is not None and to.lower == "to" and earlier is not None and earlier.lower in _INFINITIVE_HEADS


# Words after which a word that can be a verb is one: a modal ("they should show decimal points") or a subject
# pronoun ("we store logs", "when you display prices"; "you" only at a sentence's start or after a conjunction or
# an auxiliary: "give you access rights" takes a noun).
_MODALS = frozenset("can could should would will shall must might cannot".split())  # noqa: SIM905
_SUBJECTS = frozenset("i we they he she".split())  # noqa: SIM905
# "you" is the subject after these ("when you display prices", "can you explain"), an object after a verb ("give
# you access rights").
_BEFORE_SUBJECT = _MODALS | frozenset(
    "when if that do does did as so because and or then now where how why what which while unless once".split()  # noqa: SIM905
)
_MID_ADVERBS = frozenset("also just not never always then still only really even".split())  # noqa: SIM905


def _verb_slot(earlier: Token | None, previous: Token | None) -> bool:
    """Whether the run that starts after `previous` opens with a verb: after an infinitive's "to", a modal or a
    subject pronoun. Not after "and"/"or" (a second verb there, "set goals and track progress", cannot be told from
    a compound, "data visualization and machine learning", "yoga and dance classes")."""
    if previous is None:
        return False
    lower = previous.lower
    if lower in _MODALS or lower in _SUBJECTS:
        if lower == "i":  # "Phase I trials", "Type I errors": a numeral after a name, not the pronoun
            return earlier is None or not earlier.capitalised or earlier.sentence_start
        return previous.text == lower or previous.sentence_start  # "May", "Will": names
    if lower == "you":
        return earlier is None or previous.sentence_start or earlier.lower in _BEFORE_SUBJECT
    if lower in _MID_ADVERBS and earlier is not None:
        return earlier.lower in _MODALS or earlier.lower in _SUBJECTS  # "you can also display", "we just need"
    return _to_infinitive(earlier, previous)


def _split_run(prose: str, run: list[Token], before: Token | None = None) -> Iterator[Phrase]:
    """A run of content words -> its noun phrases: cut at verbs and adverbs, trimmed to a noun head; and, where
    the cut or the trim took a modifier off a noun phrase, the phrase with it, as a loose proposal."""
    if not run:
        return
    piece: list[Token] = []
    cut: Token | None = None  # the verb form the piece follows in the run
    clause = False  # the piece follows a plural: a clause on it ("the deals Newegg offers") may end in its verb
    for i, token in enumerate([*run, None]):
        keep = token is not None and (
            not token.verbish
            or _acronym(token)
            or token.inner_capital
            or (token.capitalised and not token.sentence_start)
        )
        if keep and token is not None and not (piece and _plural_modifier(piece[-1])):
            piece.append(token)
            continue
        if clause and len(piece) > 1 and piece[-1].text == piece[-1].lower and _can_be_verb(piece[-1].lower):
            piece = piece[:-1]  # "the deals Newegg offers", "the transformations Spark implements": its verb
        if keep and token is not None:
            # a plural before another word ends the phrase: English compounds take the singular ("simulation
            # count"), so "simulations increases", "women face" and "strategies businesses (use)" are a subject
            # and its verb or two phrases side by side, not one term
            yield from _plain_and_loose(prose, piece, None, None, False)
            piece = [token]
            cut = None
            clause = True
            continue
        clause = False
        if (
            cut is not None
            and len(piece) > 1
            and _adverb_only(cut.lower)
            and _verb_after_adverb(piece[0])
            and not _past_form(piece[0].lower)  # "a fully connected layer": a participle, a modifier
        ):
            piece = piece[1:]  # "you can automatically collect web content": the adverb's verb, then its object
        opener = cut if cut is not None and cut is run[0] and _determiner(before) else None
        yield from _plain_and_loose(prose, piece, opener, token, i == len(run) - 1)
        piece = []
        cut = token


def _verb_after_adverb(token: Token) -> bool:
    return token.text == token.lower and _can_be_verb(token.lower)


def _past_form(lower: str) -> bool:
    """ "connected", "written": a verb's -ed/-en form, not its base ("screen", "embed", "feed" are bases)."""
    verbs = lexicon.lemmas(lower).get("VERB", ())
    return lower.endswith(("ed", "en")) and bool(verbs) and lower not in verbs


def _plain_and_loose(
    prose: str, piece: list[Token], opener: Token | None, after: Token | None, last: bool
) -> Iterator[Phrase]:
    """The noun phrase of one piece of a run and, where the plain rules cut a modifier off it, the loose one."""
    phrase = _trim(piece)
    if len(phrase) > 1:
        phrase = _proper_head(prose, phrase)
    if phrase:
        yield _phrase(prose, phrase)
    if piece:
        wider = _with_modifiers(piece, opener, after, last)
        if len(wider) > 1:
            wider = _proper_head(prose, wider)
        if phrase and wider in ([], phrase):
            wider = _qualified(piece, phrase)
        if wider and wider != phrase:
            yield _phrase(prose, wider, loose=True)


def _qualified(piece: list[Token], phrase: list[Token]) -> list[Token]:
    """The noun phrase with the qualifying opener the plain rules cut just before it ("small business" of "a small
    business"), [] when there is none: the phrase itself is trimmed as it was, so only the opener comes back."""
    at = next((i for i, t in enumerate(piece) if t is phrase[0]), 0)
    before = piece[at - 1] if at > 0 else None
    if before is None or before.lower not in QUALIFYING_OPENERS or len(phrase) >= MAX_WORDS:
        return []
    if before.text != before.lower and not before.sentence_start:
        return []  # "Big" in "the Big Apple": a name's word, which the name rules read
    if any(_written_as_name(t) for t in phrase) or not lexicon.parts_of_speech(phrase[0].lower):
        return []  # "complex pyspark code", "large Hive tables": it says which instance of a name, not a kind
    return [before, *phrase]


_ADDRESS_END = re.compile(r"[ \t]*(?:[!?,]|$)")


def _title_case(token: Token) -> bool:
    return token.capitalised and not token.all_caps and not token.inner_capital


def _proper(token: Token) -> bool:
    """A word in title case inside a sentence: a proper noun ("Caroline", "Brazil", "Spanish")."""
    return _title_case(token) and not token.sentence_start


def _proper_head(prose: str, phrase: list[Token]) -> list[Token]:
    """A proper noun takes no common word before it as a modifier: a proper name is definite already, so a common
    word written before it is a verb ("learning Spanish"), an apposition ("idea Brazil", "friend Rachel") or, at
    a sentence's start with a one-word name that closes the clause, a greeting and its addressee ("Bye Caroline!",
    "Congrats Caroline!", "Woohoo Melanie!"; not a heading, "Popular Fashion Brands:"): the name alone is the
    phrase. Names of several words stay whole ("Apache Spark is ...", "Naomi Alderman")."""
    if len(phrase) < 2 or not _proper(phrase[-1]):
        return phrase
    i = len(phrase) - 1
    while i > 0 and (_proper(phrase[i - 1]) or (i > 1 and _number(phrase[i - 1]))):
        i -= 1
    if i == 0:
        return phrase
    before = phrase[i - 1]
    if before.text == before.lower or (
        before.sentence_start and len(phrase) == 2 and _ADDRESS_END.match(prose, phrase[-1].end) is not None
    ):
        return phrase[i:]
    return phrase


@lru_cache(maxsize=1 << 16)
def _plural_word(lower: str) -> bool:
    """ "simulations", "strategies", "women": a noun's plural that is not a word of its own ("sales", "news",
    "statistics", "savings", "data" are: as frequent as their singular, or their own lemma), so no modifier in a
    term."""
    nouns = lexicon.lemmas(lower).get("NOUN", ())
    if not nouns or lower in nouns:
        return False
    if not lower.endswith("s"):
        return True  # "women", "children": an irregular plural is a plural however often it is said
    return all(lexicon.zipf(lemma) > lexicon.zipf(lower) for lemma in nouns)


@lru_cache(maxsize=1 << 16)
def _can_be_verb(lower: str) -> bool:
    return "VERB" in lexicon.parts_of_speech(lower)


def _plural_modifier(token: Token) -> bool:
    return token.text == token.lower and len(token.lower) > 3 and _plural_word(token.lower)


# The words that join two nouns into one term in languages without a part-of-speech lexicon here: "aceite de
# oliva", "plan d'entraînement", "corso di laurea", "bolo de cenoura".
_TERM_CONNECTORS = frozenset("de del du des di della dello delle dei degli do da dos das".split())  # noqa: SIM905
_ELIDED = re.compile(r"^(?:d|l|dell|all|nell|dall|sull)['’](?=\w)", re.IGNORECASE)
RUN_STOP_WORDS = 300  # a language's most frequent words that end a run of content words


def _content_runs(prose: str, words: list[Token], language: str) -> Iterator[Phrase]:
    """Terms of a language with no part-of-speech lexicon here (Spanish, French, Russian...): runs of two or three
    content words, none of them among the language's most frequent words, joined by nothing but a space or one
    connector ("paella valenciana", "aceite de oliva", "ремонт кухни"), a name allowed at the end ("marathon de
    Paris"). Without a lexicon a run is as likely a verb and its object as a term, so every one is loose: a term
    only where the segment says it twice or more (extract.offline), as people repeat what they talk about."""
    frequent = lexicon.frequent_words(language, RUN_STOP_WORDS)
    run: list[Token] = []
    connector: Token | None = None  # a connector after the run's last word, waiting for the next content word

    def content(token: Token) -> bool:
        lower = _ELIDED.sub("", token.lower)
        if token.sentence_start or len(lower) < 3 or not lower.isalpha():
            return False
        if token.capitalised and not token.all_caps:
            return True  # a name ("Paris"), however common: only a run's last word (emit)
        return (
            token.text == token.lower
            and lower not in frequent
            and not lexicon.verb_form(lower, language)  # "creaste anteriormente", "hice paella": no terms
            and not lexicon.adverb_by_suffix(lower, language)
        )

    def emit() -> Iterator[Phrase]:
        said = [t for t in run if t.lower not in _TERM_CONNECTORS]
        if 2 <= len(said) <= 3 and not any(t.capitalised for t in run[:-1]):
            yield _phrase(prose, run, loose=True)  # longer: a clause, not a term, and any part of it a fragment

    previous: Token | None = None
    for token in words:
        joined = previous is not None and _joined(prose, previous, token)
        if run and joined and connector is None and token.lower in _TERM_CONNECTORS:
            connector = token
        elif (
            run
            and joined
            and content(token)
            and not run[-1].capitalised
            # a name ends a term only after a connector: "marathon de Paris"; "plataforma Shopify" is Shopify
            and not (token.capitalised and (connector is None or _defined_term(connector, token, prose, language)))
        ):
            if connector is not None:
                run.append(connector)
                connector = None
            run.append(token)
        else:
            yield from emit()
            run, connector = ([token] if content(token) and not token.capitalised else []), None
        previous = token
    yield from emit()


def _phrase(prose: str, phrase: list[Token], loose: bool = False, head: bool = False) -> Phrase:
    named = any(_acronym(t) or t.inner_capital or (t.capitalised and not t.sentence_start) for t in phrase)
    return Phrase(
        prose[phrase[0].start : phrase[-1].end],
        key_of([t.lower for t in phrase]),
        phrase[0].start,
        phrase[-1].end,
        named,
        loose,
        head,
    )


# A word that opens a noun phrase: after it, a verb's participle is the phrase's modifier ("a hashing algorithm",
# "the grilled chicken", "a stored procedure"), never the verb of a clause.
_DETERMINERS = frozenset("a an the this that these those my your our their his her its".split())  # noqa: SIM905


def _determiner(token: Token | None) -> bool:
    return token is not None and token.lower in _DETERMINERS


def _participle(token: Token | None, endings: tuple[str, ...] = ("ing", "ed")) -> bool:
    return (
        token is not None
        and token.verbish
        and token.text == token.lower
        and len(token.lower) > 4
        and token.lower.endswith(endings)
    )


def _with_modifiers(piece: list[Token], opener: Token | None, after: Token | None, last: bool) -> list[Token]:
    """The noun phrase of `piece` with what the plain rules cut off it: a participle after a determiner ("a
    crashing schedule"), an -ing word that ends the run after it (a gerund head: "performance tuning", "load
    balancing"), a common adjective in front ("linguistic diversity", "healthy meal ideas"); [] when none."""
    wider = list(piece)
    if _participle(opener):
        wider.insert(0, opener)  # type: ignore[arg-type]
    gerund = last and _participle(after, ("ing",))
    if gerund:
        wider.append(after)  # type: ignore[arg-type]
    if wider == piece and not (len(piece) > 1 and _common_adjective(piece[0])):
        return []
    return _trim(wider, modifiers=True, gerund=gerund)


def _generic(token: Token) -> bool:
    return token.lower in GENERIC or singular(token.lower) in GENERIC


def _written_as_name(token: Token) -> bool:
    return _acronym(token) or token.inner_capital or (token.capitalised and not token.sentence_start)


def _kind_head(token: Token) -> bool:
    if token.text != token.lower:
        return False
    return token.lower in _KIND_HEADS or token.lower in GENERIC or singular(token.lower) in GENERIC


def _trim(piece: list[Token], modifiers: bool = False, gerund: bool = False) -> list[Token]:
    """The noun phrase in a piece of a run; with `modifiers`, a common adjective in front stays, and with
    `gerund` the last word is an -ing head ("performance tuning") that no noun list holds."""
    if len(piece) > 1 and piece[0].sentence_start and _imperative(piece[0].lower):
        piece = piece[1:]  # "Load data", "Monitor progress": a command that opens a sentence, then its object
    if len(piece) > 1 and not piece[0].capitalised and _verb_s(piece[0].lower):
        piece = piece[1:]  # "(it) uses array indexing": a verb's -s form, then its object
    while piece and (
        piece[0].lower in _COMMON_OPENERS
        or piece[0].lower in NOT_NAMES
        or (not modifiers and len(piece) > 1 and _common_adjective(piece[0]))
    ):
        piece = piece[1:]
    if gerund:
        # the -ing word heads the phrase after a noun ("performance tuning", "load balancing"), or there is none
        # ("time dancing", "people traveling": a generic noun, then the verb of a reduced clause)
        before = piece[-2] if len(piece) >= 2 else None
        noun = before is not None and (
            _written_as_name(before)
            or (lexicon.can_be_noun(before.lower) and not {before.lower, singular(before.lower)} & GENERIC)
        )
        return piece if noun and len(piece) <= MAX_WORDS and any(plausible_word(t.text) for t in piece) else []
    while len(piece) > 1 and (
        piece[-1].lower in _DEICTIC_TIMES or (piece[-1].lower in _PLACE_ADVERBS and piece[-1].text == piece[-1].lower)
    ):
        piece = piece[:-1]  # "the support group yesterday": an adverb of time (or place) after the phrase, not its head
    while len(piece) > 1 and (piece[-1].lower in _META_HEADS or len(piece[-1].text) == 1):
        piece = piece[:-1]  # "Spark code": Spark; "Mumbai F 22": a row of data, not a term with a letter in it
    if len(piece) >= 2 and _kind_head(piece[-1]) and all(_written_as_name(t) for t in piece[:-1]):
        piece = piece[:-1]  # "Shopify platform", "Parquet file": the name is the concept, the head its kind
    if len(piece) >= 3 and not piece[-1].capitalised and _verb_s(piece[-1].lower) and piece[-2].lower[-1:] != "s":
        piece = piece[:-1]  # "Kafka Connect cluster feeds (the model)": a subject, then its verb
    while piece and not (lexicon.can_be_noun(piece[-1].lower) or _acronym(piece[-1]) or piece[-1].inner_capital):
        piece = piece[:-1]
    if len(piece) > MAX_WORDS:
        return []  # five content words in a row are a heading or a run-on list, and any four of them a fragment
    if not piece or all(t.lower in GENERIC or singular(t.lower) in GENERIC for t in piece):
        return []
    if len(piece) == 2 and (_vague_pair(piece[0], piece[1]) or (modifiers and piece[0].verbish and _generic(piece[1]))):
        return []  # a participle on a vague noun names nothing either ("the desired output", "the surrounding area")
    if not any(plausible_word(t.text) for t in piece):
        return []
    return piece
