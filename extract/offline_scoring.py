"""How much a candidate is what its segment is about (extract/offline.py, step 3).

`_score`: a candidate's log-odds of being a concept a person would list (weights fitted on the dev labels), after
the bars a single word (`_single_word_ok`), a reply-only phrase and a common word must pass; with the checks
`propose` runs on the scores: a misspelling of a word the segment spells right (`_spelt_right`) and the mentions a
longer name holds (`_inside_longer`).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from functools import lru_cache

from extract import lexicon
from extract.offline_candidates import _Candidate
from extract.offline_messages import _Message
from extract.tokens import key_of, singular
from extract.word_kinds import ADJECTIVE_ENDS, ALONE_GENERIC, GENERIC, capital_marks_name

# A single common word is a concept only under this background frequency (Zipf: "salary" 4.2, "cache" 3.6, "sqoop"
# 0); a noun the user says and the replies repeat gets this much more per doubling of its mentions.
COMMON_WORD_ZIPF = 3.4


REPEATED_ZIPF_STEP = 0.1


# The least specificity of a one-word name in a language that capitalises names only (`_specificity`).
NAME_SPECIFICITY = 0.35


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


# A Roman numeral in capitals, one to thirty-nine ("II", "IV", "XII"; not "XL", a size, nor "VIX", an index).
_ROMAN_NUMERAL = re.compile(r"X{0,3}(?:IX|IV|V?I{0,3})")


def _single_word_ok(candidate: _Candidate) -> bool:
    """One word is a concept when it is a rare term ("backpropagation", "Sqoop"), an acronym or inner-capital
    name ("AWS", "PySpark"), or a word written with its capital inside sentences more often than without
    ("Spark", "Glue"); a common word alone ("model", "schedule", "salaries") names nothing in particular, and
    a word no list holds, said once, is more likely a typo than a term."""
    word = candidate.key[0]
    forms = list(candidate.forms)
    if word.endswith(ADJECTIVE_ENDS):
        return False  # "Moroccan-inspired" in "a Moroccan-inspired menu": a modifier, the menu is the thing
    if word in ALONE_GENERIC:
        return False  # "Schema": what every table has, a concept only with a word that says which ("schema evolution")
    if all(_ROMAN_NUMERAL.fullmatch(f) for f in forms):
        return False  # "II" of "The Last of Us Part II", "VI" of "Civilization VI": a name's number, no name alone
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


# A common noun the user says and the replies repeat is listed after a segment's terms under this much more
# background frequency than COMMON_WORD_ZIPF ("cuisine" 3.8, "sexism" 3.5; "way" 5.9 stays out).
TAIL_ZIPF_STEP = 0.6


def _common_noun_repeated(candidate: _Candidate) -> bool:
    """ "Brazilian food ... cuisine": a noun the user says that the replies say again, common enough that it
    ranks nowhere (`_single_word_ok`) but no commoner than TAIL_ZIPF_STEP above the bar."""
    user = candidate.user_mentions()
    word = candidate.key[0]
    if word.endswith(ADJECTIVE_ENDS):
        return False  # "AI-powered", which the lexicon guesses is a noun: a modifier (`_single_word_ok`)
    if not user or len(candidate.mentions) <= user or "NOUN" not in lexicon.parts_of_speech(word):
        return False
    return lexicon.zipf(word, candidate.language) < COMMON_WORD_ZIPF + TAIL_ZIPF_STEP


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


# The small words a title keeps in lower case between its capitalised words ("Once Upon a Time in Hollywood").
_TITLE_SMALL = frozenset(
    ("of", "&", "de", "the", "a", "an", "and", "in", "on", "to", "for", "with", "at", "from", "by")
)


def _full_name(title: str) -> bool:
    """ "Café Müller", "AWS Glue", "Volkswagen Transporter", "Once Upon a Time in Hollywood": every word
    capitalised but a title's small words inside (a name, not "Hive table")."""
    words = title.split()
    if not words or words[-1] in _TITLE_SMALL:
        return False
    return all(w[:1].isupper() or w[:1].isdigit() or w in _TITLE_SMALL for w in words)


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


# A phrase only the replies say counts where they say it this many times (unless written as a name, ...: `_score`).
REPLY_ONLY_SAID = 3


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


def _score(candidate: _Candidate, title_words: set[str], asked: _Asked | None = None, *, tail: bool = False) -> float:
    """How much this candidate is what the segment is about (0: not a concept at all). With `tail`, as a term listed
    after the segment's own (extract.offline._tail): a phrase the replies say once or twice, and a common noun the user
    says and the replies repeat ("cuisine", "sexism"), are scored all the same."""
    key = candidate.key
    if not candidate.mentions or all(w in GENERIC or singular(w) in GENERIC for w in key):
        return 0.0
    user = candidate.user_mentions()
    if user == 0 and len(candidate.mentions) < 2 and len(key) == 1 and not candidate.cased_mid and not candidate.head:
        return 0.0  # one lower-case word said once in a reply (most candidates: decided before any lookup)
    if len(key) == 1 and not _single_word_ok(candidate) and not (tail and _common_noun_repeated(candidate)):
        return 0.0
    specificity = _specificity(candidate)
    if specificity < 0.2:
        return 0.0
    other = len(candidate.mentions) - user
    named_term = candidate.cased_mid > 0 and specificity >= 0.6
    echo = len(key) > 1 and asked is not None and not _verb_first(candidate) and asked.all_said(key)
    if user == 0 and other < REPLY_ONLY_SAID and not named_term and not echo and not candidate.head and not tail:
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
