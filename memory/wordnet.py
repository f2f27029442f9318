"""WordNet's noun hierarchy, read from the database files of Debian's `wordnet-base` package: a phrase's categories.

    WordNet.open(directory) -> WordNet or None (no database there)
    wordnet.categories(phrase, depth) -> [Category(offset, name, distance)]

A small reader of the WordNet 3.0 files, no library: `index.noun` (lemma -> its synsets, most frequent sense
first), `data.noun` (one synset per line, addressed by its byte offset: lemmas, hypernym pointers `@`/`@i`, the
gloss) and `noun.exc` (irregular plurals). The whole of `data.noun` is read once (15 MB) and lines are parsed on
demand. A phrase is looked up by its longest tail that WordNet knows ("my golden retriever" -> golden_retriever,
"ceramic hearing aids" -> hearing_aid, plural endings undone), in its most frequent sense only (the sense a chat
most likely means; a rarer one would link the word to categories it is not about), and its categories are the
hypernyms up to `depth` steps above it. Categories too close to the root of the hierarchy ("entity", "object",
"artifact", "abstraction") are no category a person asks about: they are left out (`MIN_ROOT_DISTANCE`).

A category's name is its synset's lemmas ("appliance, contraption, gadget"), so a question that says any of them
meets it; a synset whose gloss begins with another synset's lemma without being its hyponym ("pet: a
domesticated animal kept for companionship") lends that synset its lemma as one more name ("domestic animal,
domesticated animal, pet"): WordNet files pets under animals, not dogs under pets, and the gloss says what a pet is.
Finding those takes a pass over every noun synset (~1.3 CPU-s): with a `cache_dir` the answer is kept there as
JSON, keyed by the database files' sizes and modification times and ALIASES_VERSION, and read back by later runs.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

MIN_ROOT_DISTANCE = 6  # "entity" 0, "artifact" 4, "organism" and "activity" 5 (hubs), "device" and "animal" 6
MAX_LEMMAS = 4  # lemmas named per category (the first are the most common)
MAX_TAIL_WORDS = 4  # the longest tail of a phrase looked up
_GLOSS_LEAD = re.compile(r"^(?:a|an|the|any|one|some)\s+", re.IGNORECASE)
ALIASES_VERSION = 1  # bump when `aliases` changes what it finds: the kept answers of older versions are not read


@dataclass(frozen=True, slots=True)
class Category:
    offset: int
    name: str
    distance: int  # hypernym steps from the phrase's own synset (1: its direct hypernym)


@dataclass(frozen=True, slots=True)
class Synset:
    offset: int
    lemmas: tuple[str, ...]
    hypernyms: tuple[int, ...]
    hyponyms: tuple[int, ...]
    gloss: str


def present(directory: str | Path | None) -> bool:
    return directory is not None and all((Path(directory) / f).is_file() for f in ("index.noun", "data.noun"))


def state(directory: str | Path | None) -> list[object] | None:
    """What a build's fingerprint records of the database: None when absent, else its files' sizes."""
    if not present(directory):
        return None
    return [(Path(str(directory)) / f).stat().st_size for f in ("index.noun", "data.noun")]


class WordNet:
    def __init__(
        self,
        index: dict[str, tuple[int, ...]],
        data: bytes,
        exceptions: dict[str, str],
        aliases_file: Path | None = None,
    ) -> None:
        self.index, self.data, self.exceptions = index, data, exceptions
        self.aliases_file = aliases_file  # where `aliases` keeps its answer for this database (None: not kept)
        self._aliases: dict[int, tuple[str, ...]] | None = None
        self._synsets: dict[int, Synset] = {}
        self._depths: dict[int, int] = {}

    @classmethod
    def open(cls, directory: str | Path | None, cache_dir: Path | None = None) -> WordNet | None:
        """The database in `directory`, or None when it is not there (the cues build then links no categories).
        `cache_dir`: where the gloss aliases are kept between runs (see the module's docstring)."""
        if not present(directory):
            return None
        root = Path(str(directory))
        index: dict[str, tuple[int, ...]] = {}
        for line in (root / "index.noun").read_text(encoding="utf-8", errors="replace").splitlines():
            if not line or line.startswith(" "):
                continue  # the licence header
            parts = line.split()
            # lemma pos synset_cnt p_cnt [ptr_symbol...] sense_cnt tagsense_cnt synset_offset...
            count = int(parts[2])
            index[parts[0]] = tuple(int(o) for o in parts[-count:])
        exceptions: dict[str, str] = {}
        exc = root / "noun.exc"
        if exc.is_file():
            for line in exc.read_text(encoding="utf-8", errors="replace").splitlines():
                parts = line.split()
                if len(parts) >= 2:
                    exceptions.setdefault(parts[0], parts[1])
        return cls(index, (root / "data.noun").read_bytes(), exceptions, _aliases_file(root, cache_dir))

    def synset(self, offset: int) -> Synset:
        found = self._synsets.get(offset)
        if found is None:
            found = self._synsets[offset] = _parse(self.data, offset)
        return found

    def root_distance(self, offset: int) -> int:
        """Steps from the hierarchy's root to the synset (the shortest hypernym path)."""
        found = self._depths.get(offset)
        if found is None:
            hypernyms = self.synset(offset).hypernyms
            found = 0 if not hypernyms else 1 + min(self.root_distance(h) for h in hypernyms)
            self._depths[offset] = found
        return found

    def lookup(self, phrase: str) -> tuple[str, tuple[int, ...]] | None:
        """The longest tail of the phrase that WordNet knows as a noun (singular), and its synsets."""
        words = re.findall(r"[^\W_]+(?:[-'][^\W_]+)*", phrase.lower())[-MAX_TAIL_WORDS:]
        for start in range(len(words)):
            tail = words[start:]
            if len(tail) == 1 and len(tail[0]) < 3:
                break  # "F", "UI": letters, not words
            for lemma in _singulars("_".join(tail), self.exceptions):
                found = self.index.get(lemma)
                if found:
                    return lemma, found
        return None

    def categories(self, phrase: str, depth: int) -> list[Category]:
        """The phrase's categories: hypernyms of its most frequent sense, up to `depth` steps up, the nearest
        first; none too close to the root."""
        found = self.lookup(phrase)
        if found is None or depth < 1:
            return []
        seen: dict[int, int] = {}
        frontier = [found[1][0]]
        for distance in range(1, depth + 1):
            frontier = [h for o in frontier for h in self.synset(o).hypernyms if h not in seen]
            for h in frontier:
                seen.setdefault(h, distance)
        return [
            Category(o, self.name(o), d)
            for o, d in sorted(seen.items(), key=lambda x: (x[1], x[0]))
            if self.root_distance(o) >= MIN_ROOT_DISTANCE
        ]

    def name(self, offset: int) -> str:
        """A category's name: its lemmas (spaces for underscores), then the lemmas its gloss-aliases lend it."""
        lemmas = [w.replace("_", " ") for w in self.synset(offset).lemmas[:MAX_LEMMAS]]
        lemmas += [a for a in self.aliases().get(offset, ()) if a not in lemmas]
        return ", ".join(dict.fromkeys(lemmas))

    def aliases(self) -> dict[int, tuple[str, ...]]:
        """Synset -> the lemmas of other synsets whose gloss opens with one of its lemmas ("pet: a domesticated
        animal ...") while WordNet files them elsewhere. One pass over every noun synset, on first use."""
        if self._aliases is None:
            self._aliases = _read_aliases(self.aliases_file)
        if self._aliases is None:
            found: dict[int, list[str]] = {}
            for offset in _offsets(self.data):
                synset = _parse(self.data, offset)  # not kept: most synsets are read once, here
                lead = _GLOSS_LEAD.sub("", synset.gloss.lower()).split()
                for size in (3, 2):  # a two- or three-word genus only: one word ("a device that") is the hypernym
                    genus = "_".join(lead[:size])
                    targets = self.index.get(genus) if len(lead) >= size else None
                    if not targets:
                        continue
                    target = targets[0]
                    if target in synset.hypernyms or target == offset:
                        break
                    # only a sibling (the same direct hypernym): a pet and a domestic animal are both animals
                    if set(_parse(self.data, target).hypernyms) & set(synset.hypernyms):
                        found.setdefault(target, []).append(synset.lemmas[0].replace("_", " "))
                    break
            self._aliases = {k: tuple(v[:MAX_LEMMAS]) for k, v in found.items()}
            _write_aliases(self.aliases_file, self._aliases)
        return self._aliases


def _aliases_file(root: Path, cache_dir: Path | None) -> Path | None:
    """The file that keeps the aliases of the database in `root`: named by its files' sizes and times."""
    if cache_dir is None:
        return None
    stamp = [ALIASES_VERSION, MAX_LEMMAS, str(root.absolute())]
    for name in ("index.noun", "data.noun", "noun.exc"):
        path = root / name
        stamp += [path.stat().st_size, path.stat().st_mtime_ns] if path.is_file() else [None, None]
    key = hashlib.blake2b(json.dumps(stamp).encode(), digest_size=8).hexdigest()
    return cache_dir / f"wordnet-aliases-{key}.json"


def _read_aliases(path: Path | None) -> dict[int, tuple[str, ...]] | None:
    """The kept aliases, or None when there are none (or they cannot be read: they are found again)."""
    if path is None:
        return None
    try:  # a cache dir this process may not enter (made by another user) is no cache: found again
        kept = json.loads(path.read_text(encoding="utf-8"))
        return {int(offset): tuple(str(lemma) for lemma in lemmas) for offset, lemmas in kept.items()}
    except (OSError, ValueError, AttributeError, TypeError):
        return None


def _write_aliases(path: Path | None, aliases: dict[int, tuple[str, ...]]) -> None:
    """Keep the aliases for later runs: written whole to a temporary file, then renamed into place. A cache
    that cannot be written costs the next run the pass again, nothing more."""
    if path is None:
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".wordnet-aliases-")
    except OSError:
        return
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            json.dump({str(offset): list(lemmas) for offset, lemmas in sorted(aliases.items())}, out)
        os.replace(temporary, path)
    except OSError:
        Path(temporary).unlink(missing_ok=True)  # a full disk: no half file left behind


def _singulars(lemma: str, exceptions: dict[str, str]) -> list[str]:
    """The lemma and its possible singulars (WordNet's morphy rules for nouns, briefly)."""
    out = [lemma]
    if lemma in exceptions:
        out.append(exceptions[lemma])
    for suffix, ending in (("ies", "y"), ("ches", "ch"), ("shes", "sh"), ("ses", "s"), ("xes", "x"), ("s", "")):
        if lemma.endswith(suffix) and len(lemma) > len(suffix) + 2 and not lemma.endswith("ss"):
            out.append(lemma[: -len(suffix)] + ending)
    return out


def _line(data: bytes, offset: int) -> str:
    end = data.find(b"\n", offset)
    return data[offset : end if end >= 0 else len(data)].decode("utf-8", errors="replace")


def _parse(data: bytes, offset: int) -> Synset:
    head, _, gloss = _line(data, offset).partition(" | ")
    parts = head.split()
    # offset lex_filenum ss_type w_cnt (word lex_id){w_cnt} p_cnt (ptr_symbol offset pos source/target){p_cnt}
    w_cnt = int(parts[3], 16)
    lemmas = tuple(re.sub(r"\(.*\)$", "", parts[4 + 2 * i]) for i in range(w_cnt))
    at = 4 + 2 * w_cnt
    p_cnt = int(parts[at])
    hypernyms, hyponyms = [], []
    for i in range(p_cnt):
        symbol, target, pos = parts[at + 1 + 4 * i : at + 4 + 4 * i]
        if pos != "n":
            continue
        if symbol in ("@", "@i"):
            hypernyms.append(int(target))
        elif symbol in ("~", "~i"):
            hyponyms.append(int(target))
    return Synset(offset, lemmas, tuple(hypernyms), tuple(hyponyms), gloss.strip())


def _offsets(data: bytes) -> list[int]:
    """Every synset's offset in `data.noun` (its lines that do not start with a space)."""
    out, position = [], 0
    while position < len(data):
        end = data.find(b"\n", position)
        end = len(data) if end < 0 else end
        if data[position : position + 1] not in (b" ", b""):
            out.append(position)
        position = end + 1
    return out
