"""A labelled set of fact sequences for measuring invalidation (tests/test_validity.py, benchmarks/bench_garden.py).

Each case is what one user said over time, in messages like real ones (moves, job changes, preferences that flip,
facts repeated, unrelated facts interleaved, a value that comes back), and the invalidations a correct gardener
makes: `closes` lists (i, j) when the fact stated in message i stops holding because of message j. Every other
pair must stay untouched. Written for the tests; no benchmark data.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Case:
    name: str
    kind: str  # same-attribute | different-attribute | different-subject | disjoint-interval | restated | polarity
    messages: tuple[tuple[str, str], ...]  # (ISO date, the user's message)
    closes: frozenset[tuple[int, int]]


def case(name: str, kind: str, messages: list[tuple[str, str]], closes: set[tuple[int, int]] | None = None) -> Case:
    return Case(name, kind, tuple(messages), frozenset(closes or set()))


CASES: tuple[Case, ...] = (
    case(
        "move",
        "same-attribute",
        [
            ("2022-01-10", "I live in Paris and I love the bakeries here."),
            ("2023-05-02", "Big news: I moved to Berlin last week, still unpacking."),
        ],
        {(0, 1)},
    ),
    case(
        "job change",
        "same-attribute",
        [
            ("2021-03-01", "I work at Acme Corp as a data analyst."),
            ("2022-09-15", "I started a new job at Globex, so my commute is longer."),
        ],
        {(0, 1)},
    ),
    case(
        "phone upgrade",
        "same-attribute",
        [
            ("2022-02-01", "My phone is a Pixel 6, the battery is dying."),
            ("2023-11-20", "My phone is a Pixel 8 now and the camera is great."),
        ],
        {(0, 1)},
    ),
    case(
        "diet flip",
        "polarity",
        [
            ("2021-06-01", "I started eating meat again after years."),
            ("2023-01-05", "I no longer eat meat, it just felt right."),
        ],
        {(0, 1)},
    ),
    case(
        "quit job",
        "polarity",
        [
            ("2020-01-01", "I work at Initech in the IT department."),
            ("2021-07-30", "I quit my job at Initech yesterday."),
        ],
        {(0, 1)},
    ),
    case(
        "reading progress",
        "same-attribute",
        [
            ("2023-05-20", "I'm currently on page 200 of the history book."),
            ("2023-05-29", "I'm now on page 220, the DNA chapter was great."),
        ],
        {(0, 1)},
    ),
    case(
        "two hobbies",
        "different-attribute",
        [
            ("2022-01-01", "I started learning Spanish with an app."),
            ("2022-03-01", "I started learning Guitar on weekends."),
            ("2022-04-01", "I started playing Tennis with friends."),
        ],
    ),
    case(
        "city and employer interleaved",
        "different-attribute",
        [
            ("2020-01-01", "I live in Lyon with my partner."),
            ("2020-06-01", "I work at Michelin, mostly on tyres."),
            ("2021-02-01", "I work at Renault now, new team."),
            ("2021-09-01", "I still live in Lyon, no plans to move."),
        ],
        {(1, 2)},
    ),
    case(
        "my phone vs my laptop",
        "different-subject",
        [
            ("2022-01-01", "My phone is a Pixel 7 and works fine."),
            ("2022-02-01", "My laptop is a ThinkPad X1 for work."),
            ("2022-03-01", "My car is a Honda Civic from 2015."),
        ],
    ),
    case(
        "back to Paris",
        "disjoint-interval",
        [
            ("2019-01-01", "I live in Paris near the canal."),
            ("2020-06-01", "I moved to Berlin for the job."),
            ("2022-09-01", "I moved back to Paris, it feels like home."),
        ],
        {(0, 1), (1, 2)},
    ),
    case(
        "restated city",
        "restated",
        [
            ("2022-01-01", "I live in Madrid and the summers are hot."),
            ("2022-05-01", "As I said, I live in Madrid, near Retiro."),
            ("2022-08-01", "I live in Madrid still, rent went up."),
        ],
    ),
    case(
        "learning stops",
        "polarity",
        [
            ("2022-01-01", "I started learning Japanese last month."),
            ("2022-02-01", "I started learning Piano too."),
            ("2022-10-01", "I stopped learning Japanese, too much at once."),
        ],
        {(0, 2)},
    ),
    case(
        "negative then other city",
        "different-attribute",
        [
            ("2022-01-01", "I don't live in London anymore."),
            ("2022-02-01", "I moved to Leeds, much cheaper."),
        ],
    ),
    case(
        "age and page",
        "different-attribute",
        [
            ("2023-01-01", "I'm 34 years old and started running."),
            ("2023-02-01", "I'm on page 40 of the novel."),
            ("2023-03-01", "I'm on page 90 of it now."),
        ],
        {(1, 2)},
    ),
    case(
        "running counts of different things",
        "different-attribute",
        [
            ("2023-01-01", "I've read 12 books this year, mostly novels."),
            ("2023-02-01", "I've watched 30 videos on Python so far."),
            ("2023-03-01", "Update: I've read 14 books now."),
        ],
        {(0, 2)},
    ),
    case(
        "personal bests of different things",
        "different-attribute",
        [
            ("2023-04-15", "At the track I set a personal best time of 12.8 seconds in the drag race."),
            ("2023-05-23", "I set a new personal best in the charity 5K with a time of 27:12."),
            ("2023-05-30", "I'm hoping to beat my personal best time of 25:50 next month."),
        ],
        {(1, 2)},
    ),
    case(
        "questions interleaved",
        "same-attribute",
        [
            ("2022-01-01", "I live in Oslo, it's cold."),
            ("2022-02-01", "Should I move to Bergen?"),
            ("2022-03-01", "I want to work at Equinor someday."),
            ("2022-06-01", "I moved to Bergen in May."),
        ],
        {(0, 3)},
    ),
)


def predicted_closures(item: Case) -> set[tuple[int, int]]:
    """What the offline rules plus the gardener close in one case: (opening message, closing message) pairs."""
    from extract.fact_mapper import attribute_key, subject_key
    from extract.facts import facts_in_sentence, sentences
    from garden.validity import Statement, intervals

    statements = []
    for index, (day, text) in enumerate(item.messages):
        for sentence in sentences(text):
            for n, fact in enumerate(facts_in_sentence(sentence)):
                statements.append(
                    Statement(
                        f"{index}:{n}",
                        f"m{index}",
                        subject_key(fact["subject"]),
                        attribute_key(fact["attribute"]),
                        fact["value"],
                        fact["polarity"],
                        sentence,
                        f"{day}T12:00:00+00:00",
                    )
                )
    found = intervals(statements)
    by_id = {i.fact_id: i for i in found}
    closures = set()
    for interval in found:
        if interval.superseded_by is not None:
            opened = int(interval.statements[0].message_id[1:])
            closed_by = int(by_id[interval.superseded_by].statements[0].message_id[1:])
            closures.add((opened, closed_by))
    return closures


def score(cases: tuple[Case, ...] = CASES) -> dict[str, float]:
    """Precision and recall of invalidations over the labelled set, and the wrong ones by kind."""
    right = wrong = missed = 0
    wrong_by_kind: dict[str, int] = {}
    for item in cases:
        predicted = predicted_closures(item)
        right += len(predicted & item.closes)
        wrong += len(predicted - item.closes)
        missed += len(item.closes - predicted)
        if predicted - item.closes:
            wrong_by_kind[item.kind] = wrong_by_kind.get(item.kind, 0) + len(predicted - item.closes)
    return {
        "cases": len(cases),
        "expected": right + missed,
        "predicted": right + wrong,
        "wrong": wrong,
        "missed": missed,
        "precision": right / (right + wrong) if right + wrong else 1.0,
        "recall": right / (right + missed) if right + missed else 1.0,
        **{f"wrong_{k}": v for k, v in wrong_by_kind.items()},
    }
