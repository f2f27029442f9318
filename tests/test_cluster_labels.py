"""Topic keywords and labels (cluster/phrases.py): phrases from cleaned prose, cased as written, no "/"."""

from __future__ import annotations

from cluster.phrases import candidates, clean, ctfidf_phrases, label_from
from cluster.topics import ctfidf, label_of

GLUE = [
    "How do I schedule AWS Glue jobs? My aws glue job fails.\n```python\ndf = glueContext.create_dynamic_frame()\n"
    'print(df.count())\n```\nTraceback (most recent call last):\n  File "job.py", line 3, in <module>\n'
    "NameError: name 'dtype' is not defined",
    "AWS Glue jobs can be scheduled with triggers. Use `job.commit()` and see https://example.org/glue/docs or"
    ' /opt/glue/config.yaml. <div class="note">AWS Glue</div> job bookmarks track processed data.',
    "AWS Glue job bookmarks keep state between runs of AWS Glue jobs; a crawler fills the Data Catalog.",
    "With AWS Glue jobs you pay per DPU hour.\n| col | dtype |\n|---|---|\n| 1 | 2 |",
]
BAKING = [
    "My sourdough starter is sluggish; the sourdough loaf came out flat.",
    "Feed the sourdough starter twice a day and keep the dough warm for a good oven spring.",
    "A sourdough loaf needs a long cold proof; score the dough before the oven.",
    "Rye flour makes the sourdough starter more active.",
]


def test_clean_drops_code_tracebacks_markup_urls_and_paths() -> None:
    """What is left is prose: no fenced or inline code, traceback, tag, table row, URL or file path."""
    prose = clean("\n".join(GLUE))
    for gone in ("glueContext", "print", "Traceback", "NameError", "job.commit", "example.org", "config.yaml", "div"):
        assert gone not in prose
    assert "| col |" not in prose and "DPU hour" in prose and "AWS Glue jobs can be scheduled" in prose


def test_candidates_are_runs_of_content_words_cased_as_written() -> None:
    """Stop words and verbs cut runs; the key is lower case without a plural s, the surface form keeps its case."""
    found = {(key, surface) for key, surface, _ in candidates("Please explain the Spark DataFrames API to me.")}
    assert ("spark dataframe", "Spark DataFrames") in found
    assert ("spark dataframes api", "Spark DataFrames API") in found
    assert not {key for key, _ in found} & {"please", "explain", "the", "me"}


def test_keywords_are_phrases_from_prose_and_labels_keep_case() -> None:
    """The multi-word phrase wins over its words, shown as most often written ("AWS Glue jobs", not "Aws glue");
    nothing from code, tracebacks or markup becomes a keyword, and no label holds "/"."""
    ranked = ctfidf_phrases({0: GLUE, 1: BAKING}, 8)
    glue, baking = ranked[0].phrases, ranked[1].phrases
    assert glue[0] in {"AWS Glue jobs", "AWS Glue", "AWS Glue job bookmarks"}
    assert "sourdough starter" in baking or "sourdough" in baking
    words = {w.lower() for phrase in glue + baking for w in phrase.split()}
    assert not words & {"gluecontext", "print", "dtype", "div", "nameerror", "traceback", "col", "count", "https"}
    assert not any(p.islower() and "aws" in p.lower() for p in glue)  # "AWS" keeps its case wherever it is shown
    assert ranked[0].scores == sorted(ranked[0].scores, reverse=True)
    for topic, phrases in ((0, glue), (1, baking)):
        assert "/" not in label_from(phrases, topic)
    assert ctfidf({0: GLUE, 1: BAKING}, 8) == {0: glue, 1: baking}


def test_label_is_one_phrase_or_two_names() -> None:
    """Two names sharing no word are joined with "and"; otherwise the best phrase alone; no keywords: "topic N"."""
    assert label_from(["Hive", "Sqoop", "HDFS"], 0) == "Hive and Sqoop"
    assert label_from(["AWS", "Amazon Web Services", "S3"], 0) == "AWS"  # one thing's two names are not two
    assert label_from(["Amazon Web Services", "AWS"], 0) == "Amazon Web Services"
    assert label_from(["RDD", "Resilient Distributed Dataset"], 0) == "RDD"
    # the demo's broad topics had one common word for a label ("flavor", "character", "price")
    assert label_from(["flavor", "recipe", "sauce"], 0) == "flavor and recipe"
    assert label_from(["character", "story", "themes", "game"], 0) == "character and story"
    assert label_from(["body", "strength training", "exercises"], 0) == "strength training"
    assert label_from(["AWS Glue jobs", "AWS Glue"], 0) == "AWS Glue jobs"
    assert label_from(["sourdough starter", "oven spring"], 0) == "sourdough starter"
    assert label_of([], 7) == "topic 7"


def test_a_unit_glued_to_a_number_is_no_keyword_nor_a_models_notes() -> None:
    """ "5,000mAh", "16GB", "1st" give no word; names with digits of their own stay ("EC2", "GPT-4o"); a reply's
    <antThinking> notes and an artifact's code give no phrase (the prose cleaner masks them)."""
    text = (
        "<antThinking>Kubernetes operators</antThinking>An Anker power bank of 5,000mAh, 16GB of RAM on the 1st EC2 "
        'box, GPT-4o.\n<antArtifact identifier="w" type="application/vnd.ant.react" title="Charge Widget">\n'
        "export default function Zustand() {}\n</antArtifact>"
    )
    keys = {key for key, _, _ in candidates(text)}
    assert {"anker power bank", "ec2", "gpt-4o", "ram", "charge widget"} <= keys
    assert not {k for k in keys if k.split()[0] in {"mah", "ah", "gb", "st", "kubernete", "zustand"}}
