"""How the read-only commands print: a text table that fits the terminal (values shortened in their middle, or one
record per block), one-line cells, and JSON on stdout with --json (flows/terminal.py escapes what a terminal would
run). Used by every `chatmem` command that prints rows (flows/cli_inspect.py, cli_topics.py, cli_graph.py, ...).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import click
from click.decorators import FC

from flows.terminal import safe_json, safe_line

HEADING_MIN = 12  # a column's heading is never cut shorter ("messa…rted" says nothing; "messag…serted" does)
CELL_WIDTH = 60  # a cell outside a table (a line of `concepts`, `garden`) is shortened to this; --json: whole
WHOLE_COLUMNS = frozenset({"resume", "rerun_hint"})  # commands to copy: never cut
JSON_OPTION = click.option("--json", "as_json", is_flag=True, help="Machine-readable JSON on stdout.")


def count_option(flag: str, *, default: int, help_text: str) -> Callable[[FC], FC]:
    """How many rows or items a command shows in text (`--limit`, `--evidence`): a whole number >= 0, 0 meaning
    all, its default shown in --help. One definition, so that every such count reads and checks alike."""
    return click.option(flag, default=default, type=click.IntRange(min=0), show_default=True, help=help_text)


def emit(data: object) -> None:
    click.echo(safe_json(data))


def shorten(text: str, width: int) -> str:
    """`text` in at most `width` characters, its middle replaced by "…": the start and the end (a file name at
    the end of a path, a reason at the end of an error) both stay."""
    if len(text) <= width:
        return text
    if width <= 1:
        return "…"[:width]
    tail = (width - 1) // 2
    return text[: width - 1 - tail] + "…" + (text[-tail:] if tail else "")


def shorten_words(text: str, width: int) -> str:
    """`text` in at most `width` characters, cut at its end after a whole item of a comma-separated list (else a
    whole word), with "…": for a list of words (a topic's keywords), where a cut in the middle of one
    ("bod…xercises") names no word at all."""
    if len(text) <= width:
        return text
    room = text[: max(width - 1, 0)]
    if not text[len(room) :].startswith((",", ", ")):  # the cut falls inside an item ("broadcast join") or a word
        # back to the end of the item before, else of the word before
        end = room.rfind(", ")
        room = room[:end] if end > 0 else room[: max(room.rfind(" "), 0)]
    return room.rstrip(" ,;") + "…" if room.strip() else shorten(text, width)


def cell(value: object, *, whole: bool = False, width: int = CELL_WIDTH) -> str:
    """One cell: one line, control and bidi characters escaped (flows/terminal.py), its middle shortened to
    `width`."""
    text = "" if value is None else safe_line(str(value))
    return text if whole else shorten(text, width)


def terminal_width() -> int:
    """The terminal's columns ($COLUMNS first); 120 when the output is no terminal (a pipe, a file)."""
    import shutil

    return max(shutil.get_terminal_size((120, 24)).columns, 40)


def fit(widths: list[int], fixed: list[bool], total: int, minimum: list[int]) -> list[int] | None:
    """Column widths whose sum is at most `total`: the widest shortenable columns are cut first, to a common
    cap (never below `minimum`); `fixed` columns keep their width. None when even the minimums do not fit."""
    if sum(widths) <= total:
        return widths
    free = [i for i, f in enumerate(fixed) if not f]
    room = total - sum(w for w, f in zip(widths, fixed, strict=True) if f)
    if sum(min(widths[i], minimum[i]) for i in free) > room:
        return None
    low, high = 0, max((widths[i] for i in free), default=0)
    while low < high:  # the largest cap under which the shortenable columns fit in `room`
        cap = (low + high + 1) // 2
        if sum(min(widths[i], max(cap, minimum[i])) for i in free) <= room:
            low = cap
        else:
            high = cap - 1
    return [w if f else min(w, max(low, minimum[i])) for i, (w, f) in enumerate(zip(widths, fixed, strict=True))]


def print_table(
    rows: list[dict[str, Any]], cols: list[str] | None = None, *, whole: bool = False, word_cut: Iterable[str] = ()
) -> None:
    """A text table that fits the terminal: the widest columns are shortened in their middle (headings too, to
    no less than HEADING_MIN characters; values to no less than 24). A table that cannot fit so (with `whole`: that
    cannot fit without shortening a value, for tables whose values are the point, such as failure reasons; or
    whose shortening would make two different values of a column look the same) is shown
    one record per block, a `column  value` line each (psql's expanded display), a long value wrapped over up
    to EXPANDED_LINES lines (all of it with `whole`) and shortened in its middle beyond that; --json always has
    every value whole. The `word_cut` columns (lists of words) are cut at their end on a word boundary instead
    (`shorten_words`)."""
    if not rows:
        click.echo("(no rows)")
        return
    cols = cols or list(rows[0])
    texts = [[cell(row.get(c), whole=True) for c in cols] for row in rows]
    values = [max(len(r[i]) for r in texts) for i in range(len(cols))]
    widths = [max(len(c), v) for c, v in zip(cols, values, strict=True)]
    fixed = [c in WHOLE_COLUMNS for c in cols]
    minimum = [max(min(v, 24), min(len(c), HEADING_MIN), 1) for c, v in zip(cols, values, strict=True)]
    columns = terminal_width()
    fitted = fit(widths, fixed, columns - 2 * (len(cols) - 1), minimum)
    if fitted is not None and whole and any(f < v for f, v in zip(fitted, values, strict=True)):
        fitted = None  # a value would lose its middle: one record per block instead
    cuts = [shorten_words if c in set(word_cut) else shorten for c in cols]
    if fitted is not None and not all(_still_distinct([r[i] for r in texts], w, cuts[i]) for i, w in enumerate(fitted)):
        fitted = None  # two different values would look the same (two paths cut to one): one record per block
    if fitted is None:
        label = max(len(c) for c in cols)
        room = max(columns - label - 2, 20)
        for n, r in enumerate(texts):
            click.echo(f"-[ {n + 1} ]" + "-" * max(columns - 8 - len(str(n + 1)), 0))
            for i, c in enumerate(cols):
                lines = [r[i]] if fixed[i] else wrapped(r[i], room, WHOLE_LINES if whole else EXPANDED_LINES)
                click.echo(f"{c.ljust(label)}  {lines[0]}".rstrip())
                for line in lines[1:]:
                    click.echo(f"{' ' * label}  {line}".rstrip())
        return
    heads = [shorten(c, w) for c, w in zip(cols, fitted, strict=True)]
    cells = [[v if fixed[i] else cuts[i](v, fitted[i]) for i, v in enumerate(r)] for r in texts]
    click.echo("  ".join(c.ljust(w) for c, w in zip(heads, fitted, strict=True)).rstrip())
    for r in cells:
        click.echo("  ".join(v.ljust(w) for v, w in zip(r, fitted, strict=True)).rstrip())


def _still_distinct(column: list[str], width: int, cut: Callable[[str, int], str] = shorten) -> bool:
    """Values that differ still differ once shortened to `width` (the part that tells two paths apart is often
    their middle: `.../spark-first/conversations.json` and `.../rainchinchao/conversations.json`)."""
    distinct = set(column)
    return len({cut(v, width) for v in distinct}) == len(distinct)


WHOLE_LINES = 1000  # a table whose values are the point (`whole`: failure reasons) wraps them whole
EXPANDED_LINES = 6  # lines a value may take in the expanded display before its middle is shortened


def wrapped(text: str, width: int, lines: int = EXPANDED_LINES) -> list[str]:
    """`text` over at most `lines` lines of `width` (its middle shortened first when longer), cut at spaces
    where it can be."""
    import textwrap

    text = shorten(text, width * lines - 4 * lines)  # room for the lines' ragged ends
    return textwrap.wrap(text, width, break_on_hyphens=False) or [""]
