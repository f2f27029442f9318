"""What the offline extractor takes for no term (issue 20): a verb before its object (after a modal, a subject
pronoun or an adverb), a command's options and their values, a variable assigned in prose, a number word, an
adverb of place, and a typist's slip of a short word beside the word it misspells; and what each of those rules
must leave alone (compounds after "and", flags without values, list dashes, names, participles)."""

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


def test_a_verb_after_an_adverb_opens_no_term_and_a_compound_after_and_stays_whole() -> None:
    """ "You can automatically collect web content": after an adverb in -ly the verb is cut, its object stays, but
    a participle there is a modifier ("a fully connected layer"). After "and" a word that can be a verb starts a
    compound as often as a clause ("data visualization and machine learning", "yoga and dance classes"): kept."""
    found = surfaces("You can automatically collect web content using Python.")
    assert "collect web content" not in found and "web content" in found
    assert "connected layer" in surfaces("Add a fully connected layer on top.")
    assert "screen candidates" not in surfaces("You can automatically screen candidates.")  # a base, not a participle
    assert "machine learning" in surfaces("I love data visualization and machine learning.")
    assert "dance classes" in surfaces("She teaches yoga and dance classes.")
    assert "career progress" in surfaces("I want to talk about my career progress and salary goals.")
    assert "trials" in surfaces("We ran Phase I trials last year.")  # a numeral after a name, not the pronoun


def test_a_four_letter_word_with_two_letters_swapped_is_a_misspelling() -> None:
    """ "jion" beside "join" is a slip; other edits of four letters are not asked ("olap" is one substitution from
    "slap", "wasm" one deletion from "was"); a word a reply writes too is meant ("Weka" beside "a weak point")."""
    assert misspelling("jion", {"join"}) == "join"
    assert misspelling("olap", {"slap"}) is None
    assert misspelling("wasm", {"was"}) is None and misspelling("itsm", {"its"}) is None
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
    weka = segment_input(
        "seg-weka",
        [
            ("user", "I am training a classifier in Weka. Weka keeps running out of memory on my dataset."),
            (
                "assistant",
                "Weka loads the whole dataset into memory, which is its weak point with large files. Raise the heap"
                " with -Xmx, or use Weka's incremental classifiers.",
            ),
        ],
    )
    found = [h.title.casefold() for h in OfflineExtractor(8).extract(weka).hypotheses]
    assert "weka" in found and not any(t.startswith("weak") for t in found)


def test_a_command_option_and_its_value_are_no_term() -> None:
    """ "sqoop import --username root --password cloudera": the options and their values are a command's
    arguments; "set city='Hyd'" assigns a variable; a spaced "=" in a sentence is prose."""
    found = surfaces("my sqoop import --username root --password cloudera --m 1 fails with a JDBC driver error")
    assert not {"password cloudera", "username root", "root", "cloudera"} & set(found)
    assert "jdbc driver error" in found
    assert "set city" not in surfaces("update the table and set city='Hyd' where id=1 in MySQL")
    assert "learning rate" in surfaces("the learning rate = 0.01 works for the churn model")


def test_a_flag_a_list_dash_and_a_sign_leave_the_next_words_alone() -> None:
    """A flag takes no value ("pip install --upgrade pandas": pandas is what is installed), a dash that opens a
    line is a list's ("-AI ethics"), one before a number a sign ("UTC -5 Eastern Time")."""
    assert "pandas" in surfaces("run pip install --upgrade pandas numpy first")
    assert not any(f.startswith(("x ", "r ")) for f in surfaces("curl -X POST the endpoint, then rm -R old folder"))
    assert any("ubuntu" in f for f in surfaces("then docker run -it ubuntu bash"))
    found = surfaces("My reading list:\n-AI ethics\n-ML ops\n-UX research")
    assert {"ai ethics", "ux research"} <= set(found)
    assert any("eastern time" in f for f in surfaces("The call is at 9 UTC -5 Eastern Time tomorrow."))


def test_number_words_and_place_adverbs_join_no_term() -> None:
    """ "a million fields": a number, like "42"; "a section underneath the calculator", "students outside the
    university": an adverb of place says where, not what. A number word in a name keeps its capital."""
    assert "million field" not in [" ".join(p.key) for p in phrases("a table with a million fields", "en")]
    assert "section underneath" not in surfaces("Also add a section underneath the calculator")
    assert "students outside" not in surfaces("food options for students outside the university")
    assert "chapter six" in surfaces("read Chapter Six of the book")
    assert "inside joke" in surfaces("an inside joke")


def test_no_four_letter_word_is_respelt_into_a_function_word() -> None:
    """ "Wasm runtime benchmark" is not "Was runtime benchmark": a deletion or a substitution of a short word
    meets a function word too often (854 rare four-letter words do), so only a swap counts."""
    assert misspelling("hdfs", {"has", "his", "this"}) is None
    segment = segment_input(
        "seg-wasm",
        [
            ("user", "wasm runtime benchmark: which wasm runtime was fastest in your tests?"),
            ("assistant", "It was close: Wasmtime and Wasmer were within a few percent."),
        ],
    )
    found = [h.title.casefold() for h in OfflineExtractor(8).extract(segment).hypotheses]
    assert not any(t.startswith("was ") for t in found)


def test_a_verbs_s_form_after_a_singular_subject_is_no_part_of_a_term() -> None:
    """ "This function takes a function as an argument", "a job takes 15 mins", "the transformation takes 1 min per
    partition", "work takes about 30 minutes": a singular noun after "a" or "this", or before a quantity or an object
    pronoun, then a verb's -s form is a subject and its verb ("Function takes" was a concept). A compound with a
    plural head stays, whatever follows it ("the image formats the reader accepts", "window functions")."""
    for text in (
        "map: This function takes a function as an argument and applies it to each element",
        "if a job usually a job takes 15 mins to process suddenly if takes 30 mins in spark",
        "if the transformation takes 1 min per partition, how long does the job run",
        "My daily commute to work takes about 30 minutes, so I want to make the most of that time",
        "the cleanup task takes me an hour every week",
    ):
        assert not any(f.endswith(" takes") for f in surfaces(text)), text
    assert "image formats" in surfaces("Check the image formats the reader accepts.")
    assert "window functions" in surfaces("We use window functions over partitions.")
    assert "tax returns" in surfaces("She files tax returns every April.")


def test_a_short_word_cut_short_of_its_last_letter_is_a_misspelling() -> None:
    """ "companion object in scal", the reply on Scala: a four-letter word one letter short of a word the segment
    writes is that word typed short, no concept ("Scal" was one); its other edits are still not asked."""
    assert misspelling("scal", {"scala"}) == "scala"
    assert misspelling("wasm", {"was"}) is None and misspelling("hdfs", {"hdf"}) is None
    segment = segment_input(
        "seg-scal",
        [
            ("user", "companion object in scal"),
            (
                "assistant",
                "In Scala, a companion object is an object with the same name as a class, defined in the same file."
                " Scala uses companion objects for factory methods.",
            ),
        ],
    )
    found = [h.title.casefold() for h in OfflineExtractor(8).extract(segment).hypotheses]
    assert "scal" not in found and "scala" in found


def test_a_word_with_a_capital_then_a_verbs_s_form_and_its_object_is_a_clause() -> None:
    """ "Grandma loves the garden", "OpenSpaces offers its members desks", "The Shield works well": a word written
    with a capital that opens its clause, then a verb's -s form, then an object's determiner or an adverb, is a
    subject and its verb, no term ("Grandma loves", "Shield works" and "OpenSpaces offers" were concepts). A name's
    compound with a plural head stays ("Spark jobs in production")."""
    for text, clause in (
        ("Grandma loves the garden we planted last spring.", "grandma loves"),
        ("OpenSpaces offers its members desks by the hour.", "openspaces offers"),
        ("The Shield works well against fire damage.", "shield works"),
    ):
        assert clause not in surfaces(text), text
    assert "openspaces" in surfaces("OpenSpaces offers its members desks by the hour.")
    assert "spark jobs" in surfaces("Spark jobs in production fail at night.")
    assert "hive tables" in surfaces("Hive tables hold the raw data.")


def test_a_word_made_an_adjective_by_its_hyphen_is_no_concept_alone() -> None:
    """ "Moroccan-inspired" in "a Moroccan-inspired menu" is the menu's modifier: the menu is the concept."""
    segment = segment_input(
        "seg-menu",
        [
            ("user", "Can you suggest a Moroccan-inspired menu for my dinner party on Saturday?"),
            (
                "assistant",
                "Here is a Moroccan-inspired menu: a lamb tagine, couscous with raisins and mint tea. A"
                " Moroccan-inspired dessert could be orange slices with cinnamon.",
            ),
        ],
    )
    found = [h.title for h in OfflineExtractor(8).extract(segment).hypotheses]
    assert "Moroccan-inspired" not in found, found
    assert "Moroccan-inspired menu" in found, found
