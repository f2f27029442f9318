"""`chatmem run DIR` on a folder of downloads: the exports in its subfolders are found (flows/export_paths.py), on
real files under tmp_path; what is not an export is left out and said, the data dir and hidden folders never read."""

from __future__ import annotations

import shutil
from pathlib import Path

from conftest import write_jsonl

from flows.export_paths import FOLDER_DEPTH, expand_folders


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
    read, lines = expand_folders([folder], folder / "data")
    assert FOLDER_DEPTH == 3
    assert read == [folder / "2024-05-export", folder / "a" / "b" / "c" / "notes.jsonl", folder / "claude"]
    [line] = lines
    assert line.startswith(f"{folder}: 3 export(s) found in it and 3 levels of subfolders below (2024-05-export/, ")
    assert line.endswith("; left out 2 that are not exports (a/todo.txt, page.html)"), line


def test_a_folder_with_its_own_conversations_json_and_a_file_are_read_as_given(
    tmp_path: Path, chatgpt_export: Path
) -> None:
    """An export folder given itself, and a file: as before, nothing looked for and nothing said."""
    folder = downloads(tmp_path, chatgpt_export)
    given: list[str | Path] = [folder / "claude", str(folder / "page.html")]
    assert expand_folders(given, folder / "data") == (given, [])


def test_a_folder_with_no_export_stays_as_given_and_says_so(tmp_path: Path) -> None:
    """Nothing found: the folder is kept (the ingest stage names it as a file it cannot read) and the line says so."""
    folder = tmp_path / "empty"
    (folder / "x").mkdir(parents=True)
    (folder / "x" / "photo.jpg").write_bytes(b"\xff\xd8\xff")
    read, [line] = expand_folders([folder], tmp_path / "data")
    assert read == [folder]
    said = "no export found in it and 3 levels of subfolders below; left out 1 that are not exports (x/photo.jpg)"
    assert line == f"{folder}: {said}"
