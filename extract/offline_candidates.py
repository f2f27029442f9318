"""The offline extractor's candidates for one segment (extract/offline.py, step 2).

`_candidates`: every phrase of every message (extract/phrases.py) as a `_Candidate`, with each of its mentions in
the segment, how they are cased, who says them, and whether it is written as a literal value, a defined term or
code; then the words the user says that the segment writes as code (`_propose_coded`), the APIs a reply names in
inline code (`_propose_apis`) and the languages code blocks are marked as (`_index_fences`).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache

from extract import lexicon
from extract.offline_messages import _Message
from extract.phrases import phrases
from extract.tokens import Phrase, key_of, plausible_word, singular
from extract.word_kinds import QUALIFYING_OPENERS, _name_opener

REPLY_PHRASE_CHARS = 700  # noun phrases are proposed from a reply's opening only; names from all that is read


# A noun phrase with the modifier the plain rules cut ("a hashing algorithm", "performance tuning", "healthy meal
# ideas": extract.phrases, loose proposals) is a candidate when the segment says it so this many times, in one
# message or more (a reply that explains "video editing" three times, asked in another language, names its subject).
LOOSE_SPREAD = 2


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
    written: Counter[str] = field(default_factory=Counter)  # mentions written with a capital inside a sentence
    # user_mentions' count and the number of mentions it was counted over: the scoring and the choice ask it many
    # times per candidate, and mentions are only ever appended to (or extended), so an unchanged length is an
    # unchanged count
    _users: tuple[int, int] = field(default=(-1, 0), init=False, repr=False, compare=False)

    def proposals(self) -> int:
        return sum(self.forms.values())

    def user_mentions(self) -> int:
        counted, users = self._users
        if counted != len(self.mentions):
            users = sum(m.message.role == "user" for m, _, _ in self.mentions)
            self._users = (len(self.mentions), users)
        return users

    def title(self) -> str:
        """The most frequent cased form ("AWS Glue" over "aws glue"); an all-lower form gets a capital."""
        cased = {f: n for f, n in self.forms.items() if f != f.casefold()}
        if not cased and self.written:
            # proposed only as typed in lower case ("aws services"), written with capitals where the segment says it
            # again ("AWS services" in a reply past the part its phrases are taken from): "Aws services" is no one's
            cased = {f: n for f, n in self.written.items() if f.casefold() in self.forms}
        best = max((cased or self.forms).items(), key=lambda kv: (kv[1], kv[0] != kv[0].casefold(), kv[0]))[0]
        return best if best != best.casefold() else best[:1].upper() + best[1:]


def _candidates(messages: list[_Message]) -> dict[tuple[str, ...], _Candidate]:
    """Every phrase of every message, with each of its occurrences in the segment (names and phrases found in
    one message are looked for in all of them: "churn model" said by the user, repeated in a reply)."""
    found: dict[tuple[str, ...], _Candidate] = {}
    for message in messages:
        user = message.message.role == "user"
        phrase_chars = None if user else REPLY_PHRASE_CHARS
        for phrase in phrases(message.view, message.language, message.words, phrase_chars, heads=not user):
            candidate = found.get(phrase.key)
            if candidate is None:  # not setdefault: it would build (two Counters) a candidate for every phrase
                candidate = found[phrase.key] = _Candidate(phrase.key, language=message.language)
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
    _drop_owned(found)
    for key in [k for k, c in found.items() if not c.firm and (len(c.mentions) < LOOSE_SPREAD or _described(c))]:
        del found[key]  # "a larger dataset" once: the adjective says which one; "linguistic diversity" twice: a term
    _truecase(found)
    _own_possessive(found)
    return found


# A possessive that owns nothing: at a sentence's or a clause's end, or before a conjunction or an auxiliary ("like
# McDonald's or Uber", "McDonald's has expanded"); a quote or a blanked path after it may open what it owns.
_BARE_POSSESSIVE = re.compile(r"['’]s(?=\s*$|[.,!?;:)]|\s+(?:and|or|but|is|was|has|had|are|were)\b)")


def _own_possessive(found: dict[tuple[str, ...], _Candidate]) -> None:
    """ "McDonald's", "Macy's", "Trader Joe's": a name the segment writes with its possessive every time, twice at
    least with nothing after it for the possessive to own ("like McDonald's or Uber"), is written so: the 's is
    part of the name (it was titled "McDonald"). An owner ("Sid Meier's Civilization") always owns something."""
    for candidate in found.values():
        if not candidate.named or not candidate.mentions:
            continue
        ends = [m.view[end : end + 2] for m, _, end in candidate.mentions]
        if not all(e in ("'s", "’s") for e in ends):
            continue
        if sum(_BARE_POSSESSIVE.match(m.view, end) is not None for m, _, end in candidate.mentions) < 2:
            continue  # once may be a slip or an ellipsis ("Maven's and SBT's build files"); a brand is said so again
        candidate.forms = Counter({form + ends[0]: n for form, n in candidate.forms.items()})


_OWNED = re.compile(r"['’]s ")


def _drop_owned(found: dict[tuple[str, ...], _Candidate]) -> None:
    """A name joined to its owner across a possessive (extract.name_phrases._possessive_names) is no name of its
    own where the segment writes the owner or the run after it as a name alone as often: "Dell's Battery Meter"
    beside "Dell", "Microsoft's Visual Studio" beside "Visual Studio" are a maker and its product, each a name; so
    is a proper name's said once.
    "Assassin's Creed Odyssey", never "Assassin" nor "Creed Odyssey" alone, stays whole; so does "Ender's Game"
    beside the common word "game"."""
    joined: list[tuple[_Candidate, tuple[str, ...], tuple[str, ...]]] = []
    within: Counter[tuple[str, ...]] = Counter()  # mentions of an owner inside the names it owns
    for key, candidate in found.items():
        if candidate.named and all(_OWNED.search(form) for form in candidate.forms):
            form = next(iter(candidate.forms))
            size = len(_OWNED.split(form, 1)[0].split())
            owner, tail = key_of(list(key[:size])), key_of(list(key[size:]))
            joined.append((candidate, owner, tail))
            within[owner] += len(candidate.mentions)
    for candidate, owner, tail in joined:
        n = len(candidate.mentions)
        if _alone(found.get(tail), n) >= n or _alone(found.get(owner), within[owner]) >= n:
            del found[candidate.key]
        elif n < 2 and len(tail) > 1 and not any(lexicon.parts_of_speech(w) for w in owner):
            # "Uniqlo's Utility Chic" once: a brand's or a person's name owns a product or a work as often as it
            # names a title ("Knott's Berry Farm"), and one mention cannot tell; a common noun's ("Assassin's
            # Creed", "Runner's World") is a title's
            del found[candidate.key]


def _alone(part: _Candidate | None, inside: int) -> int:
    """How many of a name's mentions are written as a name (not in lower case) outside the `inside` ones."""
    if part is None or not part.named:
        return 0
    return len(part.mentions) - part.lower_mid - inside


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
                    elif (not first.sentence_start and first.capitalised) or (size > 2 and _name_opener(words_, i)):
                        # written as a name: with its capital inside a sentence, or whole where a common noun that
                        # opens the sentence opens the name too ("Point Reyes National Seashore")
                        candidate.cased_mid += 1
                        if first.all_caps or first.inner_capital:
                            candidate.written[message.view[first.start : words_[i + size - 1].end]] += 1
                    elif first.text == first.lower:
                        candidate.lower_mid += 1


@lru_cache(maxsize=1 << 14)
def _plurals(word: str) -> tuple[str, ...]:
    """The written forms that `singular` folds into this one ("partition" <- "partitions", "query" <- "queries")."""
    forms = [word + "s"]
    if word.endswith("y"):
        forms.append(word[:-1] + "ies")
    return tuple(f for f in forms if singular(f) == word)
