r"""A blind measure of topic labels: does a topic's label say what people wrote its conversations are about?

    python benchmarks/topic_label_agreement.py DATA_DIR [--labels FILE ...] [--show] [--out result.json]

The labelled sets (benchmarks/labels/: dev, held-out, the spark and demo groupings; default all four) give each
conversation a "topic" of 2-5 words, written by hand long before any label code saw them. For each set, every topic
of DATA_DIR's latest clustered run that is the dominant topic of at least one of the set's conversations
(staging/graph_quality.py `dominant_topics`: a conversation's most frequent topic among its segments) has its label
(what `chatmem topics` shows: the `topics` table's `label`) compared with the human topics of those conversations.

The rule (fixed before any figure was seen; not changed after):
- Words: a label or a human topic is cut into words (`[^\W_]+` joined by "-" or "'", so "sci-fi" is one word),
  lower-cased; the closed words of STOP and numbers are dropped ("SQL query (window functions)" gives sql, query,
  window, functions; "topic 7" gives none).
- Lemmas of a word: the word, its lemmas of every part of speech in lemminflect's tables (the project's lemmatiser:
  "selling" -> sell, "collectors" -> collector) and its WordNet noun base forms (morphy's noun rules and noun.exc,
  kept when WordNet knows them).
- A label word hits a human topic when one of its lemmas
  1. is a lemma of a word of the topic; or
  2. is a WordNet neighbour of one: WordNet 3.0 (Debian's wordnet-base, read by memory/wordnet.py) has a noun synset
     of one word and a noun synset of the other that are the same (synonyms), or one is a direct hypernym or
     instance hypernym of the other (one step, any sense of either word); or
  3. forms a compound with one: the shorter of the two words has at least 4 letters and the longer begins or ends
     with it ("spark" and "pyspark", "data" and "database").
- Per set: `topics` the topics scored; `topic_hit` the share of them whose label has a word that hits at least one
  of its conversations' human topics; `word_share` the mean over those topics of the share of the label's words
  that hit one of them (a label with no word: 0); `conversation_hit` the share of the set's conversations with a
  topic whose human topic a word of their topic's label hits. `--show` lists the misses: the topics no word of
  whose label hits, with their conversations' human topics.

A lenient measure: any sense of a WordNet word counts, so a polysemous label word ("set") can hit by accident, and a
label that says the same in other words ("strength training" for "weightlifting program") misses. It compares labels
of one build with another's on the same sets; it is no absolute score. Without WordNet (no /usr/share/wordnet) rule 2
is off and the report says so.
"""

from __future__ import annotations

import argparse
import json
import re
import sqlite3
import sys
from collections import defaultdict
from functools import cache
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from memory.wordnet import WordNet, _singulars
from staging.graph_quality import dominant_topics

LABELS = Path(__file__).parent / "labels"
SETS = ("dev_labels.json", "heldout_labels.json", "topic_grouping_spark.json", "topic_grouping_demo.json")
WORDNET = Path("/usr/share/wordnet")
STOP = frozenset(
    [
        "a",
        "an",
        "and",
        "or",
        "of",
        "the",
        "for",
        "in",
        "on",
        "with",
        "to",
        "vs",
        "by",
        "at",
        "from",
        "into",
        "about",
        "as",
        "its",
        "topic",
    ]  # "topic 7": no label
)
COMPOUND_MIN = 4  # letters of the shorter word of a compound ("data" in "database"; not "art" in "party")
_WORD = re.compile(r"[^\W_]+(?:[-'][^\W_]+)*")


def words(text: str) -> list[str]:
    """The content words of a label or a human topic, lower-cased (STOP and numbers dropped)."""
    return [w for w in (m.lower() for m in _WORD.findall(text)) if w not in STOP and not w.isdigit()]


class Matcher:
    """The rule's three tests, each answer kept (one matcher a run)."""

    def __init__(self, wordnet: WordNet | None) -> None:
        self.wordnet = wordnet

    @cache  # noqa: B019 (one matcher a run)
    def lemmas(self, word: str) -> frozenset[str]:
        from lemminflect import getAllLemmas

        out = {word}
        for forms in getAllLemmas(word).values():
            out.update(f.lower() for f in forms)
        if self.wordnet is not None:
            out.update(s for s in _singulars(word, self.wordnet.exceptions) if s in self.wordnet.index)
        return frozenset(out)

    @cache  # noqa: B019
    def synsets(self, lemma: str) -> frozenset[int]:
        return frozenset(self.wordnet.index.get(lemma, ())) if self.wordnet is not None else frozenset()

    @cache  # noqa: B019
    def neighbours(self, lemma: str) -> frozenset[int]:
        """The lemma's noun synsets and their direct hypernyms."""
        own, wordnet = self.synsets(lemma), self.wordnet
        return own | {h for s in own for h in wordnet.synset(s).hypernyms} if wordnet is not None else own

    def related(self, one: str, other: str) -> bool:
        """Rule 2: the same noun synset, or one's synset a direct hypernym of the other's."""
        a, b = self.synsets(one), self.synsets(other)
        return bool(a and b and (a & self.neighbours(other) or b & self.neighbours(one)))

    def hits(self, label_word: str, topic: str) -> bool:
        mine = self.lemmas(label_word)
        for word in words(topic):
            theirs = self.lemmas(word)
            if mine & theirs:
                return True
            if any(self.related(a, b) for a in mine for b in theirs):
                return True
            if any(_compound(a, b) for a in mine for b in theirs):
                return True
        return False


def _compound(one: str, other: str) -> bool:
    short, long = sorted((one, other), key=len)
    return len(short) >= COMPOUND_MIN and short != long and (long.startswith(short) or long.endswith(short))


def built(data_dir: Path) -> tuple[dict[str, int], dict[int, str]]:
    """Each conversation's dominant topic and each topic's label, of the data dir's latest clustered run."""
    staging = sqlite3.connect(f"file:{data_dir / 'staging.db'}?mode=ro", uri=True)
    try:
        dominant = dominant_topics(staging, staging)  # reads the staging tables only
        run = staging.execute(
            "SELECT run_id FROM cluster_runs WHERE status = 'clustered' ORDER BY run_id DESC LIMIT 1"
        ).fetchone()
        rows = staging.execute("SELECT topic, label FROM topics WHERE run_id = ?", (run[0],)) if run else []
        return dominant, {int(t): str(label) for t, label in rows}
    finally:
        staging.close()


def score(dominant: dict[str, int], labels: dict[int, str], human: dict[str, str], matcher: Matcher) -> dict[str, Any]:
    """One set's figures (`human`: conversation id -> its labelled topic)."""
    members: dict[int, list[str]] = defaultdict(list)
    for conversation, topic in human.items():
        if conversation in dominant:
            members[dominant[conversation]].append(topic)
    rows, conversations_hit = [], 0
    for topic in sorted(members):
        label = labels.get(topic, f"topic {topic}")
        said = members[topic]
        label_words = words(label)
        hitting = [w for w in label_words if any(matcher.hits(w, h) for h in said)]
        conversations_hit += sum(any(matcher.hits(w, h) for w in label_words) for h in said)
        share = len(hitting) / len(label_words) if label_words else 0.0
        rows.append({"topic": topic, "label": label, "human": said, "hit": bool(hitting), "word_share": share})
    n = len(rows)
    scored = sum(len(v) for v in members.values())
    return {
        "conversations": scored,
        "topics": n,
        "topic_hit": sum(r["hit"] for r in rows) / n if n else None,
        "word_share": sum(r["word_share"] for r in rows) / n if n else None,
        "conversation_hit": conversations_hit / scored if scored else None,
        "rows": rows,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("data_dir", type=Path)
    parser.add_argument("--labels", type=Path, nargs="+", default=[LABELS / s for s in SETS])
    parser.add_argument("--show", action="store_true", help="list every topic whose label hits none of its topics")
    parser.add_argument("--out", type=Path, help="write every figure and row as JSON")
    parser.add_argument("--wordnet", type=Path, default=WORDNET)
    args = parser.parse_args()
    wordnet = WordNet.open(args.wordnet)
    matcher = Matcher(wordnet)
    dominant, labels = built(args.data_dir)
    print(f"data dir {args.data_dir}: {len(labels)} topics" + ("" if wordnet else "; no WordNet: rule 2 off"))
    print("| set | conversations | topics | topic_hit | word_share | conversation_hit |")
    print("|---|---:|---:|---:|---:|---:|")
    results = {}
    for path in args.labels:
        human = {c: str(v["topic"]) for c, v in json.loads(path.read_text(encoding="utf-8"))["conversations"].items()}
        result = results[path.stem] = score(dominant, labels, human, matcher)
        figures = [f"{result[k]:.3f}" if result[k] is not None else "-" for k in ("topic_hit", "word_share")]
        hit = result["conversation_hit"]
        figures.append(f"{hit:.3f}" if hit is not None else "-")
        print(f"| {path.stem} | {result['conversations']} | {result['topics']} | {' | '.join(figures)} |")
    if args.show:
        for name, result in results.items():
            misses = [r for r in result["rows"] if not r["hit"]]
            print(f"\n{name}: {len(misses)} of {result['topics']} labels hit none of their conversations' topics")
            for r in misses:
                print(f"  {r['topic']:>3} {r['label']!r}: " + "; ".join(sorted(set(r["human"]))))
    if args.out:
        args.out.write_text(json.dumps(results, indent=1, ensure_ascii=False), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
