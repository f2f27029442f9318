"""Recall over a memory holding a huge pasted message (the cold try's 20 MB log): its rare token finds it, its size
moves no other message's weights, and showing it does not stem every word it holds."""

from __future__ import annotations

import numpy as np
from memory_support import msg

from clients.embedders import StaticMiniLM
from contracts.memory import RecallRequest
from contracts.settings import MemorySettings, Settings
from memory import text
from memory.graph import MessageInput, build_graph
from memory.index import MemoryIndex, build_index
from memory.service import Memory
from memory.text import BM25, LENGTH_CAP

LOG = "Here is the log from last night's job, why did it fail?\n" + "\n".join(
    f"INFO task {i} finished partition {i % 200} offset {i * 7}"
    + (" FATAL checksum in blk_zebrafish42" if i == 900 else "")
    for i in range(2000)
)
TURNS = [
    msg("log", 0, LOG, day=0),
    msg(
        "log",
        1,
        "It failed on a checksum mismatch in blk_zebrafish42; re-replicate it.",
        day=0,
        role="assistant",
        minute=1,
    ),
    msg("trip", 0, "We decided to take the tram 28 in Lisbon on Saturday", day=1),
    msg("trip", 1, "Near Alfama you can visit the cathedral and the castle.", day=1, role="assistant", minute=1),
    msg("bread", 0, "How often should I feed my sourdough starter?", day=2),
    msg("bread", 1, "Once a day at room temperature.", day=2, role="assistant", minute=1),
]


def _indexed(messages: list[MessageInput], embedder: StaticMiniLM | None = None) -> MemoryIndex:
    """The memory of `messages`, the users' turns keyed by `embedder`'s vectors as the pipeline keys them (none:
    no vectors)."""
    graph, _ = build_graph(messages, [], [], MemorySettings())
    rows = [c for c in graph.content if c.kind == "message"]
    dense = np.zeros((len(rows), 384 if embedder else 8), np.float32)
    if embedder is not None:
        users = [i for i, c in enumerate(rows) if c.role == "user"]
        dense[users] = embedder.embed([rows[i].key_text for i in users])
    return build_index(graph, "run-t", dense, texts={m.uuid: m.text for m in messages})


def test_a_query_the_embedder_knows_no_word_of_ranks_the_turns_holding_it_over_the_closest_unrelated_key() -> None:
    """The cold try: `recall zebrafish42` (a token of a pasted log and of the reply to it) put a turn about Lisbon
    first, on key similarity alone: the embedder spells "zebrafish42" from word-piece fragments, whose average
    sits near everything, and similarity is scaled per query (the closest key scores 1 however far it is). Such a
    query (or one whose only whole words are stop words) is ranked by its words and cues only: the two turns
    holding the token lead, and nothing else comes. A query with a word the embedder knows still reaches a turn
    by meaning alone."""
    embedder = StaticMiniLM()
    service = Memory(Settings(), _indexed(TURNS, embedder), embedder)
    for query in ("zebrafish42", "where is zebrafish42?"):  # stop words are known whole, and mean nothing
        result = service.recall(RecallRequest(query=query))
        assert [p.content_id for p in result.pieces] == ["log-1", "log-0"], query
    meant = service.recall(RecallRequest(query="a weekend trip to Portugal"))  # no word of it in any turn
    assert meant.pieces and meant.pieces[0].content_id == "trip-0"


def test_a_huge_message_weighs_a_word_as_a_long_document_does_and_moves_no_other_messages_weights() -> None:
    """BM25's length normalisation: a word said once in a message of 10x LENGTH_CAP terms weighed ~1/10 of the
    same word in a message of LENGTH_CAP terms, and the huge message's length raised the average every other
    message is normalised by. Past LENGTH_CAP the length counts as LENGTH_CAP: the same weights as a message of
    that length, for it and for every other message."""
    short = [["tram", "lisbon", "saturday"], ["sourdough", "starter", "feed", "daily", "tram"]] * 20
    huge = ["zebrafish42", *(f"task{i}" for i in range(10 * LENGTH_CAP))]
    capped = ["zebrafish42", *(f"task{i}" for i in range(LENGTH_CAP))]
    with_huge, with_capped = BM25.build([*short, huge]), BM25.build([*short, capped])
    for query in (["zebrafish42"], ["tram"], ["sourdough", "tram"]):
        assert np.allclose(with_huge.score(query), with_capped.score(query), rtol=1e-6)
    below = ["zebrafish42", *(f"task{i}" for i in range(LENGTH_CAP // 2))]
    assert BM25.build([*short, below]).score(["zebrafish42"])[-1] > with_capped.score(["zebrafish42"])[-1]


def test_showing_a_piece_stems_only_its_words_that_may_hold_the_querys_terms() -> None:
    """To see which of the query's terms a piece holds, recall stemmed every distinct word of it: a 20 MB pasted log
    has ~350k, which cost ~0.7 CPU-s a recall and, past the stem cache's bound (2^18 words), emptied the cache at
    every recall. Now it stems only the words starting as a query term does (no other word can hold one)."""
    log = "Here is the log: " + " ".join(f"task{i}" for i in range(5000)) + " zebrafish42 end"
    messages = [msg("log", 0, log, day=0), msg("trip", 0, "We took the tram in Lisbon", day=1)]
    service = Memory(Settings(), _indexed(messages), None)
    text._STEMS.clear()  # what building the index stemmed
    result = service.recall(RecallRequest(query="zebrafish42", budget_tokens=200))
    assert result.pieces[0].content_id == "log-0" and not result.pieces[0].weak
    assert "zebrafish42" in result.pieces[0].text
    assert not any(word.startswith("task") for word in text._STEMS)
