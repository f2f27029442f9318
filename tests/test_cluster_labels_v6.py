"""Topic labels v6 (cluster/keyword_rules.py, cluster/phrases.py; KEYWORDS_VERSION 6): an adjective in -ing is no
keyword alone, a one-word label yields to a phrase with a name said as widely."""

from __future__ import annotations

from cluster.describe import KEYWORDS_VERSION
from cluster.keyword_rules import lead_first
from cluster.phrases import ctfidf_phrases

OTHER = [
    "Spark partitions and executors tune the shuffle of a Spark job.",
    "A Spark job reads Parquet files from HDFS with executors.",
    "Executors of the Spark job spill the shuffle to disk.",
    "The Spark job writes Parquet files back to HDFS.",
]


def _ranked(words: list[str]) -> list[tuple[str, str, float]]:
    return [(k, k, 0.05 - i / 1000) for i, k in enumerate(words)]


def test_the_version_says_the_keywords_changed() -> None:
    assert KEYWORDS_VERSION >= 6  # an incremental run recomputes a v5 base's keywords and labels once


def test_an_adjective_in_ing_is_no_keyword_alone_but_a_noun_in_ing_is() -> None:
    """The demo's travel topic listed "stunning" (and "charming") among its keywords although v5 kept them out of
    its label and partner: they say how a place is, not what the topic is about. A word in -ing that is a noun
    too ("understanding", "feeling") stays a keyword, and so does a phrase holding the adjective."""
    trip = [
        "Our trip to Lisbon: the city is stunning, the restaurants charming and the understanding locals kind.",
        "The stunning coast near Lisbon and a charming old city made the trip; locals showed real understanding.",
        "A stunning museum in the city, charming streets, and a trip to the coast; understanding the tram map helps.",
        "Stunning views over the city; the trip's charming cafes and the locals' understanding of tourists.",
    ]
    ranked = ctfidf_phrases({0: trip, 1: OTHER}, 12, {0: ["a", "b", "c", "d"], 1: ["x", "y", "x", "y"]})
    words = [p.lower() for p in ranked[0].phrases]
    assert "stunning" not in words and "charming" not in words
    assert "understanding" in words and "trip" in words


def test_a_one_word_label_yields_to_a_phrase_said_as_widely() -> None:
    """The real exports' SQL topic of the 3rd highest salary was labelled "clause" (7 of its 9 conversations say it,
    and as many "SQL query"): a part of what is asked, where a phrase every such conversation says names more. A
    phrase said less widely does not replace it, nor does a one-word name ("Mendeley" of a thesis topic: one
    member's tool), nor a lower-case phrase ("olive oil" is no more a pasta topic's subject than "pasta")."""
    sql = _ranked(["clause", "subquery", "highest", "SQL query", "employee"])
    spread = {"clause": 7, "subquery": 6, "highest": 5, "SQL query": 7, "employee": 5}
    assert lead_first(sql, spread)[0][1] == "SQL query"
    assert lead_first(sql, {**spread, "SQL query": 6})[0][1] == "clause"
    pasta = _ranked(["pasta", "garlic", "pepper", "olive oil"])
    assert lead_first(pasta, {"pasta": 6, "garlic": 5, "pepper": 6, "olive oil": 6})[0][1] == "pasta"
    thesis = _ranked(["thesis", "research", "citation", "Mendeley", "literature review"])
    spread = {"thesis": 2, "research": 2, "citation": 2, "Mendeley": 2, "literature review": 1}
    assert lead_first(thesis, spread)[0][1] == "thesis"
    later = _ranked(["clause", "subquery", "highest", "employee", "department", "SQL query"])  # past the best five
    assert (
        lead_first(later, {"clause": 7, "subquery": 6, "highest": 5, "employee": 5, "department": 4, "SQL query": 7})[
            0
        ][1]
        == "clause"
    )
