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

Language-independent (verbatim text), no word list. `scan_boilerplate` is the rule in one pass over the stored
hypotheses; `find_boilerplate`, what the stage calls, keeps its work in staging.db (staging/template_state.py) and
redoes only what a run's new extractions and changed conversations touch, with the same answer (issue 23: at
250k messages nearly every extraction cites a repeated sentence, so the pass cost a scheduled run 4-6 CPU-s).
"""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace

import orjson
from rapidfuzz import fuzz

from contracts.concepts import ConceptHypothesis
from staging import archive_changes
from staging import template_state as state
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
    new_sentences: frozenset[str] = frozenset()  # found by this run, not the last (stored evidence may cite them)
    touched: frozenset[str] = frozenset()  # conversations an event touched this run (their replays forgotten)
    dropped: int = 0
    dropped_in: Counter[str] = field(default_factory=Counter)  # conversation -> hypotheses dropped there
    kept_in: set[str] = field(default_factory=set)  # conversations where `strip` kept a hypothesis
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
                self.kept_in.add(conversation)
                continue
            self.dropped += 1
            self.dropped_in[conversation] += 1
        return kept

    def _role(self, archive: sqlite3.Connection, message_id: str) -> str:
        if message_id not in self._roles:
            row = archive.execute("SELECT role FROM messages WHERE uuid = ?", (message_id,)).fetchone()
            self._roles[message_id] = str(row[0]) if row else ""
        return self._roles[message_id]


def scan_boilerplate(staging: sqlite3.Connection, archive: sqlite3.Connection) -> Boilerplate:
    """The boilerplate sentences among the evidence of every current extraction (rule 1 above), in one pass over
    all of them and nothing stored: what `find_boilerplate` keeps up to date, and the reference it must equal."""
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


# ---------------------------------------------------------------- the rule kept up to date (issue 23)


def find_boilerplate(staging: sqlite3.Connection, archive: sqlite3.Connection) -> Boilerplate:
    """`scan_boilerplate`'s answer, from the state kept in staging.db (staging/template_state.py), brought up to
    date with what changed since it was written: the caller holds the write transaction.

    Reading order is segment_extractions' rowid order (the scan's plan reads that table first, in that order). A
    run parses only the extractions that became current since, and recomputes only the sentences they cite or
    cited, and those with a place in a conversation the archive changed (its messages' texts are read); a
    sentence's decision also reads, for each message it is placed at, the other repeated sentences placed there,
    so when a sentence's places change, every sentence placed at one of its old or new messages is decided again.
    An archive that does not log its changes, or another archive than the mark's, rebuilds the state."""
    now = state.current(staging)
    mark = archive_changes.mark(archive) if archive_changes.tracked(archive) else None
    since = archive_changes.Mark.from_json(state.read_mark(staging))
    changed: set[str] = set()
    if mark is None or since is None or not archive_changes.comparable(archive, since):
        state.clear(staging)
        kept: dict[int, state.Extraction] = {}
    else:
        changed = set(archive_changes.changed_since(archive, since))
        kept = {e[0]: e for e in state.stored(staging)}
    found_before = state.found_keys(staging)
    present = {e[0]: e for e in now}
    gone = [seq for seq, e in kept.items() if present.get(seq) != e]
    added = [e for e in now if kept.get(e[0]) != e]
    # A conversation's remembered replay (extract/template_drops.py) holds while what it hands the rule is the same:
    # forgotten when the archive changes it or its extractions change (here), or a sentence it cites is found or
    # lost (below), or the concept store is emptied (the stage).
    events = changed | {kept[seq][4] for seq in gone} | {e[4] for e in added}
    state.forget_drops(staging, events)
    keys = state.remove(staging, gone)
    texts: dict[int, str] = {}
    sizes: dict[int, int] = {}
    # A first build has every citation at hand (in reading order), and decides every sentence: nothing to read back
    every: dict[int, list[tuple[int, int, str, str]]] | None = None if kept else {}
    spans = list(_spans(staging, added, texts, sizes, every))
    state.add(staging, added, spans, sizes)
    keys.update(texts)
    keys.update(state.cited_by(staging, "conversation_id", changed))  # their places read the archive again
    before = state.repeated(staging, keys)
    after: dict[int, state.Repeated] = {}
    touched: set[str] = set()  # messages whose repeated sentences changed
    cites = state.citations(staging, keys) if every is None else every
    for key in cites.keys() | before.keys():  # a repeated sentence no longer cited at all is in `before` only
        old = before.get(key)
        cited = cites.get(key, [])
        new = _places(archive, cited, texts.get(key) or (old.text if old else ""), old, changed) if cited else None
        if new is not None:
            after[key] = new
        if old is None or new is None or (old.places, old.rank) != (new.places, new.rank):
            touched.update(m for r in (old, new) if r is not None for _, m in r.places)
    touched.discard("")
    if kept:
        state.write_repeated(staging, [k for k in before if k not in after], after)
        decide = set(after) | {k for placed in state.placed_at(staging, touched).values() for k, *_ in placed}
        state.set_found(staging, _decide(staging, archive, state.repeated(staging, decide)))
        sentences, holding = state.found(staging)
    else:
        decided = _decide(staging, archive, after, _placed(after))
        after = {k: replace(r, found=decided[k]) for k, r in after.items()}
        state.write_repeated(staging, [], after)
        sentences = [r.text for r in after.values() if r.found]
        holding = sorted({c for r in after.values() if r.found for c, _ in r.places})
    state.write_mark(staging, None if mark is None else mark.as_json())
    found_now = state.found_keys(staging)
    if kept:  # a state built again has no remembered replays left (`state.clear`)
        flipped = state.citing(staging, found_before ^ found_now)
        events |= flipped
        state.forget_drops(staging, flipped)
    if not sentences:
        return Boilerplate()
    segments = staging.execute(
        f"SELECT segment_id, conversation_id FROM segments WHERE conversation_id IN {IN_VALUES}",
        (json_values(holding),),
    )
    new_sentences = frozenset(state.texts_of(staging, found_now - found_before))
    return Boilerplate(
        frozenset(sentences), {str(row[0]): str(row[1]) for row in segments}, new_sentences, frozenset(events)
    )


def _spans(
    staging: sqlite3.Connection,
    added: Sequence[state.Extraction],
    texts: dict[int, str],
    sizes: dict[int, int],
    cites: dict[int, list[tuple[int, int, str, str]]] | None = None,
) -> Iterator[state.Span]:
    """Every evidence span of these extractions as (sentence key, seq, ord, message); `texts` gets each sentence's
    text by key, `sizes` each extraction's number of hypotheses by seq, `cites` (when given) `state.citations`."""
    keys: dict[str, int] = {}  # text -> key: most spans cite a sentence cited before
    for start in range(0, len(added), 500):
        chunk = added[start : start + 500]
        stored = state.hypotheses(staging, {e[2] for e in chunk})
        for seq, _, cache_key, _, conversation in chunk:
            ord_ = 0
            hypotheses = orjson.loads(stored.get(cache_key) or "[]")
            sizes[seq] = len(hypotheses)
            for hypothesis in hypotheses:
                for span in hypothesis.get("evidence_spans", ()):
                    text = str(span.get("text", "")).strip()
                    key = keys.get(text)
                    if key is None:
                        key = keys[text] = state.sentence_key(text)
                        texts.setdefault(key, text)
                    message = str(span.get("message_id", ""))
                    if cites is not None:
                        cites.setdefault(key, []).append((seq, ord_, conversation, message))
                    yield key, seq, ord_, message
                    ord_ += 1


def _places(
    archive: sqlite3.Connection,
    cited: Sequence[tuple[int, int, str, str]],
    text: str,
    old: state.Repeated | None,
    changed: set[str],
) -> state.Repeated | None:
    """A sentence's row from its citations in reading order, as the scan builds it (`_repeated`,
    `_first_messages`), or None when fewer than `MIN_CONVERSATIONS` conversations cite it."""
    first = cited[0][2]
    places: dict[str, str] = {}
    rank = (0, 0)
    for seq, ord_, conversation, message in cited:
        if conversation not in places:
            if places:  # a second conversation: where the scan adds the sentence to its (ordered) repeated ones
                rank = rank if len(places) > 1 else (seq, ord_)
            places[conversation] = "" if conversation == first else message
    if len(places) < MIN_CONVERSATIONS:
        return None
    if old is not None and old.places[0][0] == first and first not in changed:
        places[first] = old.places[0][1]  # the first conversation's message, looked up before
    else:
        row = archive.execute(
            "SELECT uuid FROM messages WHERE conversation_id = ? AND role = 'user' AND instr(text, ?) > 0"
            " ORDER BY seq LIMIT 1",
            (first, text),
        ).fetchone()
        places[first] = str(row[0]) if row else ""
    return state.Repeated(text, rank, old.found if old else False, tuple(places.items()))


def _placed(sentences: dict[int, state.Repeated]) -> dict[str, list[tuple[int, str, int, int]]]:
    """`state.placed_at` of every message, when `sentences` are all the repeated ones."""
    found: dict[str, list[tuple[int, str, int, int]]] = {}
    for key, sentence in sentences.items():
        for _, message in sentence.places:
            found.setdefault(message, []).append((key, sentence.text, *sentence.rank))
    return found


def _decide(
    staging: sqlite3.Connection,
    archive: sqlite3.Connection,
    sentences: dict[int, state.Repeated],
    placed: dict[str, list[tuple[int, str, int, int]]] | None = None,
) -> dict[int, bool]:
    """The rule's decision for each of these repeated sentences (as `scan_boilerplate` makes it); `placed`: every
    message's repeated sentences, when the caller has them (else read for the messages these are placed at)."""
    ids = {m for r in sentences.values() for _, m in r.places if m}
    messages = {
        str(row[0]): (str(row[1]), str(row[2]), str(row[3]))
        for row in archive.execute(
            f"SELECT uuid, conversation_id, role, text FROM messages WHERE uuid IN {IN_VALUES}", (json_values(ids),)
        )
    }
    held: dict[str, list[str]] = {}  # message -> the repeated sentences it holds, in the scan's order
    for message_id, there in (state.placed_at(staging, ids) if placed is None else placed).items():
        _, role, text = messages.get(message_id, ("", "", ""))
        size = len(text.strip())
        if role == "user" and message_id in ids:
            ordered = there if len(there) < 2 else sorted(there, key=lambda p: (p[2], p[3]))
            held[message_id] = [s for _, s, *_ in ordered if size > len(s)]
    decisions: dict[int, bool] = {}
    for key, sentence in sentences.items():
        seen: set[str] = set()
        kept: list[str] = []
        for _, message_id in sentence.places:
            if len(held.get(message_id, ())) < 2:
                continue
            conversation, _, text = messages[message_id]
            if conversation in seen:
                continue
            seen.add(conversation)
            subject = _rest(text, held[message_id])
            if all(fuzz.ratio(subject, other) < SAME_SUBJECT for other in kept):
                kept.append(subject)
                if len(kept) >= MIN_CONVERSATIONS:
                    break
        decisions[key] = len(kept) >= MIN_CONVERSATIONS
    return decisions
