"""Near-duplicate concepts of one archive: two titles for one thing that exact, fuzzy and similarity matching keep
apart because one adds a word ("CSV" / "CSV file", "Skewness" / "Data skewness") or is another form of the same
word ("PARTITION" / "PARTITIONED" / "Partitioning").

Each name (a concept's title or alias) gives its variants, each with a key two names of one family share:

- `bare`: the name itself ("CSV" -> csv);
- `container`: a name that ends in a word saying what kind of thing the rest is ("CSV file", "SQL query", "S3
  bucket", "LIMIT clause", "Broadcast join") -> the rest. A generic kind (`KIND_HEADS`: file, table, bucket...)
  adds nothing to a name ("CSV file" is CSV), but says which thing a common word is ("Coffee table" is no coffee),
  so it folds only into a name-shaped core (`name_shaped`: "CSV", "S3", "MySQL", or a bare title so written, "RDBMS"
  for "Rdbms data"); a code construct (`CODE_HEADS`: clause, join, function...) also folds a common word the same
  conversations say in lower case into itself ("Broadcast" into "Broadcast join");
- `prefix`: "data" before a noun of process or property ("Data skewness", "Data partitioning") -> the noun;
- `inflection`: one word that is a verb's -ing or -ed form ("Partitioning", "PARTITIONED") -> the verb.

Apart from the keys, a one-word concept whose every evidence sentence is evidence of a longer title holding the word,
and which no sentence says outside that title, is a piece of that name ("Pi" beside "Pi coin": `Folds._pieces`;
"Flutter" of "the Flutter archive file ... start using Flutter" is not: `said_apart`).

Which pairs fold, and which title the folded concept keeps, is `fold_rule`'s answer and `Folds`' checks of the
store: the same type always; a name-shaped core ("CSV", "S3", "MySQL") folds across the archive, a phrase only
title-cased ("Blood Pressure") only its data or service, never a thing made of it ("Glass coffee table" beside a
"Glass Coffee" cafe); a verb's forms across conversations only where their evidence shares its words ("Thawing" /
"Thaw"; not "Flicking" paint / "Flicks" of a game: `Folds._same_topic`); anything else only where most
conversations of the one with less evidence are the other's too ("Lambda function" of a Python chat is not "AWS
Lambda"). The concept loop (extract/concept_loop.py `_fold_variants`) merges: no evidence lost, every name
kept as an alias.
"""

from __future__ import annotations

import math
import re
import sqlite3
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from functools import lru_cache

from extract import lexicon
from extract.text import content_words, match_key
from staging import concepts as store
from staging.concepts import ConceptRow

# Kinds of thing that add nothing to a name: "CSV file" is CSV, "SQL query" SQL, "S3 bucket" S3, "MySQL table"
# MySQL, "Python script" Python ("code" is not one: "QR code", "ZIP code"). Folded only into a name (a common word
# before them names another thing: "Coffee table", "Ice bucket", "Log file").
KIND_HEADS = frozenset(
    [
        "file",
        "table",
        "bucket",
        "query",
        "database",
        "db",
        "format",
        "data",
        "library",
        "package",
        "module",
        "framework",
        "service",
        "api",
        "script",
        "language",
    ]
)
# Code constructs: "LIMIT clause" is the LIMIT keyword, "Broadcast join" is what "Broadcast" means where the same
# conversations say both; with a common word they fold where the same conversations say both (the longer title
# stays: it says which sense).
CODE_HEADS = frozenset(["clause", "statement", "keyword", "command", "function", "method", "operator", "join"])
# The kinds that serve or hold what a common phrase names ("Blood pressure data", "Email marketing service", "Comic
# book database"): about the same thing as the phrase. The other kinds make a thing of their own of it ("Glass coffee
# table", "Ice bucket", "Sign language", "Vacation package").
ABOUT_HEADS = frozenset(["data", "service", "database", "db", "api", "framework", "format", "query"])
# Two forms of one verb in no shared conversation are one act where their evidence shares this many content words,
# and this share of the smaller vocabulary (`Folds._same_topic`).
TOPIC_WORDS = 2
TOPIC_SHARE = 0.1
# "Data skewness" is skewness, "Data partitioning" partitioning; "Data lake", "Data engineer" are other things:
# only a noun of process or property after it.
PREFIXES = frozenset(["data"])
_PROCESS_ENDS = ("ness", "ing", "ion", "ity", "ment")
_LETTER = re.compile(r"[^\W\d_]")
# A one-word concept is a piece of a longer title of at most this many words that cites all its evidence (`_pieces`).
PIECE_OF_WORDS = 3
# Only live concepts the garden has not archived fold (an archived one comes back by a hypothesis first).
FOLDED_STATES = ("active", "weak")


@dataclass(frozen=True, slots=True)
class Variant:
    key: str  # what two names of one family share (a match key)
    kind: str  # bare, container, prefix, inflection
    core: str = ""  # container: the rest of the name as written ("CSV" of "CSV file"); bare: the name itself
    head: str = ""  # container: its kind word ("file"); inflection: "verb" when the form is a verb's only
    alias: bool = False  # bare: an alias standing for the title by other words or letters ("CV" of "Computer Vision")


def variants(name: str) -> list[Variant]:
    """Every variant of one name (its bare key first)."""
    bare = match_key(name)
    if not bare:
        return []
    found = [Variant(bare, "bare", name)]
    words = name.split()
    keys = bare.split()
    if len(words) == len(keys) >= 2:
        head = keys[-1]
        if (head in KIND_HEADS or head in CODE_HEADS) and not words[-1][:1].isupper():
            # a kind word written with its capital is the name's own ("Professional Grading Service", "Amazon Web
            # Services"), no kind of it
            core = " ".join(words[:-1])
            found.append(Variant(match_key(core), "container", core, head))
        if keys[0] in PREFIXES and len(keys) == 2 and keys[1].endswith(_PROCESS_ENDS):
            found.append(Variant(keys[1], "prefix"))
    elif len(keys) == 1:
        base = _inflected(keys[0])
        if base is not None:
            found.append(Variant(base[0], "inflection", head="verb" if base[1] else ""))
    return found


@lru_cache(maxsize=1 << 14)
def _inflected(word: str) -> tuple[str, bool] | None:
    """The verb a word is the -ing or -ed form of ("partitioning" -> partition), and whether it is only that: no
    noun or adjective of its own ("building", "meeting", "training" are nouns in their own right)."""
    if not word.isalpha() or not word.endswith(("ing", "ed")) or len(word) < 6:
        return None
    lemmas = lexicon.lemmas(word)
    verbs = [v for v in lemmas.get("VERB", ()) if v != word]
    if not verbs:
        return None
    own = any(word in forms for pos, forms in lemmas.items() if pos != "VERB")
    return match_key(verbs[0]), not own


def _names_variants(row: ConceptRow) -> list[Variant]:
    """The variants of a concept's title, and its aliases as they are: an alias is a looser name (the vendor's "S3" of
    "Amazon S3" is one, "Partitioned table" of "partitioned Hive table" is no kind of "PARTITIONED")."""
    found = variants(row.title)
    title_words = set(match_key(row.title).split())
    for alias in row.aliases:
        for variant in variants(alias)[:1]:
            # a part of the title ("S3" of "Amazon S3") names what the title names; an abbreviation only in one sense
            found.append(variant if set(variant.key.split()) <= title_words else replace(variant, alias=True))
    return found


def name_shaped(core: str) -> bool:
    """A core written as a name: with a digit ("S3", "EC2"), capitals inside a word ("MySQL", "PySpark"), an acronym
    that is no English word ("CSV", "SQL"; "LIMIT", "PARTITIONED" are keywords), or a later word capitalised ("Spark
    Streaming", "Blood Pressure")."""
    return bool(name_shape(core))


def name_shape(core: str) -> str:
    """How a core is written as a name: "name" (a digit, capitals inside a word, an acronym that is no English word:
    no common phrase is so written), "title" (only a later word capitalised: "Spark Streaming", but also a common
    phrase in a heading's or a shop's capitals, "Blood Pressure", "Glass Coffee"), or "" (no name)."""
    shape = ""
    for index, word in enumerate(core.split()):
        letters = _LETTER.findall(word)
        if not letters:
            continue
        if any(c.isdigit() for c in word):
            return "name"
        caps = sum(c.isupper() for c in letters)
        if caps == len(letters) and len(letters) >= 2:
            if not lexicon.parts_of_speech(word.casefold()):
                return "name"
            continue  # an English word shouted: "LIMIT", "PARTITIONED"
        if caps >= 2:
            return "name"
        if index > 0 and word[:1].isupper():
            shape = "title"
    return shape


@dataclass(frozen=True, slots=True)
class Rule:
    """How a pair folds: `shared`, only where most of the smaller's conversations are the larger's (`topic`: or where
    the evidence of the two shares its words); `keep`, the side
    whose title stays ("bare", "container", or "" for the one with more evidence); `core`, a container's common word,
    which folds only into a code construct (`code`) and where the evidence does not write it as a name, the longer
    title kept ("Broadcast join" over "Broadcast")."""

    shared: bool
    keep: str
    why: str
    core: str = ""
    code: bool = False
    topic: bool = False  # where no conversation is shared, only where the two's evidence speaks of the same things


def fold_rule(left: Variant, right: Variant) -> Rule | None:
    """Whether two names of one key may be one thing (None: they are not, or the pair is not one this module folds);
    the loop checks what the rule needs of the store (`Folds`)."""
    pair = {left.kind, right.kind}
    if pair == {"bare", "container"}:
        container, bare = (left, right) if left.kind == "container" else (right, left)
        why = f"{container.core} {container.head}: a name and its kind"
        # the bare title's shape counts ("Rdbms data" beside "RDBMS") and so does a part of it ("S3" of "Amazon S3"),
        # an abbreviation's does not: it stands for its title in one sense only ("CV" of "Computer Vision" is no "cv
        # data" of a resume)
        bare_shape = "" if bare.alias else name_shape(bare.core)
        if name_shaped(container.core) or bare_shape == "name":
            return Rule(False, "bare", why)
        if bare_shape == "title" and container.head in ABOUT_HEADS:
            # "Blood pressure data" is about "Blood Pressure"; a thing made of a common phrase is another thing,
            # whatever is capitalised so ("Glass coffee table" is no "Glass Coffee" cafe)
            return Rule(False, "bare", why)
        return Rule(True, "", why, container.core, container.head in CODE_HEADS)
    if pair == {"bare", "prefix"}:
        return Rule(True, "", "data before a noun of process or property")
    if pair in ({"bare", "inflection"}, {"inflection"}):
        # a verb's forms may be one act ("Partitioning", "PARTITION") or a word's other senses ("Flicking" paint,
        # "Flicks" of a shooter game; "Boating", a shop's "Boat"): across conversations only where the evidence of
        # both speaks of the same things
        verb_only = all(v.head == "verb" for v in (left, right) if v.kind == "inflection")
        return Rule(not verb_only, "", "forms of one word", topic=verb_only)
    return None


Merge = Callable[[str, str, str, str | None], str]


class Folds:
    """The folds of one run: the live concepts' names indexed by their variants' keys, the store's answers cached."""

    def __init__(self, conn: sqlite3.Connection, rows: Mapping[str, ConceptRow], live: Callable[[str], str]) -> None:
        self.conn, self.rows, self.live = conn, rows, live
        self.index: dict[str, list[tuple[str, Variant]]] = {}
        for concept_id in sorted(rows):
            row = rows[concept_id]
            if row.state in FOLDED_STATES:
                for variant in _names_variants(row):
                    self.index.setdefault(variant.key, []).append((concept_id, variant))
        self.conversations: dict[str, set[str]] = {}
        self.vocabulary: dict[str, frozenset[str]] = {}
        # each concept's evidence before this run's folds: a family of forms takes the title of its best-evidenced
        # member ("Partitioning", 11, over "PARTITION", 6, and "PARTITIONED", 3, whichever pair merges first)
        self.own = {concept_id: row.evidence_count for concept_id, row in rows.items()}
        # the words of the live titles of 2-3 words ("Pi coin": pi, coin): where a one-word concept may be a piece
        self.holders: dict[str, list[str]] = {}
        for concept_id in sorted(rows):
            row = rows[concept_id]
            words = match_key(row.title).split()
            if row.state in FOLDED_STATES and 2 <= len(words) <= PIECE_OF_WORDS:
                for word in dict.fromkeys(words):
                    self.holders.setdefault(word, []).append(concept_id)

    def fold(self, concept_id: str, merge: Merge) -> int:
        """Merge every near-duplicate of one concept into one (`merge(a, b, why, keep_id)` returns the survivor);
        returns how many merges."""
        merged = 0
        for mine in _names_variants(self.rows[concept_id]):
            for other_id, theirs in self.index.get(mine.key, ()):
                a, b = self.live(concept_id), self.live(other_id)
                rule = fold_rule(mine, theirs)
                if a == b or rule is None or not self._foldable(a, b):
                    continue
                found = self._keep(rule, {mine.kind: a, theirs.kind: b}, (a, b))
                if found is None:
                    continue
                if not found and self.own.get(a, 0) != self.own.get(b, 0):
                    found = max((a, b), key=lambda c: self.own.get(c, 0))
                survivor = merge(a, b, rule.why, found or None)
                self.conversations[survivor] = self._conversations(a) | self._conversations(b)
                merged += 1
        return merged + self._pieces(concept_id, merge)

    def _pieces(self, concept_id: str, merge: Merge) -> int:
        """A one-word concept every sentence of whose evidence is evidence of a longer concept holding the word
        ("Pi" beside "Pi coin", both citing "Pi coin is a new cryptocurrency"): never said apart from it, it is a
        piece of its name; folded into it, the longer title kept."""
        words = match_key(self.rows[concept_id].title).split()
        if len(words) == 1:
            pairs = [(concept_id, holder) for holder in self.holders.get(words[0], ())]
        elif len(words) <= PIECE_OF_WORDS:
            bare = [c for w in dict.fromkeys(words) for c, v in self.index.get(w, ()) if v.kind == "bare"]
            pairs = [(piece, concept_id) for piece in bare if len(match_key(self.rows[piece].title).split()) == 1]
        else:
            return 0
        merged = 0
        cited: dict[str, set[tuple[str, str]]] = {}
        for piece_id, holder_id in pairs:
            piece, holder = self.live(piece_id), self.live(holder_id)
            if piece == holder or not self._foldable(piece, holder):
                continue
            if len(match_key(self.rows[piece].title).split()) != 1:
                continue  # the piece was merged into a longer title already
            if self.rows[piece].evidence_count > self.rows[holder].evidence_count:
                continue  # said more often than the name: said apart from it (decided without reading the evidence)
            if piece not in cited:
                cited[piece] = store.evidence_keys(self.conn, piece)
            if not cited[piece] or not cited[piece] <= store.evidence_keys(self.conn, holder):
                continue
            if said_apart(store.evidence_texts(self.conn, piece), self.rows[piece].title, self.rows[holder].title):
                continue  # "Flutter" of "the Flutter archive file ... start using Flutter": the sentences cite both
            survivor = merge(piece, holder, "said only inside a longer name", holder)
            self.conversations.pop(survivor, None)
            merged += 1
        return merged

    def _foldable(self, a: str, b: str) -> bool:
        left, right = self.rows[a], self.rows[b]
        return left.type == right.type and left.state in FOLDED_STATES and right.state in FOLDED_STATES

    def _keep(self, rule: Rule, ids: dict[str, str], pair: tuple[str, str]) -> str | None:
        """The id whose title stays ("" for the one with more evidence), or None where the pair does not fold. A name
        with its kind folds only where the name is name-shaped (`fold_rule`): "Parquet file" and "Hive table" stay
        beside "Parquet" and "Hive" (folding them, written as names in the evidence, was tried: on the labelled
        build it let a conversation's one-span tail terms into its top five, benchmarks/RESULTS.md, session 38)."""
        # `pair`, not ids' values: two forms of one verb ("Testing", "Tested") are both of kind inflection, one key
        if rule.shared and not self._shared(*pair):
            return None
        if rule.topic and not self._shared(*pair) and not self._same_topic(*pair):
            return None
        if rule.core:
            # "Broadcast" into "Broadcast join": a common word the code construct says the sense of; not "Scala" into
            # "Scala function" (the replies write it as a name: that is a name with its kind, below), nor a common
            # word into a generic kind ("Coffee table")
            if not rule.code or name_written(store.evidence_texts(self.conn, ids["bare"]), rule.core):
                return None
            return ids["container"]
        return ids.get(rule.keep, "")

    def _shared(self, a: str, b: str) -> bool:
        """Whether most of the conversations of the one with less evidence are the other's too."""
        small, large = sorted((a, b), key=lambda c: (self.rows[c].evidence_count, c))
        mine = self._conversations(small)
        return bool(mine) and len(mine & self._conversations(large)) * 2 >= len(mine)

    def _same_topic(self, a: str, b: str) -> bool:
        """Whether the evidence of two concepts speaks of the same things: TOPIC_WORDS content words in common or more,
        and TOPIC_SHARE of the smaller vocabulary, the titles' own words and their forms left out ("Thawing" / "Thaw":
        fridge, frozen, overnight; "Flicking" paint / "Flicks" of a shooter game: none)."""
        own = [word[:5] for c in (a, b) for word in match_key(self.rows[c].title).split()]
        mine, theirs = (
            {word for word in self._vocabulary(c) if not any(word.startswith(stem) for stem in own)} for c in (a, b)
        )
        need = max(TOPIC_WORDS, math.ceil(TOPIC_SHARE * min(len(mine), len(theirs))))
        return len(mine & theirs) >= need

    def _vocabulary(self, concept_id: str) -> frozenset[str]:
        if concept_id not in self.vocabulary:
            texts = store.evidence_texts(self.conn, concept_id)
            words = {w for text in texts for w in content_words(text) if len(w) >= 3 and not w.isdigit()}
            self.vocabulary[concept_id] = frozenset(words)
        return self.vocabulary[concept_id]

    def _conversations(self, concept_id: str) -> set[str]:
        if concept_id not in self.conversations:
            self.conversations[concept_id] = store.conversations_of(self.conn, concept_id)
        return self.conversations[concept_id]


_POSSESSIVE = re.compile(r"(?<=\w)['’](?:s\b|(?!\w))")  # "the Crain family's", "the Cleveland Indians' name"


def said_apart(texts: Iterable[str], piece: str, holder: str) -> bool:
    """Whether the sentences say a one-word piece outside the longer name holding it ("grow almonds" beside "almond
    milk", "using Flutter" beside "the Flutter archive file"): then it is a thing of its own, no piece of the name."""
    word = match_key(piece)
    name = match_key(holder).split()
    for text in texts:
        keys = match_key(_POSSESSIVE.sub("", text)).split()
        if word not in keys:
            continue
        inside: set[int] = set()
        for start in range(len(keys) - len(name) + 1):
            if keys[start : start + len(name)] == name:
                inside.update(range(start, start + len(name)))
        if any(key == word and at not in inside for at, key in enumerate(keys)):
            return True
    return False


_SENTENCE_OPENING = re.compile(r"(?:^|[.!?:;\n]\s*|[-*#>]\s+|\d[.)]\s+)$")


def name_written(texts: Iterable[str], core: str) -> bool:
    """Whether the sentences write `core` as a name: with its capital inside a sentence more often than in lower
    case ("stored as Parquet", "in Hive"; "a cup of coffee" is not)."""
    pattern = re.compile(rf"(?<!\w){re.escape(core)}(?!\w)", re.IGNORECASE)
    cased = lower = 0
    for text in texts:
        for hit in pattern.finditer(text):
            if _SENTENCE_OPENING.search(text, 0, hit.start()):
                continue
            said = hit.group(0)
            if said[:1].isupper() and (not said.isupper() or name_shaped(said)):
                cased += 1  # "LIMIT" is a keyword shouted, no name
            else:
                lower += 1
    return cased > lower
