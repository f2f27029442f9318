"""What the offline extractor knows about words: language, background frequency, part of speech.

All of it ships inside pip packages and loads offline (pinned in pyproject.toml):
- `wordfreq`: Zipf frequencies (log10 of uses per billion words) for English and dozens of other languages;
  a word at Zipf 5 ("data", "table") names nothing in particular, one under 3 ("Sqoop", "Redshift") does;
- `lemminflect`: the parts of speech an English word can take ("explain": verb only, "churn": noun or verb;
  clients/parts_of_speech.py, which the topic labels read too);
- `py3langid`: the language of a message that does not read as English;
- `simplemma`: lemmas for dozens of other languages, which say where a word is a form of a verb ("creaste" is
  "crear"): the one part of speech the terms of those languages are checked for.

A message is English when enough of its words are English function words (cheap, and right for chat, where
a message in another language shares almost none of them); only the others go to the language identifier.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Container, Iterator
from functools import lru_cache

# re-exported: extract's modules read them as lexicon.X (ENGLISH_FUNCTION: a message whose words are at least
# ENGLISH_FUNCTION_SHARE of these reads as English)
from clients.parts_of_speech import ENGLISH_FUNCTION as ENGLISH_FUNCTION
from clients.parts_of_speech import ENGLISH_FUNCTION_SHARE
from clients.parts_of_speech import can_be_noun as can_be_noun
from clients.parts_of_speech import lemmas as lemmas
from clients.parts_of_speech import parts_of_speech as parts_of_speech

_LATIN_WORD = re.compile(r"[A-Za-z][A-Za-z'’]*")
_NEEDS_SEGMENTER = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")
_ANY_WORD = re.compile(r"[^\W\d_]+")
# Not zh, ja, ko: wordfreq needs a segmenter (jieba, MeCab) for those; names in them are looked up in English (Chinese
# words: clients.chinese_words.zipf).
LANGUAGES_WITH_FREQUENCIES = frozenset(
    [
        "ar",
        "bg",
        "bn",
        "ca",
        "cs",
        "da",
        "de",
        "el",
        "en",
        "es",
        "fa",
        "fi",
        "fil",
        "fr",
        "he",
        "hi",
        "hu",
        "id",
        "it",
        "lt",
        "lv",
        "mk",
        "ms",
        "nb",
        "nl",
        "pl",
        "pt",
        "ro",
        "ru",
        "sh",
        "sk",
        "sl",
        "sv",
        "ta",
        "tr",
        "uk",
        "ur",
        "vi",
    ]
)


def looks_english(text: str) -> bool:
    words = _ANY_WORD.findall(text[:4000])
    if len(words) < 4:
        # Too short to tell: English when it is all Latin letters (a short command or a name).
        return all(_LATIN_WORD.fullmatch(w) for w in words)
    hits = sum(n for w, n in Counter(words).items() if w.casefold() in ENGLISH_FUNCTION)  # each word folded once
    return hits / len(words) >= ENGLISH_FUNCTION_SHARE


@lru_cache(maxsize=1 << 16)
def language_of(text: str) -> str:
    """ISO 639-1 code of a message's language ("en" fast when it reads as English)."""
    if looks_english(text):
        return "en"
    import py3langid

    code, _ = py3langid.classify(text[:2000])
    return "en" if _english_words(text, str(code)) else str(code)


_ENGLISH_ZIPF = 3.0  # the mean background frequency of English words in chat ("python list vs tuple": 4.1)
_CLEARLY_MORE = 0.5  # how much more frequent, on average, a message's words must be in the identified language


def _english_words(text: str, code: str) -> bool:
    """A message without English function words that is English all the same: a few technical words ("python
    list vs tuple", "azure data lake storage"), which the identifier, trained on sentences, reads as Nigerian
    Pidgin, Hausa or French. English when its words are common English words and not clearly more frequent in
    the identified language (a language without a frequency list is compared as English: the words decide)."""
    if code == "en":
        return True
    words = [w.casefold() for w in _ANY_WORD.findall(text[:2000])][:200]
    if not words:
        return False
    english = sum(zipf(w, "en") for w in words) / len(words)
    other = sum(zipf(w, code) for w in words) / len(words)
    return english >= _ENGLISH_ZIPF and english + _CLEARLY_MORE > other


# A sentence of an English text is in another language where its words are this common in that language, on average,
# and this much more common there than in English ("Chúng tôi rất vui khi ...": Vietnamese 5.9, English 1.4); a list
# of names or terms ("AWS Glue, Redshift, EMR, Athena") is common in no language and stays English.
FOREIGN_ZIPF = 3.0


# A sentence in another language is one written in it, with its grammar: at least this share of its words among that
# language's FOREIGN_GRAMMAR_WORDS most frequent (articles, pronouns, particles, auxiliaries).
FOREIGN_GRAMMAR_WORDS = 300


FOREIGN_GRAMMAR_SHARE = 0.3


def foreign_language(sentence: str) -> str | None:
    """The language a sentence quoted inside an English message is written in ("Cảm ơn bạn đã chọn ...", a reply's
    example in Vietnamese; "Je voudrais un café", a phrase to translate), or None where it reads as English or its
    words are common in no language (names, terms, identifiers). Four words at least: fewer say too little."""
    written = _ANY_WORD.findall(sentence[:2000])[:200]
    if len(written) < 4 or sum(w.islower() for w in written) * 3 < len(written) * 2 or looks_english(sentence):
        return None  # "La Sagrada Familia de Barcelona", "(9 Carrefour de l'Odeon)": names, written with capitals
    words = [w.casefold() for w in written]
    code = language_of(sentence)
    if code == "en" or code not in LANGUAGES_WITH_FREQUENCIES:
        return None  # Chinese, Japanese, Korean: no word frequencies without a segmenter here
    grammar = frequent_words(code, FOREIGN_GRAMMAR_WORDS)
    if sum(w in grammar for w in words) < FOREIGN_GRAMMAR_SHARE * len(words):
        return None  # "Tacos al pastor, carne asada": names of things, a list an English text gives as it is
    english = sum(zipf(w, "en") for w in words) / len(words)
    other = sum(zipf(w, code) for w in words) / len(words)
    return code if other >= FOREIGN_ZIPF and other >= english + _CLEARLY_MORE else None


def foreign_words(sentence: str, code: str) -> bool:
    """Whether a short sentence after one in `code` (`foreign_language`) is in that language too ("Cảm ơn bạn." after
    a Vietnamese sentence): not English by its words, and one of them among the language's most frequent."""
    words = [w.casefold() for w in _ANY_WORD.findall(sentence[:2000])]
    grammar = frequent_words(code, FOREIGN_GRAMMAR_WORDS)
    return bool(words) and not looks_english(sentence) and any(w in grammar for w in words)


@lru_cache(maxsize=1 << 18)
def zipf(word: str, language: str = "en") -> float:
    """Background frequency of a word on the Zipf scale (0 for a word the lists do not hold)."""
    from wordfreq import zipf_frequency

    if _NEEDS_SEGMENTER.search(word):
        if language == "zh":
            from clients.chinese_words import zipf as chinese_zipf  # imported here: most archives hold no Chinese

            return chinese_zipf(word)
        return 0.0  # Japanese or Korean script: wordfreq would need MeCab
    if language not in LANGUAGES_WITH_FREQUENCIES:
        language = "en"
    if word.endswith(("+", "#")):
        return 0.0  # "c++", "c#", "f#": wordfreq drops the symbols and answers for the letter "c"
    return float(zipf_frequency(word, language, wordlist="best", minimum=0.0))


# The endings of an infinitive, in the languages whose verbs simplemma folds to it: a word whose lemma is another
# word with one of them is a form of a verb ("creaste" -> "crear", "conseilles" -> "conseiller", "сделал" ->
# "сделать"); an infinitive itself, or a noun such as "lugar", is its own lemma and is not taken for one.
_INFINITIVE_ENDINGS: dict[str, tuple[str, ...]] = {
    "es": ("ar", "er", "ir"),
    "pt": ("ar", "er", "ir", "or"),
    "gl": ("ar", "er", "ir"),
    "ca": ("ar", "er", "ir", "re"),
    "it": ("are", "ere", "ire", "rre"),
    "fr": ("er", "ir", "re", "oir"),
    "ru": ("ть", "ти", "чь", "ться", "тись"),
    "uk": ("ти", "тися", "ть"),
}
# Adverbs made from adjectives by a suffix no noun of the language ends in ("anteriormente", "velocemente").
_ADVERB_SUFFIX = {"es": "mente", "pt": "mente", "it": "mente", "gl": "mente", "ca": "ment"}


def verb_form(word: str, language: str) -> bool:
    """Whether `word` (lower case) is a conjugated form of a verb of `language` (False where that is not known)."""
    endings = _INFINITIVE_ENDINGS.get(language)
    if not endings:
        return False
    lemma = _lemma(word, language)
    return lemma != word and lemma.endswith(endings)


def adverb_by_suffix(word: str, language: str) -> bool:
    suffix = _ADVERB_SUFFIX.get(language)
    return suffix is not None and len(word) > len(suffix) + 3 and word.endswith(suffix)


@lru_cache(maxsize=1 << 16)
def _lemma(word: str, language: str) -> str:
    import simplemma  # loads the language's dictionary on first use (~0.5 s), only when a message is in it

    return str(simplemma.lemmatize(word, lang=language)).casefold()


@lru_cache(maxsize=1 << 18)
def only_verb_or_adverb(word: str) -> bool:
    """ "explain", "quickly": words that never head or open a noun phrase."""
    tags = parts_of_speech(word)
    return bool(tags) and not (tags & {"NOUN", "PROPN", "ADJ"})


@lru_cache(maxsize=1 << 18)
def is_adjective_only(word: str) -> bool:
    tags = parts_of_speech(word)
    return bool(tags) and tags <= {"ADJ", "ADV"}


def frequent_words(language: str, count: int = 400) -> frozenset[str]:
    """The `count` most frequent words of a language: its stop words, for the languages wordfreq covers."""
    return _frequent(language, count)


@lru_cache(maxsize=64)
def _frequent(language: str, count: int) -> frozenset[str]:
    if language not in LANGUAGES_WITH_FREQUENCIES:
        return frozenset()
    from wordfreq import top_n_list

    return frozenset(top_n_list(language, count))


_LETTERS = "abcdefghijklmnopqrstuvwxyz"
RARE_ZIPF = 2.0  # a word this rare that is one edit from a word said beside it is a misspelling of that word
COMMON_ZIPF = 3.0


def edits(word: str) -> Iterator[str]:
    """Every string one edit from `word` (a letter dropped, added, changed, or two neighbours swapped)."""
    for i in range(len(word) + 1):
        left, right = word[:i], word[i:]
        for c in _LETTERS:
            yield left + c + right
        if right:
            yield left + right[1:]
            for c in _LETTERS:
                if c != right[0]:
                    yield left + c + right[1:]
        if len(right) > 1:
            yield left + right[1] + right[0] + right[2:]


def swaps(word: str) -> Iterator[str]:
    """Every string made by swapping two neighbouring letters of `word`."""
    for i in range(len(word) - 1):
        yield word[:i] + word[i + 1] + word[i] + word[i + 2 :]


def _short_slips(word: str) -> Iterator[str]:
    """A short word's slips: two neighbours swapped ("jion"), or the last letter left off ("scal")."""
    yield from swaps(word)
    for c in _LETTERS:
        yield word + c


def misspelling(word: str, nearby: Container[str], language: str = "en") -> str | None:
    """The word `word` misspells, when it is rare (Zipf < 2) and one edit from a common word (Zipf >= 3) that is
    itself in `nearby` (the words of the same conversation: a reply spells correctly what the user typed,
    "heirarchy" beside "hierarchy", "deprtment" beside "department"); else None. A rare name is never one
    edit from a common word that is said beside it ("Sqoop" and "scoop" do not meet), so names are safe.
    Lower-case Latin words of five letters or more; a word of four only by two neighbours swapped ("jion" beside
    "join"), the slip of a typist, or cut short of its last letter ("scal" beside "scala"): any other edit of a short
    word meets too many words ("wasm" is one deletion from "was", "itsm" from "its")."""
    if len(word) < 4 or not word.isascii() or not word.isalpha() or zipf(word, language) >= RARE_ZIPF:
        return None
    for other in edits(word) if len(word) >= 5 else _short_slips(word):
        if other in nearby and other != word and zipf(other, language) >= COMMON_ZIPF:
            return other
    return None
