"""The offline extractor takes no verb for a term's first word and no typist's slip for a term (issue 20): a word
that can be a verb is one after a modal, a subject pronoun, an adverb or "and" after a verb-led clause, and a
short word with two letters swapped beside the word it misspells is that word."""

from __future__ import annotations

from concept_support import segment_input

from extract.lexicon import misspelling
from extract.offline import OfflineExtractor
from extract.phrases import phrases


def surfaces(text: str) -> list[str]:
    return [p.surface.casefold() for p in phrases(text, "en")]


def test_a_verb_after_a_modal_or_a_subject_pronoun_opens_no_term() -> None:
    """ "when you display prices ... they should show decimal points": "display" and "show" are verbs there, so
    neither "display prices" nor "show decimal" is a term; "you" after a verb is its object and the noun after it
    stays ("give you access rights")."""
    found = surfaces("when you display prices of the presets they should show decimal points like this")
    assert "display prices" not in found and "show decimal" not in found
    assert "prices" in found
    assert "access rights" in surfaces("I will give you access rights to the Hive table")
    assert "data lake" in surfaces("We store logs in the data lake and query them with Athena.")
    assert "store logs" not in surfaces("We store logs in the data lake and query them with Athena.")


def test_a_verb_after_an_adverb_or_a_coordinated_verb_opens_no_term() -> None:
    """ "You can automatically collect web content": after an adverb in -ly the verb is cut, its object stays;
    "how to set goals and track progress": the verb after "and" in a clause opened by a verb is one too."""
    found = surfaces("You can automatically collect web content using Python.")
    assert "collect web content" not in found and "web content" in found
    assert "track progress" not in surfaces("Any advice on how to set goals and track progress as a better ally?")
    assert "career progress" in surfaces("I want to talk about my career progress and salary goals.")


def test_a_four_letter_word_with_two_letters_swapped_is_a_misspelling() -> None:
    """ "jion" beside "join" is a slip; other edits of four letters are not asked ("data" beside "date")."""
    assert misspelling("jion", {"join"}) == "join"
    assert misspelling("data", {"date"}) is None
    assert misspelling("hdfs", {"hdfs"}) is None
    segment = segment_input(
        "seg-typo",
        [
            ("user", "how to do jion of two tables in spark? jion on id column"),
            (
                "assistant",
                "A join combines two DataFrames on a key. In Spark, call join on the first one with the second"
                " and the key column; a broadcast join sends the small table to every executor.",
            ),
        ],
    )
    found = [h.title.casefold() for h in OfflineExtractor(8).extract(segment).hypotheses]
    assert "jion" not in found
    assert "spark" in found
