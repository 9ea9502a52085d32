"""Dates a text refers to, resolved against when it was written. English and Chinese.

"I went hiking yesterday", written on 2023-05-08, is about 2023-05-07;
"上周" written on Wednesday 2023-05-10 is 2023-05-01 to 2023-05-07. The
write path stores the first such span of a message as its ``event_date``
metadata (ISO 8601: ``2023-05-07`` or ``2023-05-01/2023-05-07``), so recall
can place a memory on the day it is about, not only on the day it was
said; the relevant-memories block shows it; and a filter can ask for a day.
Only the message's own words date it: a date inside quotes (``"see you
tomorrow"``, “明天见”, a ``>`` quoted line) or on a line that looks like a
rendered memory entry (``- [2019-03-01 · assistant] ...``) is someone else's.

Pure functions: text and a datetime in, spans out. Weeks start on Monday.
What is not recognised is left alone (a bare "Friday" or "May" is not a
date: "may" is a verb and a bare weekday's tense is unknown).
"""

from __future__ import annotations

import calendar
import re
import unicodedata
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any

__all__ = ["DateSpan", "event_span", "record_span", "resolve_dates"]


@dataclass(frozen=True)
class DateSpan:
    """Days ``start`` to ``end`` (inclusive) and the words they came from."""

    start: date
    end: date
    phrase: str = ""

    def iso(self) -> str:
        """``2023-05-07`` for one day, ``2023-05-01/2023-05-07`` for a span."""
        return self.start.isoformat() if self.start == self.end else f"{self.start}/{self.end}"

    @classmethod
    def from_iso(cls, value: object) -> DateSpan | None:
        """The span of an :meth:`iso` string; None for anything else."""
        if not isinstance(value, str) or not _ISO_SPAN.fullmatch(value):
            return None
        try:
            first, _, last = value.partition("/")
            start = date.fromisoformat(first)
            end = date.fromisoformat(last) if last else start
        except ValueError:
            return None
        return cls(start, end) if start <= end else None

    def overlaps(self, other: DateSpan) -> bool:
        return self.start <= other.end and other.start <= self.end


_ISO_SPAN = re.compile(r"\d{4}-\d{2}-\d{2}(?:/\d{4}-\d{2}-\d{2})?")
_MONTHS = {name.lower(): i for i, name in enumerate(calendar.month_name) if name}
_MONTHS.update({name.lower(): i for i, name in enumerate(calendar.month_abbr) if name})
_MONTHS["sept"] = 9
_WEEKDAYS = {name.lower(): i for i, name in enumerate(calendar.day_name)}
# Chat abbreviations ("last Fri"), read only after last / next / past / previous /
# coming: "this sun", "sat" and "wed" are words of their own too.
_WEEKDAY_ABBREVIATIONS = {
    "mon": 0,
    "tue": 1,
    "tues": 1,
    "wed": 2,
    "thu": 3,
    "thur": 3,
    "thurs": 3,
    "fri": 4,
    "sat": 5,
    "sun": 6,
}
_SAT_VERB = re.compile(r"\s+(?:down|up|on|in|at|by|with|through|out|there|here|for|beside|next)\b", re.IGNORECASE)
_ZH_WEEKDAYS = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6}
_WORD_NUMBERS = {
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
}
# A vague count is a range: "a few days ago" is 2-5 days back.
_VAGUE = {
    "a few": (2, 5),
    "few": (2, 5),
    "a couple of": (2, 3),
    "a couple": (2, 3),
    "couple of": (2, 3),
    "several": (3, 7),
    "几": (2, 5),
}
_ZH_DIGITS = {"零": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9}

_MONTH_NAMES = "|".join(sorted(_MONTHS, key=len, reverse=True))
_COUNT = (
    r"\d{1,2}|a few|a couple of|a couple|couple of|several|few|an?|one|two|three|four|five|six|seven"
    r"|eight|nine|ten|eleven|twelve"
)
_ZH_COUNT = r"[\d一二两三四五六七八九十]{1,3}|几"


def _zh_number(text: str) -> int:
    if text.isdigit():
        return int(text)
    if "十" in text:  # 十, 十二, 二十, 二十三
        tens, _, ones = text.partition("十")
        return (_ZH_DIGITS.get(tens, 1) if tens else 1) * 10 + (_ZH_DIGITS.get(ones, 0) if ones else 0)
    return _ZH_DIGITS.get(text, 0)


def _count(text: str) -> tuple[int, int]:
    text = text.lower()
    if text in _VAGUE:
        return _VAGUE[text]
    n = int(text) if text.isdigit() else _WORD_NUMBERS.get(text) or _zh_number(text)
    return n, n


def _add_months(day: date, months: int) -> date:
    index = day.year * 12 + day.month - 1 + months
    year, month = divmod(index, 12)
    return date(year, month + 1, min(day.day, calendar.monthrange(year, month + 1)[1]))


def _month(day: date) -> tuple[date, date]:
    return day.replace(day=1), day.replace(day=calendar.monthrange(day.year, day.month)[1])


def _week(day: date, weeks: int) -> tuple[date, date]:
    monday = day - timedelta(days=day.weekday()) + timedelta(weeks=weeks)
    return monday, monday + timedelta(days=6)


def _weekend(day: date, weeks: int) -> tuple[date, date]:
    """``weeks`` 0: this week's Saturday-Sunday; -1: the weekend before this week."""
    monday, _ = _week(day, weeks)
    return monday + timedelta(days=5), monday + timedelta(days=6)


def _period(day: date, unit: str, shift: int) -> tuple[date, date]:
    if unit == "week":
        return _week(day, shift)
    if unit == "weekend":
        return _weekend(day, shift)
    if unit == "month":
        return _month(_add_months(day.replace(day=1), shift))
    return date(day.year + shift, 1, 1), date(day.year + shift, 12, 31)


def _ago(day: date, unit: str, low: int, high: int, sign: int) -> tuple[date, date]:
    """``low``-``high`` units before (sign -1) or after (+1) ``day``: every day
    of each count's own span ("a few months ago": from the first day of the
    furthest month to the last day of the nearest)."""

    def one(n: int) -> tuple[date, date]:
        if unit == "day":
            d = day + timedelta(days=sign * n)
            return d, d
        if unit == "week":  # "two weeks ago" is about a fortnight back, give or take a few days
            d = day + timedelta(days=sign * 7 * n)
            return d - timedelta(days=3), d + timedelta(days=3)
        if unit == "month":
            return _month(_add_months(day, sign * n))
        return date(day.year + sign * n, 1, 1), date(day.year + sign * n, 12, 31)

    (a, b), (c, d) = one(low), one(high)
    return min(a, c), max(b, d)


def _shift_word(word: str) -> int:
    return {
        "last": -1,
        "past": -1,
        "previous": -1,
        "this": 0,
        "next": 1,
        "coming": 1,
        "上": -1,
        "这": 0,
        "本": 0,
        "下": 1,
    }[word.lower()]


def _weekday_shift(day: date, word: str, weekday: int) -> date:
    """ "last Friday": the latest Friday before ``day``; "next Friday": the first
    after it; "this Friday": the Friday of ``day``'s week."""
    if word in ("last", "past", "previous"):
        return day - timedelta(days=(day.weekday() - weekday - 1) % 7 + 1)
    if word in ("next", "coming"):
        return day + timedelta(days=(weekday - day.weekday() - 1) % 7 + 1)
    return day - timedelta(days=day.weekday() - weekday)


def _absolute(year: int | None, month: int, day_of_month: int | None, at: date) -> tuple[date, date] | None:
    """The date (or month) named. Without a year, the one of ``at``'s year unless
    that is over nine months away and the previous or next year's is nearer:
    "Dec 31" written on 2 January is the day before yesterday, not next December."""
    spans = {}
    for y in (year,) if year else (at.year, at.year - 1, at.year + 1):
        try:
            spans[y] = _month(date(y, month, 1)) if day_of_month is None else (date(y, month, day_of_month),) * 2
        except ValueError:  # 30 February, month 13, 29 February of a common year, years 0 and 10000
            continue
    if year or at.year not in spans:
        return spans.get(year or at.year)

    def days_away(span: tuple[date, date]) -> int:
        return 0 if span[0] <= at <= span[1] else min(abs((span[0] - at).days), abs((span[1] - at).days))

    if days_away(spans[at.year]) <= _SAME_YEAR_DAYS:
        return spans[at.year]
    return min(spans.values(), key=days_away)


_SAME_YEAR_DAYS = 270


_Resolver = Callable[[re.Match[str], date], "tuple[date, date] | None"]
# (substrings, one of which the lower-cased text must hold for the rule to run; pattern; resolver):
# the cheap test spares most messages most patterns
_Rule = tuple[tuple[str, ...], re.Pattern[str], _Resolver]
_DIGITS = tuple("0123456789")
_SHIFT_WORDS = ("last", "this", "next", "past", "previous", "coming")


def _at_fixed(days: int) -> _Resolver:
    def resolve(m: re.Match[str], at: date) -> tuple[date, date]:
        day = at + timedelta(days=days)
        return day, day

    return resolve


def _at_ago(m: re.Match[str], at: date) -> tuple[date, date]:
    low, high = _count(m["n"])
    return _ago(at, m["unit"].lower(), low, high, -1 if m["dir"].lower() == "ago" else 1)


def _at_period(m: re.Match[str], at: date) -> tuple[date, date]:
    word, unit = m["word"].lower(), m["unit"].lower()
    unit = "weekend" if unit in ("wknd", "wkend") else unit
    if word == "past" and unit in ("week", "month"):  # the last 7 / 30 days, not the calendar unit
        return at - timedelta(days=7 if unit == "week" else 30), at - timedelta(days=1)
    if word == "coming" and unit in ("week", "month"):
        return at + timedelta(days=1), at + timedelta(days=7 if unit == "week" else 30)
    return _period(at, unit, _shift_word(word))


def _at_weekday(m: re.Match[str], at: date) -> tuple[date, date]:
    name = m["wd"].lower()
    number = _WEEKDAYS[name] if name in _WEEKDAYS else _WEEKDAY_ABBREVIATIONS[name]
    d = _weekday_shift(at, m["word"].lower(), number)
    return d, d


def _at_abbreviated_weekday(m: re.Match[str], at: date) -> tuple[date, date] | None:
    if m["wd"].lower() == "sat" and _SAT_VERB.match(m.string, m.end()):  # "he last sat down"
        return None
    return _at_weekday(m, at)


def _at_month_day(m: re.Match[str], at: date) -> tuple[date, date] | None:
    if m["mon"] in ("may", "march"):  # lower-case: the verbs ("I may 5x it", "we march 10 miles")
        return None
    year = int(m["y"]) if m["y"] else None
    return _absolute(year, _MONTHS[m["mon"].lower()], int(m["d"]) if m["d"] else None, at)


def _at_iso(m: re.Match[str], at: date) -> tuple[date, date] | None:
    return _absolute(int(m["y"]), int(m["mo"]), int(m["d"]), at)


def _at_zh_ymd(m: re.Match[str], at: date) -> tuple[date, date] | None:
    year = int(m["y"]) if m["y"] else None
    return _absolute(year, _zh_number(m["mo"]), _zh_number(m["d"]) if m["d"] else None, at)


def _at_zh_ago(m: re.Match[str], at: date) -> tuple[date, date]:
    low, high = _count(m["n"])
    unit = {
        "天": "day",
        "日": "day",
        "周": "week",
        "星期": "week",
        "个星期": "week",
        "礼拜": "week",
        "个礼拜": "week",
        "个月": "month",
        "月": "month",
        "年": "year",
    }[m["unit"]]
    return _ago(at, unit, low, high, -1 if m["dir"] in ("前", "以前", "之前") else 1)


def _at_zh_period(m: re.Match[str], at: date) -> tuple[date, date]:
    unit = "weekend" if m["unit"].endswith("周末") else "month" if "月" in m["unit"] else "week"
    return _period(at, unit, _shift_word(m["word"]))


def _at_zh_weekday(m: re.Match[str], at: date) -> tuple[date, date]:
    monday, _ = _week(at, _shift_word(m["word"]))
    d = monday + timedelta(days=_ZH_WEEKDAYS[m["wd"]])
    return d, d


def _at_zh_year(shift: int) -> _Resolver:
    return lambda m, at: (date(at.year + shift, 1, 1), date(at.year + shift, 12, 31))


def _at_month_name_first(m: re.Match[str], at: date) -> tuple[date, date] | None:
    if m["mon"] in ("may", "march"):
        return None
    year = m["y"] or m["y2"]
    return _absolute(int(year) if year else None, _MONTHS[m["mon"].lower()], int(m["d"]) if m["d"] else None, at)


_WEEKDAY_ALTERNATION = "|".join(_WEEKDAYS)
_WEEKDAY_ABBREVIATION_ALTERNATION = "|".join(sorted(_WEEKDAY_ABBREVIATIONS, key=len, reverse=True))
_SHIFT = r"(?P<word>last|this|next|past|previous|coming)"
_MONTH_DAY_YEAR = (
    rf"\b(?P<mon>{_MONTH_NAMES})\.?\s+(?:(?P<d>\d{{1,2}})(?:st|nd|rd|th)?\b"
    rf"(?:,?\s+(?P<y>\d{{4}}))?|(?P<y2>\d{{4}})\b)"
)
_ZH_SHIFT = (
    r"(?P<word>(?<![早晚马路身桌网线楼台手天])上|(?<![一以之天底地楼乡])下|这"
    r"|(?<![基日根成版文样剧课书资账笔一这那])本)"
)
_ZH_MONTH = (
    r"(?<![\d一二三四五六七八九十])(?:(?P<y>\d{4})年)?"
    r"(?P<mo>1[0-2]|0?[1-9]|十[一二]?|[一二三四五六七八九])月"
    r"(?:(?P<d>[0-3]?\d|[一二三]?十[一二三四五六七八九]?|[一二三四五六七八九])[日号])?"
)


def _rules() -> list[_Rule]:
    en = re.IGNORECASE
    return [
        (("yesterday",), re.compile(r"\b(?:the\s+)?day\s+before\s+yesterday\b", en), _at_fixed(-2)),
        (("tomorrow",), re.compile(r"\b(?:the\s+)?day\s+after\s+tomorrow\b", en), _at_fixed(2)),
        # chat spellings too: "yday", "2nite", "tmrw"
        (("yesterday", "last night", "yday"), re.compile(r"\b(?:yesterday|yday|last\s+night)\b", en), _at_fixed(-1)),
        (
            ("today", "tonight", "this", "2nite", "tonite"),
            re.compile(r"\b(?:today|tonight|tonite|2nite|this\s+(?:morning|afternoon|evening))\b", en),
            _at_fixed(0),
        ),
        (("tomorrow", "tmr", "2mor"), re.compile(r"\b(?:tomorrow|tmrw|tmr|2moro|2morrow)\b", en), _at_fixed(1)),
        (
            ("ago", "from now"),
            re.compile(rf"\b(?P<n>{_COUNT})\s+(?P<unit>day|week|month|year)s?\s+(?P<dir>ago|from\s+now)\b", en),
            _at_ago,
        ),
        (
            ("later",),
            re.compile(
                r"\b(?:in\s+)?(?P<n>\d{1,2}|a few|a couple of|two|three)\s+(?P<unit>day|week)s?\s+(?P<dir>later)\b", en
            ),
            _at_ago,
        ),
        (_SHIFT_WORDS, re.compile(rf"\b{_SHIFT}\s+(?P<unit>weekend|wknd|wkend|week|month|year)\b", en), _at_period),
        (_SHIFT_WORDS, re.compile(rf"\b{_SHIFT}\s+(?P<wd>{_WEEKDAY_ALTERNATION})\b", en), _at_weekday),
        # "the last mon of the month" is not a date
        (
            _SHIFT_WORDS,
            re.compile(
                rf"(?<!the\s)\b(?P<word>last|next|past|previous|coming)\s+(?P<wd>{_WEEKDAY_ABBREVIATION_ALTERNATION})"
                r"(?:\.|\b)",
                en,
            ),
            _at_abbreviated_weekday,
        ),
        (_DIGITS, re.compile(r"\b(?P<y>\d{4})-(?P<mo>\d{1,2})-(?P<d>\d{1,2})\b"), _at_iso),
        (
            _DIGITS,
            re.compile(
                rf"\b(?P<d>\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?(?P<mon>{_MONTH_NAMES})\.?"
                rf"(?:,?\s+(?P<y>\d{{4}}))?\b",
                en,
            ),
            _at_month_day,
        ),
        (_DIGITS, re.compile(_MONTH_DAY_YEAR, en), _at_month_name_first),
        (("大前天",), re.compile(r"大前天"), _at_fixed(-3)),
        (("大后天",), re.compile(r"大后天"), _at_fixed(3)),
        (("前天",), re.compile(r"(?<![之以然最])前天"), _at_fixed(-2)),
        (("后天",), re.compile(r"(?<![之以然最])后天(?!气)"), _at_fixed(2)),
        (("昨",), re.compile(r"昨[天晚日]|昨儿"), _at_fixed(-1)),
        (("今",), re.compile(r"今[天晚早日]|今儿"), _at_fixed(0)),
        (("明",), re.compile(r"明[天晚早]|明儿"), _at_fixed(1)),
        (("前年",), re.compile(r"前年"), _at_zh_year(-2)),
        (("去年",), re.compile(r"去年"), _at_zh_year(-1)),
        (("今年",), re.compile(r"今年"), _at_zh_year(0)),
        (("明年",), re.compile(r"明年"), _at_zh_year(1)),
        (
            ("周", "星期", "礼拜"),
            re.compile(r"(?P<word>[上这本下])(?:个)?(?:周|星期|礼拜)(?P<wd>[一二三四五六日天])"),
            _at_zh_weekday,
        ),
        (
            ("周", "星期", "礼拜", "月"),
            re.compile(rf"{_ZH_SHIFT}(?P<unit>个周末|周末|个星期|星期|个礼拜|礼拜|周|个月|月)(?![一二三四五六日天])"),
            _at_zh_period,
        ),
        (
            ("前", "后"),
            re.compile(
                rf"(?P<n>{_ZH_COUNT})(?P<unit>个星期|星期|个礼拜|礼拜|周|个月|天|年)(?P<dir>以前|之前|前|以后|之后|后)"
            ),
            _at_zh_ago,
        ),
        (("前几天",), re.compile(r"前几天"), lambda m, at: _ago(at, "day", 2, 5, -1)),
        (("月",), re.compile(_ZH_MONTH), _at_zh_ymd),
    ]


_RULES = _rules()


def resolve_dates(text: str, written: datetime | date) -> list[DateSpan]:
    """The date expressions of ``text`` as day spans, in the order they appear.

    Relative expressions count from ``written`` (its calendar date, in its own
    time zone). An expression that is part of a longer one counts once ("the
    day before yesterday" is not also "yesterday").
    """
    at = written.date() if isinstance(written, datetime) else written
    found: list[tuple[int, int, DateSpan]] = []
    lowered = text.lower()
    for needles, pattern, resolve in _RULES:
        if not any(n in lowered for n in needles):
            continue
        for m in pattern.finditer(text):
            try:
                days = resolve(m, at)
            except (OverflowError, ValueError):  # "yesterday" on 1 January of year 1
                continue
            if days is not None and m.group(0).strip():
                found.append((m.start(), m.end(), DateSpan(days[0], days[1], m.group(0))))
    found.sort(key=lambda f: (f[0], -(f[1] - f[0])))
    kept: list[tuple[int, int, DateSpan]] = []
    for start, end, span in found:
        if not kept or start >= kept[-1][1]:
            kept.append((start, end, span))
    return [span for _, _, span in kept]


# Quoted words: straight, curly, corner-bracket, guillemet and full-width quotes
# closed on the same line (an apostrophe is no quote: "it's", "I'll").
_QUOTED = re.compile(
    '"[^"\n]*"|\u201c[^\u201d\n]*\u201d|\u2018[^\u2019\n]*\u2019|\u300c[^\u300d\n]*\u300d'
    "|\u300e[^\u300f\n]*\u300f|\u00ab[^\u00bb\n]*\u00bb|\uff02[^\uff02\n]*\uff02"
)
# A line as a rendered memory entry starts ("- [2019-03-01 · assistant] ..."), seen
# after NFKC (full-width dashes and brackets), or a ">" quoted line.
_ENTRY_LIKE = re.compile(r"\s*(?:[-*•‐‑‒–—―−]\s*)?\[[^\]]*\d{4}\s*-\s*\d{1,2}\s*-\s*\d{1,2}|\s*>")


def _own_words(text: str) -> str:
    """``text`` without what it quotes: lines that look like a memory entry or a
    ``>`` quote, and words between quotes (each replaced by spaces)."""
    lines = text.splitlines()
    kept = ["" if _ENTRY_LIKE.match(unicodedata.normalize("NFKC", line)) else line for line in lines]
    return _QUOTED.sub(lambda m: " " * len(m.group(0)), "\n".join(kept))


def event_span(text: str, written: datetime | date) -> DateSpan | None:
    """The first date ``text`` refers to other than the day it was written, if
    any; a date it quotes (see :func:`_own_words`) does not count."""
    at = written.date() if isinstance(written, datetime) else written
    for span in resolve_dates(_own_words(text), written):
        if (span.start, span.end) != (at, at):
            return span
    return None


def record_span(metadata: Mapping[str, Any], written: datetime) -> DateSpan:
    """The days a stored message is about: its ``event_date`` when it has a
    valid one, otherwise the day it was written."""
    span = DateSpan.from_iso(metadata.get("event_date"))
    return span if span is not None else DateSpan(written.date(), written.date())
