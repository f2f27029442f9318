"""One keyword per word family: a topic's keywords never list one word's forms side by side ("cultural, tradition,
traditional, culture", "partitions, partitioning", "plant, planting"). Keyword-side only (cluster/phrases.py calls it
on a topic's ranked keywords, never on the tuning objective's phrases, so no segment moves). Pure but for reading
WordNet's files.

- `family`: the forms a one-word lower-case keyword is one of: itself, its lemmas of every part of speech in
  lemminflect's tables ("partitioning" -> partition, "traditions" -> tradition), and, for an adjective, the nouns
  WordNet derives it from or relates it to (its pertainym and derivation pointers to nouns, `\\` and `+`:
  "cultural" -> culture, "traditional" -> tradition); of those, the forms that begin as it does, to STEM_LETTERS
  letters (a verb's irregular past is no form of another noun: "ground" and "grind"; a pointer to another word's
  stem is none either).
- `one_per_family`: the ranked keywords with each family shown once, at the place of its best-ranked form that can
  be a noun (an adjective's rank is its uses as one, "cultural events", not the noun's as a subject), as the form
  a topic can be called (one that can be a noun: "culture", not "cultural") said in most of the topic's
  conversations, then most often. Names (a capital) and phrases are their own families: "Japan" and "Japanese", or
  "Spark" and "Spark job", say different things.

WordNet is read from WORDNET_DIR (Debian's wordnet-base, the files memory/wordnet.py reads; CI installs them):
absent, the families are lemminflect's alone.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache
from pathlib import Path

from clients.parts_of_speech import can_be_noun, lemmas, parts_of_speech
from cluster.keyword_rules import adjectival

WORDNET_DIR = Path("/usr/share/wordnet")
STEM_LETTERS = 4  # a related noun begins as the adjective does, to this many letters ("cultural", "culture")
_NOUN_POINTERS = frozenset({"\\", "+"})  # an adjective's pertainym and derivationally related form


@lru_cache(maxsize=1)
def _adjective_index() -> dict[str, tuple[int, ...]]:
    """index.adj: each adjective's synset offsets in data.adj (empty without WordNet)."""
    path = WORDNET_DIR / "index.adj"
    if not path.is_file():
        return {}
    found: dict[str, tuple[int, ...]] = {}
    with path.open(encoding="utf-8", errors="replace") as lines:
        for line in lines:
            if line.startswith(" "):  # the licence's lines
                continue
            fields = line.split()
            if len(fields) < 6:
                continue
            pointers = int(fields[3])
            found[fields[0]] = tuple(int(o) for o in fields[4 + pointers + 2 :])
    return found


def _line(name: str, offset: int) -> list[str]:
    """The synset line of data.NAME at a byte offset, split in fields."""
    with (WORDNET_DIR / name).open("rb") as data:
        data.seek(offset)
        return data.readline().decode("utf-8", "replace").split()


def _words(fields: list[str]) -> list[str]:
    count = int(fields[3], 16)
    return [fields[4 + 2 * i].lower() for i in range(count)]


@lru_cache(maxsize=50_000)
def _related_nouns(adjective: str) -> frozenset[str]:
    """The nouns WordNet points to from the adjective's senses (pertainym `\\`, derivation `+`), one word each."""
    found: set[str] = set()
    for offset in _adjective_index().get(adjective, ()):
        fields = _line("data.adj", offset)
        words = _words(fields)
        at = 4 + 2 * len(words)
        for p in range(int(fields[at])):
            symbol, target, pos, source_target = fields[at + 1 + 4 * p : at + 5 + 4 * p]
            source, goal = int(source_target[:2], 16), int(source_target[2:], 16)
            if symbol not in _NOUN_POINTERS or pos != "n" or (source and words[source - 1] != adjective):
                continue
            nouns = _words(_line("data.noun", int(target)))
            found.update([nouns[goal - 1]] if goal else nouns)
    return frozenset(n for n in found if "_" not in n and n[:STEM_LETTERS] == adjective[:STEM_LETTERS])


@lru_cache(maxsize=50_000)
def family(word: str) -> frozenset[str]:
    """The forms of a one-word lower-case keyword's word family (module doc); a name or a phrase: itself alone."""
    if " " in word or not word.islower():
        return frozenset({word})
    forms = {word, *(lemma for found in lemmas(word).values() for lemma in found)}
    if "ADJ" in parts_of_speech(word):
        forms |= _related_nouns(word)
    return frozenset(f for f in forms if f[:STEM_LETTERS] == word[:STEM_LETTERS])  # "ground" is no form of "grind"


def one_per_family(
    ranked: Sequence[tuple[str, str, float]], spread: Mapping[str, int], weight: Mapping[str, float]
) -> list[tuple[str, str, float]]:
    """The ranked (key, shown, score) keywords with each word family once (module doc): at its best-ranked noun's
    place, as its form that can be a noun said in most conversations (`spread`), then with most weight."""
    groups: list[list[int]] = []
    forms: list[frozenset[str]] = []  # per group of one-word lower-case keywords, its forms (others: none)
    for index, (_, shown, _) in enumerate(ranked):
        mine = family(shown)
        joined = next((g for g, theirs in enumerate(forms) if mine & theirs), None) if _one(shown) else None
        if joined is None:
            groups.append([index])
            forms.append(mine if _one(shown) else frozenset())
        else:
            groups[joined].append(index)
            forms[joined] = forms[joined] | mine
    placed = []
    for members in groups:
        best = max(
            members,
            key=lambda i: (_noun(ranked[i][1]), spread.get(ranked[i][0], 0), weight.get(ranked[i][0], 0.0), -i),
        )
        at = next((i for i in members if _noun(ranked[i][1])), members[0])
        placed.append((at, (ranked[best][0], ranked[best][1], ranked[at][2])))
    return [row for _, row in sorted(placed, key=lambda p: p[0])]


def _noun(shown: str) -> bool:
    """A form a topic can be called: a noun, or an activity in -ing ("gardening": lemminflect knows it as a verb form
    only; cluster/keyword_rules.py `nominal` reads it so too), not an adjective in -ing ("stunning")."""
    return can_be_noun(shown) or (shown.endswith("ing") and not adjectival(shown))


def _one(shown: str) -> bool:
    return " " not in shown and shown.islower()
