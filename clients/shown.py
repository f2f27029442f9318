"""What a reader is shown of a message: its text without the markup a reader has no use for. Recall's pieces show
it and recall's keys are made of it (memory/graph.py, memory/recall.py); the LLM extractor's prompt shows it
(extract/prompts.py), the MCP server's `get_conversation` returns it (memory/queries.py), and the models that find
topics read it (`read_text`: the embed stage's segment vectors, the cluster stage's topic texts and its LLM labels'
excerpts), so a topic is found from what the conversation says, not from a model's notes.

The archive keeps every message as the export wrote it (ingest renders a model's reasoning and tool blocks closed,
so they can be told apart: ingest/claude.py, ingest/chatgpt_content.py); the prose cleaner blanks that markup for
the offline extractor and the topic labels (clients/prose.py), keeping offsets. Here the text is rewritten:

- a model's private notes (Claude's `<antThinking>` and thinking blocks, ChatGPT's reasoning turns) are left out; a
  message that is nothing else reads `THINKING_ONLY`;
- a Claude artifact (`<antArtifact ... title="T">body</antArtifact>`, or an `artifacts` tool call) reads
  "[artifact: T]" with its body: a document's as it is, code fenced in its language and cut to `CODE_LINES` lines
  with a line saying how many more there are (the conversation holds it whole);
- another tool call, and what a tool returned (a fetched web page), read as one line cut to `TOOL_CHARS` characters;
- a fenced code block of any message (``` or ~~~) longer than `CODE_LINES` lines is cut as an artifact's code is,
  with a line saying how many more there are: recall's budget goes to what was said about the code, and the
  archive holds it whole (a user's pasted code too: the reader is shown its first lines and knows where the rest is).

The lexical and dense keys are made of the same text (memory/graph.py), so what recall finds a message by is what it
shows: a name only the model's notes hold does not bring the message back (nor one only in the 13th line of a code
block: the price of a bounded piece). Plain text, the common case, costs five substring checks.
"""

from __future__ import annotations

import json
import re

from clients.prose import (
    ARTIFACT,
    ARTIFACT_LANGUAGES,
    ARTIFACT_TITLE,
    ARTIFACT_TYPE,
    DOCUMENT_TYPES,
    THINKING,
    TOOL_RESULT,
    TOOL_USE,
)

THINKING_ONLY = "[thinking, not shown]"
CODE_LINES = 12  # an artifact's or a fenced block's code shown; the rest is counted in a line under it
TOOL_CHARS = 200  # a tool call's input or a tool's result shown, on one line
_LANGUAGE = re.compile(r"""\blanguage\s*=\s*["']([^"'<>]{1,40})["']""")
_BLANK_LINES = re.compile(r"\n[ \t]*(?:\n[ \t]*){2,}")
# A fenced code block: its opening fence line, its body, and its closing fence (or the end of a message cut short).
_FENCED = re.compile(r"^([ \t]*(```|~~~)[^\n]*)\n(.*?)(^[ \t]*\2[ \t]*$|\Z)", re.DOTALL | re.MULTILINE)


def shown_text(text: str, *, notes_only: str = THINKING_ONLY) -> str:
    """The message as recall shows it (see the module docstring); plain text comes back as it is. A message that is
    nothing but a model's notes reads `notes_only`."""
    if "<ant" not in text and "[thinking]" not in text and "[tool_" not in text:
        return _cut_fences(text)
    out = THINKING.sub("", text)
    out = ARTIFACT.sub(_artifact, out)
    if "[tool_" in out:
        out = TOOL_USE.sub(_tool_use, out)
        out = TOOL_RESULT.sub(_tool_result, out)
    out = _cut_fences(out)
    out = _BLANK_LINES.sub("\n\n", out).strip()
    return out or notes_only


def read_text(text: str) -> str:
    """What a model that finds topics reads of a message: what recall shows of it, and nothing for a message that is
    only a model's notes (a ChatGPT reasoning turn), which then weighs nothing in its segment's vector."""
    return shown_text(text, notes_only="")


def _cut_fences(text: str) -> str:
    return _FENCED.sub(_fenced, text) if "```" in text or "~~~" in text else text


def _fenced(match: re.Match[str]) -> str:
    opening, body, closing = match.group(1), match.group(3), match.group(4)
    lines = body.removesuffix("\n").split("\n")
    more = len(lines) - CODE_LINES
    if more <= 0:
        return match.group(0)
    fence = closing.rstrip() if closing else match.group(2)
    code = "\n".join(lines[:CODE_LINES])
    return f"{opening}\n{code}\n{fence}\n[… {more} more line(s) of code not shown]"


def _artifact(match: re.Match[str]) -> str:
    tag = match.group(1)
    title = ARTIFACT_TITLE.search(tag)
    kind = ARTIFACT_TYPE.search(tag)
    language = _LANGUAGE.search(tag)
    return artifact(
        title.group(1) if title else "",
        kind.group(1) if kind else "",
        match.group(2),
        language.group(1) if language else "",
    )


def artifact(title: str, kind: str, body: str, language: str = "") -> str:
    """An artifact as recall shows it: "[artifact: TITLE]", then a document's text, or its code fenced and cut."""
    label = f"[artifact: {title.strip()}]" if title.strip() else "[artifact]"
    body = body.strip("\n")
    kind = kind.strip().casefold()
    if kind in DOCUMENT_TYPES or not body.strip():
        return f"{label}\n{body}" if body.strip() else label
    lines = body.split("\n")
    fence = ARTIFACT_LANGUAGES[kind][1] if kind in ARTIFACT_LANGUAGES else language.strip().casefold()
    more = len(lines) - CODE_LINES
    code = "\n".join(lines[:CODE_LINES])
    rest = f"\n[… {more} more line(s) of code not shown]" if more > 0 else ""
    return f"{label}\n```{fence}\n{code}\n```{rest}"


def _tool_use(match: re.Match[str]) -> str:
    name, tool_input = match.group(1).strip(), match.group(2)
    if name == "artifacts":
        try:
            found = json.loads(tool_input)
        except ValueError:
            found = None
        if isinstance(found, dict):
            return artifact(*(str(found.get(k) or "") for k in ("title", "type", "content", "language")))
    return f"[tool_use {name}] {_one_line(tool_input)}"


def _tool_result(match: re.Match[str]) -> str:
    name = match.group(1).strip()
    return f"[tool_result{' ' + name if name else ''}] {_one_line(match.group(2))}".rstrip()


def _one_line(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= TOOL_CHARS else flat[:TOOL_CHARS].rstrip() + "…"
