"""LLM topic labels: when an extractor endpoint is configured (`extract.llm`), each topic gets a short name.

The model sees the topic's c-TF-IDF keywords and the openings of its representative segments, and answers
with a name of a few words. Answers are cached in staging.db by (topic_uid, model, prompt version): topic_uid
is a content key of the topic's members, so a re-run with the same topics makes no call. A failed or empty
answer keeps the c-TF-IDF label and is counted: a label is a convenience, never a reason to fail the stage.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Mapping, Sequence
from typing import Any

import openai
from openai import OpenAI
from openai.types.chat import ChatCompletionMessageParam

from clients.llm import Breaker, RecordedCall, describe, make_client, usage_fields
from cluster.label_counts import LabelCounts as LabelCounts  # re-exported: callers name it from here
from contracts.settings import LLMSettings
from staging import topics as store
from staging.llm_calls import CallRecorder, CallStatus

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


def llm_labels(
    staging: sqlite3.Connection,
    llm: LLMSettings,
    topics: Sequence[Mapping[str, object]],
    snippets: Mapping[int, Sequence[str]],
    counts: LabelCounts,
    on_call: CallRecorder | None = None,
) -> dict[int, str]:
    """A label per topic number, from the cache or one chat completion each; topics that failed are left out.

    The client, the retry rule and the backoff are the extractor's (clients.llm.RecordedCall); every attempt
    is handed to `on_call` as an llm_calls row (segment_id `topic:<topic_uid>`), as extraction calls are. Once
    the endpoint fails to connect, the topics left are not asked (they keep their keyword labels at once).
    """
    cached = store.cached_labels(staging, llm.model, PROMPT_VERSION)
    found: dict[int, str] = {}
    fresh: list[tuple[str, str]] = []
    client: OpenAI | None = None
    breaker = Breaker()  # an endpoint that cannot be reached costs one topic's retries, not every topic's
    for topic in topics:
        number, uid = int(str(topic["topic"])), str(topic["topic_uid"])
        if uid in cached:
            found[number] = cached[uid]
            counts.cached += 1
            continue
        client = client or make_client(llm)
        keywords = [str(k) for k in topic["keywords"]] if isinstance(topic["keywords"], list) else []
        counts.calls += 1
        label = _ask(client, llm, uid, label_messages(keywords, snippets.get(number, [])), on_call, breaker)
        if label is None:
            counts.failed += 1
            continue
        found[number] = label
        fresh.append((uid, label))
    store.cache_labels(staging, llm.model, PROMPT_VERSION, fresh)
    return found


def _ask(
    client: OpenAI,
    llm: LLMSettings,
    uid: str,
    messages: list[ChatCompletionMessageParam],
    on_call: CallRecorder | None,
    breaker: Breaker,
) -> str | None:
    """One topic's name, retried on transient errors; None (and a warning) when no usable name came back."""
    body: dict[str, Any] = {"model": llm.model, "messages": messages}
    if llm.reasoning_effort is not None:
        body["reasoning_effort"] = llm.reasoning_effort
    call = RecordedCall(
        llm,
        segment_id=f"topic:{uid}",
        cache_key=f"{uid}:{llm.model}:{PROMPT_VERSION}",
        request={"model": llm.model, "messages": messages, "prompt_version": PROMPT_VERSION},
        on_call=on_call,
    )
    try:
        reply = call.send(client, body, breaker=breaker)
    except openai.OpenAIError as exc:
        log.warning("cluster - topic %s: no LLM label (%s); keeping the keyword label", uid, describe(exc))
        return None
    label = clean_label(reply.text)
    status: CallStatus = "refused" if reply.refusal else "ok" if label else "schema_violation"
    call.record(
        status,
        raw_response=reply.text if reply.text is not None else reply.refusal,
        error=None if label else "no usable name in the reply",
        **usage_fields(reply),
    )
    return label
