"""memory/recall.py's links beyond the direct match: the reply to a question, speaker tags, and the second hop."""

from __future__ import annotations

from datetime import timedelta

import pytest
from memory_support import T0, memory

from contracts.memory import RecallRequest
from contracts.settings import RecallSettings
from memory.graph import EvidenceInput, MessageInput
from memory.recall import Switches, rank

ALONE = Switches(tags=False)  # no conversation/day prior: what a content gets from its own links only


def said(conversation: str, seq: int, author: str, text: str) -> MessageInput:
    when = (T0 + timedelta(minutes=seq)).isoformat()
    return MessageInput(f"{conversation}-{seq}", conversation, None, seq, "user", author, when, text, "jsonl")


def _score(
    messages: list[MessageInput],
    query: str,
    settings: RecallSettings,
    switches: Switches,
    evidence: tuple[EvidenceInput, ...] = (),
) -> dict[str, float]:
    index, config = memory(messages, evidence, settings=settings)
    ranking = rank(index, query, None, RecallRequest(query=query), config, switches)
    return {m.uuid: float(ranking.score[index.position[m.uuid]]) for m in messages}


def test_the_reply_to_a_question_gets_more_of_its_activation_than_a_plain_next_turn() -> None:
    """A turn that asks passes reply_weight of its activation to the turn after it; a statement passes next_weight."""
    chat = [
        said("c", 0, "Mel", "Do you play an instrument?"),
        said("c", 1, "Caro", "Yes, the violin since I was ten."),
        said("c", 2, "Mel", "I play an instrument too."),
        said("c", 3, "Caro", "Nice, the cello then."),
    ]
    linked = _score(chat, "play an instrument", RecallSettings(hop_weight=0.0), ALONE)
    assert linked["c-1"] > linked["c-3"] > 0
    plain = _score(chat, "play an instrument", RecallSettings(hop_weight=0.0, reply_weight=0.0), ALONE)
    assert plain["c-1"] == pytest.approx(plain["c-3"], rel=0.25)  # without the link: only NEXT/PREV's 0.2 each


def test_a_speaker_the_query_names_weighs_their_content_up_and_nobody_else() -> None:
    """Speaker tags: what a named person said counts 1 + speaker_prior times; a query naming nobody changes nothing."""
    chat = [
        said("c", 0, "Caroline", "I went hiking in the hills on Sunday"),
        said("d", 0, "Melanie", "I went hiking by the lake on Saturday"),
    ]
    config = RecallSettings(next_weight=0.0, reply_weight=0.0, hop_weight=0.0, speaker_prior=0.3)
    on = _score(chat, "When did Melanie go hiking?", config, ALONE)
    off = _score(chat, "When did Melanie go hiking?", config, Switches(tags=False, speakers=False))
    assert on["d-0"] == pytest.approx(1.3 * off["d-0"], rel=1e-5) and on["c-0"] == pytest.approx(off["c-0"])
    nobody = "When did they go hiking?"
    assert _score(chat, nobody, config, ALONE) == _score(chat, nobody, config, Switches(tags=False, speakers=False))


def test_the_second_hop_reaches_content_that_shares_a_cue_with_the_best_match() -> None:
    """Query -> best content -> its cues -> other content: a turn with none of the query's words is reached
    through an anchor it shares with the first hop's best match, and only with the second hop on. The anchor is
    a concept ("home country", evidence in the first turn) whose title the other turn says."""
    chat = [
        said("a", 0, "Caroline", "I moved here four years ago from my home country"),
        said("b", 0, "Caroline", "This necklace is from my grandma back in my home country, Sweden"),
        said("c", 0, "Melanie", "The pottery class was relaxing and creative"),
        said("d", 0, "Melanie", "Pottery with the kids on Sunday"),
    ]
    config = RecallSettings(next_weight=0.0, reply_weight=0.0, speaker_prior=0.0, hop_weight=0.1)
    anchor = (EvidenceInput("home-country", "home country", "entity", "a-0", 0.9),)
    on = _score(chat, "What happened four years ago?", config, ALONE, anchor)
    off = _score(chat, "What happened four years ago?", config, Switches(tags=False, second_hop=False), anchor)
    assert off["b-0"] == 0.0 and on["b-0"] > 0.0
    assert sorted(on, key=lambda k: -on[k])[:2] == ["a-0", "b-0"] and on["c-0"] == on["d-0"] == 0.0
    assert on["a-0"] - off["a-0"] <= 0.1 + 1e-6  # the hop adds at most hop_weight to anything
