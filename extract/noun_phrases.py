"""English noun phrases in a message's prose view, the second kind of candidate (extract/phrases.py).

`_noun_phrases` reads runs of content words between function words and punctuation, dropping the verb that opens
one where the word before says it is a verb (after "how to", a modal, a subject pronoun: `_verb_slot`);
`_split_run` cuts a run at its verbs into pieces, each trimmed to its noun phrase, plain and loose
(extract/phrase_trim.py). `_heads` reads a reply's list items' heads ("1. **Caching**: ...").
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import lru_cache

from extract import lexicon
from extract.phrase_trim import _proper_head, _qualified, _trim, _with_modifiers
from extract.tokens import Phrase, Token, _acronym, _joined, _phrase, plausible_word
from extract.word_kinds import (
    _COMMON_OPENERS,
    ADJECTIVE_ENDS,
    NOT_NAMES,
    _adverb_only,
    _command,
    _generic,
    _quantity,
    _verb_s,
    _written_as_name,
)

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
        if len(head) > 1 and head[0].text[:1].isupper() and _command(head):
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


def _noun_phrases(prose: str, words: list[Token]) -> Iterator[Phrase]:
    run: list[Token] = []
    before: Token | None = None  # the word before the run
    infinitive = False  # the run follows "how to", "should", "we", ...: its first word is a verb
    previous: Token | None = None
    earlier: Token | None = None  # the word before `previous`
    for i, token in enumerate([*words, None]):
        if not run and token is not None and token.stop:
            # a function word with no run open (half the words of a message): it ends nothing and opens nothing,
            # and `before` and `infinitive` are set again where the next run opens
            earlier, previous = previous, token
            continue
        # whether the word is a quantity, asked once: the test below and the new run after a cut both need it
        quantity = token is not None and not token.stop and _quantity(token, previous)
        if (
            token is not None
            and not token.stop
            and (not quantity or _inner_version(prose, run, words, i))
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
        elif len(run) >= 2 and _verb_after_subject(prose, run, before, words, i):
            run = run[:-1]  # "This function takes a function", "a job takes 15 mins": a subject, then its verb
        if run:
            yield from _split_run(prose, run, before)
        run = [token] if token is not None and not token.stop and not quantity else []
        if run:  # read only while a run is open; a run opened later sets them where it opens
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


# Determiners that take a singular noun only: after them a noun and a verb's -s form are a subject and its verb ("this
# function takes ...", "a job takes ..."), never a compound with a plural head ("the data types", "these window
# functions").
_SINGULAR_DETERMINERS = frozenset("a an this that each every another".split())  # noqa: SIM905


# Words that open a verb's object, never a clause on a plural noun: object pronouns ("the task takes me an hour"); a
# determiner can open either ("this function takes a predicate", "the data types the reader accepts").
_OBJECT_PRONOUNS = frozenset("me us him them".split())  # noqa: SIM905


_ABOUT = frozenset("about around roughly approximately nearly almost over under".split())  # noqa: SIM905


def _verb_after_subject(prose: str, run: list[Token], before: Token | None, words: list[Token], after: int) -> bool:
    """ "This function takes a function", "a job takes 15 mins", "the transformation takes 1 min per partition":
    a run that ends in a verb's -s form after a singular noun is a subject and its verb where a determiner of the
    singular opens it ("a", "this": "a job takes" has no plural head) or where a number or an object pronoun
    follows (a quantity of time, "takes about 30 minutes"); a compound with a plural head is not cut ("the data
    types the reader accepts", "window functions", "tax returns")."""
    last = run[-1]
    if last.text != last.lower or not _verb_s(last.lower):
        return False
    if len(run) == 2 and _name_then_verb(prose, run[0], before, words, after):
        return True
    if run[-2].lower.endswith("s"):
        return False
    if before is not None and before.lower in _SINGULAR_DETERMINERS and len(run) == 2:
        return True
    if after >= len(words):
        return False
    following = words[after]
    if following.lower in _ABOUT and after + 1 < len(words):
        following = words[after + 1]
    return following.lower in _OBJECT_PRONOUNS or following.lower[:1].isdigit()


# Words that open a verb's object or follow a verb, never a noun phrase's plural head: "Grandma loves the garden",
# "OpenSpaces offers its members", "the Shield works well".
_AFTER_VERB = frozenset("the a an my your our their his her its this these those me us him them well".split())  # noqa: SIM905


def _name_then_verb(prose: str, name: Token, before: Token | None, words: list[Token], after: int) -> bool:
    """ "Grandma loves the garden", "OpenSpaces offers its members", "Shield works well": one word written with a
    capital that opens its clause, then a verb's -s form, then an object's determiner or an adverb, is a subject and
    its verb; a name's compound with a plural head is followed by neither ("Spark jobs in production", "Hive tables
    are"), and an object does not open a clause ("we tune Spark jobs well")."""
    if not (name.capitalised or name.inner_capital) or after >= len(words):
        return False
    if before is not None and not before.stop and not name.sentence_start and _joined(prose, before, name):
        return False  # a word just before it, no clause's opening: "we tune Spark jobs well"
    following = words[after]
    return following.lower in _AFTER_VERB or (following.text == following.lower and _adverb_only(following.lower))


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
    " essential important crucial necessary vital easy easier hard harder difficult helpful useful order"
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
    if len(piece) > 1 and piece[0].lower.endswith(ADJECTIVE_ENDS) and _written_as_name(piece[0]):
        # "Python-like pseudocode", "Moroccan-inspired rug": a name's modifier says which, the rest what; a common
        # word's is part of the term ("role-based access control", "plant-based meals")
        piece = piece[1:]
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


# A word that opens a noun phrase: after it, a verb's participle is the phrase's modifier ("a hashing algorithm",
# "the grilled chicken", "a stored procedure"), never the verb of a clause.
_DETERMINERS = frozenset("a an the this that these those my your our their his her its".split())  # noqa: SIM905


def _determiner(token: Token | None) -> bool:
    return token is not None and token.lower in _DETERMINERS
