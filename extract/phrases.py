"""Candidate concepts in one message's prose: named things and noun phrases, with where each one occurs.

Input is the prose view of a message (clients/prose.py: code, markup, paths and URLs already blanked), so a
candidate can only come from words a person wrote as prose. Two kinds of candidate, both kept whole (up to
four words, "role-based access control", "AWS Glue job"):

- a **name**: a run of capitalised, all-caps or inner-capital words that does not open the sentence
  ("Power BI", "AWS Glue", "PySpark", "EC2"), with "of", "&", "de" allowed inside ("Bank of America") and a
  plural's apostrophe ("The Liars' Gospel"); an adjective of the stop list in title case opens one ("New York");
  a work's title in quotes keeps its article ('"The Power" by Naomi Alderman');
  a sentence-initial word counts when it is all caps or has inner capitals, or is rare in the language, or, in
  English, is a common noun that opens a name of three words or more with a proper noun ("Point Reyes National
  Seashore": no command, "Visit Yosemite" is one);
- a **noun phrase** (English only): a run of content words between function words and punctuation, with
  leading verbs and adverbs dropped (and the verb after "how to", "want to": "how to deal aggressive customer"),
  cut where a verb-only word stands inside, and ending on a word that can
  be a noun ("customer churn model", "window functions"); a name's kind head is cut ("Shopify platform",
  "Parquet file", "SQL statement" are Shopify, Parquet, SQL); a plural ends it, for English compounds take the
  singular ("simulations increases", "strategies businesses (use)" are no terms; "sales tax" is one), and a
  clause on the plural ends before its verb ("the transformations Spark implements"), an adverb of time after it is
  cut ("the support group yesterday"), a verb's -s form before "to" and a verb is the clause's verb ("the Client wishes
  to engage"), a number opens none ("3.11 run") but stays inside a name ("Gemini 1.5 Flash"); a proper noun takes no
  common word before it ("learning Spanish", "idea Brazil", a greeting to a name: "Bye Caroline!" are the name
  alone); a genitive after "a" or "an" describes its head and is part of the term ("a Master's programme").

A word called with nothing in prose ("**coalesce()**: ...", "using input_define()") is a name: a function the
text is about (clients/prose.py keeps such a call in the extractor's view).

A dotted word is code, no part of either ("number.key", "IsHoliday.x", "pack.obj"), unless it names a site or a
library ("Booking.com", "node.js"); a name in a Title Case heading ends before a last adverb ("the Schema Manually").

A list item's head of up to two words ("1. **Caching**: ...", "Use partitioning: ...") is a noun phrase whole, its
-ing word too (the plain rules cut "Caching" as a verb), without the command that opens it.

Where the rules above cut a modifier off a noun phrase (a participle after a determiner: "a hashing algorithm",
"a stored procedure"; an -ing head that ends a run after a noun: "performance tuning"; a common adjective in
front: "linguistic diversity"; a qualifying opener, "small business", QUALIFYING_OPENERS), the phrase with it is
proposed as well, marked loose: the extractor keeps it only where the segment says it so twice or more (a
collocation, not "a larger dataset" said once), and one with a qualifying opener only where the user says it so.

For a message in another language there is no part-of-speech lexicon here, so fewer kinds of candidate: names
(where the language capitalises names only, Spanish, French, Russian..., a capital inside a sentence is a name's
however common the word, "Sevilla", "Lyon"; a common noun with a capital after an article is a term a contract
defines, "el Cliente"; German capitalises every noun, so there a capital is a name's only on a word that is no
common German noun: "Siemens", "Schwabing", not "Monat") and, in the languages wordfreq has frequencies for,
runs of two or three content words ("paella valenciana", "aceite de oliva", "ремонт кухни"; `_content_runs`),
none of them among the language's most frequent words nor a form of a verb (simplemma's lemma says which), each
loose: a term where the segment says it twice. Chinese has a part-of-speech tagger here (jieba): its nouns and
noun compounds too (extract/chinese.py, on the words extract.chinese.tokens cuts). A language without frequencies
(and Japanese and Korean text, which need a segmenter) gives names only: fewer concepts beat wrong ones.

Where the rules live: a prose view's words and their shapes in extract/tokens.py, the word lists and the tests on
one word in extract/word_kinds.py, names in extract/name_phrases.py, noun phrases and list heads in
extract/noun_phrases.py (the trim of a piece to its noun phrase: extract/phrase_trim.py), other languages' runs in
extract/content_runs.py; `phrases` here reads a message with them.
"""

from __future__ import annotations

from collections.abc import Iterator

from extract import chinese, lexicon
from extract.content_runs import _content_runs
from extract.name_phrases import _names
from extract.noun_phrases import _heads, _noun_phrases
from extract.tokens import Phrase, Token, tokens
from extract.word_kinds import capital_marks_name


def phrases(
    prose: str,
    language: str,
    words: list[Token] | None = None,
    phrase_chars: int | None = None,
    heads: bool = False,
) -> Iterator[Phrase]:
    """Every candidate phrase of one message's prose view (names first, then noun phrases); `words` are its
    tokens when the caller has them already; noun phrases only from the first `phrase_chars` characters; with
    `heads`, its list items' heads (a reply's, not a user's: a user's heads are a prompt's sections)."""
    words = tokens(prose) if words is None else words
    if not words:
        return
    owned: list[Phrase] = []  # names with a possessive inside ("Mother's Day")
    for name in _names(prose, words, language):
        if "'s " in name.surface or "’s " in name.surface:
            owned.append(name)
        yield name
    if language == "zh":
        yield from chinese.phrases(prose, words, phrase_chars)
    if phrase_chars is not None and words[-1].start >= phrase_chars:
        words = [t for t in words if t.start < phrase_chars]
    if language == "en":
        for phrase in _noun_phrases(prose, words):
            if not owned or not any(phrase.start < name.start < phrase.end < name.end for name in owned):
                yield phrase  # "Happy Mother" of "Happy Mother's Day": its last word is the name's owner
        if heads:
            yield from _heads(prose, words)
    elif capital_marks_name(language) and language in lexicon.LANGUAGES_WITH_FREQUENCIES:
        yield from _content_runs(prose, words, language)
