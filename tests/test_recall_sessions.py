"""memory/session.py: session-level keys, the session prior from best turns, and how recall uses them."""

from __future__ import annotations

from datetime import timedelta

import numpy as np
from memory_support import T0, memory, msg

from contracts.memory import RecallRequest, RecallScope
from contracts.settings import RecallSettings
from memory.recall import Switches, rank
from memory.session import best_turns

# "pottery" and "kiln" are said in different turns of one session; another session says only "pottery", loudly.
SPREAD = [
    msg("class", 0, "I signed up for a pottery class downtown", day=0),
    msg("class", 1, "Great, what will you make?", day=0, role="assistant", minute=1),
    msg("class", 2, "We fired our first bowls in the kiln today", day=0, minute=2),
    msg("class", 3, "How did they turn out?", day=0, role="assistant", minute=3),
    msg("class", 4, "One cracked, the glaze ran", day=0, minute=4),
    msg("shop", 0, "Pottery, pottery: the shop sells pottery mugs", day=1),
    msg("shop", 1, "Those mugs sound nice", day=1, role="assistant", minute=1),
    msg("other", 0, "My bike needs a new chain", day=2),
]


def _request(query: str, **kwargs: object) -> RecallRequest:
    return RecallRequest(query=query, **kwargs)  # type: ignore[arg-type]


def _session_rank(index: object, ranking: object) -> list[str]:
    order = ranking.order  # type: ignore[attr-defined]
    codes = [index.conversation_ids[int(index.conversation[i])] for i in order]  # type: ignore[attr-defined]
    return list(dict.fromkeys(codes))


def test_best_turns_averages_each_groups_two_best_candidates() -> None:
    """A group scores the mean of its two best candidate values; a lone one scores itself; masked ones do not count."""
    codes = np.array([0, 0, 0, 1, 2, 2])
    values = np.array([0.9, 0.5, 0.1, 0.4, 0.8, 0.8], dtype=np.float32)
    mask = np.array([True, True, True, True, True, False])
    pooled = best_turns(codes, values, mask, 4, 2)
    assert np.allclose(pooled, [0.7, 0.4, 0.8, 0.0])
    assert np.allclose(best_turns(codes, values, mask, 4, 1), [0.9, 0.4, 0.8, 0.0])
    tied = best_turns(np.array([0, 0]), np.array([0.6, 0.6], dtype=np.float32), np.array([True, True]), 1, 2)
    assert np.allclose(tied, [0.6])


def test_a_session_that_covers_the_question_across_turns_is_read_as_one_key() -> None:
    """Words of the question said in different turns of one session make that session's key the best match."""
    index, settings = memory(SPREAD)
    assert index.sessions is not None
    request = _request("pottery kiln")
    ranking = rank(index, request.query, None, request, settings)
    activation = ranking.conversation_activation
    assert activation[index.conversation_code["class"]] == 1.0
    assert activation[index.conversation_code["class"]] > activation[index.conversation_code["shop"]]
    off = rank(index, request.query, None, request, settings, Switches(session_keys=False)).conversation_activation
    assert off[index.conversation_code["class"]] - off[index.conversation_code["shop"]] < (
        activation[index.conversation_code["class"]] - activation[index.conversation_code["shop"]]
    )


def test_session_keys_are_built_from_the_users_side_only() -> None:
    """An assistant's words are not in a session's key: a query only the assistant said finds no session key."""
    index, _ = memory(SPREAD)
    assert index.sessions is not None
    scores = index.sessions.bm25.score(["mug"])
    assert scores[index.conversation_code["shop"]] > 0  # the user said "mugs" there
    assert not index.sessions.bm25.score(["glaze"]).any() or (
        index.sessions.bm25.score(["glaze"])[index.conversation_code["class"]] > 0  # the user said "glaze"
    )
    assert not index.sessions.bm25.score(["turn"]).any()  # only the assistant asked how they "turn" out


def test_without_session_keys_the_prior_reads_best_turns_only() -> None:
    """The ablation switch: session keys off, a session's activation is its best turns' pooled score."""
    index, settings = memory(SPREAD)
    request = _request("pottery kiln")
    on = rank(index, request.query, None, request, settings).conversation_activation
    off = rank(index, request.query, None, request, settings, Switches(session_keys=False)).conversation_activation
    assert not np.allclose(on, off)
    only_keys = settings.model_copy(update={"session_best_weight": 0.0})
    keys = rank(index, request.query, None, request, only_keys).conversation_activation
    assert keys[index.conversation_code["other"]] == 0.0


def test_a_session_cut_by_at_is_not_read_by_its_whole_key() -> None:
    """Nothing said after `at` leaks in through a session key: a session cut by `at` is read by its candidate turns."""
    messages = [
        msg("cut", 0, "I practised the cello", day=0),
        msg("cut", 1, "The cello teacher praised my bowing", day=10),
        msg("whole", 0, "I practised the cello", day=0),
    ]
    quiet = RecallSettings(decay_lambda_per_day=0.0, day_prior=0.0, cue_weight=0.0)  # session keys alone
    index, settings = memory(messages, settings=quiet)
    request = _request("cello teacher bowing", at=T0 + timedelta(days=5))
    ranking = rank(index, request.query, None, request, settings)
    assert index.position["cut-1"] not in set(ranking.order.tolist())
    activation = ranking.conversation_activation
    # the candidate turns are alike: the cut session's later words ("teacher bowing") add nothing to it
    assert activation[index.conversation_code["cut"]] == activation[index.conversation_code["whole"]]
    later = rank(index, request.query, None, _request(request.query, at=T0 + timedelta(days=11)), settings)
    assert later.conversation_activation[index.conversation_code["cut"]] == 1.0


def test_scoped_recall_reads_only_the_scoped_sessions() -> None:
    """Session activation is zero outside the scope (a LongMemEval question sees only its own haystack)."""
    index, settings = memory(SPREAD)
    request = _request("pottery", scope=RecallScope(conversation_ids=["shop", "other"]))
    ranking = rank(index, request.query, None, request, settings)
    assert ranking.conversation_activation[index.conversation_code["class"]] == 0.0
    assert _session_rank(index, ranking)[0] == "shop"
