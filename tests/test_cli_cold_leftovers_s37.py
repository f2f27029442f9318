"""Faults session 36's cold try met and left: each through the real CLI (click's runner) or the real module, on real
files under tmp_path with real SQLite."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner, Result
from test_ingest_stage import make_chatgpt_export, write_json

from flows.cli import cli


def chatmem(data_dir: Path, *args: str | Path) -> Result:
    return CliRunner().invoke(cli, ["--data-dir", str(data_dir), *map(str, args)], env={"COLUMNS": "120"})


def test_run_given_a_data_dir_says_what_it_is_and_reads_only_the_exports_in_it(tmp_path: Path) -> None:
    """`chatmem --data-dir X run X` said "no export found in it", and `chatmem run OTHER` (OTHER a data dir) failed
    on its chatmem.lock, graph/server.json and load-*.json "JSON object of an unknown shape". Now a data dir given
    as the folder is said as one ("its state is not read as exports; give the export files...") with no failed
    row for its own files, and an export dropped in it (or in a subfolder of it) still arrives."""
    data_dir = tmp_path / "dd"
    built = chatmem(data_dir, "run", "--to", "ingest", write_json(tmp_path / "first.json", make_chatgpt_export(1)))
    assert built.exit_code == 0, built.output
    (data_dir / "graph").mkdir()
    write_json(data_dir / "graph" / "server.json", {"pid": 1, "bolt_port": 7687})  # as load writes them
    write_json(data_dir / "load-archive.json", {"local:/x/graph#chatmem": {"nodes": 3}})
    write_json(data_dir / "a-newer-state.json", {"not": "an export"})  # state no list names: left out by its shape

    own = chatmem(data_dir, "run", "--to", "ingest", data_dir)
    assert own.exit_code == 1, own.output
    assert f"{data_dir}: this command's data dir (--data-dir): its state is not read as exports" in own.stderr
    assert "give the export files, or the folder they are in" in own.stderr, own.stderr
    assert "unknown shape" not in own.output and "chatmem.lock" not in own.output, own.output
    assert "no export found" not in own.stderr, own.stderr

    other = chatmem(tmp_path / "dd-2", "run", "--to", "ingest", data_dir)
    assert other.exit_code == 1 and f"{data_dir}: a chatmem data dir: its state is not read" in other.stderr
    assert "unknown shape" not in other.output and "server.json" not in other.output, other.output

    inside = chatmem(data_dir, "run", "--to", "ingest", data_dir / "graph")
    assert inside.exit_code == 1 and "inside this command's data dir" in inside.stderr, inside.output
    watched = chatmem(data_dir, "serve", "--once", "--watch", data_dir)  # the watch says it as run does
    assert watched.exit_code == 0 and "this command's data dir (--data-dir): its state is not read" in watched.output

    # exports the user put in the data dir, at its top and in a folder of their own there, are read
    write_json(data_dir / "dropped.json", make_chatgpt_export(2, prefix="d"))
    (data_dir / "downloads").mkdir()
    write_json(data_dir / "downloads" / "conversations.json", make_chatgpt_export(1, prefix="e"))
    both = chatmem(data_dir, "run", "--to", "ingest", "--json", data_dir)
    assert both.exit_code == 0, both.output
    assert "this command's data dir (--data-dir): its state is not read" in both.stderr, both.stderr
    assert "2 export(s) found" in both.stderr and "a-newer-state.json (in a chatmem data dir" in both.stderr
    assert "unknown shape" not in both.output and "load-archive" not in both.output, both.output


def test_the_data_dir_state_names_are_those_the_modules_write() -> None:
    """The names a data dir's top level is left out by are the modules' own: a renamed file would be read again."""
    from cluster.saved_model import MODEL_DIR
    from flows.export_paths import DATA_DIR_STATE, is_state
    from flows.preflight import STARTING_NAME
    from flows.serve import SAID_FILE
    from memory import cues_state, index_store
    from staging import archive_loaded, memory_loaded, staging_loaded
    from staging.frames import DATABASE_FILES
    from staging.lock import LOCK_NAME, SERVE_LOCK_NAME

    written = {MODEL_DIR, STARTING_NAME, SAID_FILE, cues_state.DIRECTORY, index_store.DIRECTORY, LOCK_NAME}
    written |= {SERVE_LOCK_NAME, archive_loaded.FILE, memory_loaded.FILE, staging_loaded.FILE}
    written |= set(DATABASE_FILES.values()) | {"optuna.db", "graph", "prefect", "reports", "eval"}
    assert written <= DATA_DIR_STATE, written - DATA_DIR_STATE
    assert is_state("staging.db-wal") and is_state("optuna.db-journal") and not is_state("export.json")


def test_a_question_s_words_about_the_asking_activate_no_cue() -> None:
    """`recall "what did I request, asking about my mortgage pre-approval"` on the demo showed the cues "request,
    asking", "Leave requests" beside "Pre-approval amount": the question's own wording. Now the words about asking
    or remembering (in their inflections) reach no cue; the content words still do, and a question of nothing else
    ("what was our discussion?") keeps them (no content word to go by)."""
    from memory_support import memory, msg

    from contracts.memory import RecallRequest
    from memory.graph import EvidenceInput
    from memory.recall import recall
    from memory.text import cue_terms, terms

    messages = [
        msg("home", 0, "We were pre-approved for the mortgage at 4 percent", day=0),
        msg("home", 1, "The mortgage payment would be about 1400 a month", day=0, role="assistant", minute=1),
        msg("work", 0, "How do I file leave requests in the HR portal?", day=2),
        msg("work", 1, "Open the portal and submit the leave requests form", day=2, role="assistant", minute=1),
        msg("talks", 0, "Our discussion of the asking price went on all evening", day=4),
    ]
    evidence = [
        EvidenceInput("c-mortgage", "Mortgage payment", "topic", "home-1", 0.9),
        EvidenceInput("c-leave", "Leave requests", "topic", "work-0", 0.9),
        EvidenceInput("c-asking", "request, asking", "topic", "talks-0", 0.9),
        EvidenceInput("c-discussion", "Discussion", "topic", "talks-0", 0.9),
    ]
    index, settings = memory(messages, evidence)
    question = "What did I request, asking about my mortgage? Tell me what I said and mentioned"
    assert cue_terms(terms(question)) == ["mortgage"]
    result = recall(index, None, RecallRequest(query=question, budget_tokens=2000), settings)
    assert [c.label for c in result.cues] == ["Mortgage payment"], result.cues
    assert "home-1" in {p.content_id for p in result.pieces}, result.pieces  # the words still reach content directly
    # a content word that is no asking word still activates its cue; "leave requests" reaches it by "leave"
    leave = recall(index, None, RecallRequest(query="my leave requests", budget_tokens=2000), settings)
    assert "Leave requests" in [c.label for c in leave.cues], leave.cues
    bare = recall(index, None, RecallRequest(query="what was our discussion?", budget_tokens=2000), settings)
    assert "Discussion" in [c.label for c in bare.cues], bare.cues
