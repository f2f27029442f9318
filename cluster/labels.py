"""Topic labels from the topics' c-TF-IDF keywords (cluster/phrases.py, which puts first the keyword a person
would file the topic under: a phrase or a name said in enough of its conversations). Pure functions.

- `label_from`: one topic's label: its first keyword that can name something (a name, or a noun phrase: never a
  verb or an adjective alone, "elevate", "political"; never with an interjection, preposition or contraction,
  "Wow"; never a vague noun numbered, "Part II"; no possessive, "Hamlet's": cluster/phrases.py makes no such
  keywords now, but an older chatmem's stored ones may hold them), or, when the first two are one-word names, a
  keyword that holds both ("Spark DataFrame" for "DataFrame", "Spark"). Never two keywords joined: common words
  paired name nothing ("stylish and dress"), and names joined were often a name's two fragments ("Hollywood and
  Angeles", "Everia and Chronicles" of "Chronicles of Everia") or one thing twice ("Sikh and Sikhism").
- `labels_for`: every topic's label, unique across the topics: topics take their labels largest first, and a
  topic whose label an earlier one took takes its next keyword that is still free (a phrase or a name first, a
  broad word last: cluster/keyword_rules.py); when none is, its label with a keyword that tells it apart
  ("SQL query (window functions)").

Incremental runs call `labels_for` over the base run's stored keywords, so a topic keeps its label.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from clients.parts_of_speech import can_be_noun, closed_class
from cluster.keyword_rules import broad
from cluster.phrases import key_of, vague


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
    """The label, then the other keywords that are phrases or names, then the other nouns, the broad ones last
    ("birding" before "birds", cluster/keyword_rules.py), then the rest, best first in each."""
    rest = [k for k in keywords if k != first]
    nouns = [k for k in rest if _nominal(k)]
    specific = [k for k in nouns if _specific(k)]
    plain = [k for k in nouns if k not in specific]
    return [
        first,
        *specific,
        *[k for k in plain if not broad(k)],
        *[k for k in plain if broad(k)],
        *[k for k in rest if not _nominal(k)],
    ]


def _nominal(phrase: str) -> bool:
    """A keyword a topic can be called: a name, or words whose last can be a noun. A label is a noun phrase: a
    verb ("elevate") or an adjective ("political", "stylish") alone names no topic, though it may lead the
    c-TF-IDF; a word lemminflect does not know counts as a noun (a product, a term), and so does a gerund. Never
    with a preposition, an interjection or a contraction ("Wow", "they'll"), nor a vague noun numbered or described
    ("Part II", "typical steps"): keywords stored by an older chatmem may hold them (an incremental run labels
    its topics from the base run's keywords)."""
    words = phrase.split()
    last = words[-1].strip(".,;:!?()'\"").lower() if words else ""
    if not last or any(closed_class(w) for w in words) or vague(key_of(words)):
        return False
    return _named(phrase) or can_be_noun(last) or last.endswith("ing")  # "time tracking", "birding"


def _key(label: str) -> str:
    return key_of(label.split()) if label.strip() else ""


def _shares_word(one: str, other: str) -> bool:
    return bool({w.lower() for w in one.split()} & {w.lower() for w in re.findall(r"[\w+#.-]+", other)})


def _specific(phrase: str) -> bool:
    return len(phrase.split()) > 1 or _named(phrase)


def label_from(keywords: Sequence[str], topic: int) -> str:
    """One topic's label: its first keyword that names something (`_nominal`), or a keyword that holds it and the
    second when both are one-word names (module doc); no keywords: "topic N". A possessive 's at the end is
    dropped ("Hamlet's": a stored keyword of an older chatmem, cluster/phrases.py shows "Hamlet" now)."""
    if not keywords:
        return f"topic {topic}"
    keywords = [_unpossessed(k) for k in keywords]
    keywords = [k for k in keywords if _nominal(k)] or keywords
    first = keywords[0]
    if len(keywords) > 1 and _one_name(first) and _one_name(keywords[1]):
        pair = {first.lower(), keywords[1].lower()}
        return next((k for k in keywords[2:] if pair <= {w.lower() for w in k.split()}), first)
    return first


def _unpossessed(phrase: str) -> str:
    return phrase[:-2] if phrase.endswith(("'s", "’s")) and len(phrase) > 2 else phrase


def _one_name(phrase: str) -> bool:
    return len(phrase.split()) == 1 and _named(phrase)


def _named(phrase: str) -> bool:
    """A phrase that holds a name: a capital letter away from a sentence start (shown forms are)."""
    return any(c.isupper() for c in phrase)
