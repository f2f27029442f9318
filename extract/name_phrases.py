"""Names in a message's prose view, the first kind of candidate (extract/phrases.py has the rules in words).

A run of capitalised, all-caps or inner-capital words that does not open its sentence (`_names`), with connectors
and a version inside ("Bank of America", "Python 3"), an adjective of the stop list opening one ("New York"), a
quoted work's title with its article ('"The Power"'), a function the prose names by its call ("coalesce()"). What a
capital says depends on the language (`_is_name_word`); a common noun with a capital after an article is a term a
contract defines, no name (`_defined_term`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import lru_cache

from extract import lexicon
from extract.tokens import MAX_WORDS, Phrase, Token, _joined, _shouted, key_of, plausible_word
from extract.word_kinds import (
    NOT_NAMES,
    NOUN_CAPITALISING,
    _adverb_only,
    _name_opener,
    _title_case,
    capital_marks_name,
)

_CONNECTORS = frozenset(["of", "&", "de", "du", "la", "von", "van", "der", "for"])


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


# A work's title in quotes, its article first: "The Power", "A Little Life", “The Seven Husbands of Evelyn Hugo”; or
# any title-case word first where a small word in lower case follows inside ("Once Upon a Time in Hollywood", "Gone
# with the Wind"): the name rules stop at the small word and take a piece ("Hollywood") for the work.
_SMALL = r"(?:of|the|and|in|on|to|for|a|an|with|at|from|by)"
_TITLE_CASE = r"[A-Z][\w'’-]*"
_QUOTED_TITLE = re.compile(
    rf"[\"“](?P<title>(?:The|A|An)[ \t]+{_TITLE_CASE}(?:[ \t]+(?:{_TITLE_CASE}|{_SMALL})){{0,5}}"
    rf"|{_TITLE_CASE}(?:[ \t]+{_TITLE_CASE})*[ \t]+{_SMALL}(?:[ \t]+(?:{_TITLE_CASE}|{_SMALL})){{1,4}})[\"”]"
)


# The most words of a quoted title: a work's title is longer than a name ("The Seven Husbands of Evelyn Hugo").
TITLE_WORDS = 6


def _names(prose: str, words: list[Token], language: str) -> Iterator[Phrase]:
    for word in words if "()" in prose else ():  # most views call no function: not a test per word
        if prose[word.end : word.end + 2] == "()" and not word.stop and plausible_word(word.text):
            # a function the prose names by its call ("**coalesce()**:", "using number_to_hex()"): an identifier
            yield Phrase(word.text, key_of([word.lower]), word.start, word.end, True)
    if '"' in prose or "“" in prose:
        yield from _quoted_titles(prose, words)
    if language == "en" and ("'s " in prose or "’s " in prose):
        yield from _possessive_names(prose, words, language)
    run: list[Token] = []
    defines = capital_marks_name(language)
    for i, token in enumerate([*words, None]):
        # Most words are lower case and no run is open: decided without a call (this loop sees every token).
        named = token is not None and (token.capitalised or token.inner_capital) and _is_name_word(token, language)
        if named and defines and i and token is not None and _defined_term(words[i - 1], token, prose, language):
            named = False
        elif not named and token is not None and token.sentence_start and token.capitalised:
            named = _opens_sentence_name(words, i, prose, language)  # "Point Reyes National Seashore"
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


def _opens_sentence_name(words: list[Token], i: int, prose: str, language: str) -> bool:
    """A common noun that opens a sentence and a name with it ("Point Reyes National Seashore":
    word_kinds._name_opener): its capital says nothing, but the name it opens is written whole. English only: the
    lexicon says which words are common nouns."""
    return (
        language == "en"
        and _name_opener(words, i)
        and _joined(prose, words[i], words[i + 1])
        and _joined(prose, words[i + 1], words[i + 2])
    )


# A JSON key and its colon, just before a quoted value (extract/tokens.py blanks the value's words as well).
_AFTER_KEY = re.compile(r"""['"’”][ \t]*[:：][ \t]*$""")


def _quoted_titles(prose: str, words: list[Token]) -> Iterator[Phrase]:
    """A run of title-case words in quotes that opens with an article names a work ("The Power", "A Little Life"):
    the article is part of the title, and the name rules, which never start a name on "The", would keep only a
    common word of it ("Power"). Its last word is capitalised (a quoted sentence, "The end of it", is no title)."""
    starts = {t.start: i for i, t in enumerate(words)}
    for match in _QUOTED_TITLE.finditer(prose):
        i = starts.get(match.start("title"))
        if i is None or _AFTER_KEY.search(prose, max(0, match.start() - 8), match.start()):
            continue  # '"type": "Chocolate with Sprinkles"': a value of the data after its key, no title
        run = []
        while i < len(words) and words[i].end <= match.end("title"):
            run.append(words[i])
            i += 1
        if 2 <= len(run) <= TITLE_WORDS and run[-1].capitalised and run[-1].end == match.end("title"):
            yield Phrase(
                prose[run[0].start : run[-1].end], key_of([t.lower for t in run]), run[0].start, run[-1].end, True
            )


_POSSESSIVE_GAPS = ("'s ", "’s ")


# The most words of an owner's name ("Trader Joe's", "AWS Glue's"): one longer is a name's end ("Department of
# Education's", "Sid Meier's"), and its whole cannot be told.
OWNER_WORDS = 2


def _possessive_names(prose: str, words: list[Token], language: str) -> Iterator[Phrase]:
    """A name in the possessive, then a run of two title-case words or more, or one common word in title case, is
    one name: "Assassin's Creed Odyssey", "Knott's Scary Farm", "Ender's Game", "Mother's Day" (the name rules cut
    a name at its "'s", which left "Assassin" and "Creed Odyssey", or "Ender" alone): the capitals of common words
    after the owner say that they and the owner are one title. Not where what follows is a name by itself (one
    word that is no common word, "Google's Chrome", "Apple's iPhone"; words that are no English words, "Gaudí's
    Sagrada Família": a maker and its work), nor a run too long to be one name, nor where the owner's capital says
    nothing (a sentence's first word: "**Emma's Favorite Movie**:", "Visit Knott's"; a rare one says it is a name:
    "Knott's Scary Farm is ..."). The parts are proposed as well: where the segment writes the owner or the run
    as a name alone as often, each is a name of its own (offline_candidates._drop_owned: "Dell's Battery Meter"
    beside "Dell"); else the whole holds their mentions (offline_scoring._inside_longer)."""
    for i in range(len(words) - 1):
        owner, first = words[i], words[i + 1]
        if prose[owner.end : first.start] not in _POSSESSIVE_GAPS or not _owner(owner):
            continue
        h = i
        while i - h + 1 < OWNER_WORDS and h > 0 and not words[h].sentence_start and _owner(words[h - 1]):
            if not _joined(prose, words[h - 1], words[h]):
                break
            h -= 1
        if words[h].sentence_start and not _is_name_word(words[h], language):
            if h == i:
                continue
            h += 1  # "Happy Mother's Day!": the sentence's first word says nothing, the name after it does
        elif h > 0 and _joined(prose, words[h - 1], words[h]):
            before = words[h - 1]
            if before.lower in _CONNECTORS or _owner(before):
                continue  # the end of a longer name ("Department of Education's", "Sid Meier's")
        j = i + 1
        while (
            j < len(words)
            and j - h <= MAX_WORDS
            and not words[j].sentence_start
            and not words[j].stop
            and (words[j].capitalised or words[j].inner_capital)
            and words[j].lower not in NOT_NAMES
            and (j == i + 1 or _joined(prose, words[j - 1], words[j]))
        ):
            j += 1
        tail = words[i + 1 : j]
        if not tail or j - h > MAX_WORDS:
            continue  # no name after it, or a run too long for one: a heading in title case
        if len(tail) == 1 and (not _title_case(first) or _specific_name(first, language)):
            continue  # "Google's Chrome": a product named by itself after its maker
        if not any(lexicon.parts_of_speech(t.lower) for t in tail):
            continue  # "Gaudí's Sagrada Família": a proper name already (no word of it an English word), its maker's
        run = words[h:j]
        yield Phrase(prose[run[0].start : run[-1].end], key_of([t.lower for t in run]), run[0].start, run[-1].end, True)


def _owner(token: Token) -> bool:
    """A word written as a name that can own one ("Knott's", "AWS Glue's"): not a pronoun nor a word of a
    contraction ("Let's", "It's", "Here's", "Today's") nor a verb-only word ("Visit")."""
    return (
        (token.capitalised or token.inner_capital)
        and not token.stop
        and not token.verbish
        and token.lower not in NOT_NAMES
        and not token.text[:1].isdigit()
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
