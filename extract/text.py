"""Small, deterministic text helpers shared by segmentation, the offline extractor, the mapper and the concept
loop: token estimates, content words, normalised names. Pure Python, no model, no language data files.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable
from functools import lru_cache
from math import sqrt

# English function words and chat filler. Enough to keep keyword overlap and keyphrases about content; a
# full stopword list would not change segment boundaries much and would hide words like "home" or "work".
_STOPWORD_TEXT = """
    a about above after again against all almost also although am an and another any anyone anything are
    around as ask asked at away back be because been before being below best better between both but by can
    cannot could did do does doing done down during each either else enough etc even ever every everything
    few first for from further get gets getting give given go goes going good got great had has have having
    he her here hers herself him himself his how however i i'd i'll i'm i've if in include including into is
    isn't it it's its itself just keep know last least less let like lot lots made make makes making many
    may maybe me might more most much must my myself need needs new next no nor not now of off often oh ok
    okay on once one only or other others our ours ourselves out over own part please provide put quite
    rather really right said same say see seem seems should so some something sometimes still such sure
    take tell than thank thanks that that's the their theirs them themselves then there there's these they
    they're thing things think this those though through to too try trying two under until up upon us use
    used using very want wanted wants was way we we're well were what what's when where whether which while
    who whom whose why will with within without would yes yet you you'd you'll you're you've your yours
    yourself yourselves able already always among anyway certain different does doesn't don't due example
    feel find found help helpful here's hope however important including information interested kind
    looking look mean means might note overall particular possible probably recommend recommended several
    specific start suggest suggestions tips type types various want whatever yeah hi hello sorry
    especially since towards toward recently usually currently actually basically definitely together based
    around per simply exactly certainly generally typically perhaps instead quickly easily likely really
    incorporate improve increase create reduce consider considering considered wondering ensure explore
"""
STOPWORDS = frozenset(_STOPWORD_TEXT.split())
# How much of a user's message the offline rules read (concepts: extract/offline.py, facts: extract/facts.py): a
# user's paste of 20 MB says no more than its first pages, and every rule's cost grows with what it reads.
READ_USER_CHARS = 20_000
_CONTRACTION = re.compile(r"['’](?:ll|re|ve|d|m)$|n['’]t$", re.IGNORECASE)  # not 's: "grandma's" is content


def is_stopword(word: str) -> bool:
    """A function word, chat filler or contraction ("they'll", "don't")."""
    lower = word.casefold()
    return lower in STOPWORDS or _CONTRACTION.search(lower) is not None


_WORD = re.compile(r"[^\W_](?:[\w'’+#.-]*[^\W_+#.-]|[+#]+)?", re.UNICODE)
_SPACE = re.compile(r"\s+")
# Terminal escape sequences (CSI "ESC [ ... m", OSC "ESC ] ... BEL", two-byte ESC x), other control characters
# and bidi controls: pasted terminal output is full of them, and "31mWARNING" is no concept name.
TERMINAL_ESCAPES = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-_]?"
    r"|[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c]"
)
_NAME_JUNK = re.compile(r"[^\w+#'’ ]+")


def estimate_tokens(text: str) -> int:
    """ceil(characters / 4): the usual rule of thumb for English BPE tokenisers (OpenAI, Llama).

    It overestimates code and underestimates CJK text a little; a budget needs a cheap, stable number, not an
    exact one, and this one never depends on a tokenizer file. Every message costs at least 1.
    """
    return max(1, (len(text) + 3) // 4)


def words(text: str) -> list[str]:
    """Word tokens, case kept (letters, digits, inner apostrophes/hyphens/dots, trailing + or #: C++, C#)."""
    return _WORD.findall(text)


def word_spans(text: str) -> list[tuple[str, int, int]]:
    """Each word's match key (case-folded, plural-folded) with its start and end offsets in `text`."""
    return [(stem(m.group(0).casefold().replace("’", "'")), m.start(), m.end()) for m in _WORD.finditer(text)]


@lru_cache(maxsize=1 << 16)
def stem(word: str) -> str:
    """A light, deterministic plural folding ("renovations" -> "renovation", "classes" -> "class")."""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 4 and word.endswith(("sses", "shes", "ches", "xes")):
        return word[:-2]
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def content_words(text: str) -> list[str]:
    """Lower-cased, plural-folded words that are not stopwords, numbers kept (they tell 2023 from 2024)."""
    out = []
    for word in words(text):
        lower = word.casefold().replace("’", "'")
        if lower in STOPWORDS or (len(lower) < 2 and not lower.isdigit()):
            continue
        if lower.endswith("'s"):
            lower = lower[:-2]
        out.append(stem(lower))
    return out


def cosine(left: Counter[str], right: Counter[str]) -> float:
    """Cosine of two bags of words (0 when either is empty)."""
    if not left or not right:
        return 0.0
    dot = sum(count * right.get(word, 0) for word, count in left.items())
    norm = sqrt(sum(c * c for c in left.values())) * sqrt(sum(c * c for c in right.values()))
    return dot / norm if norm else 0.0


def fold(text: str) -> str:
    """Unicode-compatibility form, case-folded, whitespace collapsed: how evidence text is compared."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    folded = folded.replace("’", "'").replace("‘", "'").replace("“", '"').replace("”", '"')
    return _SPACE.sub(" ", folded).strip()


def clean_name(text: str) -> str:
    """A title, alias or quoted span as shown: whitespace collapsed, surrounding quotes and punctuation trimmed."""
    return _SPACE.sub(" ", text).strip().strip("\"'“”‘’`*.,;:!?()[]{}<>").strip()


def clean_title(text: str) -> str:
    """A concept's title or alias: `clean_name` without terminal escapes and control characters (a model may
    copy them from the chat; a title is shown on terminals). Evidence spans keep them: they quote verbatim."""
    return clean_name(TERMINAL_ESCAPES.sub(" ", text))


def name_key(text: str) -> str:
    """The exact-match key of a name: folded, punctuation (but + and #) dropped, so "C++" != "C"."""
    return _SPACE.sub(" ", _NAME_JUNK.sub(" ", fold(text).replace("-", " ").replace("_", " "))).strip()


def match_key(text: str) -> str:
    """`name_key` with each word's plural folded: the key exact matching and unique titles use ("Games" = "game")."""
    return " ".join(stem(word) for word in name_key(text).split())


def slug(text: str) -> str:
    """A concept_id: lowercase words joined by hyphens ("C++" -> "c-plus-plus", "C#" -> "c-sharp")."""
    key = name_key(text).replace("+", " plus ").replace("#", " sharp ").replace("'", "").replace("’", "")
    parts = [p for p in re.split(r"[^\w]+", key) if p]
    return "-".join(parts)


def short_hash(*parts: str, size: int = 16) -> str:
    """A stable hex id from text parts (blake2b); `size` bytes, so 2*size hex digits."""
    joined = "\x1f".join(parts)
    return hashlib.blake2b(joined.encode("utf-8"), digest_size=size).hexdigest()


def char_ngrams(text: str, n: int = 3) -> Counter[str]:
    """Character n-grams of the padded, folded text (the default similarity's vectors)."""
    padded = f" {name_key(text)} "
    return Counter(padded[i : i + n] for i in range(max(1, len(padded) - n + 1)))


def unique(values: Iterable[str]) -> list[str]:
    """First occurrence wins, order kept."""
    return list(dict.fromkeys(values))
