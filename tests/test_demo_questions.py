"""The demo's question file agrees with the demo export: every question's evidence is in the zip, and none of it
is dated after the moment the file says to recall the question at."""

from __future__ import annotations

import json
import zipfile
from datetime import datetime
from pathlib import Path

DEMO = Path(__file__).resolve().parents[1] / "demo"


def test_no_question_has_evidence_after_its_recall_at() -> None:
    """Each question's evidence conversations are in the zip, with every turn at or before `recall_at`."""
    with zipfile.ZipFile(DEMO / "longmemeval-demo.zip") as archive:
        conversations = {c["id"]: c for c in json.loads(archive.read("conversations.json"))}
    questions = json.loads((DEMO / "longmemeval-demo-questions.json").read_text())
    assert len(questions) == 8
    for question in questions:
        at = datetime.fromisoformat(question["recall_at"]).timestamp()
        assert question["recall_at"][:10] == question["question_date"][:10].replace("/", "-")
        assert question["evidence_conversation_ids"], question["question_id"]
        for conversation_id in question["evidence_conversation_ids"]:
            turns = [n["message"] for n in conversations[conversation_id]["mapping"].values() if n["message"]]
            assert max(t["create_time"] for t in turns) <= at, (question["question_id"], conversation_id)
