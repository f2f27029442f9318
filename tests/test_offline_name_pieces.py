"""Junk the offline extractor wrote on the demo and the real exports that the v42 rules left (issue 20, session 36;
extract/lone_words.py, extract/offline_messages.py `_blank_markup`): a piece of a longer name the name rules cut
("Zealand" of "New Zealand", "Stranger" of "Stranger Things"), a word used as a verb with its object or as an
adjective before its noun in every mention ("to complement your sofa", "a cohesive look"), a character sheet's
abbreviations ("Insight (Wis)"), a line of chords ("E D A Bm"), a quoted example sentence ('"The dog runs."'), a
numbered store ("store 10") and the text a browser extension appends to a ChatGPT prompt ("Share Prompt"). The
texts are the demo's (LongMemEval, MIT) and the real exports' (tests/fixtures' sources, shared/data/README.md)."""

from __future__ import annotations

from concept_support import segment_input

from extract.offline import OfflineExtractor
from extract.offline_messages import _read
from extract.types import SegmentMessage


def titles(*texts: tuple[str, str], max_concepts: int = 8) -> list[str]:
    segment = segment_input("seg-pieces", list(texts))
    return [h.title for h in OfflineExtractor(max_concepts).extract(segment).hypotheses]


NEW_ZEALAND_USER = (
    "I'm planning a trip to New Zealand for my 30th birthday and I was wondering if you could recommend some must-see"
    " attractions on the South Island. By the way, I'm really drawn to outdoor adventures, having just returned from a"
    " solo camping trip to Yosemite National Park where I hiked to the top of Vernal Falls on the first day, and I'm"
    " looking for similar experiences in NZ."
)
NEW_ZEALAND_REPLY = (
    "Happy 30th birthday in advance! New Zealand's South Island is an outdoor enthusiast's paradise, and I'm stoked to"
    " help you plan an epic adventure. Given your taste for excitement and experience in Yosemite, I've curated a list"
    " of must-see attractions and activities that'll get your heart racing:\n\n1. **Milford Sound and Fiordland"
    " National Park**: A UNESCO World Heritage Site, Milford Sound is a majestic fjord carved by glaciers."
)


def test_a_piece_of_a_longer_name_is_no_concept() -> None:
    """ "New Zealand" (its expansion folded into "NZ") left "Zealand"; "Stranger Things" ("things" a stop word) left
    "Stranger". The names around them stay."""
    trip = titles(("user", NEW_ZEALAND_USER), ("assistant", NEW_ZEALAND_REPLY))
    assert "Zealand" not in trip and "South Island" in trip, trip
    shows = titles(
        (
            "user",
            "I just finished watching the latest season of Stranger Things on Netflix and I'm already craving more"
            " sci-fi shows. Can you recommend some similar shows that I might enjoy?",
        ),
        (
            "assistant",
            "A fellow Stranger Things fan! I'm happy to help you find your next sci-fi fix. Here are some shows that"
            " you might enjoy:\n\n1. **The Haunting of Hill House**: A Netflix series that shares a similar atmosphere"
            " and blend of horror, mystery, and sci-fi elements.\n2. **Black Mirror**: A thought-provoking anthology"
            " series that explores the darker side of technology.",
        ),
    )
    assert "Stranger" not in shows and "Netflix" in shows, shows


def test_a_name_said_once_after_a_sentences_first_word_stays() -> None:
    """ "If Kafka ...": a stop word that opens a sentence is no part of the name after it."""
    found = titles(
        ("user", "our consumers lag behind every night. If Kafka is the bottleneck, what should we tune first?"),
        (
            "assistant",
            "Start with the consumer side: raise max.poll.records, add partitions to the topic and scale the consumer"
            " group so that each consumer reads fewer partitions.",
        ),
    )
    assert "Kafka" in found, found


RUG_USER = (
    "I'm also thinking of getting a new rug to complement my new sectional sofa, which is grey velvet by the way. Do"
    " you have any recommendations for rug styles or materials that would go well with it?"
)
RUG_REPLY = (
    "Grey velvet is a beautiful fabric! Choosing the right rug can really tie the room together. Here are some rug"
    " style and material recommendations that would complement your grey velvet sectional sofa:\n\n1. **Natural fiber"
    " rugs**: A natural fiber rug like sisal, jute, or seagrass can add warmth and texture to the room.\n2. **Wool**: A"
    " wool rug is a great choice to pair with velvet, and sisal rugs complement the grey velvet as well."
)


def test_a_word_used_as_a_verb_or_a_modifier_in_every_mention_is_no_concept() -> None:
    """ "to complement my new sectional sofa", "would complement your ...": a verb with its object each time; "a
    cohesive look" (and a heading's "a Cohesive Look"): an adjective before its noun each time."""
    rug = titles(("user", RUG_USER), ("assistant", RUG_REPLY))
    assert "Complement" not in rug and "Grey velvet" in rug, rug
    art = titles(
        (
            "user",
            "My sister gave me a beautiful watercolor painting last April, and it's now hanging in my living room. Do"
            " you have any suggestions on how to create a cohesive look for my art collection in the living room?",
        ),
        (
            "assistant",
            "**Creating a Cohesive Look for Your Art Collection:**\n\nHere are some tips to help you achieve a cohesive"
            " look:\n\n1. **Unifying Theme:** Identify a common thread that ties your art pieces together, such as a"
            " specific color palette.\n2. **Color Scheme:** Choose a dominant color scheme for your art collection.",
        ),
    )
    assert "Cohesive" not in art and "Art collection" in {t.capitalize() for t in art}, art


def test_a_gerund_said_once_as_a_subject_stays() -> None:
    """ "Caching: ..." heads a list item, "caching is": a noun there (the labels count "Caching" right), though the
    user's "caching the DataFrame" uses it as a verb."""
    found = titles(
        ("user", "should I be caching the DataFrame before the two joins in my Spark job?"),
        (
            "assistant",
            "Yes. Caching is worth it when a DataFrame is read more than once:\n\n- Caching: keeps the partitions in"
            " memory after the first action, so the second join reads them from there.\n- Persist: the same with a"
            " storage level of your choice.",
        ),
    )
    assert "Caching" in found, found


def test_a_character_sheets_abbreviations_are_no_concepts() -> None:
    """librechat's tabletop game: "Animal Handling (Wis)", "Deception (Cha)": Wisdom and Charisma cut short."""
    found = titles(
        ("user", "Create a blank character sheet for Chronicles of Everia with the skills of each attribute."),
        (
            "assistant",
            "Skills:\nStrength:\n\n  * Athletics (Str)\n\nDexterity:\n\n  * Acrobatics (Dex)\n  * Sleight of Hand"
            " (Dex)\n\nWisdom:\n\n  * Animal Handling (Wis)\n  * Insight (Wis)\n  * Medicine (Wis)\n  * Perception"
            " (Wis)\n  * Survival (Wis)\n\nCharisma:\n\n  * Deception (Cha)\n  * Intimidation (Cha)\n  * Performance"
            " (Cha)\n  * Persuasion (Cha)",
        ),
    )
    assert not {"Wis", "Cha", "Dex", "Str"} & set(found), found
    assert "Chronicles of Everia" in found, found


def test_chords_and_an_extensions_text_are_markup() -> None:
    """A line of chords ("E D A Bm") and the "Share Prompt" an extension glues to a prompt are blanked from the prose
    view, offsets kept: "Bm", "G D F#m" and "Share Prompt" were concepts."""
    chords = "Here is how the chords would look like in that key:\n\nChorus:\nE D A Bm\nE D A Bm\n\nBridge:\nF#m E A Bm"
    view = _read(SegmentMessage("m1", "assistant", chords, None)).view
    assert len(view) == len(chords) and "Bm" not in view and "Chorus:" in view, view
    prompt = "which one should I get the mean of sales in store 10?Share Prompt"
    view = _read(SegmentMessage("m2", "user", prompt, None)).view
    assert view.rstrip() == "which one should I get the mean of sales in store 10?", view
    song = titles(
        ("user", "could you create a song that avicii would typically make? how would the chords look like?"),
        ("assistant", "Sure! Here it is in A major, the way Avicii writes:\n\n" + chords),
    )
    assert not {"Bm", "G D F#m", "E D A Bm"} & set(song), song


def test_a_quoted_example_sentence_and_a_numbered_store_are_no_concepts() -> None:
    """'Example: "The dog runs."' gave "Dog runs"; the user's "sales in store 10" then a reply's "Store 10" gave
    "Store 10" (one store of many); a product's number ("Windows 11") stays."""
    grammar = titles(
        ("user", "Can you provide some examples of different sentence structures and their benefits and drawbacks?"),
        (
            "assistant",
            'Simple sentence structure: a single independent clause. Example: "The dog runs."\nCompound sentence'
            ' structure: two independent clauses joined by a conjunction. Example: "The dog runs, but the cat stays."',
        ),
        ("user", "I meant like placement of nouns, verbs, adjectives, etc."),
        (
            "assistant",
            "In English, nouns, verbs and adjectives have a typical word order in a sentence, known as SVO"
            ' (Subject-Verb-Object). For example, in the sentence "The dog runs," "the dog" is the subject,'
            ' "runs" is the verb, and there is no object. SOV (Subject-Object-Verb) is common in Japanese and Turkish.',
        ),
    )
    assert "Dog runs" not in grammar and "SVO" in grammar, grammar
    sales = titles(
        ("user", "which one should I get the mean of sales in store 10?Share Prompt"),
        (
            "assistant",
            "To get the mean of sales for Store 10, you should use the first dataset as it contains data for only one"
            " store (Store 10), while the second dataset contains data for multiple stores. To calculate the mean of"
            " weekly sales for Store 10, filter the first dataset on Store 10.",
        ),
    )
    assert not {"Store 10", "Share Prompt"} & set(sales), sales
    upgrade = titles(
        ("user", "is it worth upgrading my laptop to Windows 11 before the summer?"),
        ("assistant", "Windows 11 needs TPM 2.0; if your laptop has it, Windows 11 runs well and gets updates longer."),
    )
    assert "Windows 11" in upgrade, upgrade
