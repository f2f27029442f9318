"""The offline extractor reads prose only, keeps terms whole and cased, and knows common words from terms."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from concept_support import segment_input, titles

from clients import prose as prose_module
from clients.prose import prose, unicode_view
from extract.offline import OfflineExtractor
from extract.types import SegmentInput

CODE_HEAVY = segment_input(
    "seg-code",
    [
        (
            "user",
            "My AWS Glue job fails on the customer churn model table:\n"
            "Traceback (most recent call last):\n"
            '  File "etl.py", line 12, in <module>\n'
            "    df['col'].astype(str)\n"
            "KeyError: 'col'\n\n"
            "See /home/me/jobs/etl.py and https://example.org/docs/glue for the setup.",
        ),
        (
            "assistant",
            "In AWS Glue, a KeyError like this means the customer churn model table has no such column. "
            "Check the schema with `df.dtypes` first:\n"
            "```python\nimport pandas as pd\nprint(df.dtypes)\nfor col in df.columns:\n    print(col)\n```\n"
            '<div class="note"><span>Print</span></div>\n'
            "| year | rows |\n|---|---|\n| 2021 | 100 |\n| 2022 | 200 |\n",
        ),
        ("user", "Thanks. Is AWS Glue the right tool for the customer churn model, or should I use Spark alone?"),
    ],
)


def test_code_markup_tracebacks_paths_and_urls_never_become_concepts() -> None:
    """Only prose is read: nothing from the traceback, the code block, inline code, HTML, the table or a path."""
    found = {t.casefold() for t in titles(CODE_HEAVY)}
    assert "aws glue" in found and "customer churn model" in found
    junk = {"div", "span", "print", "col", "dtype", "dtypes", "str", "keyerror", "etl.py", "import", "pandas as pd"}
    assert not found & junk
    assert not any("/" in t or "http" in t for t in found)


def test_a_pasted_log_is_no_prose_but_one_line_that_looks_like_one_is() -> None:
    """A log pasted without a code fence gave concepts "DEBUG", "Latency 0ms", "Latency 1ms"... (a cold try's 20 MB
    paste): two or more lines in a row that open with a time of day or a log level are blanked, whatever the format
    (ISO, a bracketed time, syslog); a single such line is somebody's sentence, and so is a line opening with a
    date and a time without seconds, as a person writes one."""
    log = "\n".join(
        f"2024-03-0{1 + i % 9} 12:{i % 60:02d}:{i % 60:02d},{i:03d} {('INFO', 'WARN', 'DEBUG')[i % 3]} "
        f"[Zorblax.consumer] task {i} finished partition {i % 7} latency {i % 97}ms"
        for i in range(40)
    )
    tail = "[12:41:05] ERROR Quintor connector timed out\nMar  1 12:41:03 host sshd[123]: Accepted key for Vexmoor"
    text = f"Here is the Spark Streaming log of my Kafka pipeline:\n{log}\n{tail}\nWhy?\nERROR: I forgot the Kafka key."
    diary = "\n2023-05-03 12:00 we went to Lisbon and took the tram."
    view = prose(text + diary)
    assert len(view) == len(text + diary) and "Zorblax" not in view and "Quintor" not in view and "Vexmoor" not in view
    assert "Spark Streaming log" in view and "ERROR: I forgot the Kafka key." in view and "Lisbon" in view
    reply = "The Kafka consumer lags: raise its partitions."
    segment = segment_input("seg-log", [("user", text), ("assistant", reply)])
    found = {t.casefold() for t in titles(segment)}
    assert "kafka" in found and not {t for t in found if "latency" in t or t in {"debug", "info", "warn", "zorblax"}}


def test_prose_view_keeps_offsets_so_evidence_stays_verbatim() -> None:
    """Masking keeps every offset (same length, same newlines), and every span is a substring of its message."""
    text = CODE_HEAVY.messages[1].text
    view = prose(text)
    assert len(view) == len(text) and view.count("\n") == text.count("\n")
    texts = {m.message_id: m.text for m in CODE_HEAVY.messages}
    for hypothesis in OfflineExtractor().extract(CODE_HEAVY).hypotheses:
        assert all(span.text in texts[span.message_id] for span in hypothesis.evidence_spans)


def test_a_term_is_titled_by_its_usual_casing_and_kept_whole() -> None:
    """The user types "aws glue" and "power bi", the reply writes "AWS Glue" and "Power BI": the titles keep
    the reply's case, and multi-word terms stay whole."""
    segment = segment_input(
        "seg-case",
        [
            ("user", "how do i load aws glue output into power bi? my role-based access control rules block it"),
            (
                "assistant",
                "AWS Glue writes to S3; Power BI reads it through Athena. Role-based access control in "
                "Power BI is set per workspace, and AWS Glue needs its own IAM role.",
            ),
            ("user", "ok so aws glue and power bi both need the role-based access control change"),
        ],
    )
    found = titles(segment)
    assert "AWS Glue" in found and "Power BI" in found
    assert any(t.casefold() == "role-based access control" for t in found)
    assert not any(t in ("Aws glue", "Power bi") for t in found)


def test_common_words_alone_are_never_concepts() -> None:
    """ "data", "table", "code", "value" said many times name nothing; a rare term said twice does."""
    segment = segment_input(
        "seg-common",
        [
            ("user", "I have data in a table and the code returns a value. The data and the table look fine."),
            ("assistant", "If the table holds the data, the value comes from the code. Try Sqoop for the import."),
            ("user", "So Sqoop moves the data from the table? The code and the value are the same."),
        ],
    )
    found = {t.casefold() for t in titles(segment)}
    assert "sqoop" in found
    assert not found & {"data", "table", "code", "value", "import"}


def test_decomposed_and_zero_width_text_gives_whole_names() -> None:
    """NFD accents and zero-width characters read as the composed word ("Café Müller", not "Caf" or "Mu ller");
    the evidence still quotes the raw message."""
    raw = (
        "We met at Cafe\u0301 Mu\u0308ller in Berlin. Cafe\u0301 Mu\u0308ller has the best cake, and"
        " Caf\u200be Mu\u0308ller too."
    )
    view, offsets = unicode_view(raw)
    assert "Café Müller" in view and offsets is not None and len(offsets) == len(view) + 1
    segment = segment_input("seg-nfd", [("user", raw), ("user", "Café Müller again next week with Anna.")])
    output = OfflineExtractor().extract(segment)
    found = [h.title for h in output.hypotheses]
    assert "Café Müller" in found
    assert not any(t in ("Caf", "Mu ller", "Cafe Mu ller") for t in found)
    for hypothesis in output.hypotheses:
        for span in hypothesis.evidence_spans:
            assert span.text in {m.message_id: m.text for m in segment.messages}[span.message_id]


def test_a_very_long_message_is_read_in_one_pass() -> None:
    """A 1 MB message with thousands of mentions finishes (sentence bounds are found once per message, not once
    per mention: the old extractor took minutes on 500 KB); its spans stay within MAX_SPAN_CHARS."""
    sentence = "The Kafka Connect cluster feeds the customer churn model every night. "
    segment = segment_input("seg-long", [("user", sentence * 15000)])
    output = OfflineExtractor().extract(segment)
    found = {h.title for h in output.hypotheses}
    assert "Kafka Connect" in found or "Kafka Connect cluster" in found
    assert all(len(s.text) <= 240 for h in output.hypotheses for s in h.evidence_spans)


def test_a_concepts_title_only_ever_gains_its_usual_case() -> None:
    """The concept loop takes "AWS Glue" over an earlier "Aws glue" (same name), never the reverse."""
    from extract.concept_loop import _better_cased

    assert _better_cased("AWS Glue", "Aws glue") and _better_cased("PySpark", "Pyspark")
    assert not _better_cased("Aws glue", "AWS Glue") and not _better_cased("AWS Lambda", "Aws glue")


def test_lines_built_to_make_a_pattern_backtrack_are_read_in_one_pass() -> None:
    """A long run of digits, separators, path segments or table dashes with a bad last character finishes
    (a number-row pattern with optional separators took minutes on one such line)."""
    lines = ["1234567890" * 40 + "x", "- " * 400 + "x", "/a" * 600 + " ", "|" + "-" * 600 + "x", "a@b." * 300]
    view = prose("\n".join(lines))
    assert len(view) == len("\n".join(lines))


def test_the_topic_labels_read_the_same_prose_cleaner() -> None:
    """One cleaner (clients/prose.py) for extract and cluster: the labels' view also blanks every table row, and
    both blank citations and LaTeX; a traceback ends at the first plain line after it."""
    from cluster.phrases import clean

    text = (
        "Traceback (most recent call last):\n"
        '  File "job.py", line 3, in <module>\n'
        "NameError: name 'dtype' is not defined\n"
        "AWS Glue jobs can be scheduled【4†source】 with triggers [12].\n"
        "The rate is $$\\frac{a}{b}$$ per \\(x_1\\) hour.\n"
        "| Spark | Hadoop |\n"
    )
    view = prose(text)
    assert len(view) == len(text)
    assert "NameError" not in view and "AWS Glue jobs can be scheduled" in view
    assert "source" not in view and "12" not in view and "frac" not in view and "x_1" not in view
    assert "| Spark | Hadoop |" in view
    labels_view = clean(text)
    assert "Spark" not in labels_view and "AWS Glue jobs can be scheduled" in labels_view
    lines = ["a@b." * 300 + "x", "/a" * 600 + "@", "\\(" * 400, "【" * 300, "| x " * 300]
    assert len(clean("\n".join(lines))) == len("\n".join(lines))


def test_typos_shouting_numbered_variables_and_vague_pairs_are_not_concepts() -> None:
    """A word the user misspells beside its right spelling counts under that spelling; an all-caps common word is
    a keyword, not a name; numbered variables are no names; an adjective on a vague noun names nothing; an
    acronym and its expansion are one concept."""
    segment = segment_input(
        "seg-typos",
        [
            ("user", "How do I query the employee heirarchy in Hive? Whats wrong with my DELETE statement?"),
            (
                "assistant",
                "A hierarchy in Hive needs a recursive query. The employee hierarchy is read level by level.",
            ),
            ("user", "The values are XW0, XW00 and XW10, and I want a concise summary of the Directed Acyclic Graph."),
            ("assistant", "A DAG (Directed Acyclic Graph) orders the tasks; each DAG run reads XW0 first."),
        ],
    )
    found = titles(segment, max_concepts=10)
    folded = {t.casefold() for t in found}
    assert "hive" in folded
    assert not any("heirarchy" in t or "whats" in t or "xw" in t or "summary" in t for t in folded)
    assert "delete" not in folded
    assert sum(t in folded for t in ("dag", "directed acyclic graph")) == 1


def test_a_table_pasted_one_cell_per_line_is_not_prose() -> None:
    """Six or more lines of one or two short words in a row (a data frame pasted cell by cell) are blanked; a
    short list of three lines and the sentences around it stay."""
    cells = "\n".join(["age", "city", "22", "Gurgaon", "F", "21", "Mumbai", "M"])
    text = f"Filter the records by age.\n{cells}\nThe pandas loc indexer selects rows.\nSpark\nHive\nKafka\n"
    view = prose(text)
    assert "Mumbai" not in view and "Gurgaon" not in view
    assert "Filter the records by age." in view and "pandas loc indexer" in view and "Kafka" in view


SHARED_CHATGPT = Path(__file__).resolve().parents[2] / "shared" / "data" / "exports" / "chatgpt"


def _real_segments(export: str, words: tuple[str, ...]) -> list[SegmentInput]:
    """Each conversation of a real export (read in place: no license to copy it) whose messages say one of
    `words`, as one segment of its first 16 messages."""
    path = SHARED_CHATGPT / export / "conversations.json"
    if not path.is_file():
        pytest.skip(f"{path} is absent (read from ../shared/data, not copied)")
    segments = []
    for number, conversation in enumerate(json.loads(path.read_text())):
        turns = []
        for node in conversation["mapping"].values():
            message = node.get("message") or {}
            parts = (message.get("content") or {}).get("parts") or []
            text = "\n".join(p for p in parts if isinstance(p, str)).strip()
            role = (message.get("author") or {}).get("role")
            if text and role in ("user", "assistant"):
                turns.append((message.get("create_time") or 0, role, text))
        turns.sort(key=lambda t: t[0])
        if any(w in text.casefold() for _, _, text in turns for w in words):
            segments.append(segment_input(f"{export}-{number}", [(r, t) for _, r, t in turns[:16]]))
    return segments


def test_placeholders_typography_and_program_parts_are_not_concepts_on_real_chats() -> None:
    """spark-first (a real export, issue 20's cold pass): stand-in names from SQL and pandas examples ("Table1",
    "Table2", "fname", "lname", "List b"), typography ("Comma", "Blank line", "Capital letter", "Decimal point")
    and the parts every program has ("Integer", "Keyword", "URL", "Prefix") are no concepts; "DF" is DataFrame;
    the tools those chats are about stay."""
    segments = _real_segments(
        "spark-first", ("fname", "table1", "capital letter", "comma", "decimal point", "keyword", "integer", "rdd")
    )
    assert len(segments) >= 10
    found = Counter(t.casefold() for s in segments for t in titles(s))
    for title in ["table1", "table2", "table b", "list b", "fname", "lname", "comma", "blank line", "capital letter"]:
        assert title not in found, title
    for title in ["decimal point", "integer", "keyword", "url", "prefix", "df"]:
        assert title not in found, title
    assert {"spark", "dataframe", "rdd", "hive"} <= set(found)


def test_techniques_in_a_request_to_the_assistant_are_not_goals_on_real_chats() -> None:
    """rainchinchao's code-conversion prompts ("I want to convert it into a style that uses string
    concatenation ...") state no goal of the user's: what they name is typed by other cues or an entity."""
    segments = _real_segments("rainchinchao", ("string concatenation", "function calls"))
    assert segments
    goals = [
        h.title
        for s in segments
        for h in OfflineExtractor(8).extract(s).hypotheses
        if h.type == "goal" and h.title.casefold() in ("string concatenation", "function calls", "x value")
    ]
    assert goals == []


def test_values_in_statements_and_the_assistants_self_description_are_not_concepts_on_real_chats() -> None:
    """spark-first: a value typed in a statement outside code marks ("set city='Hyd'", 'WHERE city="CHN"', then
    quoted back by the reply) is a literal, not a subject; "As an AI language model, I ..." is the assistant
    describing itself. The tools of those chats stay."""
    literal = _real_segments("spark-first", ("city='hyd'", 'city="chn"'))
    found = Counter(t.casefold() for s in literal for t in titles(s))
    assert literal and not {"hyd", "chn"} & set(found)
    assert {"mysql", "sql"} <= set(found)
    itself = _real_segments("spark-first", ("as an ai language model",))
    # ten: "Hollywood" (of "recent Hollywood movies") is a name of its own now, and "Amazon Prime" the ninth
    found = Counter(t.casefold() for s in itself for t in titles(s, 10))
    assert len(itself) >= 2 and "ai language model" not in found and "amazon prime" in found


def test_a_names_kind_head_is_cut_on_real_chats() -> None:
    """spark-first: "HDFS directory", "Python file", "SQL statement" are HDFS, Python, SQL (the head only says
    what kind of thing the name is); a head written as part of the name stays ("Amazon Web Services")."""
    segments = _real_segments("spark-first", ("hdfs directory", "python file", "sql statement"))
    found = Counter(t.casefold() for s in segments for t in titles(s))
    assert segments and not {"hdfs directory", "python file", "sql statement"} & set(found)
    assert {"python", "sql"} <= set(found)
    aws = _real_segments("spark-first", ("amazon web services",))
    assert "amazon web services" in {t.casefold() for s in aws for t in titles(s)}


def test_a_contracts_defined_parties_are_not_concepts_on_real_chats() -> None:
    """The demo (real LongMemEval chat text): a Spanish web-design contract translated to English defines its
    parties ('... providing the services] ("Provider")', '("Client")', '("Proveedor")'); those are roles in the
    text, in either language, not what the conversation is about. The contract's subject stays."""
    import zipfile

    demo = Path(__file__).resolve().parents[1] / "demo" / "longmemeval-demo.zip"
    with zipfile.ZipFile(demo) as archive:
        conversations = json.loads(archive.read("conversations.json"))
    segments = []
    for number, conversation in enumerate(conversations):
        turns = []
        for node in conversation["mapping"].values():
            message = node.get("message") or {}
            text = "\n".join(p for p in (message.get("content") or {}).get("parts") or [] if isinstance(p, str))
            role = (message.get("author") or {}).get("role")
            if text.strip() and role in ("user", "assistant"):
                turns.append((message.get("create_time") or 0, role, text))
        if any('("Client")' in text or '("Proveedor")' in text for _, _, text in turns):
            turns.sort(key=lambda t: t[0])
            segments.append(segment_input(f"demo-{number}", [(r, t) for _, r, t in turns[:16]]))
    assert segments
    found = {t.casefold() for s in segments for t in titles(s)}
    assert not {"client", "provider", "proveedor", "cliente", "agreement", "acuerdo"} & found
    assert any("development agreement" in t or "web design" in t for t in found)


_GUARDED = (
    "see src/main.py and ~/data",
    r"C:\Users\me",
    "open data.csv now",
    "call df.select() here",
    "the my_var setting",
    "a KeyError was raised",
    "so myValue = 3",
    "a new iPhone.",
    "spark.read.csv reads it",
    "# Heading",
    "> a quote",
    "- an item",
    "1. first",
    "2) second",
    "some **bold** words",
    "an _emphasised_ word",
    "~~struck~~",
)


def test_the_prose_cleaner_skips_a_pattern_only_where_it_cannot_match() -> None:
    """Paths, identifiers and markdown marks are looked for only where a character each match needs is there:
    wherever the pattern matches (hand-made cases and every message of two real exports), its check lets it run,
    so the view is the one the patterns give; a plain sentence is spared all three."""
    texts = list(_GUARDED)
    for export in ("spark-first", "rainchinchao"):
        texts += [m.text for s in _real_segments(export, ("",)) for m in s.messages]
    assert len(texts) > 200
    matched = Counter[str]()
    for text in texts:
        if prose_module._PATH.search(text):
            matched["path"] += 1
            assert prose_module._may_hold_path(text), text
        if prose_module._IDENTIFIER.search(text):
            matched["identifier"] += 1
            assert prose_module._may_hold_identifier(text), text
        if prose_module._MD_MARK.search(text):
            matched["mark"] += 1
            assert prose_module._MD_MARK_NEEDS.search(text), text
    assert min(matched.values()) >= len(_GUARDED) // 3
    plain = "Plain words, with a comma. And a question? Yes!"
    assert not prose_module._may_hold_path(plain)
    assert not prose_module._may_hold_identifier(plain)
    assert prose_module._MD_MARK_NEEDS.search(plain) is None


CLAUDE_REPLY = (
    " I'll build the Pomodoro timer as a React component.\n\n"
    "<antThinking>A timer is self-contained and reusable, so a new artifact is warranted.</antThinking>\n\n"
    '<antArtifact identifier="timer" type="application/vnd.ant.react" title="Pomodoro Timer">\n'
    "import React, { useState } from 'react';\n\n"
    "const Timer = () => {\n"
    "  const [left, setLeft] = useState(1500);\n"
    "  const modes = {\n"
    "    work: {\n"
    "      title: 'Deep Work Session',\n"
    "      note: 'Phones in the Drawer'\n"
    "    }\n"
    "  };\n"
    '  return <div className="timer">{left}</div>;\n'
    "};\n\n"
    "export default Timer;\n"
    "</antArtifact>\n\n"
    '<antArtifact identifier="plan" type="text/markdown" title="Study Plan">\n'
    "# Study plan\n\n"
    "Read the Kafka Streams chapter before the exam.\n"
    "</antArtifact>\n\n"
    "The timer counts down from 25 minutes.\n\n"
    '<antArtifact identifier="chart" type="application/vnd.ant.code" language="python" title="Chart">\n'
    "import matplotlib.pyplot as plt\n"
    "labels = ['Weekly Hours',\n"  # the reply is cut short here: the artifact never closes
)


def test_claude_private_notes_and_code_artifacts_are_not_prose_but_a_document_artifact_is() -> None:
    """A Claude reply's <antThinking> notes and the body of a code artifact (React, code; closed or cut short) are
    blanked, values in the component included; a text/markdown artifact is a document and its prose stays; an
    artifact's title, the name the reader sees it under, stays."""
    view = prose(CLAUDE_REPLY, quoted_names=True)
    assert len(view) == len(CLAUDE_REPLY) and view.count("\n") == CLAUDE_REPLY.count("\n")
    assert "Pomodoro timer as a React component" in view and "counts down from 25 minutes" in view
    assert "warranted" not in view and "antThinking" not in view and "antArtifact" not in view
    assert "Deep Work Session" not in view and "Phones in the Drawer" not in view and "Weekly Hours" not in view
    assert "Kafka Streams chapter before the exam" in view and "Study plan" in view
    assert " Pomodoro Timer " in view and " Study Plan " in view and " Chart " in view
    assert "identifier" not in view and "vnd.ant" not in view


def test_claude_thinking_and_tool_blocks_as_the_ingest_renders_them_are_not_prose() -> None:
    """A thinking block and a tool call rendered by the Claude ingest are blanked; a document an `artifacts` call
    writes is read in place (its escaped newlines read as newlines), a component it writes is not; the titles stay."""
    from ingest.claude import render_message

    document = '# Lisbon trip\n\nVisit the Belem Tower on Monday, then the "Time Out Market".'
    blocks = [
        {"type": "thinking", "thinking": "The user wants a plan.\n\nMaybe mention the Oceanarium too."},
        {"type": "text", "text": "Here is your Lisbon itinerary."},
        {"type": "tool_use", "name": "web_search", "input": {"query": "Sintra palace tickets"}},
        {
            "type": "tool_use",
            "name": "artifacts",
            "input": {"id": "trip", "type": "text/markdown", "title": "Trip", "command": "create", "content": document},
        },
        {
            "type": "tool_use",
            "name": "artifacts",
            "input": {
                "id": "ui",
                "type": "application/vnd.ant.react",
                "title": "Tram Map",
                "content": "import React from 'react';\nconst label = 'Tram Twenty Eight';",
            },
        },
    ]
    text, _, _ = render_message({"content": blocks})
    view = prose(text, quoted_names=True)
    assert len(view) == len(text)
    assert "Here is your Lisbon itinerary." in view
    assert "Oceanarium" not in view and "Sintra" not in view and "Tram Twenty Eight" not in view
    assert "Lisbon trip \n \nVisit the Belem Tower on Monday" in view and ' "Time Out Market" ' in view
    assert "tool_use" not in view and "React" not in view and "#" not in view and "create" not in view
    assert " Trip " in view and " Tram Map " in view  # an artifact's title stays


def test_rows_of_delimited_values_are_a_table_not_prose() -> None:
    """Comma- or tab-separated rows with numbers among them (and their header) are blanked: issue 20's "15Kjava
    103" came from such rows; sentences with a number or a list in them, and a list of names, stay."""
    rows = (
        "pyspark code for table1 id, name,sal,dept 101,aa,25Kbigdata\n"  # a line break lost: words, then cells
        "107,bb, 15Kjava\n103, cc,45Kbigdata\n104, cc,35K, Testing\n"
    )
    tabbed = "Name\tAge\tCity\nJohn\t25\tNYC\nMary\t31\tLA\n"
    kept = (
        "Display the employee name, id and dept of the top earner in each department.\n"
        "I ran 3 races in Paris, Rome and Oslo in 2019, 2020 and 2021.\n"
        "Skills: Python, Java, 2 years\n"
        "Spark, Hive, Kafka\n"
        "1. PySpark, Hive, Sqoop\n"
        "I have 2 kids, 3 dogs, 1 cat\n"
        "* Chicago, IL: $365,700\n"
        "* Houston, TX: $331,760\n"
    )
    view = prose(rows + tabbed + "\n" + kept)
    assert view.startswith("pyspark code for table1 id ")
    assert view[len("pyspark code for table1 id") : len(rows + tabbed)].strip() == ""
    assert view.endswith(kept.replace("1. ", "   ").replace("* ", "  "))


def test_a_header_row_of_field_names_is_no_prose_with_or_without_its_rows() -> None:
    """A row of a program's field names ("id, type, name, ppu, batter.id,batter.type, ...": lower-case tokens, a
    field path among them, or every comma without a space) is a table's header though no data row follows it: its
    cells are blanked, the words after its last cell stay; a list of names or words in a sentence stays."""
    header = "id, type, name, ppu, batter.id,batter.type, topping.id, topping.type\n"
    run_on = "id, type, name, ppu, batter.id,batter.type, topping.id, topping.type using explode function\n"
    csv_header = "emp_id,name,sal,dept\n"
    kept = (
        "Spark, Hive, Kafka\n"
        "apples, pears, plums\n"
        "ok, thanks, bye\n"
        "I read the CSV, split it by dept, and sum sal per dept.\n"
        "The table holds id, name and dept for each row\n"
    )
    view = prose(header + run_on + csv_header + kept)
    lines = view.split("\n")
    assert lines[0].strip() == ""
    assert lines[1].strip() == "using explode function" and lines[1].endswith(" using explode function")
    assert lines[2].strip() == ""
    assert view.endswith(kept)
    # beside rows of data the header goes as before
    assert prose("id,name,sal\n101,aa,25K\n102,bb,30K\n").strip() == ""


def test_a_header_rows_cells_give_no_concept_on_real_chats() -> None:
    """spark-first: the user's nested JSON question ends in the output's header row ("id, type, name, ppu,
    batter.id, ..."); the cold try of session 37 found "Ppu", a field name, among the concepts."""
    segments = _real_segments("spark-first", ("ppu",))
    assert segments
    found = {t.casefold() for s in segments for t in titles(s, max_concepts=10)}
    assert found and "ppu" not in found and not any("batter.id" in t for t in found), found


def test_pasted_rows_of_data_give_no_concepts_on_real_chats() -> None:
    """spark-first: the employee table pasted as rows ("107,bb, 15Kjava", "103, cc,45Kbigdata") gives no concept
    made of its cells (the cold pass found "15Kjava 103")."""
    segments = _real_segments("spark-first", ("15kjava",))
    assert segments
    found = [t.casefold() for s in segments for t in titles(s, max_concepts=10)]
    assert found and not any(any(c.isdigit() for c in t) or "kjava" in t or "bigdata" in t for t in found), found


def test_a_claude_artifacts_kind_is_a_mention_of_it_as_a_fence_is() -> None:
    """A React artifact ('type="application/vnd.ant.react"') says the reply's code is React, as "```python" says
    Python: where the prose names React, each such artifact is one more mention, though its code is not read."""

    def reply(opening: str, title: str) -> str:
        return (
            f" {opening}\n\n<antThinking>A new artifact.</antThinking>\n\n"
            f'<antArtifact identifier="chart" type="application/vnd.ant.react" title="{title}">\n'
            "import React from 'react';\nexport default () => <div>chart</div>;\n</antArtifact>\n"
        )

    segment = segment_input(
        "seg-artifact",
        [
            ("user", "Make an interactive chart of my marathon training log."),
            ("assistant", reply("I'll make the chart a React component.", "Marathon Training Chart")),
            ("user", "Add my weekly mileage to the marathon training chart."),
            ("assistant", reply("Here is the chart with your mileage.", "Marathon Training Chart with Mileage")),
        ],
    )
    found = titles(segment, max_concepts=10)
    assert "React" in found, found


def test_an_acronym_that_ends_in_s_and_its_expansion_are_one_concept() -> None:
    """spark-first: "HDFS" and "Hadoop Distributed File System", "AWS" and "Amazon Web Services" are one concept
    each (the acronym's key is singular, "hdf", and missed its expansion's initials: both took a place)."""
    segment = segment_input(
        "seg-hdfs",
        [
            ("user", "How do I load a csv file from HDFS into a Hive table? We run it all on AWS."),
            (
                "assistant",
                "HDFS (Hadoop Distributed File System) stores the file. Load it from HDFS with LOAD DATA INPATH into"
                " the Hive table. On Amazon Web Services (AWS), EMR gives you HDFS and Hive together.",
            ),
        ],
    )
    found = titles(segment, max_concepts=10)
    assert "HDFS" in found and "Hadoop Distributed File System" not in found, found
    assert "AWS" in found and "Amazon Web Services" not in found, found
