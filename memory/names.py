"""The people of a memory (its messages' named speakers), masked out of what the sentence embedder reads.

A sentence embedder reads a name as meaning: "What did Caroline research?" lands next to every turn that says
"Thanks, Caroline!", whatever it is about, and a key that starts "Caroline: ..." is close to every question
that names her. On LoCoMo the full MiniLM's key similarity alone found 0.41 of the evidence turns in the top 10
with "Caroline: ..." keys and 0.66 with the names masked (benchmarks/RESULTS.md). Who said what is not lost: it is the
lexical key's prefix (memory.graph.key_base) and the speaker tag (memory/recall.py), where a name is an exact
match, not a meaning.

Names are the authors of `user`/`other` messages (an export that names nobody masks nothing: roles are not
names). Matching is case-sensitive on the capitalised form, whole words, with a possessive 's: "Grace" the
speaker is masked, "grace" the word is not.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

NAMED_ROLES = ("user", "other")


def _parts(name: str) -> list[str]:
    """The words of a name worth matching on their own ("Amy Ellis" -> Amy, Ellis; initials are not)."""
    return [w for w in re.findall(r"[^\W\d_][\w'-]*", name) if len(w) >= 2 and w[0].isupper()]


@dataclass(frozen=True)
class Names:
    """A memory's speaker names and the pattern that masks them."""

    names: tuple[str, ...] = ()
    pattern: re.Pattern[str] | None = field(default=None, compare=False)

    @classmethod
    def of(cls, authors: Iterable[str | None]) -> Names:
        names = tuple(sorted({a.strip() for a in authors if a and a.strip()}))
        parts = sorted({p for n in names for p in (n, *_parts(n)) if p}, key=lambda p: (-len(p), p))
        if not parts:
            return cls(names)
        alternatives = "|".join(re.escape(p) for p in parts)
        return cls(names, re.compile(rf"(?<![\w'’])(?:{alternatives})(?:['’]s)?(?![\w'’])"))

    def __reduce__(self) -> tuple[Any, tuple[tuple[str, ...]]]:
        """Pickled as its names (the stored recall index, memory/index_store.py): the pattern is rebuilt on load,
        since a compiled pattern is not among the classes a stored index may hold."""
        return (_names, (self.names,))

    def mask(self, text: str) -> str:
        """The text without the names (runs of spaces left by them closed up); the text itself, unchanged, when it
        names nobody (then its key vector is the embed stage's, memory.graph.dense_key)."""
        if self.pattern is None:
            return text
        masked, found = self.pattern.subn("", text)
        return re.sub(r"[ \t]{2,}", " ", masked).strip() if found else text

    def query_text(self, query: str) -> str:
        """What the embedder reads for a query: masked, unless nothing but names is left (then the query)."""
        masked = self.mask(query)
        return masked if re.search(r"[^\W_]", masked) else query

    def named_in(self, text: str) -> list[str]:
        """The speakers a text names (by full name or any part of it), in the order of `names`."""
        if self.pattern is None:
            return []
        found = {m.group(0).removesuffix("'s").removesuffix("’s") for m in self.pattern.finditer(text)}
        return [n for n in self.names if n in found or any(p in found for p in _parts(n))]


def _names(names: tuple[str, ...]) -> Names:
    return Names.of(names)


def speaker_names(rows: Iterable[tuple[str, str | None]]) -> Names:
    """Names from (role, author) pairs: the authors of the roles that name people."""
    return Names.of(author for role, author in rows if role in NAMED_ROLES)
