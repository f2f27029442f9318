"""What a topic is shown as: its label, size, c-TF-IDF keywords and representative segments, and its LLM name.

`describe_topics` after a full fit (keywords from a seeded sample of each topic's segment texts, representatives
nearest the topic's centre, topic_uid a content key of the model and the members); `topic_keywords` the keywords
alone, for an incremental run whose base's keywords are of another KEYWORDS_VERSION; `name_topics` replaces the
keyword label with the configured LLM's name, cached per topic_uid (cluster/labels_llm.py), after a full fit or
an incremental run (cluster/assign.py keeps the base run's keywords and representatives).
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Collection, Mapping, Sequence
from typing import Any

import numpy as np
import polars as pl

from clients.shown import read_text
from cluster import topics as fit_topics
from cluster.label_counts import LabelCounts
from cluster.objective import PhraseSample
from cluster.phrases import phrase_keys
from contracts.settings import LLMSettings, Settings
from staging import segments as segment_store
from staging.llm_calls import recorder


def describe_topics(
    archive: sqlite3.Connection,
    members: dict[str, tuple[str, ...]],
    points: np.ndarray[Any, Any],
    labels: np.ndarray[Any, Any],
    ids: list[str],
    key: str,
    settings: Settings,
    conversation_of: Mapping[str, str],
    read: np.ndarray[Any, np.dtype[np.bool_]] | None = None,
) -> list[dict[str, Any]]:
    """Label, size, keywords, representatives and content key of every topic (the representatives among the
    `read` points, the anchors, when a topic has any; `conversation_of` each segment's conversation: the
    keywords count each conversation once)."""
    cfg = settings.cluster
    groups = fit_topics.topic_members(ids, labels, cfg.label_docs, cfg.seed).sort("topic")
    keywords = _keywords(archive, members, groups, settings, conversation_of)
    names = fit_topics.labels_of(keywords)
    rows = []
    for topic, size, in_topic in groups.select("topic", "size", "members").iter_rows():
        uid = hashlib.sha256("\n".join([key, *in_topic]).encode()).hexdigest()[:16]
        reps = [ids[i] for i in fit_topics.representatives(points, labels, topic, cfg.representatives, read)]
        rows.append(
            {
                "topic": topic,
                "topic_uid": f"topic-{uid}",
                "label": names[topic],
                "size": size,
                "keywords": keywords[topic],
                "representatives": reps,
            }
        )
    return rows


def topic_keywords(
    archive: sqlite3.Connection,
    members: dict[str, tuple[str, ...]],
    links: Sequence[tuple[str, int]],
    settings: Settings,
    conversation_of: Mapping[str, str],
) -> dict[int, list[str]]:
    """Every topic's c-TF-IDF keywords from its segments (`links`: segment id, topic), as `describe_topics` computes
    them: an incremental run's, when its base's were computed under another KEYWORDS_VERSION (cluster/assign.py)."""
    cfg = settings.cluster
    ids = [segment for segment, _ in links]
    labels = np.array([topic for _, topic in links], dtype=np.int64)
    groups = fit_topics.topic_members(ids, labels, cfg.label_docs, cfg.seed).sort("topic")
    return _keywords(archive, members, groups, settings, conversation_of)


def _keywords(
    archive: sqlite3.Connection,
    members: dict[str, tuple[str, ...]],
    groups: pl.DataFrame,
    settings: Settings,
    conversation_of: Mapping[str, str],
) -> dict[int, list[str]]:
    topics = groups["topic"].to_list()
    chosen: dict[int, list[str]] = dict(zip(topics, groups["sample"].to_list(), strict=True))
    docs = segment_texts(archive, members, [s for c in chosen.values() for s in c])
    texts = {t: [docs.get(s, "") for s in chosen[t]] for t in topics}
    owners = {t: [conversation_of.get(s, s) for s in chosen[t]] for t in topics}
    titles = segment_store.conversation_titles(archive, {o for found in owners.values() for o in found})
    return fit_topics.ctfidf(texts, settings.cluster.keywords, owners, titles)


def name_topics(
    archive: sqlite3.Connection,
    staging: sqlite3.Connection,
    members: dict[str, tuple[str, ...]],
    topic_rows: list[dict[str, Any]],
    llm: LLMSettings,
    counts: LabelCounts,
    run_id: str,
) -> None:
    """Replace keyword labels with the LLM's names where it gives one (cached per topic_uid)."""
    from cluster.labels_llm import llm_labels  # the OpenAI SDK: only a run with an endpoint pays its import

    texts = segment_texts(archive, members, [r for t in topic_rows for r in t["representatives"]], shown=True)
    snippets = {t["topic"]: [texts.get(r, "") for r in t["representatives"]] for t in topic_rows}
    names = llm_labels(staging, llm, topic_rows, snippets, counts, on_call=recorder(staging, run_id))
    for row in topic_rows:
        row["label"] = names.get(row["topic"], row["label"])


# Bump when the keyword or label rules change what a topic's keywords are (their order included: the label reads
# it): an incremental run keeps its base's keywords (cluster/assign.py) unless they were computed under another
# version. 2: a broad word's longer form or partner ("morning routine", "company and career"). 3: a broad word most
# of a topic's conversations say, half of them in the plural, shown alone in the plural ("games"), else singular;
# what is asked for ("guidance", "recommendations") never a label or a partner alone. 4: no pieces of words nor
# misspellings ("clo", "departhent": cluster/keyword_rules.py `no_word`). 5: no adjective in -ing nor past participle
# as a noun ("charming", "known"), a broad word's partner said in a third of the topic's conversations and never a
# word of how or who ("vibe", "roles"), a capital that only names' last words gave is dropped ("Airlines", "Park"),
# no keyword from the assistant's words about itself ("AI language model"), a line of data ("Devil's Food") or a
# participle's clause (", covering topics"), "near" ends a keyword ("located near"). 6: no adjective in -ing as a
# keyword alone ("stunning"), a one-word label yields to a phrase with a name said as widely ("clause" -> "SQL
# query"). 7: one keyword per word family ("culture", never beside "cultural", "traditional"; cluster/word_family.py),
# no adjective alone ("rich", "stylish"), no numbered names of code ("XW0"), no quoted values of pasted JSON
# ("batter"), one member's title never leads ("Interactive Bakery Comparison").
KEYWORDS_VERSION = 7

PHRASE_ROWS = 5000  # sampled segments whose phrases the tuning objective's phrase coherence reads


def phrase_sample(
    archive: sqlite3.Connection,
    members: dict[str, tuple[str, ...]],
    sample_ids: list[str],
    seed: int,
    keys: Sequence[Collection[str]] | None = None,
) -> PhraseSample:
    """The phrases of at most PHRASE_ROWS of the tuning sample's segments (a seeded subsample; `rows` index
    `sample_ids`), for cluster.objective's phrase coherence; `keys`, when given, are the sample's phrase keys
    already read (row for row with `sample_ids`)."""
    rows = fit_topics.seeded_sample(len(sample_ids), PHRASE_ROWS, seed)
    if keys is not None:
        return PhraseSample.of(rows, [keys[i] for i in rows])
    texts = segment_texts(archive, members, [sample_ids[i] for i in rows])
    return PhraseSample.of(rows, [phrase_keys(texts.get(sample_ids[i], "")) for i in rows])


def segment_texts(
    archive: sqlite3.Connection, members: dict[str, tuple[str, ...]], segment_ids: list[str], *, shown: bool = False
) -> dict[str, str]:
    """The text of each wanted segment (its messages joined), read 2,000 segments at a time: the archive's, which
    the phrases' prose cleaner masks in place (cluster/phrases.py), or with `shown` each message as a reader is
    shown it (clients/shown.py: the excerpts an LLM names a topic from open with what was said, not a model's
    notes)."""
    texts: dict[str, str] = {}
    for start in range(0, len(segment_ids), 2000):
        chunk = segment_ids[start : start + 2000]
        rows = segment_store.messages_by_id(archive, [m for s in chunk for m in members.get(s, ())])
        for s in chunk:
            found = (str(rows[m]["text"]) for m in members.get(s, ()) if m in rows)
            texts[s] = "\n".join(t for t in map(read_text, found) if t) if shown else "\n".join(found)
    return texts
