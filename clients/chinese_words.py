"""Chinese words for the stages that read Chinese text: jieba's segmenter and wordfreq's Chinese frequencies, shared
by the offline extractor (extract/chinese.py) and the topic keywords (cluster/phrases.py).

jieba's dictionary and part-of-speech tagger ship inside the package (pinned in pyproject.toml; nothing is
downloaded). It is loaded on the first Chinese text only (about 2.5 CPU-s), once per process, without its cache
file (a marshal dump it would write to the temp directory) and with its logging quiet. Background frequencies are
wordfreq's Chinese list, looked up word by word (wordfreq's own lookup would load a second jieba).
"""

from __future__ import annotations

import logging
import math
import re
import threading
from functools import lru_cache
from typing import Any

HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")

_LOCK = threading.Lock()
_LOADED: dict[str, Any] = {}


def segmenter() -> Any:
    """jieba's part-of-speech tokenizer over its default dictionary, loaded once per process, writing nothing:
    `segmenter().cut(text)` gives pairs with `.word` and `.flag` (jieba's tag set, ICTCLAS)."""
    with _LOCK:
        found = _LOADED.get("segmenter")
        if found is None:
            import jieba
            import jieba.posseg

            jieba.setLogLevel(logging.WARNING)
            dictionary = jieba.Tokenizer()
            # what Tokenizer.initialize does, less its cache file (a marshal dump under the temp directory)
            dictionary.FREQ, dictionary.total = dictionary.gen_pfdict(dictionary.get_dict_file())
            dictionary.initialized = True
            found = _LOADED["segmenter"] = jieba.posseg.POSTokenizer(dictionary)
        return found


@lru_cache(maxsize=1 << 16)
def zipf(word: str) -> float:
    """Background frequency of a Chinese word on the Zipf scale, from wordfreq's Chinese list (simplified script;
    0 for a word the list does not hold)."""
    frequency = _frequencies().get(_simplified(word), 0.0)
    return math.log10(frequency * 1e9) if frequency > 0 else 0.0


def _frequencies() -> dict[str, float]:
    with _LOCK:
        found = _LOADED.get("frequencies")
        if found is None:
            from wordfreq import get_frequency_dict

            found = _LOADED["frequencies"] = get_frequency_dict("zh", wordlist="best")
        return found


def _simplified(word: str) -> str:
    from wordfreq.chinese import simplify_chinese  # a character table; imports jieba, loads none of its data

    return str(simplify_chinese(word))
