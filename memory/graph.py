"""Building the Cue-Tag-Content graph from plain inputs: a pure function, the cues stage's step 3.

    messages + concept evidence + topic links  ->  MemoryGraph (content, cues, tags, weighted edges, merges)

- Content: every visible active message. Its key text (what recall matches) is the message, prefixed with
  who said it, and expanded with the names of the concepts extracted from it (appending extracted facts to
  the key, not as separate documents, is what raised recall in the LongMemEval paper).
- Cues (anchors), cased phrases a person would have written, never word stems:
  - live concepts, named by their titles, linked to the messages their evidence cites (weight: the evidence's
    confidence) and to the messages that say their title without being evidence (`phrase_weight`; titles of
    several words, or names with inner capitals or digits: "customer churn model", "PostgreSQL");
  - categories (memory/wordnet.py): the WordNet hypernyms of a concept's head noun, linked to its content with
    a lower weight that shrinks with each step up, so a question naming the category ("pet", "health device")
    reaches what names an instance ("golden retriever", "hearing aid"). No WordNet: no category cues.
- Tags (groupings): conversation, day, month, role, source, topic (through the message's segment), and the
  concept type of a concept cue. Cues link to the conversations they occur in (weight: the cue's share there).
- Hub control: a cue linked to more than `hub_share` of all content is a hub (for example "code"): its IDF
  weight shrinks, it keeps its content edges but loses its tag edges (it would spread everywhere). Reported.
- Consolidation: messages of one conversation, one day and one role whose key terms have Jaccard similarity
  of at least `consolidate_threshold` and the same concept cues become one merged node pointing at them.

Built in batches of whole conversations (`GraphBuilder`), so memory stays flat in the archive's size: a first
pass counts the global parts (term and concept document frequencies, the message count), a second builds each
batch's content, edges and merges, and `finish` turns the small aggregates (cue frequencies, tag sizes, cue
counts per conversation) into cues, tags and cue-tag edges. `build_graph` is the one-batch case.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from clients.shown import shown_text
from contracts.settings import MemorySettings
from memory.consolidate import consolidate, dedupe
from memory.names import NAMED_ROLES, Names
from memory.text import estimate_tokens, terms
from memory.wordnet import WordNet
from staging.memory import ContentRow, CueRow, EdgeRow, EdgeTuple, MemoryGraph, TagRow


@dataclass(frozen=True, slots=True)
class MessageInput:
    uuid: str
    conversation_id: str
    title: str | None
    seq: int
    role: str
    author: str | None
    created_at: str | None
    text: str
    source: str


@dataclass(frozen=True, slots=True)
class EvidenceInput:
    concept_id: str
    title: str
    concept_type: str
    message_id: str
    confidence: float


@dataclass(frozen=True, slots=True)
class TopicInput:
    message_id: str
    topic_uid: str
    label: str
    weight: float


@dataclass(frozen=True, slots=True)
class FrozenCounts:
    """A full build's global counts, which an incremental run after it keeps (`GraphBuilder.resume`)."""

    n: int
    authors: list[str]
    hub_floor: float
    concept_hubs: list[str]
    hubs: list[str]


@dataclass
class BuildReport:
    hubs: list[dict[str, Any]] = field(default_factory=list)
    merged_groups: int = 0
    merged_messages: int = 0


def speaker(role: str, author: str | None) -> str:
    """Who said it, as the key text names them: a person's name when the export has one, else the role."""
    if author and role in NAMED_ROLES:
        return author
    return role


def key_base(message: MessageInput) -> str:
    """Who said it and what recall shows of it (clients/shown.py: no model's notes, an artifact by its title)."""
    return f"{speaker(message.role, message.author)}: {shown_text(message.text)}"


def dense_key(text: str, names: Names) -> str:
    """What the key embedder reads for a message: what was said, without the memory's speaker names
    (memory/names.py: a sentence model reads a name as meaning). No speaker or role prefix (who said it is the
    lexical key's prefix, `key_base`, and the speaker tag) and no cue names: a sentence model reads sentences,
    and a text that names nobody is then exactly what the embed stage embedded, so its vector is already cached
    (`role: text` keys cost the cues stage ~290 CPU-ms per 1k messages to embed again; recall held without the
    prefix, benchmarks/RESULTS.md "cues: keys shared with the embed stage"). Read as recall shows it
    (clients/shown.py: no model's notes, an artifact by its title), as the lexical key is: the few messages with
    such markup are embedded again here, every other text is the embed stage's."""
    return names.mask(shown_text(text))


@dataclass(slots=True)
class BatchGraph:
    """One batch of whole conversations: its content rows, content edges, merges, and how many of its messages
    each cue links in each conversation (summed over the archive into cue-tag edges by `finish`)."""

    content: list[ContentRow]
    edges: list[EdgeTuple]  # (src, dst, kind, weight), in (src, dst) order
    merges: list[tuple[str, str]]
    cue_conversations: list[tuple[str, str, int]]


class GraphBuilder:
    """The graph built batch by batch: `count` every message, then `batch` each batch of whole conversations (in
    any order), then `finish`. The rows equal `build_graph`'s over all messages at once."""

    def __init__(
        self,
        evidence: Iterable[EvidenceInput],
        settings: MemorySettings,
        wordnet: WordNet | None = None,
        concepts: Mapping[str, tuple[str, str]] | None = None,
    ) -> None:
        """`concepts` (concept cue -> title, type): every live concept with evidence, when `evidence` is only some
        messages' (an incremental run reads the evidence of the conversations it digests or rebuilds: `add_evidence`
        for more); None: the concepts of `evidence`, which is then all of it."""
        self.settings = settings
        self.wordnet = wordnet
        self.category_names: dict[str, str] = {}  # category cue -> its name (WordNet lemmas)
        self._categories: dict[str, list[tuple[str, float]]] = {}  # concept cue -> (category cue, factor)
        self.report = BuildReport()
        self.n = 0
        self.df: Counter[str] = Counter()  # cue -> content linked (concepts in `count`, keyphrases in `batch`)
        self.evidence: dict[str, dict[str, float]] = defaultdict(dict)  # message -> concept cue -> weight
        self.concepts: dict[str, tuple[str, str]] = {}  # concept cue -> title, type
        self.add_evidence(evidence, concepts is None)
        if concepts is not None:
            self.concepts = dict(concepts)
        self.tag_labels: dict[str, tuple[str, str]] = {}
        self.tag_members: Counter[str] = Counter()
        self.concept_hubs: set[str] = set()
        self.hub_floor = 0.0
        self.started = False  # pass 2 begun: the message count and concept hubs are final
        self.authors: set[str] = set()  # the named speakers (memory/names.py), counted in pass 1
        self.frozen_hubs: set[str] | None = None  # an incremental run keeps its base build's hubs (`resume`)
        self.phrases = phrase_index(self.concepts)

    def add_evidence(self, evidence: Iterable[EvidenceInput], concepts: bool = False) -> None:
        """Messages' concept evidence (each message's whole evidence, once); `concepts`: their concepts too."""
        for e in sorted(evidence, key=lambda e: (e.concept_id, e.message_id)):
            cue_id = f"concept:{e.concept_id}"
            if concepts:
                self.concepts[cue_id] = (e.title, e.concept_type)
            weight = max(self.evidence[e.message_id].get(cue_id, 0.0), min(max(e.confidence, 0.0), 1.0))
            self.evidence[e.message_id][cue_id] = weight

    def count(self, message: MessageInput) -> None:
        """Pass 1: the global frequencies (a message is counted once)."""
        self.count_text(message.uuid, message.role, message.author, message.text)

    def count_text(self, uuid: str, role: str, author: str | None, text: str) -> None:
        """`count` from the four fields it reads (pass 1 needs no conversation order, so no full message)."""
        self.n += 1
        if author and role in NAMED_ROLES:
            self.authors.add(author)
        found = self.evidence.get(uuid)
        if found:
            self.df.update(found.keys())

    def resume(
        self,
        frozen: FrozenCounts,
        cue_df: Mapping[str, int],
        tags: Iterable[tuple[str, str, str, int]],
    ) -> None:
        """An incremental run (memory/cues_incremental.py): instead of pass 1, the base full build's global counts,
        kept frozen (message count, speakers, hub floor and hubs), and the base run's
        cue document frequencies and tag sizes (tag, kind, label, size), from which the caller takes away what the
        conversations about to be rebuilt had added. Concept-type tags are counted again by `finish`."""
        self.n, self.authors = frozen.n, set(frozen.authors)
        self.hub_floor, self.concept_hubs = frozen.hub_floor, set(frozen.concept_hubs)
        self.frozen_hubs = set(frozen.hubs)
        self.started = True
        self.df = Counter(cue_df)
        for tag_id, kind, label, size in tags:
            if kind != "concept_type":
                self.tag_labels[tag_id] = (kind, label)
                self.tag_members[tag_id] = size

    def recount(self, message: MessageInput) -> None:
        """An incremental run's pass 1 for a rebuilt message: its concept cues' document frequency (the message
        count stays frozen)."""
        self.df.update(self.evidence.get(message.uuid, {}).keys())

    def frozen_counts(self) -> FrozenCounts:
        """What an incremental run after this full build keeps frozen (after `finish`)."""
        return FrozenCounts(
            self.n,
            sorted(self.authors),
            self.hub_floor,
            sorted(self.concept_hubs),
            sorted(self.hubs()),
        )

    def _start(self) -> None:
        if self.started:
            return
        self.started = True
        n = max(self.n, 1)
        self.hub_floor = max(self.settings.hub_min_content, self.settings.hub_share * n)  # more links: a hub
        self.concept_hubs = {c for c, count in self.df.items() if count > self.hub_floor}

    def batch(self, messages: Sequence[MessageInput], topics: Iterable[TopicInput]) -> BatchGraph:
        """Pass 2: one batch of whole conversations (consolidation compares messages within a conversation)."""
        self._start()
        settings, hubs = self.settings, self.concept_hubs
        messages = sorted(messages, key=lambda m: (m.conversation_id, m.seq, m.uuid))
        base_terms = [terms(m.text) for m in messages]
        content_cues: dict[str, dict[str, float]] = {}
        edges: list[EdgeTuple] = []
        content: list[ContentRow] = []
        by_conversation: Counter[tuple[str, str]] = Counter()
        for message, words in zip(messages, base_terms, strict=True):
            evidence = self.evidence.get(message.uuid, {})
            cues_here = dict(evidence)
            said = [c for c in said_phrases(words, self.phrases) if c not in cues_here and c not in hubs]
            for cue_id in said[: settings.keyphrases_per_content]:
                cues_here[cue_id] = settings.phrase_weight
                self.df[cue_id] += 1
            for cue_id, factor in self._category_links(cues_here, hubs).items():
                cues_here[cue_id] = factor
                self.df[cue_id] += 1
            content_cues[message.uuid] = cues_here
            names = [self.concepts[c][0] for c in sorted(evidence) if c in self.concepts and c not in hubs]
            key = key_base(message)
            if settings.expand_keys and names:
                key += "\n" + "; ".join(names)
            day = message.created_at[:10] if message.created_at else None
            content.append(
                ContentRow(
                    message.uuid,
                    "message",
                    message.conversation_id,
                    message.seq,
                    message.role,
                    message.author,
                    message.created_at,
                    day,
                    message.source,
                    key,
                    estimate_tokens(shown_text(message.text)),  # what a recall piece costs: what it shows
                )
            )
            for cue_id, weight in sorted(cues_here.items()):
                edges.append((cue_id, message.uuid, "cue-content", weight))
                by_conversation[(cue_id, message.conversation_id)] += 1
            tags = [
                (f"conv:{message.conversation_id}", "conversation", message.title or message.conversation_id),
                (f"role:{message.role}", "role", message.role),
                (f"source:{message.source}", "source", message.source),
            ]
            if day:
                tags += [(f"day:{day}", "day", day), (f"month:{day[:7]}", "month", day[:7])]
            for tag_id, kind, label in tags:
                self._tag(tag_id, kind, label)
                edges.append((tag_id, message.uuid, "tag-content", 1.0))
        for t in sorted(topics, key=lambda t: (t.message_id, t.topic_uid)):
            if t.message_id in content_cues:
                tag_id = f"topic:{t.topic_uid}"
                self._tag(tag_id, "topic", t.label)
                edges.append((tag_id, t.message_id, "tag-content", round(min(max(t.weight, 0.0), 1.0), 6)))
        merges = consolidate(messages, base_terms, content_cues, hubs, content, settings, self.report)
        pairs = [(cue, conversation, count) for (cue, conversation), count in by_conversation.items()]
        return BatchGraph(content, dedupe(edges), merges, pairs)

    def _category_links(self, cues_here: Mapping[str, float], hubs: set[str]) -> dict[str, float]:
        """The categories of the message's concept cues (not hubs): each at its best concept's weight x factor."""
        found: dict[str, float] = {}
        if self.wordnet is None or self.settings.hypernym_depth < 1:
            return found
        for cue_id, weight in cues_here.items():
            if cue_id not in self.concepts or cue_id in hubs:
                continue
            if cue_id not in self._categories:
                self._categories[cue_id] = self._categories_of(self.concepts[cue_id][0])
            for category, factor in self._categories[cue_id]:
                linked = round(weight * factor, 6)
                if linked > found.get(category, 0.0) and category not in cues_here:
                    found[category] = linked
        return found

    def _categories_of(self, title: str) -> list[tuple[str, float]]:
        assert self.wordnet is not None
        if not category_head(title):
            return []
        out = []
        for category in self.wordnet.categories(title, self.settings.hypernym_depth):
            cue_id = f"wn:{category.offset:08d}"
            self.category_names[cue_id] = category.name
            out.append((cue_id, self.settings.hypernym_weight * 0.8 ** (category.distance - 1)))
        return out

    def _tag(self, tag_id: str, kind: str, label: str) -> None:
        self.tag_labels.setdefault(tag_id, (kind, label))
        self.tag_members[tag_id] += 1

    def finish(self) -> tuple[list[CueRow], list[TagRow], BuildReport]:
        """The cues (document frequency, IDF, hub flag) and the tags, once every batch is built."""
        self._start()
        n = max(self.n, 1)
        hubs = self.hubs()
        cues = []
        for cue_id in sorted(c for c, count in self.df.items() if count > 0):  # < 1: rebuilt away (`resume`)
            name, kind, ctype = self._cue(cue_id)
            idf = round(math.log(1 + n / self.df[cue_id]), 6)
            cues.append(CueRow(cue_id, name, kind, ctype, self.df[cue_id], idf, cue_id in hubs))
            if ctype and cue_id not in hubs:
                self._tag(f"ctype:{ctype}", "concept_type", ctype)
        self.report.hubs = [
            {"cue": self._cue(c)[0], "share": round(self.df[c] / n, 4), "action": "idf down-weighted, no tag edges"}
            for c in sorted(hubs, key=lambda c: (-self.df[c], c))
        ]
        tags = [
            TagRow(t, *self.tag_labels[t], self.tag_members[t]) for t in sorted(self.tag_labels) if self.tag_members[t]
        ]
        return cues, tags, self.report

    def names(self) -> Names:
        """The memory's speaker names (complete once every message is counted)."""
        return Names.of(self.authors)

    def hubs(self) -> set[str]:
        if self.frozen_hubs is not None:
            return {c for c in self.frozen_hubs if self.df.get(c, 0) > 0}
        return {c for c, count in self.df.items() if count > self.hub_floor}

    def _cue(self, cue_id: str) -> tuple[str, str, str | None]:
        if cue_id in self.concepts:
            title, ctype = self.concepts[cue_id]
            return title, "concept", ctype
        if cue_id.startswith("wn:"):  # a WordNet category, stored as a phrase cue
            if cue_id not in self.category_names and self.wordnet is not None:  # carried by an incremental run
                self.category_names[cue_id] = self.wordnet.name(int(cue_id[3:]))
            return self.category_names.get(cue_id, cue_id), "keyphrase", None
        return cue_id.removeprefix("kp:"), "keyphrase", None

    def cue_tag_edges(self, cue_conversations: Iterable[tuple[str, str, int]]) -> Iterator[EdgeTuple]:
        """Cue -> conversation edges (weight: the cue's share there) from (cue, conversation, count) rows summed
        over all batches, and cue -> concept type edges; hubs get none."""
        hubs = self.hubs()
        for cue_id, conversation_id, count in cue_conversations:
            if cue_id not in hubs:
                yield cue_id, f"conv:{conversation_id}", "cue-tag", round(count / self.df[cue_id], 6)
        for cue_id in sorted(self.concepts):
            ctype = self.concepts[cue_id][1]
            if self.df[cue_id] > 0 and ctype and cue_id not in hubs:
                yield cue_id, f"ctype:{ctype}", "cue-tag", 1.0


@dataclass(frozen=True, slots=True)
class PhraseIndex:
    """The concept titles a message may say (`phrase_index`): each title's terms -> its concept cue, and per first
    term the lengths of the titles starting with it, longest first. A position is matched by one lookup per length
    (at most one title has given terms), not by comparing every title that shares its first term (~6 a word)."""

    phrases: dict[tuple[str, ...], str]
    lengths: dict[str, tuple[int, ...]]


def phrase_index(concepts: Mapping[str, tuple[str, str]]) -> PhraseIndex:
    """The concepts whose title can be found said in a message: several words ("customer churn model"), or one name
    with inner capitals or digits ("PostgreSQL", "GPT-4"); a lone common word ("Data") is linked through its
    evidence only. When two concepts share their terms, the first by id."""
    phrases: dict[tuple[str, ...], str] = {}
    lengths: dict[str, set[int]] = defaultdict(set)
    for cue_id in sorted(concepts):
        title = concepts[cue_id][0]
        words = tuple(terms(title))
        if not words or words in phrases:
            continue
        if len(words) < 2 and (len(title.split()) > 1 or not any(ch.isupper() or ch.isdigit() for ch in title[1:])):
            continue  # one common word, or one word left of several ("uses F", "Get Started"): evidence only
        phrases[words] = cue_id
        lengths[words[0]].add(len(words))
    return PhraseIndex(phrases, {first: tuple(sorted(sizes, reverse=True)) for first, sizes in lengths.items()})


def said_phrases(words: Sequence[str], index: PhraseIndex) -> list[str]:
    """The concept cues whose titles the message's terms say (longest match first, no overlaps: a match's words
    start no other), the most said first, then the longest, then by id."""
    phrases, lengths = index.phrases, index.lengths
    counts: Counter[str] = Counter()
    length: dict[str, int] = {}
    end, after = len(words), 0  # `after`: the first position not inside the last match
    for i in [i for i, word in enumerate(words) if word in lengths]:
        if i < after:
            continue
        for size in lengths[words[i]]:
            cue_id = phrases.get(tuple(words[i : i + size])) if i + size <= end else None
            if cue_id is not None:
                counts[cue_id] += 1
                length[cue_id] = size
                after = i + size
                break
    return sorted(counts, key=lambda c: (-counts[c], -length[c], c))


def category_head(title: str) -> bool:
    """Whether a concept title's head may be looked up in WordNet: not a product or service name made of an
    acronym or a camel-cased word and a common noun ("AWS Glue", "Power BI", "iPhone case" are no glue, bi or
    case to file under a category)."""
    for word in title.split():
        if sum(ch.isupper() for ch in word) > 1 or (word[:1].islower() and any(ch.isupper() for ch in word)):
            return False
    return True


def build_graph(
    messages: Sequence[MessageInput],
    evidence: Sequence[EvidenceInput],
    topics: Sequence[TopicInput],
    settings: MemorySettings,
    wordnet: WordNet | None = None,
) -> tuple[MemoryGraph, BuildReport]:
    """The whole graph in one batch, deterministic for the same inputs (everything sorted by id)."""
    builder = GraphBuilder(evidence, settings, wordnet)
    for message in messages:
        builder.count(message)
    part = builder.batch(messages, topics)
    cues, tags, report = builder.finish()
    pairs = sorted(part.cue_conversations)
    edges = [EdgeRow(*e) for e in sorted([*part.edges, *builder.cue_tag_edges(pairs)], key=lambda e: (e[0], e[1]))]
    content = [r for r in part.content if r.kind == "message"] + sorted(
        (r for r in part.content if r.kind == "merged"), key=lambda r: r.content_id
    )
    return MemoryGraph(content, cues, tags, edges, part.merges), report
