"""A name whose first word is a common noun that can be a verb ("Point Reyes National Seashore", "Lake Tahoe Basin")
keeps that word where it opens a sentence or a list item: the command rule (a verb that opens a sentence, then its
object: "Load data", "**Visit Yosemite**") reads it as a name's first word when a proper noun and one more word of
the name follow it (extract/word_kinds.py `_name_opener`)."""

from __future__ import annotations

from concept_support import segment_input

from clients.prose import prose
from extract.offline import OfflineExtractor
from extract.phrases import phrases


def surfaces(text: str) -> list[str]:
    return [p.surface for p in phrases(prose(text), "en", heads=True)]


def test_a_common_noun_that_opens_a_list_item_and_a_name_stays_in_the_name() -> None:
    """ "1. **Point Reyes National Seashore** (45 minutes ...)": "Point" opens the line, but "Reyes", a word no
    English list holds, and "National" follow it: the name is proposed whole, by the name and noun-phrase rules
    alike, and its tail alone is no candidate."""
    found = surfaces(
        "Here are some hotspots:\n\n1. **Point Reyes National Seashore** (45 minutes from Oakland): This national"
        " park is a renowned spot.\n2. **Lake Tahoe Basin**: high elevation."
    )
    assert "Point Reyes National Seashore" in found and "Reyes National Seashore" not in found
    assert "Lake Tahoe Basin" in found and "Tahoe Basin" not in found


def test_a_command_that_opens_a_heading_is_still_cut_off_its_object() -> None:
    """A command takes one name ("**Visit Yosemite**"), common nouns in title case ("Use Version Control:") or is a
    verb only ("Install Docker Desktop"): each is cut as before. A slogan in title case is a sentence, no name ("Make
    America Great Again": "great" opens no name)."""
    assert "Yosemite" in surfaces("**Visit Yosemite**\nIt is great in May.")
    assert not any(s.startswith("Visit") for s in surfaces("**Visit Yosemite**\nIt is great in May."))
    assert "Version Control" in surfaces("Use Version Control: commit often.")
    assert "Use Version Control" not in surfaces("Use Version Control: commit often.")
    assert "Docker Desktop" in surfaces("Install Docker Desktop on your laptop.")
    assert not any(s.startswith("Install") for s in surfaces("Install Docker Desktop on your laptop."))
    assert not any(s.startswith("Make") for s in surfaces("Make America Great Again was a slogan."))


def test_the_extractor_titles_a_listed_place_by_its_whole_name() -> None:
    """The demo's birding conversation (LongMemEval): a reply lists "**Point Reyes National Seashore**" once, as a
    list item's opening; the concept is "Point Reyes National Seashore", counted as a name written with its
    capitals, not "Reyes National Seashore"."""
    segment = segment_input(
        "seg-birding",
        [
            ("user", "I'm looking for recommendations on birding spots near Oakland for the spring warbler migration."),
            (
                "assistant",
                "Oakland is a great location for birding. Here are some warbler hotspots within an hour's drive:\n\n"
                "1. **Point Reyes National Seashore** (45 minutes from Oakland): This national park is a renowned"
                " spot for spring warbler migration.\n"
                "2. **Tilden Regional Park** (15 minutes from Oakland): Look for warblers along Wildcat Creek.\n",
            ),
        ],
    )
    titles = [h.title for h in OfflineExtractor().extract(segment).hypotheses]
    assert "Point Reyes National Seashore" in titles
    assert not any(t.startswith("Reyes") for t in titles)
