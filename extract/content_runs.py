"""Terms of a language with no part-of-speech lexicon here (Spanish, French, Russian...): runs of content words.

The third kind of candidate (extract/phrases.py), every one loose: a term only where its segment says it twice.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from extract import lexicon
from extract.name_phrases import _defined_term
from extract.tokens import Phrase, Token, _joined, _phrase

# The words that join two nouns into one term in languages without a part-of-speech lexicon here: "aceite de
# oliva", "plan d'entraînement", "corso di laurea", "bolo de cenoura".
_TERM_CONNECTORS = frozenset("de del du des di della dello delle dei degli do da dos das".split())  # noqa: SIM905


_ELIDED = re.compile(r"^(?:d|l|dell|all|nell|dall|sull)['’](?=\w)", re.IGNORECASE)


RUN_STOP_WORDS = 300  # a language's most frequent words that end a run of content words


def _content_runs(prose: str, words: list[Token], language: str) -> Iterator[Phrase]:
    """Terms of a language with no part-of-speech lexicon here (Spanish, French, Russian...): runs of two or three
    content words, none of them among the language's most frequent words, joined by nothing but a space or one
    connector ("paella valenciana", "aceite de oliva", "ремонт кухни"), a name allowed at the end ("marathon de
    Paris"). Without a lexicon a run is as likely a verb and its object as a term, so every one is loose: a term
    only where the segment says it twice or more (extract.offline), as people repeat what they talk about."""
    frequent = lexicon.frequent_words(language, RUN_STOP_WORDS)
    run: list[Token] = []
    connector: Token | None = None  # a connector after the run's last word, waiting for the next content word

    def content(token: Token) -> bool:
        lower = _ELIDED.sub("", token.lower)
        if token.sentence_start or len(lower) < 3 or not lower.isalpha():
            return False
        if token.capitalised and not token.all_caps:
            return True  # a name ("Paris"), however common: only a run's last word (emit)
        return (
            token.text == token.lower
            and lower not in frequent
            and not lexicon.verb_form(lower, language)  # "creaste anteriormente", "hice paella": no terms
            and not lexicon.adverb_by_suffix(lower, language)
        )

    def emit() -> Iterator[Phrase]:
        said = [t for t in run if t.lower not in _TERM_CONNECTORS]
        if 2 <= len(said) <= 3 and not any(t.capitalised for t in run[:-1]):
            yield _phrase(prose, run, loose=True)  # longer: a clause, not a term, and any part of it a fragment

    previous: Token | None = None
    for token in words:
        joined = previous is not None and _joined(prose, previous, token)
        if run and joined and connector is None and token.lower in _TERM_CONNECTORS:
            connector = token
        elif (
            run
            and joined
            and content(token)
            and not run[-1].capitalised
            # a name ends a term only after a connector: "marathon de Paris"; "plataforma Shopify" is Shopify
            and not (token.capitalised and (connector is None or _defined_term(connector, token, prose, language)))
        ):
            if connector is not None:
                run.append(connector)
                connector = None
            run.append(token)
        else:
            yield from emit()
            run, connector = ([token] if content(token) and not token.capitalised else []), None
        previous = token
    yield from emit()
