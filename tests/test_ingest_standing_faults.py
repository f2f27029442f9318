"""Faults a cold try found (session 34) that stood past their first run: a file cut short said so once (exit 1, then 0
and "nothing new"), a forced re-read counted its standing quarantine rows as 0, invalid UTF-8 in a file cut short lost
its note and named an offset in the repaired text. Real files under tmp_path, the real CLI, stage and SQLite."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from test_ingest_stage import ingest, make_chatgpt_export

from flows.cli import cli


def _cut(path: Path, conversations: int = 6) -> tuple[Path, int]:
    """A ChatGPT export cut short inside its last conversation: (the file, how many conversations are whole)."""
    data = json.dumps(make_chatgpt_export(conversations)).encode()
    last = data.rindex(b'{"id": "c')  # inside the last conversation's mapping: the ones before are whole
    path.write_bytes(data[: last + 40])
    return path, conversations - 1


def _chatmem(data_dir: Path, *args: str | Path) -> Result:
    return CliRunner().invoke(cli, ["--data-dir", str(data_dir), *map(str, args)], catch_exceptions=False)


def _ingest_counts(result: Result) -> dict[str, Any]:
    data = json.loads(result.stdout)
    (stage,) = [s for s in data["stages"] if s["stage"] == "ingest"]
    return {"counts": stage["counts"], "files": data["files"]}


def test_a_forced_re_read_counts_the_quarantine_rows_that_stand(tmp_path: Path) -> None:
    """A file read again on purpose (`--force`) finds its bad records again: its counts say so, though the rows
    (kept by the first read) are not written twice. Before, a forced re-read said "quarantined 0"."""
    path, whole = _cut(tmp_path / "conversations.json")
    archive, first = ingest(tmp_path / "data", path)
    assert first.counts["quarantined"] == 1 and first.counts["conversations_written"] == whole
    archive.close()
    archive, again = ingest(tmp_path / "data", path, force=True)
    assert again.counts["quarantined"] == 1
    assert archive.execute("SELECT COUNT(*) FROM quarantine").fetchone()[0] == 1  # not written twice


@pytest.mark.prefect
def test_a_file_cut_short_exits_1_at_every_run_while_it_stays_cut(tmp_path: Path) -> None:
    """A scheduled `chatmem run` over a file cut short sees the fault at every run, not once: the re-run reads it
    again (what arrived is not written again: known by its bytes), says it cut short with what the archive holds and
    exits 1, as a file that failed does. Before, the re-run said "nothing new" and exited 0. The whole file, once
    there, arrives and the runs exit 0."""
    path, whole = _cut(tmp_path / "conversations.json")
    data_dir = tmp_path / "data"
    first = _chatmem(data_dir, "-q", "run", path, "--only", "ingest")
    assert first.exit_code == 1 and f"{whole} complete conversation(s) arrived" in first.stdout, first.output
    for _ in range(2):
        again = _chatmem(data_dir, "-q", "run", path, "--only", "ingest")
        assert again.exit_code == 1, again.output
        assert "nothing new:" not in again.stdout and ": incomplete: 1 file cut short (exit code 1)" in again.stdout
        assert "nothing new before the cut" in again.stdout and "1 file cut short in run" in again.stderr
    counts = _ingest_counts(_chatmem(data_dir, "-q", "run", path, "--only", "ingest", "--json"))
    assert counts["counts"]["conversations_known_by_bytes"] == whole and counts["counts"]["messages_inserted"] == 0
    assert counts["counts"]["quarantined"] == 1 and [f["status"] for f in counts["files"]] == ["partial"]
    path.write_text(json.dumps(make_chatgpt_export(whole + 1)), encoding="utf-8")  # the whole download
    done = _chatmem(data_dir, "-q", "run", path, "--only", "ingest")
    assert done.exit_code == 0, done.output
    assert _chatmem(data_dir, "-q", "run", path, "--only", "ingest").stdout.startswith("nothing new:")


def test_invalid_utf8_in_a_file_cut_short_keeps_its_note_and_names_the_files_byte(tmp_path: Path) -> None:
    """Bad bytes and a cut: the file's detail says both, the bytes replaced and why the rest is unreadable, at the
    byte of the file (the end: it was cut there). Before, the note was lost and the offset counted the U+FFFD
    written in place of the bad bytes (3 bytes each for 1 here)."""
    export = make_chatgpt_export(6)
    export[1]["title"] = "TITLE1"
    data = json.dumps(export).encode().replace(b"TITLE1", b"\xff\xfe\xfd", 1)
    cut = data[: data.rindex(b'{"id": "c') + 40]
    path, twin = tmp_path / "conversations.json", tmp_path / "twin.json"
    path.write_bytes(cut)
    twin.write_bytes(cut.replace(b"\xff\xfe\xfd", b"abc"))  # the same bytes but valid: its offset is the file's
    _, result = ingest(tmp_path / "data", path)
    assert result.counts["files_partial"] == 1 and result.counts["conversations_written"] == 5
    [note] = result.notes
    assert "3 invalid UTF-8 byte sequence(s) replaced with U+FFFD" in note, note
    _, valid = ingest(tmp_path / "twin", twin)
    offset = valid.notes[0].rpartition(" at byte ")[2]
    assert int(offset) > cut.index(b"\xff") and note.endswith(f" at byte {offset}"), (note, valid.notes)


def test_the_repaired_stream_is_what_decode_replace_gives_and_maps_back_to_the_files_bytes() -> None:
    """The second pass's reader over bad bytes everywhere (at chunk and window edges, a character cut by a read, a
    U+FFFD the file holds): the bytes of `decode(errors="replace")`, its invalid sequences counted (not the U+FFFD
    that was in the file), and every offset of the output named in the file."""
    import contextlib
    import io

    from ingest.utf8_repair import Utf8RepairReader

    good = "aé€😀\ufffd".encode()
    head = good * 70000 + b"\xff" + good * 3
    head += b"b" * ((1 << 20) - 1 - len(head))  # a cut character across the first 1 MiB read, then a bad byte
    pieces = [head, b"\xe2\x82", b"x", b"\xc3", good * 100000, b"\xf0\x9f\x98"]
    data = b"".join(pieces)
    reader = Utf8RepairReader(io.BytesIO(data))  # type: ignore[arg-type]
    out = b""
    while chunk := reader.read(50_000):
        out += chunk
    expected = data.decode("utf-8", errors="replace")
    assert out == expected.encode()
    assert reader.replacements == 4
    reopen = lambda: contextlib.nullcontext(io.BytesIO(data))  # noqa: E731
    x = len(head) + 2 + 3  # the x after the cut character: the head's one bad byte grew by 2, the cut one is U+FFFD
    assert out[x : x + 1] == b"x" and reader.file_offset(x, reopen) == len(head) + 2  # type: ignore[arg-type]
    # each character of the output found at its offset in the file: valid ones as themselves, U+FFFD of bad bytes
    position = 0
    for char in expected[::997]:
        at = out.index(char.encode(), position)
        position = at
        mapped = reader.file_offset(at, reopen)  # type: ignore[arg-type]
        if char != "\ufffd":
            assert data[mapped : mapped + len(char.encode())] == char.encode()


@pytest.mark.prefect
def test_the_run_summary_says_the_cut_and_the_replaced_bytes_of_one_file(tmp_path: Path) -> None:
    """The file's line in `chatmem run`: why the rest is unreadable, then the bytes replaced, once each (before, the
    replaced bytes were not said, and a note beside the cut would have been read as part of its reason)."""
    data = json.dumps(make_chatgpt_export(6)).replace("turn 1 of c1", "TURN").encode().replace(b"TURN", b"\xff", 1)
    path = tmp_path / "conversations.json"
    path.write_bytes(data[: data.rindex(b'{"id": "c') + 40])
    done = _chatmem(tmp_path / "data", "-q", "run", path, "--only", "ingest")
    assert done.exit_code == 1, done.output
    [line] = [line for line in done.stdout.splitlines() if line.strip().startswith("cut short:")]
    assert line.endswith("(also: 1 invalid UTF-8 byte sequence(s) replaced with U+FFFD)"), line
    assert "the rest could not be read: invalid or truncated JSON" in line and line.count("invalid UTF-8") == 1, line
