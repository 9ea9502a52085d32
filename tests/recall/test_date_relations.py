"""Questions that place what they ask for relative to an event
(``memory_vec._rules.temporal``): the anchor, direction and day range read
from English and Chinese questions, None for ordinary questions, and the
window of days given the anchor's own span. Pure; no model, no store."""

from __future__ import annotations

from datetime import date

import pytest

from memory_vec._rules.dates import DateSpan, resolve_dates
from memory_vec._rules.temporal import DateRelation, parse_relation, residual_question

WED = date(2023, 5, 10)


def d(text: str) -> date:
    return date.fromisoformat(text)


def span(iso: str) -> DateSpan:
    parsed = DateSpan.from_iso(iso)
    assert parsed is not None
    return parsed


# --------------------------------------------------------------------------- English
@pytest.mark.parametrize(
    ("query", "anchor", "direction", "low", "high", "phrase"),
    [
        (
            "What did Marek buy the day after Priya passed her driving test?",
            "Priya passed her driving test",
            "after",
            0,
            2,
            "the day after",
        ),
        ("What happened the week before August 3, 2023?", "August 3, 2023", "before", 1, 10, "the week before"),
        ("What did I eat the same day that I moved?", "I moved", "same", 0, 0, "the same day that"),
        ("the same day as the party", "the party", "same", 0, 0, "the same day as"),
        ("the same week as the move", "the move", "same", 3, 3, "the same week as"),
        ("the same weekend as the move", "the move", "same", 1, 1, "the same weekend as"),
        ("the same month that I moved", "I moved", "same", 15, 15, "the same month that"),
        ("the same Friday that we met", "we met", "same", 0, 0, "the same Friday that"),
        ("Where did we go two weeks after the wedding?", "the wedding", "after", 10, 18, "two weeks after"),
        ("2 weeks before the wedding", "the wedding", "before", 10, 18, "2 weeks before"),
        ("3 days before the exam", "the exam", "before", 2, 4, "3 days before"),
        ("a few days after the concert", "the concert", "after", 1, 6, "a few days after"),
        ("a couple of days prior to the launch", "the launch", "before", 1, 4, "a couple of days prior to"),
        ("five days later than the launch", "the launch", "after", 4, 6, "five days later than"),
        ("What did she do shortly after graduation?", "graduation", "after", 0, 4, "shortly after"),
        ("right before the meeting", "the meeting", "before", 0, 4, "right before"),
        ("not long after the move", "the move", "after", 0, 4, "not long after"),
        ("What did I do the day before the trip?", "the trip", "before", 0, 2, "the day before"),
        ("the day following the party", "the party", "after", 0, 2, "the day following"),
        ("the day preceding the party", "the party", "before", 0, 2, "the day preceding"),
        ("a day after the party", "the party", "after", 0, 2, "a day after"),
        ("the morning after the gig", "the gig", "after", 0, 2, "the morning after"),
        ("What did we do on the weekend after the party?", "the party", "after", 1, 8, "on the weekend after"),
        ("Which book did I read the week following the trip?", "the trip", "after", 1, 10, "the week following"),
        ("the fortnight after the move", "the move", "after", 10, 18, "the fortnight after"),
        ("the month before my birthday", "my birthday", "before", 1, 35, "the month before"),
        ("the Friday after the party", "the party", "after", 1, 8, "the Friday after"),
        ("THE DAY AFTER the party", "the party", "after", 0, 2, "THE DAY AFTER"),
        (
            "About a week after Mia started pottery, what did Tom do?",
            "Mia started pottery",
            "after",
            1,
            10,
            "About a week after",
        ),
        ("On the same weekend Mia ran a 5K, where did Tom go?", "Mia ran a 5K", "same", 1, 1, "On the same weekend"),
        (
            "Around the time Jon visited Rome, what did Gina launch?",
            "Jon visited Rome",
            "same",
            7,
            7,
            "Around the time",
        ),
        ("about the time of the wedding", "the wedding", "same", 7, 7, "about the time of"),
        ("On the day his studio opened, what else did Jon do?", "his studio opened", "same", 0, 0, "On the day"),
        ("In the month Ana went biking, what did Li pause?", "Ana went biking", "same", 15, 15, "In the month"),
        ("during the week that I moved", "I moved", "same", 3, 3, "during the week that"),
        ("the same day as Christmas", "Christmas", "same", 0, 0, "the same day as"),
    ],
)
def test_english_relations(query: str, anchor: str, direction: str, low: int, high: int, phrase: str) -> None:
    assert parse_relation(query) == DateRelation(anchor, direction, low, high, phrase)


# --------------------------------------------------------------------------- Chinese
@pytest.mark.parametrize(
    ("query", "anchor", "direction", "low", "high", "phrase"),
    [
        ("她搬家之后的那个周末做了什么", "她搬家", "after", 1, 8, "之后的那个周末"),
        ("面试的第二天", "面试", "after", 0, 2, "第二天"),
        ("毕业前的一周", "毕业", "before", 1, 10, "前的一周"),
        ("面试前一天", "面试", "before", 0, 2, "前一天"),
        ("搬家后的几天", "搬家", "after", 1, 6, "后的几天"),
        ("毕业前两天", "毕业", "before", 1, 3, "前两天"),
        ("毕业后的那个月", "毕业", "after", 1, 35, "后的那个月"),
        ("毕业后的一个月", "毕业", "after", 1, 35, "后的一个月"),
        ("搬家当天", "搬家", "same", 0, 0, "当天"),
        ("毕业同一周", "毕业", "same", 3, 3, "同一周"),
        ("面试的次日", "面试", "after", 0, 2, "次日"),
        ("我尝试HIIT之后过了几天，教练说了什么", "我尝试HIIT", "after", 1, 6, "之后过了几天"),
        ("我生日的前一天，我在纠结什么", "我生日", "before", 0, 2, "前一天"),
        # the event's own day, and the days either side of it
        ("我生日那天吃了什么", "我生日", "same", 0, 0, "那天"),
        ("我结婚的那一天下雨了吗", "我结婚", "same", 0, 0, "的那一天"),
        ("你还记得我们第一次约会那天你穿了什么吗", "我们第一次约会", "same", 0, 0, "那天"),
        ("我生日那天的第二天去了哪里", "我生日", "after", 0, 2, "第二天"),
        ("春节前后我去了哪里", "春节", "same", 7, 7, "前后"),
        ("搬家前后那几天我在忙什么", "搬家", "same", 6, 6, "前后那几天"),
        ("毕业前后一周", "毕业", "same", 10, 10, "前后一周"),
        ("我生日的前后", "我生日", "same", 7, 7, "前后"),
    ],
)
def test_chinese_relations(query: str, anchor: str, direction: str, low: int, high: int, phrase: str) -> None:
    assert parse_relation(query) == DateRelation(anchor, direction, low, high, phrase)


# --------------------------------------------------------------------------- ordinary questions
@pytest.mark.parametrize(
    "query",
    [
        "What is my budget?",
        "When did I move?",
        "What did I do last week?",
        "What did I do yesterday?",
        "What did we talk about before?",
        "Do you remember what I said after that?",
        "What did we do after dinner?",
        "I was there the day after",
        "the day after",
        "",
        "我喜欢什么",
        "我的预算是多少",
        "上周末我在干嘛",
        "我前天做了什么",
        "5月7日我去了哪里",
        "今天天气好",
        "前几天我做了什么",
        "What do you do every day to relax?",
        "During the week, what do you usually eat?",
        "Do we meet on the same day each week?",
        "What did you do in the month of May?",
        "I work on the weekend a lot",
        "Did they both go on the same day?",
        "What is the time?",
        "你还记得那天吗",
        "那天我们去了哪里",
        "那一天",
        "我前后去了两次北京",
        "他们前后来了三次",
        "这个项目的前后端怎么分",
        "请把前后文连起来",
        "她说的前后矛盾",
        "两次说法前后一致吗",
    ],
)
def test_ordinary_questions_have_no_relation(query: str) -> None:
    assert parse_relation(query) is None


def test_named_date_with_chinese_span_word_is_not_an_event_anchor() -> None:
    relation = parse_relation("两周前的周末我在哪")
    assert relation is None or resolve_dates(relation.anchor, WED)


# --------------------------------------------------------------------------- window arithmetic
@pytest.mark.parametrize(
    ("direction", "low", "high", "anchor", "expected"),
    [
        ("after", 0, 2, "2023-05-08", "2023-05-08/2023-05-10"),
        ("after", 1, 8, "2023-05-08", "2023-05-09/2023-05-16"),
        ("after", 0, 2, "2023-05-01/2023-05-07", "2023-05-07/2023-05-09"),  # counts from the anchor's last day
        ("after", 1, 35, "2023-12-20", "2023-12-21/2024-01-24"),
        ("before", 0, 2, "2023-05-08", "2023-05-06/2023-05-08"),
        ("before", 1, 10, "2023-08-03", "2023-07-24/2023-08-02"),
        ("before", 0, 2, "2023-05-01/2023-05-07", "2023-04-29/2023-05-01"),  # counts from the anchor's first day
        ("before", 1, 3, "2024-03-01", "2024-02-27/2024-02-29"),
        ("same", 0, 0, "2023-05-08", "2023-05-08"),
        ("same", 3, 3, "2023-05-10", "2023-05-07/2023-05-13"),
        ("same", 1, 1, "2023-05-06/2023-05-07", "2023-05-05/2023-05-08"),
        ("same", 15, 15, "2023-05-10", "2023-04-25/2023-05-25"),
    ],
)
def test_window(direction: str, low: int, high: int, anchor: str, expected: str) -> None:
    window = DateRelation("event", direction, low, high, "phrase").window(span(anchor))
    assert window.iso() == expected
    assert window.phrase == "phrase"
    assert window.start <= window.end


@pytest.mark.parametrize(
    ("query", "anchor", "expected"),
    [
        ("What did Marek buy the day after Priya passed her driving test?", "2023-05-08", "2023-05-08/2023-05-10"),
        ("What did I eat the same day that I moved?", "2023-05-08", "2023-05-08"),
        ("the same week as the move", "2023-05-10", "2023-05-07/2023-05-13"),
        ("Where did we go two weeks after the wedding?", "2023-05-01", "2023-05-11/2023-05-19"),
        ("What did she do shortly after graduation?", "2023-06-30", "2023-06-30/2023-07-04"),
        ("她搬家之后的那个周末做了什么", "2023-05-10", "2023-05-11/2023-05-18"),
        ("毕业前的一周", "2023-07-01", "2023-06-21/2023-06-30"),
        ("面试的第二天", "2023-05-01/2023-05-02", "2023-05-02/2023-05-04"),
    ],
)
def test_parsed_relation_window(query: str, anchor: str, expected: str) -> None:
    relation = parse_relation(query)
    assert relation is not None
    assert relation.window(span(anchor)).iso() == expected


def test_window_from_a_dated_anchor() -> None:
    # "the week before August 3, 2023": the anchor is itself a date (as the read path resolves it).
    relation = parse_relation("What happened the week before August 3, 2023?")
    assert relation is not None
    (anchor,) = resolve_dates(relation.anchor, WED)
    assert anchor.iso() == "2023-08-03"
    assert relation.window(anchor).iso() == "2023-07-24/2023-08-02"


@pytest.mark.parametrize(
    "query",
    [
        "the day after the party",
        "the day before the party",
        "the same day that the party",
        "two weeks before the party",
        "a few days after the party",
        "shortly before the party",
        "搬家之后的那个周末",
        "面试前一天",
        "搬家当天",
    ],
)
def test_window_contains_or_borders_anchor_sensibly(query: str) -> None:
    relation = parse_relation(query)
    assert relation is not None
    assert 0 <= relation.low <= relation.high
    anchor = span("2023-05-10")
    window = relation.window(anchor)
    assert window.start <= window.end
    if relation.direction == "after":
        assert window.start >= anchor.end
    elif relation.direction == "before":
        assert window.end <= anchor.start
    else:
        assert window.overlaps(anchor)


@pytest.mark.parametrize(
    ("query", "asked"),
    [
        ("我生日那天吃了什么", "吃了什么"),
        ("我生日那天的第二天去了哪里", "去了哪里"),
        ("你还记得我们第一次约会那天你穿了什么吗", "你穿了什么吗"),
        ("你还记得我们第一次约会那天吗", ""),
        ("春节前后我去了哪里", "我去了哪里"),
    ],
)
def test_chinese_residual_question_leaves_the_event_and_the_asking_words(query: str, asked: str) -> None:
    relation = parse_relation(query)
    assert relation is not None
    assert residual_question(query, relation) == asked


def test_chinese_anchor_drops_its_after_word_and_day_after_day_is_no_relation() -> None:
    relation = parse_relation("毕业之后的第二天我做了什么")
    assert relation is not None and (relation.anchor, relation.direction) == ("毕业", "after")
    assert parse_relation("Tell me everything, day after day") is None


def test_whitespace_runs_read_as_one_space() -> None:
    spaced = "What did  Marek buy on\tthe day\n\nafter   Priya passed her driving test?"
    relation = parse_relation(spaced)
    assert relation == parse_relation(" ".join(spaced.split()))
    assert relation is not None and relation.anchor == "Priya passed her driving test"
    assert residual_question(spaced, relation) == "What did Marek buy"
    assert parse_relation("about" + " " * 20_000 + "the day after the party") == DateRelation(
        "the party", "after", 0, 2, "about the day after"
    )  # the run read as one space (was cubic: minutes)


def test_english_anchor_ends_where_the_question_starts() -> None:
    relation = parse_relation("A few days after the camping trip on which his daughter got lost, what did Marek do?")
    assert relation is not None
    assert (relation.anchor, relation.direction) == ("the camping trip on which his daughter got lost", "after")


# --------------------------------------------------------------------------- what is asked about those days
@pytest.mark.parametrize(
    ("query", "asked"),
    [
        ("What did Marek buy the day after Priya passed her driving test?", "What did Marek buy"),
        ("A few days after the camping trip, what did Marek do?", "what did Marek do"),
        (
            "What did Melanie do with her kids on the same Friday that Caroline went to a meeting?",
            "What did Melanie do with her kids",
        ),
        ("她搬家之后的那个周末做了什么？", "做了什么"),
        ("毕业之后的第二天他去了哪里?", "他去了哪里"),
        ("The day after the concert?", ""),  # nothing asked besides the event
        ("the week before August 3, 2023", ""),
    ],
)
def test_residual_question_drops_the_anchor_and_the_relation_words(query: str, asked: str) -> None:
    relation = parse_relation(query)
    assert relation is not None
    assert residual_question(query, relation) == asked
