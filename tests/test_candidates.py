"""Recall's candidate pre-pass (memory/candidates.py, memory/dense_lists.py): on a memory above
`prepass_from`, activation runs over a bounded set of candidates (BM25, k-means lists, cues, widened to their
conversations) and still finds what the exact pass finds."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
from memory_support import memory, msg

from contracts.memory import RecallRequest, RecallScope
from contracts.settings import RecallSettings
from memory.candidates import prepare, ranked
from memory.dense_lists import DenseLists, principal_directions

TOPICS = {
    "lisbon": "Lisbon tram Alfama trip hotel",
    "garden": "tomatoes compost garden basil",
    "piano": "piano scales practice Chopin",
    "marathon": "marathon training knee hills",
    "postgres": "Postgres replica migration slot",
}


def big_memory(conversations_per_topic: int = 12) -> tuple[object, RecallSettings]:
    """Sixty conversations of four turns, each topic with its own words; vectors that cluster by topic."""
    messages = []
    for t, (topic, words) in enumerate(TOPICS.items()):
        for k in range(conversations_per_topic):
            for seq in range(4):
                tag = f"ref{t}q{k}z"  # one word only this conversation has
                text = f"{words} {tag} turn {seq}" if seq % 2 == 0 else f"reply about {words.split()[0]} {tag}"
                messages.append(msg(f"{topic}{k}", seq, text, day=t * 20 + k, minute=seq))
    index, settings = memory(messages)
    rng = np.random.default_rng(3)
    centres = rng.standard_normal((len(TOPICS), 16)).astype(np.float32)
    topic_of = [
        list(TOPICS).index(c.rstrip("0123456789")) for c in (index.conversation_ids[i] for i in index.conversation)
    ]
    dense = centres[topic_of] + 0.2 * rng.standard_normal((index.size, 16)).astype(np.float32)
    index.dense = dense / np.linalg.norm(dense, axis=1, keepdims=True)
    return index, settings


def test_the_prepass_narrows_and_keeps_the_exact_top_results() -> None:
    """Forced on (prepass_from 1, 12 per source, at most 60): fewer candidates, the same best conversation, the rest
    among the exact top 12."""
    index, settings = big_memory()
    narrow = settings.model_copy(update={"prepass_from": 1, "prepass_top": 12, "prepass_max_candidates": 60})
    cases = (
        ("Alfama tram ref0q7z", "lisbon"),
        ("compost for tomatoes ref1q3z", "garden"),
        ("knee ref3q11z", "marathon"),
    )
    for query, topic in cases:
        vector = index.dense[
            next(i for i, c in enumerate(index.conversation) if index.conversation_ids[c][:-1] == topic)
        ]
        request = RecallRequest(query=query, at=datetime(2025, 1, 1, tzinfo=UTC))
        exact_view, exact, exact_keep = ranked(index, query, vector, request, settings)
        _, ranking, keep = ranked(index, query, vector, request, narrow)
        assert exact_keep is None and exact_view is index
        assert keep is not None and len(keep) <= 60 + 2 * 36 and len(keep) < index.size  # seeds' turns beside too
        top = [index.ids[i] for i in keep[ranking.order[:4]]]
        exact_top = [index.ids[i] for i in exact.order[:12]]  # the topic's equally matching turns: order of ties
        # dense scores are rescaled over the candidates, so turns of one conversation may swap; never the answer
        assert top[0].split("-")[0] == exact_top[0].split("-")[0] and set(top) <= set(exact_top), query
        assert all(index.ids[k].startswith(topic) for k in keep[ranking.order[:4]])


def test_a_conversation_scope_reads_only_its_conversations() -> None:
    """A scope of two conversations (8 turns, under prepass_from) on a larger memory: the view is exactly their
    content, nothing else, read without a pass over the whole memory."""
    index, settings = big_memory()
    forced = settings.model_copy(update={"prepass_from": 20})
    request = RecallRequest(query="tram", scope=RecallScope(conversation_ids=["lisbon3", "garden5"]))
    view, ranking, keep = ranked(index, "tram", None, request, forced)
    assert keep is not None and sorted({view.conversation_ids[c] for c in view.conversation}) == ["garden5", "lisbon3"]
    assert view.size == 8 and index.ids[keep[ranking.order[0]]].startswith("lisbon3")


def test_dense_lists_find_a_stored_vector_in_the_probed_lists() -> None:
    """A query equal to a stored key vector: its own position is among the probed lists' members."""
    rng = np.random.default_rng(5)
    dense = rng.standard_normal((4000, 32)).astype(np.float32)
    dense /= np.linalg.norm(dense, axis=1, keepdims=True)
    lists = DenseLists.build(dense, None)
    assert lists.lists == 63 and sorted(lists.order.tolist()) == list(range(4000))
    for i in (0, 1234, 3999):
        assert i in set(lists.probe(dense[i], 4).tolist())


def test_prepare_builds_the_tables_once() -> None:
    """The pre-pass tables are built on first use and kept on the index."""
    index, _ = big_memory(2)
    first = prepare(index)
    assert prepare(index) is first and first.members.size(0) == 4


def test_principal_directions_are_the_svds_top_directions() -> None:
    """The coarse pass's projection comes from the 384 x 384 covariance, not an SVD of the 20k-row sample (~30x
    cheaper): the same subspace, whatever the signs, and a projected dot product keeps its value."""
    rng = np.random.default_rng(3)
    spectrum = np.linspace(3.0, 0.1, 384) ** 2  # a decaying spectrum, as sentence vectors have
    rotation, _ = np.linalg.qr(rng.standard_normal((384, 384)))
    sample = ((rng.standard_normal((5000, 384)) * spectrum) @ rotation).astype(np.float32)
    mine = principal_directions(sample, 64)
    _, _, vt = np.linalg.svd(sample - sample.mean(axis=0), full_matrices=False)
    svd = vt[:64].T
    assert mine.shape == (384, 64) and mine.dtype == np.float32
    assert np.allclose(mine @ mine.T, svd @ svd.T, atol=1e-4)  # the same projector onto the top 64 directions
    query, key = sample[0], sample[1]
    assert np.isclose((query @ mine) @ (key @ mine), (query @ svd) @ (key @ svd), rtol=1e-3)
