"""Chinese topic keywords: the noun terms of a Chinese text, as cluster/phrases.py counts an English text's phrases.

Chinese is written without spaces, so the English rules (runs of words between stop words) find no word in it and a
Chinese topic had no keyword ("topic 2"). Here jieba cuts the text into words with their parts of speech
(clients/chinese_words.py: loaded on the first Chinese text only, writing nothing) and the candidates are:

- every noun of two characters or more (财产, 诉讼, 人工智能), a rare fixed expression too (共同财产, 民事诉讼;
  a common one is talk: 一般来说, 是不是);
- a compound of two or three nouns and verbs written together (推荐系统 = 推荐/v 系统/n, 机器学习 = 机器/n 学习/v),
  without a verb that takes an object (学习机器学习 is 机器学习) or one that ends it where a particle, a numeral, a
  pronoun or an adverb follows (系统崩溃了: the verb is the predicate), much as the offline extractor reads
  compounds (extract/chinese.py);
- a rare verb alone, which names an activity (面试, 烹饪, 离婚), never a common one (需要, 了解);
- never a character alone or vague nouns only (问题, 方法, 数据: GENERIC's Chinese).

A candidate's key is its words joined by spaces (so cluster/phrases.py's rules on contained phrases work as for
English: 推荐 系统 holds 系统), its surface form the words written together. Keywords only: the tuning's phrase
coherence never reads them, so no segment moves to another topic.
"""

from __future__ import annotations

from collections.abc import Iterator

from clients.chinese_words import HAN, segmenter, zipf

# jieba's tags (ICTCLAS) of the nouns a keyword is made of: nouns, proper nouns, verbal and adjectival nouns,
# abbreviations, and fixed expressions (l) when rare.
_NOUNS = frozenset(["n", "nz", "vn", "an", "j", "ns", "nt", "nr", "nrt", "nrfg", "l"])
_VERB = "v"
# A fixed expression (l) rarer than this is a term (民事诉讼 2.9, 共同财产 1.8); a commoner one is talk (一般来说 3.7).
EXPRESSION_ZIPF = 3.0
# A verb alone names an activity when it is this rare (面试 4.3, 烹饪 4.0, 离婚 4.6, as "birding" or "hiking" do); a
# commoner one is talk (需要 5.9, 了解 5.4, 推荐 5.0, 翻译 5.0).
ACTIVITY_ZIPF = 4.7
# A verb opens a compound with the noun after it when it is rarer than this (推荐系统 5.0, 提取公积金 4.3), never a
# common one (了解公司 5.4, 需要时间 5.9: a verb and its object).
COMPOUND_VERB_ZIPF = 5.3
# After a verb these say it is the predicate (系统崩溃了, 数据显示一个): no part of a keyword.
_PREDICATE_AFTER = frozenset(["ul", "uz", "ug", "uv", "ud", "m", "mq", "r", "d", "q"])
MAX_WORDS = 3
# Nouns too vague to name a topic alone (cluster/phrases.py's GENERIC, in Chinese): kept inside a compound.
_GENERIC_TEXT = """
问题 方法 办法 情况 东西 方面 内容 时候 事情 方式 时间 部分 过程 结果 原因 信息 例子 示例 步骤 建议 答案 回答 类型
种类 数据 代码 功能 文件 用户 系统 模型 工具 项目 程序 应用 人们 经验 选项 特点 作用 目的 任务 领域 因素 技术 意思
概念 格式 版本 结构 文本 句子 单词 主题 话题 列表 细节 总结 概述 想法 区别 数量 数字 对象 元素 名称 字段 表格 消息
对话 助手 工作 要求 能力 好处 优点 缺点 水平 程度 特征 解决方案 方案 问题解决 注意事项 一点 地方 人 事 点 以下几点
全部 重点 要点 规定"""
GENERIC = frozenset(_GENERIC_TEXT.split())


def has_chinese(text: str) -> bool:
    return HAN.search(text) is not None


def candidates(prose: str) -> Iterator[tuple[str, str]]:
    """(key, surface form) of each Chinese keyword candidate in a cleaned text, in order (see the module doc)."""
    words = [(pair.word, pair.flag) for pair in segmenter().cut(prose)]
    run: list[tuple[str, str]] = []
    for word, tag in [*words, ("", "x")]:
        if word and HAN.search(word) and _content(word, tag):
            run.append((word, tag))
            continue
        if run:
            yield from _of_run(run, (word, tag))
            run = []


def _content(word: str, tag: str) -> bool:
    """A word a keyword is made of: a noun, a rare fixed expression, a verb of two characters or more."""
    if tag == "l":
        return zipf(word) < EXPRESSION_ZIPF
    return tag in _NOUNS or (tag == _VERB and len(word) >= 2)


def _of_run(run: list[tuple[str, str]], after: tuple[str, str]) -> Iterator[tuple[str, str]]:
    """The candidates of one run of nouns and verbs written together (`after`: the word written right after it, ""
    at the end of the text): its 1-3 word pieces, as an English run gives its n-grams, that `_keyword` keeps."""
    if run and run[-1][1] == _VERB and (after[1] in _PREDICATE_AFTER or after[1] == "eng"):
        run = run[:-1]  # 系统崩溃了, 数据存在MySQL里: a subject, then the verb (not 我想学习机器学习。)
    for size in range(1, MAX_WORDS + 1):
        for offset in range(len(run) - size + 1):
            gram = run[offset : offset + size]
            if _keyword(gram, run[offset - 1] if offset else None, offset + size == len(run)):
                yield " ".join(w for w, _ in gram), "".join(w for w, _ in gram)


def _keyword(gram: list[tuple[str, str]], before: tuple[str, str] | None, ends_run: bool) -> bool:
    """Nouns and verbs that can name a topic: not a character alone, not vague nouns only, a verb alone only when
    rare (an activity), and opening with a verb only as a verb not too common and a noun that end the run, with no
    noun before them in it: 推荐系统 (推荐/v 系统/n) of 推荐系统 and 开发推荐系统, never 学习机器 of 学习机器学习 (学习
    is its verb, 机器学习 its object), nor 转移财产 of 丈夫转移财产. A verb may end it (机器学习 = 机器/n 学习/v), not
    two."""
    words = [w for w, _ in gram]
    if len(gram) == 1:
        verb = gram[0][1] == _VERB
        return len(words[0]) >= 2 and words[0] not in GENERIC and (not verb or zipf(words[0]) < ACTIVITY_ZIPF)
    if gram[0][1] == _VERB and not (
        len(gram) == 2
        and gram[1][1] in _NOUNS
        and ends_run
        and (before is None or before[1] == _VERB)
        and zipf(words[0]) < COMPOUND_VERB_ZIPF
    ):
        return False
    if gram[-1][1] == _VERB and gram[-2][1] == _VERB:
        return False  # 程序员面试需要 (..., 需要做哪些准备): a verb after a verb is the predicate's
    return not all(w in GENERIC for w in words)
