"""What session 34's cold try found in the CLI and left (a fresh clone, the README's commands, real exports, bad input
of its own): the hint for a path that does not exist, a re-export's taken ids in `staging failures`, paths said as
typed (`clone/../shared/...`), `staging show` of an unknown table, a JSONL file read as ChatGPT. Each through the real
CLI on real files under tmp_path."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from test_ingest_stage import ingest, make_chatgpt_export, write_json

from flows.cli import cli


def chatmem(data_dir: Path, *args: str | Path, columns: int = 120) -> Result:
    return CliRunner().invoke(
        cli, ["--data-dir", str(data_dir), *map(str, args)], env={"COLUMNS": str(columns)}, catch_exceptions=False
    )


@pytest.mark.prefect
def test_a_missing_path_beside_good_files_is_said_not_to_exist_not_to_be_fixed(
    tmp_path: Path, chatgpt_export: Path
) -> None:
    """The rest runs first (by design: flows/preflight.py), then the error line: for a path that does not exist there
    is no file to fix: it says the path does not exist. Before: "fix the file and run again"."""
    missing = tmp_path / "typo.json"
    done = chatmem(tmp_path / "data", "-q", "run", chatgpt_export, missing, "--only", "ingest")
    assert done.exit_code == 1 and f"ingested: {chatgpt_export}" in done.stdout, done.output
    [error] = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert "the path does not exist: check it, or leave it out of the command" in error, error
    assert "fix the file" not in error, error
    # beside a zip whose conversations.json is broken (its path "x.zip!conversations.json" is no file either): that
    # one is to fix, the missing one to check
    zipped = tmp_path / "broken.zip"
    with zipfile.ZipFile(zipped, "w") as archive:
        archive.writestr("conversations.json", '[{"mapping": {}, "id": "c1", !')  # read as ChatGPT, then broken
    both = chatmem(tmp_path / "data", "-q", "run", chatgpt_export, missing, zipped, "--only", "ingest")
    [error] = [line for line in both.stderr.splitlines() if line.startswith("error:")]
    assert error.endswith(
        f"; fix the file and run again; {missing} does not exist: check it, or leave it out of the command"
        f" (chatmem --data-dir {tmp_path / 'data'} staging failures lists them)"  # pasted anywhere: flows/hints.py
    ), error


def test_a_re_exports_taken_ids_are_one_group_in_staging_failures(tmp_path: Path) -> None:
    """An export read again under new conversation ids (its message ids kept): every message is quarantined with a
    reason naming its id, and `staging failures` showed one block per message. Now one block per file: the count and
    a few of its conversations; another reason in the same file keeps its own block."""
    data_dir = tmp_path / "data"
    ingest(data_dir, write_json(tmp_path / "first.json", make_chatgpt_export(5)))
    moved = make_chatgpt_export(5)
    for conversation in moved:
        conversation["id"] = conversation["conversation_id"] = "re-" + conversation["id"]
    del moved[0]["mapping"]  # and one conversation that is no conversation: a reason of its own
    again = write_json(tmp_path / "again.json", moved)
    archive, result = ingest(data_dir, again)
    archive.close()
    assert result.counts["quarantined"] == 17
    shown = chatmem(data_dir, "staging", "failures", "--json")
    assert shown.exit_code == 0, shown.output
    groups = json.loads(shown.stdout)["quarantine"]
    assert [(g["source"], g["rows"]) for g in groups] == [(str(again), 16), (str(again), 1)], groups
    assert groups[0]["reason"] == (
        "message ids already in the archive under other conversation ids; not overwritten"
        " (4 conversation(s): re-c1, re-c2, re-c3 and 1 more)"
    )
    text = chatmem(data_dir, "staging", "failures").stdout
    assert text.count(str(again)) == 2 and "re-c4" not in text, text


@pytest.mark.prefect
def test_paths_given_with_dot_dot_are_said_folded_and_a_symlinks_dot_dot_as_the_file_it_names(
    tmp_path: Path, chatgpt_export: Path
) -> None:
    """`clone/../shared/x.json` is said (and recorded) as `shared/x.json`: the summary, the error line and `staging
    failures` name the file as a person would. Through a symlinked folder `..` goes where the link points: folded
    by its letters it would name another file, so that path is said resolved."""
    (tmp_path / "clone").mkdir()
    (tmp_path / "shared" / "deep").mkdir(parents=True)
    good = tmp_path / "shared" / "conversations.json"
    good.write_bytes(chatgpt_export.read_bytes())
    (tmp_path / "link").symlink_to(tmp_path / "shared" / "deep")
    (tmp_path / "shared" / "other.json").write_text("{not json", encoding="utf-8")
    decoy = tmp_path / "other.json"  # where `link/../other.json` would lead if folded by its letters
    decoy.write_text("[]", encoding="utf-8")
    data_dir = tmp_path / "data"
    given = [tmp_path / "clone" / ".." / "shared" / "conversations.json", tmp_path / "link" / ".." / "other.json"]
    done = chatmem(data_dir, "-q", "run", *given, tmp_path / "clone" / ".." / "typo.json", "--only", "ingest")
    assert done.exit_code == 1, done.output
    assert f"ingested: {good}: 1 conversation(s)" in done.stdout, done.stdout
    broken = (tmp_path / "shared" / "other.json").resolve()  # said resolved: tmp_path's own links too
    assert f"failed: {broken}: " in done.stdout, done.stdout
    assert f"failed: {tmp_path / 'typo.json'}: no such file" in done.stdout, done.stdout
    assert "/../" not in done.output and str(decoy) + ":" not in done.output, done.output
    failures = chatmem(data_dir, "staging", "failures", "--json")
    paths = {row["path"] for row in json.loads(failures.stdout)["files"]}
    assert paths == {str(broken), str(tmp_path / "typo.json")}, paths


def test_an_unknown_table_names_the_closest_ones_not_all_ninety(tmp_path: Path) -> None:
    """`staging show` (and `staging export`) of a table no database holds: a short line with the closest names and the
    command that lists them all. Before: every table of both databases on one line, schema_migrations twice."""
    data_dir = tmp_path / "data"
    ingest(data_dir, write_json(tmp_path / "conversations.json", make_chatgpt_export(1)))[0].close()
    for args in (["show", "ingest_file"], ["export", "ingest_file", "--out", str(tmp_path / "x.csv")]):
        shown = chatmem(data_dir, "staging", *args)
        assert shown.exit_code == 2, shown.output
        [line] = [line for line in shown.stderr.splitlines() if line.strip()]
        assert line == (
            "error: unknown table 'ingest_file'; did you mean ingest_files? "
            f"(`chatmem --data-dir {data_dir} staging tables` lists them all)"
        ), line
    nope = chatmem(data_dir, "staging", "show", "nope")
    assert nope.exit_code == 2 and "schema_migrations" not in nope.stderr and "lists them all" in nope.stderr
    garden = chatmem(data_dir, "staging", "show", "garden").stderr
    # a part of the names: a few of them (the line also names the data dir, in the hint)
    assert garden.count("garden_") == 4 and len(garden) - len(str(data_dir)) < 200, garden


@pytest.mark.prefect
def test_a_jsonl_file_read_with_format_chatgpt_says_to_use_format_jsonl(tmp_path: Path, jsonl_export: Path) -> None:
    """A JSONL file read as ChatGPT fails as JSON ("trailing garbage" after its first line); the line now says what
    detection sees and the --format to use, as for a file of which nothing could be read."""
    done = chatmem(tmp_path / "data", "-q", "run", jsonl_export, "--format", "chatgpt", "--only", "ingest")
    assert done.exit_code == 1, done.output
    said = "it looks like jsonl: run with --format jsonl (or without --format)"
    assert said in done.stdout and said in done.stderr, done.output


def test_jsonl_written_in_brackets_is_read_as_jsonl_and_a_json_list_of_messages_is_still_refused(
    tmp_path: Path, jsonl_export: Path
) -> None:
    """A file starting with `[` whose lines are JSON objects with no commas between them (`[` alone on the first line
    and `]` on the last, or `[` glued to the first object) is JSONL in brackets: it is read as JSONL, every message
    arrives, the brackets are no bad line. Before: refused as a JSON message list ("write one message per line
    instead", which it is). A JSON array of the same messages (commas) is still refused so."""
    from contracts.errors import UnsupportedFormatError
    from ingest.detect import detect_format

    lines = jsonl_export.read_text(encoding="utf-8").splitlines()
    alone = tmp_path / "alone.jsonl"
    alone.write_text("\n".join(["[", *lines, "]"]) + "\n", encoding="utf-8")
    glued = tmp_path / "glued.jsonl"
    glued.write_text("[" + "\n".join(lines) + "\n", encoding="utf-8")
    for path in (alone, glued):
        assert detect_format(path.read_bytes(), name=path.name) == "jsonl"
        archive, result = ingest(tmp_path / path.stem, path)
        assert result.counts["messages_inserted"] == 6 and result.counts["quarantined"] == 0, result.counts
        assert archive.execute("SELECT COUNT(*) FROM conversations").fetchone()[0] == 2
    array = ("[\n" + ",\n".join(lines) + "\n]\n").encode()
    assert json.loads(array)  # valid JSON: a list of messages
    with pytest.raises(UnsupportedFormatError, match="json-message-list"):
        detect_format(array, name="array.json")
