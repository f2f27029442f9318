"""The optional expand-or-stop step of recall: after the deterministic first pass, an LLM decides for each top
conversation tag whether to bring more of that conversation into the context or to stop there.

    expand(view, ranking, chosen, question, settings, llm, on_call) -> (Ranking or None, ExpandOutcome)

One chat completion per recall (plus retries on rate limits and server errors), with the extraction settings
(`extract.llm`, clients/llm.py) and a typed answer (contracts.memory.ExpandResponse, strict JSON schema). Every
attempt goes to `on_call` as an llm_calls row (segment_id `recall:<question hash>`). The deterministic default
is "stop" everywhere (the first pass stands): used when no LLM is configured, and when the answer is unusable
(an API error, not JSON, not the contract, a tag that was not asked about), with the reason logged and kept in
ExpandOutcome.fallback_reason. An endpoint that cannot be reached (refused, timed out), or that refuses the API
key (401, 403: clients.llm.REFUSED), is tried once per process: the first failure is logged once, and every
later recall falls back at once, sending nothing.
An expanded tag's best activated messages not yet in the context move to the top of the ranking (at most
`recall.expand_pieces` per tag); the budget still bounds the context.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import replace
from typing import Any

import numpy as np
import openai
from pydantic import ValidationError

from clients.llm import (
    Breaker,
    KeyRefused,
    RecordedCall,
    Reply,
    describe,
    endpoint,
    is_key_refusal,
    is_transient,
    make_client,
    refused_key,
    usage_fields,
)
from clients.shown import shown_text
from contracts.memory import ExpandDecision, ExpandOutcome, ExpandRequest, ExpandResponse, ExpandTag
from contracts.settings import LLMSettings, RecallSettings
from memory.index import MemoryIndex
from memory.recall import Ranking
from staging.llm_calls import CallRecorder, CallStatus

log = logging.getLogger(__name__)

PROMPT_VERSION = "recall-expand-v1"
RESPONSE_NAME = "expand_decisions"
SNIPPET_CHARS = 160
SYSTEM = (
    "You help an assistant recall a person's past conversations. For a question, you see the conversations a "
    "first search found most relevant, with the starts of the messages already recalled from each. For each "
    "conversation decide: 'expand' when more of it is likely needed to answer the question (the recalled "
    "messages only touch on it), or 'stop' when what is recalled is enough or the conversation is off topic. "
    "Answer with JSON: one decision per tag_id, each with a short reason."
)


class Unusable(Exception):
    """The LLM's answer cannot be used (the reason is one line); `quiet`: already said, not logged again."""

    def __init__(self, reason: str, *, quiet: bool = False) -> None:
        super().__init__(reason)
        self.quiet = quiet


# Endpoints that failed to connect, for the life of the process (an MCP server, an eval over many questions):
# every later recall falls back at once instead of paying the connect failure or the timeout again.
DOWN = Breaker()


def top_tags(index: MemoryIndex, ranking: Ranking, chosen: list[int], k: int) -> list[tuple[int, ExpandTag]]:
    """The `k` most activated conversation tags that have content in the context: (conversation code, tag)."""
    present = {int(index.conversation[i]) for i in chosen}
    codes = [c for c in np.argsort(-ranking.conversation_activation, kind="stable").tolist() if c in present]
    active = ranking.score > 0
    tags = []
    for code in codes[:k]:
        conversation = index.conversation_ids[code]
        mine = [i for i in chosen if int(index.conversation[i]) == code]
        more = int(np.count_nonzero(active & (index.conversation == code))) - len(mine)
        tags.append(
            (
                code,
                ExpandTag(
                    tag_id=f"conv:{conversation}",
                    title=index.titles.get(conversation) or conversation,
                    activation=round(float(ranking.conversation_activation[code]), 4),
                    recalled=[" ".join(shown_text(index.text(i)).split())[:SNIPPET_CHARS] for i in mine[:3]],
                    more=max(more, 0),
                ),
            )
        )
    return tags


def stop_everywhere(tags: list[ExpandTag], reason: str) -> list[ExpandDecision]:
    return [ExpandDecision(tag_id=t.tag_id, action="stop", reason=reason) for t in tags]


def body_for(llm: LLMSettings, request: ExpandRequest) -> dict[str, Any]:
    schema = ExpandResponse.model_json_schema()
    body: dict[str, Any] = {
        "model": llm.model,
        "messages": [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": request.model_dump_json()},
        ],
    }
    if llm.structured_output == "json_schema":
        body["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": RESPONSE_NAME, "schema": schema, "strict": True},
        }
    else:
        body["response_format"] = {"type": "json_object", "schema": schema}
    if llm.reasoning_effort is not None:
        body["reasoning_effort"] = llm.reasoning_effort
    if llm.seed is not None:
        body["seed"] = llm.seed
    return body


def parse(reply: Reply, request: ExpandRequest) -> list[ExpandDecision]:
    """The decisions, one per requested tag (a tag the model left out: stop); Unusable when the reply is not
    the contract or names a tag that was not asked about."""
    if reply.refusal:
        raise Unusable(f"the model refused: {' '.join(reply.refusal.split())[:200]}")
    try:
        answer = ExpandResponse.model_validate_json(reply.text or "")
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "the reply"
        raise Unusable(f"not the ExpandResponse contract: {where}: {first['msg']}") from None
    asked = [t.tag_id for t in request.tags]
    strangers = sorted({d.tag_id for d in answer.decisions} - set(asked))
    if strangers:
        raise Unusable(f"decisions for tags that were not asked about: {', '.join(strangers[:3])}")
    given = {d.tag_id: d for d in answer.decisions}
    return [given.get(t) or ExpandDecision(tag_id=t, action="stop", reason="not decided by the model") for t in asked]


def ask(llm: LLMSettings, request: ExpandRequest, on_call: CallRecorder | None) -> list[ExpandDecision]:
    """One chat completion, every attempt recorded; Unusable on failure. Rate limits and server errors are
    retried; a connection failure is not, and marks the endpoint down for the rest of the process (DOWN), as a
    refused key marks the key (clients.llm.REFUSED)."""
    if (reason := DOWN.down(llm)) is not None:
        raise Unusable(f"the LLM endpoint {endpoint(llm)} failed earlier in this process ({reason})", quiet=True)
    key = hashlib.sha256(request.model_dump_json().encode()).hexdigest()[:16]
    body = body_for(llm, request)
    call = RecordedCall(
        llm,
        segment_id=f"recall:{key}",
        cache_key=f"{key}:{llm.model}:{PROMPT_VERSION}",
        request={"model": llm.model, "messages": body["messages"], "prompt_version": PROMPT_VERSION},
        on_call=on_call,
    )
    try:
        reply = call.send(make_client(llm), body, retry=retried, breaker=DOWN)
    except openai.APIConnectionError as exc:  # the first one in this process: said once, then never asked again
        raise Unusable(
            f"the LLM endpoint {endpoint(llm)} cannot be reached ({describe(exc)}): not asked again in this"
            " process, every recall keeps its first pass (restart to try it again)"
        ) from None
    except KeyRefused as exc:  # said by the first recall that met it: quiet now, nothing was sent
        raise Unusable(
            f"{refused_key(endpoint(llm), exc.reason)} (not sent again in this process)", quiet=True
        ) from None
    except openai.OpenAIError as exc:
        if is_key_refusal(exc):  # the first in this process: said once, then never sent again (clients.llm.REFUSED)
            raise Unusable(
                f"{refused_key(endpoint(llm), describe(exc))}: not asked again in this process, every recall keeps"
                " its first pass (restart with the fixed key)"
            ) from None
        raise Unusable(f"the LLM call failed: {describe(exc)}") from None
    raw = reply.text if reply.text is not None else reply.refusal
    try:
        decisions = parse(reply, request)
    except Unusable as exc:
        text = (reply.text or "").strip()
        status: CallStatus = (
            "refused" if reply.refusal else "invalid_json" if not text.startswith("{") else "schema_violation"
        )
        call.record(status, raw_response=raw, error=str(exc), **usage_fields(reply))
        raise
    call.record("ok", raw_response=raw, **usage_fields(reply))
    return decisions


def retried(error: BaseException) -> bool:
    """Transient errors but connection failures: a recall waits on a live server's 429 or 5xx, never on a dead
    one (the retries against a refused port cost 15-20 s per recall)."""
    return is_transient(error) and not isinstance(error, openai.APIConnectionError)


def apply(
    index: MemoryIndex,
    ranking: Ranking,
    codes: dict[str, int],
    decisions: list[ExpandDecision],
    chosen: list[int],
    pieces: int,
) -> Ranking:
    """The ranking with each expanded tag's best activated messages not yet chosen moved to the top."""
    score = ranking.score.copy()
    top = float(score.max(initial=0.0))
    taken = set(chosen)
    boosted: list[int] = []
    for decision in decisions:
        if decision.action != "expand":
            continue
        code = codes[decision.tag_id]
        mine = np.flatnonzero((index.conversation == code) & (score > 0))
        fresh = [int(i) for i in mine[np.argsort(-score[mine], kind="stable")] if int(i) not in taken][:pieces]
        for i in fresh:
            score[i] = top + 1.0 + score[i]
        boosted += fresh
    if not boosted:
        return ranking
    first = np.array(sorted(boosted, key=lambda i: -score[i]), dtype=np.int64)
    rest = ranking.order[~np.isin(ranking.order, first)]
    order = np.concatenate([first, rest])
    return replace(ranking, score=score, order=order)


def expand(
    index: MemoryIndex,
    ranking: Ranking,
    chosen: list[int],
    question: str,
    settings: RecallSettings,
    llm: LLMSettings | None,
    on_call: CallRecorder | None = None,
) -> tuple[Ranking | None, ExpandOutcome]:
    """(a new ranking when some tag was expanded, else None; what was decided and by whom)."""
    pairs = top_tags(index, ranking, chosen, settings.expand_tags)
    tags = [t for _, t in pairs]
    if llm is None:
        reason = "no LLM configured (extract.llm): the deterministic default, stop"
        return None, ExpandOutcome(
            decided_by="default", decisions=stop_everywhere(tags, reason), fallback_reason=reason
        )
    if not tags:
        return None, ExpandOutcome(decided_by="default", decisions=[], fallback_reason="no tag to decide on")
    request = ExpandRequest(question=question, tags=tags)
    try:
        decisions = ask(llm, request, on_call)
    except Unusable as exc:
        if not exc.quiet:
            log.warning("recall - expand-or-stop: %s; keeping the first pass", exc)
        reason = str(exc)
        return None, ExpandOutcome(
            decided_by="default", decisions=stop_everywhere(tags, "fallback: " + reason[:280]), fallback_reason=reason
        )
    codes = {t.tag_id: code for code, t in pairs}
    changed = apply(index, ranking, codes, decisions, chosen, settings.expand_pieces)
    return (changed if changed is not ranking else None), ExpandOutcome(decided_by="llm", decisions=decisions)
