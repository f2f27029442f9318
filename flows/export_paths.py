"""Which of the paths given to `chatmem run` (or watched by `chatmem serve`) are read as exports.

    rest_of_an_export(paths)              `chatmem run export/*`: the side files of an unzipped export left out
    exports_in_folder(folder, data_dir)   `chatmem run DIR`, `serve --watch DIR`: the exports in DIR and below,
                                          and what is left out there, each with why (LeftOut)
    absolute(path)                        how the ledger names a path given: absolute, `..` folded where that names
                                          the same file

Both only look at names and first bytes (a zip, or JSON: ingest reads the format from the bytes, never the
name); what they keep is read, and reported, by the ingest stage. Only the standard library is imported here at
the top: `chatmem --help` and a usage error answer at once (flows/cli.py).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

FOLDER_DEPTH = 3  # how many levels of subfolders `chatmem run DIR` looks into (DIR/a/b/c/export.zip)


READ_BESIDE = (".json", ".jsonl", ".zip")  # beside a conversations.json, still read: a file of the user's own


def absolute(path: str | Path) -> Path:
    """The path as the ledger and every message name it, whatever directory a command starts from: absolute, with
    `..` folded (`clone/../shared/x.json` is `shared/x.json`) where that names the same file; where a symlinked
    folder makes `..` go elsewhere, the resolved path (a lexical fold would name another file)."""
    given = Path(path).expanduser().absolute()
    folded = Path(os.path.normpath(given))
    return folded if folded == given or folded.resolve() == given.resolve() else given.resolve()


def given_once(paths: list[str | Path]) -> tuple[list[str | Path], list[str | Path]]:
    """(the paths with each file once, in the order given; those given again): the same file typed twice, by two
    names (`./x.json` and `x.json`, a link), or an export folder and its conversations.json. The ingest stage read
    it once and skipped the second silently ("files skipped 1"); the command says it instead: given twice, read
    once."""
    seen: set[Path] = set()
    kept: list[str | Path] = []
    again: list[str | Path] = []
    for path in paths:
        real = Path(path).expanduser().resolve()
        if real.is_dir() and (real / "conversations.json").is_file():
            real = real / "conversations.json"  # an export folder is read as its conversations.json
        if real in seen:
            again.append(path)
            continue
        seen.add(real)
        kept.append(path)
    return kept, again


def holds_json_or_zip(path: Path) -> bool:
    """Whether the file's first bytes could start an export (a zip, or JSON: ingest reads the format from the bytes,
    never the name, so a JSONL export named .ndjson or with no suffix is one); unreadable: let ingest say why."""
    try:
        return _starts_as_export(path)
    except OSError:
        return True


def _starts_as_export(path: Path) -> bool:
    """Whether the file's first bytes are a zip's or JSON's (raises OSError where it cannot be read)."""
    from ingest.sources import EMPTY_ZIP_MAGIC, ZIP_MAGIC

    with path.open("rb") as handle:
        head = handle.read(4096)
    body = head.removeprefix(b"\xef\xbb\xbf").lstrip(b" \t\r\n")
    return head[:4] in (ZIP_MAGIC, EMPTY_ZIP_MAGIC) or body[:1] in (b"[", b"{")


def rest_of_an_export(paths: list[str | Path]) -> tuple[list[str | Path], list[str | Path]]:
    """(what to read, what to leave out) of the paths given. `chatmem run export/*` on an unzipped ChatGPT export
    names its conversations.json with everything beside it: user.json, message_feedback.json, chat.html, images,
    folders of images. Those hold no conversations, and read as exports each would fail the run. Left out: a known
    side file, a folder, or a file neither named .json/.jsonl/.zip nor starting as JSON or a zip does (an image,
    an HTML page), sitting in the folder of a conversations.json that is given too. Everything else is read as
    given (a file alone is never left out)."""
    from ingest.sources import conversation_files, is_conversations_file, is_side_file

    resolved = [Path(p).resolve() for p in paths]
    folders = {r.parent for r in resolved if is_conversations_file(r.name) and r.is_file()}
    read: list[str | Path] = []
    left: list[str | Path] = []
    for path, real in zip(paths, resolved, strict=True):
        beside = real.parent in folders and not is_conversations_file(real.name)
        other_kind = (real.is_dir() and not conversation_files(real)) or (
            not real.is_dir() and real.suffix.lower() not in READ_BESIDE and not holds_json_or_zip(real)
        )
        # a side file given with other paths is the rest of a download (Claude's memories.json, projects-000.zip)
        side = len(paths) > 1 and is_side_file(real.name)
        (left if side or (beside and other_kind) else read).append(path)
    return read, left


EXPORT_SUFFIXES = frozenset({".json", ".jsonl", ".ndjson", ".zip"})  # named as an export: read, whatever its bytes
# A download still being written: Firefox's .part, Chrome's .crdownload, Safari's .download (a folder). Its zip bytes
# start as one, and read now it could only fail; once complete it is renamed, and the new name is read.
PARTIAL_SUFFIXES = frozenset({".part", ".crdownload", ".download"})
NOT_AN_EXPORT = "not an export"
# A compressed or archived file: chatmem reads zips only, and such a file may be an export packed to move it
# (ingest/detect.py says the same of one given by name): "not an export" gave no hint of what to do.
PACKED_SUFFIXES = frozenset({".gz", ".tgz", ".bz2", ".xz", ".7z", ".rar", ".tar"})
PACKED = "compressed or archived: unpack it if an export is inside"
SIDE_FILE = "holds no conversations (a side file of an export)"
DOWNLOADING = "a download still in progress: read once it completes"
HIDDEN = "hidden: its name starts with a dot"
LINKED = "a link to a folder, not followed"
DATA_DIR = "a chatmem data dir: its state, no export"
# What makes a folder a chatmem data dir (contracts/settings: archive.db, staging.db; staging/lock.py: chatmem.lock).
# Its JSON files (the lock, graph/server.json, load-*.json, recall-index manifests) start as JSON: read as exports
# each failed the run "of an unknown shape", and its databases and subfolders were said one by one as left out.
DATA_DIR_FILES = ("staging.db", "archive.db", "chatmem.lock")


def is_data_dir(folder: Path) -> bool:
    """Whether the folder is a chatmem data dir (another one than the run's: `chatmem --data-dir dd-2 run ~/work`
    beside dd-1), by the files only chatmem writes there."""
    return any((folder / name).is_file() for name in DATA_DIR_FILES)


# What chatmem writes at a data dir's top level (each name where it is written: contracts/settings archive.db,
# staging.db; cluster/stage.py optuna.db; staging/lock.py the locks; flows/preflight.py run.starting; flows/serve.py
# watch-left-out.json; staging/*_loaded.py load-*.json; the folders of graph, prefect_env, cluster/saved_model,
# memory/cues_state, memory/index_store, cli_report, cli_eval_recall). `chatmem run DATA_DIR` read its JSON as
# exports; a test keeps this in step with the modules' own constants (tests/test_cli_cold_leftovers_s37.py).
DATA_DIR_STATE = frozenset(
    {
        *DATA_DIR_FILES,
        "optuna.db",
        "serve.lock",
        "run.starting",
        "watch-left-out.json",
        "load-archive.json",
        "load-memory.json",
        "load-staging.json",
        "graph",
        "prefect",
        "cluster_models",
        "cues-state",
        "recall-index",
        "reports",
        "eval",
    }
)
_SQLITE_SIDE = ("-shm", "-wal", "-journal")  # SQLite's files beside a database
DATA_DIR_FILE = "in a chatmem data dir and no export: one of its files"


def is_state(name: str) -> bool:
    """Whether a name at a data dir's top level is chatmem's own state (a database with its -wal/-shm included)."""
    for side in _SQLITE_SIDE:
        name = name.removesuffix(side)
    return name in DATA_DIR_STATE


OWN_DATA_DIR = "this command's data dir (--data-dir)"
# `chatmem --data-dir X run X` with exports in X: it works and re-runs are clean, but chatmem's state lands among
# the user's files, which a new user did not expect (the cold try of session 37): said, not refused
SHARED_FOLDER = (
    "the data dir is the export folder itself: chatmem writes its state (archive.db, staging.db, prefect/, graph/)"
    " beside the exports; give --data-dir a folder of its own to keep the export folder as it was"
)


def data_dir_given(folder: Path, data_dir: Path) -> str | None:
    """What the folder given to `chatmem run` is where it is a chatmem data dir, in a few words; None where it is
    none. `chatmem --data-dir X run X` said "no export found" and `chatmem run OTHER_DATA_DIR` failed on its lock,
    graph/server.json and load-*.json "of an unknown shape": a data dir is no export, its state is never read."""
    own, root = data_dir.resolve(), folder.resolve()
    if root == own:
        return OWN_DATA_DIR
    if own in root.parents:
        return "inside this command's data dir (--data-dir)"
    return "a chatmem data dir" if is_data_dir(root) else None


def data_dir_line(kind: str) -> str:
    """`this command's data dir (--data-dir): its state is not read as exports; give the export files, or the
    folder they are in` (what a run says of a data dir given as a folder to read)."""
    return f"{kind}: its state is not read as exports; give the export files, or the folder they are in"


@dataclass(frozen=True)
class LeftOut:
    """A path in a searched folder that is not read, and why (one short phrase, said as `PATH: why`)."""

    path: Path
    why: str


def why_not_an_export(path: Path) -> str | None:
    """None where the file is read as an export: named .json/.jsonl/.ndjson/.zip (unreadable: ingest says why), or
    starting as JSON or a zip (ingest reads the format from the bytes); else why it is left out."""
    from ingest.sources import is_conversations_file, is_side_file

    suffix = path.suffix.lower()
    if is_side_file(path.name):
        return SIDE_FILE
    if suffix in PARTIAL_SUFFIXES:
        return DOWNLOADING
    if suffix in EXPORT_SUFFIXES or is_conversations_file(path.name):
        return None
    if suffix in PACKED_SUFFIXES:
        return PACKED
    try:
        return None if _starts_as_export(path) else NOT_AN_EXPORT
    except OSError as exc:
        return f"cannot be read: {exc.strerror or exc}"


def exports_in_folder(folder: Path, data_dir: Path, depth: int = FOLDER_DEPTH) -> tuple[list[Path], list[LeftOut]]:
    """(the exports found, what was left out and why) in a folder given to `chatmem run` or watched by `chatmem
    serve`: the exports of a folder of downloads (DIR/2024-05-export/conversations.json, DIR/claude/..., a .zip, a
    .jsonl), looked for `depth` levels of subfolders down, in name order. `run` and `serve` read the same ones.

    Found: a folder that holds a conversations.json (an unzipped export: read whole, its side files noted by
    ingest), `folder` itself included, and a file that `why_not_an_export` takes. Inside an export folder, only
    export folders are looked for (an older export unzipped in it): a vendor's export holds images, uploaded files
    and project sandboxes (`user-ID/.../mnt/data/x.json`), none of them an export, so its other files are its own:
    not read; one beside its conversations.json named as an export is said (it may be the user's, to move out), the
    rest are not (a ChatGPT export's images and sandboxes would be hundreds of lines); one that is an export itself
    (`beside_export`: another dump dropped beside a bare conversations.json) is read, and so is a broken one beside a
    bare conversations.json (no vendor's side file there: a folder of the user's dumps), for ingest to report it bad
    (in a vendor's download it may be an upload, and is said as its file). Left out and said: any other
    file, a download still in progress, an unreadable file, a hidden file named as an export, a folder deeper than
    `depth` (an export folder too), a link to a folder (no loops) and another chatmem data dir (`is_data_dir`: its
    state, not looked into, said once as the folder). Never looked at, never said: other hidden
    entries (.git, .DS_Store, the default data dir .chatmem) and the data dir wherever it lies (its databases are
    no export)."""
    from ingest.sources import conversation_files, is_side_file

    own, root = data_dir.resolve(), folder.resolve()
    in_own = root == own or own in root.parents  # `chatmem --data-dir X run X`: X's state is left out by name
    if own in root.parents and is_state(root.relative_to(own).parts[0]):
        return [], []  # `run DATA_DIR/graph`: state only (data_dir_given says so)
    state_here = root == own or is_data_dir(root)  # the folder given is a data dir: its exports only are read
    found: list[Path] = []
    left: list[LeftOut] = []

    def visit(where: Path, level: int, export: Path | None) -> None:
        try:
            entries = sorted(where.iterdir())
        except OSError as exc:  # unreadable: said as left out, not a traceback
            left.append(LeftOut(where, f"cannot be read: {exc.strerror or exc}"))
            return
        # A bare conversations.json (no side file of a vendor's download beside it: a folder of the user's dumps)
        bare = where == export and not any(is_side_file(e.name) for e in entries)
        top = where is folder and state_here  # a data dir's top level: its state left out, said once as the folder
        for entry in entries:
            if top and is_state(entry.name):
                continue
            real = entry.resolve()
            if not in_own and (real == own or own in real.parents):
                continue
            if entry.name.startswith("."):
                if export is None and entry.suffix.lower() in EXPORT_SUFFIXES and not entry.is_dir():
                    left.append(LeftOut(entry, HIDDEN))
                continue
            if entry.is_dir():
                visit_folder(entry, level + 1, export)
            elif export is None:
                why = why_not_an_export(entry) if entry.is_file() else NOT_AN_EXPORT
                if why is None and top and beside_export(entry) == OWN_FILE:  # JSON of the data dir's, not named above
                    why = DATA_DIR_FILE
                if why is None:
                    found.append(entry)
                else:
                    left.append(LeftOut(entry, why))
            elif where == export and _named_as_export(entry) and not is_side_file(entry.name):
                kind = beside_export(entry)
                if kind == EXPORT or (kind == BROKEN and bare):  # another dump dropped beside it (a watched folder)
                    found.append(entry)  # a broken one is read too: ingest reports it bad, with why, in one line
                else:
                    left.append(LeftOut(entry, in_export(export)))  # beside its conversations.json: may be an upload

    def visit_folder(entry: Path, level: int, export: Path | None) -> None:
        """`entry` lies `level` subfolders down (1: in `folder` itself)."""
        if entry.suffix.lower() in PARTIAL_SUFFIXES:
            if export is None:
                left.append(LeftOut(entry, DOWNLOADING))
            return
        if is_data_dir(entry):  # another data dir's state is no export: said once, as the folder, never read
            if export is None:
                left.append(LeftOut(entry, DATA_DIR))
            return
        if level > depth:  # an export folder too: DIR/a/b/c/x.zip is read, DIR/a/b/c/x/conversations.json is not
            if export is None or conversation_files(entry):  # inside an export, only its export folders are said
                left.append(LeftOut(entry, f"more than {depth} levels of subfolders down, not looked into"))
            return
        if conversation_files(entry):
            found.append(entry)  # read whole, even behind a link
            export = entry
        elif export is not None:
            pass  # inside an export: only export folders are looked for, and nothing else is said
        elif entry.is_symlink():
            left.append(LeftOut(entry, LINKED))
            return
        if not entry.is_symlink():
            visit(entry, level, export)

    if conversation_files(folder):
        found.append(folder)
        visit(folder, 0, folder)
    else:
        visit(folder, 0, None)
    return found, left


EXPORT, BROKEN, OWN_FILE = "export", "broken", "own file"  # what a file beside an export's conversations.json is


def beside_export(path: Path) -> str:
    """What a file named as an export beside an export's conversations.json is: EXPORT, an export of its own (a zip
    that holds a conversations file, or JSON whose first records read as one of the formats: ingest.detect);
    BROKEN, a dump that cannot be read (a .zip that is no zip, JSON that is not JSON, empty, cut short in its first
    record, unreadable); else OWN_FILE, one of the export's own files (an upload: a table, a config, a zip of
    photos). A watched folder that holds a bare conversations.json is an export folder, and every dump dropped in
    beside it later would otherwise be taken as one of its files and never read, a broken one never said bad."""
    import zipfile

    from contracts.errors import MalformedExportError, UnsupportedFormatError
    from ingest.detect import HEAD_BYTES, detect_format
    from ingest.sources import is_conversations_file

    try:
        if path.suffix.lower() == ".zip":
            with zipfile.ZipFile(path) as archive:
                names = archive.namelist()
            return EXPORT if any(is_conversations_file(name.rsplit("/", 1)[-1]) for name in names) else OWN_FILE
        with path.open("rb") as stream:
            detect_format(stream.read(HEAD_BYTES), name=path.name)
        return EXPORT
    except UnsupportedFormatError:  # valid JSON of another shape
        return OWN_FILE
    except (OSError, zipfile.BadZipFile, MalformedExportError):
        return BROKEN


def _named_as_export(path: Path) -> bool:
    from ingest.sources import is_conversations_file

    return path.suffix.lower() in EXPORT_SUFFIXES and not is_conversations_file(path.name)


def in_export(export: Path) -> str:
    return f"inside the export folder {export.name}/, taken as one of its files; move it out to have it read"


def expand_folders(
    paths: list[str | Path], data_dir: Path
) -> tuple[list[str | Path], list[str], dict[str | Path, str]]:
    """(the paths to read, one line to say per folder looked into where exports were found, why each folder in
    which none was found has nothing to read): each folder given becomes the exports found in it
    (`exports_in_folder`; the folder itself where it holds a conversations.json, nothing else said when that is
    all); one with none found stays as given, said once in the same words whether it is refused alone
    (flows/preflight.py) or reported failed beside exports that arrive (`no export found in it and 3 levels of
    subfolders below; left out 1: a/b/c/d/ (...)`, not that and then "folder has no conversations.json")."""
    read: list[str | Path] = []
    lines: list[str] = []
    nothing_found: dict[str | Path, str] = {}
    for path in paths:
        folder = Path(path)
        if not folder.is_dir():
            read.append(path)
            left_in_zip = zip_left_out(folder)
            if left_in_zip:
                lines.append(f"{folder}: {left_in_zip}")
            continue
        found, left = exports_in_folder(folder, data_dir)
        kind = data_dir_given(folder, data_dir)
        if found == [folder] and not left and kind is None:  # an export folder alone: read as given, as a file is
            read.append(path)
            continue
        read.extend([path if p == folder else p for p in found] or [path])
        if found:
            said = f"{len(found)} export(s) found {_WHERE} ({names_under(found, folder)})"
            said = f"{data_dir_line(kind)}; the exports in it are read: {said}" if kind else said
            lines.append(f"{folder}: {said}{said_left(left, folder)}")
            if kind == OWN_DATA_DIR:
                lines.append(f"warning: {folder}: {SHARED_FOLDER}")
        elif kind:  # not "no export found in it": what it is, and what to give instead
            nothing_found[path] = data_dir_line(kind) + said_left(left, folder)
        else:
            nothing_found[path] = no_export_found(folder, left)
    return read, lines, nothing_found


_WHERE = f"in it and {FOLDER_DEPTH} levels of subfolders below"
# what `exports_in_folder` takes as an export, in a few words (the error line of a run with such a folder)
LOOKED_FOR = (
    "it looked for a conversations.json, a .json or .jsonl file starting as JSON, or a .zip, in it and"
    f" {FOLDER_DEPTH} levels of subfolders below"
)


def no_export_found(folder: Path, left: list[LeftOut]) -> str:
    """`no export found in it and 3 levels of subfolders below; left out 1: a/b/c/d/ (...)`: what `chatmem run DIR`
    and `chatmem serve --once --watch DIR` say of a folder in which the search found nothing to read."""
    return f"no export found {_WHERE}{said_left(left, folder)}"


def said_left(left: list[LeftOut], folder: Path) -> str:
    """`; left out 3: a.txt, page.html (not an export); b.zip.part (a download still in progress: ...)`: each reason
    once, with up to 3 of its paths."""
    if not left:
        return ""
    reasons: dict[str, list[Path]] = {}
    for item in left:
        reasons.setdefault(item.why, []).append(item.path)
    return f"; left out {len(left)}: " + "; ".join(f"{names_under(p, folder)} ({why})" for why, p in reasons.items())


def names_under(paths: list[Path], folder: Path, shown: int = 3) -> str:
    """`2024-05-export/, claude/, notes/a.jsonl and 2 more`: paths under `folder`, a folder with its slash."""
    names = [f"{_relative(p, folder)}{'/' if p.is_dir() and p != folder else ''}" for p in paths[:shown]]
    return ", ".join(names) + (f" and {len(paths) - shown} more" if len(paths) > shown else "")


def _relative(path: Path, folder: Path) -> str:
    """A path under `folder`; `folder` itself, an export folder, as the file read in it. Both made absolute first:
    one may be as typed ("junk/a.txt") and the other absolute (`serve --once --watch junk` gave a traceback)."""
    from ingest.sources import CONVERSATIONS_FILE

    path, folder = path.absolute(), folder.absolute()
    return CONVERSATIONS_FILE if path == folder else str(path.relative_to(folder))


# Members of a zip export read by no one and worth no line: the uploads and images a vendor's download carries
_MEDIA = frozenset({".png", ".jpg", ".jpeg", ".gif", ".webp", ".svg", ".wav", ".mp3", ".m4a", ".webm", ".mp4"})


def zip_left_out(path: Path, shown: int = 3) -> str:
    """`left out 2: junk.bin, notes.txt (not an export)`: the members of a zip given that are read as nothing (no
    conversations file, no side file, no image or recording), said as a folder's are; "" for none, or no zip
    (what cannot be opened, ingest says)."""
    import zipfile

    from ingest.sources import is_conversations_file, is_side_file

    if not path.is_file():
        return ""  # a FIFO, a device, a missing path: opening one would block or fail (ingest names what it is)
    try:
        with zipfile.ZipFile(path) as archive:
            names = [i.filename for i in archive.infolist() if not i.is_dir()]
    except (OSError, zipfile.BadZipFile, ValueError):
        return ""
    left = []
    for name in names:
        base = name.replace("\\", "/").rsplit("/", 1)[-1]
        if base.startswith(".") or name.startswith("__MACOSX/"):
            continue
        if is_conversations_file(base) or is_side_file(base) or Path(base).suffix.lower() in _MEDIA:
            continue
        left.append(name)
    if not left:
        return ""
    more = f" and {len(left) - shown} more" if len(left) > shown else ""
    return f"left out {len(left)}: {', '.join(left[:shown])}{more} ({NOT_AN_EXPORT})"
