"""Prose out of chat text: code, markup, tracebacks, tables of numbers, paths and URLs masked before extraction.

The one prose cleaner of the project, below the stage packages: the offline extractor (extract/offline.py)
reads its messages through it and the topic labels (cluster/phrases.py) their segments. Every extractor reads
the prose view of a message, never its raw text: a concept named "Div", "Dtype" or
"Print" comes from an HTML snippet, a pandas traceback or a code line, and no person would file it. Masking
replaces a character by a space (a newline stays a newline), so an offset in the prose view is the same offset
in the message and an evidence span cut there is still a verbatim substring of it.

What is masked:
- a Claude reply's private notes, `<antThinking>...</antThinking>` in its text or a thinking block as the ingest
  renders it, "[thinking]\\n...\\n[/thinking]" (Claude's thinking blocks, ChatGPT's `thoughts` and
  `reasoning_recap`; the archive keeps them, no extractor reads them; an archive written
  before the block was closed has it to the end of the message), and its artifacts, `<antArtifact identifier=...
  type=... title=...>...</antArtifact>`: an artifact's body is code (a React component, HTML, SVG, a Mermaid
  diagram, `application/vnd.ant.code`) except a document's (`text/markdown`, `text/plain`), read as prose like
  the rest of the message, and its title stays (the name the reader sees it under); a tool call as the ingest
  renders it, "[tool_use NAME] {input as JSON}" (LibreChat: "[tool_call NAME] ..."), is no prose either, except
  an `artifacts` call's title and the content of one that makes a document, read in place with its JSON escapes
  blanked; nor is what a tool returned, "[tool_result NAME]\\n...\\n[/tool_result]" (a web page a search fetched);
- fenced code blocks (``` or ~~~, to the closing fence or the end of the message) and inline `code`;
- lines that read as code: a shell or REPL prompt, a keyword that opens a statement (def, import, SELECT,
  val, #include...), a line ending in `;`, `{` or `}`, or one where symbols outnumber letters;
- a table pasted one cell per line (six or more lines of one or two short words in a row), and rows of
  delimited values with numbers among them ("107,bb, 15Kjava", "John\\t25\\tNYC", "104, cc,35K, Testing") with
  the header row next to them ("id, name,sal,dept"): three or more short fields of one or two words split by
  commas, semicolons, tabs or runs of spaces; a sentence with a number or a list in it has longer fields;
- tracebacks and stack traces (`Traceback (most recent call last):`, `  File "..."`, `at pkg.Class(...)`,
  `NameError: ...`), and console output pasted as prose (clients/console.py): a log (a line with a time to the second
  and a level, or two or more lines in a row that open with a time or a level: `2024-03-01 12:41:03,123 INFO ...`,
  `23/04/10 07:52:54 WARN ...`, `[WARN] ...`; one line that opens with a level alone is prose: "ERROR: I forgot the
  key"), Java and JavaScript stack frames in a line of prose, counter dumps ("Failed map tasks=1"), a shell or
  REPL prompt with what the command printed, progress bars, a tool's lines (docker compose, Keras, gradle, pip); and
  (clients/console_blocks.py) a program pasted without a fence, two statement-shaped lines in a row or more
  ("Ival sc = SparkContext.getOrCreate ()", "webPageData.persist ()"), a tab-separated table (an IDE's "Problems"
  view) and one under a header in capitals (kubectl's "NAME  READY  STATUS");
- HTML and XML tags and entities, markdown markers (headings, emphasis, list bullets, quotes), the target of
  a markdown link (its text stays), table rule lines and table rows made of numbers;
- the ingest's placeholder of an image, "[image: POINTER WxH]", and a media pointer of any scheme
  ("sediment://...", "file-service://...");
- URLs, e-mail addresses, file paths and file names with an extension, snake_case and dotted.call() identifiers;
- with `quoted_names=True` (the extractor), an identifier written alone between double quotes and without a
  digit is kept: "Multiplication_V", "number_to_hex" in a sentence are names the writer calls things by (a
  quoted "temp_0", "a_1" stays masked: numbered variables), and so is a lone name called with nothing in
  prose ("**coalesce()**: ...", "using input_define()"): a function the text is about ("add_two(x)",
  "df.select()" stay masked);
- colours written in hex ("#FF5733", "#fff", "F7DC6F"), values and never names;
- citation markers ("【4†source】", "[12]") and LaTeX (`$$...$$`, `\\(...\\)`, `\\[...\\]`, `\\frac`);
- with `table_rows=True` (topic labels), every markdown table row: a table's cells are column names and values
  more often than prose; the extractor keeps rows of words ("| Spark | Hadoop |") and masks rows of numbers.

Every pattern is linear in the text: possessive or disjoint repeats, bounded lengths where a pair must close.

`unicode_view` gives the NFC form of a message without zero-width characters, with a map back to the raw
offsets, for the rare message that needs it ("Cafe\u0301" and "Caf\u200be" both read "Café").
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Callable

from clients.console import blank_spans, console_spans

# Claude's private notes and its artifacts, to their closing tag or the end of the message (a reply is read cut short):
# in the text ("<antThinking>"), or a thinking block as the ingest renders it ("[thinking]\n...\n[/thinking]").
_ANT_THINKING = re.compile(
    r"<antThinking>.*?(?:</antThinking>|\Z)|^\[thinking\]\n.*?(?:^\[/thinking\]$|\Z)", re.DOTALL | re.MULTILINE
)
_ARTIFACT = re.compile(r"(<antArtifact\b[^<>]{0,2000}>)(.*?)(</antArtifact>|\Z)", re.DOTALL)
_ARTIFACT_TITLE = re.compile(r'\btitle\s*=\s*"([^"]{1,200})"')
_ARTIFACT_TYPE = re.compile(r"""\btype\s*=\s*["']([^"']*)["']""")
DOCUMENT_TYPES = frozenset({"text/markdown", "text/plain"})  # an artifact of these types is a document: prose
# what an artifact of a code type is written in: (the language's name, as prose names it; its fence's word)
ARTIFACT_LANGUAGES = {
    "application/vnd.ant.react": ("React", "jsx"),
    "text/html": ("HTML", "html"),
    "image/svg+xml": ("SVG", "svg"),
    "application/vnd.ant.mermaid": ("Mermaid", "mermaid"),
}
# A tool call as the ingest renders it (ingest/claude.py, ingest/librechat.py): its input is JSON on one line.
_TOOL_USE = re.compile(r"^\[tool_(?:use|call) ([^\]\n]{0,200})\] ([^\n]*)$", re.MULTILINE)
# What a tool returned, closed by the ingest (ingest/claude.py): a web page a search fetched, "OK" from an artifact
# call; to its closing line or the end of the message.
_TOOL_RESULT = re.compile(r"^\[tool_result([^\]\n]{0,200})\]\n(.*?)(?:^\[/tool_result\]$|\Z)", re.DOTALL | re.MULTILINE)
# A colour written as hex: "#FF5733", "#fff", "#1e90ffcc", or bare with a digit and a letter among six or eight hex
# digits ("F7DC6F", "1E90FF"): a value, never a name. A lone "#" word of hex letters only ("#bad", "#cafe") may be a
# hashtag: it is a colour when its letters are one repeated ("#fff") or capitals.
_HEX_COLOUR = re.compile(
    r"(?<![\w#&])#(?:[0-9a-fA-F]{8}|[0-9a-fA-F]{6}|[0-9a-fA-F]{3,4})(?![\w-])"
    r"|\b(?=[0-9a-fA-F]{0,7}[0-9])(?=[0-9a-fA-F]{0,7}[a-fA-F])(?:[0-9a-fA-F]{8}|[0-9a-fA-F]{6})\b"
)
# The same markup, which what a reader is shown of a message (clients/shown.py) leaves out or rewrites.
THINKING, ARTIFACT, ARTIFACT_TITLE, ARTIFACT_TYPE = _ANT_THINKING, _ARTIFACT, _ARTIFACT_TITLE, _ARTIFACT_TYPE
TOOL_USE, TOOL_RESULT = _TOOL_USE, _TOOL_RESULT
_JSON_ESCAPE = re.compile(r"\\(?:u[0-9a-fA-F]{4}|.)")
_FENCE = re.compile(r"(?ms)^[ \t]*(```|~~~).*?(?:^[ \t]*\1[^\n]*$|\Z)")
_INLINE_CODE = re.compile(r"`[^`\n]{1,400}`")
# Any scheme: the web's, a store's (s3, hdfs, jdbc:mysql) and the pointers a ChatGPT export gives its media
# ("file-service://file-AbC1", "sediment://file_00..."); the scheme's letters come first, so no backtracking.
_URL = re.compile(r"\b(?:[a-z][a-z0-9+.-]{0,30}|jdbc:\w+)://\S+|\bwww\.\S+", re.IGNORECASE)
# The ingest's placeholder for an image a ChatGPT message holds ("[image: POINTER 1024x768]", ingest/chatgpt_content.py)
_IMAGE = re.compile(r"\[image(?:: [^\]\n]{0,300})?\]")
_EMAIL = re.compile(r"\b[\w.+-]++@[\w-]++\.[\w.-]+\b")
_PATH = re.compile(
    r"(?<![\w/])(?:[A-Za-z]:\\|~?/|\./|\.\./)?(?:[\w.-]++[/\\])++[\w.-]++"  # dir/dir/file, /abs/path, C:\x\y
    r"|\b[\w-]+\.(?:py|ipynb|js|ts|tsx|jsx|java|scala|sc|sbt|sql|csv|tsv|json|jsonl|txt|md|yml|yaml|xml|html|htm"
    r"|css|sh|bat|ps1|jar|parquet|avro|orc|log|conf|cfg|ini|toml|gz|zip|tar|xlsx?|docx?|pdf|png|jpe?g|gif|svg"
    r"|v|sv|vhd|vhdl|c|cpp|cc|h|hpp|go|rs|rb|php|kt|swift|r|m|pkl|db|sqlite|exe|dll)\b",
    re.IGNORECASE,
)
_TAG = re.compile(r"</?[A-Za-z][\w:-]*(?:\s[^<>\n]*)?/?>|<![A-Za-z][^<>]*>|<!--.*?-->|&[a-z]+;|&#\d+;", re.DOTALL)
_MD_LINK = re.compile(r"\]\([^)\s]*\)")
# A template's slot, "[Name of the company]", "[Fecha de inicio del proyecto]", "[Your Name]": words in brackets that
# no link follows (a markdown link's "](url)" is blanked before), to be filled in, no subject of the conversation.
_SLOT = re.compile(r"\[(?=[^\]\n]{0,120}?[^\W\d_])[^\[\]\n]{2,120}\](?!\()")
_CITATION = re.compile(r"【[^】\n]{0,200}】|\[\d{1,3}\]")
_LATEX = re.compile(r"\$\$[^$]{0,2000}\$\$|\\\([^\n]{0,400}?\\\)|\\\[[^\n]{0,400}?\\\]|\\[A-Za-z]++")
_TABLE_ROW = re.compile(r"^[ \t]*+\|[^\n]*\|[ \t]*+$", re.MULTILINE)
_MD_MARK = re.compile(
    r"(?m)^[ \t]*(?:#{1,6}[ \t]|>+[ \t]?|[-*+][ \t]|\d{1,3}[.)][ \t])|\*\*|__|~~|(?<!\w)[*_](?=\w)|(?<=\w)[*_](?!\w)"
)
_IDENTIFIER = re.compile(
    r"\b\w+(?:\.\w+)*\([^()\n]{0,80}\)"  # call(...), obj.method(...)
    r"|\b[A-Za-z]\w*(?:\.[A-Za-z_]\w*){2,}\b"  # spark.read.csv
    r"|\b[a-z]\w*\.[a-z_]\w*\b(?=\s*[=(\[])"  # df.col = / df.col(
    r"|\b\w*_\w+\b"  # snake_case
    r"|\b[A-Z]\w*(?:Error|Exception|Warning)\b"  # KeyError, NullPointerException: a class in a traceback
    r"|\b(?:[a-z]+[A-Z]\w*)\b(?=\s*[=(.\[])"  # camelCase followed by a call or assignment
)
_TRACE_LINE = re.compile(
    r"^\s*(?:Traceback \(most recent call last\)|File \"[^\"]*\", line \d+|at [\w$.<>]+\(.*\)|Caused by: |\^+\s*$"
    r"|[\w.]+(?:Error|Exception|Warning)(?::|$)|\.\.\. \d+ more|-{3,}> |During handling of the above)"
)
# A kind's name alone ("Exception: boom", "Error: ..."): a traceback's last line, but a person writes "Warning: the
# bridge is closed" too; read as a trace's only inside one (`_mask_lines`).
_BARE_KIND = re.compile(r"\s*(?:Error|Exception|Warning)(?::|$)")
_CODE_START = re.compile(
    r"^\s*(?:\$ |>>> |\.\.\. |In \[\d+\]:|Out\[\d+\]:|scala> |sql> |mysql> |# ?include\b|//|/\*|\*/|--\s|@\w+"
    r"|(?:def|class|import|from \S+ import|return|elif|else:|try:|except\b|finally:|raise|lambda|yield|async|await"
    r"|val|var|let|const|function|public|private|protected|static|void|package|object|case class|trait"
    r"|override|module|endmodule|always|assign|wire|reg|input|output|begin|end\b|select|insert into|update \w+ set"
    r"|delete from|create (?:table|view|or replace|database|index)|alter table|drop table|with \w+ as \(|from \w+"
    r"|where |group by|order by|join |spark-submit|pip |npm |sudo |cd |ls |mkdir |export \w+=|echo |git |docker )"
    r")",
    re.IGNORECASE,
)
_CODE_END = re.compile(r"[;{}]\s*$|^\s*[)\]}]+[;,]?\s*$|=\s*[\[{(]\s*$|\)\s*:\s*$")
# Numbers and separators are disjoint classes, so a long line of digits cannot backtrack (the first version,
# with optional separators, took minutes on "1234...x").
_NUMBER_ROW = re.compile(r"^[\s|:+-]*[\d.,%$€£]+(?:[\s|:+-]+[\d.,%$€£]+)+[\s|:+-]*$")
_TABLE_RULE = re.compile(r"^\s*+(?:\|\s*+)?:?-{3,}+:?\s*+(?:\|\s*+:?-{3,}+:?\s*+)*+(?:\|\s*+)?$")
_GLUED_SENTENCE = re.compile(r"(?<=[a-z])\.(?=[A-Z][a-z])")  # "printed.For": a sentence end with its space lost
_ZERO_WIDTH = re.compile(r"[\u200b-\u200d\u2060\ufeff\u00ad]")
_NOT_LETTER = re.compile(r"[\W\d_]+")  # the complement of a letter, [^\W\d_]


def _blank(match: re.Match[str]) -> str:
    return _blank_text(match.group(0))


def _blank_text(found: str) -> str:
    if "\n" not in found:
        return " " * len(found)
    return "\n".join(" " * len(line) for line in found.split("\n"))


# A colour opens with "#", or (bare) has a digit beside a hex letter somewhere: most messages have neither
_HEX_DIGITS = re.compile(r"#[0-9a-fA-F]|[0-9][a-fA-F]|[a-fA-F][0-9]")
_HASHTAG = re.compile(r"#[a-f]{3,8}")  # "#bad", "#cafe", "#decade": maybe a tag of words, unless one letter repeated


def _blank_colour(match: re.Match[str]) -> str:
    found = match.group(0)
    if _HASHTAG.fullmatch(found) and len(set(found[1:])) > 1:
        return found
    return " " * len(found)


def _blank_artifact(match: re.Match[str]) -> str:
    """A Claude artifact blanked but for its title (the name the artifact is shown under) and, for a document, its
    body."""
    tag = match.group(1)
    title = _ARTIFACT_TITLE.search(tag)
    opening = " " * len(tag)
    if title is not None:
        opening = opening[: title.start(1)] + title.group(1) + opening[title.end(1) :]
    body = match.group(2) if _is_document(match) else _blank_text(match.group(2))
    return opening + body + " " * len(match.group(3))


def _is_document(artifact: re.Match[str]) -> bool:
    kind = _ARTIFACT_TYPE.search(artifact.group(1))
    return kind is not None and kind.group(1).strip().casefold() in DOCUMENT_TYPES


def _blank_tool_use(match: re.Match[str]) -> str:
    """A rendered tool call blanked whole, but for an `artifacts` call's title and a document's content, kept in
    place with their JSON escapes blanked (an escaped newline reads as a space and a newline: same length)."""
    line = match.group(0)
    out = [" "] * len(line)
    for key, value in _artifact_fields(match.group(1), match.group(2)):
        encoded = json.dumps(value, ensure_ascii=False)  # as the ingest wrote it (json.dumps, ensure_ascii=False)
        at = line.find(f'"{key}": {encoded}')
        if at >= 0:
            start = at + len(f'"{key}": ') + 1
            end = start + len(encoded) - 2
            out[start:end] = _JSON_ESCAPE.sub(_unescape_blank, line[start:end])
    return "".join(out)


def _artifact_fields(name: str, tool_input: str) -> list[tuple[str, str]]:
    """What of an `artifacts` tool call is prose: its title, and its content where it makes a document."""
    if name.strip() != "artifacts":
        return []
    try:
        found = json.loads(tool_input)
    except ValueError:
        return []
    if not isinstance(found, dict):
        return []
    kind = found.get("type")
    document = isinstance(kind, str) and kind.strip().casefold() in DOCUMENT_TYPES
    return [(k, v) for k, v in found.items() if isinstance(v, str) and (k == "title" or (k == "content" and document))]


def _unescape_blank(match: re.Match[str]) -> str:
    """A JSON escape as prose of the same length: a newline after a space, a quote beside the word it quotes."""
    escape = match.group(0)
    if escape == "\\n":
        return " \n"
    if escape == '\\"':
        opens = match.string[match.end() : match.end() + 1].isalnum()
        return ' "' if opens else '" '
    return " " * len(escape)


_QUOTED_NAME = re.compile(r"[^\W\d_][^\W\d]*_[^\W\d]*[^\W\d_]")  # snake_case or Name_V, letters only
_EMPTY_CALL = re.compile(r"[^\W\d_]\w{2,}\(\)")  # a lone name called with nothing: "coalesce()", "input_define()"
_OPEN_QUOTES, _CLOSE_QUOTES = '"“', '"”'


def _blank_unquoted(text: str) -> Callable[[re.Match[str]], str]:
    """`_blank`, but an identifier of letters and underscores that fills a pair of double quotes stays."""

    def replace(match: re.Match[str]) -> str:
        start, end = match.span()
        quoted = start > 0 and end < len(text) and text[start - 1] in _OPEN_QUOTES and text[end] in _CLOSE_QUOTES
        if quoted and _QUOTED_NAME.fullmatch(match.group(0)):
            return match.group(0)
        if _EMPTY_CALL.fullmatch(match.group(0)):
            return match.group(0)  # "**repartition()**:", "using number_to_hex()": a function named in prose
        return _blank(match)

    return replace


def _sub(pattern: re.Pattern[str], text: str, replace: Callable[[re.Match[str]], str] = _blank) -> str:
    return pattern.sub(replace, text)


def prose(text: str, *, table_rows: bool = False, quoted_names: bool = False) -> str:
    """The message with everything that is not prose blanked out; same length, same newlines. `table_rows`:
    blank every markdown table row too (not only rows of numbers); `quoted_names`: keep an identifier quoted
    alone ("Multiplication_V")."""
    if not text:
        return text
    if "<ant" in text or "[thinking]" in text:
        text = _sub(_ANT_THINKING, text)
        text = _sub(_ARTIFACT, text, _blank_artifact)
    if "[tool_" in text:
        text = _sub(_TOOL_USE, text, _blank_tool_use)
        text = _sub(_TOOL_RESULT, text)
    if "```" in text or "~~~" in text:
        text = _sub(_FENCE, text)
    if "`" in text:
        text = _sub(_INLINE_CODE, text)
    console = console_spans(text)  # read on the lines as written: the masks below would cut a log's lines apart
    if _HEX_DIGITS.search(text) is not None:
        text = _sub(_HEX_COLOUR, text, _blank_colour)
    if "[image" in text:
        text = _sub(_IMAGE, text)
    if "://" in text or "www." in text:
        text = _sub(_URL, text)
    if "@" in text:
        text = _sub(_EMAIL, text)
    if "<" in text or "&" in text:
        text = _sub(_TAG, text)
    if "](" in text:
        text = _sub(_MD_LINK, text)
    if "【" in text or "[" in text:
        text = _sub(_CITATION, text)
        if "[" in text:
            text = _sub(_SLOT, text)
    if "\\" in text or "$$" in text:
        text = _sub(_LATEX, text)
    if table_rows and "|" in text:
        text = _sub(_TABLE_ROW, text)
    text = _mask_lines(text)
    text = blank_spans(text, console)  # after the line masks: a row of data is read whole, its time stamp too
    # The checks below hold a character every match of the pattern needs (most messages have none; a pattern tried
    # at every position of a message costs more than a scan for them): see _may_hold_path and the others.
    if _may_hold_path(text):
        text = _sub(_PATH, text)
    if _may_hold_identifier(text):
        text = _sub(_IDENTIFIER, text, _blank_unquoted(text) if quoted_names else _blank)
    text = _GLUED_SENTENCE.sub("\n", text)
    return _sub(_MD_MARK, text) if _MD_MARK_NEEDS.search(text) is not None else text


_DOT_WORD = re.compile(r"\.\w")  # "file.py", "df.select", "a.b.c": a dot with a word character after it
_CAMEL = re.compile(r"[a-z][A-Z]")
# A markdown mark holds one of these: a heading's #, a quote's >, a bullet (-, *, +), a number's dot or parenthesis,
# emphasis (*, _), a strike-through's ~.
_MD_MARK_NEEDS = re.compile(r"[#>*+_~-]|\d[.)]")


def _may_hold_path(text: str) -> bool:
    """Whether `_PATH` can match: a path holds a slash or a backslash; a file name a dot before its extension."""
    return "/" in text or "\\" in text or _DOT_WORD.search(text) is not None


def _may_hold_identifier(text: str) -> bool:
    """Whether `_IDENTIFIER` can match: a call holds "(", snake_case "_", a dotted name a dot before a word
    character, an exception class its kind's name, camelCase a small letter before a capital."""
    return (
        "(" in text
        or "_" in text
        or _DOT_WORD.search(text) is not None
        or _CAMEL.search(text) is not None
        or "Error" in text
        or "Exception" in text
        or "Warning" in text
    )


def _mask_lines(text: str) -> str:
    lines = text.split("\n")
    in_trace = False
    for i, line in enumerate(lines):
        stripped = line.strip()
        if not stripped:
            in_trace = False
            continue
        if stripped.startswith("Traceback (most recent call last)"):
            in_trace = True
        elif in_trace and not line[:1].isspace() and not _TRACE_LINE.match(line) and not _BARE_KIND.match(line):
            in_trace = False  # a trace is its indented frames and trace lines: the next plain line is prose
        if in_trace or _is_code_line(line):
            lines[i] = " " * len(line)
    _mask_cell_columns(lines)
    _mask_delimited_rows(lines)
    return "\n".join(lines)


# A row of delimited values: cells split by a comma, a semicolon, a tab or a run of spaces (a list's bullet or number
# before it set aside). A cell is short, of one or two words; a cell holding a number opens with a digit ("15K",
# "25Kbigdata", "$40"). Repeats are possessive: no backtracking on a line of separators.
_LIST_MARK = re.compile(r"(?:[-*+]|\d{1,3}[.)])[ \t]++")
# a comma between a digit and three more is a thousands separator ("$365,700"), no delimiter
_CELL_SPLIT = re.compile(r"[ ]*+(?:,(?!(?<=\d,)\d{3}(?!\d))|[;\t])[ \t]*+|[ ]{2,}+")
_NUMBER_CELL = re.compile(r"[-+$€£]?\d")
ROW_CELLS = 3  # a row has this many cells or more
CELL_CHARS = 24  # a cell is this long at most, and of two words at most
ROW_NUMBERS = 2  # a row of this many cells opening with a number or more (a third of them at least) is data, and
# so are two rows of a run with a number each ("John\t25\tNYC", "Mary\t31\tLA")


def _mask_delimited_rows(lines: list[str]) -> None:
    """Blank rows of delimited values ("107,bb, 15Kjava", "104, cc,35K, Testing", "John\\t25\\tNYC") and the rows
    around them (a header, "id, name,sal,dept"): a run of lines each split in ROW_CELLS short cells or more, one of
    them holding ROW_NUMBERS numbers or more. A sentence with a number or a list in it ("I ran 3 races in Paris,
    Rome and Oslo", "Spark, Hive, Kafka") has a longer cell, or no numbers."""
    run: list[int] = []
    data = False
    with_number = 0  # rows of the run with a number in them
    for i, line in enumerate([*lines, ""]):
        cells = _cells(line) if i < len(lines) else None
        header = _field_header(line) if i < len(lines) else 0
        if header:
            # a row of a program's field names is a header with or without its rows: blanked alone, the words
            # after its last cell stay ("... topping.type using explode function")
            lines[i] = " " * header + line[header:]
            cells = None
        if cells is not None:
            run.append(i)
            numbers = sum(1 for cell in cells if _NUMBER_CELL.match(cell))
            with_number += numbers > 0
            data = data or (numbers >= ROW_NUMBERS and numbers * 3 >= len(cells)) or with_number >= ROW_NUMBERS
            continue
        if data:
            for j in run:
                lines[j] = " " * len(lines[j])
            if run[0] > 0:
                _mask_lead_in(lines, run[0] - 1)
        run, data, with_number = [], False, 0


# A program's field name: a word opening in lower case, joined by dots or underscores ("id", "ppu", "batter.id",
# "firstName"); a field path ("batter.id", "topping.type") is a program's, never a sentence's.
_FIELD = re.compile(r"[a-z][A-Za-z0-9]*+(?:[._][A-Za-z0-9]++)*+")
_FIELD_PATH = re.compile(r"[a-z][A-Za-z0-9]*+\.[A-Za-z][A-Za-z0-9]*+")
_DELIMITER = re.compile(r"[ ]*+[,;\t][ \t]*+")
_FIRST_WORD = re.compile(r"\S++")


def _field_header(line: str) -> int:
    """The end of a header row of field names at the line's start ("id, type, name, ppu, batter.id,batter.type,
    topping.id, topping.type", "id,name,sal,dept"), or 0: ROW_CELLS fields or more, each one token, and written as a
    program writes them, one a field path or every delimiter without a space. Its cells are column names, never
    prose, with or without data rows below; a list of names in a sentence ("Spark, Hive, Kafka", "apples, pears,
    plums") has capitals, spaces after its commas and no dotted words. The last cell may run on into words ("...
    topping.type using explode function"): the row ends with the cell's first word."""
    stripped = line.lstrip()
    if "," not in stripped and ";" not in stripped and "\t" not in stripped:
        return 0
    count, tight, path, at = 0, True, False, 0
    for delimiter in _DELIMITER.finditer(stripped):
        cell = stripped[at : delimiter.start()]
        if _FIELD.fullmatch(cell) is None:
            return 0  # most lines with a comma end here, at their first cell
        count += 1
        tight = tight and delimiter.group(0) in (",", ";", "\t")
        path = path or _FIELD_PATH.fullmatch(cell) is not None
        at = delimiter.end()
    last = _FIRST_WORD.match(stripped, at)
    if last is None or _FIELD.fullmatch(last.group(0)) is None or count + 1 < ROW_CELLS:
        return 0  # "a,b,c,": a closing delimiter
    if not tight and not path and _FIELD_PATH.fullmatch(last.group(0)) is None:
        return 0
    return len(line) - len(stripped) + last.end()


def _mask_lead_in(lines: list[str], i: int) -> None:
    """The line above rows of data may open with words and go on with cells, its line break lost in the paste
    ("pyspark code for table1:emp_dept id, name,sal,dept 101,aa,25Kbigdata"): its cells are blanked, the words
    before the first delimiter stay."""
    line = lines[i]
    first = _CELL_SPLIT.search(line.strip())
    if first is None:
        return
    start = len(line) - len(line.lstrip()) + first.start()
    if _cells("a," + line[start:].lstrip(" \t,;")) is not None:  # "a,": the words before stand for one cell
        lines[i] = line[:start] + " " * (len(line) - start)


def _cells(line: str) -> list[str] | None:
    """The cells of a row of delimited values, or None when the line is not one."""
    stripped = line.strip()
    if len(stripped) < 5 or stripped.endswith(("?", "!")):
        return None
    if "," not in stripped and ";" not in stripped and "\t" not in stripped and "  " not in stripped:
        return None
    if stripped.endswith(".") and stripped[-2:-1].isalpha():
        return None  # a sentence's end
    mark = _LIST_MARK.match(stripped)
    cells = _CELL_SPLIT.split(stripped[mark.end() :] if mark else stripped)
    if cells and not cells[-1]:
        cells.pop()  # "a,b,c,": a closing delimiter
    if len(cells) < ROW_CELLS:
        return None
    if any(len(cell) > CELL_CHARS or cell.count(" ") > 1 for cell in cells):
        return None
    return cells


CELL_RUN = 6  # this many short lines in a row are a table pasted one cell per line


def _mask_cell_columns(lines: list[str]) -> None:
    """Blank runs of CELL_RUN or more lines of one or two short words without a sentence's end ("Mumbai", "F",
    "21", "Delhi", ...): a table or a data frame pasted one cell per line, not prose."""
    start = None
    for i, line in enumerate([*lines, "a line long enough to be a sentence of prose."]):
        stripped = line.strip()
        cell = 0 < len(stripped) <= 16 and stripped.count(" ") <= 1 and stripped[-1] not in ".?!:"
        if cell:
            start = i if start is None else start
            continue
        if start is not None and i - start >= CELL_RUN:
            for j in range(start, i):
                lines[j] = " " * len(lines[j])
        start = None


def _is_code_line(line: str) -> bool:
    share = _symbol_share(line)
    if share > 0.3 and len(line.strip()) >= 8:
        return True
    first = line.lstrip()[:1]
    if (first in "|:-+" or first.isdigit()) and (_TABLE_RULE.match(line) or _NUMBER_ROW.match(line)):
        return True
    if _TRACE_LINE.match(line):
        return True
    # "From my experience, ..." or "Select the best option" are prose: a code line opening with a word has few
    # words, or symbols, or no sentence punctuation at its end.
    prose_like = line.rstrip().endswith((".", "?", "!")) and share <= 0.12 and len(line.split()) > 3
    if _CODE_START.match(line) and not prose_like:
        return True
    return share > 0.06 and _CODE_END.search(line) is not None


_SYMBOLS = "{}()[]<>=;:+*/\\|&^%$#@!~`\"'._-"
_DROP_SYMBOLS = str.maketrans("", "", _SYMBOLS)


def _symbol_share(line: str) -> float:
    stripped = line.strip()
    if not stripped:
        return 0.0
    symbols = len(stripped) - len(stripped.translate(_DROP_SYMBOLS))
    if not symbols:
        return 0.0
    letters = len(_NOT_LETTER.sub("", stripped))  # what is left is the letters (no list of them made)
    return symbols / (symbols + letters)


def unicode_view(text: str) -> tuple[str, list[int] | None]:
    """(NFC text without zero-width characters, map from its offsets to `text`'s), or (text, None) when the
    text is already so: the common case costs one check."""
    if unicodedata.is_normalized("NFC", text) and not _ZERO_WIDTH.search(text):
        return text, None
    out: list[str] = []
    offsets: list[int] = []
    cluster_start = 0
    cluster = ""
    for i, char in enumerate(text):
        if _ZERO_WIDTH.match(char):
            continue
        if cluster and unicodedata.combining(char):
            cluster += char
            continue
        if cluster:
            _flush(out, offsets, cluster, cluster_start)
        cluster, cluster_start = char, i
    if cluster:
        _flush(out, offsets, cluster, cluster_start)
    offsets.append(len(text))
    return "".join(out), offsets


def _flush(out: list[str], offsets: list[int], cluster: str, start: int) -> None:
    normal = unicodedata.normalize("NFC", cluster)
    out.append(normal)
    offsets.extend([start] * len(normal))
