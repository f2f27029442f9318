"""LLM topic labels: when an extractor endpoint is configured (`extract.llm`), each topic gets a short name.

The model sees the topic's c-TF-IDF keywords and the openings of its representative segments, and answers
with a name of a few words. Answers are cached in staging.db by (topic_uid, model, prompt version): topic_uid
is a content key of the topic's members, so a re-run with the same topics makes no call. A failed or empty
answer keeps the c-TF-IDF label and is counted: a label is a convenience, never a reason to fail the stage.
"""

from __future__ import annotations

import logging
import os
import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from openai.types.chat import ChatCompletionMessageParam

from contracts.settings import LLMSettings
from staging import topics as store

log = logging.getLogger(__name__)

PROMPT_VERSION = "topic-label-v1"
SNIPPET_CHARS = 300
MAX_LABEL_CHARS = 60


def label_messages(keywords: Sequence[str], snippets: Sequence[str]) -> list[ChatCompletionMessageParam]:
    """The prompt (versioned by PROMPT_VERSION): keywords and a few excerpts in, a short name out."""
    excerpts = "\n".join(f"- {' '.join(s.split())[:SNIPPET_CHARS]}" for s in snippets if s.strip())
    return [
        {
            "role": "system",
            "content": "You name topics found in a person's chat history. Answer with the topic's name only: "
            "2 to 5 words, no quotes, no punctuation at the end.",
        },
        {"role": "user", "content": f"Keywords: {', '.join(keywords)}\nExcerpts:\n{excerpts}\nName:"},
    ]


def clean_label(text: str | None) -> str | None:
    """The first line, without quotes, a 'Name:' prefix or end punctuation; None when nothing usable is left."""
    if not text:
        return None
    line = next((part.strip() for part in text.strip().splitlines() if part.strip()), "")
    line = line.removeprefix("Name:").strip().strip("\"'`*").rstrip(".!").strip()
    return line[:MAX_LABEL_CHARS] or None


@dataclass(slots=True)
class LabelCounts:
    calls: int = 0
    cached: int = 0
    failed: int = 0


def llm_labels(
    staging: sqlite3.Connection,
    llm: LLMSettings,
    topics: Sequence[Mapping[str, object]],
    snippets: Mapping[int, Sequence[str]],
    counts: LabelCounts,
) -> dict[int, str]:
    """A label per topic number, from the cache or one chat completion each; topics that failed are left out."""
    import openai

    cached = store.cached_labels(staging, llm.model, PROMPT_VERSION)
    found: dict[int, str] = {}
    fresh: list[tuple[str, str]] = []
    client: openai.OpenAI | None = None
    for topic in topics:
        number, uid = int(str(topic["topic"])), str(topic["topic_uid"])
        if uid in cached:
            found[number] = cached[uid]
            counts.cached += 1
            continue
        if client is None:
            secret = llm.api_key.get_secret_value() if llm.api_key else None
            client = openai.OpenAI(
                base_url=llm.base_url,
                api_key=secret or os.environ.get("OPENAI_API_KEY") or "unused",  # local servers ignore it
                timeout=llm.timeout_s,
                max_retries=llm.max_retries,
            )
        keywords = [str(k) for k in topic["keywords"]] if isinstance(topic["keywords"], list) else []
        counts.calls += 1
        try:
            reply = client.chat.completions.create(
                model=llm.model,
                messages=label_messages(keywords, snippets.get(number, [])),
                reasoning_effort=llm.reasoning_effort if llm.reasoning_effort is not None else openai.omit,
            )
            label = clean_label(reply.choices[0].message.content if reply.choices else None)
        except openai.OpenAIError as exc:
            log.warning("cluster - topic %d: no LLM label (%s); keeping the keyword label", number, exc)
            label = None
        if label is None:
            counts.failed += 1
            continue
        found[number] = label
        fresh.append((uid, label))
    store.cache_labels(staging, llm.model, PROMPT_VERSION, fresh)
    return found
