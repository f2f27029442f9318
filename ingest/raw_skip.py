"""Conversations a dump repeats byte for byte, known without parsing them.

A scheduled run reads the service's full export again every day: tens of thousands of conversations, all but a
few hundred the same bytes as the day before. The rows digest (staging/archive_digests.py) already spares their
writes, but each was still parsed, turned into rows and digested to find that out: most of the stage's time.

Here the streaming reader (ingest/jsonstream.py, the top-level array's fast path) hashes each element's bytes
before it parses them. A hash the archive knows (`raw_digests` joined to the conversation's current rows digest)
is an `Unchanged` marker: no parse, no rows, no digest. Every other element is parsed as before, and its hash is
recorded with the rows digest once its rows are stored (staging/archive.py).

Exactness: the hash is keyed by the format and by the source of the code that turns bytes into rows, so the same
bytes under other code are new bytes. Within one run a hash is used once, and a conversation parsed from other
bytes earlier in the run drops its known hashes: what the archive holds for it may have changed since the
table was read. So a run gives the archive the same rows as a run that parses everything.
"""

from __future__ import annotations

import hashlib
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

import orjson
import pydantic

# What turns an element's bytes into rows: a change to any of these files, or to Python or orjson, makes every
# recorded hash stale.
_PARSING_CODE = (
    *sorted((Path(__file__).parent).glob("*.py")),
    Path(__file__).parent.parent / "staging" / "archive_rows.py",
    Path(__file__).parent.parent / "contracts" / "records.py",
    Path(__file__).parent.parent / "contracts" / "base.py",
)


def _code_digest() -> bytes:
    digest = hashlib.blake2b(digest_size=16)
    digest.update(f"{sys.version}\0{orjson.__version__}\0{pydantic.VERSION}".encode())
    try:
        for path in _PARSING_CODE:
            digest.update(path.name.encode())
            digest.update(path.read_bytes())
    except OSError:  # an install without its sources: no key is stable, so nothing is ever known by its bytes
        return os.urandom(16)
    return digest.digest()


_CODE = _code_digest()


@dataclass(frozen=True)
class Unchanged:
    """An element of the dump whose bytes the archive holds already, as rows of this conversation."""

    conversation_id: str
    messages: int


@dataclass
class RawLookup:
    """The known hashes of one dump's read, and the hash of the element the parser is on (`last`)."""

    fmt: str
    known: dict[bytes, tuple[str, int]]
    last: bytes | None = None
    recognised: int = 0  # elements skipped as Unchanged
    _by_conversation: dict[str, list[bytes]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._key = hashlib.blake2b(self.fmt.encode() + b"\0" + _CODE, digest_size=32).digest()
        for raw, (conversation_id, _) in self.known.items():
            self._by_conversation.setdefault(conversation_id, []).append(raw)

    def hash(self, element: bytes) -> bytes:
        return hashlib.blake2b(element, digest_size=16, key=self._key).digest()

    def take(self, raw: bytes) -> Unchanged | None:
        """The marker for an element with this hash, if the archive holds its rows (once per run)."""
        found = self.known.pop(raw, None)
        if found is None:
            return None
        self.recognised += 1
        return Unchanged(*found)

    def parsed(self, conversation_id: str) -> None:
        """A conversation read from other bytes: its stored rows may change, so its old hashes no longer hold."""
        for raw in self._by_conversation.pop(conversation_id, ()):
            self.known.pop(raw, None)
