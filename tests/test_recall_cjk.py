"""Recall of Chinese (CJK) text: a run of Han characters is read as its two-character pieces and cut from the Latin
words written against it (memory/text.py), so a word glued to Chinese ("我用pandas读取数据") and a Chinese question
meet the message that says them. Hand-made memories built by the real graph builder (tests/memory_support.py),
asked through memory.service.Memory, the object the CLI and MCP use."""

from __future__ import annotations

import numpy as np
from memory_support import memory, msg

from contracts.memory import RecallRequest
from contracts.settings import Settings
from memory.relevance import KeyTerms, key_terms, window
from memory.service import Memory

MESSAGES = [
    msg("pandas", 0, "我用pandas读取数据，然后画一个柱状图", day=0),
    msg("pandas", 1, "可以先用read_csv把文件读进来，再用plot画图。", day=0, role="assistant", minute=1),
    msg("etl", 0, "Our nightly ETL copies the orders table into the warehouse", day=1),
    msg("etl", 1, "Schedule it with cron and log every run", day=1, role="assistant", minute=1),
    msg("trip", 0, "Book a cheap hotel in Lisbon for the conference", day=2),
    msg("chengdu", 0, "我明天要去成都旅游，那边的天气怎么样？", day=3),
    msg("chengdu", 1, "Chengdu is mild in spring; pack a light jacket.", day=3, role="assistant", minute=1),
    msg("cook", 0, "I baked sourdough bread with a new starter", day=4),
]


def _memory() -> Memory:
    index, config = memory(MESSAGES)
    return Memory(Settings().model_copy(update={"recall": config}), index, None)


def _first(query: str) -> tuple[str, bool]:
    result = _memory().recall(RecallRequest(query=query, budget_tokens=5000))
    assert result.pieces, (query, result.empty_reason)
    return result.pieces[0].content_id, result.pieces[0].weak


def test_a_latin_word_written_against_chinese_is_found() -> None:
    """ "pandas" in "我用pandas读取数据" is a word of its own: the query finds the message, and it is no weak match."""
    assert _first("pandas") == ("pandas-0", False)


def test_a_chinese_phrase_finds_the_message_that_says_it() -> None:
    """ "读取数据" is a piece of a longer run of Han characters: its two-character pieces meet the message's."""
    assert _first("读取数据") == ("pandas-0", False)


def test_a_chinese_question_finds_its_chinese_message_among_english_ones() -> None:
    """A question worded otherwise ("成都的天气预报") shares 成都 and 天气 with the message: it comes first
    (marked weak: the pieces that straddle its words, 都的 and 气预, and 预报 are in no message, and they are most
    of its pieces)."""
    assert _first("成都的天气预报")[0] == "chengdu-0"
    assert _first("成都天气") == ("chengdu-0", False)


def test_a_chinese_query_never_matches_english_messages_by_its_pieces() -> None:
    """Han pieces are terms of their own: a Chinese query about nothing in the memory finds nothing."""
    result = _memory().recall(RecallRequest(query="量子计算机", budget_tokens=5000))
    assert result.pieces == [] and result.empty_reason and result.empty_reason.startswith("nothing relevant")


def test_the_key_terms_of_a_chinese_query_are_its_pieces_and_name_them() -> None:
    """The weak reason names what the query said: for Chinese, the two characters of each piece."""
    index, _ = memory(MESSAGES)
    keys = key_terms(index, "读取pandas数据")
    assert keys.terms == sorted(["读取", "panda", "数据"])
    assert dict(zip(keys.terms, keys.words, strict=True)) == {"读取": "读取", "panda": "pandas", "数据": "数据"}


def test_a_window_of_a_long_chinese_text_stands_around_the_querys_pieces() -> None:
    """A Chinese text has no spaces: the window finds the query's pieces (and a Latin word glued to Han characters)
    where they are written, not at the text's start."""
    text = "今天我们讨论了很多别的事情。" * 60 + "我用pandas读取数据。" + "后来又聊了一些别的话题。" * 60
    keys = KeyTerms(["读取", "取数", "数据"], np.ones(3), ["读取", "取数", "数据"])
    assert "读取数据" in window(text, keys, 20)
    latin = KeyTerms(["panda"], np.ones(1), ["pandas"])
    assert "pandas" in window(text, latin, 20)
