"""memory/metrics.py, memory/timeexpr.py, memory/benchmarks.py and memory/evaluate.py on constructed cases."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest
from memory_support import memory, msg

from memory import metrics
from memory.benchmarks import (
    Question,
    evidence_ids,
    locomo_time,
    longmemeval_gold,
    read_locomo,
    read_longmemeval,
)
from memory.evaluate import question_metrics
from memory.timeexpr import find_range

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data" / "benchmarks"
LOCOMO = SHARED / "locomo" / "locomo_dev2.json"
LONGMEMEVAL = SHARED / "longmemeval" / "longmemeval_s_dev50.jsonl.gz"
AT = datetime(2023, 6, 15, 12, 0)


def test_session_metrics_match_hand_computed_values() -> None:
    """recall_any/all@k and NDCG@k (LongMemEval's dcg: ranks 1 and 2 undiscounted) over [a, b, c, d], answers {b, c}."""
    ranked = ["a", "b", "c", "d"]
    gold = ["b", "c"]
    assert metrics.recall_any(ranked, gold, 1) == 0.0 and metrics.recall_any(ranked, gold, 2) == 1.0
    assert metrics.recall_all(ranked, gold, 2) == 0.0 and metrics.recall_all(ranked, gold, 3) == 1.0
    assert metrics.ndcg(ranked, gold, 3) == pytest.approx((1 + 1 / math.log2(3)) / 2)
    assert metrics.ndcg(["a", "x", "b"], ["b"], 3) == pytest.approx(1 / math.log2(3))
    assert metrics.ndcg(["b", "c"], gold, 10) == pytest.approx(1.0)


def test_evidence_recall_and_percentiles_match_hand_computed_values() -> None:
    """LoCoMo evidence recall@k is the share of evidence turns in the top k; p95 is nearest-rank."""
    assert metrics.evidence_recall(["t1", "t2", "t3"], ["t2", "t9"], 2) == 0.5
    assert metrics.evidence_recall(["t1"], [], 5) == 0.0
    assert metrics.percentile([float(v) for v in range(1, 21)], 95) == 19.0
    assert metrics.sessions_in_order(["s1", "s2", "s1", "s3"]) == ["s1", "s2", "s3"]


def test_question_metrics_read_a_turn_ranking_as_sessions() -> None:
    """A turn ranking becomes a session ranking by first appearance before the LongMemEval metrics."""
    messages = [msg("s1", 0, "a", 0), msg("s2", 0, "b", 1), msg("s1", 1, "c", 0), msg("s3", 0, "d", 2)]
    index, _ = memory(messages)
    order = np.array([index.position[i] for i in ("s1-0", "s1-1", "s2-0", "s3-0")])
    found = question_metrics("longmemeval", index, order, Question("q", "x", "?", None, [], ["s2", "s3"]))
    assert found["recall_any@1"] == 0.0 and found["recall_all@3"] == 1.0 and found["recall_any@3"] == 1.0
    assert found["recall_all@1"] == 0.0 and found["ndcg@3"] == pytest.approx((1 + 1 / math.log2(3)) / 2)
    locomo = question_metrics("locomo", index, order, Question("q", "x", "?", None, [], ["s2-0", "s3-0"]))
    assert locomo["evidence_recall@5"] == 1.0


@pytest.mark.parametrize(
    ("question", "start", "end"),
    [
        ("What did I buy yesterday?", "2023-06-13", "2023-06-15"),
        ("Where did I go two weeks ago?", "2023-05-25", "2023-06-08"),
        ("What happened in March 2023?", "2023-03-01", "2023-03-31"),
        ("What did I cook last month?", "2023-04-14", "2023-06-15"),
        ("What books did I read in the past 3 days?", "2023-06-11", "2023-06-15"),
        ("Which trip did I take in May?", "2023-05-01", "2023-05-31"),
        ("Who came to the concert last Saturday?", "2023-06-09", "2023-06-11"),
    ],
)
def test_explicit_time_expressions_become_ranges_relative_to_at(question: str, start: str, end: str) -> None:
    """Each explicit expression names a range counted back from `at`."""
    found = find_range(question, AT)
    assert found is not None
    assert (found.start.date().isoformat(), found.end.date().isoformat()) == (start, end)


@pytest.mark.parametrize("question", ["What is my favourite colour?", "How many hours did I play?", "May I ask?"])
def test_questions_without_a_time_expression_get_no_range(question: str) -> None:
    """The rule declines rather than guessing."""
    assert find_range(question, AT) is None


def test_malformed_locomo_evidence_ids_are_read_leniently(tmp_path: Path) -> None:
    """'D8:6; D9:17' is two turns, 'D:1:2' one; ids naming no turn are dropped and counted."""
    assert evidence_ids(["D8:6; D9:17", "D:1:2", "D1:2"]) == [(8, 6), (9, 17), (1, 2)]
    sample = {
        "sample_id": "x",
        "conversation": {
            "speaker_a": "Ann",
            "speaker_b": "Bo",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Ann", "dia_id": "D1:1", "text": "hi"},
                {"speaker": "Bo", "dia_id": "D1:2", "text": "yo"},
            ],
        },
        "qa": [{"question": "q?", "answer": "a", "evidence": ["D1:2; D7:7"], "category": 2}],
    }
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps([sample]), encoding="utf-8")
    bench = read_locomo(path)
    assert [q.gold for q in bench.questions] == [["x_s1:D1:2"]] and bench.questions[0].category == "temporal"
    assert bench.notes == ["1 evidence id(s) name no turn and were dropped"]
    assert bench.lines[0]["created_at"] == "2023-05-08T13:56:00+00:00" and bench.lines[1]["author"] == "Bo"
    assert locomo_time("1:56 pm on 8 May, 2023") == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)


@pytest.mark.skipif(not LONGMEMEVAL.exists(), reason="../shared/data is absent")
def test_longmemeval_questions_keep_their_haystack_scope_and_date() -> None:
    """Each question is asked over its own sessions at its own date; sessions are written once."""
    bench = read_longmemeval(LONGMEMEVAL, limit=2)
    assert len(bench.questions) == 2 and all(not q.question_id.endswith("_abs") for q in bench.questions)
    first = bench.questions[0]
    assert first.at == datetime(2023, 5, 30, 23, 59, 59, tzinfo=UTC) and len(first.conversation_ids) > 10
    written = {line["conversation_id"] for line in bench.lines}
    assert set(first.gold) <= written and set(first.conversation_ids) <= written
    keys = [(line["conversation_id"], line["id"]) for line in bench.lines]
    assert len(keys) == len(set(keys))


def test_longmemeval_gold_counts_answer_sessions_with_a_user_answer_turn(tmp_path: Path) -> None:
    """As LongMemEval's retrieval metrics: an answer session without a user `has_answer` turn is not required, and a
    question with none at all is left out (its sessions are still written)."""

    def turn(role: str, text: str, has_answer: bool) -> dict[str, object]:
        return {"role": role, "content": text, "has_answer": has_answer}

    def item(qid: str, answers: list[str], sessions: dict[str, list[dict[str, object]]]) -> dict[str, object]:
        return {
            "question_id": qid,
            "question_type": "multi-session",
            "question": "how many?",
            "question_date": "2023/05/30 (Tue) 23:42",
            "answer_session_ids": answers,
            "haystack_session_ids": list(sessions),
            "haystack_dates": ["2023/05/01 (Mon) 10:00"] * len(sessions),
            "haystack_sessions": list(sessions.values()),
        }

    both = item(
        "q1",
        ["answer_a", "answer_b"],
        {
            "answer_a": [turn("user", "I played 3 hours", True), turn("assistant", "nice", False)],
            "answer_b": [turn("user", "hello", False), turn("assistant", "you said 5 hours", True)],
            "filler": [turn("user", "weather?", False)],
        },
    )
    assistant_only = item("q2", ["answer_c"], {"answer_c": [turn("user", "hi", False), turn("assistant", "x", True)]})
    path = tmp_path / "lme.jsonl"
    path.write_text("\n".join(json.dumps(i) for i in (both, assistant_only)), encoding="utf-8")
    bench = read_longmemeval(path)
    assert [(q.question_id, q.gold) for q in bench.questions] == [("q1", ["answer_a"])]
    assert {line["conversation_id"] for line in bench.lines} == {"answer_a", "answer_b", "filler", "answer_c"}
    assert bench.notes == ["1 question(s) with no answer turn on the user's side left out"]
    unlabelled = {**both, "haystack_sessions": [[{"role": "user", "content": "x"}]] * 3}
    assert longmemeval_gold(unlabelled) == ["answer_a", "answer_b"]


@pytest.mark.skipif(not LOCOMO.exists(), reason="../shared/data is absent")
def test_locomo_file_reads_with_gold_turns_that_exist() -> None:
    """Every gold id of the real dev file names a written turn."""
    bench = read_locomo(LOCOMO, limit=30)
    uuids = {f"{line['conversation_id']}:{line['id']}" for line in bench.lines}
    assert len(bench.questions) == 30 and all(set(q.gold) <= uuids for q in bench.questions)
