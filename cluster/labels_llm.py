"""LLM topic labels: when an extractor endpoint is configured (`extract.llm`), each topic gets a short name.

The model sees the topic's c-TF-IDF keywords and the openings of its representative segments, and answers
with a name of a few words. Answers are cached in staging.db by (topic_uid, model, prompt version): topic_uid
is a content key of the topic's members, so a re-run with the same topics makes no call. A failed or empty
answer keeps the c-TF-IDF label and is counted: a label is a convenience, never a reason to fail the stage.
An endpoint that refuses the API key (401, 403) is said once, and the topics left are not asked: they keep
their keyword labels, nothing is cached for them, and the stage is left unfinished so that the next run (with a
fixed key) names them.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Mapping, Sequence
from typing import Any

import openai
from openai import OpenAI
from openai.types.chat import ChatCompletionMessageParam

from clients.llm import (
    Breaker,
    KeyRefused,
    RecordedCall,
    describe,
    endpoint,
    is_key_refusal,
    make_client,
    refused_key,
    usage_fields,
)
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
    refused: str | None = None
    for topic in topics:
        number, uid = int(str(topic["topic"])), str(topic["topic_uid"])
        if uid in cached:
            found[number] = cached[uid]
            counts.cached += 1
            continue
        if refused is not None:  # the key was refused: not asked, left for the next run
            counts.refused += 1
            continue
        client = client or make_client(llm)
        keywords = [str(k) for k in topic["keywords"]] if isinstance(topic["keywords"], list) else []
        try:
            label = _ask(client, llm, uid, label_messages(keywords, snippets.get(number, [])), on_call, breaker)
        except KeyRefused as exc:  # refused earlier in this process: nothing sent
            refused, counts.refused = refused_key(endpoint(llm), exc.reason), counts.refused + 1
            continue
        except openai.OpenAIError as exc:  # 401 or 403 now (_ask raises nothing else)
            refused, counts.refused = refused_key(endpoint(llm), describe(exc)), counts.refused + 1
            counts.calls += 1
            continue
        counts.calls += 1
        if label is None:
            counts.failed += 1
            continue
        found[number] = label
        fresh.append((uid, label))
    store.cache_labels(staging, llm.model, PROMPT_VERSION, fresh)
    if refused is not None:
        log.warning(
            "cluster - %s; %d topic(s) keep their keyword label until then (nothing cached)", refused, counts.refused
        )
    return found


def _ask(
    client: OpenAI,
    llm: LLMSettings,
    uid: str,
    messages: list[ChatCompletionMessageParam],
    on_call: CallRecorder | None,
    breaker: Breaker,
) -> str | None:
    """One topic's name, retried on transient errors; None (and a warning) when no usable name came back. A
    refused key (clients.llm.is_key_refusal) is raised."""
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
        if is_key_refusal(exc):
            raise  # every other topic would be refused the same way: llm_labels stops asking
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
