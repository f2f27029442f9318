"""Junk the v43 rules left in the demo's top concepts (issue 20, session 36; extract/offline_messages.py
`_blank_markup`, extract/name_phrases.py `_quoted_titles`, extract/offline_scoring.py `_full_name`,
extract/lone_words.py `_verb_or_modifier`): the footer a browser extension appends to every ChatGPT prompt ("Please
write in English language.", whose "English" outranked what the prompts were about), a piece of a quoted film title
("Hollywood" of "Once Upon a Time in Hollywood") and an adjective written with a capital before its noun
("Indigenous communities"). The texts are the demo's (LongMemEval, MIT) and the real exports'
(shared/data/README.md)."""

from __future__ import annotations

from concept_support import segment_input

from extract.offline import OfflineExtractor
from extract.offline_messages import _read
from extract.types import SegmentMessage


def titles(*texts: tuple[str, str], max_concepts: int = 8) -> list[str]:
    segment = segment_input("seg-footers", list(texts))
    return [h.title for h in OfflineExtractor(max_concepts).extract(segment).hypotheses]


def test_an_extensions_footer_is_markup() -> None:
    """ "Please write in English language." and its variants at a prompt's end are blanked, offsets kept, together with
    a "Share Prompt" after them; the same words inside a prompt are the user's and stay."""
    for footer in (
        "Please write in English language.",
        "Please write in English (US) language.",
        "Please write in Portuguese language.",
        "Please write in English language.Share Prompt",
        "지금 번역하기",
    ):
        prompt = "If you cannot appeal to the NCAT Appeal Panel you may appeal to the NSW Supreme Court.\n\n" + footer
        view = _read(SegmentMessage("m1", "user", prompt, None)).view
        assert len(view) == len(prompt) and view.rstrip().endswith("Supreme Court."), view
    asked = "Please write in English language. Then give me the steps of an NCAT appeal."
    assert _read(SegmentMessage("m2", "user", asked, None)).view == asked
    reply = "Please write in English language."
    assert _read(SegmentMessage("m3", "assistant", reply, None)).view == reply


def test_a_language_asked_for_in_every_prompts_footer_is_no_concept() -> None:
    """The demo's NCAT conversation: "English" came from the footer of every prompt, not from what the user asks."""
    steps = (
        "Step 1: Check the NCAT Appeal Panel can decide the appeal. Section 32 of the Civil and Administrative Tribunal"
        " Act 2013 tells you which NCAT decisions you can appeal against to the Appeal Panel.",
        "Step 2: Consider legal representation. Before lodging an internal appeal, consider whether you want to present"
        " your own case to NCAT or have a lawyer represent you.",
        "Step 3: Complete the Notice of Appeal. To apply for your matter to be heard by the Appeal Panel, you need to"
        " fill out a Notice of Appeal form.",
    )
    texts: list[tuple[str, str]] = []
    for step in steps:
        prompt = f"This is the {step[:6]}. I want you to remember this. {step}\n\nPlease write in English language."
        texts.append(("user", prompt))
        texts.append(("assistant", f"Acknowledged, I understand that {step[:6]} of the NCAT appeal guide is noted."))
    found = titles(*texts)
    assert "English" not in found and "NCAT" in found, found


FILMS_USER = (
    'I\'m really interested in "Once Upon a Time in Hollywood" and "The Irishman". Can you tell me more about the'
    " plot and cast?"
)
FILMS_REPLY = (
    'Great choices! Both "Once Upon a Time in Hollywood" and "The Irishman" are highly anticipated films with'
    " incredible casts and intriguing plots.\n\n**Once Upon a Time in Hollywood**\n\nSet in 1969 Los Angeles, the"
    " film follows Rick Dalton (Leonardo DiCaprio), a fading television actor."
)


def test_a_quoted_title_with_small_words_is_one_name() -> None:
    """ "Once Upon a Time in Hollywood": the name rules stop at "a" and "in", and the title's last word "Hollywood"
    was the concept; a quoted run of title-case words with a small word inside is a work's title, its words inside
    it (a quoted sentence in lower case is none)."""
    found = titles(("user", FILMS_USER), ("assistant", FILMS_REPLY))
    assert "Once Upon a Time in Hollywood" in found and "Hollywood" not in found, found
    assert "The Irishman" in found, found


INDIGENOUS_USER = (
    "What are some promising strategies for promoting greater economic and social empowerment among indigenous"
    " communities in Australia?"
)
INDIGENOUS_REPLY = (
    "1. Developing Indigenous-led economic development initiatives: Indigenous communities need to initiate and"
    " develop their own viable enterprises.\n2. Providing business education programs can give Indigenous people the"
    " tools they need.\n3. Fostering partnerships between Indigenous communities and non-Indigenous organizations."
    "\n4. Supporting Indigenous entrepreneurship and Indigenous businesses through procurement."
)


def test_an_adjective_written_with_a_capital_before_its_noun_is_no_concept() -> None:
    """ "Indigenous communities", "Indigenous people", "Indigenous businesses": the capital is a convention, the word
    says how the thing is; the phrase stays. A name in title case after it ("Indigenous Business Australia"), a word
    joined to another ("Indigenous and non-Indigenous") or one the lexicon does not know tell nothing. "Indigenous-led"
    is a modifier too."""
    found = titles(("user", INDIGENOUS_USER), ("assistant", INDIGENOUS_REPLY))
    assert "Indigenous" not in found and "Indigenous communities" in found, found
    assert "Indigenous-led" not in found, found  # "-led", "-owned": a modifier, like "Moroccan-inspired"


def test_a_capitalised_adjective_said_as_a_name_stays() -> None:
    """ "Rocky" said alone as a film ("I watched Rocky last night. Rocky is ..."): a mention that is no modifier
    before a noun keeps it."""
    found = titles(
        ("user", "I watched Rocky last night and loved it. Is Rocky the best boxing film ever made?"),
        ("assistant", "Rocky is a classic! Sylvester Stallone wrote Rocky in three days."),
    )
    assert "Rocky" in found, found


def test_an_adjective_said_once_as_a_noun_stays() -> None:
    """ "a chicken parmesan with pasta": a stop word after the word says it is a noun there, so "Parmesan" of
    "Grated Parmesan cheese" stays a concept (the lexicon lists "parmesan" as an adjective only)."""
    found = titles(
        (
            "user",
            "I'm looking for some new recipe ideas for dinner. I recently made a chicken parmesan with pasta and it"
            " turned out great. Can you suggest something similar?",
        ),
        (
            "assistant",
            "Here is a Creamy Tomato Pasta Bake: penne, cherry tomatoes, garlic, basil, salt, and pepper. Grated"
            " Parmesan cheese for serving. Cooks in 30 minutes.",
        ),
    )
    assert "Parmesan" in found, found
