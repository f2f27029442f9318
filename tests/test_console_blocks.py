"""Code and tool output pasted without a code fence are blanked from the prose view (clients/console_blocks.py and
clients/console.py); prose that names an error, a date, a command or a snippet in a sentence stays."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest
from concept_support import titles
from test_offline_prose import _real_segments

from clients.prose import prose

ROOT = Path(__file__).resolve().parents[1]


def _kept(text: str) -> str:
    """The words the prose view keeps, one space between them (the view itself keeps every offset)."""
    view = prose(text, quoted_names=True)
    assert len(view) == len(text) and view.count("\n") == text.count("\n")
    return " ".join(view.split())


# Short excerpts of real pastes, "Quorvex" put where the words the view must not keep stood.
PASTES = {
    # spark-first (a real export), conversation "Spark code explanation": Scala pasted through OCR, "val" read
    # "Ival"; the line gave the topic label "Ival sc"
    "ocr scala": (
        "Ival Quorvex = SparkContext.getOrCreate ()\n"
        'val filePath = "hdfs: / /namenode/projects /yk/webpageData/20221222"\n'
        "webPageData.persist ()\n"
        "println (Quorvex)"
    ),
    # rainchinchao (a real export): a program pasted with a blank line between its statements and CRLF endings
    "spaced program": "XW00 = x(0) *  array_weights_wire(0)\r\n\r\nQuorvex = XW00 + XW10\r\n\r\nout(0) = Quorvex(0)\r",
    # the demo (LongMemEval), a ChatGPT page copied with its code blocks: "sqlCopy code" glued to the first line
    "copied block": "sqlCopy codeFROM nginx:stable-alpine\n\nCOPY quorvex.conf /etc/nginx/nginx.conf",
    # the demo (LongMemEval), JSON pasted by the user
    "json": '"bTGzr": {\n "properties": {\n "type": "Quorvex"\n },\n "height": 50\n }',
    # spark-first, conversation of Eclipse's "Problems" view: its header gave the concept "Description Resource Path
    # Location"
    "eclipse problems": (
        "Description\tResource\tPath\tLocation\tType\n"
        "More than one Quorvex library found in the build path.\tSparkFirst2\t\tUnknown\tScala Classpath Problem"
    ),
    # spark-first: a spreadsheet's header pasted with tabs over its rows
    "tab header": "Date\t\t\tQuorvex\t\tamount\n1/6/2022\t\tc1\t\t\t10\n1/7/2022\t\tc1\t\t\t20",
    # kubectl's documented `kubectl get pods` output
    "kubectl": (
        "NAME                      READY   STATUS             RESTARTS   AGE\n"
        "quorvex-7d4b9c8f6-x2x9z   0/1     CrashLoopBackOff   5          3m\n"
        "Quorvex-db-0              1/1     Running            0          3m"
    ),
    # docker's documented `docker ps` output
    "docker ps": (
        "CONTAINER ID   IMAGE     COMMAND           CREATED       STATUS       PORTS    NAMES\n"
        '4c01db0b339c   quorvex   "python app.py"   2 hours ago   Up 2 hours   80/tcp   Quorvex'
    ),
    # docker compose's log, v1 ("web_1  | ") and v2 ("app-web-1  | ") service prefixes
    "compose": "web_1  | Quorvex starting on port 8000\ndb_1   | LOG:  database system is ready Quorvex",
    "compose v2": "app-web-1  | Booting worker with pid: 8\napp-web-1  | Quorvex listening",
    # Keras' fit() with verbose=2
    "keras": "Epoch 1/10\n1875/1875 - 3s - loss: 0.2900 - accuracy: 0.9170\nEpoch 2/10\n1875/1875 - 2s - Quorvex: 0.14",
    # gradle's failed build
    "gradle": "> Task :app:compileQuorvex FAILED\n\nFAILURE: Build failed with an exception.\n\nBUILD FAILED in 3s",
    # pip install
    "pip": (
        "Collecting quorvex\n  Downloading quorvex-1.2.0-py3-none-any.whl (12 kB)\n"
        "Installing collected packages: quorvex\nSuccessfully installed quorvex-1.2.0"
    ),
    # Spark's log4j lines without their date (spark-shell's console)
    "spark executor": "ERROR Executor: Exception in task 0.0 in stage 1.0 (TID 1) Quorvex",
    "spark loader": "WARN util.NativeCodeLoader: Unable to load Quorvex native-hadoop library for your platform",
}


@pytest.mark.parametrize("kind", sorted(PASTES))
def test_each_unfenced_paste_is_blanked(kind: str) -> None:
    """Code, a table or a tool's lines pasted without a fence leave nothing of their own in the view; the user's words
    around them stay."""
    text = f"My Zeltrin job printed this:\n{PASTES[kind]}\nWhy does Zeltrin stop there?"
    kept = _kept(text)
    assert "Quorvex" not in kept and "quorvex" not in kept, kept
    assert "My Zeltrin job printed this:" in kept and "Why does Zeltrin stop there?" in kept


PROSE = (
    # the demo's answers: a formula, or a physics answer's definitions, one a line (LongMemEval dev50)
    "ROI = (Gain from Investment - Cost of Investment) / Cost of Investment",
    "Q = Heat generated in Joules (J) = 2.53 J (as calculated earlier)\nm = Mass of the affected concrete in kilograms",
    "W = 2530 Watts\nW = 2.53 Watts",
    # the demo: a law's list pasted by a user (GDPR), each item ending in ";"
    "(d) To protect the vital interests of a data subject or another individual;\n"
    "(e) To perform a task in the public interest or in official authority;",
    "Confidentiality Deeds;\nDeeds of Termination;",
    # spark-first: prose that names a program's parts
    "Do it without using tolist() on the frame.",
    "For the IT department, the total salary is 20000 + 25000 = 45000.",
    # spark-first: an answer that opens its lines with words a pip or a log opens with
    "Downloading recent Hollywood movies for free is illegal.\nCollecting stamps is a fine hobby.",
    "ERROR: I forgot the Kafka key.\nEpoch 3 of the course was hard.",
    "NAME and ADDRESS go in the header of the form.",
    "I ran pip install pandas and it said Successfully installed.",
    "Copy code from the page into the editor, then run it.",
)


@pytest.mark.parametrize("sentence", PROSE)
def test_prose_that_names_code_or_a_tool_stays(sentence: str) -> None:
    """A formula, a law's list, a sentence with a call or a sum in it, or one opening with a tool's word is no paste:
    the view keeps its words."""
    kept = _kept(f"Some context first.\n{sentence}\nAnd a plain line after it.")
    words = [w.strip(".,:;()|%") for w in sentence.split()]
    assert all(w in kept for w in words if w.isalpha() and len(w) > 2), kept


def test_words_written_before_a_table_header_on_its_line_stay() -> None:
    """spark-first's "how to solve Description\\tResource\\t...": the user's words before the table's first cell
    stay, the header and the rows go."""
    text = "how to solve Description\tResource\tPath\nThe Quorvex was not built\tsparkFirst\tUnknown"
    assert _kept(text) == "how to solve"


def test_code_lines_alone_and_a_sentence_after_a_program_stay() -> None:
    """One code-shaped line is the line masks' to judge, and a program's block ends at the first sentence."""
    assert "skewness" in _kept("skewness = 3 * (mean - median) / standard deviation")
    text = "val x = sc.parallelize(Quorvex)\nx.count()\nPlease explain where this code is executed and why."
    assert _kept(text) == "Please explain where this code is executed and why."


def test_the_eclipse_and_ocr_pastes_of_spark_first_are_blanked_in_place() -> None:
    """spark-first (a real export, read in place): the Eclipse "Problems" table ("Description Resource Path
    Location") and the OCR'd Scala ("Ival sc = ...") leave nothing in the view; the user's request stays."""
    segments = _real_segments("spark-first", ("description\tresource", "ival sc"))
    texts = [m.text for s in segments for m in s.messages if m.role == "user"]
    pastes = [t for t in texts if "Description\tResource" in t or "Ival sc" in t]
    assert len(pastes) >= 4
    for text in pastes:
        kept = _kept(text)
        assert "Resource" not in kept and "Ival" not in kept and "groupSizes" not in kept, kept
    assert any(_kept(t).startswith("how to solve") for t in pastes)


def test_the_spark_first_pastes_give_no_concept_and_their_subjects_stay() -> None:
    """The cold try's junk from those pastes ("Description Resource Path Location", "Unknown Java Problem",
    "sparkFirst", "Ival sc", "groupSizes") is no concept now; what the conversations are about stays."""
    eclipse = {t.casefold() for s in _real_segments("spark-first", ("description\tresource",)) for t in titles(s)}
    scala = {t.casefold() for s in _real_segments("spark-first", ("ival sc",)) for t in titles(s)}
    assert {"eclipse", "scala", "java"} <= eclipse and "rdd" in scala
    junk = {"description resource path location", "unknown java problem", "sparkfirst", "sparkfirst2", "ival sc"}
    assert not (eclipse | scala) & (junk | {"ival", "groupsizes"})


def test_a_copied_chatgpt_page_in_the_demo_keeps_its_prose() -> None:
    """The demo (LongMemEval) holds a ChatGPT page pasted back by the user, its code blocks glued to their
    "Copy code": the code goes, the instructions around it stay."""
    with zipfile.ZipFile(ROOT / "demo" / "longmemeval-demo.zip") as archive:
        conversations = json.loads(archive.read("conversations.json"))
    texts = [
        part
        for conversation in conversations
        for node in conversation["mapping"].values()
        for part in ((node.get("message") or {}).get("content") or {}).get("parts") or []
        if isinstance(part, str) and "sqlCopy code" in part
    ]
    assert texts
    kept = _kept(texts[0])
    assert "nginx:stable-alpine" not in kept and "COPY" not in kept and "git init" not in kept
    assert "Create another file named" in kept and "Push the repository to your preferred Git provider" in kept
