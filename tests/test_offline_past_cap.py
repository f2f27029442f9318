"""Past a full segment, the offline extractor keeps a few more of the names it mentions (extract/offline.py
`_names_past_cap`): a person lists the shop the user bought the shelf at as readily as the books on it, and a name
added there cites one span, after every term above it, so what ranked first stays first."""

from __future__ import annotations

from concept_support import segment_input

from extract.offline import NAMES_PAST_CAP, OfflineExtractor
from extract.types import SegmentInput

BOOKS = segment_input(
    "seg-books",
    [
        (
            "user",
            "I'm looking for some book recommendations. I just organized my living room with a new bookshelf from"
            " IKEA and I want to fill it. I loved The Power by Naomi Alderman, so something similar would be great.",
        ),
        (
            "assistant",
            "If you enjoyed The Power by Naomi Alderman, you might like these books. The Handmaid's Tale by Margaret"
            " Atwood imagines a society ruled by fear. Station Eleven by Emily St. John Mandel follows a troupe after"
            " a pandemic. The Song of Achilles by Madeline Miller retells the Iliad. Naomi Alderman also wrote The"
            " Liars' Gospel, a novel set in Roman Judea.",
        ),
        (
            "user",
            "Thanks! I also want some bookends for the shelf. Do you think geometric bookends from West Elm would suit"
            " a modern living room?",
        ),
        (
            "assistant",
            "Geometric bookends from West Elm would suit a modern living room well. Pair them with a few plants, and"
            " keep The Power and The Liars' Gospel side by side so the Naomi Alderman novels read as a set.",
        ),
    ],
)


def _found(segment: SegmentInput, max_concepts: int) -> list[tuple[str, int]]:
    return [(h.title, len(h.evidence_spans)) for h in OfflineExtractor(max_concepts).extract(segment).hypotheses]


def test_a_name_the_user_writes_is_kept_past_a_full_segment() -> None:
    """Five terms fill the segment; "IKEA", which the user writes once, ranks below them and is kept after them,
    citing one span; the five come first, as they were."""
    found = _found(BOOKS, 5)
    titles = [title for title, _ in found]
    assert "IKEA" in titles[5:], found
    assert dict(found)["IKEA"] == 1
    assert len(found) <= 5 + NAMES_PAST_CAP
    assert titles[:3] == ["Naomi Alderman", "West Elm", "Modern living room"], found


def test_past_a_full_segment_only_names_are_added() -> None:
    """Under a cap of three, "geometric bookends", a phrase of common words the user says, is no name: it waits
    for a segment with room, as before; the book titles the reply introduces are names, kept after the three with
    one span each."""
    found = _found(BOOKS, 3)
    titles = [title for title, _ in found]
    assert titles[:3] == ["Naomi Alderman", "West Elm", "Modern living room"], found
    assert "Geometric bookends" not in titles
    assert titles[3:] and {"Song of Achilles", "Liars' Gospel"} >= set(titles[3:]), found
    assert all(spans == 1 for _, spans in found[3:]), found


JOINS = [
    (
        "user",
        "My Spark job joins two DataFrames on customer_id and the shuffle takes forever. Which join strategy does"
        " Spark pick for a large DataFrame?",
    ),
    (
        "assistant",
        "For two large DataFrames, Spark picks the sort-merge join strategy by default: both sides are shuffled by the"
        " join key and sorted. The shuffle is what takes the time. Spark also provides other join strategies, such"
        " as broadcast join and hash join, which suit a small table better: a broadcast join sends the small side"
        " to every executor.",
    ),
    ("user", "Can I make the shuffle cheaper? Is the join key skewed maybe? customer_id has a few huge values."),
    (
        "assistant",
        "Yes: a skewed join key sends most rows to a few tasks, so the shuffle stalls on them. Salting the join key"
        " spreads the skewed values, and adaptive query execution in Spark 3 can split skewed partitions. Check the"
        " DataFrame's key distribution first.",
    ),
]


def test_past_a_full_open_set_the_terms_a_reply_says_once_are_kept_last() -> None:
    """The reply names "broadcast join" twice, beside the strategy it explains: no rank of its own (a reply's
    passing words), but listed after the segment's terms, one span; the first five, which each cite two spans or
    more, come first as they were, and "Spark picks" is a clause, no term."""
    found = _found(segment_input("seg-joins", JOINS), 6)
    titles = [title for title, _ in found]
    assert all(spans >= 2 for _, spans in found[:5]), found
    assert "Broadcast join" in titles[5:] and dict(found)["Broadcast join"] == 1, found
    assert "Spark picks" not in titles, found


def test_a_segment_short_of_five_terms_keeps_no_passing_words() -> None:
    """With fewer terms than the open ranks (the question and its first answer alone), a term said once in the
    reply would take a place in the conversation's top five: none is added."""
    found = _found(segment_input("seg-joins-short", JOINS[:2]), 6)
    assert "Broadcast join" not in [title for title, _ in found], found


def test_past_a_full_open_set_a_common_noun_the_user_says_and_the_replies_repeat_is_kept_last() -> None:
    """ "What about the cuisine?", then the replies' "The cuisine is seafood first", "The cuisine of the Algarve":
    too common a word to rank, but what the user asked about; listed after the five places, one span. "Is the
    Algarve worth it" is the Algarve."""
    found = _found(
        segment_input(
            "seg-portugal",
            [
                (
                    "user",
                    "I'm planning ten days in Portugal: Lisbon, Porto and Sintra, maybe the Algarve. What about the"
                    " cuisine?",
                ),
                (
                    "assistant",
                    "Lisbon and Porto each deserve three days. Sintra is an easy day trip from Lisbon, and the Algarve"
                    " needs two days at least. The cuisine is seafood first: grilled sardines in Lisbon, francesinha"
                    " in Porto.",
                ),
                ("user", "Should I fly into Porto and out of Lisbon? And is the Algarve worth it in October?"),
                (
                    "assistant",
                    "Flying into Porto and out of Lisbon saves a day. The Algarve in October is warm and quiet, and"
                    " Sintra is less crowded then too. The cuisine of the Algarve is known for cataplana, and"
                    " Portugal's trains are cheap.",
                ),
            ],
        ),
        6,
    )
    titles = [title for title, _ in found]
    assert set(titles[:5]) == {"Lisbon", "Algarve", "Porto", "Sintra", "Portugal"}, found
    assert all(spans >= 2 for _, spans in found[:5]), found
    assert "Cuisine" in titles[5:] and dict(found)["Cuisine"] == 1, found
    assert not any("worth" in t.casefold() for t in titles), found
