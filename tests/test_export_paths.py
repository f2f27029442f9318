"""`chatmem run DIR` on a folder of downloads: the exports in its subfolders are found (flows/export_paths.py), on
real files under tmp_path; what is not an export is left out and said, the data dir and hidden folders never read."""

from __future__ import annotations

import json
import shutil
import zipfile
from pathlib import Path

from conftest import write_jsonl

from flows.export_paths import (
    DOWNLOADING,
    FOLDER_DEPTH,
    LINKED,
    NOT_AN_EXPORT,
    SIDE_FILE,
    expand_folders,
    exports_in_folder,
)


def downloads(root: Path, chatgpt_export: Path) -> Path:
    """DIR/2024-05-export/ (an unzipped ChatGPT export with a side file and images), DIR/claude/conversations.json,
    a .jsonl three levels down and one four levels down, a page and a text file, a hidden folder, and the data dir
    (DIR/data, with a JSON file in it) under DIR."""
    folder = root / "downloads"
    (folder / "2024-05-export" / "dalle").mkdir(parents=True)
    shutil.copy(chatgpt_export, folder / "2024-05-export" / "conversations.json")
    (folder / "2024-05-export" / "user.json").write_text('{"id": "u"}', encoding="utf-8")
    (folder / "2024-05-export" / "dalle" / "a.png").write_bytes(b"\x89PNG\r\n")
    (folder / "claude").mkdir()
    shutil.copy(chatgpt_export, folder / "claude" / "conversations.json")
    write_jsonl(folder / "a" / "b" / "c" / "notes.jsonl")
    write_jsonl(folder / "a" / "b" / "c" / "d" / "too-deep.jsonl")
    (folder / "page.html").write_text("<html></html>", encoding="utf-8")
    (folder / "a" / "todo.txt").write_text("buy bread", encoding="utf-8")
    write_jsonl(folder / ".git" / "hidden.jsonl")
    write_jsonl(folder / "data" / "not-an-export.json")
    return folder


def test_a_folder_of_downloads_is_searched_three_levels_down_for_exports(tmp_path: Path, chatgpt_export: Path) -> None:
    """Found: each subfolder holding a conversations.json (read whole: not looked into), each file starting as JSON
    or a zip, up to FOLDER_DEPTH levels down. Left out, in one line: the page and the text file. Never read: the
    data dir under DIR, a hidden folder, anything deeper."""
    folder = downloads(tmp_path, chatgpt_export)
    read, lines, nothing_found = expand_folders([folder], folder / "data")
    assert nothing_found == {}
    assert FOLDER_DEPTH == 3
    assert read == [folder / "2024-05-export", folder / "a" / "b" / "c" / "notes.jsonl", folder / "claude"]
    [line] = lines
    assert line.startswith(f"{folder}: 3 export(s) found in it and 3 levels of subfolders below (2024-05-export/, ")
    assert line.endswith(
        "; left out 3: a/b/c/d/ (more than 3 levels of subfolders down, not looked into); a/todo.txt,"
        " page.html (not an export)"
    ), line


def test_the_depth_is_the_same_for_an_export_folder_a_file_and_what_is_said(
    tmp_path: Path, chatgpt_export: Path
) -> None:
    """At FOLDER_DEPTH levels of subfolders down an unzipped export folder is read, as a file there is; one level
    deeper it is left out, said as "not looked into", as a file there is. Before, a/b/c/d/conversations.json was
    read while the line said a/b/c/d/ was not looked into (and an export inside an export, alike)."""
    folder = tmp_path / "downloads"
    for export in ("a/b/c", "a/b/c/d", "x/y/old", "x/y/old/2023"):
        (folder / export).mkdir(parents=True)
        shutil.copy(chatgpt_export, folder / export / "conversations.json")
    write_jsonl(folder / "e" / "f" / "g" / "notes.jsonl")
    write_jsonl(folder / "e" / "f" / "g" / "h" / "deep.jsonl")
    found, left = exports_in_folder(folder, tmp_path / "data")
    assert found == [folder / "a" / "b" / "c", folder / "e" / "f" / "g" / "notes.jsonl", folder / "x" / "y" / "old"]
    too_deep = "more than 3 levels of subfolders down, not looked into"
    assert [(item.path.relative_to(folder).as_posix(), item.why) for item in left] == [
        ("a/b/c/d", too_deep),
        ("e/f/g/h", too_deep),
        ("x/y/old/2023", too_deep),
    ]


def test_a_folder_with_its_own_conversations_json_and_a_file_are_read_as_given(
    tmp_path: Path, chatgpt_export: Path
) -> None:
    """An export folder given itself, and a file: as before, nothing looked for and nothing said."""
    folder = downloads(tmp_path, chatgpt_export)
    given: list[str | Path] = [folder / "claude", str(folder / "page.html")]
    assert expand_folders(given, folder / "data") == (given, [], {})


def test_a_folder_with_no_export_stays_as_given_and_says_so(tmp_path: Path) -> None:
    """Nothing found: the folder is kept (refused alone, else reported failed) with why, apart from the lines of the
    folders where exports were found: the run says that why once, in these words, whichever happens."""
    folder = tmp_path / "empty"
    (folder / "x").mkdir(parents=True)
    (folder / "x" / "photo.jpg").write_bytes(b"\xff\xd8\xff")
    read, lines, nothing_found = expand_folders([folder], tmp_path / "data")
    assert read == [folder] and lines == []
    said = "no export found in it and 3 levels of subfolders below; left out 1: x/photo.jpg (not an export)"
    assert nothing_found == {folder: said}


def test_what_a_folder_leaves_out_is_said_with_why_and_the_same_for_run_and_serve(
    tmp_path: Path, chatgpt_export: Path
) -> None:
    """Each file dropped in that is not read has its reason: not an export, a side file, a download still being
    written (Chrome's .crdownload and Firefox's .part start as a zip; Safari's .download is a folder holding the
    partial file under its final name), a file that cannot be read (EIO: /proc/self/mem), a hidden file named as an
    export, a folder too deep, a link to a folder. An export with no suffix is read by its bytes. `serve --watch`
    lists the same (flows/serve.py `list_dumps`); before, it dropped all of these without a word, and `run DIR`
    failed the half-written downloads and the unreadable file."""
    folder = tmp_path / "watch"
    folder.mkdir()
    zipped = tmp_path / "export.zip"
    with zipfile.ZipFile(zipped, "w") as archive:
        archive.write(chatgpt_export, "conversations.json")
    half = zipped.read_bytes()[:300]
    (folder / "new.zip.crdownload").write_bytes(half)
    (folder / "older.zip.part").write_bytes(half)
    (folder / "safari.zip.download").mkdir()
    (folder / "safari.zip.download" / "safari.zip").write_bytes(half)
    (folder / "mystery").symlink_to("/proc/self/mem")
    (folder / ".backup.json").write_text("[]", encoding="utf-8")
    (folder / ".DS_Store").write_bytes(b"\x00\x00\x00\x01Bud1")  # hidden and no export: never said
    (folder / "user.json").write_text('{"id": "u"}', encoding="utf-8")
    (folder / "notes.txt").write_text("buy bread", encoding="utf-8")
    shutil.copy(chatgpt_export, folder / "claude-backup")  # JSON with no suffix: read by its bytes
    write_jsonl(folder / "a" / "b" / "c" / "d" / "deep.jsonl")
    (tmp_path / "elsewhere").mkdir()
    (folder / "linked").symlink_to(tmp_path / "elsewhere")
    found, left = exports_in_folder(folder, tmp_path / "data")
    assert found == [folder / "claude-backup"]
    assert [(item.path.relative_to(folder).as_posix(), item.why) for item in left] == [
        (".backup.json", "hidden: its name starts with a dot"),
        ("a/b/c/d", "more than 3 levels of subfolders down, not looked into"),
        ("linked", LINKED),
        ("mystery", "cannot be read: Input/output error"),
        ("new.zip.crdownload", DOWNLOADING),
        ("notes.txt", NOT_AN_EXPORT),
        ("older.zip.part", DOWNLOADING),
        ("safari.zip.download", DOWNLOADING),
        ("user.json", SIDE_FILE),
    ]
    read, [line], _ = expand_folders([folder], tmp_path / "data")
    assert read == [folder / "claude-backup"]
    assert "; left out 9: .backup.json (hidden: its name starts with a dot); " in line, line
    assert f"new.zip.crdownload, older.zip.part, safari.zip.download/ ({DOWNLOADING})" in line, line


def test_exports_inside_an_export_folder_are_read_and_its_own_files_are_not(
    tmp_path: Path, chatgpt_export: Path
) -> None:
    """An older export unzipped inside a newer one's folder (a folder with its own conversations.json, at any depth
    within FOLDER_DEPTH) is read, as a folder given or watched and as one found below: before, a folder holding a
    conversations.json was read whole and nothing under it was looked at. A vendor's export also holds images,
    uploaded files and project sandboxes (`user-ID/.../mnt/data/*.json`): not exports, not read and not said; a
    file named as an export beside its conversations.json is not read either where it holds no conversations (an
    upload), and is said; one that is an export itself (mine.jsonl) is read."""
    export = tmp_path / "downloads" / "2025-export"
    (export / "dalle-generations").mkdir(parents=True)
    shutil.copy(chatgpt_export, export / "conversations.json")
    (export / "user.json").write_text('{"id": "u"}', encoding="utf-8")
    (export / "dalle-generations" / "a.webp").write_bytes(b"RIFF")
    (export / "user-x" / "proj" / "mnt" / "data").mkdir(parents=True)
    (export / "user-x" / "proj" / "mnt" / "data" / "table.json").write_text("[]", encoding="utf-8")
    write_jsonl(export / "mine.jsonl")
    (export / "upload.json").write_text('{"rows": [1, 2]}', encoding="utf-8")
    (export / "old" / "2023").mkdir(parents=True)
    shutil.copy(chatgpt_export, export / "old" / "2023" / "conversations.json")
    downloads = export.parent
    found, left = exports_in_folder(downloads, tmp_path / "data")
    assert found == [export, export / "mine.jsonl", export / "old" / "2023"]
    said = "inside the export folder 2025-export/, taken as one of its files; move it out to have it read"
    assert [(item.path, item.why) for item in left] == [(export / "upload.json", said)]

    read, [line], _ = expand_folders([export], tmp_path / "data")  # `chatmem run 2025-export/`
    assert read == [export, export / "mine.jsonl", export / "old" / "2023"]
    assert line == (
        f"{export}: 3 export(s) found in it and 3 levels of subfolders below (conversations.json, mine.jsonl,"
        f" old/2023/); left out 1: upload.json ({said})"
    )


def test_dumps_dropped_beside_a_bare_conversations_json_are_read(tmp_path: Path, chatgpt_export: Path) -> None:
    """A watched folder of dumps that holds a bare conversations.json is an export folder; a Claude export and a
    zipped export dropped in beside it later are exports of their own and read (they were taken as its files and
    never read), and so are dumps that cannot be read (a .zip that is no zip, JSON that is not JSON: ingest reports
    them bad; they were said as its files), while a zip or JSON that holds no conversations is still said."""
    import zipfile

    dumps = tmp_path / "dumps"
    dumps.mkdir()
    shutil.copy(chatgpt_export, dumps / "conversations.json")
    claude = [{"uuid": "c1", "name": "t", "created_at": "2024-01-01T00:00:00Z", "chat_messages": []}]
    (dumps / "claude-2024.json").write_text(json.dumps(claude), encoding="utf-8")
    with zipfile.ZipFile(dumps / "export-2025.zip", "w") as archive:
        archive.write(chatgpt_export, "conversations.json")
    with zipfile.ZipFile(dumps / "photos.zip", "w") as archive:
        archive.writestr("a.jpg", b"jpg")
    (dumps / "fake.zip").write_bytes(b"this is not a zip")
    (dumps / "broken.json").write_text("{not json", encoding="utf-8")
    (dumps / "table.json").write_text('{"rows": [1, 2]}', encoding="utf-8")
    found, left = exports_in_folder(dumps, tmp_path / "data")
    assert found == [
        dumps,
        dumps / "broken.json",
        dumps / "claude-2024.json",
        dumps / "export-2025.zip",
        dumps / "fake.zip",
    ]
    assert [item.path.name for item in left] == ["photos.zip", "table.json"]


def test_a_broken_file_in_a_vendors_export_folder_is_still_said_as_one_of_its_files(
    tmp_path: Path, chatgpt_export: Path
) -> None:
    """Beside a conversations.json with the vendor's side files (user.json, chat.html: an unzipped download), a
    file named as an export that cannot be read may be an upload of the user's (a broken JSON they asked about):
    said as one of the export's files, not read, as before; the run of a real download does not fail for it."""
    export = tmp_path / "2025-export"
    export.mkdir()
    shutil.copy(chatgpt_export, export / "conversations.json")
    (export / "chat.html").write_text("<html></html>", encoding="utf-8")
    (export / "file-abc-broken.json").write_text("{not json", encoding="utf-8")
    found, left = exports_in_folder(export, tmp_path / "data")
    assert found == [export]
    assert [item.path.name for item in left] == ["file-abc-broken.json"]
