"""A name in the possessive before the words of a title is one name with them ("Assassin's Creed Odyssey", "Knott's
Scary Farm", "Ender's Game"), where before the name rules cut it at its "'s" into "Assassin" and "Creed Odyssey";
a maker before its product stays apart from it ("Google's Chrome", "Dell's Battery Meter" beside "Dell")
(extract/name_phrases.py `_possessive_names`, extract/offline_candidates.py `_drop_owned`)."""

from __future__ import annotations

from concept_support import segment_input

from clients.prose import prose
from extract.offline import OfflineExtractor
from extract.phrases import phrases


def surfaces(text: str) -> list[str]:
    return [p.surface for p in phrases(prose(text), "en")]


def titles(*texts: tuple[str, str]) -> list[str]:
    output = OfflineExtractor().extract(segment_input("seg-possessive", list(texts)))
    return [h.title for h in output.hypotheses]


def test_a_possessive_before_a_title_case_run_is_one_name() -> None:
    """ "similar to Assassin's Creed Odyssey", "for Knott's Scary Farm": the owner and the run of title-case words
    after its "'s" are proposed whole; so is one common word in title case after it ("Ender's Game", "Mother's
    Day"), whose capital says it is a title's."""
    found = surfaces(
        "Can you recommend games similar to Assassin's Creed Odyssey? I'm considering Knott's Scary Farm since I"
        " loved Ender's Game and we had fun on Mother's Day."
    )
    for name in ("Assassin's Creed Odyssey", "Knott's Scary Farm", "Ender's Game", "Mother's Day"):
        assert name in found


def test_a_maker_before_its_product_and_a_heading_are_not_joined() -> None:
    """ "Google's Chrome", "Apple's iPhone": a word that is a name by itself after a maker; "Gaudí's Sagrada Família":
    a proper name already; "Emma's birthday": no capital after it; "**Emma's Favorite Movie**:" and "Let's Go
    Camping": a sentence's first word, whose capital says nothing; "the Department of Education's Adult Education":
    the owner is the end of a longer name."""
    found = surfaces(
        "I use Google's Chrome on Apple's iPhone. We saw Gaudí's Sagrada Família for Emma's birthday.\n\n"
        "1. **Emma's Favorite Movie**: play it.\nLet's Go Camping. It's Time. Ask the Department of Education's"
        " Adult Education office."
    )
    assert not [s for s in found if "'s" in s]


def test_the_extractor_titles_a_game_and_a_park_by_their_whole_names() -> None:
    """The demo's conversations (LongMemEval): a game the user completed and the replies name again, and a theme
    park's event, are concepts under their whole names; neither "Assassin" nor "Creed Odyssey" nor "Knott" is one."""
    found = titles(
        (
            "user",
            "By the way, do you think you can recommend some games similar to Assassin's Creed Odyssey, which I"
            " completed recently? I'm also considering Knott's Scary Farm since I've already been to Knott's Berry"
            " Farm recently.",
        ),
        (
            "assistant",
            "Assassin's Creed Odyssey is an amazing game! If you're looking for games with similar open-world"
            " exploration, try Ghost of Tsushima: its mature themes might appeal to fans of Assassin's Creed"
            " Odyssey.\n\n**Knott's Scary Farm** (select nights): head to Buena Park for Knott's Scary Farm, the"
            " granddaddy of all Halloween events.",
        ),
    )
    assert "Assassin's Creed Odyssey" in found and "Knott's Scary Farm" in found
    assert not {"Assassin", "Creed Odyssey", "Knott", "Scary Farm"} & set(found)


def test_a_maker_the_segment_names_alone_keeps_its_own_name() -> None:
    """ "Dell's Battery Meter" once beside "Dell" said alone twice, "Microsoft's Visual Studio" beside "Visual
    Studio" said alone twice: a maker and its product, each a name of its own, not one joined name."""
    found = titles(
        (
            "user",
            "Does Dell's Battery Meter work on my Dell laptop? Is Microsoft's Visual Studio good for C#? My Dell is"
            " two years old.",
        ),
        ("assistant", "Visual Studio is a full IDE for C#. Visual Studio runs well on a Dell of that age."),
    )
    assert "Dell" in found and "Visual Studio" in found
    assert not [t for t in found if "'s" in t]


def test_a_greeting_that_opens_a_sentence_leaves_the_holiday_whole() -> None:
    """ "Happy Mother's Day!": the sentence's first word says nothing of a name, the holiday after it is one name
    ("Happy Mother", cut at the "'s", was the concept)."""
    assert "Mother's Day" in surfaces("Happy Mother's Day! Write a short card for my mom.")
    found = titles(
        ("user", "Happy Mother's Day! Write a short card for my mom, she loves gardening."),
        ("assistant", "Happy Mother's Day, Mom! Thank you for every garden you planted with me."),
    )
    assert "Mother's Day" in found, found
    assert not any(t.startswith("Happy") for t in found), found


def test_a_name_always_written_with_a_possessive_that_owns_nothing_keeps_it() -> None:
    """ "like McDonald's or Uber", "McDonald's has expanded": the "'s" owns nothing, it is part of the name (titled
    "McDonald" before); an owner of a title keeps its title ("Sid Meier's Civilization VI")."""
    found = titles(
        ("user", "I want to open a franchise like McDonald's or Uber. How do franchises like McDonald's make money?"),
        ("assistant", "McDonald's has expanded to over 100 countries. Uber takes a commission on every ride."),
    )
    assert "McDonald's" in found and "McDonald" not in found, found
    found = titles(
        ("user", "I have been playing Sid Meier's Civilization VI all week. Which civilization should I pick?"),
        ("assistant", "Sid Meier's Civilization VI rewards a science victory with Korea."),
    )
    assert "Sid Meier's Civilization VI" in found, found
