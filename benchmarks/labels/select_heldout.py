"""Re-derive the held-out label set's conversation ids (stdlib only).

Usage: python benchmarks/labels/select_heldout.py [SHARED_DATA_DIR]
SHARED_DATA_DIR defaults to /work/shared/data. The demo zip is read from demo/ beside this repo root.
Eligibility is the "text message" rule of benchmarks/labels/README.md ("Selection rule"; selection.py).
validate_heldout.py imports this module: `load`, `conv_id`, `text_messages`, `dev_ids` and `select` are its API.
"""

import random
import sys

import selection
from selection import DEMO, conv_id, text_messages

__all__ = ["DEMO", "RAIN", "SPARK", "conv_id", "dev_ids", "load", "select", "text_messages", "user_texts"]

DATA = selection.data_dir(sys.argv)

SPARK = "exports/chatgpt/spark-first/conversations.json"
RAIN = "exports/chatgpt/rainchinchao/conversations.json"


def load(source):
    return selection.load(source, DATA)


def user_texts(c):
    return [
        "\n".join(p for p in m["content"]["parts"] if isinstance(p, str))
        for m in text_messages(c)
        if m["author"]["role"] == "user"
    ]


def dev_ids():
    return selection.labelled_ids("dev_labels.json")


def eligible(source, min_text, exclude):
    return selection.eligible(load(source), min_text, exclude)


def select():
    dev = dev_ids()
    spark = eligible(SPARK, 4, dev)
    demo = eligible(DEMO, 4, dev)
    rain = eligible(RAIN, 2, dev)
    return {
        SPARK: (len(spark), random.Random(40).sample(spark, 28)),
        DEMO: (len(demo), random.Random(42).sample(demo, 12)),
        RAIN: (len(rain), rain[:4]),
    }


if __name__ == "__main__":
    for source, (n, ids) in select().items():
        print(f"{source}: {n} eligible after removing dev ids, {len(ids)} picked")
        for i in ids:
            print("  " + i)
