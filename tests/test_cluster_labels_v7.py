"""Topic keywords and labels v7 (cluster/word_family.py, cluster/phrases.py, cluster/keyword_rules.py;
KEYWORDS_VERSION 7): one keyword per word family, no adjective alone, no numbered names of code, no quoted values or
field names of pasted JSON, one member's title never leads, a one-word label that modifies yields."""

from __future__ import annotations

from cluster.describe import KEYWORDS_VERSION
from cluster.keyword_rules import lead_first, unglued
from cluster.labels import labels_for
from cluster.phrases import PhraseCounts, ctfidf_phrases, numbered_series
from cluster.word_family import family, one_per_family

OTHER = [
    "Spark partitions and executors tune the shuffle of a Spark job.",
    "A Spark job reads Parquet files from HDFS with executors.",
    "Executors of the Spark job spill the shuffle to disk.",
    "The Spark job writes Parquet files back to HDFS.",
]


def test_the_version_says_the_keywords_changed() -> None:
    assert KEYWORDS_VERSION == 7  # an incremental run recomputes a v6 base's keywords and labels once


def test_a_word_family_holds_inflections_gerunds_and_an_adjectives_noun() -> None:
    """lemminflect gives a word's inflections and a gerund's verb; WordNet's pertainym and derivation pointers give
    an adjective's noun ("cultural" -> culture). A form that does not begin as the word does is no form of it
    ("ground" of "grind"), and a name or a phrase is its own family."""
    assert "tradition" in family("traditions") and "partition" in family("partitioning")
    assert "culture" in family("cultural") and "tradition" in family("traditional")
    assert "grind" not in family("ground")
    assert family("Japanese") == {"Japanese"} and family("cultural heritage") == {"cultural heritage"}


def test_a_topic_lists_one_form_of_each_word_family() -> None:
    """The demo's culture topic listed "cultural, tradition, traditional, culture" and a Spark topic "partitions,
    partitioning": each family is shown once, at its best noun's place, as the form that can be a noun said in most
    conversations; other keywords keep their order, names and phrases are untouched."""
    words = ["cultural", "tradition", "regions", "traditional", "culture"]
    ranked = [(k, k, 1.0 - i / 10) for i, k in enumerate(words)]
    spread = {"cultural": 9, "tradition": 6, "regions": 5, "traditional": 7, "culture": 4}
    kept = one_per_family(ranked, spread, {})
    assert [shown for _, shown, _ in kept] == ["tradition", "regions", "culture"]  # an adjective lends no rank
    assert kept[2][2] == ranked[4][2]
    spark = [(k, k, 1.0) for k in ["partitions", "Spark job", "partitioning", "Spark", "nodes"]]
    shown = [s for _, s, _ in one_per_family(spark, {"partitions": 5, "partitioning": 3}, {})]
    assert shown == ["partitions", "Spark job", "Spark", "nodes"]


def test_an_adjective_is_no_keyword_alone_but_inside_a_phrase_it_is() -> None:
    """ "rich", "cultural", "traditional" say how something is, never what a topic is about; "cultural heritage"
    does, and a word that is a noun too ("classic") stays."""
    culture = [
        "Cultural heritage of India: a rich tradition, traditional festivals and a classic cuisine.",
        "Traditional dances keep the cultural heritage alive; a rich tradition of the classic arts.",
        "The cultural heritage of Japan: traditional tea, a rich tradition and classic temples.",
        "Rich traditional music and a classic tradition of cultural heritage in Peru.",
    ]
    ranked = ctfidf_phrases({0: culture, 1: OTHER}, 12, {0: ["a", "b", "c", "d"], 1: ["x", "y", "x", "y"]})
    words = [p.lower() for p in ranked[0].phrases]
    assert "rich" not in words and "cultural" not in words and "traditional" not in words
    assert "cultural heritage" in words and "classic" in words


def test_numbered_names_of_code_are_no_keywords() -> None:
    """rainchinchao's topic of generated hardware code was labelled "XW0": a script's variables XW00, XW10, ...
    are a series alike but for their numbers. A name with a number said alone ("S3", "EC2") has no such series."""
    assert numbered_series(["xw0", "xw00", "xw10", "s3", "ec2", "s3 bucket"]) == {"xw0", "xw00", "xw10"}
    code = [
        "Name the products XW0, XW1 and XW2 as before and sum XW0 with XW1 in the generated variable names.",
        "Keep XW0 and XW1 in the generated variable names; XW2 is the third product.",
        "The generated variable names XW0, XW1, XW2 follow the naming convention.",
        "Check XW0 against XW2 in the generated variable names.",
    ]
    ranked = ctfidf_phrases({0: code, 1: OTHER}, 10, {0: ["a", "b", "c", "d"], 1: ["x", "y", "x", "y"]})
    assert not any("XW" in p for p in ranked[0].phrases)
    assert "generated variable names" in ranked[0].phrases


def test_a_quoted_value_of_pasted_json_is_no_keyword() -> None:
    """A donut JSON OCR'd into a Spark question: lines of one quoted value ('"batter"', '"Chocolate"') are members
    of the same pasted data as its key-value lines and labelled the topic "batter". A quoted line in a text with no
    lines of data is a quotation and stays."""
    pasted = 'nested json read in spark\n"id":"0001"\n"type": "donut"\n"batters":\n"batter"\n"Chocolate"\n"topping"\n'
    cleaned = unglued(pasted)
    assert "batter" not in cleaned.replace("batters", "") and "Chocolate" not in cleaned and "topping" not in cleaned
    assert "nested json read in spark" in cleaned
    quoted = 'She said:\n"The Great Gatsby"\nis her favourite book.'
    assert "The Great Gatsby" in unglued(quoted)


def test_the_field_names_of_pasted_data_are_no_words_of_its_text() -> None:
    """The same questions went on "explode ... on topping and batter columns" and "batter.id, topping.type": the
    data's own fields, which still made "batter" the label. A text without lines of data keeps such words."""
    asked = '"id": "0001",\n"type": "donut",\n"batter"\n"topping": [\nexplode the topping and batter columns, batter.id'
    cleaned = unglued(asked)
    assert "batter" not in cleaned and "topping" not in cleaned
    assert "explode" in cleaned and "columns" in cleaned
    assert "batter" in unglued("Whisk the batter, then add the topping.")


def test_a_one_word_label_that_mostly_modifies_yields_as_a_broad_word_does() -> None:
    """The real exports' SQL-join topic was labelled "matching", written in "matching rows", "matching records",
    "matching keys": it names no thing. Counted in the keyword pass, it yields to a phrase said in 0.6 of its
    conversations ("left join"); a word that heads its phrases ("loop" of "for loop") does not."""
    counts = PhraseCounts()
    counts.add("It returns the matching rows and the matching records of both tables.", names=True)
    counts.add("Only matching keys are kept by an inner join; the for loop reads the loop index.", names=True)
    assert counts.modifying["matching"] == 3 and counts.modifying["loop"] == 1
    ranked = [(k, k, 1.0 - i / 10) for i, k in enumerate(["matching", "left join", "UNION", "SQL queries"])]
    spread = {"matching": 5, "left join": 3, "UNION": 3, "SQL queries": 3}
    assert lead_first(ranked, spread, {"matching"})[0][1] == "left join"
    assert lead_first(ranked, spread)[0][1] == "matching"


def test_one_members_title_never_leads_a_topic_of_several() -> None:
    """The real exports' topic of two Claude conversations, a bakery comparison (2 of its 18 segments) and an LLM
    pricing calculator (16), sharing no phrase, was labelled "Interactive Bakery Comparison": the bakery artifact's
    name, in its conversation's title. A title said by one conversation that is less than half of the topic goes
    last; the one that is most of the topic may lead."""
    bakery = [
        "I built an Interactive Bakery Comparison of croissants and baguettes.",
        "The Interactive Bakery Comparison now shows croissants by price.",
    ]
    pricing = [
        "I opened the LLM Pricing Calculator for tokens.",
        "Model one costs cents per token.",
        "The LLM Pricing Calculator counts tokens.",
        "Model two costs dollars.",
        "Tokens of model three, in cents.",
        "Cents of model four.",
    ]
    docs = {0: bakery + pricing, 1: OTHER}
    owners = {0: ["bake", "bake", *["price"] * 6], 1: ["x", "y", "x", "y"]}
    titles = {"bake": "Interactive Bakery Comparison Visualization", "price": "LLM Pricing Calculator"}
    before = ctfidf_phrases(docs, 10, owners)[0].phrases
    after = ctfidf_phrases(docs, 10, owners, titles)[0].phrases
    assert before[0] == "Interactive Bakery Comparison"
    assert after[0] != "Interactive Bakery Comparison" and after[-1] == "Interactive Bakery Comparison"
    assert labels_for({0: after})[0] == "LLM Pricing Calculator"
