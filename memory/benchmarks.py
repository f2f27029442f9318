"""LoCoMo and LongMemEval files -> a generic JSONL export (docs/formats.md) and the questions to ask.

Pure reading and writing: the pipeline ingests the JSONL like any other export, with the benchmark's real
timestamps, and the harness asks each question with its own scope and moment:

- LongMemEval: one conversation per haystack session (id = the session id; a session shared by several
  questions is written once); scope = the question's own haystack; `at` = the question date; gold = the answer
  sessions as the benchmark's retrieval metrics count them (`longmemeval_gold`); abstention questions (`_abs`)
  and questions with no answer turn on the user's side are left out, as those metrics do. `at` is the end of the
  question's day (see `_end_of_day`).
- LoCoMo: one conversation per session (`<sample>_s<N>`), both speakers as users with their names; scope = the
  sample's sessions; no `at` (the questions carry no date); gold = the evidence turns (`D<session>:<turn>`).
  Malformed evidence ids ("D8:6; D9:17", "D:11:26") are read leniently; ids naming no turn are counted.
"""

from __future__ import annotations

import gzip
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from contracts.errors import ConfigError

_EVIDENCE = re.compile(r"D\s*:?\s*(\d+)\s*:\s*(\d+)")
_LOCOMO_DATE = re.compile(r"(\d{1,2}):(\d{2})\s*([ap]m)\s+on\s+(\d{1,2})\s+([A-Za-z]+),?\s+(\d{4})", re.IGNORECASE)


@dataclass
class Question:
    question_id: str
    category: str
    question: str
    at: datetime | None
    conversation_ids: list[str]
    gold: list[str]  # session ids (LongMemEval) or message uuids (LoCoMo)


@dataclass
class Benchmark:
    name: str
    lines: list[dict[str, Any]]
    questions: list[Question]
    notes: list[str] = field(default_factory=list)


def _read_any(path: Path) -> Any:
    """A .json / .jsonl file, gzipped or not (a JSON document, or one JSON value per line)."""
    if not path.is_file():
        raise ConfigError(f"{path}: no such benchmark file")
    opener: Any = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rt", encoding="utf-8") as handle:
            text = handle.read()
    except (UnicodeDecodeError, OSError, EOFError) as exc:  # not text, not gzip, unreadable: one line, exit 2
        raise ConfigError(f"{path}: not a readable JSON or JSON-lines benchmark file ({type(exc).__name__})") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        try:
            return [json.loads(line) for line in text.splitlines() if line.strip()]
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{path}: neither JSON nor JSON lines ({exc})") from None


def longmemeval_time(value: str) -> datetime:
    """'2023/05/20 (Sat) 00:31' -> a UTC datetime."""
    parts = value.split()
    clock = parts[2] if len(parts) > 2 else "00:00"
    return datetime.strptime(f"{parts[0]} {clock}", "%Y/%m/%d %H:%M").replace(tzinfo=UTC)


def locomo_time(value: str) -> datetime | None:
    """'1:56 pm on 8 May, 2023' -> a UTC datetime; None when unreadable."""
    m = _LOCOMO_DATE.search(value or "")
    if not m:
        return None
    hour, minute, half, day, month, year = m.groups()
    try:
        parsed = datetime.strptime(f"{day} {month[:3]} {year} {hour}:{minute} {half.upper()}", "%d %b %Y %I:%M %p")
    except ValueError:
        return None
    return parsed.replace(tzinfo=UTC)


def _end_of_day(moment: datetime) -> datetime:
    """A LongMemEval question date is good to the day, not to the minute: some questions' own answer sessions are
    dated hours after the question on the same day. Recall at the end of that day keeps them."""
    return moment.replace(hour=23, minute=59, second=59)


def longmemeval_gold(item: dict[str, Any]) -> list[str]:
    """The answer sessions LongMemEval's retrieval metrics count (src/retrieval/run_retrieval.py): those of the
    question's answer sessions with a user turn marked `has_answer` (an answer session whose evidence is only on
    the assistant's side is renamed `noans` there, so it is not required). A file without `has_answer` marks at
    all (another export of the same shape) keeps every answer session."""
    answers = set(item["answer_session_ids"])
    sessions = list(zip(item["haystack_session_ids"], item["haystack_sessions"], strict=True))
    if not any("has_answer" in turn for _, turns in sessions for turn in turns):
        return sorted(answers)
    return sorted(
        {
            sid
            for sid, turns in sessions
            if sid in answers and any(t.get("has_answer") for t in turns if t.get("role") == "user")
        }
    )


def read_longmemeval(path: Path, limit: int | None = None) -> Benchmark:
    data = _read_any(path)
    items = data if isinstance(data, list) else [data]
    if not items or not all(isinstance(i, dict) and "haystack_sessions" in i for i in items):
        raise ConfigError(f"{path}: not a LongMemEval file (records with haystack_sessions expected)")
    lines: list[dict[str, Any]] = []
    seen: set[str] = set()
    questions: list[Question] = []
    skipped = no_target = 0
    for item in items:
        if str(item["question_id"]).endswith("_abs"):
            skipped += 1
            continue
        if limit is not None and len(questions) >= limit:
            break
        for session_id, date, turns in zip(
            item["haystack_session_ids"], item["haystack_dates"], item["haystack_sessions"], strict=True
        ):
            if session_id in seen:
                continue
            seen.add(session_id)
            start = longmemeval_time(date)
            for index, turn in enumerate(turns):
                lines.append(
                    {
                        "conversation_id": session_id,
                        "id": str(index),
                        "role": turn["role"],
                        "text": turn["content"],
                        "created_at": (start + timedelta(seconds=30 * index)).isoformat(),
                    }
                )
        gold = longmemeval_gold(item)
        if not gold:  # the official metrics skip it too (its sessions stay in the memory: other questions' haystack)
            no_target += 1
            continue
        questions.append(
            Question(
                question_id=str(item["question_id"]),
                category=str(item["question_type"]),
                question=str(item["question"]),
                at=_end_of_day(longmemeval_time(item["question_date"])) if item.get("question_date") else None,
                conversation_ids=list(item["haystack_session_ids"]),
                gold=gold,
            )
        )
    notes = [f"{skipped} abstention question(s) left out"] if skipped else []
    if no_target:
        notes.append(f"{no_target} question(s) with no answer turn on the user's side left out")
    return Benchmark("longmemeval", lines, questions, notes)


CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}


def evidence_ids(values: list[Any]) -> list[tuple[int, int]]:
    """(session, turn) pairs from evidence strings, read leniently (several per string, stray separators)."""
    found: list[tuple[int, int]] = []
    for value in values:
        for m in _EVIDENCE.finditer(str(value)):
            pair = (int(m.group(1)), int(m.group(2)))
            if pair not in found:
                found.append(pair)
    return found


def read_locomo(path: Path, limit: int | None = None) -> Benchmark:
    data = _read_any(path)
    items = data if isinstance(data, list) else [data]
    if not items or not all(isinstance(i, dict) and "conversation" in i and "qa" in i for i in items):
        raise ConfigError(f"{path}: not a LoCoMo file (records with conversation and qa expected)")
    lines: list[dict[str, Any]] = []
    questions: list[Question] = []
    dangling = 0
    for item in items:
        if limit is not None and len(questions) >= limit:
            break
        sample = str(item["sample_id"])
        conversation = item["conversation"]
        sessions = sorted(
            int(k.split("_")[1]) for k in conversation if re.fullmatch(r"session_\d+", k) and conversation[k]
        )
        turn_uuid: dict[tuple[int, int], str] = {}
        conversation_ids = []
        for n in sessions:
            conversation_id = f"{sample}_s{n}"
            conversation_ids.append(conversation_id)
            start = locomo_time(str(conversation.get(f"session_{n}_date_time", "")))
            for index, turn in enumerate(conversation[f"session_{n}"]):
                text = str(turn.get("text", ""))
                if turn.get("blip_caption"):
                    text += f" [shares a photo: {turn['blip_caption']}]"
                dia = str(turn.get("dia_id", f"D{n}:{index + 1}"))
                line = {"conversation_id": conversation_id, "id": dia, "role": "user", "author": turn["speaker"]}
                line["text"] = text
                if start is not None:
                    line["created_at"] = (start + timedelta(seconds=30 * index)).isoformat()
                lines.append(line)
                for pair in evidence_ids([dia]):
                    turn_uuid[pair] = f"{conversation_id}:{dia}"
        for number, qa in enumerate(item["qa"]):
            if limit is not None and len(questions) >= limit:
                break
            pairs = evidence_ids(qa.get("evidence") or [])
            gold = [turn_uuid[p] for p in pairs if p in turn_uuid]
            dangling += len(pairs) - len(gold)
            if not gold:
                continue
            questions.append(
                Question(
                    question_id=f"{sample}:{number}",
                    category=CATEGORIES.get(int(qa.get("category", 0)), str(qa.get("category"))),
                    question=str(qa["question"]),
                    at=None,
                    conversation_ids=conversation_ids,
                    gold=gold,
                )
            )
    notes = [f"{dangling} evidence id(s) name no turn and were dropped"] if dangling else []
    return Benchmark("locomo", lines, questions, notes)


def read_benchmark(name: str, path: Path, limit: int | None = None) -> Benchmark:
    if name == "locomo":
        return read_locomo(path, limit)
    if name == "longmemeval":
        return read_longmemeval(path, limit)
    raise ConfigError(f"unknown benchmark {name!r}: locomo or longmemeval")


def write_jsonl(benchmark: Benchmark, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as handle:
        for line in benchmark.lines:
            handle.write(json.dumps(line, ensure_ascii=False) + "\n")
    return path


def iter_ranked_sessions(ranked_conversations: list[str]) -> Iterator[str]:
    seen: set[str] = set()
    for c in ranked_conversations:
        if c not in seen:
            seen.add(c)
            yield c
