"""Topic labels from the topics' c-TF-IDF keywords (cluster/phrases.py, which puts first the keyword a person
would file the topic under: a phrase or a name said in enough of its conversations). Pure functions.

- `label_from`: one topic's label: its first keyword that can name something (a name, or a noun phrase: never a
  verb or an adjective alone, "elevate", "political"; never with an interjection, preposition or contraction,
  "Wow"; never a vague noun numbered, "Part II"; no possessive, "Hamlet's": cluster/phrases.py makes no such
  keywords now, but an older chatmem's stored ones may hold them), or, when the first two are one-word names, a
  keyword that holds both ("Spark DataFrame" for "DataFrame", "Spark"). One word common all over English is
  never shown alone ("company", "morning", "Museum": cluster/keyword_rules.py `generic`; cluster/phrases.py
  leads with a phrase that says more when the topic's conversations share one, "morning routine"): it is shown
  with the next keyword, the one that adds most of the topic's conversations to it ("company and career",
  "selling and collectors"), unless it is shown in the plural: most of the topic's conversations say it, often
  so, and the topic is about those things ("games", "books"; cluster/keyword_rules.py `plural_alone`). No other
  two keywords are joined: adjectives paired name nothing ("stylish and dress"), and names joined were often a
  name's two fragments ("Hollywood and Angeles", "Everia and Chronicles" of "Chronicles of Everia") or one thing
  twice ("Sikh and Sikhism"; a broad word's partner never begins as it does, "birds and birding").
- `labels_for`: every topic's label, unique across the topics: topics take their labels largest first, and a
  topic whose label an earlier one took takes its next keyword that is still free (a phrase or a name first, a
  word that is not broad next, never a broad word alone); when none is, its label with a keyword that tells it
  apart ("SQL query (window functions)").

Incremental runs call `labels_for` over the base run's stored keywords, so a topic keeps its label.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from cluster.keyword_rules import can_pair, generic, nominal, plural_word
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
            told = sorted(words, key=lambda k: (not _nominal(k), generic(k)))  # a noun tells it apart best
            label = next(
                (f"{first} ({k})" for k in told if not _shares_word(k, first) and _key(f"{first} ({k})") not in taken),
                f"{first} (topic {topic})",
            )
        taken.add(_key(label))
        labels[topic] = label
    return labels


def _choices(first: str, keywords: Sequence[str]) -> list[str]:
    """The label, then the other keywords that are phrases or names, then the other nouns, best first in each;
    never a broad word alone ("birds", cluster/keyword_rules.py), a verb or an adjective ("longest")."""
    nouns = [k for k in keywords if k != first and _nominal(k) and not generic(k)]
    return [first, *[k for k in nouns if _specific(k)], *[k for k in nouns if not _specific(k)]]


def _nominal(phrase: str) -> bool:
    """A keyword a topic can be called (cluster/keyword_rules.py `nominal`: a name, or a noun phrase, never a verb
    or an adjective alone, "elevate", "political", nor with a preposition, an interjection or a contraction,
    "Wow", "they'll"), and not a vague noun numbered or described ("Part II", "typical steps"): keywords stored by
    an older chatmem may hold them (an incremental run labels its topics from the base run's keywords)."""
    return nominal(phrase) and not vague(key_of(phrase.split()))


def _key(label: str) -> str:
    return key_of(label.split()) if label.strip() else ""


def _shares_word(one: str, other: str) -> bool:
    return bool({w.lower() for w in one.split()} & {w.lower() for w in re.findall(r"[\w+#.-]+", other)})


def _specific(phrase: str) -> bool:
    return len(phrase.split()) > 1 or _named(phrase)


def label_from(keywords: Sequence[str], topic: int) -> str:
    """One topic's label: its first keyword that names something (`_nominal`), or a keyword that holds it and the
    second when both are one-word names, or a broad word with the next keyword that can follow it (`can_pair`:
    cluster/phrases.py puts the one that says most there; module doc); no keywords: "topic N". A possessive 's
    at the end is dropped ("Hamlet's": a stored keyword of an older chatmem, cluster/phrases.py shows "Hamlet"
    now)."""
    if not keywords:
        return f"topic {topic}"
    keywords = [_unpossessed(k) for k in keywords]
    keywords = [k for k in keywords if _nominal(k)] or keywords
    first = keywords[0]
    if len(keywords) > 1 and _one_name(first) and _one_name(keywords[1]):
        pair = {first.lower(), keywords[1].lower()}
        holding = next((k for k in keywords[2:] if pair <= {w.lower() for w in k.split()}), None)
        if holding is not None or not generic(first):
            return holding or first
    if generic(first) and not plural_word(first):  # a broad word in the plural: what the topic is about
        partner = next((k for k in keywords[1:] if _nominal(k) and can_pair(first, k)), None)
        return f"{first} and {partner}" if partner else first
    return first


def _unpossessed(phrase: str) -> str:
    return phrase[:-2] if phrase.endswith(("'s", "’s")) and len(phrase) > 2 else phrase


def _one_name(phrase: str) -> bool:
    return len(phrase.split()) == 1 and _named(phrase)


def _named(phrase: str) -> bool:
    """A phrase that holds a name: a capital letter away from a sentence start (shown forms are)."""
    return any(c.isupper() for c in phrase)
