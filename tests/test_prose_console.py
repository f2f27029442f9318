"""Console output a user pastes as prose (logs, stack frames, counter dumps, shell sessions, progress bars) is blanked
from the prose view (clients/console.py), and the sentences around it, dates and "error" included, are kept."""

from __future__ import annotations

import pytest
from concept_support import titles
from test_offline_prose import _real_segments

from clients.prose import prose


def _kept(text: str) -> str:
    """The words the prose view keeps, one space between them (the view itself keeps every offset)."""
    view = prose(text, quoted_names=True)
    assert len(view) == len(text) and view.count("\n") == text.count("\n")
    return " ".join(view.split())


# Real shapes, one console kind each: what the line says must not reach the view.
CONSOLE = {
    "hadoop": (
        "23/04/10 07:52:54 INFO mapreduce.Job: Counters: 11\n"
        "23/04/10 07:52:54 WARN mapreduce.Counters: Group FileSystemCounters is deprecated. Use Quorvex instead"
    ),
    "python logging": "2024-03-01 12:41:03,123 - ingest.worker - ERROR - Quorvex batch failed",
    "airflow": "[2023-04-10, 07:52:54 UTC] {taskinstance.py:1234} INFO - Quorvex marked as success",
    "logcat": "04-12 10:00:00.123  1234  1234 E AndroidRuntime: FATAL EXCEPTION: Quorvex",
    "glog": "I0412 10:00:00.123456 12345 server.cc:42] Quorvex listening",
    "access log": '127.0.0.1 - - [10/Oct/2000:13:55:36 -0700] "GET /quorvex HTTP/1.0" 200 2326',
    "basicConfig": "WARNING:tensorflow:Quorvex retracing",
    "npm": "npm ERR! code ERESOLVE\nnpm ERR! Quorvex unable to resolve dependency tree",
    "uvicorn": "INFO: Quorvex connection closed\nINFO: ('127.0.0.1', 51918) - \"WebSocket /ws\" [accepted]",
    "maven": "[INFO] Quorvex BUILD FAILURE\n[ERROR] Failed to execute goal on project quorvex",
    "compiler": "main.c:3:5: error: expected ';' before Quorvex",
    "java uncaught": 'Exception in thread "main" java.lang.IllegalStateException: Quorvex',
    "java frames": (
        "\tat org.apache.spark.sql.avro.AvroFileFormat.<init>(AvroFileFormat.scala:44)\n"
        "\tat java.base/jdk.internal.Quorvex.newInstance0(Native Method)"
    ),
    "js frames": (
        "    at Object.<anonymous> (/home/me/app/Quorvex.js:10:15)\n"
        "    at Module._compile (node:internal/modules/cjs/loader:1105:14)"
    ),
    "counters": "Job Counters\nFailed Quorvex tasks=1\nLaunched map tasks=1\nData-local map tasks=1",
    "shell session": "me@box:~/etl$ hdfs dfs -ls /data\nFound 2 items\ndrwxr-xr-x   - me supergroup   Quorvex",
    "powershell": "PS C:\\Users\\me> pip install quorvex\nRequirement already satisfied: Quorvex in c:\\python",
    "repl": ">>> quorvex.version\n'Quorvex 1.2'",
    "tqdm": "100%|██████████| 10/10 [00:01<00:00, 9.5it/s] Quorvex",
    "keras": "Epoch 1/10\n1875/1875 [==============================] - 3s 1ms/step - Quorvex: 0.29",
    "pip": "   ━━━━━━━━━━━━━━━━━━━━ 1.2/1.2 MB 3.4 MB/s eta 0:00:00 Quorvex",
    "spark stage": "[Stage 3:=====>                (12 + 4) / 200] Quorvex",
}


@pytest.mark.parametrize("kind", sorted(CONSOLE))
def test_each_kind_of_console_output_is_blanked(kind: str) -> None:
    """A line as a log, a stack trace, a counter dump, a shell or REPL, a build or a progress bar prints it, pasted
    without a code fence, leaves nothing of its own in the view; the user's words around it stay."""
    text = f"My Zeltrin job printed this:\n{CONSOLE[kind]}\nWhy does Zeltrin stop there?"
    kept = _kept(text)
    assert "Quorvex" not in kept and "quorvex" not in kept
    assert "My Zeltrin job printed this:" in kept and "Why does Zeltrin stop there?" in kept


PROSE = (
    "On 2024-03-01 12:41:03 the ERROR page showed up again.",
    "2023-05-03 12:00 we went to Lisbon and took the tram.",
    "ERROR: I forgot the Kafka key.",
    "Warning: the bridge on Elm Street is closed until Friday.",
    "Error: the upload to Dropbox failed twice today.",
    "I got an error at work today (my boss was angry).",
    "We met at the station (platform 5) at 10:30.",
    "Look at java.util first (the collections live there).",
    "The budget is rent=1200 this month.",
    "INFO sessions at the library start at 9.",
    "12:41:03 is when the stream stopped, then it ran again.",
    "I scored 95% | not bad for a first try.",
    "Error 404 means the page is not found.",
)


@pytest.mark.parametrize("sentence", PROSE)
def test_a_sentence_with_a_date_a_time_or_error_stays(sentence: str) -> None:
    """A sentence that holds a date, a time, a level word or "at ... (...)" is no log line: the view keeps its words
    (marks, as everywhere, may go)."""
    kept = _kept(f"Some context first.\n{sentence}\nAnd a plain line after it.")
    words = [w.strip(".,:()|%") for w in sentence.split()]
    assert all(w in kept for w in words if w.isalpha() and len(w) > 2), kept


def test_a_bare_kind_name_ends_a_traceback_but_opens_no_trace_alone() -> None:
    """ "Exception: boom" after a traceback's frames is its last line; "Error: ..." or "Warning: ..." written alone
    is a sentence (the rule read every such line as a trace's)."""
    trace = 'Traceback (most recent call last):\n  File "job.py", line 3, in <module>\n    run()\nException: Quorvex'
    assert "Quorvex" not in _kept(f"It failed:\n{trace}\nWhat now?")
    assert "bridge" in _kept("Warning: the bridge is closed.")


def test_a_short_line_is_read_as_a_log_only_between_two_log_lines() -> None:
    """A counter group's name or a status line between log lines is part of the log; the user's question after the
    last log line is not, nor is a short line with no log line after it."""
    text = (
        "23/04/10 07:52:54 ERROR tool.ExportTool: Error during export:\n"
        "Export job failed!\n"
        "23/04/10 07:52:55 INFO Quorvex: shutting down\n"
        "Sqoop export fails\n"
        "Why?"
    )
    kept = _kept(text)
    assert "Export job failed" not in kept and "Quorvex" not in kept
    assert "Sqoop export fails" in kept and "Why?" in kept


def test_a_few_counters_alone_are_a_budget_not_a_dump() -> None:
    """Two key=number lines with nothing of a log around them stay (a budget); three or more are a counter dump."""
    assert _kept("rent=1200\nfood=300") == "rent=1200 food=300"
    assert "rent" not in _kept("rent=1200\nfood=300\ntransport=100")


def test_a_command_output_ends_where_the_user_speaks_again() -> None:
    """What a command printed is blanked to a blank line or to a line the user writes (a question, "I" first)."""
    text = "$ spark-submit job.py\nQuorvex exited with code 1\nI expected it to write the Parquet files\n\nThanks."
    kept = _kept(text)
    assert "Quorvex" not in kept and "I expected it to write the Parquet files" in kept and "Thanks." in kept


def test_frames_inside_a_line_go_and_the_question_after_them_stays() -> None:
    """Frames written one after another on one line, with the spaces OCR puts after dots ("ExportJobBase. java:
    439"), are blanked frame by frame; the question that ends the line stays."""
    line = (
        "at org. apache. sqoop. mapreduce. ExportJobBase. runExport(ExportJobBase. java: 439) at org. apache. sqoop. "
        "manager . SqlManager. exportable (SqlManager. java: 931) at org.apache. hadoop.til. ToolRunner. run "
        "(ToolRunner. java: 70 ) Why this error"
    )
    assert _kept(line) == "Why this error"


def test_the_sqoop_paste_gives_no_concept_from_its_log() -> None:
    """spark-first's "Sqoop export job failure." (a real export, read in place): the user pasted a Hadoop job's log,
    which gave "FileSystem ounter", "INFO mapreduce", "WARN mapreduce", "Job counters", "Map-Reduce Framework CPU"
    and "Map tasks". "ounter" is the paste's own text, as its screenshot was read ("org .apache. hadoop.mapreduce.
    FileSystem ounter", "hadoop.til. ToolRunner"; the reply spells "FileSystemCounter"), cut by nothing here: its
    line is a log's, and nothing of it is read now; the subjects, which the reply names, stay."""
    [segment] = _real_segments("spark-first", ("filesystem ounter",))
    user = segment.messages[0].text
    assert "FileSystem ounter" in user and _kept(user) == "Why this error"
    found = {t.casefold() for t in titles(segment)}
    assert "sqoop" in found and "hadoop" in found
    assert not {t for t in found if " ounter" in t or "mapreduce" in t or "map task" in t or "framework" in t}
