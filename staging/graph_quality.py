"""How close the written graph is to what a person would have written: a data dir scored against labels.

The labels (benchmarks/labels/dev_labels.json, made blind from the raw exports) say, per conversation, its
topic group, the concepts a person would list and the facts the user states; plus `generic_never`, words that
must never be concepts. The measures (issue 20's, used unchanged by the held-out check):

- per conversation, precision of its top 5 concepts (by evidence inside the conversation) and recall of the
  labelled concepts among all its concepts;
- the share of the archive's top 30 concepts (by evidence) that are generic words;
- adjusted mutual information between each conversation's dominant topic and the labelled grouping, and the
  largest topic's share of conversations;
- recall of the labelled facts (same conversation, and the value's words or the quoted message match), and the
  precision of the facts found in labelled conversations (those matching some labelled fact of theirs).

A concept matches a labelled one when their normalised names or aliases are equal (lower case, `_-/` as spaces,
plural s dropped), or one's words are contained in the other's and the smaller has two or more words or is an
acronym, or they share two or more words with Jaccard >= 0.5. A concept whose normalised name is in
`generic_never` never matches. Read-only: both databases are opened with `mode=ro`.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

TOP_K = 5
ARCHIVE_TOP = 30
# Issue 20's targets: (direction, bound) per measure of `score_data_dir`.
TARGETS: dict[str, tuple[str, float]] = {
    "precision_at_5": (">=", 0.80),
    "concept_recall": (">=", 0.60),
    "generic_share_top30": ("<=", 0.05),
    "topic_ami": (">=", 0.60),
    "largest_topic_share": ("<=", 0.25),
}
_SPACES = re.compile(r"[\s_\-/]+")
_DROP = re.compile(r"[^\w\s]")


def normalise(name: str) -> str:
    """Lower case, `_-/` as spaces, other punctuation out, a plural s dropped from each word."""
    text = _DROP.sub("", _SPACES.sub(" ", name.casefold().replace("’", "'").replace("'s ", " ")))
    return " ".join(_singular(w) for w in text.split())


def _singular(word: str) -> str:
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def _is_acronym(surface: str) -> bool:
    letters = [c for c in surface if c.isalpha()]
    return 2 <= len(letters) <= 6 and all(c.isupper() for c in letters) and " " not in surface.strip()


def names_match(left: str, right: str) -> bool:
    """One surface form against another, by the rule in the module docstring (generic words aside)."""
    a, b = normalise(left), normalise(right)
    if not a or not b:
        return False
    if a == b:
        return True
    wa, wb = a.split(), b.split()
    sa, sb = set(wa), set(wb)
    small_surface, small, large = (left, sa, sb) if len(sa) <= len(sb) else (right, sb, sa)
    if small <= large and (len(small) >= 2 or _is_acronym(small_surface)):
        return True
    shared = sa & sb
    return len(shared) >= 2 and len(shared) / len(sa | sb) >= 0.5


@dataclass
class LabelledConcept:
    name: str
    aliases: list[str]

    def forms(self) -> list[str]:
        return [self.name, *self.aliases]


@dataclass
class Labels:
    conversations: dict[str, dict[str, Any]]
    generic_never: frozenset[str]

    @classmethod
    def load(cls, path: Path) -> Labels:
        raw = json.loads(path.read_text(encoding="utf-8"))
        return cls(raw["conversations"], frozenset(normalise(w) for w in raw.get("generic_never", [])))

    def concepts(self, conversation_id: str) -> list[LabelledConcept]:
        found = self.conversations[conversation_id].get("concepts", [])
        return [LabelledConcept(c["name"], list(c.get("aliases", []))) for c in found]

    def is_generic(self, title: str) -> bool:
        return normalise(title) in self.generic_never

    @property
    def topics_only(self) -> bool:
        """A grouping with no concepts labelled (benchmarks/labels/topic_grouping_*.json): only the topic measures
        mean anything against it."""
        return not any("concepts" in c for c in self.conversations.values())


@dataclass
class Concept:
    title: str
    aliases: list[str]
    evidence: int

    def forms(self) -> list[str]:
        return [self.title, *self.aliases]


def concept_matches(concept: Concept, labelled: LabelledConcept, labels: Labels) -> bool:
    if labels.is_generic(concept.title):
        return False
    return any(names_match(mine, theirs) for mine in concept.forms() for theirs in labelled.forms())


@dataclass
class ConversationScore:
    conversation_id: str
    top: list[str]
    precision: float | None  # None: no concept at all
    recall: float
    missed: list[str] = field(default_factory=list)
    wrong: list[str] = field(default_factory=list)


def score_conversation(
    conversation_id: str, concepts: Sequence[Concept], labels: Labels, top_k: int = TOP_K
) -> ConversationScore:
    """Precision of the top `top_k` concepts by evidence, recall of the labelled ones among all."""
    wanted = labels.concepts(conversation_id)
    ranked = sorted(concepts, key=lambda c: (-c.evidence, c.title.casefold()))
    top = ranked[:top_k]
    wrong = [c.title for c in top if not any(concept_matches(c, w, labels) for w in wanted)]
    precision = (len(top) - len(wrong)) / len(top) if top else None
    found = [w for w in wanted if any(concept_matches(c, w, labels) for c in ranked)]
    missed = [w.name for w in wanted if w not in found]
    recall = len(found) / len(wanted) if wanted else 1.0
    return ConversationScore(conversation_id, [c.title for c in top], precision, recall, missed, wrong)


def _open(path: Path) -> sqlite3.Connection:
    if not path.exists():
        raise FileNotFoundError(f"{path} does not exist: build the data dir first (chatmem run EXPORT)")
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    db.row_factory = sqlite3.Row
    return db


def conversation_concepts(archive: sqlite3.Connection, staging: sqlite3.Connection) -> dict[str, list[Concept]]:
    """Every conversation's concepts, evidence counted inside it (a merged concept counts for its target, each
    piece of evidence once: a merge copies the merged concept's evidence to its target, and keeps it)."""
    concepts = {
        r["concept_id"]: r
        for r in staging.execute("SELECT concept_id, title, aliases, state, merged_into FROM concepts")
    }
    conversation_of = dict(archive.execute("SELECT uuid, conversation_id FROM messages").fetchall())
    counts: dict[str, Counter[str]] = {}
    seen: set[tuple[str, str, str]] = set()
    for concept_id, message_id, text_key in staging.execute(
        "SELECT concept_id, message_id, text_key FROM concept_evidence"
    ):
        target = _resolve(concept_id, concepts)
        conversation = conversation_of.get(message_id)
        if target is None or conversation is None or (target, message_id, text_key) in seen:
            continue
        seen.add((target, message_id, text_key))
        counts.setdefault(conversation, Counter())[target] += 1
    result: dict[str, list[Concept]] = {}
    for conversation, per_concept in counts.items():
        result[conversation] = [
            Concept(str(concepts[c]["title"]), _aliases(concepts[c]["aliases"]), n) for c, n in per_concept.items()
        ]
    return result


def _resolve(concept_id: str, concepts: dict[str, sqlite3.Row]) -> str | None:
    seen: set[str] = set()
    while concept_id in concepts and concept_id not in seen:
        seen.add(concept_id)
        row = concepts[concept_id]
        if row["state"] == "merged" and row["merged_into"]:
            concept_id = str(row["merged_into"])
            continue
        return None if row["state"] in ("archived", "split") else concept_id
    return None


def _aliases(raw: object) -> list[str]:
    try:
        value = json.loads(str(raw)) if raw else []
    except ValueError:
        return []
    return [str(a) for a in value] if isinstance(value, list) else []


def archive_top(staging: sqlite3.Connection, k: int = ARCHIVE_TOP) -> list[str]:
    rows = staging.execute(
        "SELECT title FROM concepts WHERE state IN ('active', 'weak') ORDER BY evidence_count DESC, title LIMIT ?",
        (k,),
    )
    return [str(r[0]) for r in rows]


def dominant_topics(archive: sqlite3.Connection, staging: sqlite3.Connection) -> dict[str, int]:
    """Each conversation's most frequent topic among its current segments, in the latest clustered run."""
    run = staging.execute(
        "SELECT run_id, params FROM cluster_runs WHERE status = 'clustered' ORDER BY run_id DESC LIMIT 1"
    )
    row = run.fetchone()
    if row is None:
        return {}
    # An incremental run links only its new segments to the model of an earlier full fit (params.fit_run): a
    # segment keeps its latest link from that fit on; links of older fits number other topics.
    params = json.loads(row[1] or "{}") if row[1] else {}
    fit_run = str(params.get("fit_run") or row[0]) if isinstance(params, dict) else str(row[0])
    links = staging.execute(
        "SELECT l.item_id, l.topic FROM topic_links l WHERE l.kind = 'segment' AND l.run_id BETWEEN ? AND ?"
        " ORDER BY l.run_id",
        (min(fit_run, str(row[0])), row[0]),
    )
    topic_of = {str(item): int(topic) for item, topic in links}
    per_conversation: dict[str, Counter[int]] = {}
    for segment_id, conversation_id in staging.execute(
        "SELECT segment_id, conversation_id FROM segments WHERE retired_run_id IS NULL"
    ):
        if segment_id in topic_of:
            per_conversation.setdefault(str(conversation_id), Counter())[topic_of[segment_id]] += 1
    return {c: min(t.items(), key=lambda kv: (-kv[1], kv[0]))[0] for c, t in per_conversation.items()}


def conversation_facts(archive: sqlite3.Connection, staging: sqlite3.Connection) -> dict[str, list[tuple[str, str]]]:
    """(attribute, value) of every valid fact, by each conversation one of its messages is in."""
    conversation_of = dict(archive.execute("SELECT uuid, conversation_id FROM messages").fetchall())
    found: dict[str, list[tuple[str, str]]] = {}
    for attribute, value, message_ids in staging.execute(
        "SELECT attribute, value, message_ids FROM facts WHERE state = 'valid'"
    ):
        for message_id in _aliases(message_ids):
            conversation = conversation_of.get(message_id)
            if conversation is not None:
                found.setdefault(conversation, []).append((str(attribute), str(value)))
    return found


_FACT_FILLER = frozenset(
    [
        "a",
        "an",
        "the",
        "my",
        "our",
        "to",
        "of",
        "for",
        "in",
        "on",
        "at",
        "with",
        "and",
        "is",
        "are",
        "was",
        "i",
        "me",
        "we",
    ]
)


def _content(text: str) -> set[str]:
    return {w for w in normalise(text).split() if w not in _FACT_FILLER}


def fact_found(labelled: dict[str, Any], found: Iterable[tuple[str, str]]) -> bool:
    """A labelled fact is found when a fact of the same conversation says the same value: their content words
    overlap by Jaccard >= 0.5, or all of ours are in the labelled quote and one of them in the labelled value
    ("plan a surprise party" for "plan surprise birthday party for Emma", quoted "I'm trying to plan...")."""
    want = _content(str(labelled.get("value", "")))
    quote = _content(str(labelled.get("quote", "")))
    for _, value in found:
        mine = _content(value)
        if not mine or not want:
            continue
        if len(mine & want) / len(mine | want) >= 0.5 or (mine <= quote and mine & want):
            return True
    return False


def fact_precision(
    found: dict[str, list[tuple[str, str]]], labels: Labels, present: set[str]
) -> tuple[float | None, int, list[dict[str, str]]]:
    """Of the facts found in labelled conversations, the share that says some labelled fact of that conversation
    (the same match as `fact_found`), how many were found there, and the unmatched ones to check by hand: the
    labels list what the labeller saw, so an unmatched fact is a suspect, not always a wrong one."""
    total, unmatched = 0, []
    for conversation in sorted(labels.conversations):
        if conversation not in present:
            continue
        wanted = labels.conversations[conversation].get("facts", [])
        for attribute, value in found.get(conversation, []):
            total += 1
            if not any(fact_found(f, [(attribute, value)]) for f in wanted):
                unmatched.append({"conversation_id": conversation, "attribute": attribute, "value": value})
    return ((total - len(unmatched)) / total if total else None), total, unmatched


def adjusted_mutual_info(left: Sequence[object], right: Sequence[object]) -> float:
    from sklearn.metrics import adjusted_mutual_info_score

    return float(adjusted_mutual_info_score([str(x) for x in left], [str(x) for x in right]))


def topic_agreement(dominant: dict[str, Any], labels: Labels, present: set[str]) -> dict[str, Any]:
    """AMI between each labelled conversation's dominant topic and its labelled group: `topic_ami` over the
    conversations with a topic (the issue's measure), `topic_ami_all` over every labelled conversation present, one
    the topics left out (every segment an outlier) counted as a group of its own, so that a clustering cannot raise
    it by leaving the hard conversations out."""
    wanted = [c for c in sorted(labels.conversations) if c in present]
    grouped = [c for c in wanted if c in dominant]

    def agreement(ids: list[str]) -> float | None:
        if len(ids) < 2:
            return None
        found = [dominant.get(c, f"no topic: {c}") for c in ids]
        return adjusted_mutual_info(found, [labels.conversations[c]["topic_group"] for c in ids])

    return {
        "topic_ami": agreement(grouped),
        "topic_ami_all": agreement(wanted),
        "conversations_without_topic": len(wanted) - len(grouped),
    }


def score_data_dir(data_dir: Path, labels: Labels) -> dict[str, Any]:
    """Every measure for one data dir against the labels (conversations not in the archive are listed)."""
    archive, staging = _open(data_dir / "archive.db"), _open(data_dir / "staging.db")
    try:
        per_conversation = conversation_concepts(archive, staging)
        present = {str(r[0]) for r in archive.execute("SELECT id FROM conversations")}
        scored = [
            score_conversation(c, per_conversation.get(c, []), labels)
            for c in sorted(labels.conversations)
            if c in present
        ]
        top = archive_top(staging)
        dominant = dominant_topics(archive, staging)
        facts = conversation_facts(archive, staging)
    finally:
        archive.close()
        staging.close()
    precisions = [s.precision for s in scored if s.precision is not None]
    sizes = Counter(dominant.values())
    wanted_facts = [
        (c, f) for c in sorted(labels.conversations) if c in present for f in labels.conversations[c].get("facts", [])
    ]
    facts_hit = sum(fact_found(f, facts.get(c, [])) for c, f in wanted_facts)
    precision_of_facts, facts_in_labelled, facts_unmatched = fact_precision(facts, labels, present)
    if labels.topics_only:
        return {
            "topics_only": True,
            "conversations_labelled": len(labels.conversations),
            "conversations_scored": len(scored),
            **topic_agreement(dominant, labels, present),
            "topics": len(sizes),
            "largest_topic_share": (max(sizes.values()) / sum(sizes.values())) if sizes else None,
        }
    return {
        "conversations_labelled": len(labels.conversations),
        "conversations_scored": len(scored),
        "conversations_without_concepts": sum(s.precision is None for s in scored),
        "precision_at_5": _mean(precisions),
        "precision_at_5_all": _mean([s.precision or 0.0 for s in scored]),
        "concept_recall": _mean([s.recall for s in scored]),
        "archive_top30": top,
        "archive_top30_generic": [t for t in top if labels.is_generic(t)],
        "generic_share_top30": (sum(labels.is_generic(t) for t in top) / len(top)) if top else 0.0,
        **topic_agreement(dominant, labels, present),
        "topics": len(sizes),
        "largest_topic_share": (max(sizes.values()) / sum(sizes.values())) if sizes else None,
        "facts_labelled": len(wanted_facts),
        "fact_recall": facts_hit / len(wanted_facts) if wanted_facts else None,
        "facts_found": sum(len(v) for v in facts.values()),
        "facts_found_labelled": facts_in_labelled,
        "fact_precision": precision_of_facts,
        "facts_unmatched": facts_unmatched,
        "per_conversation": [s.__dict__ for s in scored],
    }


def _topic_lines(result: dict[str, Any]) -> list[str]:
    """The report against a grouping without concepts: the topic measures alone."""
    lines = [f"{result['conversations_scored']} of {result['conversations_labelled']} grouped conversations present"]
    for name in ("topic_ami", "largest_topic_share"):
        op, target = TARGETS[name]
        value = result[name]
        ok = value is not None and (value >= target if op == ">=" else value <= target)
        shown = "n/a" if value is None else f"{value:.3f}"
        lines.append(f"  {name:22s} {shown:>7s}   target {op} {target:.2f}   {'met' if ok else 'NOT met'}")
    if result.get("topic_ami_all") is not None:
        lines.append(
            f"  topic AMI over every grouped conversation ({result['conversations_without_topic']} without a topic,"
            f" each its own group): {result['topic_ami_all']:.3f}; topics {result['topics']}"
        )
    return lines


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def report_lines(result: dict[str, Any], show: int = 8) -> list[str]:
    """`score_data_dir`'s result as text: each measure against its target, facts, the archive's top 30, and the
    `show` worst conversations (what they ranked first, what was wrong, what was missed)."""
    if result.get("topics_only"):
        return _topic_lines(result)
    lines = [
        f"{result['conversations_scored']} of {result['conversations_labelled']} labelled conversations present,"
        f" {result['conversations_without_concepts']} without any concept"
    ]
    for name, (op, target) in TARGETS.items():
        value = result[name]
        ok = value is not None and (value >= target if op == ">=" else value <= target)
        shown = "n/a" if value is None else f"{value:.3f}"
        lines.append(f"  {name:22s} {shown:>7s}   target {op} {target:.2f}   {'met' if ok else 'NOT met'}")
    lines.append(f"  precision@5 counting conversations without concepts as 0: {result['precision_at_5_all'] or 0:.3f}")
    if result.get("topic_ami_all") is not None:
        lines.append(
            f"  topic AMI over every labelled conversation ({result['conversations_without_topic']} without a topic,"
            f" each its own group): {result['topic_ami_all']:.3f}"
        )
    recall = result["fact_recall"]
    lines.append(
        f"  topics {result['topics']}; facts labelled {result['facts_labelled']}, found {result['facts_found']},"
        f" fact recall {'n/a' if recall is None else f'{recall:.3f}'}"
    )
    if "fact_precision" in result:
        precision = result["fact_precision"]
        lines.append(
            f"  facts found in labelled conversations {result['facts_found_labelled']}, matching a labelled fact:"
            f" fact precision {'n/a' if precision is None else f'{precision:.3f}'} (unmatched ones: check by hand)"
        )
        for row in result["facts_unmatched"][:show]:
            lines.append(f"    unmatched {row['conversation_id'][:10]} {row['attribute']}: {row['value']}")
    lines.append(f"  archive top 30: {', '.join(result['archive_top30'])}")
    lines.append(f"  generic among them: {', '.join(result['archive_top30_generic']) or '-'}")
    worst = sorted(
        result["per_conversation"], key=lambda s: ((s["precision"] or 0) + s["recall"], s["conversation_id"])
    )
    for row in worst[:show]:
        precision = "n/a" if row["precision"] is None else f"{row['precision']:.2f}"
        lines.append(
            f"  - {row['conversation_id'][:12]} p={precision} r={row['recall']:.2f} top={row['top']}"
            f" wrong={row['wrong']} missed={row['missed']}"
        )
    return lines
