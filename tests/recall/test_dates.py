"""Date expressions resolved against when a message was written
(``memory_vec._rules.dates``): English and Chinese, week/weekend and month/year
edges, overlapping phrases, false-positive guards, the ISO form of a span and
``record_span``. Pure functions; no model, no store."""

from __future__ import annotations

from datetime import date, datetime, timedelta, timezone

import pytest

from memory_vec._rules.dates import DateSpan, event_span, record_span, resolve_dates

WED = date(2023, 5, 10)  # a Wednesday
THU = date(2023, 5, 11)
FRI = date(2023, 5, 12)
SAT = date(2023, 5, 13)
SUN = date(2023, 5, 14)
MON = date(2023, 5, 15)


def d(text: str) -> date:
    return date.fromisoformat(text)


def spans(text: str, written: date | datetime = WED) -> list[tuple[date, date]]:
    return [(s.start, s.end) for s in resolve_dates(text, written)]


def only(text: str, written: date | datetime = WED) -> tuple[date, date]:
    found = spans(text, written)
    assert len(found) == 1, f"{text!r} -> {found}"
    return found[0]


def test_fixture_weekdays() -> None:
    assert [x.weekday() for x in (MON, WED, THU, FRI, SAT, SUN)] == [0, 2, 3, 4, 5, 6]


# --------------------------------------------------------------------------- English, written Wednesday 2023-05-10
@pytest.mark.parametrize(
    ("text", "start", "end"),
    [
        ("I went hiking yesterday", "2023-05-09", "2023-05-09"),
        ("last night was fun", "2023-05-09", "2023-05-09"),
        ("today", "2023-05-10", "2023-05-10"),
        ("tonight", "2023-05-10", "2023-05-10"),
        ("this morning", "2023-05-10", "2023-05-10"),
        ("tomorrow", "2023-05-11", "2023-05-11"),
        ("the day before yesterday", "2023-05-08", "2023-05-08"),
        ("day after tomorrow", "2023-05-12", "2023-05-12"),
        ("last week", "2023-05-01", "2023-05-07"),
        ("this week", "2023-05-08", "2023-05-14"),
        ("next week", "2023-05-15", "2023-05-21"),
        ("last weekend", "2023-05-06", "2023-05-07"),
        ("this weekend", "2023-05-13", "2023-05-14"),
        ("next weekend", "2023-05-20", "2023-05-21"),
        ("the past week", "2023-05-03", "2023-05-09"),
        ("the coming week", "2023-05-11", "2023-05-17"),
        ("over the past month", "2023-04-10", "2023-05-09"),
        ("last month", "2023-04-01", "2023-04-30"),
        ("next month", "2023-06-01", "2023-06-30"),
        ("last year", "2022-01-01", "2022-12-31"),
        ("this year", "2023-01-01", "2023-12-31"),
        ("3 days ago", "2023-05-07", "2023-05-07"),
        ("two days from now", "2023-05-12", "2023-05-12"),
        ("a week ago", "2023-04-30", "2023-05-06"),  # 7 days back, give or take 3
        ("two weeks ago", "2023-04-23", "2023-04-29"),
        ("a month ago", "2023-04-01", "2023-04-30"),
        ("3 years ago", "2020-01-01", "2020-12-31"),
        ("a few days ago", "2023-05-05", "2023-05-08"),  # 2-5 days back
        ("a couple of days ago", "2023-05-07", "2023-05-08"),
        ("several days ago", "2023-05-03", "2023-05-07"),
        ("a few weeks from now", "2023-05-21", "2023-06-17"),
        ("3 days later", "2023-05-13", "2023-05-13"),
        ("last Friday", "2023-05-05", "2023-05-05"),
        ("next Friday", "2023-05-12", "2023-05-12"),
        ("this Friday", "2023-05-12", "2023-05-12"),
        ("this Monday", "2023-05-08", "2023-05-08"),
        ("last Wednesday", "2023-05-03", "2023-05-03"),
        ("next Wednesday", "2023-05-17", "2023-05-17"),
        ("LAST FRIDAY", "2023-05-05", "2023-05-05"),
        ("last Fri I took the kids out", "2023-05-05", "2023-05-05"),  # chat abbreviations
        ("last fri. was fun", "2023-05-05", "2023-05-05"),
        ("next Tues", "2023-05-16", "2023-05-16"),
        ("see you next thurs!", "2023-05-11", "2023-05-11"),
        ("last Sat we hiked", "2023-05-06", "2023-05-06"),
        ("last sun", "2023-05-07", "2023-05-07"),
        ("coming Mon", "2023-05-15", "2023-05-15"),
        ("cya tmrw", "2023-05-11", "2023-05-11"),
        ("gym 2nite", "2023-05-10", "2023-05-10"),
        ("saw her yday", "2023-05-09", "2023-05-09"),
        ("last wknd was fun", "2023-05-06", "2023-05-07"),
        ("7 May 2023", "2023-05-07", "2023-05-07"),
        ("on the 7th of May, 2022", "2022-05-07", "2022-05-07"),
        ("May 7th, 2023", "2023-05-07", "2023-05-07"),
        ("May 7", "2023-05-07", "2023-05-07"),
        ("December 25", "2023-12-25", "2023-12-25"),
        ("Sept 5", "2023-09-05", "2023-09-05"),
        ("Sep. 5, 2022", "2022-09-05", "2022-09-05"),
        ("in May 2023", "2023-05-01", "2023-05-31"),
        ("February 2024", "2024-02-01", "2024-02-29"),
        ("2023-05-07", "2023-05-07", "2023-05-07"),
        ("on 2023-5-7", "2023-05-07", "2023-05-07"),
    ],
)
def test_english_expressions(text: str, start: str, end: str) -> None:
    assert only(text) == (d(start), d(end))


# --------------------------------------------------------------------------- Chinese, written Wednesday 2023-05-10
@pytest.mark.parametrize(
    ("text", "start", "end"),
    [
        ("我昨天去爬山了", "2023-05-09", "2023-05-09"),
        ("昨晚", "2023-05-09", "2023-05-09"),
        ("今天", "2023-05-10", "2023-05-10"),
        ("明天", "2023-05-11", "2023-05-11"),
        ("前天", "2023-05-08", "2023-05-08"),
        ("后天", "2023-05-12", "2023-05-12"),
        ("大前天", "2023-05-07", "2023-05-07"),
        ("大后天", "2023-05-13", "2023-05-13"),
        ("上周", "2023-05-01", "2023-05-07"),
        ("这周", "2023-05-08", "2023-05-14"),
        ("下周", "2023-05-15", "2023-05-21"),
        ("上个星期", "2023-05-01", "2023-05-07"),
        ("上周末", "2023-05-06", "2023-05-07"),
        ("这周末", "2023-05-13", "2023-05-14"),
        ("上周五", "2023-05-05", "2023-05-05"),
        ("上星期天", "2023-05-07", "2023-05-07"),
        ("下周一", "2023-05-15", "2023-05-15"),
        ("这周三", "2023-05-10", "2023-05-10"),
        ("上个礼拜五", "2023-05-05", "2023-05-05"),
        ("上个月", "2023-04-01", "2023-04-30"),
        ("本月", "2023-05-01", "2023-05-31"),
        ("这个月", "2023-05-01", "2023-05-31"),
        ("下个月", "2023-06-01", "2023-06-30"),
        ("三天前", "2023-05-07", "2023-05-07"),
        ("十天前", "2023-04-30", "2023-04-30"),
        ("二十三天前", "2023-04-17", "2023-04-17"),
        ("两天后", "2023-05-12", "2023-05-12"),
        ("几天前", "2023-05-05", "2023-05-08"),
        ("前几天", "2023-05-05", "2023-05-08"),
        ("一周前", "2023-04-30", "2023-05-06"),
        ("两周前", "2023-04-23", "2023-04-29"),
        ("三个月前", "2023-02-01", "2023-02-28"),
        ("3年后", "2026-01-01", "2026-12-31"),
        ("去年", "2022-01-01", "2022-12-31"),
        ("前年", "2021-01-01", "2021-12-31"),
        ("今年", "2023-01-01", "2023-12-31"),
        ("明年", "2024-01-01", "2024-12-31"),
        ("5月7日", "2023-05-07", "2023-05-07"),
        ("5月", "2023-05-01", "2023-05-31"),
        ("2023年5月7日", "2023-05-07", "2023-05-07"),
        ("2022年12月", "2022-12-01", "2022-12-31"),
        ("五月七号", "2023-05-07", "2023-05-07"),
        ("十二月二十五日", "2023-12-25", "2023-12-25"),
        ("十月", "2023-10-01", "2023-10-31"),
        ("10月1日", "2023-10-01", "2023-10-01"),
        ("一月一号", "2023-01-01", "2023-01-01"),
    ],
)
def test_chinese_expressions(text: str, start: str, end: str) -> None:
    assert only(text) == (d(start), d(end))


# --------------------------------------------------------------------------- weeks start Monday; weekend edges
@pytest.mark.parametrize(
    ("text", "written", "start", "end"),
    [
        ("last weekend", SAT, "2023-05-06", "2023-05-07"),
        ("last weekend", SUN, "2023-05-06", "2023-05-07"),
        ("last weekend", MON, "2023-05-13", "2023-05-14"),
        ("this weekend", SAT, "2023-05-13", "2023-05-14"),
        ("this weekend", SUN, "2023-05-13", "2023-05-14"),
        ("this weekend", MON, "2023-05-20", "2023-05-21"),
        ("next weekend", MON, "2023-05-27", "2023-05-28"),
        ("last week", SUN, "2023-05-01", "2023-05-07"),
        ("last week", MON, "2023-05-08", "2023-05-14"),
        ("this week", SUN, "2023-05-08", "2023-05-14"),
        ("this week", MON, "2023-05-15", "2023-05-21"),
        ("next week", SUN, "2023-05-15", "2023-05-21"),
        ("last Friday", FRI, "2023-05-05", "2023-05-05"),  # the latest Friday before the day
        ("last Friday", SAT, "2023-05-12", "2023-05-12"),
        ("next Friday", THU, "2023-05-12", "2023-05-12"),  # the first Friday after the day
        ("next Friday", FRI, "2023-05-19", "2023-05-19"),
        ("last Monday", MON, "2023-05-08", "2023-05-08"),
        ("next Monday", SUN, "2023-05-15", "2023-05-15"),
        ("this Friday", SAT, "2023-05-12", "2023-05-12"),  # the Friday of the day's week
        ("上周末", MON, "2023-05-13", "2023-05-14"),
        ("这周末", SUN, "2023-05-13", "2023-05-14"),
        ("上周", MON, "2023-05-08", "2023-05-14"),
        ("上周日", MON, "2023-05-14", "2023-05-14"),
        ("下周一", SUN, "2023-05-15", "2023-05-15"),
        ("这周一", SUN, "2023-05-08", "2023-05-08"),
    ],
)
def test_week_and_weekend_edges(text: str, written: date, start: str, end: str) -> None:
    assert only(text, written) == (d(start), d(end))


# --------------------------------------------------------------------------- month and year boundaries
@pytest.mark.parametrize(
    ("text", "written", "start", "end"),
    [
        ("last month", date(2023, 1, 15), "2022-12-01", "2022-12-31"),
        ("上个月", date(2023, 1, 5), "2022-12-01", "2022-12-31"),
        ("next month", date(2023, 12, 31), "2024-01-01", "2024-01-31"),
        ("this month", date(2024, 2, 10), "2024-02-01", "2024-02-29"),
        ("a month ago", date(2023, 3, 31), "2023-02-01", "2023-02-28"),
        ("yesterday", date(2024, 3, 1), "2024-02-29", "2024-02-29"),
        ("yesterday", date(2023, 3, 1), "2023-02-28", "2023-02-28"),
        ("昨天", date(2023, 1, 1), "2022-12-31", "2022-12-31"),
        ("前天", date(2023, 1, 1), "2022-12-30", "2022-12-30"),
        ("tomorrow", date(2023, 12, 31), "2024-01-01", "2024-01-01"),
        ("3 days ago", date(2023, 3, 2), "2023-02-27", "2023-02-27"),
        ("last week", date(2023, 1, 2), "2022-12-26", "2023-01-01"),
        ("last year", date(2023, 1, 1), "2022-01-01", "2022-12-31"),
        ("去年", date(2024, 12, 31), "2023-01-01", "2023-12-31"),
        ("12 months ago", WED, "2022-05-01", "2022-05-31"),
    ],
)
def test_month_and_year_boundaries(text: str, written: date, start: str, end: str) -> None:
    assert only(text, written) == (d(start), d(end))


def test_datetime_written_uses_its_own_calendar_date() -> None:
    late = datetime(2023, 5, 10, 23, 59, tzinfo=timezone(timedelta(hours=8)))
    assert spans("yesterday", late) == [(d("2023-05-09"), d("2023-05-09"))]
    assert spans("yesterday", datetime(2023, 5, 10, 0, 0)) == spans("yesterday", WED)


# --------------------------------------------------------------------------- overlapping phrases count once
@pytest.mark.parametrize(
    ("text", "phrase", "start", "end"),
    [
        ("the day before yesterday", "the day before yesterday", "2023-05-08", "2023-05-08"),
        ("the day after tomorrow", "the day after tomorrow", "2023-05-12", "2023-05-12"),
        ("大前天", "大前天", "2023-05-07", "2023-05-07"),
        ("大后天", "大后天", "2023-05-13", "2023-05-13"),
        ("7 May 2023", "7 May 2023", "2023-05-07", "2023-05-07"),
        ("May 7th, 2023", "May 7th, 2023", "2023-05-07", "2023-05-07"),
        ("2023年5月7日", "2023年5月7日", "2023-05-07", "2023-05-07"),
        ("last weekend", "last weekend", "2023-05-06", "2023-05-07"),
        ("上周五", "上周五", "2023-05-05", "2023-05-05"),
        ("上周末", "上周末", "2023-05-06", "2023-05-07"),
        ("两周后天天跑步", "两周后", "2023-05-21", "2023-05-27"),
    ],
)
def test_longer_expression_counts_once(text: str, phrase: str, start: str, end: str) -> None:
    found = resolve_dates(text, WED)
    assert [(s.start, s.end, s.phrase) for s in found] == [(d(start), d(end), phrase)]


# --------------------------------------------------------------------------- false-positive guards
@pytest.mark.parametrize(
    "text",
    [
        "I may 5x it",
        "we may 7 times over",
        "I'll see you in May",
        "See you Friday",
        "an hour ago",
        "no dates in here at all",
        "",
        "之后天气很好",
        "以后天天跑步",
        "然后天黑了",
        "之前天气很冷",
        "基本月薪",
        "日本月饼",
        "成本月报",
        "几天",
        "说明白",
        "5月32日",
        "2023-02-30",
        "Feb 30",
        "I have 2 decks",
        "this sun is hot",  # abbreviations only after last / next: "sun", "sat" and "wed" are words
        "we wed in June",
        "he last sat down by the window",
        "the last mon of the month",
    ],
)
def test_not_a_date(text: str) -> None:
    assert resolve_dates(text, WED) == []


@pytest.mark.parametrize("text", ["早上周围很安静", "晚上月亮很圆", "看一下周边的餐厅", "我买了一本月刊"])
def test_chinese_period_words_inside_other_words(text: str) -> None:
    assert resolve_dates(text, WED) == []


# --------------------------------------------------------------------------- several expressions, in order
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "May 5th and yesterday and 上周",
            [
                ("May 5th", "2023-05-05", "2023-05-05"),
                ("yesterday", "2023-05-09", "2023-05-09"),
                ("上周", "2023-05-01", "2023-05-07"),
            ],
        ),
        (
            "next Friday, not 2023-05-01 or yesterday",
            [
                ("next Friday", "2023-05-12", "2023-05-12"),
                ("2023-05-01", "2023-05-01", "2023-05-01"),
                ("yesterday", "2023-05-09", "2023-05-09"),
            ],
        ),
        ("上周和昨天", [("上周", "2023-05-01", "2023-05-07"), ("昨天", "2023-05-09", "2023-05-09")]),
        ("昨天说的是5月20日", [("昨天", "2023-05-09", "2023-05-09"), ("5月20日", "2023-05-20", "2023-05-20")]),
        (
            "2023-05-07/2023-05-09",
            [("2023-05-07", "2023-05-07", "2023-05-07"), ("2023-05-09", "2023-05-09", "2023-05-09")],
        ),
        (
            "the day before yesterday and yesterday",
            [("the day before yesterday", "2023-05-08", "2023-05-08"), ("yesterday", "2023-05-09", "2023-05-09")],
        ),
    ],
)
def test_several_expressions_in_text_order(text: str, expected: list[tuple[str, str, str]]) -> None:
    found = resolve_dates(text, WED)
    assert [(s.phrase, s.start, s.end) for s in found] == [(p, d(a), d(b)) for p, a, b in expected]


# --------------------------------------------------------------------------- vague counts cover the exact ones
@pytest.mark.parametrize(
    ("vague", "nearest", "farthest"),
    [
        ("a few days ago", "2 days ago", "5 days ago"),
        ("a few weeks from now", "2 weeks from now", "5 weeks from now"),
        ("a few months from now", "2 months from now", "5 months from now"),
        ("几年后", "2年后", "5年后"),
    ],
)
def test_vague_count_covers_its_range(vague: str, nearest: str, farthest: str) -> None:
    (start, end), near, far = only(vague), only(nearest), only(farthest)
    assert start == min(near[0], far[0]) and end == max(near[1], far[1])


@pytest.mark.parametrize(
    ("vague", "nearest", "farthest"),
    [
        ("a few months ago", "2 months ago", "5 months ago"),
        ("几个月前", "2个月前", "5个月前"),
        ("a few years ago", "2 years ago", "5 years ago"),
        ("几年前", "2年前", "5年前"),
        ("a couple of weeks ago", "2 weeks ago", "3 weeks ago"),
        ("几周前", "2周前", "5周前"),
    ],
)
def test_vague_count_ago_covers_its_range(vague: str, nearest: str, farthest: str) -> None:
    (start, end), near, far = only(vague), only(nearest), only(farthest)
    assert start == min(near[0], far[0]) and end == max(near[1], far[1])


# --------------------------------------------------------------------------- event_span
@pytest.mark.parametrize(
    ("text", "written", "expected"),
    [
        ("I went hiking yesterday", WED, ("2023-05-09", "2023-05-09", "yesterday")),
        ("Today I remembered what happened yesterday", WED, ("2023-05-09", "2023-05-09", "yesterday")),
        ("今天想起了昨天的事", WED, ("2023-05-09", "2023-05-09", "昨天")),
        ("On 2023-05-10 we met, 2023-05-01 was earlier", WED, ("2023-05-01", "2023-05-01", "2023-05-01")),
        ("This week was busy", WED, ("2023-05-08", "2023-05-14", "This week")),  # a span, not the written day
        ("this weekend", SAT, ("2023-05-13", "2023-05-14", "this weekend")),
        ("yesterday", datetime(2024, 3, 1, 9, 30), ("2024-02-29", "2024-02-29", "yesterday")),
    ],
)
def test_event_span_is_first_span_other_than_written_day(
    text: str, written: date | datetime, expected: tuple[str, str, str]
) -> None:
    span = event_span(text, written)
    assert span is not None
    assert (span.start, span.end, span.phrase) == (d(expected[0]), d(expected[1]), expected[2])


@pytest.mark.parametrize(
    ("text", "written"),
    [
        ("Today I went hiking", WED),
        ("今天天气很好", WED),
        ("tonight and this morning", WED),
        ("2023-05-10", WED),
        ("May 10, 2023", datetime(2023, 5, 10, 8, 0)),
        ("nothing dated here", WED),
        ("", WED),
    ],
)
def test_event_span_none(text: str, written: date | datetime) -> None:
    assert event_span(text, written) is None


# --------------------------------------------------------------------------- DateSpan ISO form
@pytest.mark.parametrize(
    ("span", "iso"),
    [
        (DateSpan(d("2023-05-07"), d("2023-05-07")), "2023-05-07"),
        (DateSpan(d("2023-05-01"), d("2023-05-07"), "last week"), "2023-05-01/2023-05-07"),
        (DateSpan(d("2022-12-31"), d("2023-01-01")), "2022-12-31/2023-01-01"),
    ],
)
def test_iso_round_trip(span: DateSpan, iso: str) -> None:
    assert span.iso() == iso
    back = DateSpan.from_iso(iso)
    assert back is not None
    assert (back.start, back.end, back.phrase) == (span.start, span.end, "")


def test_iso_of_resolved_spans_round_trips() -> None:
    for span in resolve_dates("yesterday, last week, 上个月, 2024年2月", WED):
        back = DateSpan.from_iso(span.iso())
        assert back is not None and (back.start, back.end) == (span.start, span.end)


@pytest.mark.parametrize(
    "value",
    [
        None,
        20230507,
        2023.5,
        b"2023-05-07",
        ["2023-05-07"],
        {"event_date": "2023-05-07"},
        date(2023, 5, 7),
        "",
        "2023-5-7",
        "20230507",
        "2023-05-07T00:00:00",
        "2023-05-07 ",
        " 2023-05-07",
        "2023-05-07\n",
        "2023-02-30",
        "2023-13-01",
        "0000-01-01",
        "2023-05-07/",
        "/2023-05-07",
        "2023-05-09/2023-05-07",
        "2023-05-07/2023-05-08/2023-05-09",
        "2023-05-07..2023-05-09",
        "2023-W19-3",
        "+2023-05-07",
        "2023-05-07'; DROP TABLE memories; --",
        '2023-05-07" OR 1=1',
        "2023-05-07/2023-05-0x",
        "{{2023-05-07}}",
        "٢٠٢٣-٠٥-٠٧",
        "２０２３-０５-０７",
        "May 7, 2023",
        "yesterday",
    ],
)
def test_from_iso_rejects(value: object) -> None:
    assert DateSpan.from_iso(value) is None


def test_from_iso_accepts_one_day_range() -> None:
    span = DateSpan.from_iso("2023-05-07/2023-05-07")
    assert span is not None and span.start == span.end == d("2023-05-07")
    assert span.iso() == "2023-05-07"


@pytest.mark.parametrize(
    ("a", "b", "overlap"),
    [
        ("2023-05-01/2023-05-07", "2023-05-07", True),
        ("2023-05-01/2023-05-07", "2023-05-08", False),
        ("2023-05-01/2023-05-07", "2023-04-20/2023-05-01", True),
        ("2023-05-03", "2023-05-01/2023-05-07", True),
        ("2023-05-03", "2023-05-04", False),
    ],
)
def test_overlaps(a: str, b: str, overlap: bool) -> None:
    first, second = DateSpan.from_iso(a), DateSpan.from_iso(b)
    assert first is not None and second is not None
    assert first.overlaps(second) is overlap and second.overlaps(first) is overlap


# --------------------------------------------------------------------------- record_span
WRITTEN = datetime(2023, 5, 10, 18, 30, tzinfo=timezone.utc)


@pytest.mark.parametrize(
    ("metadata", "start", "end"),
    [
        ({"event_date": "2023-05-07"}, "2023-05-07", "2023-05-07"),
        ({"event_date": "2023-05-01/2023-05-07", "speaker": "Ann"}, "2023-05-01", "2023-05-07"),
        ({}, "2023-05-10", "2023-05-10"),
        ({"event_date": None}, "2023-05-10", "2023-05-10"),
        ({"event_date": ""}, "2023-05-10", "2023-05-10"),
        ({"event_date": 20230507}, "2023-05-10", "2023-05-10"),
        ({"event_date": ["2023-05-07"]}, "2023-05-10", "2023-05-10"),
        ({"event_date": "2023-02-30"}, "2023-05-10", "2023-05-10"),
        ({"event_date": "2023-05-09/2023-05-07"}, "2023-05-10", "2023-05-10"),
        ({"event_date": "2023-05-07'; DROP TABLE x; --"}, "2023-05-10", "2023-05-10"),
        ({"event_date": "yesterday"}, "2023-05-10", "2023-05-10"),
    ],
)
def test_record_span(metadata: dict[str, object], start: str, end: str) -> None:
    span = record_span(metadata, WRITTEN)
    assert (span.start, span.end) == (d(start), d(end))


def test_record_span_uses_written_datetimes_own_date() -> None:
    late = datetime(2023, 5, 10, 23, 30, tzinfo=timezone(timedelta(hours=-7)))
    assert record_span({}, late).iso() == "2023-05-10"


@pytest.mark.parametrize("text", ["We march 10 miles a day", "13月", "21月的计划"])
def test_verbs_and_impossible_months_are_not_dates(text: str) -> None:
    assert resolve_dates(text, WED) == []


@pytest.mark.parametrize(
    ("text", "written", "expected"),
    [
        ("I watched the fireworks on Dec 31", date(2024, 1, 2), "2023-12-31"),  # not next December
        ("我12月31日去看了烟花", date(2024, 1, 2), "2023-12-31"),
        ("see you on Jan 5", date(2023, 12, 30), "2024-01-05"),
        ("1月5日见", date(2023, 12, 30), "2024-01-05"),
        ("the party on December 25", date(2023, 5, 10), "2023-12-25"),  # within nine months: the year written
        ("my exam is on Dec 20", date(2023, 10, 1), "2023-12-20"),
        ("on May 7", date(2023, 5, 20), "2023-05-07"),
        ("on 7 May 2022", date(2023, 5, 10), "2022-05-07"),  # a year given is kept
        ("Dec 31", date(1, 1, 2), "0001-12-31"),  # no year 0 to fall back to
    ],
)
def test_a_date_without_a_year_is_the_nearer_one_across_new_year(text: str, written: date, expected: str) -> None:
    (span,) = resolve_dates(text, written)
    assert span.iso() == expected
