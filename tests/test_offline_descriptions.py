"""Junk the v44 rules left in the demo's and the real exports' concepts (issue 20, session 37; extract/tokens.py
`_value_end`, extract/name_phrases.py `_quoted_titles`, extract/lone_words.py `_drop_descriptions`, `_numbered_item`,
extract/word_kinds.py ALONE_GENERIC): the quoted values of a JSON object pasted as text ("Chocolate with Sprinkles",
"Powdered Sugar"), a description in title case ("Night Out with Friends", "Exploring Data by Aggregating"), a
numbered store that the code filters on ("Store == 10") and "Schema" alone. The texts are the demo's (LongMemEval,
MIT) and the real exports' (shared/data/README.md), shortened."""

from __future__ import annotations

from concept_support import segment_input

from extract.offline import OfflineExtractor
from extract.tokens import tokens


def titles(*texts: tuple[str, str], max_concepts: int = 8) -> list[str]:
    segment = segment_input("seg-descriptions", list(texts))
    return [h.title for h in OfflineExtractor(max_concepts).extract(segment).hypotheses]


def test_a_json_value_typed_as_text_is_no_word_of_a_term() -> None:
    """The quoted value after a key is data, as its key is (the value's own apostrophe does not close it); a quoted
    term after a colon in prose ('the term "Spark": a framework') and a value that is a number stay as they were."""
    stopped = {t.text: t.stop for t in tokens('"type": "Chocolate with Sprinkles" 1,\n"type": "Devil\'s Food" 1')}
    assert all(stopped[w] for w in ("Chocolate", "Sprinkles", "Devil", "Food")), stopped
    prose = {t.text: t.stop for t in tokens('the term "Spark" means a framework; "name": 3 then Apache Kafka')}
    assert not prose["Spark"] and not prose["Apache"] and not prose["Kafka"], prose


def test_a_donut_menus_json_gives_no_concepts() -> None:
    """spark-first's "Flatten Nested JSON Data": the user pastes the donut example's JSON as text (an OCR'd screen)
    and asks how to read it; its values ("Chocolate with Sprinkles", "Powdered Sugar", "Devil's Food") are no
    concepts, what the user asks about is."""
    pasted = (
        "how to read this nested json in spark and explode the topping array\n"
        '{"id": "0001", "type": "donut", "name": "Cake",\n'
        '"topping": [\n"type": "None",\n"type": "Glazed",\n"type": "Powdered Sugar" 1,\n'
        '"type": "Chocolate with Sprinkles" 1,\n"type": "Devil\'s Food" 1\n]}'
    )
    found = titles(
        ("user", pasted),
        (
            "assistant",
            "To read nested JSON in Spark, load it with spark.read.json and use the explode function on the topping"
            " array. Spark infers the nested schema; explode gives one row per topping of each donut.",
        ),
        ("user", "the topping array has a type in it, how to read nested json with explode in spark?"),
    )
    assert not {"Chocolate with Sprinkles", "Powdered Sugar", "Devil's Food"} & set(found), found
    assert "Topping array" in found, found


def test_a_title_case_description_is_no_concept() -> None:
    """The demo's night out: the user's "a night out with friends", the reply's 'a name like "Night Out with
    Friends"': the quoted capitals make a title, the segment writes it in lower case: a description."""
    found = titles(
        ("user", "I'm planning a night out with friends this weekend and I need some music playlist ideas."),
        (
            "assistant",
            "I'd be happy to help you with some music playlist ideas for your night out with friends. Open Spotify,"
            ' then name your playlist: give it a name, like "Party Vibes" or "Night Out with Friends". Add songs'
            ' such as "Dancing With a Stranger" by Sam Smith.',
        ),
        ("user", "By the way, I just got back from a fun night out with friends at Mike's birthday party."),
        ("assistant", "Sounds fun! Spotify makes it easy to share the playlist with your friends."),
    )
    assert "Night Out with Friends" not in found and "Music playlist ideas" in found, found


def test_a_headings_description_and_its_pieces_are_no_concepts() -> None:
    """The demo's website analytics definition: a quoted heading in title case, its sentences in lower case past the
    first word; neither the whole nor its pieces ("Exploring Data", "Aggregating") is a concept."""
    found = titles(
        ("user", 'Please regenerate the definition of "Exploring Data by Aggregating" for website analytics.'),
        (
            "assistant",
            'Sure, here\'s a regenerated definition of "Exploring Data by Aggregating" in the context of website'
            " analytics:\n\nExploring data by aggregating involves grouping data into categories and summarizing it."
            "\n\nExploring data by aggregating could involve grouping website analytics sales by category.",
        ),
        ("user", "How does website analytics use it in the real world?"),
        ("assistant", "Exploring data by aggregating is a crucial step in website analytics for analysts."),
    )
    assert not {"Exploring Data by Aggregating", "Exploring Data"} & set(found), found
    assert "Website analytics" in found, found


def test_a_works_title_with_small_words_stays() -> None:
    """A title written with its capitals in every mention is a name ("Once Upon a Time in Hollywood"), and so is
    one the user types once in lower case beside the replies' capitals."""
    film = titles(
        ("user", 'What do you think of "Once Upon a Time in Hollywood"? I watched once upon a time in hollywood.'),
        (
            "assistant",
            '"Once Upon a Time in Hollywood" is a 2019 film by Quentin Tarantino. Once Upon a Time in Hollywood'
            " follows an actor and his stunt double in 1969 Los Angeles.",
        ),
    )
    assert "Once Upon a Time in Hollywood" in film, film


def test_a_store_its_code_filters_on_is_no_concept() -> None:
    """spark-first's sales data: the user writes "Store 10" only with its capital, the reply's R code filters
    `Store == 10`: one store of the data's Store column, no name; a product's number stays (no code compares it)."""
    found = titles(
        ("user", "What do I need to do in order to find the top 3 selling departments for Store 10 only?"),
        (
            "assistant",
            "To find the top 3 selling departments for Store 10 only, filter the data first:\n\n```r\n"
            "Supermarketdata_store10 <- filter(Supermarketdata, Store == 10)\n```\n\nThen group by Dept.",
        ),
    )
    assert "Store 10" not in found, found
    upgrade = titles(
        ("user", "is it worth upgrading my laptop to Windows 11 before the summer? version = 11 in my notes"),
        ("assistant", "Windows 11 needs TPM 2.0; if your laptop has it, Windows 11 runs well and gets updates longer."),
    )
    assert "Windows 11" in upgrade, upgrade


def test_schema_alone_is_no_concept_but_a_schema_term_is() -> None:
    """spark-first's Avro conversation: "Schema" alone is what every table has, "Schema evolution" says which."""
    found = titles(
        ("user", "how does schema evolution work in Avro? what is the schema in an avsc file?"),
        (
            "assistant",
            "Avro stores the schema with the data. Schema evolution lets a reader use a newer schema than the writer:"
            " Avro resolves the two schemas field by field. The schema is defined in an .avsc file as JSON.",
        ),
        ("user", "so schema evolution in Avro needs a default for new fields?"),
    )
    assert "Schema" not in found and "Schema evolution" in found and "Avro" in found, found
