"""Candidates of one segment that are one thing, or no thing: an acronym and its expansion folded into one, and the
stand-in names of code, schemas and textbook examples dropped (numbered variables, "Table1", "X value", "fname").
Used by the offline extractor (extract/offline.py) on its candidates before they are scored; part of its rules
(bump OFFLINE_VERSION there with any change here).
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import TYPE_CHECKING

from extract import lexicon
from extract.tokens import singular
from extract.word_kinds import GENERIC

if TYPE_CHECKING:
    from extract.offline_candidates import _Candidate as Candidate


_INITIALS_SKIP = frozenset(["of", "and", "&", "the", "for", "to", "in", "on"])


def fold_expansions(candidates: dict[tuple[str, ...], Candidate]) -> None:
    """An acronym and its expansion said in one segment are one candidate ("Directed Acyclic Graph" and "DAG",
    "Resilient Distributed Datasets" and "RDD", "DataFrame" and "DF", "data frame" and "df"): the expansion's
    mentions and forms join the acronym's, and the title is whichever form is said most."""
    short = {key[0]: c for key, c in candidates.items() if len(key) == 1 and 2 <= len(key[0]) <= 6 and key[0].isalpha()}
    acronyms = {word: c for word, c in short.items() if any(f.isupper() for f in c.forms)}
    for c in list(acronyms.values()):
        # "HDFS", "AWS": an acronym that ends in S is keyed singular ("hdf"); its initials are the written letters
        acronyms.update((f.casefold(), c) for f in c.forms if f.isupper() and f.isalpha())
    for key in [k for k in candidates if 1 <= len(k) <= 6]:
        if key not in candidates:
            continue  # a lower-case abbreviation already folded into its expansion
        if len(key) == 1:  # one word written in camel case: "DataFrame" and "DF"
            initials = max((_camel_initials(f) for f in candidates[key].forms), key=len, default="")
        else:
            initials = "".join(w[0] for w in key if w not in _INITIALS_SKIP)
        # An acronym said in capitals, or in lower case when it is no English word ("df" for "data frame").
        target = acronyms.get(initials)
        if target is None and len(key) > 1:
            # "RDBMS", "Relational Database Management System": a compound word gives the initials of its parts
            initials = next((i for i in _compound_initials(key) if i in acronyms), initials)
            target = acronyms.get(initials)
        if target is None and len(initials) >= 2 and not lexicon.parts_of_speech(initials):
            target = short.get(initials)
        if target is None or target is candidates[key] or target.key not in candidates:
            continue
        expansion = candidates.pop(key)
        if initials not in acronyms:  # a lower-case abbreviation ("df") names a variable: the expansion stays,
            del candidates[target.key]  # with its own title, and gains the abbreviation's mentions
            candidates[key] = expansion
            expansion.mentions.extend(target.mentions)
            expansion.first_user = expansion.first_user or target.first_user
            continue
        target.mentions.extend(expansion.mentions)
        target.forms.update(expansion.forms)
        target.cased_mid += expansion.cased_mid
        target.lower_mid += expansion.lower_mid
        target.first_user = target.first_user or expansion.first_user


# A full name of this many words at most whose first or last word the segment also writes alone: a person's ("Frank
# Lloyd" then "Lloyd", "Bai Long Ma" then "Bai"); longer runs are titles and institutions.
SHORT_FORM_OF = 3


def fold_short_names(candidates: dict[tuple[str, ...], Candidate], order: dict[int, int]) -> None:
    """A name written in full, then by one of its ends alone ("How did Frank Lloyd's identity ...", then "Lloyd
    explored ..."; "Bai Long Ma hesitated", then "Bai nodded"), is one candidate: the lone word's mentions join the
    full name's, as a story or a biography calls a person by the surname or the given name once introduced. Only
    where the full name comes first, is written in plain capitals ("AWS Lambda", "PySpark SQL" are products), is
    the only name in the segment that holds the word (a maker's or a family's: "Google" beside "Google Sheets" and
    "Google Drive"), and the word is never written in lower case ("Spark" of "spark of hope"). `order` gives each
    message's place in the segment (by `id`)."""
    holders: dict[str, list[Candidate]] = {}
    for key, candidate in candidates.items():
        if len(key) > 1 and (candidate.named or candidate.cased_mid):
            for word in set(key):
                holders.setdefault(singular(word), []).append(candidate)
    for key in [k for k, c in candidates.items() if len(k) == 1 and c.named and c.mentions]:
        short = candidates[key]
        owners = holders.get(key[0], [])
        if len(owners) != 1 or short.lower_mid or not short.cased_mid:
            continue
        if not all(_plain_capital(f) or f.islower() for f in short.forms):
            continue  # lower case: "Bai" opening a sentence, as _form writes it; "AWS" is an acronym
        full = owners[0]
        if (
            not 1 < len(full.key) <= SHORT_FORM_OF
            or not full.mentions
            or key[0]
            not in (
                singular(full.key[0]),
                full.key[-1],
            )
        ):
            continue
        if not all(all(_plain_capital(w) for w in f.split(" ")) for f in full.forms):
            continue
        if sum(
            _PERSONAL.search(m.view, max(0, start - PERSON_WINDOW), end + PERSON_WINDOW) is not None
            for m, start, end in short.mentions
        ) * 2 < len(short.mentions):
            continue  # "Apache Spark" then "Spark", "Seattle Mariners" and "Seattle": things, no one's short name
        spans = [(order[id(m)], start, end) for m, start, end in full.mentions]
        alone = [(m, start, end) for m, start, end in short.mentions if not _within(spans, order[id(m)], start, end)]
        if not alone or min(spans) > min((order[id(m)], start, end) for m, start, end in alone):
            continue  # "Spark" said before "Spark Streaming": a name of its own, that the longer one uses
        full.mentions.extend(alone)
        full.cased_mid += short.cased_mid
        full.first_user = full.first_user or short.first_user
        del candidates[key]


# A person is "he" or "she" around the mentions of their short name ("Lloyd explored ... in his films"); a product, a
# place or a team is "it" or "they".
_PERSONAL = re.compile(r"\b(?:he|she|his|her|him|hers|himself|herself)\b", re.IGNORECASE)


PERSON_WINDOW = 200


def _plain_capital(word: str) -> bool:
    """ "Lloyd", "Long": a word with its capital and no other ("AWS", "PySpark" are no person's name)."""
    letters = word.replace("'", "").replace("’", "").replace("-", "")
    return letters.isalpha() and letters[:1].isupper() and (letters[1:].islower() or len(letters) == 1)


def _within(spans: list[tuple[int, int, int]], message: int, start: int, end: int) -> bool:
    return any(m == message and s <= start and end <= e for m, s, e in spans)


def _compound_initials(key: tuple[str, ...]) -> list[str]:
    """The initials of an expansion where a word of it is a compound of two English words ("database": "db", so
    "relational database management system" is "rdbms"), one compound at a time; [] where no word is one. A
    hyphenated word is left out: "Server-Side Encryption" folded into SSE left "Encryption" alone, a concept of its
    own (a dev conversation's top five lost SSE)."""
    words = [w for w in key if w not in _INITIALS_SKIP]
    found = []
    for i, word in enumerate(words):
        for part in _compound_parts(word):
            found.append("".join(w[0] if j != i else w[0] + w[part] for j, w in enumerate(words)))
    return found


# Both parts of a compound word are English words at least this common and this long ("data" + "base", "frame" +
# "work", "key" + "board"), so that a word is not cut at any letter that happens to fit an acronym.
COMPOUND_PART_ZIPF = 3.5


COMPOUND_PART_CHARS = 3


@lru_cache(maxsize=1 << 12)
def _compound_parts(word: str) -> tuple[int, ...]:
    return tuple(
        k
        for k in range(COMPOUND_PART_CHARS, len(word) - COMPOUND_PART_CHARS + 1)
        if word.isalpha()
        and lexicon.zipf(word[:k]) >= COMPOUND_PART_ZIPF
        and lexicon.zipf(word[k:]) >= COMPOUND_PART_ZIPF
    )


_CAMEL_PART = re.compile(r"[A-Z][a-z]+")


def _camel_initials(form: str) -> str:
    """The initials of a word written as capitalised parts ("DataFrame" -> "df"); "" for any other word."""
    parts = _CAMEL_PART.findall(form)
    return "".join(p[0] for p in parts).casefold() if len(parts) >= 2 and "".join(parts) == form else ""


def drop_numbered(candidates: dict[tuple[str, ...], Candidate]) -> None:
    """Three or more one-word candidates that differ only in trailing digits ("XW0", "XW00", "XW10"; "col1",
    "col2", "col3") are numbered variables of some code or data, not names: all dropped."""
    families: dict[str, list[tuple[str, ...]]] = {}
    for key in candidates:
        if len(key) == 1 and key[0][-1:].isdigit():
            stem = key[0].rstrip("0123456789")
            if len(stem) >= 2 and stem.isalpha():
                families.setdefault(stem, []).append(key)
    for members in families.values():
        if len(members) >= 3:
            for key in members:
                del candidates[key]


# The letters code and maths name variables with: "x value", "taking x", "variable n" are no concepts.
_VARIABLE_LETTERS = frozenset("xyznijkm")


def drop_placeholders(candidates: dict[tuple[str, ...], Candidate]) -> None:
    """Names that code, SQL schemas and textbook examples give to stand-ins, not to things: a generic noun
    numbered or lettered ("Table1", "table2", "Table B", "List b", "col3"), a phrase with a variable's letter
    ("X value", "Taking x", "Variable x"), and a schema field written as one letter and a word ("fname",
    "lname", "ename": a word this rare made of a letter and a common word). "Vitamin C", "Plan B", "Python3"
    and "iPhone" stay: their word is not a generic one, or the whole is a common word itself."""
    for key in list(candidates):
        if len(key) == 1:
            word = key[0]
            stem = word.rstrip("0123456789")
            placeholder = (stem != word and (stem in GENERIC or singular(stem) in GENERIC)) or (
                len(word) >= 4
                and word.isalpha()
                and word[1:] in GENERIC
                and lexicon.zipf(word) < 2.0
                and not any(f[:1].isupper() and f[1:2].isupper() for f in candidates[key].forms)
            )
        else:
            letters = [w for w in key if len(w) == 1 and w.isalpha()]
            others = [w for w in key if w not in letters]
            placeholder = bool(letters) and (
                any(w in _VARIABLE_LETTERS for w in letters)
                or all(w in GENERIC or singular(w) in GENERIC for w in others)
            )
        if placeholder:
            del candidates[key]
