"""Archive-wide boilerplate: a prompt template a user pastes into many conversations is no evidence of a concept.

Some users open every conversation with the same instructions ("I have the following original code that uses
array indexing and conditional logic. I want to convert it into a style that uses string concatenation ...")
and change only what follows (the code, the data). Each segment, read alone, finds the template's phrases
("Array indexing", "String concatenation", "Function calls") in the user's own words, so they rank first in
every one of those conversations and fill the archive's top concepts, while what each conversation is about
(the code it pastes) ranks after them. Only the archive as a whole shows that the sentence is a template, so
the rule runs in the concepts stage, over every current extraction, before any hypothesis is resolved:

1. an evidence sentence is *boilerplate* when the same text (verbatim, as the extractor copied it) is evidence
   in at least `MIN_CONVERSATIONS` conversations, each time inside a user message that says more than that
   sentence and holds another such repeated sentence (a template is a block of instructions), and what those
   messages say besides the repeated sentences differs from one to the next (a template is filled with
   something new each time; one question pasted again with its data, "nested json read in spark and give
   flatten data structure", or one conversation imported twice, is the user's subject, not a template);
2. boilerplate sentences are removed from every hypothesis's evidence; a hypothesis that cited one and that no
   user message says outside the boilerplate is dropped, and so is, later in the same conversation, one that
   only replies say and whose words are among a dropped one's ("Array indexing", "Concatenation" after
   "String concatenation"): the replies only echo the template's words back.

Language-independent (verbatim text), no word list. One pass over the stored hypotheses, holding a hash per
distinct evidence sentence; the archive is read only for the few sentences that repeat.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from rapidfuzz import fuzz

from contracts.concepts import ConceptHypothesis
from staging.db import IN_VALUES, json_values

MIN_CONVERSATIONS = 3
REST_CHARS = 2_000  # how much of what a message says besides the template is compared
SAME_SUBJECT = 90  # rapidfuzz ratio (0-100) at which two messages' rests are one subject said again


@dataclass
class Boilerplate:
    """The boilerplate sentences of an archive, the conversations that hold them (by segment), and what stripping
    them removed."""

    sentences: frozenset[str] = frozenset()
    conversation_of: dict[str, str] = field(default_factory=dict)  # segment -> its conversation, where one holds
    dropped: int = 0
    _echoes: dict[str, list[frozenset[str]]] = field(default_factory=dict)  # conversation -> words of dropped titles
    _roles: dict[str, str] = field(default_factory=dict)

    def counts(self) -> dict[str, int]:
        return {"boilerplate_sentences": len(self.sentences), "boilerplate_dropped": self.dropped}

    def strip(
        self, archive: sqlite3.Connection, segment_id: str, new: Sequence[tuple[int, ConceptHypothesis]]
    ) -> list[tuple[int, ConceptHypothesis]]:
        """`new` without boilerplate evidence (indexes kept); hypotheses that only boilerplate made are left out,
        and so are the replies' echoes of them later in the conversation ("array indexing" said back by the
        assistant after the template asked for it)."""
        conversation = self.conversation_of.get(segment_id)
        if conversation is None:
            return list(new)
        echoes = self._echoes.setdefault(conversation, [])
        kept: list[tuple[int, ConceptHypothesis]] = []
        for index, hypothesis in new:
            spans = [s for s in hypothesis.evidence_spans if s.text.strip() not in self.sentences]
            by_user = any(self._role(archive, s.message_id) == "user" for s in spans)
            words = _words(hypothesis.title)
            if len(spans) < len(hypothesis.evidence_spans) and not by_user:
                echoes.append(words)
            elif by_user or not any(words <= other for other in echoes):
                kept.append((index, hypothesis.model_copy(update={"evidence_spans": spans})))
                continue
            self.dropped += 1
        return kept

    def _role(self, archive: sqlite3.Connection, message_id: str) -> str:
        if message_id not in self._roles:
            row = archive.execute("SELECT role FROM messages WHERE uuid = ?", (message_id,)).fetchone()
            self._roles[message_id] = str(row[0]) if row else ""
        return self._roles[message_id]


def find_boilerplate(staging: sqlite3.Connection, archive: sqlite3.Connection) -> Boilerplate:
    """The boilerplate sentences among the evidence of every current extraction (rule 1 above)."""
    repeated = _repeated(
        staging.execute(
            "SELECT s.conversation_id, e.hypotheses FROM segment_extractions se"
            " JOIN extractions e ON e.cache_key = se.cache_key AND e.status = 'ok'"
            " JOIN segments s ON s.segment_id = se.segment_id AND s.retired_run_id IS NULL"
        )
    )
    if not repeated:
        return Boilerplate()
    _first_messages(archive, repeated)
    ids = {m for places in repeated.values() for m in places.values() if m}
    messages = {
        str(row[0]): (str(row[1]), str(row[2]), str(row[3]))
        for row in archive.execute(
            f"SELECT uuid, conversation_id, role, text FROM messages WHERE uuid IN {IN_VALUES}", (json_values(ids),)
        )
    }
    held: dict[str, list[str]] = {}  # message -> the repeated sentences it holds (a user's, with more besides)
    for sentence, places in repeated.items():
        for message_id in places.values():
            _, role, text = messages.get(message_id, ("", "", ""))
            if role == "user" and len(text.strip()) > len(sentence):
                held.setdefault(message_id, []).append(sentence)
    found: set[str] = set()
    holding: set[str] = set()  # the conversations that hold a boilerplate sentence
    for sentence, places in repeated.items():
        subjects: dict[str, str] = {}  # conversation -> what its message says besides the repeated sentences
        for message_id in places.values():
            if len(held.get(message_id, ())) >= 2:  # a block of instructions, not one question asked again
                conversation, _, text = messages[message_id]
                subjects.setdefault(conversation, _rest(text, held[message_id]))
        if _distinct(subjects.values()) >= MIN_CONVERSATIONS:
            found.add(sentence)
            holding.update(places)
    if not found:
        return Boilerplate()
    segments = staging.execute(
        f"SELECT segment_id, conversation_id FROM segments WHERE conversation_id IN {IN_VALUES}",
        (json_values(holding),),
    )
    return Boilerplate(frozenset(found), {str(row[0]): str(row[1]) for row in segments})


def _words(title: str) -> frozenset[str]:
    return frozenset(w.rstrip("s") for w in title.casefold().split())


def _rest(text: str, sentences: Iterable[str]) -> str:
    for sentence in sentences:
        text = text.replace(sentence, " ")
    return " ".join(text.split())[:REST_CHARS]


def _distinct(subjects: Iterable[str]) -> int:
    """How many of these differ from each other (up to `MIN_CONVERSATIONS`): a message pasted again with a few
    characters changed is one subject."""
    kept: list[str] = []
    for subject in subjects:
        if all(fuzz.ratio(subject, other) < SAME_SUBJECT for other in kept):
            kept.append(subject)
            if len(kept) >= MIN_CONVERSATIONS:
                break
    return len(kept)


def _repeated(rows: Iterable[tuple[str, str | None]]) -> dict[str, dict[str, str]]:
    """Evidence sentences cited in `MIN_CONVERSATIONS` conversations or more -> {conversation: a message id, ""
    for the first conversation's (looked up later)}.

    Every sentence is held as a hash with the first conversation that cites it (one string per segment, shared),
    the text and message ids only once it repeats: the pass holds about 100 bytes per distinct sentence."""
    first: dict[int, str] = {}
    repeated: dict[str, dict[str, str]] = {}
    for conversation, raw in rows:
        for hypothesis in json.loads(raw or "[]"):
            for span in hypothesis.get("evidence_spans", ()):
                text = str(span.get("text", "")).strip()
                seen = first.setdefault(hash(text), conversation)
                if seen != conversation:
                    places = repeated.setdefault(text, {seen: ""})
                    places.setdefault(conversation, str(span.get("message_id", "")))
    return {text: places for text, places in repeated.items() if len(places) >= MIN_CONVERSATIONS}


def _first_messages(archive: sqlite3.Connection, repeated: dict[str, dict[str, str]]) -> None:
    """Fill in the message of each sentence's first conversation: a user message of it holding the sentence."""
    for sentence, places in repeated.items():
        for conversation, message_id in places.items():
            if not message_id:
                row = archive.execute(
                    "SELECT uuid FROM messages WHERE conversation_id = ? AND role = 'user' AND instr(text, ?) > 0"
                    " ORDER BY seq LIMIT 1",
                    (conversation, sentence),
                ).fetchone()
                places[conversation] = str(row[0]) if row else ""
