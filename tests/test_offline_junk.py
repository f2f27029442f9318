"""Junk the offline extractor wrote on the demo and the real exports (issue 20, session 35), each a rule: another
language's sentences inside an English reply give no concepts (extract/offline_messages.py `_blank_foreign`), a
person's short name folds into the full name said first (extract/stand_ins.py `fold_short_names`), an acronym meets an
expansion with a compound word ("RDBMS"), a form typed in lower case takes the capitals the segment writes ("AWS
services": extract/offline_candidates.py `_Candidate.title`), and a quantity, a hyphenated modifier or an
infinitive's verb opens no term ("1/2 oz agave syrup", "Python-like pseudocode", "to support muscle growth")."""

from __future__ import annotations

from concept_support import segment_input

from extract import lexicon
from extract.offline import OfflineExtractor
from extract.offline_candidates import _candidates
from extract.offline_messages import _read
from extract.phrases import phrases
from extract.stand_ins import fold_short_names
from extract.types import SegmentMessage


def titles(*texts: tuple[str, str], max_concepts: int = 8) -> list[str]:
    segment = segment_input("seg-junk", list(texts))
    return [h.title for h in OfflineExtractor(max_concepts).extract(segment).hypotheses]


def surfaces(text: str) -> list[str]:
    return [p.surface for p in phrases(text, "en")]


# The demo's reply (conversation 19ebbfcd): Vietnamese examples inside an English answer.
VIETNAMESE_REPLY = (
    "Sure, here are a few more examples of replies in Vietnamese for a 5-star review with no comment for American Eye"
    ' Center:\n\n1. "Rất vui khi được biết rằng bạn hài lòng với dịch vụ của chúng tôi tại American Eye Center. Chúng'
    ' tôi sẽ tiếp tục cố gắng để đảm bảo bạn được hạnh phúc với mỗi lần tới chúng tôi. Cảm ơn bạn."\n\nTranslation:'
    ' "We are very happy to know that you are satisfied with our service at American Eye Center. We will continue to'
    ' strive to ensure you are happy with each visit to us. Thank you."\n\n2. "Cảm ơn bạn đã chọn American Eye Center'
    " để được chăm sóc mắt của bạn. Chúng tôi rất vui khi bạn hài lòng với dịch vụ của chúng tôi và mong bạn sẽ tiếp"
    ' tục gửi cho chúng tôi những đánh giá tích cực. Cảm ơn bạn!"\n\nTranslation: "Thank you for choosing American'
    ' Eye Center for your eye care."'
)


def test_sentences_in_another_language_inside_an_english_reply_give_no_concepts() -> None:
    """ "Chúng" (a capital opening a Vietnamese sentence, unknown to English) and "Cảm ơn bạn" (a run of words no
    English list holds) were concepts of the demo's eye-clinic conversation; the English around them still gives
    American Eye Center."""
    found = titles(("user", "more please"), ("assistant", VIETNAMESE_REPLY))
    assert "American Eye Center" in found
    assert not any(any(c in t for c in "ạảơúừ") for t in found), found
    view = _read(SegmentMessage("m1", "assistant", VIETNAMESE_REPLY, None)).view
    assert "Chúng" not in view and "Cảm ơn" not in view and "Translation" in view and "American Eye Center" in view


def test_names_and_lists_in_another_language_stay() -> None:
    """A name or a list of dishes in another language is what an English text names, no sentence of that language:
    "La Sagrada Familia de Barcelona", "(9 Carrefour de l'Odeon, 75006)", "Tacos al pastor, carne asada" stay; a
    sentence with its grammar ("Je voudrais un café au lait") goes."""
    assert lexicon.foreign_language("La Sagrada Familia de Barcelona") is None
    assert lexicon.foreign_language("(9 Carrefour de l'Odeon, 75006)") is None
    assert lexicon.foreign_language("Tacos al pastor, carne asada, chiles rellenos") is None
    assert lexicon.foreign_language("AWS Glue, Redshift, EMR, Athena and S3") is None
    assert lexicon.foreign_language("Je voudrais un café au lait, s'il vous plaît.") == "fr"
    text = "A classic French bistro serving escargots and steak tartare. (9 Carrefour de l'Odeon, 75006)\n"
    assert "Carrefour de l'Odeon" in _read(SegmentMessage("m1", "assistant", text, None)).view


# The demo's conversation 7635f96b: a director introduced by his full name, then called by his surname.
LLOYD_USER = (
    "How did Frank Lloyd's identity as an immigrant to the United States influence his films, particularly in"
    " relation to issues around class, race, and nationality?"
)
LLOYD_REPLY = (
    "As an immigrant to the United States, Frank Lloyd was acutely aware of issues related to class, race, and"
    ' nationality. For example, in films like "Mutiny on the Bounty" and "The Divine Lady," Lloyd explored issues of'
    " social hierarchy and class conflict. In his films, Lloyd often portrayed immigrants as sympathetic figures.\n\n"
    "Furthermore, Lloyd's upbringing in Scotland may have influenced his portrayal of nationality in his films."
)


def test_a_surname_said_after_the_full_name_is_that_person() -> None:
    """ "Lloyd" beside "Frank Lloyd" were two concepts (the surname first, with more mentions); a biography calls its
    subject by the surname once introduced: one concept, the full name, with the surname's mentions."""
    segment = segment_input("seg-lloyd", [("user", LLOYD_USER), ("assistant", LLOYD_REPLY)])
    hypotheses = OfflineExtractor(8).extract(segment).hypotheses
    found = [h.title for h in hypotheses]
    assert "Frank Lloyd" in found and "Lloyd" not in found
    lloyd = next(h for h in hypotheses if h.title == "Frank Lloyd")
    assert any("Lloyd explored" in e.text for e in lloyd.evidence_spans)


def test_a_given_name_said_after_the_full_name_is_that_character() -> None:
    """The demo's story (818b5b4b): "Bai Long Ma" then "Bai nodded"; and "Whoever Bai is talking to" is no name
    ("Whoever" opens a clause)."""
    story = (
        "Mei and MK are annoyed to discover that Bai Long Ma's group of rebels aren't as equipped to save Ao Lie."
        ' Bai explains that most of them are ex-university students. Whoever Bai is talking to is annoyed. "I know,"'
        ' Bai says, and he sighs. Bai looks at her. "We have to be careful," he said.'
    )
    reply = 'Bai Long Ma nodded. "I understand how you feel," he said. Bai thought for a moment before responding.'
    found = titles(("user", story), ("assistant", reply))
    assert "Bai Long Ma" in found and "Bai" not in found and "Whoever Bai" not in found


def test_a_product_said_alone_is_no_short_name() -> None:
    """ "Apache Spark" then "Spark ... it": a thing the segment calls "it", no person, keeps its short name as a
    candidate of its own (the choice of step 4 then decides, as before); "Frank Lloyd" then "Lloyd ... his" folds."""
    product = [
        ("user", "How does Apache Spark compare to Hadoop for batch jobs?"),
        ("assistant", "Spark keeps data in memory, so it is faster. Spark also has a SQL engine. It runs on YARN."),
    ]
    for texts, short, kept in (
        (product, "spark", True),
        ([("user", LLOYD_USER), ("assistant", LLOYD_REPLY)], "lloyd", False),
    ):
        messages = [_read(SegmentMessage(f"m{i}", role, text, None)) for i, (role, text) in enumerate(texts)]
        candidates = _candidates(messages)
        assert (short,) in candidates
        fold_short_names(candidates, {id(m): i for i, m in enumerate(messages)})
        assert ((short,) in candidates) is kept


def test_an_acronym_meets_an_expansion_with_a_compound_word() -> None:
    """spark-first's "when should we use sql db insead of rdbms": "Relational Database Management System (RDBMS)" is
    RDBMS ("database" is "data" and "base"), one concept, not two."""
    reply = (
        "SQL (Structured Query Language) is a language used to manage data in a Relational Database Management System"
        " (RDBMS). In other words, RDBMS is a software system that allows you to create and manage a relational"
        " database. RDBMS are designed to store structured data in tables."
    )
    found = titles(("user", "when should we use sql db insead of rdbms"), ("assistant", reply))
    assert "RDBMS" in found and "Relational Database Management System" not in found


def test_a_name_and_its_kind_typed_in_lower_case_takes_the_replies_capitals() -> None:
    """spark-first's "aws services cloudwatch": the user's lower case, capitalised, titled a concept "Aws services";
    the replies write "AWS services" past the opening their phrases are taken from: titled so. (Folding it into AWS
    cost a held-out conversation its tail: RESULTS.md, session 35.)"""
    reply = (
        "Amazon CloudWatch is a monitoring service provided by Amazon Web Services (AWS) for cloud resources and"
        " applications. It lets you collect and track metrics from various sources and set alarms on them."
        " Metrics Collection: CloudWatch allows you to collect and track metrics from various sources such as AWS"
        " services, custom applications, and on-premises servers. Log Monitoring: CloudWatch Logs allows you to"
        " collect, monitor, and analyze log files from various sources, including AWS services and applications."
    )
    found = titles(("user", "aws services cloudwatch"), ("assistant", reply))
    assert "Aws services" not in found
    assert "AWS services" in found


def test_a_lower_case_form_takes_the_capitals_the_segment_writes() -> None:
    """ "sql query" typed, "SQL query" in the replies: titled "SQL query", never "Sql query"."""
    found = titles(
        ("user", "write a sql query for the 3rd highest salary per department"),
        ("assistant", "Here is a SQL query that uses DENSE_RANK. The SQL query ranks salaries in each department."),
    )
    assert "Sql query" not in found
    assert "SQL query" in found


def test_a_quantity_opens_no_term() -> None:
    """The demo's cocktail ("Combine 2 oz tequila, 1 oz mango puree, 1/2 oz agave syrup") and cleaning routine ("my
    daily 30-minute cleaning routine"): the unit after a number and a number joined to its unit are the quantity's,
    so "Oz agave syrup" and "Daily 30-minute" are no terms; "agave syrup" and "cleaning routine" are."""
    recipe = "Combine 2 oz tequila, 1 oz mango puree, 1 oz lime juice, 1/2 oz agave syrup, and 2 cups crushed ice."
    found = surfaces(recipe)
    assert "agave syrup" in found and "lime juice" in found
    assert not any(s.startswith(("oz", "cups")) for s in found), found
    # the prose view blanks "1/2" and "1/4" as it does paths: the unit is the quantity's all the same
    message = _read(SegmentMessage("m1", "assistant", recipe + "\n* 1/4 teaspoon cayenne pepper (optional)", None))
    found = [p.surface for p in phrases(message.view, "en", message.words)]
    assert "agave syrup" in found and "cayenne pepper" in found, found
    assert not any(s.startswith(("oz", "teaspoon")) for s in found), found
    assert "Wizard of Oz" in surfaces("We watched The Wizard of Oz last night.")
    routine = surfaces("Is it a good idea to set daily tasks, like my daily 30-minute cleaning routine?")
    assert not any("30-minute" in s for s in routine), routine
    assert "Gemini 1.5 Flash" in surfaces("We compared Gemini 1.5 Flash with other models.")  # a version stays


def test_a_hyphenated_modifier_opens_no_term() -> None:
    """rainchinchao's prompt "Generate Python-like pseudocode (not executable)" (in seven conversations): "Python-like"
    says which pseudocode; the term is the pseudocode."""
    found = surfaces("Generate Python-like pseudocode (not executable) that strictly follows this structure.")
    assert "Python-like pseudocode" not in found and "pseudocode" in found
    assert "Python-like" not in titles(
        ("user", "Generate Python-like pseudocode (not executable) for the unrolled loop."),
        ("assistant", "Here's Python-like pseudocode that strictly follows your structure."),
    )


def test_the_verb_after_an_adjective_and_to_is_no_word_of_a_term() -> None:
    """The demo's "essential to support muscle growth and repair": "support" is the infinitive's verb, so
    "Support muscle growth" is no term; "muscle growth" is."""
    found = surfaces("Incorporating high-protein foods into your meal plan is essential to support muscle growth.")
    assert "support muscle growth" not in found and "muscle growth" in found
    assert "support tickets" in surfaces("We moved the team to support tickets last year.")
