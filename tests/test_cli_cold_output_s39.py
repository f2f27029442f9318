"""The output faults session 38's cold try found and left (benchmarks/RESULTS.md, session 38, "Not fixed"), as a new
user sees them: each through the real CLI (click's runner, or a process of its own) on real files under tmp_path with
real SQLite."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from fault_support import chatmem_command, process_env, write_chats

from flows.cli import cli
from flows.summary_lines import shown_notes

PROGRESS = re.compile(r"^\d\d:\d\d:\d\d chatmem ")  # the timestamped lines a run says on stderr as it goes


def chatmem(data_dir: Path, *args: str | Path) -> Result:
    return CliRunner().invoke(cli, ["--data-dir", str(data_dir), *map(str, args)], env={"COLUMNS": "120"})


@pytest.mark.prefect
def test_the_run_summary_shows_what_each_stage_made_and_the_rest_behind_verbose(tmp_path: Path) -> None:
    """The demo's summary was 39 lines: every stage's 10-20 counters, every note. Now each stage's line says what it
    made (its zero counters and its details left out), the notes that are news stay, and one line says where the rest
    is; --verbose shows every count and note, --json keeps them all."""
    export = write_chats(tmp_path / "chats.jsonl", 3)
    data_dir = tmp_path / "data"
    done = chatmem(data_dir, "run", export, "--to", "embed")
    assert done.exit_code == 0, done.output
    lines = done.stdout.splitlines()
    [ingest] = [line for line in lines if line.startswith("  ingest: ")]
    assert ingest == "  ingest: succeeded; files 1, files failed 0, conversations written 3, messages inserted 18"
    assert any(line.startswith("  segment: succeeded; conversations segmented 3, segments written") for line in lines)
    assert "messages unchanged" not in done.stdout and "cuts budget" not in done.stdout, done.stdout
    assert "note: model: " not in done.stdout, done.stdout  # the embedding model's key: a detail
    assert lines[-1] == "  (every count and note: chatmem --verbose run ..., or run ... --json)", done.stdout
    verbose = chatmem(tmp_path / "data-v", "-v", "run", export, "--to", "embed")
    assert verbose.exit_code == 0, verbose.output
    assert "messages unchanged 0" in verbose.stdout and "note: model: " in verbose.stdout, verbose.stdout
    assert "(every count and note" not in verbose.stdout
    as_json = chatmem(tmp_path / "data-j", "run", export, "--to", "embed", "--json")
    assert as_json.exit_code == 0, as_json.output
    stages = {stage["stage"]: stage for stage in json.loads(as_json.stdout)["stages"]}
    assert stages["ingest"]["counts"]["messages_unchanged"] == 0 and stages["ingest"]["counts"]["files_skipped"] == 0
    assert any(note.startswith("model: ") for note in stages["embed"]["notes"])


def test_the_loads_notes_on_layer_groups_diffed_whole_are_one_line_with_their_count() -> None:
    """The load stage's notes of a first load, as the demo's run gave them: ten lines, seven of them one per group of
    layers "diffed whole", one of 19 per-layer row counts. Shown: the graph's note, one line for the seven (their
    number and reason kept); the rest with --verbose (and in --json)."""
    why = "no mark of an earlier finished load of this manifest"
    graph = "graph: started the local ArcadeDB server for this run at bolt://127.0.0.1:42301, database chatmem"
    groups = ["archive layers", "Segment, Segment-CONTAINS_MESSAGE-Message", "Message-EVIDENCE_FOR-Concept"]
    groups += ["Concept", "Topic", "Segment-BELONGS_TO-Topic", "Concept-BELONGS_TO-Topic"]
    notes = [graph, *(f"{group}: diffed whole ({why})" for group in groups)]
    notes.append("rows read per layer: Conversation 320, Message 3529, Segment 919, Concept 4577, Topic 36")
    assert shown_notes(notes, verbose=False) == [graph, f"7 group(s) of graph layers diffed whole ({why})"]
    assert shown_notes(notes, verbose=True) == notes
    warning = "12 edge(s) found no end node: not marked loaded, retried next load"  # a note not known: shown
    assert shown_notes([*notes, warning], verbose=False)[-1] == warning


@pytest.mark.prefect
def test_a_run_says_it_is_starting_and_each_stage_as_it_begins(tmp_path: Path) -> None:
    """Nothing was said for the first 35-60 s of a run on a busy machine (Prefect's start, the imports): a Ctrl-C
    then said "before the run started". Now one line as Prefect starts, one as each stage begins its work (a stage
    skipped as unchanged has its one line), none with -q; --json's stdout is the JSON alone."""
    export = write_chats(tmp_path / "chats.jsonl", 2)
    done = chatmem(tmp_path / "data", "run", export, "--to", "segment")
    assert done.exit_code == 0, done.output
    said = [PROGRESS.sub("", line) for line in done.stderr.splitlines()]
    assert said[0] == "starting: Prefect, then ingest to segment (2 stages)", done.stderr
    assert said[1:3] == ["ingest: started", said[2]] and said[2].startswith("ingest: succeeded in "), said
    assert said[3] == "segment: started" and said[4].startswith("segment: succeeded in "), said
    quiet = chatmem(tmp_path / "data-q", "-q", "run", export, "--to", "segment")
    assert quiet.exit_code == 0 and quiet.stderr == "", quiet.stderr
    as_json = chatmem(tmp_path / "data-j", "run", export, "--to", "segment", "--json")
    assert as_json.exit_code == 0 and json.loads(as_json.stdout)["status"] == "succeeded"
    assert "ingest: started" in as_json.stderr


@pytest.mark.prefect
def test_archive_stats_parts_add_up_to_the_messages_and_say_what_they_are(tmp_path: Path, chatgpt_export: Path) -> None:
    """rainchinchao's `archive stats`: messages 159, active_messages 145, hidden_messages 33, and nothing said that the
    33 hidden system messages were among the 145 active ones. Now the text shows three parts that add up to the
    messages, each saying what it is; --json keeps its keys and adds the two that make the sum."""
    data_dir = tmp_path / "data"
    assert chatmem(data_dir, "-q", "run", chatgpt_export, "--only", "ingest").exit_code == 0
    stats = json.loads(chatmem(data_dir, "archive", "stats", "--json").stdout)
    assert stats["visible_messages"] + stats["other_branch_messages"] <= stats["messages"]
    hidden_active = stats["active_messages"] - stats["visible_messages"]
    assert stats["visible_messages"] + hidden_active + stats["other_branch_messages"] == stats["messages"]
    assert stats["other_branch_messages"] == stats["messages"] - stats["active_messages"]
    text = chatmem(data_dir, "archive", "stats").stdout
    parts = {line.split()[0]: int(line[16:24]) for line in text.splitlines() if line.startswith("  ")}
    assert parts == {
        "visible": stats["visible_messages"],
        "hidden": hidden_active,
        "other": stats["other_branch_messages"],
    }, text
    assert sum(parts.values()) == stats["messages"] and f"messages        {stats['messages']} " in text, text
    assert "shown by the chat app" in text and "edited or regenerated away" in text, text


def test_a_truncated_json_list_says_truncated_json_and_where(tmp_path: Path) -> None:
    """A folder holding `[1,2` (a file cut after its second number) was "JSON list of an unknown shape (first
    record's keys: none)". Now it says truncated JSON and where the file ends; `[1, 2]` says what its items are."""
    folder = tmp_path / "dumps"
    folder.mkdir()
    (folder / "cut.json").write_text("[1,2", encoding="utf-8")
    done = chatmem(tmp_path / "data", "run", folder)
    assert done.exit_code == 1, done.output
    said = "truncated JSON: the file ends at line 1, column 5 before its list closes (4 bytes)"
    assert said in done.output and "unknown shape" not in done.output, done.output
    (folder / "cut.json").write_text("[1, 2]\n", encoding="utf-8")
    whole = chatmem(tmp_path / "data", "run", folder / "cut.json")
    assert whole.exit_code == 1 and "JSON list of numbers, not of conversations (objects)" in whole.output, whole.output
    (folder / "cut.json").write_text('[{"a": 1}, {"b": [1, }]', encoding="utf-8")
    broken = chatmem(tmp_path / "data", "run", folder / "cut.json")
    assert broken.exit_code == 1 and "invalid JSON (parse error: " in broken.output, broken.output
    assert "at line 1, column " in broken.output, broken.output


@pytest.mark.prefect
def test_serve_once_says_a_file_cut_short_in_its_summary_only(tmp_path: Path, chatgpt_export: Path) -> None:
    """`serve --once --watch DIR` with an export cut short printed Prefect's raw `WARNING prefect.flow_runs: watch -
    ... arrived only partly: ...` line before its summary, which says the same. Now the summary alone says it, and
    a file left out in the folder is said with why (it said "--json lists them")."""
    watch = tmp_path / "watch"
    watch.mkdir()
    [conversation] = json.loads(chatgpt_export.read_text())
    second = json.loads(json.dumps(conversation).replace(conversation["id"], "second-conversation"))
    text = "[" + json.dumps(conversation) + ", " + json.dumps(second)
    (watch / "cut.json").write_text(text[: len(text) - len(json.dumps(second)) // 2])  # cut inside the second
    (watch / "notes.txt").write_text("not an export", encoding="utf-8")
    env = process_env(tmp_path / "prefect")
    command = [*chatmem_command(), "--data-dir", str(tmp_path / "data"), "serve", "--once", "--watch", str(watch)]
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)
    assert "WARNING" not in done.stderr and "prefect.flow_runs" not in done.stderr, done.stderr[-3000:]
    said = f"cut short: {watch / 'cut.json'}: 1 complete conversation(s) arrived; the rest could not be read: "
    assert said in done.stdout, done.stdout
    assert "\n  left out 1: notes.txt (not an export)\n" in done.stdout, done.stdout


TINY_RUN = """
import sys
from click.testing import CliRunner
from flows.cli import cli
done = CliRunner().invoke(cli, sys.argv[1:])
print(done.exit_code, "umap" in sys.modules, "optuna" in sys.modules, "hdbscan" in sys.modules)
print(done.stderr)
"""


@pytest.mark.prefect
def test_a_tiny_export_runs_its_stages_in_the_runner_and_its_cluster_stage_imports_nothing_heavy(
    tmp_path: Path,
) -> None:
    """2 conversations cost ~50 s: concepts, cluster and cues each started a process of its own (a start and the
    imports again) on a first run, and the cluster stage spent seconds to skip 2 points. Now an archive of fewer
    segments than cluster.min_points keeps its stages in the runner's process (flows/stage_size.py), and the
    skipped cluster stage imports neither UMAP, HDBSCAN nor Optuna."""
    export = write_chats(tmp_path / "chats.jsonl", 2)
    env = process_env(tmp_path / "prefect", CHATMEM_RUNNER__STAGE_PROCESSES="true")  # as `chatmem run` runs
    args = ["--data-dir", str(tmp_path / "data"), "-v", "run", str(export), "--to", "cues"]
    command = [sys.executable, "-c", TINY_RUN, *args]
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)
    first, _, log = done.stdout.partition("\n")
    assert first == "0 False False False", done.stdout[-3000:] + done.stderr[-3000:]
    assert "in a process of its own" not in log, log
    for stage in ("concepts", "cluster", "cues"):
        assert f"{stage}: in the run's process (a small run" in log, log
