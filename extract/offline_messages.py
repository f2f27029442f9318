"""How the offline extractor (extract/offline.py) reads one message: step 1 of its rules.

`_read` makes a `_Message`: the prose view of what is read (a reply's opening, READ_REPLY_CHARS; a user's first
READ_USER_CHARS), its words and language, its sentence bounds (`_Message.span` cuts an evidence span from them), the
identifiers it writes alone in inline code, and the languages its code blocks and Claude artifacts are marked as.
`_settle_languages` gives a message of a few words its segment's language.
"""

from __future__ import annotations

import bisect
import re
from collections import Counter
from dataclasses import dataclass, field

from clients.prose import ARTIFACT_LANGUAGES, prose, unicode_view
from extract import chinese, lexicon
from extract.text import READ_USER_CHARS, TERMINAL_ESCAPES
from extract.tokens import Token, _shouted, tokens
from extract.types import SegmentMessage

MAX_SPAN_CHARS = 240


TAG_CHARS = 2000  # the longest tag looked through (an artifact's opening tag: clients/prose.py reads as far)


# How much of a message is read: the opening of a reply names what it is about, and a user's paste of 5 MB says
# no more than its first pages (READ_USER_CHARS, extract/text.py: the fact rules read as much). The cost of a
# message is bounded whatever its size (time and memory).
READ_REPLY_CHARS = 800


# The cut at a read limit is moved to the end of the word it falls in, up to this many characters further: a word
# cut in two ("Projec" of "Microsoft Project", "Celesti", "Morocca") is a fragment no one wrote, and a name rule takes
# a rare fragment for a name. A "word" longer than this (a hash, base64) is cut where it is.
WORD_END_CHARS = 40


_WORD_REST = re.compile(rf"[\w'’-]{{1,{WORD_END_CHARS}}}(?![\w'’-])")


# Fewer words than this, and a message takes its segment's language (`_settle_languages`).
SHORT_MESSAGE_WORDS = 6


_STOPS = re.compile(r"[.!?。！？](?=\s)|\n")


@dataclass
class _Message:
    """One message as the extractor reads it: its prose view, words, sentence bounds and language."""

    message: SegmentMessage
    view: str  # prose view (NFC, escapes and code blanked)
    offsets: list[int] | None  # view offset -> message offset, when the view is not the text itself
    language: str
    stops: list[int] = field(default_factory=list)  # sentence ends in the message text, sorted
    words: list[Token] = field(default_factory=list)  # tokens of the view
    case_blind: bool = False  # written without a single capital ("how to use limit in linux"): no case evidence
    # identifiers written alone as inline code ("`explode`", "`cache()`"): (as written, view start, view end,
    # named as a function or command there: called, followed by its kind or shaped as an identifier; an API's
    # name there: see _api_name)
    code_names: list[tuple[str, int, int, bool, bool]] = field(default_factory=list)
    # the language a fenced code block is marked as ("```python"): (word, view start, view end)
    fences: list[tuple[str, int, int]] = field(default_factory=list)
    source: str = ""  # the text the view was made from (same offsets): what the view blanked is told apart by it

    def in_tag(self, start: int, end: int) -> bool:
        """Whether the mention view[start:end] was found inside a tag the view blanks (an artifact's type,
        'type="text/html"'), not in the prose: an artifact's title, kept, is prose."""
        if self.view[start:end].strip():
            return False
        source = self.source
        opens = source.rfind("<", max(start - TAG_CHARS, 0), start)
        if opens < 0 or source.rfind(">", opens, start) >= 0 or self.view[opens] != " ":
            return False
        closes = source.find(">", end, end + TAG_CHARS)
        return closes >= 0 and source.find("<", end, closes) < 0

    def unmarked(self, start: int, end: int) -> tuple[int, int]:
        """View bounds around the mention view[start:end] that leave out the markup beside it: where a tag's
        bracket was blanked between the mention and the sentence's edge, the bound is the blanked character
        nearest the mention ('title="LLM Pricing Calculator">' of a Claude artifact's tag gives its title alone);
        (0, len(view)) where there is no tag."""
        before = self._tag_edge(range(start - 1, max(start - MAX_SPAN_CHARS, 0) - 1, -1))
        after = self._tag_edge(range(end, min(end + MAX_SPAN_CHARS, len(self.view))))
        return (0 if before is None else before + 1), (len(self.view) if after is None else after)

    def _tag_edge(self, places: range) -> int | None:
        """Walking `places` away from a mention (to the line's end): the blanked character nearest the mention
        when a tag's bracket was blanked on the way, else None."""
        nearest = None
        for p in places:
            char = self.source[p]
            if char == "\n":
                return None
            if self.view[p] == " " and not char.isspace():
                nearest = p if nearest is None else nearest
                if char in "<>":
                    return nearest
        return None

    def original(self, start: int, end: int) -> tuple[int, int]:
        if self.offsets is None:
            return start, end
        return self.offsets[start], self.offsets[end - 1] + 1 if end > start else self.offsets[end]

    def span(self, start: int, end: int, lo: int = 0, hi: int | None = None) -> str:
        """The sentence around text[start:end], within text[lo:hi], cut to MAX_SPAN_CHARS around the mention; a
        substring."""
        text = self.message.text
        i = bisect.bisect_left(self.stops, start)
        left = max(self.stops[i - 1] + 1 if i > 0 else 0, lo)
        j = bisect.bisect_left(self.stops, end)
        right = min(self.stops[j] + 1 if j < len(self.stops) else len(text), len(text) if hi is None else hi)
        if right - left > MAX_SPAN_CHARS:
            half = (MAX_SPAN_CHARS - (end - start)) // 2
            left, right = max(left, start - half), min(right, end + max(half, 0))
        return text[left:right].strip()


def _read(message: SegmentMessage) -> _Message:
    limit = _word_end(message.text, READ_USER_CHARS if message.role == "user" else READ_REPLY_CHARS)
    view, offsets = unicode_view(message.text[:limit])
    code_names = (
        [(m.group(1), m.start(1), m.end(1), _names_code(m), _api_name(m)) for m in _CODE_NAME.finditer(view)]
        if "`" in view
        else []
    )
    fences = [(m.group(1), m.start(1), m.end(1)) for m in _FENCE.finditer(view)] if "```" in view else []
    if "<antArtifact" in view:
        fences += _artifact_kinds(view)
    source = view
    view = _blank_markup(prose(TERMINAL_ESCAPES.sub(_blank_escape, view), quoted_names=True), message.role)
    # sentence ends as far as a span around what is read can reach (`span`: past it, a span is cut the same)
    stops = [m.start() for m in _STOPS.finditer(message.text, 0, limit + MAX_SPAN_CHARS + 1)]
    language = lexicon.language_of(view)
    if language == "en":
        view = _blank_foreign(view)
    words = chinese.tokens(view) if language == "zh" else tokens(view)  # Chinese is cut into words by jieba
    # str.islower: some cased letter and no capital at all (one pass in C; a script without case is never blind)
    return _Message(
        message,
        view,
        offsets,
        language,
        stops,
        words,
        view.islower(),
        code_names,
        fences,
        source,
    )


# Text a browser extension appends to every ChatGPT prompt it sends ("... in store 10?Share Prompt", "Please write
# in English language.", "Please write in English (US) language.", "Please write in Portuguese language.", a Korean
# one's "지금 번역하기", "translate now"): markup that no one in the conversation wrote, read as a name ("Share Prompt",
# "English": the language it asks for, in every prompt, outranks what the prompts are about) and glued to the
# prompt's last word. One or more of them at the message's end; the same words inside a prompt are the user's.
_EXTENSION_TAIL = r"Share Prompt|Please write in [^\n.]{1,80}? language\.?|지금 번역하기"


_EXTENSION_TAILS = re.compile(rf"(?:{_EXTENSION_TAIL})(?:\s*(?:{_EXTENSION_TAIL}))*(?=\s*$)")


_EXTENSION_MARKS = ("Share Prompt", "Please write in ", "지금 번역하기")


# A line of chord symbols ("E D A Bm", "A G D F#m", "C/G Am7"): music written out, no prose; its capitals make names.
_CHORD = r"[A-G][#b♯♭]?(?:maj|min|m|dim|aug|sus|add)?\d{0,2}(?:/[A-G][#b♯♭]?)?"


_CHORD_LINE = re.compile(rf"^[ \t]*{_CHORD}(?:[ \t]+{_CHORD}){{2,}}[ \t]*$", re.MULTILINE)


def _blank_markup(view: str, role: str) -> str:
    """The view with an extension's appended text (a user's only) and lines of chords blanked, offsets kept."""
    if role == "user" and any(mark in view for mark in _EXTENSION_MARKS):
        view = _EXTENSION_TAILS.sub(_blank_match, view)
    return _CHORD_LINE.sub(_blank_match, view)


def _blank_match(match: re.Match[str]) -> str:
    return re.sub(r"[^\n]", " ", match.group(0))


# A sentence of the prose view: up to a stop and the space after it, or a line's end (a quote mark may close it).
_SENTENCE = re.compile(r"[^\n.!?]*(?:[.!?]+[\"'”’)]*(?=\s|$)|[.!?]+|\n|$)")


def _blank_foreign(view: str) -> str:
    """The view with the sentences of an English message that are written in another language blanked (a reply's
    examples in Vietnamese, "Cảm ơn bạn đã chọn ...", a French phrase the user asks to translate): their words are
    no English words, and read as English their capitals open names ("Chúng") and their runs make phrases ("Cảm ơn
    bạn"). A short sentence after one goes with it where it is no English ("Cảm ơn bạn."). Names and lists of
    terms in another language stay (lexicon.foreign_language)."""
    if view.isascii():
        # the cost: most sentences of the languages met inside English chats write a letter outside ASCII
        return view
    pieces: list[str] = []
    last: str | None = None
    for match in _SENTENCE.finditer(view):
        sentence = match.group(0)
        if not sentence.strip():
            pieces.append(sentence)
            continue
        code = lexicon.foreign_language(sentence)
        if code is None and last is not None and lexicon.foreign_words(sentence, last):
            code = last
        last = code
        pieces.append(sentence if code is None else re.sub(r"[^\n]", " ", sentence))
    return "".join(pieces)


def _word_end(text: str, limit: int) -> int:
    """`limit`, or past it to the end of the word it cuts (`WORD_END_CHARS`)."""
    if limit >= len(text) or not text[limit - 1].isalnum():
        return limit
    rest = _WORD_REST.match(text, limit)
    return limit if rest is None else rest.end()


# The language a fenced code block is written in, as its opening fence names it ("```python", "```scala").
_FENCE = re.compile(r"(?m)^[ \t]*```[ \t]*([A-Za-z][\w+#-]{0,20})[ \t]*$")


# A Claude artifact's opening tag and its attributes: its type says what the artifact is written in, as a fence does
# ('type="application/vnd.ant.react"': React; 'type="application/vnd.ant.code" language="python"': Python).
_ARTIFACT_TAG = re.compile(r"<antArtifact\b[^<>]{0,2000}>")


_ATTRIBUTE = re.compile(r"""\b(type|language)\s*=\s*["']([^"'<>]{1,60})["']""")


def _artifact_kinds(view: str) -> list[tuple[str, int, int]]:
    """What each Claude artifact of the view is written in, as a fence's language: (word, view start, view end)."""
    kinds = []
    for tag in _ARTIFACT_TAG.finditer(view):
        attributes = {m.group(1): m for m in _ATTRIBUTE.finditer(view, tag.start(), tag.end())}
        kind = attributes.get("type")
        found = ARTIFACT_LANGUAGES.get(kind.group(2).strip().casefold()) if kind is not None else None
        language = found[0] if found else None
        if language is not None and kind is not None:
            kinds.append((language, kind.start(2), kind.end(2)))
        elif "language" in attributes:
            kinds.append((attributes["language"].group(2), *attributes["language"].span(2)))
    return kinds


# An identifier alone in inline code, bare or called with nothing ("`explode`", "`cache()`", "`ulimit`"), and the
# word after it: called, followed by its kind ("the `explode` function", "`explode` is a method") or shaped as an
# identifier ("`flatMap`"), it names a function or a command; a plain word that names a column, a field or a
# variable ("the `balance` field", "`zero` is ...") does not.
_CODE_NAME = re.compile(r"`([^\W\d_][\w-]{1,40})(\(\))?`(?:[ \t]+(?:is[ \t]+(?:an?|the)[ \t]+)?([A-Za-z]+))?")


_CODE_KINDS_TEXT = (
    "function functions method methods command commands keyword keywords clause clauses operator operators"
    " class statement utility transformation transformations action actions"
)


_CODE_KINDS = frozenset(_CODE_KINDS_TEXT.split())


def _names_code(match: re.Match[str]) -> bool:
    """An inline-code identifier is a function, a command or a method where it is called ("`cache()`"), followed
    by its kind ("the `limit` command") or shaped as an identifier ("`flatMap`", "`row_number`"): no English word
    is written so."""
    name = match.group(1)
    if match.group(2) or (match.group(3) or "").casefold() in _CODE_KINDS:
        return True
    return "_" in name.strip("_") or (name[:1].islower() and name != name.casefold())


def _api_name(match: re.Match[str]) -> bool:
    """An inline-code identifier that names an API: a class, written in UpperCamelCase ("`StructType`",
    "`CountVectorizer`", "`SparkSubmitOperator`"), or a function called or followed by its kind whose name no
    English word is written as (snake case, camel case or capitals: "`DENSE_RANK()`", "`partitionBy()`",
    "`row_number` function"); not a plain word ("`cache()`", "`explode`") nor a variable ("`my_table`")."""
    name = match.group(1)
    letters = name.replace("_", "")
    if not letters.isalnum():
        return False
    mixed = any(c.isupper() for c in letters[1:]) and any(c.islower() for c in letters)
    if name[:1].isupper() and mixed and "_" not in name:
        return True
    called = bool(match.group(2)) or (match.group(3) or "").casefold() in _CODE_KINDS
    # a keyword in capitals is an English word ("`DISTINCT`", "the `SELECT` statement": extract.tokens._shouted), no API
    shaped = "_" in name.strip("_") or mixed or (name.isupper() and len(letters) >= 3 and not _shouted(name.casefold()))
    return called and shaped


def _blank_escape(match: re.Match[str]) -> str:
    return " " * len(match.group(0))


def _settle_languages(messages: list[_Message]) -> None:
    """A message of a few words says too little for the language identifier ("bitte 25 weitere" reads as English):
    it is read in the language most of its segment's words are in."""
    words: Counter[str] = Counter()
    for message in messages:
        if len(message.words) >= SHORT_MESSAGE_WORDS:
            words[message.language] += len(message.words)
    if words:
        language = words.most_common(1)[0][0]
        for message in messages:
            if len(message.words) < SHORT_MESSAGE_WORDS:
                message.language = language
