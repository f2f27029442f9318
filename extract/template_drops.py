"""Replays of the template rule that would drop every hypothesis again are skipped (issue 23).

A hypothesis that `Boilerplate.strip` drops is not handled (no concept_inputs row), so its extraction stays
unfinished and every later run reads, parses and strips it again: at 250k messages, 35,000 of 52,000 current
extractions, a third of the concepts stage's CPU in a run that brought 300 new messages. What `strip` decides
for one conversation depends only on the boilerplate sentences, the roles of the messages cited (the archive),
and what that conversation's unfinished extractions hand it, in reading order (the echoes it remembers are the
conversation's own). So a conversation whose every unfinished hypothesis was dropped in a run, handed the same
again, drops every one again and writes nothing: it is skipped, its extractions are not even looked at, and its
dropped count is carried. What it is handed changes only by events that forget its row in `template_drops`:
the archive changes the conversation, one of its extractions is added or removed, or a sentence it cites is found
or lost as boilerplate (extract/templates.py), or the concept store is emptied (the stage). So the run does not
recount it: at 1M generated messages, 67k remembered conversations held 181k of the 208k extractions, and signing
them again cost the stage ~10 s of a re-export. A conversation where a hypothesis was kept is handed less next
time: only the dropped ones, which it would drop every one of again (a kept hypothesis is no echo: `_left_dropped`),
so it is remembered in the same run, with what it will be handed. Before that, it was replayed once more and
remembered then: the first scheduled run after a first build read 35,321 of ~52,000 extractions at 250k messages
(23 s instead of ~7 s), 174,923 of 208,047 at 1M (55 s instead of ~19 s). The row's signature (the boilerplate
sentences its extractions cite, and each unfinished extraction's cache key with the indexes already handled, in
order) says what it was remembered for.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

from extract.templates import Boilerplate
from staging import template_state as state
from staging.concepts import handled_inputs
from staging.extractions import CurrentExtraction


def signatures(
    extractions: Iterable[CurrentExtraction],
    unfinished: Mapping[str, set[str]],
    boilerplate: Boilerplate,
    cited: Mapping[str, set[int]],
) -> dict[str, str]:
    """Conversation -> a digest of what its unfinished extractions hand the rule, for each holding conversation.

    Of the boilerplate, only the sentences those extractions cite (`cited`: cache key -> sentence keys,
    `template_state.sentences_cited`): `strip` compares each span with the boilerplate and nothing else of it, so a
    sentence found or lost elsewhere in the archive changes no other conversation's signature (with a digest of
    every boilerplate sentence, one sentence fewer anywhere replayed all 35k dropped extractions at 250k)."""
    handed: dict[str, list[tuple[str, list[str]]]] = {}
    for extraction in extractions:
        conversation = boilerplate.conversation_of.get(extraction.segment_id)
        if conversation is not None and extraction.cache_key in unfinished:
            handed.setdefault(conversation, []).append((extraction.cache_key, sorted(unfinished[extraction.cache_key])))
    found = {state.sentence_key(text) for text in boilerplate.sentences}
    signed = {}
    for conversation, parts in handed.items():
        citing = set().union(*(cited.get(cache_key, set()) for cache_key, _ in parts))
        sentences = sorted(citing & found)
        signed[conversation] = hashlib.sha256(json.dumps([sentences, parts]).encode()).hexdigest()
    return signed


def replayed(staging: sqlite3.Connection, boilerplate: Boilerplate) -> set[str]:
    """The conversations to skip: each remembered one that holds boilerplate would drop every hypothesis again.
    Their drops are counted."""
    holding = set(boilerplate.conversation_of.values())
    skip = set()
    for conversation, (_, dropped) in state.drops(staging).items():
        if conversation in holding:
            skip.add(conversation)
            boilerplate.dropped += dropped
    return skip


def remember(
    staging: sqlite3.Connection,
    signed: Mapping[str, str],
    skipped: set[str],
    boilerplate: Boilerplate,
    current: Sequence[CurrentExtraction],
    unfinished: Mapping[str, set[str]],
    cited: Mapping[str, set[int]],
) -> None:
    """After the run (in its last transaction, after the loop's writes): the conversations replayed where nothing
    was kept, with what they were handed, and those where something was kept and every hypothesis left unfinished
    was dropped, with what they will be handed (`_left_dropped`). `current`, `unfinished` and `cited`: the run's,
    read before its writes."""
    done = [c for c in signed if c not in skipped]
    state.forget_drops(staging, done)
    replays = {c: (signed[c], boilerplate.dropped_in[c]) for c in done if c not in boilerplate.kept_in}
    replays.update(_left_dropped(staging, boilerplate, current, unfinished, cited))
    state.remember_drops(staging, replays)


def _left_dropped(
    staging: sqlite3.Connection,
    boilerplate: Boilerplate,
    current: Sequence[CurrentExtraction],
    unfinished: Mapping[str, set[str]],
    cited: Mapping[str, set[int]],
) -> dict[str, tuple[str, int]]:
    """The conversations where `strip` kept a hypothesis and dropped others, whose hypotheses left unfinished now
    are exactly the dropped ones: conversation -> (the signature the next run would sign, how many).

    Their next run would hand the rule the dropped ones only, in the same order, and drop every one again: a
    hypothesis is dropped either for its own spans (boilerplate cited, no user message besides: the roles and the
    sentences only) or as an echo of such a drop earlier in the conversation; a kept hypothesis adds no echo, so
    taking the kept ones away changes no decision. The loop records every hypothesis it is handed (concept_inputs),
    so what is left unfinished is among the dropped ones, and it is all of them when as many are left: otherwise
    (one of them handled by another segment with the same extraction) the conversation is replayed as before."""
    wanted = {c for c in boilerplate.kept_in if boilerplate.dropped_in[c]}
    if not wanted:
        return {}
    mine = [e for e in current if e.cache_key in unfinished and boilerplate.conversation_of.get(e.segment_id) in wanted]
    keys = sorted({e.cache_key for e in mine})
    sizes = state.hypothesis_counts(staging, keys)
    left: dict[str, set[str]] = {}
    for key, done in handled_inputs(staging, keys).items():  # the run's writes included
        if any(f"{key}:{index}" not in done for index in range(sizes.get(key, 0))):
            left[key] = done
    count: Counter[str] = Counter()
    for extraction in mine:
        handled = left.get(extraction.cache_key)
        if handled is not None:
            conversation = boilerplate.conversation_of[extraction.segment_id]
            count[conversation] += sum(
                f"{extraction.cache_key}:{index}" not in handled for index in range(sizes[extraction.cache_key])
            )
    signed = signatures(mine, left, boilerplate, cited)
    return {c: (signed[c], count[c]) for c in wanted if count[c] == boilerplate.dropped_in[c]}
