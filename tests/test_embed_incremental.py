"""The embed stage re-run: only new or changed segments are read and embedded, with the from-scratch result."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from stage_support import ingest_stage, stage_embed, stage_segment

from clients.embedders import StaticMiniLM
from cluster.stage_embed import mark_key
from contracts.settings import Settings
from staging.archive import open_archive
from staging.ledger import open_run, open_staging

BASE = {
    "bread": ["How do I bake sourdough bread with a crispy crust?", "Bake it hot, in a covered pot, for 40 minutes."],
    "stars": ["Which telescope should I buy to look at Jupiter's moons?", "A 100 mm refractor shows all four."],
    "pizza": ["pizza", "pizza"],
}
NEW = {"garden": ["When should I plant tomatoes?", "After the last frost.", "And how deep?"]}


@pytest.fixture(scope="module")
def static() -> StaticMiniLM:
    """The default backend; its distilled table is built once per machine in the user cache dir."""
    return StaticMiniLM()


def _export(path: Path, texts: dict[str, list[str]]) -> Path:
    lines = [
        json.dumps(
            {
                "conversation_id": conversation,
                "id": f"{conversation}-{i}",
                "role": "user" if i % 2 == 0 else "assistant",
                "text": text,
                "created_at": f"2024-05-01T10:0{i}:00Z",
            }
        )
        for conversation, turns in texts.items()
        for i, text in enumerate(turns)
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


class DataDir:
    """A data dir that ingests, segments and embeds export after export, noting which message ids embed read."""

    def __init__(self, root: Path, embedder: StaticMiniLM) -> None:
        self.root, self.embedder = root, embedder
        self.settings = Settings(data_dir=root / "data")
        self.archive = open_archive(self.settings.archive_path)
        self.staging = open_staging(self.settings.staging_path)
        self.runs = 0
        self.read: set[str] = set()

    def run(self, texts: dict[str, list[str]]) -> dict[str, int]:
        self.runs += 1
        run_id = f"r{self.runs}"
        export = _export(self.root / f"{run_id}.jsonl", texts)
        open_run(self.staging, stages=["ingest", "segment", "embed"], exports=[str(export)], settings={},
                 code_version="test", run_id=run_id)  # fmt: skip
        ingest_stage.run(self.archive, self.staging, run_id=run_id, settings=self.settings, exports=[export])
        stage_segment.run(self.archive, self.staging, run_id=run_id, settings=self.settings)
        self.read = set()
        self.archive.set_trace_callback(self._note_read)
        try:
            result = stage_embed.run(self.archive, self.staging, run_id=run_id, settings=self.settings,
                                     embedder=self.embedder)  # fmt: skip
        finally:
            self.archive.set_trace_callback(None)
        return result.counts

    def _note_read(self, sql: str) -> None:
        if "m.text" in sql:  # segments.messages_by_id: the only read of message texts
            literals = re.findall(r"'([^']*)'", sql.split(" IN ", 1)[1])  # one JSON list (staging.db.IN_VALUES)
            ids = [i for literal in literals for i in (json.loads(literal) if literal.startswith("[") else [literal])]
            self.read.update(i.split(":", 1)[-1] for i in ids)  # the archive's uuid is "conversation:id"

    def state(self) -> dict[tuple[str, str], bytes]:
        """Every current message's and segment's vector under the model, by (kind, item id)."""
        rows = self.staging.execute(
            "SELECT i.kind, i.item_id, e.vector FROM embedding_items i JOIN embeddings e"
            " ON e.model = i.model AND e.content_hash = i.content_hash WHERE i.kind IN ('message', 'segment')"
            " AND (i.item_id IN (SELECT segment_id FROM segments WHERE retired_run_id IS NULL)"
            " OR i.item_id IN (SELECT message_id FROM segment_messages JOIN segments USING (segment_id)"
            " WHERE retired_run_id IS NULL))"
        )
        return {(str(kind), str(item)): bytes(vector) for kind, item, vector in rows}


def _scratch(root: Path, embedder: StaticMiniLM, texts: dict[str, list[str]]) -> dict[tuple[str, str], bytes]:
    root.mkdir()
    fresh = DataDir(root, embedder)
    fresh.run(texts)
    return fresh.state()


def test_a_new_conversation_reads_and_embeds_only_its_own_segment(tmp_path: Path, static: StaticMiniLM) -> None:
    """A re-run with one new conversation reads only its messages' texts; the others are counted unchanged."""
    data = DataDir(tmp_path, static)
    first = data.run(BASE)
    assert first["segments"] == 3 and first["segments_unchanged"] == 0 and first["texts"] == 6
    assert data.read == {f"{c}-{i}" for c, turns in BASE.items() for i in range(len(turns))}

    again = data.run({**BASE, **NEW})
    assert data.read == {"garden-0", "garden-1", "garden-2"}
    assert again["segments"] == 4 and again["segments_unchanged"] == 3 and again["segments_embedded"] == 1
    assert again["texts"] == 3 and again["texts_embedded"] == 3 and again["segment_items_changed"] == 1
    assert data.state() == _scratch(tmp_path / "scratch", static, {**BASE, **NEW})

    nothing = data.run({**BASE, **NEW})
    assert data.read == set() and nothing["texts"] == 0 and nothing["segments_unchanged"] == 4


def test_an_edited_message_re_embeds_its_segment(tmp_path: Path, static: StaticMiniLM) -> None:
    """Same segment id, new content_hash: the segment is read and embedded again, as a from-scratch run has it."""
    data = DataDir(tmp_path, static)
    data.run(BASE)
    edited = {**BASE, "stars": [BASE["stars"][0], "Saturn has rings made of ice."]}
    changed = data.run(edited)
    assert data.read == {"stars-0", "stars-1"}
    assert changed["segments_embedded"] == 1 and changed["texts_embedded"] == 1
    assert changed["segment_items_changed"] == 1 and changed["message_items_changed"] == 1
    assert data.state() == _scratch(tmp_path / "edited", static, edited)


def test_a_run_killed_before_marking_its_segments_redoes_them_to_the_same_state(
    tmp_path: Path, static: StaticMiniLM
) -> None:
    """Items written but segments not yet marked (a kill -9 in between): the re-run re-reads them, same vectors."""
    data = DataDir(tmp_path, static)
    data.run({**BASE, **NEW})
    before = data.state()
    with data.staging:
        data.staging.execute("DELETE FROM embedded_segments WHERE segment_id IN"
                             " (SELECT segment_id FROM segments WHERE conversation_id = 'garden')")  # fmt: skip
    rerun = data.run({**BASE, **NEW})
    assert data.read == {"garden-0", "garden-1", "garden-2"}
    assert rerun["segments_embedded"] == 1 and rerun["texts_embedded"] == 0 and rerun["segment_items_changed"] == 0
    assert data.state() == before


def test_a_segment_that_is_no_longer_current_is_forgotten(tmp_path: Path, static: StaticMiniLM) -> None:
    """A retired segment's record is dropped, so if it comes back its messages' items are derived again."""
    data = DataDir(tmp_path, static)
    data.run(BASE)
    segment = str(data.staging.execute("SELECT segment_id FROM segments WHERE conversation_id = 'pizza'").fetchone()[0])
    longer = {**BASE, "pizza": [*BASE["pizza"], "more pizza"]}  # the last message moves: a new segment id
    counts = data.run(longer)
    assert counts["retired_segments_forgotten"] == 1
    marked = data.staging.execute("SELECT COUNT(*) FROM embedded_segments WHERE segment_id = ?", (segment,))
    assert marked.fetchone()[0] == 0
    assert data.state() == _scratch(tmp_path / "longer", static, longer)


def test_embedded_segments_records_the_content_of_every_current_segment(tmp_path: Path, static: StaticMiniLM) -> None:
    """After a run each current segment has one row, under the model, with its present content_hash."""
    data = DataDir(tmp_path, static)
    data.run(BASE)
    current = set(data.staging.execute("SELECT segment_id, content_hash FROM segments WHERE retired_run_id IS NULL"))
    recorded = data.staging.execute("SELECT segment_id, content_hash, model FROM embedded_segments").fetchall()
    assert {(r[0], r[1]) for r in recorded} == {tuple(r) for r in current}
    assert {r[2] for r in recorded} == {mark_key(static)}


QUESTION = "How do I bake sourdough bread with a crispy crust?"
ANSWER = "Bake it hot, in a covered pot, for 40 minutes."
NOTES = "<antThinking>Kubernetes operators, Terraform modules and Helm charts for the cluster.</antThinking>\n\n"


def _segments_of(data: DataDir) -> dict[str, tuple[str, tuple[str, ...]]]:
    """segment id -> (conversation id, its message ids in order), of the current segments."""
    rows = data.staging.execute(
        "SELECT s.segment_id, s.conversation_id, m.message_id FROM segments s JOIN segment_messages m"
        " USING (segment_id) WHERE s.retired_run_id IS NULL ORDER BY s.segment_id, m.position"
    ).fetchall()
    out: dict[str, tuple[str, tuple[str, ...]]] = {}
    for segment, conversation, message in rows:
        out[segment] = (conversation, (*out.get(segment, ("", ()))[1], message))
    return out


def test_a_segment_is_embedded_as_shown_so_a_models_notes_do_not_move_it(tmp_path: Path, static: StaticMiniLM) -> None:
    """A reply's <antThinking> notes are not read: its segment's vector is the one of the reply without them, and
    the cluster stage's topic text and its LLM excerpts hold none of the notes either."""
    from cluster.describe import segment_texts
    from cluster.topic_space import topic_texts

    data = DataDir(tmp_path, static)
    data.run({"notes": [QUESTION, NOTES + ANSWER], "plain": [QUESTION, ANSWER]})
    state = data.state()
    segments = _segments_of(data)
    by_conversation = {conversation.rsplit(":", 1)[-1]: s for s, (conversation, _) in segments.items()}
    assert state[("segment", by_conversation["notes"])] == state[("segment", by_conversation["plain"])]
    members = {s: ids for s, (_, ids) in segments.items()}
    (topic,) = topic_texts(data.archive, members, [by_conversation["notes"]])
    assert ANSWER in topic and "Kubernetes" not in topic and "antThinking" not in topic
    excerpt = segment_texts(data.archive, members, [by_conversation["notes"]], shown=True)[by_conversation["notes"]]
    assert ANSWER in excerpt and "Kubernetes" not in excerpt


def test_segments_embedded_from_the_raw_text_are_embedded_again_once(tmp_path: Path, static: StaticMiniLM) -> None:
    """A data dir whose segments were embedded before messages were read as shown (marked under the bare model
    key) embeds every segment once more, then none."""
    data = DataDir(tmp_path, static)
    data.run(BASE)
    data.staging.execute("UPDATE embedded_segments SET model = ?", (static.key,))
    data.staging.commit()
    assert data.run(BASE)["segments_embedded"] == 3
    assert data.run(BASE)["segments_embedded"] == 0
