"""Candidates of one segment that are one thing, or no thing: an acronym and its expansion folded into one, and the
stand-in names of code, schemas and textbook examples dropped (numbered variables, "Table1", "X value", "fname").
Used by the offline extractor (extract/offline.py) on its candidates before they are scored; part of its rules
(bump OFFLINE_VERSION there with any change here).
"""

from __future__ import annotations

import re
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
