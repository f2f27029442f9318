"""How fact_sentences.jsonl and fact_sentences_fresh.jsonl were sampled (labels added by hand after).

Reproducible with the sentence splitter of fact rules v6-v7, which drew them (v8 keeps "Node.js" whole).

    python benchmarks/labels/collect_fact_sentences.py --shared ../shared/data --heldout-ids IDS --out DIR

Writes DIR/sample_a.json (set a, ids 0-323) and DIR/sample_fresh.json (ids 1000-1109), without labels. Nothing of
the held-out set is read: the conversations whose ids are in IDS (one a line) and the dev-labelled ones are
dropped before any text is looked at; the demo's LongMemEval sessions (the haystacks of the first 8 questions of
the dev split) are dropped too. Only the sentence splitter of extract/facts.py is used, never a rule.
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from extract.facts import sentences

_FIRST = re.compile(r"\b(I|I'm|I've|I'd|I'll|my|we|we're|we've|our|me)\b")
_CODE = re.compile(r"[{}=;<>]|\bdef\b|\bimport\b|\(\)|_\w+_|::")
_CAREER_OR_FIRST = re.compile(
    r"\b(i|i'm|im|iam|i've|i'd|my|me|we|we're|our|us|myself|experience|years?|resume|interview|company|client|project"
    r"|role|working|job)\b",
    re.IGNORECASE,
)
_CAREER = re.compile(
    r"\b(I|I'm|I've|my|we|our)\b[^.?!]{0,60}\b(work|working|job|role|years?|experience|engineer|developer|manager"
    r"|company|team|uses?|using|resume|interview|internship|degree|student|studying|project|startup|business|clients?)\b"
)
_FIRST_FRESH = re.compile(r"\b(I|I'm|I've|I'd|I'll|my|we|we're|our)\b")


def _chatgpt(path: Path, skip: set[str]) -> Iterator[tuple[str, str]]:
    for conversation in json.loads(path.read_text()):
        cid = conversation.get("conversation_id") or conversation.get("id")
        if cid in skip:
            continue
        for node in conversation["mapping"].values():
            message = node.get("message")
            if message and message["author"]["role"] == "user":
                parts = message["content"].get("parts") or []
                yield cid, "\n".join(p for p in parts if isinstance(p, str))


def _claude(path: Path, skip: set[str]) -> Iterator[tuple[str, str]]:
    data = json.loads(path.read_text())
    for conversation in data if isinstance(data, list) else [data]:
        if conversation.get("uuid") in skip:
            continue
        for message in conversation.get("chat_messages", []):
            if message.get("sender") == "human":
                yield conversation["uuid"], message.get("text") or ""


def _lme_s(shared: Path) -> tuple[set[str], dict[str, list[dict[str, str]]]]:
    demo: set[str] = set()
    sessions: dict[str, list[dict[str, str]]] = {}
    with gzip.open(shared / "benchmarks/longmemeval/longmemeval_s_dev50.jsonl.gz", "rt") as handle:
        for index, line in enumerate(handle):
            question = json.loads(line)
            if index < 8:
                demo |= set(question["haystack_session_ids"])
                continue
            for sid, session in zip(question["haystack_session_ids"], question["haystack_sessions"], strict=True):
                sessions.setdefault(sid, session)
    return demo, {sid: s for sid, s in sessions.items() if sid not in demo}


def _user_sentences(sessions: dict[str, list[dict[str, str]]], keep: Callable[[str], bool]) -> list[dict[str, str]]:
    """Each distinct whitespace-flattened sentence of the users' turns that `keep` accepts, in the sessions' order."""
    seen: set[str] = set()
    rows: list[dict[str, str]] = []
    for sid, session in sessions.items():
        for turn in session:
            if turn["role"] != "user":
                continue
            for sentence in sentences(turn["content"]):
                flat = " ".join(sentence.split())
                if flat in seen or not keep(flat):
                    continue
                seen.add(flat)
                rows.append({"source": "lme-s", "conversation": sid, "sentence": flat})
    return rows


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--shared", type=Path, required=True)
    parser.add_argument("--heldout-ids", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    shared = args.shared
    dev = set(json.loads((Path(__file__).parent / "dev_labels.json").read_text())["conversations"])
    skip = set(args.heldout_ids.read_text().split()) | dev
    exports = shared / "exports"
    demo, lme_s = _lme_s(shared)

    # 1. the technical exports: every sentence with a first-person or career word (no code filter)
    rows: list[dict[str, str]] = []
    seen: set[str] = set()
    sources = [
        ("spark-first", _chatgpt(exports / "chatgpt/spark-first/conversations.json", skip)),
        ("rainchinchao", _chatgpt(exports / "chatgpt/rainchinchao/conversations.json", skip)),
        ("claude-to-sqlite", _claude(exports / "claude/claude-to-sqlite/tests/example.json", skip)),
        ("claude-to-sqlite", _claude(exports / "claude/claude-to-sqlite/tests/artifacts.json", skip)),
        ("claude-chat-viewer", _claude(exports / "claude/claude-chat-viewer/testdata/claude-bakery-chat.json", skip)),
    ]
    for name, messages in sources:
        for cid, text in messages:
            for sentence in sentences(text):
                flat = " ".join(sentence.split())
                if len(flat) < 12 or flat in seen or not _CAREER_OR_FIRST.search(flat) or flat.count("=") > 2:
                    continue
                seen.add(flat)
                rows.append({"source": name, "conversation": cid, "sentence": flat})

    # 2. LongMemEval oracle dev50 evidence sessions outside the demo: first person, no code; 90 has_answer + 50
    with gzip.open(shared / "benchmarks/longmemeval/longmemeval_oracle_dev50.json.gz", "rt") as handle:
        oracle = json.load(handle)
    candidates: list[dict[str, str]] = []
    seen_oracle: set[str] = set()
    seen_sessions: set[str] = set()
    for question in oracle:
        for sid, session in zip(question["haystack_session_ids"], question["haystack_sessions"], strict=True):
            if sid in demo or sid in seen_sessions:
                continue
            seen_sessions.add(sid)
            for turn in session:
                if turn["role"] != "user":
                    continue
                kind = "lme-answer" if turn.get("has_answer") else "lme"
                for sentence in sentences(turn["content"]):
                    flat = " ".join(sentence.split())
                    if len(flat) < 15 or flat in seen_oracle or not _FIRST.search(flat) or _CODE.search(flat):
                        continue
                    seen_oracle.add(flat)
                    candidates.append({"source": kind, "conversation": sid, "sentence": flat})
    rng = random.Random(25)
    rows += rng.sample([r for r in candidates if r["source"] == "lme-answer"], 90)
    rows += rng.sample([r for r in candidates if r["source"] == "lme"], 50)
    for index, row in enumerate(rows):
        row["id"] = index  # type: ignore[assignment]

    # 3. LongMemEval_S dev50 haystacks outside the demo: first person + a career word, not a question; 70
    taken = {r["sentence"] for r in rows}
    career = _user_sentences(
        lme_s,
        lambda flat: flat not in taken and len(flat) >= 20 and not flat.endswith("?") and bool(_CAREER.search(flat)),
    )
    for offset, row in enumerate(random.Random(26).sample(career, 70)):
        rows.append({**row, "id": 254 + offset})  # type: ignore[dict-item]

    # 4. the fresh set: LongMemEval_S dev50 outside the demo and set a, any first-person sentence; 110
    taken = {r["sentence"] for r in rows}
    fresh = _user_sentences(
        lme_s, lambda flat: flat not in taken and 20 <= len(flat) <= 300 and bool(_FIRST_FRESH.search(flat))
    )
    picked = [{**row, "id": 1000 + i} for i, row in enumerate(random.Random(27).sample(fresh, 110))]
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "sample_a.json").write_text(json.dumps(rows, ensure_ascii=False, indent=0))
    (args.out / "sample_fresh.json").write_text(json.dumps(picked, ensure_ascii=False, indent=0))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
