"""Concepts v47 (issue 20, session 38's cold try of the real exports): a habit's word types a term a habit only where
the user is its subject and the word is not the term's own (extract/offline_hypotheses.py `_cue`). The texts are
spark-first's (shared/data/README.md), shortened."""

from __future__ import annotations

from concept_support import segment_input

from extract.offline import OfflineExtractor


def typed(*texts: tuple[str, str]) -> dict[str, str]:
    segment = segment_input("seg-habits", list(texts))
    return {h.title: h.type for h in OfflineExtractor().extract(segment).hypotheses}


def test_daily_in_a_question_about_a_job_or_a_feed_is_no_habit() -> None:
    """ "daily routine of a data engineer" asks about a job; "daily csv to datalake" is a file that comes each day:
    neither is the user's habit (they were behavioral patterns)."""
    job = typed(
        ("user", "daily routine of a data engineer with aws and spark sqoop"),
        (
            "assistant",
            "As a data engineer working with AWS and Spark Sqoop, your daily routine may involve the following"
            " tasks: loading data with Sqoop, running Spark jobs, and monitoring AWS Glue.",
        ),
    )
    assert job.get("Data engineer") == "entity", job
    feed = typed(
        ("user", "daily csv to datalake daily columns come if i recieve another column also what is the solution"),
        (
            "assistant",
            "If you receive an additional column in your daily CSV file that needs to be incorporated into your data"
            " lake, you can use schema evolution: Delta Lake can merge the new column into the table schema.",
        ),
    )
    assert "behavioral_pattern" not in feed.values(), feed


def test_a_habit_the_user_has_is_still_one() -> None:
    """ "I drink green tea every morning": the user is the subject of the habit's word."""
    found = typed(
        ("user", "I drink green tea every morning, and I take a cold shower after my workout."),
        (
            "assistant",
            "Green tea every morning gives you a gentle lift; green tea also has antioxidants. A cold shower after"
            " a workout may ease sore muscles, and a cold shower wakes you up.",
        ),
    )
    assert found.get("Green tea") == "behavioral_pattern", found
