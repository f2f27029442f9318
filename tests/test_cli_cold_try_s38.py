"""Faults session 38's cold try met (helper-173): each through the real CLI (a process of its own, or click's runner)
on real files under tmp_path with real SQLite."""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import tarfile
from pathlib import Path

from fault_support import chatmem_command, process_env, write_chats


def test_a_clean_data_dir_on_a_read_only_mount_answers_archive_stats(tmp_path: Path) -> None:
    """A data dir whose archive.db was closed cleanly (no -wal left: the usual state after a run) copied onto a
    read-only mount: `archive stats` and `recall` said "archive.db: cannot be opened or written (SQLITE_CANTOPEN)",
    while `concepts` and `staging runs` (staging.db still had its -wal) answered. SQLite in WAL mode opens the -wal,
    which a read-only mount cannot create, even without the -shm. Here the -wal and -shm are links into a folder
    that does not exist: as on a read-only mount (root's permissions stop nothing), neither can be created."""
    data_dir = tmp_path / "data"
    env = process_env(tmp_path / "prefect")
    export = write_chats(tmp_path / "small.jsonl", 3)
    command = [*chatmem_command(), "--data-dir", str(data_dir)]
    done = subprocess.run(
        [*command, "-q", "run", str(export), "--only", "ingest"], capture_output=True, text=True, env=env
    )
    assert done.returncode == 0, done.stderr[-2000:]
    copy = tmp_path / "copy"
    shutil.copytree(data_dir, copy, ignore=shutil.ignore_patterns("*-shm", "archive.db-wal"))
    assert not (data_dir / "archive.db-wal").exists(), "archive.db closed cleanly: the case this test is about"
    for suffix in ("-wal", "-shm"):
        (copy / f"archive.db{suffix}").symlink_to(tmp_path / "no-such-folder" / f"archive{suffix}")
    command = [*chatmem_command(), "--data-dir", str(copy)]
    stats = subprocess.run([*command, "archive", "stats", "--json"], capture_output=True, text=True, env=env)
    assert stats.returncode == 0, stats.stderr
    assert json.loads(stats.stdout)["conversations"] == 3


def test_the_words_a_new_user_tries_first_point_at_the_command_that_does_it() -> None:
    """`chatmem ask "..."` said "No such command 'ask'." and nothing else (no command is spelt near it); so did
    `query`, `search`, `stats`, `status`. Each now names the command that does it; typos keep difflib's hints."""
    from click.testing import CliRunner

    from flows.cli import cli

    for word, command in (
        ("ask", "recall"),
        ("search", "recall"),
        ("stats", "archive stats"),
        ("status", "staging runs"),
    ):
        result = CliRunner().invoke(cli, [word, "lisbon trip"])
        assert result.exit_code == 2, result.output
        assert f"No such command '{word}'. Did you mean '{command}'" in result.output, result.output
    typo = CliRunner().invoke(cli, ["recal", "lisbon"])
    assert "Did you mean 'recall' or 'eval'?" in typo.output, typo.output


def test_a_compressed_export_says_what_it_is_and_to_unpack_it(tmp_path: Path) -> None:
    """`chatmem run export.json.gz` (or a .tar.gz) said "not a JSON list or object: 492 bytes of binary data": true,
    and no help to someone who compressed an export to move it; a .tar of a JSONL file was read as JSONL (its lines
    between the tar's headers ingested, the headers quarantined as bad lines, exit 0). Now each names its format and
    says to unpack it."""
    from click.testing import CliRunner

    from flows.cli import cli

    export = write_chats(tmp_path / "chats.jsonl", 2)
    packed = tmp_path / "chats.jsonl.gz"
    packed.write_bytes(gzip.compress(export.read_bytes()))
    with tarfile.open(tmp_path / "chats.tar", "w") as tar:
        tar.add(export, arcname="chats.jsonl")
    for path, what in ((packed, "gzip-compressed"), (tmp_path / "chats.tar", "a tar archive")):
        result = CliRunner().invoke(cli, ["--data-dir", str(tmp_path / "data"), "run", "--only", "ingest", str(path)])
        assert result.exit_code == 1, result.output
        assert f"{path}: not a JSON list or object: the file is {what}; unpack it" in result.output, result.output


def test_a_folder_says_a_packed_file_in_it_may_hold_an_export(tmp_path: Path) -> None:
    """`chatmem run DOWNLOADS` where the export is DOWNLOADS/chats.jsonl.gz: "no export found in it ...; left out 1:
    chats.jsonl.gz (not an export)". Now the reason says it is packed, and to unpack it."""
    from click.testing import CliRunner

    from flows.cli import cli

    folder = tmp_path / "downloads"
    folder.mkdir()
    (folder / "chats.jsonl.gz").write_bytes(gzip.compress(write_chats(tmp_path / "chats.jsonl", 2).read_bytes()))
    result = CliRunner().invoke(cli, ["--data-dir", str(tmp_path / "data"), "run", "--only", "ingest", str(folder)])
    assert result.exit_code == 1, result.output
    assert "left out 1: chats.jsonl.gz (compressed or archived: unpack it if an export is inside)" in result.output


def test_a_missing_llm_key_is_said_before_any_stage_runs(tmp_path: Path) -> None:
    """CHATMEM_EXTRACT__LLM__MODEL set, no key and no base URL: `chatmem run EXPORT` ran ingest, segment and embed
    (the Prefect server, the embedding model: a minute on the cold try's machine) and only then said "no key is
    set", exit 2. Now it says so first: exit 2, nothing ingested, no data dir made."""
    from click.testing import CliRunner

    from flows.cli import cli

    export = write_chats(tmp_path / "chats.jsonl", 2)
    data_dir = tmp_path / "data"
    env = {"CHATMEM_EXTRACT__LLM__MODEL": "gpt-5-mini", "OPENAI_API_KEY": None, "OPENAI_BASE_URL": None}
    env |= {"CHATMEM_EXTRACT__LLM__API_KEY": None, "CHATMEM_EXTRACT__LLM__BASE_URL": None}
    result = CliRunner().invoke(cli, ["--data-dir", str(data_dir), "run", str(export)], env=env)
    assert result.exit_code == 2, result.output
    assert "the LLM extractor talks to OpenAI's API but no key is set" in result.output, result.output
    assert not (data_dir / "archive.db").exists(), "nothing is ingested before the refusal"
    assert "ingest: succeeded" not in result.output, result.output


def test_serve_once_says_a_missing_llm_key_before_its_tick(tmp_path: Path) -> None:
    """The same for `serve --once --watch DIR`: its tick ran ingest, segment and embed, then failed in extract."""
    from click.testing import CliRunner

    from flows.cli import cli

    watch = tmp_path / "dumps"
    write_chats(watch / "chats.jsonl", 2)
    data_dir = tmp_path / "data"
    env = {"CHATMEM_EXTRACT__LLM__MODEL": "gpt-5-mini", "OPENAI_API_KEY": None, "OPENAI_BASE_URL": None}
    env |= {"CHATMEM_EXTRACT__LLM__API_KEY": None, "CHATMEM_EXTRACT__LLM__BASE_URL": None}
    result = CliRunner().invoke(cli, ["--data-dir", str(data_dir), "serve", "--once", "--watch", str(watch)], env=env)
    assert result.exit_code == 2, result.output
    assert "the LLM extractor talks to OpenAI's API but no key is set" in result.output, result.output
    assert not (data_dir / "archive.db").exists(), "nothing is ingested before the refusal"


def test_staging_show_without_a_table_names_some(tmp_path: Path) -> None:
    """`chatmem staging show` said "Missing argument 'TABLE'." and named none; now it names the ones a person looks
    at first and where the whole list is, from click alone (a usage error opens no database). Exit 2 as before."""
    from click.testing import CliRunner

    from flows.cli import cli

    data_dir = tmp_path / "data"
    ingest = CliRunner().invoke(
        cli, ["--data-dir", str(data_dir), "run", "--only", "ingest", str(write_chats(tmp_path / "c.jsonl", 2))]
    )
    assert ingest.exit_code == 0, ingest.output
    result = CliRunner().invoke(cli, ["--data-dir", str(data_dir), "staging", "show"])
    assert result.exit_code == 2, result.output
    assert "Missing argument 'TABLE': a table of staging.db or archive.db" in result.output, result.output
    assert "e.g. runs, stage_runs, ingest_files, quarantine" in result.output, result.output
    assert "`chatmem staging tables` lists them all" in result.output, result.output
