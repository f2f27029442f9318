"""Where LoCoMo's evidence turns rank in the system's ranking, and why: a study tool for the misses at @k.

    DATA_ROOT=W python benchmarks/locomo_misses.py [K] [--settings JSON] [--category NAME] [--summary]

W is the data dir given to `chatmem eval recall --benchmark locomo` (the memory is loaded as
benchmarks/eval_built_memory.py does, cached). For every evidence turn outside the system's top K (default 10):
its rank, its direct scores (lexical, dense, cue, tag prior) against the top turn's, the question, and the turn.
`--summary` prints only the counts by category and by rank bucket. Dev file only: a reading aid, it tunes nothing.
"""

import json
import sys
from collections import Counter

from eval_built_memory import load

from clients.embedders import build_embedder  # noqa: F401  (eval_built_memory set sys.path)
from contracts.memory import RecallRequest, RecallScope
from memory.candidates import ranked
from memory.index import key_embedder
from memory.recall import Switches


def main() -> None:
    args = sys.argv[1:]
    k = int(args[0]) if args and args[0].isdigit() else 10
    extra = json.loads(args[args.index("--settings") + 1]) if "--settings" in args else {}
    only = args[args.index("--category") + 1] if "--category" in args else None
    base, loaded, index, _plain, _flat = load("locomo")
    settings = base.recall.model_copy(update=extra)
    embedder = key_embedder(base)
    vectors = embedder.embed([index.names.query_text(q.question) for q in loaded.questions])
    buckets: Counter[tuple[str, str]] = Counter()
    for number, question in enumerate(loaded.questions):
        if only and question.category != only:
            continue
        request = RecallRequest(
            query=question.question,
            at=question.at,
            budget_tokens=4000,
            scope=RecallScope(conversation_ids=question.conversation_ids),
            max_pieces=200,
        )
        _view, ranking, keep = ranked(index, question.question, vectors[number], request, settings, Switches())
        order = ranking.order if keep is None else keep[ranking.order]
        expanded = [m for i in order for m in index.group.get(int(i), [int(i)])]
        where = {index.ids[m]: r + 1 for r, m in enumerate(expanded)}
        top = int(order[0])
        for gold in question.gold:
            r = where.get(gold, 10**6)
            bucket = "<=k" if r <= k else "<=20" if r <= 20 else "<=50" if r <= 50 else ">50"
            buckets[(question.category, bucket)] += 1
            if r <= k or "--summary" in args:
                continue
            g = index.position[gold]
            print(f"[{question.category}] {question.question_id} rank {r}: {question.question}")
            for label, i in (("gold", g), ("top", top)):
                text = index.texts.get(index.ids[i], "")[:150]
                print(
                    f"   {label}: lex {ranking.lexical[i]:.2f} dense {ranking.dense[i]:.2f} cue {ranking.cue[i]:.2f}"
                    f" tag {ranking.tag[i]:.2f} score {ranking.score[i]:.2f} | {text}"
                )
    for category in sorted({c for c, _ in buckets}):
        row = {b: buckets[(category, b)] for b in ("<=k", "<=20", "<=50", ">50")}
        print(category, row)


if __name__ == "__main__":
    main()
