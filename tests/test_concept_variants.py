"""Near-duplicate concepts folded by the concepts stage (extract/concept_variants.py, extract/concept_loop.py
`_fold_variants`): the real segment -> extract -> mapper -> concept loop path on SQLite files, a scripted extractor
answering per conversation (tests/test_concepts.py's helpers)."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

from concept_support import T0, conversation
from test_concepts import concepts, hyp, pipeline

from extract.concept_loop import better_spelled
from extract.concept_variants import name_shape, name_shaped, name_written, said_apart


def talk(conversation_id: str, user: str, reply: str, days: int = 0) -> Any:
    return conversation(conversation_id, [("user", user), ("assistant", reply)], start=T0 + timedelta(days=days))


def entity(title: str, spans: int = 2, **extra: Any) -> dict[str, Any]:
    return hyp(title, "entity", spans=spans, **extra)


def live(rows: dict[str, Any]) -> dict[str, Any]:
    return {t: r for t, r in rows.items() if r["state"] in ("active", "weak")}


def test_a_name_and_its_kind_word_are_one_concept_titled_by_the_name(tmp_path: Path) -> None:
    """ "CSV file" (said first) and "CSV" in another conversation: one concept "CSV", "CSV file" an alias, the evidence
    of both kept; "S3 bucket", with more evidence than "Amazon S3" (whose vendor alias is S3), folds into it."""
    chats = [
        talk("a", "read a csv file with spark", "Use spark.read.csv to read the CSV file.", 0),
        talk("b", "write csv from a dataframe", "Call df.write.csv to write CSV.", 1),
        talk("c", "list objects in an s3 bucket", "Use boto3 to list the S3 bucket.", 2),
        talk("d", "what is amazon s3", "Amazon S3 is object storage.", 3),
    ]
    specs = {
        "a": [entity("CSV file")],
        "b": [entity("CSV")],
        "c": [entity("S3 bucket", spans=2)],
        "d": [entity("Amazon S3", spans=1)],
    }
    dbs, result = pipeline(tmp_path, chats, specs)
    rows = live(concepts(dbs))
    assert set(rows) == {"CSV", "Amazon S3"}
    assert "CSV file" in json.loads(rows["CSV"]["aliases"]) and rows["CSV"]["evidence_count"] == 4
    assert "S3 bucket" in json.loads(rows["Amazon S3"]["aliases"]) and rows["Amazon S3"]["evidence_count"] == 3
    reasons = [r[0] for r in dbs.staging.execute("SELECT reason FROM concept_transitions WHERE to_state = 'merged'")]
    assert len(reasons) == 2 and all("variant" in r for r in reasons)
    assert result.counts["variants_folded"] == 2


def test_a_common_word_folds_into_its_code_construct_only_where_the_same_conversations_say_both(
    tmp_path: Path,
) -> None:
    """ "Broadcast" beside "Broadcast join" in one conversation: one concept, the longer title (it says which sense);
    "Window" of a house and "Window function" of SQL, in two conversations: two concepts; "Scala function" stays
    beside "Scala", which the replies write as a name."""
    chats = [
        talk("a", "broadcast join in spark", "A broadcast join sends the small table; use broadcast().", 0),
        talk("b", "paint the window frame", "Sand the window first.", 1),
        talk("c", "row_number window function", "A window function computes over a frame.", 2),
        talk("d", "scala function syntax", "In Scala a function is a value; Scala infers its type.", 3),
    ]
    specs = {
        "a": [entity("Broadcast", spans=2), entity("Broadcast join", spans=1)],
        "b": [entity("Window")],
        "c": [entity("Window function")],
        "d": [entity("Scala"), entity("Scala function", spans=1)],
    }
    dbs, _ = pipeline(tmp_path, chats, specs)
    rows = live(concepts(dbs))
    assert set(rows) == {"Broadcast join", "Window", "Window function", "Scala", "Scala function"}
    assert "Broadcast" in json.loads(rows["Broadcast join"]["aliases"])


def test_a_generic_kind_folds_only_into_a_name_shaped_core(tmp_path: Path) -> None:
    """ "Rdbms data" into "RDBMS" (the bare title is an acronym); "Parquet file" stays beside "Parquet" and "Coffee
    table" beside "Coffee", though one conversation says both (a common word before a kind may name another thing)."""
    chats = [
        talk("a", "what is parquet", "Data in Parquet is columnar, and tools read Parquet fast.", 0),
        talk("b", "open a parquet file", "Read the Parquet file with pandas.", 1),
        talk("c", "I drink coffee at the coffee table", "Keep a cup of coffee on a coaster.", 2),
        talk("d", "rdbms data to hdfs", "Sqoop moves RDBMS tables to HDFS.", 3),
        talk("e", "what is an rdbms", "An RDBMS stores relations.", 4),
    ]
    specs = {
        "a": [entity("Parquet")],
        "b": [entity("Parquet file", spans=1), entity("Parquet", spans=1)],
        "c": [entity("Coffee"), entity("Coffee table", spans=1)],
        "d": [entity("Rdbms data", spans=1)],
        "e": [entity("RDBMS")],
    }
    dbs, _ = pipeline(tmp_path, chats, specs)
    rows = live(concepts(dbs))
    assert set(rows) == {"Parquet", "Parquet file", "Coffee", "Coffee table", "RDBMS"}
    assert "Rdbms data" in json.loads(rows["RDBMS"]["aliases"]) and rows["RDBMS"]["evidence_count"] == 3


def test_forms_of_one_verb_are_one_concept_titled_by_the_most_evidence(tmp_path: Path) -> None:
    """ "PARTITION", "PARTITIONED" (which the resolver's similarity already puts with PARTITION) and "Partitioning",
    said most, in four conversations about Hive tables: one concept titled "Partitioning", the others aliases, every
    span kept; "Building" (a noun of its own) and "Build" in two conversations stay two."""
    hive = [
        (
            "alter table add partition in hive",
            "A PARTITION clause adds a folder to the Hive table for one column value.",
        ),
        ("hive table partitioned by date", "PARTITIONED BY keeps each date's rows in a Hive folder of the table."),
        ("partitioning a hive table", "Partitioning splits a Hive table into folders by a column value."),
        ("partitioning in spark and hive", "Partitioning by a column lets Hive skip the table's other folders."),
    ]
    chats = [talk(c, *hive[i], i) for i, c in enumerate("abcd")]
    chats += [talk(c, f"{c}: question", f"{c}: answer", i) for i, c in enumerate("ef", 4)]
    specs = {
        "a": [entity("PARTITION", spans=1)],
        "b": [entity("PARTITIONED", spans=1)],
        "c": [entity("Partitioning")],
        "d": [entity("Partitioning")],
        "e": [entity("Building")],
        "f": [entity("Build")],
    }
    dbs, _ = pipeline(tmp_path, chats, specs)
    rows = live(concepts(dbs))
    assert set(rows) == {"Partitioning", "Building", "Build"}
    assert {"PARTITION", "PARTITIONED"} <= set(json.loads(rows["Partitioning"]["aliases"]))
    assert rows["Partitioning"]["evidence_count"] == 6


def test_two_forms_of_one_verb_neither_bare_fold_where_they_share_conversations(tmp_path: Path) -> None:
    """ "Testing" (a noun of its own) and "Tested" (a verb's form only) share no bare name, only the verb "test": the
    pair is two inflections, folded only where the same conversations say both. The 1M build's first concepts run
    met such a pair and failed (the pair's two ids were keyed by their kind, one lost); "Streaming" and "Streamed"
    in two unrelated conversations stay two."""
    chats = [talk(c, f"{c}: question", f"{c}: answer", i) for i, c in enumerate("abc")]
    specs = {
        "a": [entity("Testing", spans=2), entity("Tested", spans=1)],
        "b": [entity("Streaming")],
        "c": [entity("Streamed")],
    }
    dbs, result = pipeline(tmp_path, chats, specs)
    assert result.status == "succeeded"
    rows = live(concepts(dbs))
    assert set(rows) == {"Testing", "Streaming", "Streamed"}
    assert "Tested" in json.loads(rows["Testing"]["aliases"])
    reasons = [r[0] for r in dbs.staging.execute("SELECT reason FROM concept_transitions WHERE to_state = 'merged'")]
    assert reasons == ["merged (variant: forms of one word)"], reasons


def test_forms_of_one_verb_fold_across_conversations_only_where_they_speak_of_the_same_things(tmp_path: Path) -> None:
    """The 1M build's v47 folded "Flicking" (paint flicked onto a canvas) into "Flicks" (a shooter game's aim),
    "Boating" into a bike shop's "Boat": a verb's forms in unrelated conversations are one act only where their
    evidence shares its words ("Thawing" / "Thaw": frozen, fridge, overnight), not where it shares none."""
    chats = [
        talk("a", "how do I flick paint onto a canvas", "Flicking paint with a toothbrush splatters the canvas.", 0),
        talk("b", "aim training for a shooter game", "Practice flicks and tracking against bots on a wall.", 1),
        talk("c", "thawing frozen soup", "Thawing frozen soup overnight in the fridge keeps it safe.", 2),
        talk("d", "how long do frozen meals take", "Thaw frozen meals overnight in the fridge, then reheat them.", 3),
    ]
    specs = {
        "a": [entity("Flicking")],
        "b": [entity("Flicks")],
        "c": [entity("Thawing")],
        "d": [entity("Thaw", spans=1, by="assistant")],
    }
    dbs, result = pipeline(tmp_path, chats, specs)
    rows = live(concepts(dbs))
    assert set(rows) == {"Flicking", "Flicks", "Thawing"}, set(rows)
    assert "Thaw" in json.loads(rows["Thawing"]["aliases"]) and result.counts["variants_folded"] == 1


def test_a_generic_kind_folds_into_a_title_cased_phrase_only_where_it_is_about_it(tmp_path: Path) -> None:
    """The 1M build's v47 folded "Glass coffee table" into "Glass Coffee", a cafe, because the capitals made the
    phrase name-shaped; a table made of a common phrase is another thing, data about it is not ("Blood pressure data"
    into "Blood Pressure"). And an abbreviation of a title ("CV" of "Computer Vision") stands for it in one sense
    only: "cv data" of a resume stays apart."""
    chats = [
        talk("a", "a coffee table for a small living room", "A glass coffee table adds a light, modern touch.", 0),
        talk("b", "cafes in honolulu", "Morning Glass Coffee is a cozy cafe with good pastries.", 1),
        talk("c", "datasets of vital signs", "PhysioNet holds ECG and blood pressure data from patients.", 2),
        talk("d", "does caffeine raise it", "Caffeine can raise Blood Pressure for a few hours.", 3),
        talk(
            "e", "make a data frame of the given cv data", "Read the cv data into a DataFrame, one row per resume.", 4
        ),
        talk("f", "what is computer vision", "Computer Vision (CV) teaches machines to read images.", 5),
    ]
    specs = {
        "a": [entity("Glass coffee table", spans=1, by="assistant")],
        "b": [entity("Glass Coffee")],
        "c": [entity("Blood pressure data", spans=1, by="assistant")],
        "d": [entity("Blood Pressure")],
        "e": [entity("Cv data", spans=1, by="assistant")],
        "f": [hyp("Computer Vision", "entity", aliases=["CV"])],
    }
    dbs, _ = pipeline(tmp_path, chats, specs)
    rows = live(concepts(dbs))
    assert set(rows) == {"Glass coffee table", "Glass Coffee", "Blood Pressure", "Cv data", "Computer Vision"}
    assert "Blood pressure data" in json.loads(rows["Blood Pressure"]["aliases"])


def test_a_word_said_apart_from_the_longer_name_is_no_piece_of_it(tmp_path: Path) -> None:
    """The 1M build's v47 folded "Flutter" into "Flutter archive file": every sentence citing Flutter cites the file,
    but one says Flutter outside it ("start using Flutter"), so Flutter is a thing of its own."""
    reply = "Unzip the Flutter archive file into Downloads, then start using Flutter for development."
    chats = [talk("a", "how do I install it on a mac", reply, 0)]
    specs = {"a": [entity("Flutter archive file"), entity("Flutter", spans=1, by="assistant")]}
    dbs, _ = pipeline(tmp_path, chats, specs)
    assert set(live(concepts(dbs))) == {"Flutter archive file", "Flutter"}


def test_data_before_a_process_noun_folds_where_the_same_conversations_say_both(tmp_path: Path) -> None:
    """ "Data skewness" and "Skewness" in one conversation: one concept; "Data engineer" and "Engineer" stay two (a
    role, not a process); "Data ingestion" and "Ingestion" in two unrelated conversations stay two."""
    chats = [
        talk("a", "how to check data skewness", "Skewness shows as slow tasks.", 0),
        talk("b", "daily routine of a data engineer", "An engineer checks pipelines.", 1),
        talk("c", "data ingestion with sqoop", "Sqoop imports tables.", 2),
        talk("d", "ingestion of food", "Ingestion starts in the mouth.", 3),
    ]
    specs = {
        "a": [entity("Data skewness"), entity("Skewness", spans=1)],
        "b": [entity("Data engineer", spans=1), hyp("Engineer", "entity", spans=1, by="assistant")],
        "c": [entity("Data ingestion")],
        "d": [entity("Ingestion")],
    }
    dbs, _ = pipeline(tmp_path, chats, specs)
    rows = live(concepts(dbs))
    assert set(rows) == {"Data skewness", "Data engineer", "Engineer", "Data ingestion", "Ingestion"}
    assert "Skewness" in json.loads(rows["Data skewness"]["aliases"])


def test_what_reads_as_a_name() -> None:
    assert [name_shaped(c) for c in ("CSV", "S3", "MySQL", "Spark SQL", "LIMIT", "SELECT", "Coffee", "Broadcast")] == [
        True,
        True,
        True,
        True,
        False,
        False,
        False,
        False,
    ]
    assert [name_shape(c) for c in ("MySQL", "S3", "Spark SQL", "Glass Coffee", "Blood Pressure", "Coffee")] == [
        "name",
        "name",
        "name",
        "title",
        "title",
        "",
    ]
    assert said_apart(["Unzip the Flutter archive file, then start using Flutter"], "Flutter", "Flutter archive file")
    assert not said_apart(["the Cleveland Indians' team name", "Cleveland Indians"], "Cleveland", "Cleveland Indians")
    assert not said_apart(["The show follows the Crain family's house"], "Crain", "Crain family")
    assert name_written(["Data stored as Parquet is columnar", "Parquet compresses"], "Parquet")
    assert not name_written(["Keep a cup of coffee on a coaster", "Coffee is hot"], "Coffee")


def test_a_typo_in_a_title_gives_way_to_the_spelling_a_later_hypothesis_has(tmp_path: Path) -> None:
    """spark-first's "airflow pros and cons in data injestion": the user's typo makes the concept first; a later
    "Data ingestion" resolves to it (one typo apart) and the title takes the right spelling, the typo an alias."""
    chats = [
        talk("a", "airflow pros and cons in data injestion", "Airflow schedules ingestion jobs.", 0),
        talk("b", "sqoop for data ingestion", "Sqoop imports tables for data ingestion.", 1),
    ]
    specs = {"a": [entity("Data injestion")], "b": [entity("Data ingestion")]}
    dbs, _ = pipeline(tmp_path, chats, specs)
    rows = live(concepts(dbs))
    assert set(rows) == {"Data ingestion"}
    assert "Data injestion" in json.loads(rows["Data ingestion"]["aliases"])
    assert rows["Data ingestion"]["evidence_count"] == 4


def test_which_spelling_is_better() -> None:
    assert better_spelled("Data ingestion", "Data injestion")
    assert not better_spelled("Data injestion", "Data ingestion")
    assert not better_spelled("Sqoop", "Scoop") and not better_spelled("Spark SQL", "Spark")


def test_a_word_said_only_inside_a_longer_name_folds_into_it(tmp_path: Path) -> None:
    """spark-first's "Pi coin": "Pi" and "Pi coin" cite the same sentences, so "Pi" is a piece of the name: one
    concept "Pi coin"; "Spark" cites a sentence "Spark SQL" does not, so the two stay."""
    chats = [
        talk("a", "What is the value of pi coin", "Pi coin is a new cryptocurrency.", 0),
        talk("b", "spark sql window", "Spark SQL has window functions.", 1),
        talk("c", "spark on yarn", "Spark runs on YARN.", 2),
    ]
    specs = {
        "a": [entity("Pi coin"), entity("Pi")],
        "b": [entity("Spark SQL"), entity("Spark", spans=1)],
        "c": [entity("Spark")],
    }
    dbs, _ = pipeline(tmp_path, chats, specs)
    rows = live(concepts(dbs))
    assert set(rows) == {"Pi coin", "Spark SQL", "Spark"}
    assert "Pi" in json.loads(rows["Pi coin"]["aliases"]) and rows["Pi coin"]["evidence_count"] == 2
