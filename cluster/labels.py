"""Topic labels from the topics' c-TF-IDF keywords (cluster/phrases.py, which puts first the keyword a person
would file the topic under: a phrase or a name said in enough of its conversations). Pure functions.

- `label_from`: one topic's label: its first keyword; with the second when both are one-word names that share
  nothing and are not one thing's two names ("Hive and Sqoop"; not "AWS and Amazon Web Services"), or rather
  a keyword that holds both ("Spark DataFrame" over "DataFrame and Spark"). Never common words paired
  ("stylish and dress" names nothing), a phrase joined to a fragment ("Calculator and Presets"), nor "a / b".
- `labels_for`: every topic's label, unique across the topics: topics take their labels largest first, and a
  topic whose label an earlier one took takes its next keyword that is still free (a phrase or a name first);
  when none is, its label with a keyword that tells it apart ("SQL query (window functions)").

Incremental runs call `labels_for` over the base run's stored keywords, so a topic keeps its label.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from cluster.phrases import key_of


def labels_for(keywords: Mapping[int, Sequence[str]]) -> dict[int, str]:
    """Each topic's label (`keywords`: per topic, best first), no two alike (case and a plural s aside)."""
    taken: set[str] = set()
    labels: dict[int, str] = {}
    for topic in sorted(keywords):
        words = list(keywords[topic])
        first = label_from(words, topic)
        label = next((c for c in _choices(first, words) if _key(c) not in taken), None)
        if label is None:
            label = next(
                (f"{first} ({k})" for k in words if not _shares_word(k, first) and _key(f"{first} ({k})") not in taken),
                f"{first} (topic {topic})",
            )
        taken.add(_key(label))
        labels[topic] = label
    return labels


def _choices(first: str, keywords: Sequence[str]) -> list[str]:
    """The label, then the other keywords that are phrases or names, then the rest, best first in each."""
    rest = [k for k in keywords if k != first]
    return [first, *[k for k in rest if _specific(k)], *[k for k in rest if not _specific(k)]]


def _key(label: str) -> str:
    return key_of(label.split()) if label.strip() else ""


def _shares_word(one: str, other: str) -> bool:
    return bool({w.lower() for w in one.split()} & {w.lower() for w in re.findall(r"[\w+#.-]+", other)})


def _specific(phrase: str) -> bool:
    return len(phrase.split()) > 1 or _named(phrase)


def label_from(keywords: Sequence[str], topic: int) -> str:
    """One topic's label from its keywords, the lead first (module doc); no keywords: "topic N"."""
    if not keywords:
        return f"topic {topic}"
    first = keywords[0]
    if len(keywords) < 2:
        return first
    second = keywords[1]
    if not (_one_name(first) and _one_name(second)) or first.lower() == second.lower():
        return first
    if _abbreviates(first, second) or _abbreviates(second, first):  # "AWS" / "Amazon Web Services"
        return first
    pair = {first.lower(), second.lower()}
    holding = next((k for k in keywords[2:] if pair <= {w.lower() for w in k.split()}), None)
    return holding or f"{first} and {second}"


def _one_name(phrase: str) -> bool:
    return len(phrase.split()) == 1 and _named(phrase)


_INITIALS_SKIP = frozenset(["of", "and", "&", "the", "for", "to", "in", "on"])


def _abbreviates(short: str, long: str) -> bool:
    """`short` is one word made of the initials of `long`'s words ("AWS", "Amazon Web Services") or of its
    capitalised parts ("DF", "DataFrame"): two names of one thing."""
    words = long.split()
    if len(short.split()) != 1 or not short.isalpha() or len(short) < 2:
        return False
    initials = "".join(w[0] for w in words if w.lower() not in _INITIALS_SKIP)
    if len(words) == 1:
        initials = "".join(re.findall(r"[A-Z]", long))
    return initials.lower() == short.lower()


def _named(phrase: str) -> bool:
    """A phrase that holds a name: a capital letter away from a sentence start (shown forms are)."""
    return any(c.isupper() for c in phrase)
