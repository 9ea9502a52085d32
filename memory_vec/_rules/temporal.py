"""Questions that place what they ask for in time. English and Chinese.

Two kinds, both read from the question alone:

* **relative to an event**: "what did Marek buy *the day after* Priya
  passed her driving test?", "她搬家之后的那个周末做了什么?", "我生日那天吃了什么?",
  "春节前后我去了哪里?" — the days are
  found from the anchor event's own date (``DateRelation.window``);
* **dates it names**: "what did I do last week?", "5月7日" — resolved
  against the time of asking by :func:`memory_vec._rules.dates.resolve_dates`.

The read path recalls the memories of those days next to the usual ones
(``MemoryConfig.ranking.date_window_boost``). Pure: text in, a relation out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import timedelta

from memory_vec._rules.dates import DateSpan

__all__ = ["DateRelation", "parse_relation", "residual_question"]


@dataclass(frozen=True)
class DateRelation:
    """``direction`` (``after`` / ``before`` / ``same``) ``low``-``high`` days from the anchor event."""

    anchor: str
    direction: str
    low: int
    high: int
    phrase: str

    def window(self, anchor: DateSpan) -> DateSpan:
        """The days asked about, given the anchor event's days."""
        if self.direction == "after":
            start, end = anchor.end + timedelta(days=self.low), anchor.end + timedelta(days=self.high)
        elif self.direction == "before":
            start, end = anchor.start - timedelta(days=self.high), anchor.start - timedelta(days=self.low)
        else:
            start, end = anchor.start - timedelta(days=self.low), anchor.end + timedelta(days=self.high)
        return DateSpan(start, end, self.phrase)


_WEEKDAY = r"monday|tuesday|wednesday|thursday|friday|saturday|sunday"
_EN_COUNT = {
    "a few": (2, 5),
    "few": (2, 5),
    "a couple of": (2, 3),
    "couple of": (2, 3),
    "several": (3, 7),
    "two": (2, 2),
    "three": (3, 3),
    "four": (4, 4),
    "five": (5, 5),
    "six": (6, 6),
}
# Days from the anchor for "the <unit> after/before": generous, since an event
# is often dated by the day it was told, a day or more after it happened.
_EN_UNITS = {
    "day": (0, 2),
    "morning": (0, 2),
    "evening": (0, 2),
    "night": (0, 2),
    "weekend": (1, 8),
    "week": (1, 10),
    "fortnight": (10, 18),
    "month": (1, 35),
    "weekday": (1, 8),
}
_EN_SAME = {
    "day": (0, 0),
    "morning": (0, 0),
    "evening": (0, 0),
    "night": (0, 0),
    "weekday": (0, 0),
    "weekend": (1, 1),
    "week": (3, 3),
    "month": (15, 15),
}
# Days either side of the anchor for "around the time <event>", "<event>前后".
_AROUND = 7
_EN_RELATION = re.compile(
    r"\b(?:(?:about|around|roughly|approximately|almost|nearly|some)\s+)?"  # "about a week after"
    r"(?:(?:on|in|during|over|at)\s+)?(?:the|a|an|one)?\s*"
    r"(?:(?P<same>same)\s+(?P<same_unit>day|morning|evening|night|weekend|week|month|" + _WEEKDAY + r")"
    r"(?:\s+(?:that|as|when|on\s+which))?"
    r"|(?P<count>\d{1,2}|a few|few|a couple of|couple of|several|two|three|four|five|six)\s+(?P<count_unit>day|week)s?"
    r"\s+(?P<count_dir>after|before|later\s+than|prior\s+to)"
    r"|(?P<unit>day|morning|evening|night|weekend|week|fortnight|month|" + _WEEKDAY + r")"
    r"\s+(?P<dir>after|before|following|prior\s+to|preceding)"
    r"|(?P<soon>shortly|soon|right|just|not\s+long)\s+(?P<soon_dir>after|before)"
    r"|(?P<around>(?:around|about|near)\s+the\s+time)(?:\s+(?:that|when|of))?"
    # "on the day his studio opened", "in the month she moved": the same days
    r"|(?:on|in|during|over)\s+the\s+(?P<in_unit>day|weekend|week|month)"
    r"(?!\s+(?:after|before|following|prior|preceding|of)\b)(?:\s+(?:that|when|on\s+which))?)"
    r"\s+(?P<anchor>\S.*)",
    re.IGNORECASE,
)
_ZH_SIZES = {
    "第二天": ("after", 0, 2),
    "次日": ("after", 0, 2),
    "隔天": ("after", 0, 2),
    "后一天": ("after", 0, 2),
    "前一天": ("before", 0, 2),
    "前一周": ("before", 1, 10),
    "前几天": ("before", 1, 6),
    "同一天": ("same", 0, 0),
    "当天": ("same", 0, 0),
    "同一周": ("same", 3, 3),
}
_ZH_SPANS = {
    "一天": (0, 2),
    "两天": (1, 3),
    "几天": (1, 6),
    "一周": (1, 10),
    "一个星期": (1, 10),
    "那周": (1, 10),
    "周末": (1, 8),
    "那个周末": (1, 8),
    "个周末": (1, 8),
    "一个月": (1, 35),
    "那个月": (1, 35),
}
_ZH_SPAN_WORDS = "|".join(sorted(_ZH_SPANS, key=len, reverse=True))
# The relation words; the anchor is what comes before them (searched for the
# words alone: a lazy anchor group in front would make the search quadratic).
_ZH_AFTER_BEFORE = re.compile(rf"(?:之|以)?(?P<dir>[后前])(?:过了|过)?的?(?:那|这)?(?P<span>{_ZH_SPAN_WORDS})")
_ZH_OF = re.compile(rf"的?(?P<size>{'|'.join(sorted(_ZH_SIZES, key=len, reverse=True))})")
# "搬家前后(那几天)": the days either side, as "around the time" (any span named sets the width).
# Not "前后端" (front and back end), "前后文", "前后矛盾", "前后一致", "前后左右".
_ZH_AROUND = re.compile(rf"(?:之)?前后(?!端|台|文|左|矛盾|一致|不一)(?:的)?(?:那|这)?(?P<span>{_ZH_SPAN_WORDS})?")
# "我生日那天": the event's own day ("当天" is in _ZH_SIZES).
_THAT_DAY = r"的?那一?天"
_ZH_THAT_DAY = re.compile(_THAT_DAY)
_ZH_THAT_DAY_END = re.compile(_THAT_DAY + "$")
_ZH_THAT_DAY_START = re.compile("^" + _THAT_DAY + r"的?\s*")
# What a question says before the event it names: "你还记得我们第一次约会那天…" names 我们第一次约会.
_ZH_ASKING = re.compile(r"^(?:请问)?(?:你|您)?(?:还)?(?:记得|知道)?")
_ZH_PRONOUNS = re.compile(r"我们|你们|他们|她们|咱们|[我你他她它]")


_EN_NEEDLES = (
    "after",
    "before",
    "following",
    "prior",
    "preceding",
    "later",
    "same",
    "the time",
    "the day",
    "the week",
    "the month",
)
# An anchor is an event: "the same day each week" relates to none.
_EN_NOT_EVENT = frozenset(
    (
        "each",
        "every",
        "of",
        "and",
        "or",
        "again",
        "too",
        "as",
        "for",
        "is",
        "was",
        "a",
        "an",
        "with",
        "to",
        "at",
        "in",
        "on",
        "off",
        "also",
        "so",
        "but",
        "then",
        "now",
    )
)


def _en(query: str) -> DateRelation | None:
    lowered = query.lower()
    if not any(n in lowered for n in _EN_NEEDLES):  # most questions: skip the long pattern
        return None
    m = _EN_RELATION.search(query)
    if m is None:
        return None
    # "A few days after the camping trip, what did Marek do?": the event ends where the question starts
    anchor = _EN_QUESTION_TAIL.split(m["anchor"], maxsplit=1)[0].strip(" ?.!,")
    if not anchor or anchor.lower() in _EN_UNIT_WORDS:  # "day after day"
        return None
    phrase = m.group(0)[: m.start("anchor") - m.start()].strip()
    if m["same"] or m["in_unit"]:
        words = anchor.split()
        joined = phrase.lower().endswith((" that", " as", " when", " which"))  # "the same day as Christmas"
        if not joined and (len(words) < 2 or words[0].lower() in _EN_NOT_EVENT):
            return None
        unit = (m["same_unit"] or m["in_unit"]).lower()
        low, high = _EN_SAME.get(unit, _EN_SAME["weekday"])
        return DateRelation(anchor, "same", low, high, phrase)
    if m["around"]:
        return DateRelation(anchor, "same", _AROUND, _AROUND, phrase)
    if m["count"]:
        n = m["count"].lower()
        low, high = _EN_COUNT.get(n, (int(n), int(n)) if n.isdigit() else (1, 1))
        scale = 7 if m["count_unit"].lower() == "week" else 1
        direction = "after" if m["count_dir"].lower().startswith(("after", "later")) else "before"
        low, high = max(0, low * scale - 1 - (scale > 1) * 3), high * scale + 1 + (scale > 1) * 3
    elif m["unit"]:
        unit = m["unit"].lower()
        low, high = _EN_UNITS.get(unit, _EN_UNITS["weekday"])
        direction = "after" if m["dir"].lower() in ("after", "following") else "before"
    else:
        low, high = 0, 4
        direction = m["soon_dir"].lower()
    return DateRelation(anchor, direction, low, high, phrase)


_ZH_TIME_ANCHOR = re.compile(r"(?:[\d一二两三四五六七八九十]{1,3}|几)(?:个星期|星期|个礼拜|礼拜|周|个月|天|年)$")
_EN_QUESTION_TAIL = re.compile(
    r"[,;]\s*(?=(?:what|who|whom|where|when|which|how|why|did|does|do|was|were|is)\b)", re.IGNORECASE
)
_EN_UNIT_WORDS = frozenset(("day", "days", "night", "week", "weeks", "month", "months", "year", "years"))


def _zh(query: str) -> DateRelation | None:
    around = _ZH_AROUND.search(query)
    if around is not None:
        anchor = _zh_event(query[: around.start()])
        if anchor:
            width = _ZH_SPANS[around["span"]][1] if around["span"] else _AROUND
            return DateRelation(anchor, "same", width, width, around.group(0))
    for m in _ZH_AFTER_BEFORE.finditer(query):
        anchor = query[: m.start()].strip("，, ").removesuffix("的")  # 生日的前一天: 生日
        if not anchor:
            continue
        if _ZH_TIME_ANCHOR.search(anchor):  # "两周前的周末" names a date, not an event
            return None
        low, high = _ZH_SPANS[m["span"]]
        direction = "after" if m["dir"] == "后" else "before"
        return DateRelation(anchor, direction, low, high, m.group(0))
    for m in _ZH_OF.finditer(query):
        direction, low, high = _ZH_SIZES[m["size"]]
        anchor = re.sub(r"(?:之|以)?[后前]$", "", query[: m.start()].strip("，, "))  # 毕业之后的第二天: 毕业
        anchor = _ZH_THAT_DAY_END.sub("", anchor)  # 我生日那天的第二天: 我生日
        if anchor:
            return DateRelation(anchor, direction, low, high, m["size"])
    that_day = _ZH_THAT_DAY.search(query)
    if that_day is not None:
        anchor = _zh_event(query[: that_day.start()])
        if anchor:
            return DateRelation(anchor, "same", 0, 0, that_day.group(0))
    return None


def _zh_event(text: str) -> str | None:
    """The event a Chinese question names before its relation words, or None
    when it names none ("我前后去了两次", "你还记得那天吗")."""
    anchor = _ZH_ASKING.sub("", text.strip("，, ")).strip("，, ").removesuffix("的")
    return anchor if len(_ZH_PRONOUNS.sub("", anchor)) >= 2 else None


def parse_relation(query: str) -> DateRelation | None:
    """The anchor event and the days around it that ``query`` asks about,
    or None when it asks about no event-relative time."""
    query = _one_space(query)  # a long run of spaces between optional words backtracks cubically
    return _en(query) or _zh(query)


def _one_space(text: str) -> str:
    return " ".join(text.split())


def residual_question(query: str, relation: DateRelation) -> str:
    """What ``query`` asks about the related days, without the anchor event and
    the relation words ("What did Melanie buy the day after Caroline's interview?"
    -> "What did Melanie buy"); empty when little or nothing else is asked."""
    query = _one_space(query)  # as parse_relation read it, so its anchor and phrase are found
    rest = query.replace(relation.anchor, " ", 1).replace(relation.phrase, " ", 1)
    rest = re.sub(r"\s+[,;，；]\s*|\s+", " ", rest).strip(" ,.;:?!，。；：？！")
    rest = re.sub(r"^(?:之|以)?[后前]的?\s*", "", rest)  # 毕业之后的第二天: the anchor took 毕业 only
    rest = _ZH_THAT_DAY_START.sub("", _ZH_ASKING.sub("", rest).lstrip())  # 我生日那天的第二天, 你还记得…吗
    return rest if len(rest) >= 4 and rest != query.strip(" ,.;:?!，。；：？！") else ""
