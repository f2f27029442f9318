"""Explicit time expressions in a question, read relative to the moment asked (`at`).

A rule that declines is the safe form (a weak date extractor hurt in the LongMemEval paper): only phrases
that name a time outright are read ("yesterday", "last week", "three months ago", "in May 2023", "in 2022",
"the past two weeks"); anything else returns None and recall ranks as if no time was said. The ranges are
generous on purpose: they move content outside them down, never out.
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np

NUMBERS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "couple of": 2,
    "a couple of": 2,
    "few": 3,
    "a few": 3,
}
UNIT_DAYS = {"day": 1, "week": 7, "month": 30, "year": 365}
MONTHS = {name.lower(): i for i, name in enumerate(calendar.month_name) if name}
MONTHS |= {name.lower(): i for i, name in enumerate(calendar.month_abbr) if name and name.lower() != "may"}

_NUM = r"(\d+|a couple of|a few|couple of|few|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)"
_AGO = re.compile(rf"\b{_NUM}\s+(day|week|month|year)s?\s+ago\b")
_PAST = re.compile(rf"\b(?:past|last|previous)\s+{_NUM}\s+(day|week|month|year)s?\b")
_LAST = re.compile(r"\b(yesterday|today|tonight|this morning|(?:last|this|past) (?:week|month|year|weekend))\b")
_MONTH_YEAR = re.compile(r"\b(?:in|during|on|since|of|from)?\s*([a-z]{3,9})\.?,?\s+(\d{4})\b")
_IN_MONTH = re.compile(r"\b(?:in|during|last|this past|since|early|late|mid)[\s-]+([a-z]{3,9})\b")
_WEEKDAY = re.compile(r"\b(?:last|this past)\s+(monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b")
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_IN_YEAR = re.compile(r"\b(?:in|during|since)\s+((?:19|20)\d{2})\b")


@dataclass(frozen=True, slots=True)
class TimeRange:
    start: datetime
    end: datetime
    phrase: str
    moment: datetime | None = None  # the point it names ("four weeks ago", "last Saturday"), when it names one

    def describe(self) -> str:
        return f"'{self.phrase}': {self.start.date().isoformat()} .. {self.end.date().isoformat()}"


def _number(word: str) -> int:
    return int(word) if word.isdigit() else NUMBERS.get(word, 1)


def _month_range(year: int, month: int, phrase: str) -> TimeRange:
    start = datetime(year, month, 1, tzinfo=None)
    end = datetime(year, month, calendar.monthrange(year, month)[1], 23, 59, 59)
    return TimeRange(start, end, phrase)


def find_range(question: str, at: datetime) -> TimeRange | None:
    """The range an explicit time expression in `question` names, relative to `at` (naive, UTC); else None."""
    text = question.lower()
    at = at.replace(tzinfo=None)
    if m := _AGO.search(text):
        days = _number(m.group(1)) * UNIT_DAYS[m.group(2)]
        slack = max(2, days // 2)
        start, end = at - timedelta(days=days + slack), at - timedelta(days=max(days - slack, 0))
        return TimeRange(start, end, m.group(0), moment=at - timedelta(days=days))
    if m := _PAST.search(text):
        days = _number(m.group(1)) * UNIT_DAYS[m.group(2)]
        return TimeRange(at - timedelta(days=days + 1), at, m.group(0))
    if m := _WEEKDAY.search(text):  # the latest such day before `at`, a day either side
        back = (at.weekday() - WEEKDAYS.index(m.group(1))) % 7 or 7
        day = (at - timedelta(days=back)).replace(hour=0, minute=0, second=0, microsecond=0)
        end = day + timedelta(days=2) - timedelta(seconds=1)
        return TimeRange(day - timedelta(days=1), end, m.group(0), moment=day + timedelta(hours=12))
    if m := _LAST.search(text):
        phrase = m.group(1)
        spans = {"yesterday": (2, 0), "today": (1, 0), "tonight": (1, 0), "this morning": (1, 0)}
        if phrase in spans:
            back, _ = spans[phrase]
            return TimeRange(at - timedelta(days=back), at, phrase)
        unit = phrase.split()[-1]
        days = {"week": 7, "weekend": 7, "month": 31, "year": 366}[unit]
        reach = days if phrase.startswith("this") else 2 * days
        return TimeRange(at - timedelta(days=reach), at, phrase)
    if m := _MONTH_YEAR.search(text):
        month = MONTHS.get(m.group(1))
        if month:
            return _month_range(int(m.group(2)), month, m.group(0).strip())
    if m := _IN_YEAR.search(text):
        year = int(m.group(1))
        return TimeRange(datetime(year, 1, 1), datetime(year, 12, 31, 23, 59, 59), m.group(0))
    if m := _IN_MONTH.search(text):
        month = MONTHS.get(m.group(1))
        if month:
            year = at.year if month <= at.month else at.year - 1
            return _month_range(year, month, m.group(0))
    return None


def range_factor(times: np.ndarray[Any, Any], found: TimeRange, outside: float) -> np.ndarray[Any, Any]:
    """Score multipliers for content said at `times` (epoch s, NaN unknown) given the range a question names: 1
    inside it, `outside` outside it. A range around a named moment ("four weeks ago", "last Saturday") is wide
    because people round; inside it, content counts less the further it is from the moment, linearly down to
    `outside` at the range's edge. Unknown times are left alone."""
    start = found.start.replace(tzinfo=UTC).timestamp()
    end = found.end.replace(tzinfo=UTC).timestamp()
    factor = np.ones(len(times), dtype=np.float32)
    if found.moment is not None:
        moment = found.moment.replace(tzinfo=UTC).timestamp()
        half = max(moment - start, end - moment, 1.0)
        inside = (times >= start) & (times <= end)
        factor[inside] = 1.0 - (1.0 - outside) * np.abs(times[inside] - moment) / half
    factor[(times < start) | (times > end)] = outside
    return factor
