"""Helpers for the segment / extract / concepts tests: a real archive.db and staging.db built from plain tuples."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from contracts.records import ExportConversation, ExportMessage, ExportSource
from contracts.settings import Settings
from extract.offline import OfflineExtractor
from extract.types import ExtractionFailure, ExtractionOutput, SegmentInput, SegmentMessage
from staging.archive import ArchiveWriter, open_archive
from staging.ledger import open_run, open_staging

T0 = datetime(2024, 3, 1, 9, 0, tzinfo=UTC)


@dataclass(frozen=True)
class Msg:
    role: str
    text: str
    active: bool = True
    hidden: bool = False


def conversation(
    conversation_id: str, messages: Sequence[Msg | tuple[str, str]], start: datetime = T0
) -> ExportConversation:
    """A linear conversation: message i is `<id>-m<i>`, written at start + i minutes; inactive ones go last."""
    items = [(i, m if isinstance(m, Msg) else Msg(*m)) for i, m in enumerate(messages)]
    ordered = [x for x in items if x[1].active] + [x for x in items if not x[1].active]
    built: list[ExportMessage] = []
    for seq, (i, m) in enumerate(ordered):
        built.append(
            ExportMessage(
                uuid=f"{conversation_id}-m{i}",
                parent_id=None if seq == 0 else built[-1].uuid,
                role=m.role,  # type: ignore[arg-type]
                author=None,
                content_type="text",
                text=m.text,
                created_at=start + timedelta(minutes=i),
                is_active=m.active,
                is_hidden=m.hidden,
                seq=seq,
            )
        )
    return ExportConversation(
        id=conversation_id,
        title=f"title of {conversation_id}",
        created_at=start,
        updated_at=start + timedelta(minutes=len(items)),
        current_node=built[-1].uuid if built else None,
        messages=built,
    )


def write_archive(archive: sqlite3.Connection, conversations: Sequence[ExportConversation], tag: str = "a") -> None:
    """Write conversations as one source (its sha256 is `tag`: a new tag is a new dump)."""
    writer = ArchiveWriter(archive)
    source = writer.begin_source(ExportSource(path=f"{tag}.jsonl", sha256=tag, format="jsonl", size_bytes=1))
    writer.write_batch(source, "jsonl", list(conversations), [])
    writer.finish_source(source, partial=False)


@dataclass
class Dbs:
    settings: Settings
    archive: sqlite3.Connection
    staging: sqlite3.Connection

    def run_id(self) -> str:
        return open_run(
            self.staging, stages=["segment", "extract", "concepts"], exports=[], settings={}, code_version="t"
        )

    def close(self) -> None:
        self.archive.close()
        self.staging.close()


def open_dbs(data_dir: Path, **sections: object) -> Dbs:
    settings = Settings(data_dir=data_dir, **sections)  # type: ignore[arg-type]
    return Dbs(settings, open_archive(settings.archive_path), open_staging(settings.staging_path))


def segment_input(segment_id: str, texts: Sequence[tuple[str, str]], start: datetime = T0) -> SegmentInput:
    """A segment of messages m0, m1, ... with the given (role, text)."""
    messages = tuple(
        SegmentMessage(f"m{i}", role, text, start + timedelta(minutes=i)) for i, (role, text) in enumerate(texts)
    )
    return SegmentInput(segment_id, "c1", "a title", messages, f"hash-{segment_id}")


class ScriptedExtractor:
    """A real Extractor whose answer per segment is a function of the segment; counts its calls.

    `answer(segment)` returns a raw JSON text (mapped by the stage), a list of ConceptHypothesis-shaped dicts
    (validated here, like an extractor that hands over checked output), or an ExtractionFailure.
    """

    def __init__(self, answer: object, name: str = "scripted", usage: tuple[int, int] = (0, 0)) -> None:
        from clients.llm import Usage

        self.answer = answer
        self.name = name
        self.cache_key_parts: tuple[str, ...] = (name, "v1")
        self.calls = 0
        self.usage = Usage(prompt_tokens=usage[0], completion_tokens=usage[1])

    def extract_many(
        self, segments: Sequence[SegmentInput]
    ) -> Iterator[tuple[SegmentInput, ExtractionOutput | ExtractionFailure]]:
        for segment in segments:
            self.calls += 1
            result = self.answer(segment)  # type: ignore[operator]
            if isinstance(result, ExtractionFailure):
                yield segment, result
            else:
                yield segment, ExtractionOutput(hypotheses=[], usage=self.usage, raw_response=str(result))


class CountingOffline(OfflineExtractor):
    """The real offline extractor, counting the segments it extracts."""

    def __init__(self, max_concepts: int = 5) -> None:
        super().__init__(max_concepts)
        self.calls = 0

    def extract(self, segment: SegmentInput) -> ExtractionOutput:
        self.calls += 1
        return super().extract(segment)


def titles(segment: SegmentInput, max_concepts: int = 8) -> list[str]:
    """The offline extractor's best `max_concepts`, whoever said them (no rank reserved for the user's words)."""
    return [h.title for h in OfflineExtractor(max_concepts, open_ranks=max_concepts).extract(segment).hypotheses]
