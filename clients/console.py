"""Console output pasted as prose: logs, stack frames, counter dumps, shell sessions and progress bars.

Part of the prose view (clients/prose.py): a user pastes what a terminal printed without a code fence, and its words
are no subjects of the conversation ("FileSystem ounter" came from a Hadoop job's WARN line, "Job Counters" from its
counter dump). `console_spans` reads the message's lines as they were written, before any other mask: a tag mask
takes a Java frame's "<init>" for HTML and a path mask a "23/04/10" date for a path, and a line blanked as code
would cut a run of log lines in two. Its spans are blanked after the line masks (prose._mask_lines), so the rules
that read rows of data ("01-09-22 00:09:23,24,23") still see them whole.

A line is one of:
- a log line, alone (`LOG`): a date and a time to the second with a level word after it ("23/04/10 07:52:54 WARN
  mapreduce.Counters: ...", "2024-03-01 12:41:03,123 - app - ERROR - ...", "04-12 10:00:00.123 1234 E Tag: ..."),
  glog's "I0412 10:00:00.123", an access log's "1.2.3.4 - - [10/Oct/2000:13:55:36 -0700] "GET ...", Python's
  "WARNING:root:...", "npm ERR! ...", a compiler's "main.c:3:5: error: ...", log4j's level and logger without a date
  (Spark's "ERROR Executor: ..."), gradle's "> Task :app:compileJava", Keras' "loss: 0.29 - accuracy: 0.91"; a
  progress bar ("45%|████",
  "[=====>    ]", "━━━━━━ 1.2/3.4 MB"); a Java or JavaScript stack frame ("at org.x.Y.run(Y.java:12)", written
  with spaces where it went through OCR: "at org. apache. sqoop. tool. ExportTool. run (ExportTool. java: 99)"),
  blanked frame by frame, so a question written after the frames on the same line stays;
- a log line in a run (`RUN`): one that opens with a time to the second or with a level word ("INFO: connection
  open", "[WARN] ..."), or a tool's ("Epoch 3/10", docker compose's "web_1  | ...", pip's "Collecting pandas"): a
  log is several such lines, and one alone is somebody's sentence ("ERROR: I forgot the key", "12:41:05 is when it
  stopped");
- a counter (`COUNTER`): "Failed map tasks=1", "GC time elapsed (ms)=94": words, "=", a number; a dump of
  COUNTER_RUN of them, or one beside another log line, is output ("rent=1200" and "food=300" alone are a budget);
- a shell or REPL prompt with its command ("user@host:~/x$ hdfs dfs -ls", "PS C:\\> pip install", "mysql> ...",
  ">>> "), and the lines it printed after it, to a blank line or a line that reads as the user's again (a question,
  "I", "why", "please" first).

A run is the log lines of a block of lines in a row, with a short line between two of them read as part of it (a
counter group's "Job Counters", "Map-Reduce Framework", Keras' "Epoch 2/10", "Export job failed!"): it is output
where it holds LOG_RUN log lines, one of them no counter, or COUNTER_RUN counters. A date or the word "error" in a
sentence ("On 2024-03-01 12:41:03 the ERROR page showed up again") opens no line as a log does, and stays.

Programs and tables pasted without a fence are read in blocks of lines (clients/console_blocks.py), and blanked
here with the rest.

One pattern reads a line's opening for every kind told by it (`_OPENING`): one match a line. Every pattern is
linear in the line (bounded or disjoint repeats).
"""

from __future__ import annotations

import re

from clients.console_blocks import PERSON_FIRST, code_lines, table_spans

LOG_RUN = 2  # this many log lines in a row or more are a log
COUNTER_RUN = 3  # this many counters in a row or more are a counter dump
BRIDGE_WORDS = 6  # a line between two log lines with at most this many words is part of the log
OUTPUT_LINES = 400  # a command's output is read this far at most

_LEVEL = r"(?:TRACE|DEBUG|FINE|INFO|NOTICE|WARN|WARNING|ERROR|ERR|SEVERE|FATAL|CRITICAL|CRIT|ALERT|EMERG|VERBOSE)"
# A date and a time to the second (ISO, Hadoop's yy/MM/dd, US and European orders, logcat's MM-dd, syslog's "Mar  1"),
# or a time alone, with its fraction and zone; maybe in brackets.
_STAMP = (
    r"[\[(]?(?:(?:\d{4}[-/.]\d{1,2}[-/.]\d{1,2}|\d{1,2}[-/.]\d{1,2}(?:[-/.]\d{2,4})?),?[T ]\s?"
    r"|[A-Z][a-z]{2} {1,2}\d{1,2},? )?\d{1,2}:\d{2}:\d{2}(?:[.,:]\d{1,9})?(?: ?(?:Z|UTC|[+-]\d{2}:?\d{2}))?[\])]?"
)
# After a stamp, within the line's opening: a level word in capitals, or logcat's one-letter level before its tag.
_LEVEL_AFTER = re.compile(rf"[\s\[(|:-]{_LEVEL}\b|\s[VDIWEF]\s+[\w.$-]+\s*:|\s[VDIWEF]/[\w.$-]+")
LEVEL_WITHIN = 80  # characters after the stamp a level word is looked for in
_LOG_ALONE = (
    r"\s*(?:[IWEF]\d{4} \d{2}:\d{2}:\d{2}"  # glog
    r"|\S+ \S+ \S+ \[\d{1,2}/[A-Z][a-z]{2}/\d{4}:\d{2}:\d{2}:\d{2} [+-]\d{4}\] \""  # an access log
    r"|(?:DEBUG|INFO|WARNING|ERROR|CRITICAL):[\w.]*:"  # Python's logging.basicConfig
    r"|npm (?:ERR!|WARN|notice) "
    r"|Exception in thread \"[^\"\n]{1,80}\" "  # Java's uncaught exception
    # a compiler's diagnostic: "main.c:3:5: error: ...", "app.ts(12,5): error TS2322: ..."
    r"|[\w./\\-]{1,200}\.[A-Za-z]{1,5}(?::\d+(?::\d+)?|\(\d+(?:,\d+)?\)): ?(?:fatal error|error|warning)\b"
    # log4j's "%p %c{1}: %m" without its date (Spark, Hadoop): "ERROR Executor: ...", "WARN util.NativeCodeLoader: ..."
    rf"|{_LEVEL} (?:[a-z][\w$]{{0,40}}\.){{0,8}}[A-Z][\w$]{{0,60}}: "
    r"|BUILD (?:SUCCESSFUL|FAILED) in \d|> Task :[\w:-]|FAILURE: Build failed with an exception)"  # gradle's
)
# A line of a tool's output in a run: Keras' "Epoch 3/10", docker compose's
# "web_1  | ..." (a service and its replica before a bar), pip's "Collecting pandas", "Requirement already satisfied:
# x in /path", "Successfully installed a-1.0 b-2.0": each with what follows the word as the tool writes it, so
# "Downloading recent movies is illegal" stays.
_TOOL_LINE = (
    r"\s*(?:Epoch \d{1,6}/\d{1,6}\b|[\w.-]{1,60}[_-]\d{1,3}\s{0,40}\| "
    r"|Collecting [\w.\[\],-]{1,100}(?:[<>=!~]=?[\w.*]{1,40})?(?: \(.{0,200}\))?\s*$"
    r"|(?:Downloading|Using cached) [\w.-]{1,200}\.(?:whl|tar\.gz|zip)\b|Requirement already satisfied: \S{1,200} in "
    r"|Installing collected packages: |Successfully (?:installed|uninstalled|built) [\w.-]{1,100}-\d"
    r"|Building wheels? for [\w.-]{1,100} \(|Found existing installation: \S{1,100} \d)"
)
# Keras' metrics, "1875/1875 - 3s - loss: 0.2900 - accuracy: 0.9170": two "name: number" after " - " or more.
_METRIC = r"\w{1,40}: \d{1,9}(?:\.\d{1,9})?(?:e-?\d{1,3})?"
_METRICS = re.compile(rf"\b{_METRIC}(?: - {_METRIC})+")
_LEVEL_FIRST = rf"\s*[\[(]?{_LEVEL}\b[\])]?[:\s]"
# Progress: bars of block characters; tqdm's "45%|####  |", a bar of "=" in brackets, Spark's "[Stage 3:", a rate with
# an ETA. Looked for only where a line holds what each needs (`_progress`).
_BARS = re.compile(r"[█▉▊▋▌▍▎▏━╸╺■▓▒░]{3}")
_PROGRESS = re.compile(
    r"\d{1,3}(?:\.\d+)?%\s?\|[█▉▊▋▌▍▎▏#▕ -]{0,100}\||\[(?=[^\]\n]{0,200}[=#]{3})[=#>.\- ]{4,200}\]|\[Stage \d+:"
    r"|\d[kKMG]?i?B/s\b.{0,40}\beta\b"
)
_COUNTER = re.compile(r"\s*[A-Za-z][\w ().,/%:-]{0,80}=\s?-?\d[\d.,]{0,30}\s?[A-Za-z%]{0,3}\s*")
# A stack frame: Java's (its location a source file and line, or native), written with spaces where it went through
# OCR ("ExportJobBase. java: 439"), and JavaScript's (a path with line and column); Logback's "~[app.jar:1.0]" after.
_FRAME = re.compile(
    r"\bat (?:async )?[\w$]+(?: ?[./] ?[\w$<>-]+)+ ?"
    r"\((?: ?[\w$-]+ ?\. ?(?:java|scala|kt|groovy|clj|aj) ?: ?\d+ ?|Native Method|Unknown Source)\)"
    r"(?: ~?\[[^\]\n]{0,100}\])?"
    r"|\bat (?:async )?[\w$.<>\[\] ]{1,120}?"
    r"\((?:[\w.:-]*[/\\][^()\s]{0,300}|node:[^()\s]{1,200}|[\w.-]+\.m?[jt]sx?):\d+:\d+\)"
)
# A prompt and its command: a shell's ("$ ls", "user@host:~/x$ ls", "[user@host x]# ls", "PS C:\x> ls", "C:\x>ls",
# zsh's "➜ ") or a REPL's (">>> ", "In [3]: ", "scala> ", "mysql> ", "hive> ", "irb(main):001:0> ").
_PROMPT = (
    r"\s*(?:\([\w.-]{1,40}\) ?)?(?:\$ (?=[\w./~-])|[\w.-]{1,40}@[\w.-]{1,60}:[^\s$#]{0,200} ?[$#] "
    r"|\[[\w.-]{1,40}@[\w.-]{1,60} [^\]\n]{0,200}\][$#] "
    r"|PS [A-Za-z]:\\[^>\n]{0,200}> |[A-Za-z]:\\[^>\n]{0,200}> ?(?=\S)|➜ "
    r"|>>> |In \[\d+\]: |(?:scala|mysql|MariaDB \[[^\]\n]{0,40}\]|hive|sqlite|spark-sql|beeline|cqlsh|grunt|sql|"
    r"postgres|psql)[=>#-]{1,2} |irb\([\w]+\):\d+:\d+> )"
)

# The opening of a line, one pattern for the kinds told by it: one match a line, not one for each kind.
_OPENING = re.compile(
    rf"(?P<stamp>\s*{_STAMP})|(?P<alone>{_LOG_ALONE})|(?P<frame>\s*at )|(?P<level>{_LEVEL_FIRST})"
    rf"|(?P<tool>{_TOOL_LINE})|(?P<prompt>{_PROMPT})"
)

NONE, LOG, RUN, COUNTER, FRAME, PROMPT = range(6)
_LOGGED = frozenset({LOG, RUN, COUNTER, FRAME})


def _kind(line: str) -> int:
    """What a raw line is (see the module docstring)."""
    opening = _OPENING.match(line)
    group = opening.lastgroup if opening is not None else None
    if opening is not None and group == "stamp":
        end = opening.end()
        return LOG if _LEVEL_AFTER.search(line, end - 1, end + LEVEL_WITHIN) else RUN
    if group == "alone" or _progress(line) or (" - " in line and ": " in line and _METRICS.search(line)):
        return LOG
    if opening is not None and group == "frame" and _FRAME.match(line, opening.end() - 3):
        return FRAME
    if group in ("level", "tool"):
        return RUN
    if group == "prompt":
        return PROMPT
    if "=" in line and _COUNTER.fullmatch(line):
        return COUNTER
    return NONE


def _bridge(line: str) -> bool:
    """A short line that may sit inside a log ("Job Counters", "Epoch 2/10", "Export job failed!")."""
    stripped = line.strip()
    return 0 < len(stripped) <= 60 and len(stripped.split()) <= BRIDGE_WORDS and not stripped.endswith((".", "?"))


def _progress(line: str) -> bool:
    """A progress bar's line. A pattern searched through every line costs more than the rest of the rules: it is
    tried only on a line with a character past ASCII (a bar's blocks), a "%", a "[" or a rate's "B/s"."""
    if not line.isascii() and _BARS.search(line):
        return True
    return ("%" in line or "[" in line or "B/s" in line) and _PROGRESS.search(line) is not None


def console_spans(text: str) -> list[tuple[int, int]]:
    """The (start, end) offsets in `text` of what reads as console output, in order; they may touch, never overlap."""
    lines = text.split("\n")
    starts = [0]
    for line in lines[:-1]:
        starts.append(starts[-1] + len(line) + 1)
    kinds = [_kind(line) for line in lines]
    whole = _log_lines(lines, kinds) | _session_lines(lines, kinds) | code_lines(lines)
    spans = table_spans(lines, starts) if "\t" in text or "  " in text else []  # a table's cells are set apart so
    for i, line in enumerate(lines):
        if i in whole:
            spans.append((starts[i], starts[i] + len(line)))
        elif kinds[i] == FRAME or (" at " in line and _FRAME.search(line)):
            spans.extend((starts[i] + m.start(), starts[i] + m.end()) for m in _FRAME.finditer(line))
    return _merged(spans)


def _merged(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The spans in order, those that overlap made one (a table's row may be a program's line too)."""
    out: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if out and start < out[-1][1]:
            out[-1] = (out[-1][0], max(end, out[-1][1]))
        else:
            out.append((start, end))
    return out


def _log_lines(lines: list[str], kinds: list[int]) -> set[int]:
    """The indices of the lines blanked whole as a log's: each LOG line, and each run that is a log (module
    docstring). A frame line is left to its frames (`console_spans`), whatever the run."""
    out = {i for i, kind in enumerate(kinds) if kind == LOG}
    i = 0
    while i < len(lines):
        if kinds[i] not in _LOGGED:
            i += 1
            continue
        block = [i]  # a block opens and closes with a log line; a bridge inside only between two of them
        j = i + 1
        while j < len(lines):
            if kinds[j] in _LOGGED:
                block.append(j)
                j += 1
            elif _bridge(lines[j]) and j + 1 < len(lines) and kinds[j + 1] in _LOGGED:
                block.extend((j, j + 1))
                j += 2
            else:
                break
        logged = [k for k in block if kinds[k] in _LOGGED]
        counters = sum(kinds[k] == COUNTER for k in logged)
        if (len(logged) >= LOG_RUN and counters < len(logged)) or counters >= COUNTER_RUN:
            out.update(k for k in block if kinds[k] != FRAME)
        i = j
    return out


def _session_lines(lines: list[str], kinds: list[int]) -> set[int]:
    """The indices of a shell or REPL session's lines: each prompt, and what the command printed after it."""
    out: set[int] = set()
    i = 0
    while i < len(lines):
        if kinds[i] != PROMPT:
            i += 1
            continue
        out.add(i)
        i += 1
        printed = 0
        while i < len(lines) and printed < OUTPUT_LINES and lines[i].strip() and kinds[i] != PROMPT:
            stripped = lines[i].strip()
            if stripped.endswith("?") or PERSON_FIRST.match(lines[i]):
                break
            out.add(i)
            i += 1
            printed += 1
    return out


def blank_spans(text: str, spans: list[tuple[int, int]]) -> str:
    """`text` with each span's characters but newlines made spaces (same length, same lines)."""
    if not spans:
        return text
    chars = list(text)
    for start, end in spans:
        for k in range(start, end):
            if chars[k] != "\n":
                chars[k] = " "
    return "".join(chars)
