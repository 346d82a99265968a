"""Time words of a question as spans of time: "on 13 October 2023", "in May", "in 2022",
"yesterday", "last week", "three days ago". Recall ranks memories said within them higher.

Only calendar words and words relative to the moment of asking count: "last year" inside
"the trip we took last year" may be a year before the trip, not before now, which no rule
can tell, so a span is a hint for ranking, never a filter.
"""
from __future__ import annotations

import logging
import re
from datetime import datetime, timedelta, timezone
from typing import Optional

log = logging.getLogger(__name__)

Span = tuple[float, float]  # [start, end) in epoch seconds, UTC

MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august",
          "september", "october", "november", "december")
_MONTH = {name[:3]: i + 1 for i, name in enumerate(MONTHS)}
_MONTH_WORD = r"(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|" \
              r"sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
_YEAR = r"((?:19|20)\d\d)"
_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
            "seven": 7, "eight": 8, "nine": 9, "ten": 10}
_UNIT_DAYS = {"day": 1, "week": 7, "month": 30, "year": 365}
SLACK_DAYS = {"day": 1, "month": 7, "year": 14}  # a thing is often told a little after it happened
MAX_AGO_DAYS = 200 * 365  # "N days ago" further back than this names no memory

_ISO = re.compile(rf"\b{_YEAR}-(\d\d)-(\d\d)\b")
_DAY_MONTH = re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH_WORD}\b,?(?:\s+{_YEAR})?", re.I)
_MONTH_DAY = re.compile(rf"\b{_MONTH_WORD}\s+(\d{{1,2}})(?:st|nd|rd|th)?\b(?:,?\s+{_YEAR})?", re.I)
_MONTH_ONLY = re.compile(rf"\b(?:in|during|since|of|last|early|late|mid)\s+{_MONTH_WORD}\b(?:,?\s+{_YEAR})?", re.I)
_YEAR_ONLY = re.compile(rf"\b(?:in|during|of|since)\s+{_YEAR}\b", re.I)
_AGO = re.compile(r"\b(\d{1,6}|a|an|one|two|three|four|five|six|seven|eight|nine|ten)\s+(day|week|month|year)s?\s+ago\b", re.I)
_RELATIVE = {"today": (0, 1), "yesterday": (1, 1), "last week": (14, 8), "this week": (7, 8),
             "last month": (61, 32), "this month": (31, 32), "last year": (730, 366), "this year": (365, 366)}
_ASCII = str.maketrans({"\u0130": "i", "\u0131": "i", "\u017f": "s", "\u212a": "k"})  # İ ı ſ K
_RELATIVE_RE = re.compile(r"\b(" + "|".join(_RELATIVE) + r")\b", re.I)


def spans(question: str, now: float) -> list[Span]:
    """The spans of time `question` names, relative to `now` where it says "ago" or "last";
    [] (and a log line) if reading them fails: a date never breaks recall."""
    try:
        return _spans(question, now)
    except Exception as exc:  # noqa: BLE001 - a hint for ranking only
        log.warning("hermes-cmms: could not read the dates of a query: %s: %s", type(exc).__name__, exc)
        return []


def _spans(question: str, now: float) -> list[Span]:
    today = datetime.fromtimestamp(now, timezone.utc).replace(hour=0, minute=0, second=0, microsecond=0)
    found: list[Span] = []
    taken: list[tuple[int, int]] = []  # character ranges already read as a date

    def add(match, span: Optional[Span]) -> None:
        if span and not any(a < match.end() and match.start() < b for a, b in taken):
            found.append(span)
            taken.append(match.span())

    for m in _ISO.finditer(question):
        add(m, _day(int(m[1]), int(m[2]), int(m[3])))
    for m in _DAY_MONTH.finditer(question):
        add(m, _dated(today, int(m[1]), _MONTH[_key(m[2])[:3]], m[3]))
    for m in _MONTH_DAY.finditer(question):
        add(m, _dated(today, int(m[2]), _MONTH[_key(m[1])[:3]], m[3]))
    for m in _MONTH_ONLY.finditer(question):
        add(m, _month(today, _MONTH[_key(m[1])[:3]], m[2]))
    for m in _YEAR_ONLY.finditer(question):
        add(m, _widen(datetime(int(m[1]), 1, 1, tzinfo=timezone.utc), datetime(int(m[1]) + 1, 1, 1, tzinfo=timezone.utc), "year"))
    for m in _AGO.finditer(question):
        count = int(m[1]) if m[1].isdigit() else _NUMBERS[_key(m[1])]
        add(m, _ago(today, count * _UNIT_DAYS[_key(m[2])]))
    for m in _RELATIVE_RE.finditer(question):
        back, length = _RELATIVE[_key(m[1])]
        add(m, _widen(today - timedelta(days=back), today - timedelta(days=back - length), "day"))
    return found


def _key(word: str) -> str:
    """A matched word as our tables spell it (re.I also matches these four for ASCII letters)."""
    return word.translate(_ASCII).lower()


def _ago(today: datetime, back: int) -> Optional[Span]:
    """About `back` days before today (a quarter either way), if that is a date at all."""
    if back > MAX_AGO_DAYS:
        return None
    return _widen(today - timedelta(days=back + back // 4), today - timedelta(days=back - back // 4 - 1), "day")


def within(when: float, found: list[Span]) -> bool:
    return any(start <= when < end for start, end in found)


def _day(year: int, month: int, day: int) -> Optional[Span]:
    try:
        start = datetime(year, month, day, tzinfo=timezone.utc)
    except ValueError:
        return None
    return _widen(start, start + timedelta(days=1), "day")


def _dated(today: datetime, day: int, month: int, year: Optional[str]) -> Optional[Span]:
    """A day of a month: of the year given, else its latest occurrence not after today."""
    if year:
        return _day(int(year), month, day)
    for candidate in (today.year, today.year - 1):
        span = _day(candidate, month, day)
        if span and span[0] <= today.timestamp() + 86400:
            return span
    return None


def _month(today: datetime, month: int, year: Optional[str]) -> Span:
    """A month: of the year given, else its latest occurrence that has begun by today."""
    chosen = int(year) if year else (today.year if month <= today.month else today.year - 1)
    start = datetime(chosen, month, 1, tzinfo=timezone.utc)
    end = datetime(chosen + (month == 12), month % 12 + 1, 1, tzinfo=timezone.utc)
    return _widen(start, end, "month")


def _widen(start: datetime, end: datetime, unit: str) -> Span:
    return start.timestamp(), (end + timedelta(days=SLACK_DAYS[unit])).timestamp()
