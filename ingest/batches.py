"""Parse an export into batches of archive rows.

`iter_batches` is the one loop: parse, turn each conversation into rows (`staging.archive_rows.to_rows`),
and cut batches of whole conversations, so a batch is one transaction and a killed run never leaves half a
conversation.

Measured and left out: running this loop in a worker process while the stage writes (both cores). On a
200k-message export it gained under 10 % (pickling and piping ~1.2 KB rows costs nearly what it saves),
not worth a second process; see benchmarks/RESULTS.md. A thread is: the stage runs this loop in one while it
writes the batch before (ingest/overlap.py), since SQLite releases the GIL while it works.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, BinaryIO

from contracts.errors import ExportError, MalformedExportError
from contracts.records import QuarantineRecord
from ingest.detect import parser_for
from ingest.jsonl import Continuation
from ingest.raw_skip import RawLookup, Unchanged
from ingest.sources import OpenedExport
from ingest.timestamps import dropped_mark, dropped_so_far, forget_dropped_since
from ingest.utf8_repair import Utf8RepairReader, in_file
from staging.archive_rows import ConversationRows, to_rows

RAW_SKIP_FORMATS = ("chatgpt", "claude")  # parsers that stream a top-level list (ingest/jsonstream.py)


@dataclass
class Batch:
    conversations: list[ConversationRows] = field(default_factory=list)
    parts: list[Continuation] = field(default_factory=list)  # JSONL parts naming parents of an earlier dump
    quarantined: list[QuarantineRecord] = field(default_factory=list)
    messages: int = 0  # read, the unchanged ones included
    unchanged: int = 0  # messages of conversations known by their bytes (ingest/raw_skip.py): not parsed
    skipped: int = 0  # those conversations: they count toward the batch's size as parsed ones do
    skipped_ids: list[str] = field(default_factory=list)  # their ids (what a file delivered: ingest/supersede.py)
    raw: dict[str, bytes] = field(default_factory=dict)  # conversation id -> the hash of the bytes it was read from
    bytes_read: int = 0  # position in the stream when the batch was cut (for progress)
    items: int = 0  # what the parser yielded into it (conversations, markers, quarantine records): see `skip`


@dataclass
class BatchStats:
    """Filled in while batches are produced; read after the last one."""

    utf8_replacements: int = 0
    utf8_first_bad: bytes = b""  # the bytes around the first of them (ingest/utf8_repair.latin1_hint)


class _CountingStream:
    def __init__(self, stream: BinaryIO) -> None:
        self._stream = stream
        self.position = 0

    def read(self, size: int = -1) -> bytes:
        data = self._stream.read(size)
        self.position += len(data)
        return data


def iter_batches(
    opened: OpenedExport,
    fmt: str,
    *,
    batch_size: int,
    repair: bool,
    stats: BatchStats,
    lookup: RawLookup | None = None,
    skip: int = 0,
) -> Iterator[Batch]:
    """Yield batches of whole conversations. A parse error is raised after the batch before it is yielded,
    so that whatever was parsed before the error is written, not lost. `lookup` (the ChatGPT and Claude
    lists only): conversations whose bytes the archive holds are counted, not parsed (ingest/raw_skip.py).

    `skip`: the first items the parser yields are left out, their timestamps drops uncounted: the second pass over
    a file with invalid UTF-8 (`repair`) reads again the bytes before the bad spot, which the first pass wrote
    and counted (the `items` of its batches); the same bytes give the same items in the same order."""
    parse = parser_for(fmt)
    options = {"lookup": lookup} if lookup is not None and fmt in RAW_SKIP_FORMATS else {}
    batch = Batch()
    with opened.open() as raw:
        counting = _CountingStream(raw)
        stream: Any = Utf8RepairReader(counting) if repair else counting  # type: ignore[arg-type]
        try:
            flagged: bytes | None = None  # the element whose parse quarantined something
            drops = dropped_so_far()  # timestamps dropped before the current element
            mark = dropped_mark()  # nothing is yielded while skipping: one mark for every skipped item
            for item in parse(stream, name=opened.path, **options):
                if skip:
                    skip -= 1
                    if options and not isinstance(item, QuarantineRecord | Unchanged):
                        lookup.parsed(item.id)  # type: ignore[union-attr]  # as the first pass did
                    forget_dropped_since(mark)
                    continue
                batch.items += 1
                if isinstance(item, QuarantineRecord):
                    batch.quarantined.append(item)
                    flagged = lookup.last if options else None  # type: ignore[union-attr]
                    continue
                clean = dropped_so_far() == drops  # its parse dropped no timestamp (a count of the run's ledger)
                drops = dropped_so_far()
                if isinstance(item, Unchanged):
                    batch.unchanged += item.messages
                    batch.skipped += 1
                    batch.skipped_ids.append(item.conversation_id)
                elif isinstance(item, Continuation):  # joined to the archive in the stage's thread
                    batch.parts.append(item)
                else:
                    batch.conversations.append(to_rows(item, fmt))
                    if options:
                        lookup.parsed(item.id)  # type: ignore[union-attr]
                        # Not recorded when its parse quarantined a node or dropped a timestamp: each dump keeps
                        # its own quarantine rows and drop counts, so those bytes are parsed every time, as without
                        # the skip. A later copy of the conversation in the batch unrecorded: neither is.
                        if clean and lookup.last is not None and lookup.last != flagged:  # type: ignore[union-attr]
                            batch.raw[item.id] = lookup.last  # type: ignore[union-attr]
                        else:
                            batch.raw.pop(item.id, None)
                batch.messages += item.messages if isinstance(item, Unchanged) else len(item.messages)
                # Bound memory by messages too: a batch of huge conversations must not hold the whole file.
                # Cut where a run that parses everything cuts (an unchanged conversation counts as one), so
                # that what a batch writes together (id collisions are settled within a batch) is the same.
                if (
                    len(batch.conversations) + len(batch.parts) + batch.skipped >= batch_size
                    or batch.messages >= batch_size * 50
                ):
                    batch.bytes_read = counting.position
                    yield batch
                    batch = Batch()
        except (ExportError, UnicodeError) as exc:
            # Whatever was parsed before a bad spot is complete and good: hand it over, then the error.
            if batch.conversations or batch.parts or batch.quarantined or batch.messages:
                batch.bytes_read = counting.position
                yield batch
            if isinstance(stream, Utf8RepairReader) and isinstance(exc, MalformedExportError):
                stats.utf8_replacements = stream.replacements  # said beside the error (a file also cut short)
                stats.utf8_first_bad = stream.first_bad
                moved = in_file(exc, stream, opened.open)  # "at byte N" of the file, not of the repaired text
                if moved is not exc:
                    raise moved from exc
            raise
        if isinstance(stream, Utf8RepairReader):
            stats.utf8_replacements, stats.utf8_first_bad = stream.replacements, stream.first_bad
        if batch.conversations or batch.parts or batch.quarantined or batch.messages:
            batch.bytes_read = counting.position
            yield batch
