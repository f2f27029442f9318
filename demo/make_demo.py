"""Build demo/longmemeval-demo.zip: real LongMemEval chat sessions shaped as a ChatGPT data export.

LongMemEval (MIT, see demo/LICENSE) ships chat histories as plain lists of turns. A user trying chatmem needs
a realistic download to point it at, so this script re-shapes a few hundred of those sessions into the
`conversations.json` tree a ChatGPT export has (null-message root, one node per turn, parent/children links,
`current_node` on the last turn) and zips it.

The output is byte-for-byte reproducible: ids are uuid5 of the session id and turn index, timestamps come from
the session dates, the conversation order is fixed, and the zip member carries a fixed date. Re-running the
script with the same input rewrites the same bytes (the test is `sha256sum` before and after).

Example:
    python demo/make_demo.py
    python demo/make_demo.py --source ../shared/data/benchmarks/longmemeval/longmemeval_s_dev50.jsonl.gz \\
        --sessions 300 --out demo/longmemeval-demo.zip
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import json
import sys
import uuid
import zipfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DEFAULT_SOURCE = HERE.parent.parent / "shared/data/benchmarks/longmemeval/longmemeval_s_dev50.jsonl.gz"
DEFAULT_OUT = HERE / "longmemeval-demo.zip"
DEFAULT_QUESTIONS = HERE / "longmemeval-demo-questions.json"
# A fixed namespace so ids never change between runs or machines; the value itself is arbitrary.
NAMESPACE = uuid.UUID("6f0b6d2e-3c1a-5d7e-9b1f-4c2d8a0e7b51")
# Zip entries carry a timestamp; a fixed one is what makes the zip bytes reproducible.
ZIP_DATE_TIME = (2024, 1, 1, 0, 0, 0)
ROOT_ID = "client-created-root"
TITLE_CHARS = 60


def parse_date(text: str) -> float:
    """'2023/05/20 (Sat) 02:21' -> epoch seconds. LongMemEval dates carry no zone; we read them as UTC."""
    day, _weekday, clock = text.split(" ")
    return datetime.strptime(f"{day} {clock}", "%Y/%m/%d %H:%M").replace(tzinfo=UTC).timestamp()


def recall_at(question_date: str, evidence_times: list[float]) -> str:
    """The moment to recall a question at (ISO, UTC): the end of the question's day. LongMemEval dates a question
    to the minute, but some of its own evidence sessions are dated hours later on the same day (in the source),
    so recalling at `question_date` itself would hide its evidence; memory/benchmarks.py reads it the same way.
    Raises when evidence lies beyond that day (the data would be wrong, not the rule)."""
    day = datetime.fromtimestamp(parse_date(question_date), UTC).date()
    end = datetime(day.year, day.month, day.day, 23, 59, 59, tzinfo=UTC)
    late = [t for t in evidence_times if t > end.timestamp()]
    if late:
        raise ValueError(f"evidence after the end of the question's day {day}: {len(late)} turn(s)")
    return end.isoformat()


def select_sessions(questions: list[dict[str, Any]], wanted: int) -> tuple[list[dict[str, Any]], list[str]]:
    """Take whole haystacks, question by question in file order, until `wanted` distinct sessions are in.

    Whole haystacks (not a random sample) keep every evidence session of the chosen questions, so the demo
    memory can actually answer them. A session id seen twice keeps its first occurrence (a few repeats in
    LongMemEval differ slightly in date or text; first-wins is stable).
    """
    chosen: dict[str, dict[str, Any]] = {}
    question_ids: list[str] = []
    for q in questions:
        if len(chosen) >= wanted:
            break
        question_ids.append(q["question_id"])
        for sid, date, turns in zip(
            q["haystack_session_ids"], q["haystack_dates"], q["haystack_sessions"], strict=True
        ):
            if sid not in chosen and turns:
                chosen[sid] = {"session_id": sid, "date": date, "turns": turns}
    return list(chosen.values()), question_ids


def turn_times(start: float, turns: list[dict[str, Any]], session_id: str) -> list[float]:
    """A plausible time for each turn: the session date, then reading/typing time that grows with length.

    A sub-second part derived from the session id makes the values look like the float seconds real exports
    carry, without any randomness.
    """
    frac = int(hashlib.sha256(session_id.encode()).hexdigest()[:6], 16) / 0x1000000
    times: list[float] = []
    t = start + frac
    for turn in turns:
        times.append(round(t, 6))
        # ~20 s to react, plus ~1 s per 40 characters written, capped so a long reply costs at most 3 min.
        t += 20 + min(len(turn["content"]) // 40, 180)
    return times


def conversation_id(session_id: str) -> str:
    return str(uuid.uuid5(NAMESPACE, f"conversation:{session_id}"))


def to_conversation(session: dict[str, Any]) -> dict[str, Any]:
    sid = session["session_id"]
    turns = session["turns"]
    times = turn_times(parse_date(session["date"]), turns, sid)
    node_ids = [str(uuid.uuid5(NAMESPACE, f"{sid}:{i}")) for i in range(len(turns))]
    mapping: dict[str, Any] = {
        ROOT_ID: {"id": ROOT_ID, "message": None, "parent": None, "children": node_ids[:1]},
    }
    for i, (turn, node_id, created) in enumerate(zip(turns, node_ids, times, strict=True)):
        role = turn["role"]
        mapping[node_id] = {
            "id": node_id,
            "message": {
                "id": node_id,
                "author": {"role": role, "name": None, "metadata": {}},
                "create_time": created,
                "update_time": None,
                "content": {"content_type": "text", "parts": [turn["content"]]},
                "status": "finished_successfully",
                "end_turn": True if role == "assistant" else None,
                "weight": 1.0,
                "metadata": {},
                "recipient": "all",
            },
            "parent": node_ids[i - 1] if i else ROOT_ID,
            "children": node_ids[i + 1 : i + 2],
        }
    first_user = next((t["content"] for t in turns if t["role"] == "user"), turns[0]["content"])
    title = " ".join(first_user.split())
    if len(title) > TITLE_CHARS:
        title = title[: TITLE_CHARS - 1].rstrip() + "…"
    conv_id = conversation_id(sid)
    return {
        "title": title,
        "create_time": times[0],
        "update_time": times[-1],
        "mapping": mapping,
        "moderation_results": [],
        "current_node": node_ids[-1],
        "plugin_ids": None,
        "conversation_id": conv_id,
        "conversation_template_id": None,
        "gizmo_id": None,
        "is_archived": False,
        "safe_urls": [],
        "default_model_slug": "gpt-4o",
        "id": conv_id,
    }


def validate(conversations: list[dict[str, Any]]) -> int:
    """Check the tree of every conversation; returns the message count. Raises AssertionError on a fault."""
    messages = 0
    ids: set[str] = set()
    for conv in conversations:
        assert conv["id"] not in ids, f"duplicate conversation id {conv['id']}"
        ids.add(conv["id"])
        mapping = conv["mapping"]
        roots = [n for n in mapping.values() if n["parent"] is None]
        assert len(roots) == 1 and roots[0]["message"] is None, f"{conv['id']}: expected one null root"
        for node_id, node in mapping.items():
            assert node["id"] == node_id
            if node["parent"] is not None:
                assert node_id in mapping[node["parent"]]["children"], f"{node_id} missing from its parent"
            for child in node["children"]:
                assert mapping[child]["parent"] == node_id, f"{child} names another parent"
            if node["message"] is not None:
                assert node["message"]["id"] == node_id
                messages += 1
        leaf = mapping[conv["current_node"]]
        assert not leaf["children"] and leaf["message"] is not None, f"{conv['id']}: current_node not a leaf"
        assert leaf["message"]["create_time"] == conv["update_time"], f"{conv['id']}: current_node not last"
        # Walking up from current_node must reach the root through every message: a single linear thread.
        path, node_id = 0, conv["current_node"]
        while mapping[node_id]["parent"] is not None:
            path += 1
            node_id = mapping[node_id]["parent"]
        assert path == len(mapping) - 1, f"{conv['id']}: active path does not cover every message"
    return messages


def build(source: Path, wanted: int) -> tuple[bytes, bytes, dict[str, int]]:
    """Return (zip bytes, questions JSON bytes, stats)."""
    with gzip.open(source, "rt", encoding="utf-8") as handle:
        questions = [json.loads(line) for line in handle if line.strip()]
    sessions, question_ids = select_sessions(questions, wanted)
    conversations = [to_conversation(s) for s in sessions]
    # Newest first, as a real export lists them; the id breaks ties so the order never depends on input order.
    conversations.sort(key=lambda c: (-c["create_time"], c["id"]))
    # Default json.dumps settings (ASCII with \uXXXX escapes, ", " separators) are what real downloads use.
    body = json.dumps(conversations).encode("ascii")
    # Validate what a consumer will read, not the objects we built.
    messages = validate(json.loads(body))

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        info = zipfile.ZipInfo("conversations.json", date_time=ZIP_DATE_TIME)
        info.compress_type = zipfile.ZIP_DEFLATED
        info.external_attr = 0o644 << 16
        archive.writestr(info, body, compresslevel=9)

    # The questions these sessions answer, with evidence mapped to the conversation ids in the zip: a ready
    # set of recall checks for the demo.
    conv_of = {s["session_id"]: conversation_id(s["session_id"]) for s in sessions}
    last_turn = {s["session_id"]: max(turn_times(parse_date(s["date"]), s["turns"], s["session_id"])) for s in sessions}
    by_id = {q["question_id"]: q for q in questions}
    checks = [
        {
            "question_id": qid,
            "question_type": by_id[qid]["question_type"],
            "question": by_id[qid]["question"],
            "question_date": by_id[qid]["question_date"],
            "recall_at": recall_at(
                by_id[qid]["question_date"],
                [last_turn[sid] for sid in by_id[qid]["answer_session_ids"] if sid in last_turn],
            ),
            "answer": by_id[qid]["answer"],
            "evidence_conversation_ids": sorted(
                conv_of[sid] for sid in by_id[qid]["answer_session_ids"] if sid in conv_of
            ),
        }
        for qid in question_ids
    ]
    questions_bytes = (json.dumps(checks, ensure_ascii=False, indent=2) + "\n").encode("utf-8")
    stats = {"conversations": len(conversations), "messages": messages, "json_bytes": len(body)}
    return buffer.getvalue(), questions_bytes, stats


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="Example: python demo/make_demo.py --sessions 300 --out demo/longmemeval-demo.zip",
    )
    parser.add_argument("--source", type=Path, default=DEFAULT_SOURCE, help="LongMemEval_S .jsonl.gz file")
    parser.add_argument("--sessions", type=int, default=300, help="distinct sessions (whole haystacks)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="zip to write")
    parser.add_argument("--questions", type=Path, default=DEFAULT_QUESTIONS, help="questions JSON to write")
    args = parser.parse_args(argv)
    if not args.source.is_file():
        parser.error(f"{args.source}: no such file")

    zip_bytes, questions_bytes, stats = build(args.source, args.sessions)
    args.out.write_bytes(zip_bytes)
    args.questions.write_bytes(questions_bytes)
    print(
        f"{args.out}: {stats['conversations']} conversations, {stats['messages']} messages, "
        f"{stats['json_bytes']:,} bytes of JSON, {len(zip_bytes):,} bytes zipped, "
        f"sha256 {hashlib.sha256(zip_bytes).hexdigest()[:16]}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
