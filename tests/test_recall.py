"""memory/recall.py on hand-made memories: `at`, decay from `at`, scope, budget, order, paths, time expressions."""

from __future__ import annotations

import math
from dataclasses import replace
from datetime import timedelta

import numpy as np
import pytest
from memory_support import T0, memory, msg

from contracts.memory import RecallRequest, RecallScope
from contracts.settings import RecallSettings
from memory.graph import EvidenceInput
from memory.recall import Switches, rank, recall, to_result

TRIP = [
    msg("trip", 0, "We are planning a trip to Lisbon in May", day=0),
    msg("trip", 1, "Lisbon trams are lovely, take tram 28 early", day=0, role="assistant", minute=1),
    msg("trip", 2, "Booked the Lisbon hotel near Alfama", day=0, minute=2),
    msg("garden", 0, "The tomatoes in my garden need more sun", day=3),
    msg("garden", 1, "Move the tomatoes to the south side", day=3, role="assistant", minute=1),
    msg("later", 0, "Back from Lisbon: the tram rides were the best part", day=30, source="chatgpt"),
    msg("bread", 0, "My sourdough starter smells of acetone", day=10),
]


def _request(query: str, **kwargs: object) -> RecallRequest:
    return RecallRequest(query=query, **kwargs)  # type: ignore[arg-type]


def test_nothing_said_after_at_comes_back() -> None:
    """`at` recalls the memory as it stood: the day-30 message about Lisbon is not a candidate on day 5."""
    index, settings = memory(TRIP)
    early = recall(index, None, _request("Lisbon tram", at=T0 + timedelta(days=5)), settings)
    assert early.pieces and all(
        p.created_at is not None and p.created_at <= T0 + timedelta(days=5) for p in early.pieces
    )
    assert "later-0" not in {p.content_id for p in early.pieces}
    late = recall(index, None, _request("Lisbon tram", at=T0 + timedelta(days=31)), settings)
    assert "later-0" in {p.content_id for p in late.pieces}


def test_decay_of_tag_activation_is_measured_from_at_not_the_wall_clock() -> None:
    """The tag prior of a message is session_prior x tag activation x exp(-λ·days between it and `at`)."""
    config = RecallSettings(decay_lambda_per_day=0.1, day_prior=0.0)
    index, settings = memory(TRIP, settings=config)
    i = index.position["trip-0"]
    for days in (1, 20):
        request = _request("Lisbon hotel", at=T0 + timedelta(days=days))
        ranking = rank(index, request.query, None, request, settings)
        conversation = int(index.conversation[i])
        expected = settings.session_prior * ranking.conversation_activation[conversation] * math.exp(-0.1 * days)
        assert ranking.tag[i] == np.float32(expected) or abs(float(ranking.tag[i]) - expected) < 1e-5
    off = rank(
        index,
        "Lisbon hotel",
        None,
        _request("Lisbon hotel", at=T0 + timedelta(days=20)),
        settings,
        Switches(decay=False),
    )
    assert (
        abs(float(off.tag[i]) - settings.session_prior * float(off.conversation_activation[int(index.conversation[i])]))
        < 1e-5
    )


def test_scope_restricts_conversations_sources_and_time_window() -> None:
    """Scoped recall: only the named conversations, the named sources, the window."""
    index, settings = memory(TRIP)
    only_trip = recall(index, None, _request("Lisbon", scope=RecallScope(conversation_ids=["trip"])), settings)
    assert only_trip.pieces and {p.conversation_id for p in only_trip.pieces} == {"trip"}
    chatgpt = recall(index, None, _request("Lisbon", scope=RecallScope(sources=["chatgpt"])), settings)
    assert [p.content_id for p in chatgpt.pieces] == ["later-0"]
    window = RecallScope(since=T0 + timedelta(days=2), until=T0 + timedelta(days=12))
    windowed = recall(index, None, _request("tomatoes sourdough Lisbon", scope=window), settings)
    assert windowed.pieces and {p.conversation_id for p in windowed.pieces} <= {"garden", "bread"}


def test_the_context_fits_the_budget_and_follows_the_conversation_order() -> None:
    """Pieces never exceed the budget; with order=time they come out by conversation (oldest first), then by seq."""
    index, settings = memory(TRIP)
    full = recall(index, None, _request("Lisbon tram hotel tomatoes", budget_tokens=10_000, order="time"), settings)
    assert len(full.pieces) >= 4
    small = recall(index, None, _request("Lisbon tram hotel tomatoes", budget_tokens=25), settings)
    assert 0 < small.tokens <= 25 and sum(p.tokens for p in small.pieces) == small.tokens
    keys = [(p.created_at, p.seq) for p in full.pieces]
    firsts: dict[str, object] = {}
    for p in full.pieces:
        firsts.setdefault(p.conversation_id, p.created_at)
    order = [p.conversation_id for p in full.pieces]
    assert order == sorted(order, key=lambda c: (firsts[c], c))
    for conversation in set(order):
        seqs = [p.seq for p in full.pieces if p.conversation_id == conversation]
        assert seqs == sorted(seqs)
    assert keys  # every piece has a time


def test_every_piece_says_why_it_is_there() -> None:
    """The activation path starts at the query, ends at the piece, and names a cue when one carried it."""
    evidence = [EvidenceInput("k", "Lisbon hotel booking", "event", "trip-2", 0.9)]
    index, settings = memory(TRIP, evidence)
    result = recall(index, None, _request("hotel booking"), settings)
    best = min(result.pieces, key=lambda p: p.rank)
    assert best.content_id == "trip-2" and best.path[0].kind == "query" and best.path[-1].id == "trip-2"
    assert any(step.kind == "cue" and step.label == "Lisbon hotel booking" for step in best.path)
    assert result.cues and result.cues[0].label in {"Lisbon hotel booking", "hotel"}


def test_an_explicit_time_expression_moves_other_content_down_not_out() -> None:
    """'last week' relative to `at`: the old Lisbon messages rank below the recent one, and stay candidates."""
    index, settings = memory(TRIP)
    request = _request("What did I say about Lisbon last week?", at=T0 + timedelta(days=33))
    filtered = rank(index, request.query, None, request, settings)
    plain = rank(index, request.query, None, request, settings, Switches(time_filter=False))
    assert filtered.time_range is not None and plain.time_range is None
    assert index.ids[int(filtered.order[0])] == "later-0"
    assert filtered.candidates == plain.candidates
    old = index.position["trip-0"]
    assert filtered.score[old] < plain.score[old] and filtered.score[old] > 0


def test_a_named_moment_ranks_content_by_closeness_within_its_range() -> None:
    """'four weeks ago' asked on day 60: day 32 (the moment) keeps its score, day 40 (inside the wide range) loses
    a little, day 50 (outside it) loses the most; none drops out."""
    told = [
        msg("on", 0, "The bakery branch opened downtown", day=32),
        msg("near", 0, "The bakery branch had a queue all day", day=40),
        msg("far", 0, "The bakery branch sold out twice", day=50),
    ]
    index, settings = memory(told)
    request = _request("What did I say about the bakery branch four weeks ago?", at=T0 + timedelta(days=60))
    timed = rank(index, request.query, None, request, settings)
    plain = rank(index, request.query, None, request, settings, Switches(time_filter=False))
    assert timed.time_range is not None and timed.time_range.moment is not None
    on, near, far = (index.position[c] for c in ("on-0", "near-0", "far-0"))
    kept = [timed.score[i] / plain.score[i] for i in (on, near, far)]
    assert kept[0] == pytest.approx(1.0, abs=0.01) and 1 > kept[1] > kept[2]
    assert kept[1] == pytest.approx(1 - (1 - settings.out_of_range_factor) * 8 / 14, abs=0.01)
    assert kept[2] == pytest.approx(settings.out_of_range_factor)


def test_a_merged_group_comes_back_once_with_all_its_message_ids() -> None:
    """Consolidation in recall: two copies of a message are one piece naming both originals."""
    copies = [*TRIP, msg("trip", 3, "Booked the Lisbon hotel near Alfama!", day=0, minute=3)]
    index, settings = memory(copies)
    result = recall(index, None, _request("Alfama hotel", budget_tokens=10_000), settings)
    hotel = [p for p in result.pieces if "trip-2" in p.message_ids]
    assert len(hotel) == 1 and hotel[0].message_ids == ["trip-2", "trip-3"]
    ranking = rank(index, "Alfama hotel", None, _request("Alfama hotel"), settings)
    assert index.position["trip-3"] not in set(ranking.order.tolist())
    assert to_result(index, _request("Alfama hotel"), ranking, settings).pieces


def test_a_memory_without_any_timestamp_still_recalls() -> None:
    """An export whose messages carry no time (no day tags at all) recalls by content, without an error."""
    undated = [replace(m, created_at=None) for m in TRIP]
    index, settings = memory(undated)
    assert int(index.day.max()) < 0  # not one day tag
    found = recall(index, None, _request("Lisbon tram"), settings)
    assert found.pieces and all(p.created_at is None for p in found.pieces)
    assert "tram" in " ".join(p.text for p in found.pieces).lower()
