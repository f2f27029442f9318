"""Archive text on a terminal: control and bidirectional characters are shown escaped, never obeyed.

Chat text is data from elsewhere. Printed raw, an ESC sequence in a message recolours, moves the cursor,
retitles the window or hides what follows, and a right-to-left override reorders the line so that it reads
differently from what is stored (the "Trojan Source" trick). Every CLI path that prints stored text goes
through `safe` (or `safe_line`, `cell`): such a character appears as its Python escape (`\\x1b`, `\\u202e`),
visible and harmless. `--json` output needs nothing: JSON escapes control characters itself, and the bidi
controls a JSON viewer may obey are escaped there too (see `safe_json`).
"""

from __future__ import annotations

import json
import re
import unicodedata

# Bidirectional formatting characters: embeddings, overrides, isolates and the implicit marks.
BIDI_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c")
_KEEP = frozenset("\n\t")
_UNSAFE = re.compile(
    "[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c\u2028\u2029]"
)


def _escape(match: re.Match[str]) -> str:
    char = match.group(0)
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def is_unsafe(char: str) -> bool:
    """A character a terminal would act on instead of showing: C0/C1 controls (not newline or tab), bidi
    controls, and the Unicode line and paragraph separators."""
    if char in _KEEP:
        return False
    return char in BIDI_CONTROLS or unicodedata.category(char) == "Cc" or char in "\u2028\u2029"


def safe(text: str) -> str:
    """The text with every unsafe character escaped; newlines and tabs kept. Line ends are made plain first
    (CRLF and a lone CR read as one newline), so Windows line ends do not print as `\\x0d`."""
    return _UNSAFE.sub(_escape, text.replace("\r\n", "\n").replace("\r", "\n"))


def safe_line(text: str) -> str:
    """One line: whitespace runs (newlines included) folded to one space, then `safe`."""
    return safe(" ".join(text.split()))


def safe_json(data: object) -> str:
    """JSON for stdout: JSON escapes control characters itself; bidi controls are escaped too."""
    text = json.dumps(data, indent=2, default=str)
    return re.sub("[\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c]", lambda m: f"\\u{ord(m.group(0)):04x}", text)
