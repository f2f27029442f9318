"""A ChatGPT export made since early 2026: no conversations.json, its conversations split over numbered files
(conversations-000.json, ...) beside export_manifest.json and user_settings.json. As a zip or an unzipped folder it
reads as one export with every conversation the whole file would give (ingest/sources.py `_JoinedArrays`)."""

from __future__ import annotations

import json
import shutil
import zipfile
from pathlib import Path
from typing import Any

import pytest
from stage_support import ingest_run

from contracts.settings import IngestSettings, Settings
from flows.export_paths import exports_in_folder, rest_of_an_export
from ingest.sources import open_export
from staging.archive import archive_stats, open_archive
from staging.ledger import open_run, open_staging

REAL = Path(__file__).resolve().parents[2] / "shared" / "data" / "exports" / "chatgpt" / "rainchinchao"
SIDE = {"export_manifest.json": {"files": []}, "user_settings.json": [], "user.json": {"id": "u"}}


def ingest(data_dir: Path, export: Path) -> tuple[Any, Any]:
    settings = Settings(data_dir=data_dir, ingest=IngestSettings())
    archive, staging = open_archive(settings.archive_path), open_staging(settings.staging_path)
    run_id = open_run(
        staging, stages=["ingest"], exports=[str(export)], settings=settings.public_dump(), code_version="t"
    )
    return archive, ingest_run(archive, staging, run_id=run_id, settings=settings, exports=[export])


def split(conversations: list[Any]) -> dict[str, str]:
    """The parts as a 2026 export writes them, one of them empty, one pretty-printed with a BOM."""
    cut = [conversations[:10], [], conversations[10:18], conversations[18:]]
    names = [f"conversations-{n:03d}.json" for n in range(len(cut))]
    texts = [json.dumps(part) for part in cut]
    texts[2] = "\ufeff" + json.dumps(cut[2], indent=2) + "\n\n"
    return dict(zip(names, texts, strict=True))


@pytest.fixture
def whole(tmp_path: Path) -> tuple[Path, list[Any]]:
    path = tmp_path / "whole" / "conversations.json"
    path.parent.mkdir()
    shutil.copy(REAL / "conversations.json", path)
    return path, json.loads(path.read_text(encoding="utf-8"))


def test_a_split_export_zip_and_folder_read_as_the_whole_file(tmp_path: Path, whole: tuple[Path, list[Any]]) -> None:
    path, conversations = whole
    parts = split(conversations)
    dump = tmp_path / "chatgpt-2026.zip"
    with zipfile.ZipFile(dump, "w", zipfile.ZIP_DEFLATED) as archive_zip:
        for name in reversed(list(parts)):  # the zip's order is not the parts' order
            archive_zip.writestr(name, parts[name])
        for name, value in SIDE.items():
            archive_zip.writestr(name, json.dumps(value))
        archive_zip.writestr("chat.html", "<html></html>")
    folder = tmp_path / "unzipped"
    folder.mkdir()
    for name, text in {**parts, **{k: json.dumps(v) for k, v in SIDE.items()}}.items():
        (folder / name).write_text(text, encoding="utf-8")

    archive, result = ingest(tmp_path / "whole-data", path)
    expected = archive_stats(archive)
    for export, data in ((dump, "zip-data"), (folder, "folder-data")):
        archive, result = ingest(tmp_path / data, export)
        assert archive_stats(archive) == expected, export
        assert result.counts["conversations_written"] == len(conversations)
        assert any("export_manifest.json" in note and "user_settings.json" in note for note in result.notes)
        again = ingest(tmp_path / data, export)[1]
        assert again.counts["files_skipped"] == 1  # the same bytes: skipped as the whole file is
    opened = open_export(dump, max_member_bytes=1 << 30, max_ratio=1000)
    assert opened.path.endswith("!conversations*.json")


def test_bad_parts_are_quarantined_with_why_and_the_good_ones_arrive(
    tmp_path: Path, whole: tuple[Path, list[Any]]
) -> None:
    """Not JSON, cut short, empty, a number skipped: each named with why (a quarantine row), every conversation of
    the good parts arrives, and an old conversations.json unzipped beside the parts is read too."""
    conversations = whole[1]
    folder = tmp_path / "unzipped"
    folder.mkdir()
    (folder / "conversations.json").write_text(json.dumps(conversations[:3]), encoding="utf-8")
    (folder / "conversations-000.json").write_text(json.dumps(conversations[3:10]), encoding="utf-8")
    (folder / "conversations-001.json").write_text('{"title": "not a list"}', encoding="utf-8")
    (folder / "conversations-002.json").write_text(json.dumps(conversations[10:18])[:-40], encoding="utf-8")
    (folder / "conversations-003.json").write_bytes(b"")
    (folder / "conversations-005.json").write_text(json.dumps(conversations[18:]), encoding="utf-8")
    archive, result = ingest(tmp_path / "data", folder)
    assert result.counts["conversations_written"] == 3 + 7 + len(conversations[18:])
    assert result.counts["files_partial"] == 1
    reasons = dict(archive.execute("SELECT locator, reason FROM quarantine").fetchall())
    assert "not a JSON array" in reasons["conversations-001.json"]
    assert "cut short" in reasons["conversations-002.json"]
    assert "empty" in reasons["conversations-003.json"]
    assert "skips it" in reasons["conversations-004.json"]


def test_a_zip_says_which_parts_it_leaves_in_other_folders(tmp_path: Path, whole: tuple[Path, list[Any]]) -> None:
    conversations = whole[1]
    dump = tmp_path / "scattered.zip"
    with zipfile.ZipFile(dump, "w") as archive_zip:
        archive_zip.writestr("export/conversations-000.json", json.dumps(conversations[:10]))
        archive_zip.writestr("export/more/conversations-001.json", json.dumps(conversations[10:]))
    archive, result = ingest(tmp_path / "data", dump)
    assert result.counts["conversations_written"] == 10
    reasons = dict(archive.execute("SELECT locator, reason FROM quarantine").fetchall())
    assert "another folder" in reasons["export/more/conversations-001.json"]


def test_run_and_serve_take_a_split_export_folder_and_leave_its_side_files(
    tmp_path: Path, whole: tuple[Path, list[Any]]
) -> None:
    downloads = tmp_path / "downloads"
    export = downloads / "2026-export"
    export.mkdir(parents=True)
    for name, text in {**split(whole[1]), **{k: json.dumps(v) for k, v in SIDE.items()}}.items():
        (export / name).write_text(text, encoding="utf-8")
    found, left = exports_in_folder(downloads, tmp_path / "data")
    assert found == [export] and not left
    given = sorted(export.iterdir())  # `chatmem run 2026-export/*`
    read, left_out = rest_of_an_export(list(given))
    assert {Path(p).name for p in left_out} == set(SIDE)
    assert all(Path(p).name.startswith("conversations-") for p in read)


def test_claudes_download_of_2026_gives_its_conversations_and_leaves_the_rest(tmp_path: Path) -> None:
    """conversations-000.zip (holding conversations.json) is read; projects-000.zip, memories.json and users.json
    are files of the export that hold no conversations: left out as such, never failed."""
    real = REAL.parent.parent / "claude" / "claude-to-sqlite" / "tests" / "example.json"
    folder = tmp_path / "claude-2026"
    folder.mkdir()
    with zipfile.ZipFile(folder / "conversations-000.zip", "w") as archive_zip:
        archive_zip.writestr("conversations.json", real.read_text(encoding="utf-8"))
    with zipfile.ZipFile(folder / "projects-000.zip", "w") as archive_zip:
        archive_zip.writestr("projects/p1.json", json.dumps({"uuid": "p1", "name": "Garden", "docs": []}))
    (folder / "memories.json").write_text(json.dumps({"conversations_memory": "likes tomatoes"}), encoding="utf-8")
    (folder / "users.json").write_text(json.dumps([{"uuid": "u"}]), encoding="utf-8")
    found, left = exports_in_folder(folder, tmp_path / "data")
    assert found == [folder / "conversations-000.zip"]
    assert {item.path.name for item in left} == {"projects-000.zip", "memories.json", "users.json"}
    assert all("holds no conversations" in item.why for item in left)
    archive, result = ingest(tmp_path / "data", found[0])
    assert result.counts["conversations_written"] >= 1 and archive_stats(archive)["messages"] > 0


def test_claudes_download_given_file_by_file_leaves_its_side_files(tmp_path: Path) -> None:
    """`chatmem run claude-2026/*`: memories.json, projects-000.zip and users.json are left out, not failed."""
    given = [tmp_path / name for name in ("conversations-000.zip", "memories.json", "projects-000.zip", "users.json")]
    for path in given:
        path.write_bytes(b"{}")
    read, left = rest_of_an_export(list(given))
    assert len(left) == 3
    assert [Path(p).name for p in read] == ["conversations-000.zip"]
    assert rest_of_an_export([given[1]]) == ([given[1]], [])  # a file alone is never left out
