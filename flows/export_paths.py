"""Which of the paths given to `chatmem run` are read as exports.

    rest_of_an_export(paths)              `chatmem run export/*`: the side files of an unzipped export left out
    exports_in_folder(folder, data_dir)   `chatmem run DIR`: the exports in DIR and its subfolders

Both only look at names and first bytes (a zip, or JSON: ingest reads the format from the bytes, never the
name); what they keep is read, and reported, by the ingest stage. Only the standard library is imported here at
the top: `chatmem --help` and a usage error answer at once (flows/cli.py).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

FOLDER_DEPTH = 3  # how many levels of subfolders `chatmem run DIR` looks into (DIR/a/b/c/export.zip)


READ_BESIDE = (".json", ".jsonl", ".zip")  # beside a conversations.json, still read: a file of the user's own


def holds_json_or_zip(path: Path) -> bool:
    """Whether the file's first bytes could start an export (a zip, or JSON: ingest reads the format from the bytes,
    never the name, so a JSONL export named .ndjson or with no suffix is one); unreadable: let ingest say why."""
    from ingest.sources import EMPTY_ZIP_MAGIC, ZIP_MAGIC

    try:
        with path.open("rb") as handle:
            head = handle.read(4096)
    except OSError:
        return True
    body = head.removeprefix(b"\xef\xbb\xbf").lstrip(b" \t\r\n")
    return head[:4] in (ZIP_MAGIC, EMPTY_ZIP_MAGIC) or body[:1] in (b"[", b"{")


def rest_of_an_export(paths: list[str | Path]) -> tuple[list[str | Path], list[str | Path]]:
    """(what to read, what to leave out) of the paths given. `chatmem run export/*` on an unzipped ChatGPT export
    names its conversations.json with everything beside it: user.json, message_feedback.json, chat.html, images,
    folders of images. Those hold no conversations, and read as exports each would fail the run. Left out: a known
    side file, a folder, or a file neither named .json/.jsonl/.zip nor starting as JSON or a zip does (an image,
    an HTML page), sitting in the folder of a conversations.json that is given too. Everything else is read as
    given (a file alone is never left out)."""
    from ingest.sources import CONVERSATIONS_FILE, KNOWN_SIDE_FILES

    resolved = [Path(p).resolve() for p in paths]
    folders = {r.parent for r in resolved if r.name == CONVERSATIONS_FILE and r.is_file()}
    read: list[str | Path] = []
    left: list[str | Path] = []
    for path, real in zip(paths, resolved, strict=True):
        beside = real.parent in folders and real.name != CONVERSATIONS_FILE
        other_kind = (real.is_dir() and not (real / CONVERSATIONS_FILE).exists()) or (
            not real.is_dir() and real.suffix.lower() not in READ_BESIDE and not holds_json_or_zip(real)
        )
        (left if beside and (real.name in KNOWN_SIDE_FILES or other_kind) else read).append(path)
    return read, left


def exports_in_folder(
    folder: Path, data_dir: Path, depth: int = FOLDER_DEPTH, accept: Callable[[Path], bool] = holds_json_or_zip
) -> tuple[list[Path], list[Path]]:
    """(the exports found, what was left out) in a folder given to `chatmem run` that holds no conversations.json
    itself: the exports of a folder of downloads (DIR/2024-05-export/conversations.json, DIR/claude/..., a .zip,
    a .jsonl), looked for `depth` levels of subfolders down, in name order. Found: a subfolder that holds a
    conversations.json (read whole, as an unzipped export; not looked into further), and a file that starts as
    JSON or a zip. Left out: any other file (an image, a page, notes), and the side files of an export (user.json,
    ...). Never looked at: hidden entries (.git, the default data dir .chatmem), the data dir wherever it lies
    (its databases are no export), folders deeper than `depth`, and links to folders (no loops). `accept`: which
    other files are exports (`serve --watch` asks for an export's name or a zip's bytes: a half-written download
    is left alone)."""
    from ingest.sources import CONVERSATIONS_FILE, KNOWN_SIDE_FILES

    own = data_dir.resolve()
    found: list[Path] = []
    left: list[Path] = []

    def visit(where: Path, level: int) -> None:
        try:
            entries = sorted(where.iterdir())
        except OSError:  # unreadable: said as left out, not a traceback
            left.append(where)
            return
        for entry in entries:
            real = entry.resolve()
            if entry.name.startswith(".") or real == own or own in real.parents:
                continue
            if entry.is_dir():
                if (entry / CONVERSATIONS_FILE).is_file():
                    found.append(entry)
                elif level < depth and not entry.is_symlink():
                    visit(entry, level + 1)
            elif entry.is_file() and entry.name not in KNOWN_SIDE_FILES and accept(entry):
                found.append(entry)
            else:
                left.append(entry)

    visit(folder, 0)
    return found, left


def expand_folders(paths: list[str | Path], data_dir: Path) -> tuple[list[str | Path], list[str]]:
    """(the paths to read, one line to say per folder looked into): each folder given that holds no
    conversations.json itself becomes the exports found in it (`exports_in_folder`); one with none found stays as
    given, and the ingest stage reports it (named, as a file that cannot be read)."""
    from ingest.sources import CONVERSATIONS_FILE

    read: list[str | Path] = []
    lines: list[str] = []
    for path in paths:
        folder = Path(path)
        if not folder.is_dir() or (folder / CONVERSATIONS_FILE).exists():
            read.append(path)
            continue
        found, left = exports_in_folder(folder, data_dir)
        read.extend(found or [path])
        said = f"{len(found)} export(s) found" if found else "no export found"
        where = f"in it and {FOLDER_DEPTH} levels of subfolders below"
        where += f" ({_names(found, folder)})" if found else ""
        skipped = f"; left out {len(left)} that are not exports ({_names(left, folder)})" if left else ""
        lines.append(f"{folder}: {said} {where}{skipped}")
    return read, lines


def _names(paths: list[Path], folder: Path, shown: int = 3) -> str:
    """`2024-05-export/, claude/, notes/a.jsonl and 2 more`: paths under `folder`, a folder with its slash."""
    names = [f"{p.relative_to(folder)}{'/' if p.is_dir() else ''}" for p in paths[:shown]]
    return ", ".join(names) + (f" and {len(paths) - shown} more" if len(paths) > shown else "")
