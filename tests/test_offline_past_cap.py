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
