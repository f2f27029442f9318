"""Blocks of lines pasted from a program without a code fence: source code, and tables a tool printed.

Part of console output's reading (clients/console.py), on the message's lines as they were written. A line of code
alone is read by the prose view's line rules (clients/prose.py: a keyword first, a ";" or a brace last, symbols
outnumbering letters), but a pasted program also holds lines those rules let through: "println (groupSizes)", a
statement garbled by OCR ("Ival sc = SparkContext.getOrCreate ()": "val" read "Ival"), what a line mask leaves of
"XW00 = x(0) * array_weights_wire(0)" ("XW00"). Here a line is read by its shape and its neighbours:

- a code line (`_code_line`): an assignment to one name ("x = f(y)", "val df = ...", "df.col = ..."; a name and one
  word before it when what is assigned reads as code: "Ival sc = SparkContext.getOrCreate ()"), a call on a dotted
  name or with nothing between its brackets ("webPageData.persist ()", "init()"), a statement's keyword ("import x",
  "for i in ...:", "if (...)"), a method chained on the line before (".filter(...)"), a line ending in ";", "{" or
  "}", or closing brackets alone;
- a block of code is CODE_RUN code lines or more in a row, with the lines between them that read as no sentence
  (`_sentence`: words, few brackets or "="): the whole block is blanked. One code line alone is the prose view's
  to judge: "ROI = (Gain - Cost) / Cost" or "skewness = 3 * (mean - median) / sd" in an answer is a formula;
- ChatGPT's page copied with its code blocks reads "sqlCopy codeFROM nginx:stable-alpine": the "Copy code" line and
  the lines after it, blank lines included, to the next sentence, are code;
- a table: two or more lines in a row split by tabs into three cells or more (an IDE's "Problems" view, a
  spreadsheet: "Description\\tResource\\tPath\\tLocation\\tType"), or a header of three or more column names in
  capitals set apart by runs of spaces (kubectl's "NAME  READY  STATUS  RESTARTS  AGE", docker's "CONTAINER ID
  IMAGE ...", ps's "PID TTY TIME CMD") with the rows under it to a blank line. Words written before a header on its
  line ("how to solve Description\\tResource...") stay: the user's own.

Every pattern is linear in the line (bounded or disjoint repeats).
"""

from __future__ import annotations

import re

# The user speaking again after a command's output or a table: a question, or a first word only a person writes.
PERSON_FIRST = re.compile(
    r"\s*(?:i|i'm|i've|my|we|what|why|how|can|could|would|should|please|help|thanks|thank|is there|any|where|when"
    r"|which|so|but|now|then|here|this|it)\b",
    re.IGNORECASE,
)
CODE_RUN = 2  # this many code lines in a row (lines that read as no sentence between them) are a program
SENTENCE_WORDS = 6  # a line of this many words or more, most of them plain words, is a sentence
TABLE_CELLS = 3  # a line split in this many cells or more by tabs is a table's row
OUTPUT_LINES = 400  # a table's rows or a copied block are read this far at most

_NAME = r"[A-Za-z_$][\w$]{0,80}(?: ?\. ?[A-Za-z_$][\w$]{0,80}){0,8}"  # "df", "sc.textFile", OCR's "g. size"
_INDEX = r"(?:\[[^\]\n]{0,60}\]|\([^()\n]{0,60}\))?"  # "a[i]", "temp(0)"
_TYPE = r"(?:\s?:\s?[\w\[\], .]{1,40})?"  # Scala's or TypeScript's "x: Int"
# An assignment to one name (maybe indexed or typed), "==" and "=>" excluded.
_ASSIGN = re.compile(rf"\s*(?P<word>[A-Za-z]\w{{0,30}}\s+)?{_NAME}{_INDEX}{_TYPE}\s?[-+*/%&|^]?=(?![=>])\s?(?P<rhs>.*)")
_CODE_VALUE = re.compile(r"[(\[{\"']|\w\.\w|^\s*$")  # what is assigned reads as code: a call, a literal, a.b
_QUOTED = re.compile(r"\"[^\"\n]{0,200}\"|'[^'\n]{0,200}'")
_NUMBER = re.compile(r"[-+$€£]?\d[\d.,]{0,20}%?")
_WORDS_RUN = re.compile(r"(?:\b[A-Za-z][a-z]{1,20}\b[ ,]{1,3}){3}")  # three plain words in a row: a definition's
_CALL = re.compile(rf"\s*{_NAME}\s?\((?P<args>[^\n]*)\)\s*[;,]?\s*")
_KEYWORD = re.compile(
    r"\s*(?:(?:import|package|from [\w.]{1,80} import|val|var|let|const|def|fun|func|class|object|trait|struct"
    r"|return|throw|yield|print|println|printf|#include|#define|using namespace)\s+[\w$\"'(<{\[*]"
    r"|(?:if|for|while|switch|catch|elif|except)\s?\(|for \w{1,40}(?:, ?\w{1,40})? in \S.*:\s*$|else\s?[:{]"
    r"|(?:try|finally|else|do)\s*[:{]?\s*$|@\w+(?:\(|\s*$))"
)
_CHAINED = re.compile(r"\s*\.\s?[A-Za-z_]\w{0,80}\s?\(")  # ".filter(col("x") > 1)" under "df"
_CODE_LAST = re.compile(r"(?:[;{}]|^\s*[)\]}]+[;,)]*)\s*$")
# ChatGPT's page copied: "pythonCopy code", "sqlCopy codeFROM ...", "Copy code" alone; not "Copy code from the page"
_COPIED = re.compile(r"\s*[\w#+.-]{0,20}Copy code(?=\S|\s*$)")
_PLAIN_WORD = re.compile(r"[\"'(*]?[A-Za-z][a-z'’-]*[\"'),.:;!?*]{0,3}")
_CODE_MARKS = frozenset("=;{}[]()<>")
_TABS = re.compile(r"\S(?:[ ]?\t[ \t]*)\S")  # a tab between two cells
_CELL_SPLIT = re.compile(r"[ ]?\t[ \t]*")
# A header of column names in capitals ("NAME", "%CPU", "CONTAINER ID", "MOUNTED ON"), split by two spaces or more.
_COLUMN = r"[A-Z%][A-Z0-9%_/()-]{0,20}(?: [A-Z][A-Z0-9%_/()-]{0,20})?"
_CAPS_HEADER = re.compile(rf"\s*{_COLUMN}(?:(?: {{2,}}|\t){_COLUMN}){{2,}}\s*")


def _sentence(line: str) -> bool:
    """Whether the line reads as a person's words: SENTENCE_WORDS words or more, three in four plain, and few of
    code's marks ("=", brackets, ";"): two, or one in five words ("(a) If the data subject has given consent to the
    processing of his or her personal data;", a law's list)."""
    words = line.split()
    if len(words) < SENTENCE_WORDS:
        return False
    plain = sum(1 for word in words if _PLAIN_WORD.fullmatch(word))
    marks = sum(line.count(mark) for mark in _CODE_MARKS)
    return plain * 4 >= len(words) * 3 and marks * 5 <= max(10, len(words))


def _speaks(line: str) -> bool:
    """Whether a line is the user's again after a program: a sentence, a question, or a person's first word."""
    return _sentence(line) or line.rstrip().endswith("?") or PERSON_FIRST.match(line) is not None


def _code_line(line: str) -> bool:
    """Whether the line has a statement's shape (module docstring) and reads as no sentence. The checks of characters
    first, then the patterns anchored at the line's start, the words last: most lines of prose fail the first."""
    stripped = line.strip()
    if not stripped:
        return False
    last = stripped[-1]
    if "=" not in stripped and "(" not in stripped and last not in ";{}" and _KEYWORD.match(line) is None:
        return False
    return _shaped(line, stripped, last) and not _sentence(line)


def _shaped(line: str, stripped: str, last: str) -> bool:
    if "=" in stripped:
        assign = _ASSIGN.fullmatch(line)
        if assign is not None and _code_value(assign.group("rhs"), assign.group("word") is not None):
            return True
    if "(" in stripped:
        call = _CALL.fullmatch(line) if last in ");," else None
        if call is not None and ("." in stripped.split("(", 1)[0] or not call.group("args").strip()):
            return True
        if _CHAINED.match(line):
            return True
    if last == ";":  # "Confidentiality Deeds;", a list's item, is no statement: one word at least is no plain word
        return any(not _PLAIN_WORD.fullmatch(word) for word in stripped.split())
    return last in "{}" or not stripped.strip(")]};,") or _KEYWORD.match(line) is not None


def _code_value(value: str, after_word: bool) -> bool:
    """Whether what an assignment gives reads as code: more than a number, no words of a definition ("Q = Heat
    generated in Joules (J)", "m = 24000 kg (mass of the concrete)", "W = 2530 Watts"), and, after a word ("Ival sc
    = ..."), a call, a literal or a dotted name."""
    unquoted = _QUOTED.sub(" ", value)
    words = unquoted.split()
    if len(words) == 1 and _NUMBER.fullmatch(words[0]):
        return False  # "rent=1200", "food=300": a budget's lines as much as a program's
    if len(words) > 1 and all(_PLAIN_WORD.fullmatch(word) or _NUMBER.fullmatch(word) for word in words):
        return False
    if _WORDS_RUN.search(unquoted):
        return False
    return not after_word or _CODE_VALUE.search(value) is not None


def code_lines(lines: list[str]) -> set[int]:
    """The indices of the lines of a program pasted among prose: each run of CODE_RUN code lines or more (with the
    lines that read as no sentence inside it), and a block copied from ChatGPT's page after its "Copy code"."""
    out: set[int] = set()
    code = [_code_line(line) for line in lines]
    copied = ["Copy code" in line and _COPIED.match(line) is not None for line in lines]
    i = 0
    while i < len(lines):
        if copied[i]:
            j = i + 1
            while j < len(lines) and j - i < OUTPUT_LINES and not copied[j]:
                if not code[j] and _speaks(lines[j]):
                    break
                j += 1
            out.update(range(i, j))
            i = j
            continue
        if not code[i]:
            i += 1
            continue
        block, last, found = [i], i, 1
        j = i + 1
        while j < len(lines) and (code[j] or not _speaks(lines[j])):
            if not lines[j].strip():  # blank lines inside a program, as between its statements: to a code line
                after = next((k for k in range(j + 1, min(len(lines), j + OUTPUT_LINES)) if lines[k].strip()), j)
                if not code[after]:
                    break
                block.extend(range(j, after))
                j = after
            block.append(j)
            if code[j]:
                last, found = j, found + 1
            j += 1
        if found >= CODE_RUN:
            out.update(k for k in block if k <= last)  # what follows its last code line is no program's
        i = j
    return out


def table_spans(lines: list[str], starts: list[int]) -> list[tuple[int, int]]:
    """The (start, end) offsets of a table's rows: tab-separated ones, and a header in capitals with its rows."""
    spans: list[tuple[int, int]] = []
    tabbed = ["\t" in line and len(_TABS.findall(line)) + 1 >= TABLE_CELLS for line in lines]
    i = 0
    while i < len(lines):
        if tabbed[i] and i + 1 < len(lines) and tabbed[i + 1]:
            j = i
            while j < len(lines) and tabbed[j]:
                spans.append((starts[j] + _header_start(lines[j]) if j == i else starts[j], starts[j] + len(lines[j])))
                j += 1
            i = j
        elif _caps_header(lines[i]):
            j = i + 1
            while j < len(lines) and j - i < OUTPUT_LINES and _caps_row(lines[j]):
                j += 1
            spans.extend((starts[k], starts[k] + len(lines[k])) for k in range(i, j))
            i = j
        else:
            i += 1
    return spans


def _caps_header(line: str) -> bool:
    """Whether the line is a header of columns in capitals (checks of characters first: a pattern costs more)."""
    return ("  " in line or "\t" in line) and line.lstrip()[:1].isupper() and _CAPS_HEADER.fullmatch(line) is not None


def _caps_row(line: str) -> bool:
    """Whether the line is a row under a header in capitals: cells set apart by two spaces or a tab, and not the user
    speaking again ("Why does it restart?")."""
    stripped = line.strip()
    return (
        ("  " in stripped or "\t" in stripped)
        and not stripped.endswith("?")
        and PERSON_FIRST.match(line) is None
        and not _sentence(line)
    )


def _header_start(line: str) -> int:
    """Where a table's first row opens in its line: after the words a user wrote before its first cell ("how to
    solve Description\\tResource\\t..."), whose last word is the first column's name."""
    first = _CELL_SPLIT.split(line, maxsplit=1)[0]
    words = first.split()
    if len(words) <= 1:
        return 0
    return first.rfind(words[-1])
