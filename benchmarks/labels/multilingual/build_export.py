"""Build conversations.json (ChatGPT export shape) from the two public sources listed in README.md.

Inputs (copied out of the git snapshots named in README.md, paths given on the command line):
  OASST_ZH  LLaMA-Factory data/oaast_sft_zh.json (OpenAssistant oasst1, zh)
  SHAREGPT  directory of ShareGPT92K sample files (sampled_enriched_data/*.json)
Text is kept verbatim. Conversation ids are uuid5(NAMESPACE_URL, "<source>#<index>").
Usage: python build_export.py OASST_ZH SHAREGPT_DIR OUT.json
"""

import json
import sys
import uuid
from pathlib import Path

OASST_SRC = "github.com/hiyouga/LLaMA-Factory@33a354548e78a7f7f51d63f80974920827d30252:data/oaast_sft_zh.json"
SHAREGPT_SRC = (
    "github.com/Marugannwg/ShareGPT92k_user_linguistic_mining@8186064b06829a39494e941fb7a83f66b2228cd8:"
    "sampled_enriched_data/"
)
# entry index in oaast_sft_zh.json (first of each pair of alternative final replies)
OASST_PICK = [62, 416, 420, 422, 20, 357, 321, 579, 121, 363, 396, 622, 54, 319, 367, 361, 565, 569, 208, 546]
SHAREGPT_PICK = ["vwVGJsC_15", "cIj2dFl_79", "d8Zlqzn_65", "E3053Cw_13", "lSeiu11_43", "2kchjuz_9"]
ROLE = {"human": "user", "gpt": "assistant", "user": "user", "assistant": "assistant"}
BASE_TIME = 1_680_000_000.0  # fixed, fake: the sources carry no timestamps


def conversation(cid: str, title: str, turns: list[tuple[str, str]], start: float) -> dict:
    mapping: dict = {}
    root = str(uuid.uuid5(uuid.UUID(cid), "root"))
    mapping[root] = {"id": root, "message": None, "parent": None, "children": []}
    parent = root
    t = start
    for i, (role, text) in enumerate(turns):
        mid = str(uuid.uuid5(uuid.UUID(cid), f"m{i}"))
        t += 30.0
        mapping[mid] = {
            "id": mid,
            "message": {
                "id": mid,
                "author": {"role": role, "name": None, "metadata": {}},
                "create_time": t,
                "update_time": None,
                "content": {"content_type": "text", "parts": [text]},
                "status": "finished_successfully",
                "end_turn": role == "assistant",
                "weight": 1.0,
                "metadata": {},
                "recipient": "all",
            },
            "parent": parent,
            "children": [],
        }
        mapping[parent]["children"].append(mid)
        parent = mid
    return {
        "title": title,
        "create_time": start,
        "update_time": t,
        "mapping": mapping,
        "current_node": parent,
        "conversation_id": cid,
        "id": cid,
    }


def main() -> None:
    oasst = json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))
    out = []
    n = 0
    for idx in OASST_PICK:
        e = oasst[idx]
        turns: list[tuple[str, str]] = []
        for q, a in e["history"]:
            turns += [("user", q), ("assistant", a)]
        q = e["instruction"] + (("\n" + e["input"]) if e["input"] else "")
        turns += [("user", q), ("assistant", e["output"])]
        cid = str(uuid.uuid5(uuid.NAMESPACE_URL, f"{OASST_SRC}#{idx}"))
        title = turns[0][1].splitlines()[0][:40]
        out.append(conversation(cid, title, turns, BASE_TIME + 86400 * n))
        n += 1
    for sid in SHAREGPT_PICK:
        d = json.loads((Path(sys.argv[2]) / f"{sid}.json").read_text(encoding="utf-8"))
        turns = [(ROLE[m["from"]], m["value"]) for m in d["conversations"] if m["from"] in ROLE]
        cid = str(uuid.uuid5(uuid.NAMESPACE_URL, f"{SHAREGPT_SRC}{sid}"))
        first_user = next(t for r, t in turns if r == "user")
        title = first_user.splitlines()[0][:40]
        out.append(conversation(cid, title, turns, BASE_TIME + 86400 * n))
        n += 1
    Path(sys.argv[3]).write_text(json.dumps(out, ensure_ascii=False, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
