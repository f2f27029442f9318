"""Where a LongMemEval question's answer sessions rank, on a memory `chatmem eval recall` already built: the study
of the misses behind benchmarks/RESULTS.md ("LongMemEval_S: the ceiling and the misses").

    DATA_ROOT=W python benchmarks/lme_misses.py [--all] [--turns]

For every question the system misses at recall_all@3 (every question with --all): its category, each answer
session's rank under the system and under the session key's two readings alone (BM25 over the user's side as one
document, the query against the mean of its key vectors), how many sessions were candidates, the explicit time
range read from the question, and with --turns each answer turn (a user turn marked has_answer) with its rank among
the candidate turns by the system, by BM25 over the keys and by key similarity alone. DATA_ROOT and the index cache
are those of benchmarks/eval_built_memory.py (CACHE_TAG, CHATMEM_MEMORY__KEY_EMBEDDER=minilm-onnx for the full
model). Dev file only; nothing here tunes anything.
"""

import gzip
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from eval_built_memory import FILES, load

from memory import metrics
from memory.evaluate import _request
from memory.index import key_embedder
from memory.recall import candidate_mask, rank
from memory.text import terms


def session_ranks(scores, candidates, gold_codes):
    order = sorted(candidates, key=lambda c: (-scores[c], c))
    return [order.index(g) + 1 for g in gold_codes]


def answer_turns(item, session_id):
    turns = dict(zip(item["haystack_session_ids"], item["haystack_sessions"], strict=True))[session_id]
    return [(n, t["content"]) for n, t in enumerate(turns) if t.get("has_answer") and t["role"] == "user"]


def main():
    base, loaded, index, _, _ = load("longmemeval")
    embedder = key_embedder(base)
    with gzip.open(FILES["longmemeval"], "rt", encoding="utf-8") as handle:
        items = {i["question_id"]: i for i in (json.loads(line) for line in handle if line.strip())}
    vectors = embedder.embed([q.question for q in loaded.questions])
    for question, vector in zip(loaded.questions, vectors, strict=True):
        request = _request(question, 4000)
        ranking = rank(index, question.question, vector, request, base.recall)
        turn_sessions = [index.conversation_ids[int(index.conversation[i])] for i in ranking.order]
        sessions = metrics.sessions_in_order(turn_sessions)
        ranks = [sessions.index(g) + 1 for g in question.gold]
        if max(ranks) <= 3 and "--all" not in sys.argv:
            continue
        mask = candidate_mask(index, request, request.at.timestamp() if request.at else None)
        candidates = sorted({int(c) for c in index.conversation[mask]})
        gold = [index.conversation_code[g] for g in question.gold]
        lexical = session_ranks(index.sessions.bm25.score(terms(question.question)), candidates, gold)
        dense = session_ranks(index.sessions.dense @ vector, candidates, gold)
        when = ranking.time_range.describe() if ranking.time_range else "-"
        print(
            f"{question.question_id} {question.category}: system {ranks} key-bm25 {lexical} key-dense {dense} "
            f"of {len(candidates)}; time {when} | {question.question}"
        )
        if "--turns" not in sys.argv:
            continue
        position = {int(i): n + 1 for n, i in enumerate(ranking.order)}
        bm25 = index.bm25.score(terms(question.question))
        cosine = index.dense @ vector
        pool = np.flatnonzero(mask)
        for session_id, session_rank in zip(question.gold, ranks, strict=True):
            for turn, text in answer_turns(items[question.question_id], session_id):
                i = index.position[f"{session_id}:{turn}"]
                by_bm25 = int((bm25[pool] > bm25[i]).sum()) + 1
                by_dense = int((cosine[pool] > cosine[i]).sum()) + 1
                print(
                    f"    session rank {session_rank}, turn {turn}: system {position[i]}, bm25 {by_bm25}, dense "
                    f"{by_dense} of {len(pool)} | {text[:120]!r}"
                )


if __name__ == "__main__":
    main()
