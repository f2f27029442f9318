"""The offline extractor keeps a term as the user writes it: a qualifying opener the plain phrase rules cut ("small"
in "a small business") comes back where the user names a kind with it (extract/word_kinds.py QUALIFYING_OPENERS), and
the user's longer term ranks before a common word it holds ("litter box" before "litter")."""

from __future__ import annotations

from concept_support import segment_input

from extract.offline import OfflineExtractor
from extract.phrases import phrases
from extract.tokens import tokens
from extract.types import SegmentInput


def titles(segment: SegmentInput, max_concepts: int = 8) -> list[str]:
    return [h.title.casefold() for h in OfflineExtractor(max_concepts).extract(segment).hypotheses]


def loose(text: str) -> list[str]:
    return [p.surface for p in phrases(text, "en", tokens(text)) if p.loose]


def test_the_users_small_business_is_a_concept_with_its_modifier() -> None:
    """ "a small business that wants to scale", asked twice and answered: the user's kind of business is the
    concept, not "business" alone (the plain rules cut "small" as they cut "a small change")."""
    segment = segment_input(
        "seg-small-business",
        [
            (
                "user",
                "What are some common strategies businesses use to scale? Which strategy would be the most effective"
                " for a small business that wants to scale quickly and efficiently?",
            ),
            (
                "assistant",
                "Investing in technology and outsourcing may be the most effective strategies for a small business"
                " that wants to scale quickly. Franchising and partnerships work for larger companies.",
            ),
            ("user", "How can small businesses compete with large companies like Amazon?"),
            (
                "assistant",
                "Small businesses can compete with larger companies by focusing on a niche market, personalised"
                " service and their local community.",
            ),
        ],
    )
    found = titles(segment)
    assert any(t.startswith("small business") for t in found)
    assert "business" not in found


def test_a_qualifier_only_the_replies_write_describes_and_is_cut() -> None:
    """A reply that twice suggests "a small vase" describes the thing; the user never names a kind with the word,
    so the phrase is cut as before ("vase")."""
    segment = segment_input(
        "seg-small-vase",
        [
            ("user", "I want to brighten up my coffee table with some flowers from the garden. Any ideas for tulips?"),
            (
                "assistant",
                "Put three tulips in a small vase on the coffee table; a small vase keeps the stems upright and the"
                " arrangement low enough to talk over.",
            ),
        ],
    )
    found = titles(segment)
    assert "small vase" not in found
    assert "coffee table" in found


def test_the_qualifier_returns_only_on_a_kind_of_thing_and_the_phrase_stays_as_trimmed() -> None:
    """The loose proposal puts back the opener alone: "large language models" whole (not cut to "large language"
    by the rule that reads a last -s word as a verb), none for a name it describes ("complex pyspark code") or a
    vague noun ("a small change")."""
    assert "large language models" in loose("a pricing calculator for large language models\n\nIt has four inputs")
    assert "big data pipeline" in loose("We moved the big data pipeline to Spark.")
    assert loose("complex pyspark code in realtime requirements") == []
    assert loose("We made a small change to the schedule.") == []
    assert "Small businesses" in loose("Small businesses can compete with larger companies.")


def test_the_users_longer_term_ranks_before_the_common_word_it_holds() -> None:
    """A user who asks about the litter box says "litter" too, and the replies repeat both: the common word alone
    scored first and took the better rank; the user's term says which thing, so it goes first and "litter" right
    after it (kept, and citing no more evidence than the term)."""
    segment = segment_input(
        "seg-litter-box",
        [
            (
                "user",
                "I'm trying to get my kitten to use the litter box. The litter box is in the laundry room, and she"
                " keeps kicking litter onto the floor. What litter works best for kittens?",
            ),
            (
                "assistant",
                "Kittens often kick litter out of a shallow litter box. Try a covered litter box with unscented"
                " clumping litter, and place a mat under it. Keep the litter box away from her food and scoop the"
                " litter daily.",
            ),
            ("user", "Should I get a second litter box for the upstairs bedroom?"),
            (
                "assistant",
                "Yes: the usual rule is one litter box per cat plus one, so a second litter box upstairs helps. Use"
                " the same litter in both.",
            ),
        ],
    )
    found = OfflineExtractor(6).extract(segment).hypotheses
    order = [h.title.casefold() for h in found]
    assert order.index("litter box") < order.index("litter")
    spans = {h.title.casefold(): len(h.evidence_spans) for h in found}
    assert spans["litter box"] >= spans["litter"]
