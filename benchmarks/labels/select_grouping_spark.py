"""Re-derive the conversation ids of the `topic_grouping_spark` reference grouping (stdlib only).

Usage: python benchmarks/labels/select_grouping_spark.py [SHARED_DATA_DIR]
SHARED_DATA_DIR defaults to /work/shared/data. Prints one id per line, sorted.
Eligible: spark-first conversations with >= 2 "text messages" (rule in README.md, "Selection rule"; selection.py),
minus every id already in dev_labels.json or heldout_labels.json (so the grouping adds conversations no label set
holds). If more than 200 remain, random.Random(50).sample(sorted_ids, 200); else all of them.
"""

import random
import sys

from selection import data_dir, eligible, labelled_ids, load

DATA = data_dir(sys.argv)
SOURCE = "exports/chatgpt/spark-first/conversations.json"
SEED, CAP, MIN_TEXT = 50, 200, 2


def select():
    convs = load(SOURCE, DATA)
    ids = eligible(convs, MIN_TEXT, labelled_ids("dev_labels.json", "heldout_labels.json"))
    chosen = random.Random(SEED).sample(ids, CAP) if len(ids) > CAP else ids
    return len(convs), len(ids), sorted(chosen)


if __name__ == "__main__":
    total, n_eligible, chosen = select()
    print(f"# {SOURCE}: {total} conversations, {n_eligible} eligible, {len(chosen)} chosen", file=sys.stderr)
    print("\n".join(chosen))
