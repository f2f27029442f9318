"""What the offline extractor takes for no term (issue 20): a verb before its object (after a modal, a subject
pronoun, an adverb, or "and" after a verb-led clause), a command's options and their values, a variable assigned
in prose, a number word, an adverb of place, and a typist's slip of a short word beside the word it misspells."""

from __future__ import annotations

from concept_support import segment_input

from extract.lexicon import misspelling
from extract.offline import OfflineExtractor
from extract.phrases import phrases


def surfaces(text: str) -> list[str]:
    return [p.surface.casefold() for p in phrases(text, "en")]


def test_a_verb_after_a_modal_or_a_subject_pronoun_opens_no_term() -> None:
    """ "when you display prices ... they should show decimal points": "display" and "show" are verbs there, so
    neither "display prices" nor "show decimal" is a term; "you" after a verb is its object and the noun after it
    stays ("give you access rights")."""
    found = surfaces("when you display prices of the presets they should show decimal points like this")
    assert "display prices" not in found and "show decimal" not in found
    assert "prices" in found
    assert "access rights" in surfaces("I will give you access rights to the Hive table")
    assert "data lake" in surfaces("We store logs in the data lake and query them with Athena.")
    assert "store logs" not in surfaces("We store logs in the data lake and query them with Athena.")


def test_a_verb_after_an_adverb_or_a_coordinated_verb_opens_no_term() -> None:
    """ "You can automatically collect web content": after an adverb in -ly the verb is cut, its object stays;
    "how to set goals and track progress": the verb after "and" in a clause opened by a verb is one too."""
    found = surfaces("You can automatically collect web content using Python.")
    assert "collect web content" not in found and "web content" in found
    assert "track progress" not in surfaces("Any advice on how to set goals and track progress as a better ally?")
    assert "career progress" in surfaces("I want to talk about my career progress and salary goals.")


def test_a_four_letter_word_with_two_letters_swapped_is_a_misspelling() -> None:
    """ "jion" beside "join" is a slip; other edits of four letters are not asked ("data" beside "date")."""
    assert misspelling("jion", {"join"}) == "join"
    assert misspelling("data", {"date"}) is None
    assert misspelling("hdfs", {"hdfs"}) is None
    segment = segment_input(
        "seg-typo",
        [
            ("user", "how to do jion of two tables in spark? jion on id column"),
            (
                "assistant",
                "A join combines two DataFrames on a key. In Spark, call join on the first one with the second"
                " and the key column; a broadcast join sends the small table to every executor.",
            ),
        ],
    )
    found = [h.title.casefold() for h in OfflineExtractor(8).extract(segment).hypotheses]
    assert "jion" not in found
    assert "spark" in found


def test_a_command_option_and_its_value_are_no_term() -> None:
    """ "sqoop import --username root --password cloudera": the options and their values are a command's
    arguments; "set city='Hyd'" assigns a variable; a spaced "=" in a sentence is prose."""
    found = surfaces("my sqoop import --username root --password cloudera --m 1 fails with a JDBC driver error")
    assert not {"password cloudera", "username root", "root", "cloudera"} & set(found)
    assert "jdbc driver error" in found
    assert "set city" not in surfaces("update the table and set city='Hyd' where id=1 in MySQL")
    assert "learning rate" in surfaces("the learning rate = 0.01 works for the churn model")


def test_number_words_and_place_adverbs_join_no_term() -> None:
    """ "a million fields": a number, like "42"; "a section underneath the calculator", "students outside the
    university": an adverb of place says where, not what. A number word in a name keeps its capital."""
    assert "million field" not in [" ".join(p.key) for p in phrases("a table with a million fields", "en")]
    assert "section underneath" not in surfaces("Also add a section underneath the calculator")
    assert "students outside" not in surfaces("food options for students outside the university")
    assert "chapter six" in surfaces("read Chapter Six of the book")
    assert "inside joke" in surfaces("an inside joke")


def test_a_four_letter_slip_of_a_function_word_is_that_word() -> None:
    """ "wirh" beside "with": one edit that lands on a function word is a typo, whatever the edit."""
    assert misspelling("wirh", {"with", "the"}) == "with"
    assert misspelling("hdfs", {"has", "his", "this"}) is None
