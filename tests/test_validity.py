"""Bi-temporal validity (garden/validity.py): what closes what, and what never does."""

from __future__ import annotations

from fact_cases import CASES, predicted_closures, score

from garden.validity import Statement, intervals, reconcile


def said(
    n: int, day: str, value: str, attribute: str = "lives in", subject: str = "user", polarity: str = "positive"
) -> Statement:
    return Statement(f"k:{n}", f"m{n}", subject, attribute, value, polarity, f"text {n}", f"{day}T10:00:00+00:00")


def by_value(found: list) -> dict[str, list]:  # type: ignore[type-arg]
    out: dict[str, list] = {}  # type: ignore[type-arg]
    for interval in found:
        out.setdefault(interval.value, []).append(interval)
    return out


def test_a_newer_contradicting_fact_closes_the_older_at_its_own_time() -> None:
    """Paris then Berlin (same subject, functional attribute): Paris ends when Berlin was said, pointing at it."""
    found = by_value(intervals([said(1, "2022-01-10", "Paris"), said(2, "2023-05-02", "Berlin")]))
    paris, berlin = found["Paris"][0], found["Berlin"][0]
    assert paris.valid_to == berlin.valid_from == "2023-05-02T10:00:00+00:00"
    assert paris.superseded_by == berlin.fact_id and berlin.valid_to is None


def test_other_subjects_and_attributes_are_never_touched() -> None:
    """A new city leaves the employer, and the user's phone leaves the user's laptop, alone."""
    found = intervals(
        [
            said(1, "2022-01-01", "Acme", attribute="works at"),
            said(2, "2022-02-01", "Berlin"),
            said(3, "2022-03-01", "Pixel 7", attribute="model", subject="user's phone"),
            said(4, "2022-04-01", "ThinkPad", attribute="model", subject="user's laptop"),
            said(5, "2022-05-01", "Munich"),
        ]
    )
    closed = {i.value for i in found if i.valid_to is not None}
    assert closed == {"Berlin"}


def test_disjoint_intervals_stay_separate() -> None:
    """Paris, Berlin, Paris again: two Paris intervals with the Berlin one between, not one long Paris."""
    found = by_value(
        intervals([said(1, "2019-01-01", "Paris"), said(2, "2020-06-01", "Berlin"), said(3, "2022-09-01", "Paris")])
    )
    first, second = sorted(found["Paris"], key=lambda i: i.valid_from)
    assert (first.valid_from[:10], first.valid_to[:10]) == ("2019-01-01", "2020-06-01")
    assert (second.valid_from[:10], second.valid_to) == ("2022-09-01", None)
    assert found["Berlin"][0].valid_to[:10] == "2022-09-01"


def test_a_restated_fact_extends_its_support_instead_of_duplicating() -> None:
    """Madrid said three times: one interval, support 3, the last statement's time as last stated."""
    found = intervals([said(n, f"2022-0{n}-01", "Madrid") for n in (1, 5, 8)])
    assert len(found) == 1 and len(found[0].statements) == 3
    rows, _ = reconcile(found, {}, "2024-01-01T00:00:00+00:00", "r1")
    assert rows[0]["support"] == 3 and rows[0]["last_stated"][:10] == "2022-08-01"


def test_multi_valued_attributes_only_flip_on_the_same_value() -> None:
    """Learning Spanish and guitar both hold; 'stopped learning Spanish' closes Spanish only."""
    found = intervals(
        [
            said(1, "2022-01-01", "Spanish", attribute="is learning"),
            said(2, "2022-02-01", "guitar", attribute="is learning"),
            said(3, "2022-10-01", "Spanish", attribute="is learning", polarity="negative"),
        ]
    )
    closed = {(i.value, i.polarity) for i in found if i.valid_to is not None}
    assert closed == {("Spanish", "positive")}


def test_nothing_is_deleted_and_ingestion_times_are_kept() -> None:
    """recorded_at stays from the first run; a later close sets invalidated_at; a vanished fact is 'retracted'."""
    first, _ = reconcile(intervals([said(1, "2022-01-01", "Paris")]), {}, "2024-01-01T00:00:00+00:00", "r1")
    stored = {r["fact_id"]: r for r in first}
    second, changes = reconcile(
        intervals([said(1, "2022-01-01", "Paris"), said(2, "2023-01-01", "Rome")]),
        stored,
        "2024-02-01T00:00:00+00:00",
        "r2",
    )
    paris = next(r for r in second if r["value"] == "Paris")
    assert paris["recorded_at"].startswith("2024-01-01") and paris["invalidated_at"].startswith("2024-02-01")
    assert {c[0] for c in changes} == {"fact_recorded", "fact_superseded"}
    stored.update({r["fact_id"]: r for r in second})
    third, changes = reconcile(intervals([]), stored, "2024-03-01T00:00:00+00:00", "r3")
    assert {r["state"] for r in third} == {"retracted"} and len(third) == 2
    assert all(c[0] == "fact_retracted" for c in changes)


def test_the_labelled_set_has_no_wrong_invalidation_and_misses_none() -> None:
    """Moves, job changes, flips, repeats, interleaved facts: every expected close made, no other."""
    for item in CASES:
        assert predicted_closures(item) == item.closes, item.name
    result = score()
    assert result["wrong"] == 0 and result["precision"] == result["recall"] == 1.0


def test_a_fact_that_now_names_another_concept_is_a_change_with_its_reason() -> None:
    """Berlin's concept merged into another: the fact's value_concept_id follows, logged as fact_link."""
    found = intervals([said(1, "2023-01-01", "Berlin")])
    first, _ = reconcile(found, {}, "2024-01-01T00:00:00+00:00", "r1", {"berlin": "berlin"})
    stored = {r["fact_id"]: r for r in first}
    rows, changes = reconcile(found, stored, "2024-02-01T00:00:00+00:00", "r2", {"berlin": "berlin-city"})
    assert rows[0]["value_concept_id"] == "berlin-city"
    assert [(c[0], c[3], c[4]) for c in changes] == [("fact_link", "berlin", "berlin-city")]


def test_quantities_of_different_kinds_do_not_close_each_other() -> None:
    """A drag race's 12.8 seconds and a 5K's 27:12 are both personal bests: neither closes the other; 25:50 does."""
    found = intervals(
        [
            said(1, "2023-04-15", "12.8 seconds", attribute="personal best"),
            said(2, "2023-05-23", "27:12", attribute="personal best"),
            said(3, "2023-05-30", "25:50", attribute="personal best"),
        ]
    )
    closed = {i.value: i.valid_to is not None for i in found}
    assert closed == {"12.8 seconds": False, "27:12": True, "25:50": False}


def _scan_every_open_interval(statements: list[Statement]) -> list[tuple[object, ...]]:
    """The rule as first written: each new statement asked `contradicts` of every open interval of its group."""
    from contracts.facts import contradicts
    from garden.validity import _open, _order

    groups: dict[tuple[str, str], list[Statement]] = {}
    for s in statements:
        groups.setdefault((s.subject, s.attribute), []).append(s)
    out = []
    for (subject, attribute), group in sorted(groups.items()):
        open_: dict[tuple[str, str], object] = {}
        untimed: dict[tuple[str, str], object] = {}
        for s in sorted(group, key=_order):
            key = (s.polarity, " ".join(s.value.casefold().split()))
            table = untimed if s.time is None else open_
            if key in table:
                table[key].statements.append(s)  # type: ignore[attr-defined]
                continue
            new = _open(subject, attribute, s)
            if s.time is not None:
                for old_key, old in list(open_.items()):
                    if contradicts(attribute, old.value, old.polarity == "positive", s.value, s.polarity == "positive"):  # type: ignore[attr-defined]
                        old.valid_to, old.superseded_by = s.time, new.fact_id  # type: ignore[attr-defined]
                        del open_[old_key]
            table[key] = new
            out.append(new)
    return [_fields(i) for i in out]


def _fields(i: object) -> tuple[object, ...]:
    keys = ("fact_id", "subject", "attribute", "value", "polarity", "valid_from", "valid_to", "superseded_by")
    return (*(getattr(i, k) for k in keys), tuple(s.mention_id for s in i.statements))  # type: ignore[attr-defined]


def test_comparing_only_possible_rivals_finds_what_comparing_every_open_interval_found() -> None:
    """The garden asks `contradicts` only of an open interval that could be contradicted (same value, other
    polarity; a functional attribute's positives; quantities of one kind): over random histories of functional,
    many-valued and quantity attributes, both polarities, restatements and untimed statements, the intervals are
    exactly those of asking every open interval."""
    import random

    values = {
        "lives in": ["Paris", "Berlin", "paris", "Rome"],
        "likes": ["jazz", "Jazz ", "tea", "chess", "hiking", "sushi"],
        "personal best": ["27:12", "25:50", "12.8 seconds", "13 seconds", "$400", "15"],
        "reading page": ["200", "220", "page 5"],
    }
    closed: set[str] = set()
    for seed in range(40):
        rng = random.Random(seed)
        statements = []
        for n in range(rng.randint(1, 60)):
            attribute = rng.choice(list(values))
            day = (
                None if rng.random() < 0.1 else f"2024-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}T10:00:00+00:00"
            )
            polarity = "negative" if rng.random() < 0.25 else "positive"
            subject = rng.choice(["user", "user", "sister"])
            statements.append(
                Statement(f"k:{n}", f"m{n}", subject, attribute, rng.choice(values[attribute]), polarity, "t", day)
            )
        expected = _scan_every_open_interval(statements)
        assert [_fields(i) for i in intervals(statements)] == expected, seed
        closed.update(str(f[2]) for f in expected if f[6] is not None)
    assert closed == set(values)  # every kind of attribute had intervals closed: the histories exercise the rule
