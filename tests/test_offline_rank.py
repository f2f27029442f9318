"""The offline extractor's choice of a segment's concepts on short, real-looking chat (issue 20): what a user
types in a few lower-case words, how a reply's capital counts for them, what a reply alone must show."""

from __future__ import annotations

from concept_support import segment_input

from extract.lexicon import language_of
from extract.offline import OfflineExtractor
from extract.types import SegmentInput


def titles(segment: SegmentInput, max_concepts: int = 5) -> list[str]:
    return [h.title for h in OfflineExtractor(max_concepts).extract(segment).hypotheses]


def test_a_few_technical_words_without_function_words_read_as_english() -> None:
    """ "python list vs tuple" has no English function word, and the language identifier, trained on sentences,
    reads it as Nigerian Pidgin; its words are common English words, so it is English and its noun phrases
    count. A short message in another language keeps its language."""
    assert language_of("python list vs tuple") == "en"
    assert language_of("spark cotext vs spark session") == "en"
    assert language_of("comment faire une jointure entre deux tables") == "fr"
    assert language_of("Wie kann ich die Daten laden") == "de"
    assert language_of("Habari yako rafiki yangu mpendwa") == "sw"
    segment = segment_input(
        "seg-short",
        [
            ("user", "python list vs tuple"),
            (
                "assistant",
                "In Python, both lists and tuples are used to store a collection of items. Lists are mutable,"
                " tuples are immutable.",
            ),
        ],
    )
    assert "Python list" in titles(segment)
