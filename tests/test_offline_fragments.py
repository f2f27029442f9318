"""Pieces of words are no concepts: a word the read limit cuts in two ("Projec" of "Microsoft Project"), two
sentences glued without their space ("executedWhere"), a JSON key typed or OCR'd into prose ("ITid'："), a name's
Roman numeral alone ("II") (extract/offline_messages.py `_word_end`, extract/tokens.py `_glued` and `_KEY`,
extract/offline_scoring.py `_ROMAN_NUMERAL`)."""

from __future__ import annotations

from concept_support import segment_input

from extract.offline import OfflineExtractor
from extract.offline_messages import READ_REPLY_CHARS, _read
from extract.phrases import phrases
from extract.tokens import tokens
from extract.types import SegmentMessage


def surfaces(text: str) -> list[str]:
    return [p.surface for p in phrases(text, "en")]


def test_a_reply_is_read_to_the_end_of_the_word_its_limit_cuts() -> None:
    """A reply's opening is read to READ_REPLY_CHARS, and on to the end of the word that limit falls in: the demo's
    "4. **Microsoft Project**: A powerful tool" cut at "Projec" gave the concept "Projec"; now "Microsoft Project"."""
    filler = "Here are the project management tools people use most, with what each is good at. " * 12
    cut = READ_REPLY_CHARS - len("4. **Microsoft Projec")
    text = filler[:cut] + "4. **Microsoft Project**: A powerful tool for planning.\n" + filler
    assert text[READ_REPLY_CHARS - 1 : READ_REPLY_CHARS + 1] == "ct"  # the limit falls inside "Project"
    view = _read(SegmentMessage("m1", "assistant", text, None)).view
    assert view.rstrip().endswith("Microsoft Project")
    found = [h.title for h in OfflineExtractor(8).extract(segment_input("seg-cut", [("assistant", text)])).hypotheses]
    assert "Projec" not in found and "Microsoft Projec" not in found


def test_a_word_longer_than_the_reach_is_cut_where_the_limit_falls() -> None:
    """A hash or base64 run past the limit is not read to its end: the read stays bounded."""
    text = "x " * (READ_REPLY_CHARS // 2 - 5) + "a" * 5000
    assert len(_read(SegmentMessage("m1", "assistant", text, None)).view) == READ_REPLY_CHARS


def test_two_sentences_glued_without_a_space_are_two_sentences() -> None:
    """ "Where the code is executedWhere is the data loaded, if anyWhat is the ..." (a form pasted from a course):
    a lower-case word glued to a capitalised sentence opener is two words, the second opening a sentence; no
    "executedWhere" or "anyWhat". Identifiers in camel case stay whole ("groupBy", "getOrCreate", "iPhone")."""
    text = (
        "For each line of spark/scala code below, explain in your own words, Where the code is executedWhere is the"
        " data loaded, if anyWhat is the Please add your answer as comments in the code."
    )
    words = [t.text for t in tokens(text)]
    assert "executedWhere" not in words and "anyWhat" not in words
    assert words[words.index("executed") : words.index("executed") + 2] == ["executed", "Where"]
    assert next(t for t in tokens(text) if t.text == "What").sentence_start
    assert not any("Where" in s or "What" in s for s in surfaces(text))
    for identifier in ("groupBy", "getOrCreate", "iPhone", "mapPartitions"):
        assert identifier in [t.text for t in tokens(f"Then call {identifier} on it.")]


def test_a_json_key_in_prose_is_no_term() -> None:
    """A nested JSON record typed or OCR'd into a question ('"batters":', 'ITid\\'： “10019'): a word in quotes
    before a colon and a value or a line's end is a key, no term; a quoted word explained after a colon is prose."""
    text = 'nested json read in spark and give flatten data structure\n"batters":\n"batter"\nITid\'： “10019\n'
    found = surfaces(text)
    assert "ITid" not in found and "batters" not in found
    assert "Spark" in surfaces('In the term "Spark": a framework for big data.')


def test_a_roman_numeral_alone_is_no_concept() -> None:
    """ "The Last of Us Part II" (the demo): "Part" is a stop word, so the name rules kept "II" alone, a concept with
    eight mentions. A numeral is a name's number ("World War II" stays whole), never a name by itself."""
    found = [
        h.title
        for h in OfflineExtractor(8)
        .extract(
            segment_input(
                "seg-roman",
                [
                    (
                        "user",
                        "How long did it take the developers to create The Last of Us Part II? I recently completed"
                        " The Last of Us Part II on hard, and I am reading about World War II.",
                    ),
                    ("assistant", "The Last of Us Part II took about six years; Part II was praised. World War II ..."),
                ],
            )
        )
        .hypotheses
    ]
    assert "II" not in found and "World War II" in found
