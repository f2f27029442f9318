"""Select the 160 demo conversations for the blind `topic_grouping_demo` reference grouping.

Reproducible, standard library only. Reads `demo/longmemeval-demo.zip` -> `conversations.json`, counts each
conversation's "text messages" along the `current_node` -> root path (the rule in README.md, "Selection rule";
selection.py), keeps those with >= 4, drops every id already labelled in `dev_labels.json` or `heldout_labels.json`
(only their keys are read), sorts the rest and samples 160 with `random.Random(51)`.

Run from the repository root: `python benchmarks/labels/select_grouping_demo.py` prints one id per line.
"""

import random

from selection import DEMO, eligible, labelled_ids, load

SEED = 51
N_PICK = 160
MIN_TEXT_MESSAGES = 4


def select() -> list[str]:
    taken = labelled_ids("dev_labels.json", "heldout_labels.json")
    return random.Random(SEED).sample(eligible(load(DEMO), MIN_TEXT_MESSAGES, taken), N_PICK)


if __name__ == "__main__":
    for cid in select():
        print(cid)
