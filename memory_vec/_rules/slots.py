"""The same slot with a new value: an update said in other words.

The subject-key rules of :mod:`memory_vec._rules.conflict` need both statements
to name their subject the same way ("my rent is …" / "my rent is …"). People
restate and change values in other words: "My rent's $1,350 a month", "Kitchen
budget: 8000 euros", "The vet upped Mochi's insulin to 3 units", "房租一个月2700",
"降压药我一天吃两片", "I've quit coffee completely". This module decides such a
pair from three things both statements show:

* **an anchor**: a content word they share ("rent", "insulin", "房租", "降压药")
  that is not a value, a function word or a time word;
* **a value of one kind that differs**: money, a clock time, a weekday, a date,
  a quantity of one unit ("3 units", "两片"), a count, or a name ("Daniel",
  a quoted hint, an e-mail) — "due on the 1st" does not change a rent of
  "$1,400" (a date is not an amount), "22 kg" does not change "6 years old";
* **nothing that says two things**: another modifier of the anchor ("kitchen
  budget" / "wedding budget", "汽车保险" / "电动车保险"), another identifier
  ("Q1" / "Q2"), an additive word ("also", "too", 也, 又), or, without a change
  word, another predicate ("my flight leaves at 9am" / "my flight lands at 2pm").

An ending ("I quit coffee", "we got rid of the landline", 烟戒了, 分手了) of
what the old statement asserts supersedes it too.

Only asked after the statement gate (:func:`~memory_vec._rules.assertion.why_not_superseding`)
and the owner check: both are asserted-now states of one owner. Pure: no I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from memory_vec._rules.assertion import says_changed
from memory_vec._rules.bm25 import jieba_words
from memory_vec._rules.change import cn_number, numbers
from memory_vec._rules.facts import is_chinese, proper_names
from memory_vec._rules.owners import ZH_SURNAMES

__all__ = [
    "Slots",
    "correction_cue",
    "distinct_ids",
    "names_anyone",
    "same_words_new_value",
    "slot_correction",
    "slot_update",
]

# ------------------------------------------------------------------ value kinds
_MONEY = re.compile(
    r"[$€£¥]\s?\d[\d,]*(?:\.\d+)?\s?[kK]?|\d[\d,]*(?:\.\d+)?\s?[kK]?\s?(?:dollars?|bucks|euros?|eur|usd|quid|pounds?"
    r"|rmb|yuan|grand)\b|(?:\d[\d,.]*|[零〇一二两三四五六七八九十百千万]+)\s*(?:万|千)?\s*(?:元|块钱|块|美元|欧元|刀)",
    re.IGNORECASE,
)
_AMOUNT = re.compile(r"\b\d+(?:\.\d+)?[kK]\b")  # "40k", "8k"
_CLOCK = re.compile(
    r"\b\d{1,2}(?::\d{2})?\s?(?:[ap]\.?m\.?)(?![a-z])|\b\d{1,2}:\d{2}\b|\bnoon\b|\bmidnight\b"
    r"|(?:早上|上午|中午|下午|晚上|凌晨|傍晚)?(?:\d{1,2}|[一二两三四五六七八九十]{1,3})"
    r"(?:点(?:半|一刻|三刻|\d{1,2}分?|[一二三四五六七八九十]{1,3}分?)?|:\d{2})",  # not the "18:" of "line 18:"
    re.IGNORECASE,
)
_WEEKDAY = re.compile(
    # not 每周三次: a count
    r"\b(?:mon|tues|wednes|thurs|fri|satur|sun)days?\b|(?:周|星期|礼拜)[一二三四五六日天](?![次回顿遍趟])",
    re.IGNORECASE,
)
_WEEKDAY_NAMES = {
    "一": "mon",
    "二": "tue",
    "三": "wed",
    "四": "thu",
    "五": "fri",
    "六": "sat",
    "日": "sun",
    "天": "sun",
}
_DATE = re.compile(
    r"\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?\s+\d{1,2}(?:st|nd|rd|th)?\b"
    r"|\b(?:the\s+)?\d{1,2}(?:st|nd|rd|th)\b|(?:19|20)\d\d年|\d{1,2}月(?:\d{1,2}|[一二三四五六七八九十]{1,3})[日号]?"
    r"|\d{1,2}月(?:底|初|中旬|上旬|下旬)?|(?:明年|今年|去年)?[一二三四五六七八九十]{1,2}月(?:底|初|份)?"
    r"|(?<!\d)(?:\d{1,2}|[一二三四五六七八九十]{1,3})[号日](?![楼床线房门])",
    re.IGNORECASE,
)
_UNITS = (
    "kg|kgs|kilos?|lbs?|pounds|mg|g|grams?|ml|l|litres?|liters?|gb|mb|tb|km|miles?|mi|units?|cups?|pills?|tablets?"
    "|capsules?|drops?|puffs?|times|hours?|hrs?|minutes?|mins?|days?|weeks?|months?|years?|floors?|kids?|people"
    "|guests?|servings?|meals?|laps?|steps?|pages?|sets?|reps?|shots?|glasses|bottles?|cans?|packs?|cigarettes?"
    "|calories|kcal|percent|%|feet|ft|inches|in|cm|m|sq ft|square feet|seats?|rooms?|bedrooms?|stars?|points?"
)
_QUANTITY_EN = re.compile(
    rf"(\d[\d,]*(?:\.\d+)?|one|two|three|four|five|six|seven|eight|nine|ten)\s?({_UNITS})\b", re.I
)
_ZH_UNITS = (
    "兆|M|G|片|粒|颗|次|顿|杯|瓶|罐|包|支|根|公斤|斤|克|毫克|千克|升|毫升|公里|千米|里|个小时|小时|分钟|天|周|个月|年|岁"
    "|层|人|位|台|辆|只|条|套|间|张|本|页|步|圈|组|节|集|份|碗|盒|趟"
)
_QUANTITY_ZH = re.compile(rf"(\d[\d,.]*|[零〇一二两三四五六七八九十百千万半]+)\s*个?\s*({_ZH_UNITS})")
# Amounts, times and counts: values, never the modifier of an anchor ("两次健身房" / "三次健身房").
_AMOUNTS = re.compile("|".join(p.pattern for p in (_MONEY, _CLOCK, _QUANTITY_EN, _QUANTITY_ZH)), re.IGNORECASE)
_QUOTED = re.compile(r"[\"“「『]([^\"“”「」『』]{1,40})[\"”」』]")
# A quoted value sets a slot after a copula or a naming word ('the hint is "pizza"', '叫“小鹿”'); elsewhere
# it says which one ('secret of "a" in "b"') and is an identifier.
_SETS_QUOTED = re.compile(
    r"(?:\b(?:is|are|was|were|called|named|to|now|hint|password|name)|['’]s|[:：是叫为成])\s*$", re.IGNORECASE
)


def _quoted(m: re.Match[str]) -> tuple[str, str]:
    kind = "name" if _SETS_QUOTED.search(m.string[: m.start()]) else "id"
    return kind, m.group(1).strip().lower()


def _identifier(m: re.Match[str]) -> tuple[str, str]:
    """ "room 3A has a leak": which one ("id"); "our parking spot is B14": the value it sets ("code")."""
    return "code" if _SETS_QUOTED.search(m.string[: m.start()]) else "id", " ".join(m.group(0).lower().split())


_EMAIL = re.compile(r"[\w.+-]+@[\w-]+\.[\w.]+")
_HANDLE = re.compile(r"\b(?=\w*[_\d])(?=\w*[a-zA-Z])\w{3,}\b")  # bluejay77, mike_runs, iPhone 12 (not)
_ZH_NAMED = re.compile(r"(?:叫做?|名叫|名字是|改名叫|改叫)([\u4e00-\u9fffA-Za-z]{1,8}?)(?:[了，。,！!]|$)")
# "是刘琳", "叫王方": a surname and one or two characters after 是 / 叫 / 为, ending the clause.
_ZH_PERSON = re.compile(rf"(?:是|叫|为)([{ZH_SURNAMES}章周黄林何高罗][\u4e00-\u9fff]{{1,2}})(?=[，。,！!；;]|$)")
_ZH_TITLE = re.compile(r"([\u4e00-\u9fff])(?:老师|总|姐|哥|经理|医生|大夫|主任|阿姨|叔)")
_ID = re.compile(
    r"\b(?:[A-Za-z]{1,3}\d+[A-Za-z]?|\d+(?![kKmMgG]\b)[A-Za-z])\b|(?:一|二|三|四)季度|[QqHh][1-4]"
    # "day 3", "turn 5", "line 18", "episode 2", 第3轮: a number that says which one, not a value
    r"|\b(?:day|turn|line|week|session|episode|chapter|level|lesson|round|step|item|number|no|part|phase|season"
    r"|stage|track|page|row|lane|slot|batch|sprint|version|v|game|match|race|leg|question|task|test|exam|module"
    r"|volume|vol|issue|note|entry|message|point|rule|option)\.?\s*#?\d+\b"
    r"|第[\d一二三四五六七八九十百]+[\u4e00-\u9fff]",
    re.IGNORECASE,
)
_NUMBER_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8}
_NUMBER_WORDS |= {"nine": 9, "ten": 10}


def _number(text: str) -> str:
    found = numbers(text)
    if not found and text.lower() in _NUMBER_WORDS:
        found = {float(_NUMBER_WORDS[text.lower()])}
    if not found and "半" in text:
        found = {0.5}
    return ",".join(f"{n:g}" for n in sorted(found)) or text.lower()


_UNIT_NORMAL = {"kgs": "kg", "kilo": "kg", "kilos": "kg", "lb": "lbs", "pounds": "lbs", "mins": "min", "minutes": "min"}
_UNIT_NORMAL |= {"minute": "min", "hrs": "hour", "hr": "hour", "hours": "hour", "个小时": "小时", "千克": "公斤"}


def _unit(unit: str) -> str:
    unit = unit.lower()
    unit = _UNIT_NORMAL.get(unit, unit)
    return unit[:-1] if len(unit) > 3 and unit.endswith("s") else unit


@dataclass(frozen=True)
class Slots:
    """What one statement shows: its values by kind, its anchor words, its identifiers."""

    values: dict[str, frozenset[str]]
    words: tuple[str, ...]  # content words in order (values, function and time words out)
    #: The content words of each clause, single Chinese characters too ("交", "办"): the predicate.
    clauses: tuple[frozenset[str], ...]
    #: The content words of the clause that holds the first value (the correction check).
    value_clause: frozenset[str]
    #: Content words with the names left in: "Netflix password", "爱奇艺的密码" (the modifier check).
    named_words: tuple[str, ...]
    ids: frozenset[str]
    additive: bool
    #: The content words of the clause that says something stopped ("quit coffee", "WPS会员已经退订了"),
    #: empty when nothing did.
    ends: frozenset[str]
    changed: bool  # says a value changed ("now", "moved to", 改成)

    @property
    def all_words(self) -> frozenset[str]:
        """The content words of every clause, single Chinese characters too."""
        return frozenset().union(*self.clauses)


def _values(text: str) -> tuple[dict[str, set[str]], str]:
    """Typed values and the text with them blanked out."""
    kinds: dict[str, set[str]] = {}
    rest = text

    def take(kind: str, pattern: re.Pattern[str], value: object = None) -> None:
        nonlocal rest
        for m in pattern.finditer(rest):
            if callable(value):
                got = value(m)
                if got is None:
                    continue
                k, v = got
            else:
                k, v = kind, _number(m.group(0))
            kinds.setdefault(k, set()).add(v)
        rest = pattern.sub(" ", rest)

    take("email", _EMAIL, lambda m: ("name", m.group(0).lower()))
    take("quoted", _QUOTED, _quoted)
    take("money", _MONEY)
    take("amount", _AMOUNT, lambda m: ("number", _number(m.group(0))))
    take("clock", _CLOCK, lambda m: ("clock", _clock(m.group(0))))
    take("weekday", _WEEKDAY, lambda m: ("weekday", _weekday(m.group(0))))
    take("date", _DATE, lambda m: ("date", _number(m.group(0)) + _month(m.group(0))))
    take("quantity", _QUANTITY_EN, lambda m: (f"qty:{_unit(m.group(2))}", _number(m.group(1))))
    take("quantity", _QUANTITY_ZH, lambda m: (f"qty:{_unit(m.group(2))}", _number(m.group(1))))
    take("id", _ID, _identifier)
    take("handle", _HANDLE, lambda m: ("name", m.group(0).lower()))
    for m in _ZH_NAMED.finditer(rest):
        kinds.setdefault("name", set()).add(m.group(1))
    for m in _ZH_PERSON.finditer(rest):
        kinds.setdefault("name", set()).add(m.group(1))
    for m in _ZH_TITLE.finditer(rest):
        kinds.setdefault("name", set()).add(m.group(0))
    for name in proper_names(rest):
        kinds.setdefault("name", set()).add(name)
    for n in numbers(rest):
        kinds.setdefault("number", set()).add(f"{n:g}")
    rest = re.sub(r"\d[\d,.]*", " ", rest)
    return kinds, rest


_ZH_AFTERNOON = re.compile(r"^(?:下午|晚上|傍晚)")
_ZH_MINUTES = {"半": 0.30, "一刻": 0.15, "三刻": 0.45}


def _clock(text: str) -> str:
    """A time of day as hours.minutes: "6点半" 6.3, "下午两点" 14, "9pm" 21, "7:15" 7.15."""
    found = numbers(text)
    if not found:
        return text.lower()
    value = min(found) if "点" in text else max(found)
    if "点" in text:
        hours = int(value)
        minutes = next((v for k, v in _ZH_MINUTES.items() if text.endswith(k)), round(value - hours, 2))
        if tail := re.search(r"点(\d{1,2})", text):
            minutes = int(tail.group(1)) / 100
        elif (tail := re.search(r"点([一二三四五六七八九十]{1,3})", text)) and (spoken := cn_number(tail.group(1))):
            minutes = spoken / 100  # 三点二十五 is 3.25, 三点十分 3.10
        value = hours + (12 if _ZH_AFTERNOON.match(text) and hours < 12 else 0) + minutes
    return f"{value:g}"


def _weekday(text: str) -> str:
    text = text.lower()
    if text[-1] in _WEEKDAY_NAMES:
        return _WEEKDAY_NAMES[text[-1]]
    return text[:3]


def _month(text: str) -> str:
    m = re.match(r"[a-z]{3}", text.lower())
    if m and m.group(0) != "the":
        return m.group(0)
    m = re.match(r"(\d{1,2})月", text)
    return f"m{m.group(1)}" if m else ""


# ------------------------------------------------------------------ words
_EN_WORD = re.compile(r"[a-z][a-z'’\-]*")
_EN_STOP = frozenset(
    (  # noqa: SIM905 - a word list reads better as words
        "a an the is are am was were be been being i me my mine we us our ours you your he him his she her it its they"
        " them their this that these those there here what which who whom whose when where why how and or but so if"
        " then than as of at by for from in into on onto to up down out off over with without about after before"
        " since until per via not no yes just now currently still already also too either again even really very"
        " quite pretty much more most less some any all every each both one ones new old current main actual"
        " have has had having do does did done get gets got getting go goes going went make makes made take takes"
        " took let lets say says said tell told think know mean meant want need like s re m ve ll d t"
        " ok okay oh hmm ugh oops wait sorry actually yeah yep nope well btw lol haha so basically anyway"
        " correction typo mistake wrong right earlier before previously anymore longer instead rather"
        " today tonight yesterday tomorrow morning afternoon evening night week weekend month year day days"
        " time times every each daily weekly monthly yearly annually a-day am pm since starting start as-of"
        " thing things stuff lot bit couple few many"
        " monday tuesday wednesday thursday friday saturday sunday mondays tuesdays wednesdays thursdays fridays"
        " saturdays sundays january february march april june july august september october november december"
        " finally recently lately apparently definitely honestly literally probably usually normally"
        " good great nice fine cool bad best better worse don doesn didn isn aren wasn weren won can couldn"
        " shouldn wouldn haven hasn love loves enjoy enjoys hate hates thanks thank please glad happy sure"
    ).split()
)
# Change and ending verbs: they say *that* a value changed, they are not the slot.
_EN_VERBS_OF_CHANGE = frozenset(
    (  # noqa: SIM905
        "change changed changing switch switched moved move raise raised lower lowered increase increased"
        " decrease decreased bump bumped up upped cut trim trimmed reduce reduced extend extended push pushed"
        " reschedule rescheduled shift shifted reset revise revised update updated upgrade upgraded downgrade"
        " downgraded rename renamed transfer transferred relocate relocated hike hiked drop dropped set adjust"
        " adjusted double doubled halve halved replace replaced quit stopped stop gave give broke break rid"
        " lapse lapsed cancel cancelled canceled closed close sold sell finished finish ended end done"
        " go goes call called named ported port"
    ).split()
)
_ZH_STOP = frozenset(
    (  # noqa: SIM905
        "我 我们 咱们 你 你们 他 她 它 他们 的 了 是 在 也 都 就 还 又 才 很 太 挺"
        " 有 没 没有 不 要 会 能 可以 把 被 给 让"
        " 这 那 这个 那个 这些 那些 一个 个 现在 目前 如今 已经 刚 刚刚 刚才 最近 之前 以前 原来 后来 然后 因为 所以"
        " 每天 每月 每周 每年 一天 一周 一个月 一年 天天 今天 明天 昨天 早上 上午 中午 下午 晚上 凌晨 傍晚 周末"
        " 改 改成 改为 改到 换 换成 换了 调 调到 调成 调整 调整为 调整到 变 变成 升 升级 涨 涨到 降 降到 加到 减到"
        " 搬 搬到 挪到 推迟 提前 不再 再 说 说错 错 对 不对 抱歉 哈 吧 呢 啊 呀 哦 嗯 嘛 啦 哈哈 东西 事 时候 时间"
        " 一下 一点 一些 比较 更 最 真 真的 其实 应该 新 旧 老 开始 以后 之后 从 到 由 为 成 叫 用 吃 去 来"
        " 每个 每个月 个月 喜欢 最喜欢 爱 讨厌 想 觉得 谢谢 感觉"
    ).split()
)
_ADDITIVE_EN = re.compile(
    r"\b(?:also|too|as well|another|additionally|in addition|besides|either|a second|a third|one more)\b", re.I
)
_ADDITIVE_ZH = re.compile(r"也|又|还有|另外|另一|再加|第二")
_ENDS_EN = re.compile(
    r"\b(?:quit|quitting|stopped|gave up|broke up|split up|got rid of|let [\w\s]{1,30} lapse|done with|finished"
    r"|off (?:it|them|the)|no more|no longer|anymore|cancel(?:l)?ed|closed|sold|took [\w\s]{0,20}off|divorced"
    r"|turned off|unsubscribed"
    r"|don['’]t have (?:one|it|them|a|an) anymore|ended|dropped out)\b",
    re.I,
)
_ENDS_ZH = re.compile(
    r"戒了|戒掉|戒[烟酒]|分手|离职|辞职|辞了|退了|退掉|退订|退学|退出|离婚|取消|停了|停掉|停药|卖了|不再|没有.{0,6}了"
    r"|不.{1,8}了|注销|关了|关掉|结束了|吃完了|用完了|没续费"
)


# Not an ending: negated or only intended ("I won't quit", "never gave up", "不会放弃") or a feeling
# that went ("不再那么无助", "no longer scared").
_NOT_ENDING_EN = re.compile(r"\b(?:won['’]t|will not|don['’]t|do not|never|not|can['’]t|wouldn['’]t|to|will|gonna)\s+$")
_FEELING = re.compile(
    r"^\s*(?:那么|太|很|感到|觉得|害怕|担心|孤单|无助|难过|焦虑|紧张|so|that|too|very|as|scared|afraid|worried|sad"
    r"|anxious|alone|lonely|sure)",
    re.IGNORECASE,
)


_ENDING_FILLER = frozenset(
    "completely entirely totally fully good finally officially week weeks month months"  # noqa: SIM905
    " 彻底 已经 终于 正式 现在 了 学期 这学期 这周 最近 本月 这个月 今年 干 做 用 弄 搞".split()
)


_ZH_END_CHARS = "我不再没完掉退停戒关了"
_ZH_END_WORD = re.compile(
    r"[不再没完掉退停戒关了]+|没有|退订|退学|退出|取消|注销|结束|离婚|分手|辞职|离职|续费|停药|关掉"
)


def _ends(text: str, zh: bool) -> frozenset[str]:
    for m in (_ENDS_ZH if zh else _ENDS_EN).finditer(text):
        if not zh and _NOT_ENDING_EN.search(text[: m.start()]):
            continue
        if _FEELING.match(text[m.end() :]) or (zh and _FEELING.match(text[m.start() + 2 :])):
            continue
        start = max((c.end() for c in _CLAUSE.finditer(text, 0, m.start())), default=0)
        end = next((c.start() for c in _CLAUSE.finditer(text, m.end())), len(text))
        if zh:  # 不学芭蕾了, 戒酒了, 我关了: the cue holds the thing, so the cue's own characters go, not its span
            tokens = (w for w in _words(text[start:end], zh, single=True) if not _ZH_END_WORD.fullmatch(w))
            words = {w.strip(_ZH_END_CHARS) for w in tokens} - {""}
        else:  # the clause, its cue's own words left out ("let the Costco membership lapse")
            words = set(_words(text[start:end], zh, single=True)) - _EN_END_WORDS
        words = {w for w in words if not (len(w) == 1 and w.isascii())}  # the "X" of 盒马X会员
        return frozenset(words - _ENDING_FILLER) or frozenset({""})
    return frozenset()


def _words(text: str, zh: bool, *, single: bool = False, gaps: bool = False) -> tuple[str, ...]:
    """Content words in order. ``gaps``: a function word leaves "" in its place (so a modifier is the
    word right before the anchor, not the last content word somewhere before it); 的 leaves nothing
    (爱奇艺的密码: 爱奇艺 modifies 密码)."""
    out = []
    if zh:
        for token in jieba_words(text):
            w = token.strip()
            if w == "的" or not w:
                continue
            keep = (len(w) >= 2 or single) and w not in _ZH_STOP and re.search(r"[\u4e00-\u9fffA-Za-z]", w)
            if keep and not re.search(r"[零〇一二两三四五六七八九十百千万]{2}|点|号", w):
                out.append(w.lower())
            elif gaps:
                out.append("")
        return tuple(out)
    for raw in _EN_WORD.findall(text.lower()):
        w = re.sub(r"['’](?:s|re|m|ve|ll|d|t)$", "", raw).strip("-'’")
        if len(w) < 3 or w in _EN_STOP or w in _EN_VERBS_OF_CHANGE:
            if gaps:
                out.append("")
            continue
        out.append(_stem(w))
    return tuple(out)


_STEM_MAP = {"monthly": "month", "daily": "day", "weekly": "week", "yearly": "year", "drives": "drive"}


def _stem(word: str) -> str:
    word = _STEM_MAP.get(word, word)
    for suffix in ("ies", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3 and not word.endswith("ss"):
            return word[: -len(suffix)] + ("y" if suffix == "ies" else "")
    return word


# An ending's own words, not the thing that ended.
_EN_END_WORDS = frozenset(
    _stem(w)
    for w in (  # noqa: SIM905 - a word list reads better as words
        "quit quitting stopped gave broke split rid lapse done finished more longer anymore cancelled canceled"
        " closed sold took divorced turned unsubscribed ended dropped"
    ).split()
)

# "Caroline: ...", how chat logs are often stored; not "Kitchen budget: 8000 euros" (a label and its value)
_SPEAKER = re.compile(r"^[A-Z][\w'-]*(?: [A-Z][\w'-]*){0,2}:\s(?!\s*[$€£¥\d])")
# A name after a greeting addresses someone ("Thanks, Melanie", "Hi Mel"): not a value of anything.
_VOCATIVE = re.compile(
    r"\b(?:thanks|thank you|thx|hi|hey|hello|bye|dear|ok|okay|yes|yeah|no|wow|sorry|congrats|aw+|oh|haha|right)"
    r",?\s+(?-i:[A-Z][a-z]+)\b",  # a capitalised name: "no more glasses" addresses no one
    re.IGNORECASE,
)


def _said(text: str) -> str:
    """What a chat line says: without its speaker label and the names it addresses."""
    return _VOCATIVE.sub(" ", _SPEAKER.sub("", " ".join(text.split())))


@lru_cache(maxsize=2048)
def slots(text: str) -> Slots:
    text = _said(text)
    zh = is_chinese(text)
    kinds, rest = _values(text)
    named = {w for name in kinds.get("name", ()) for w in _words(name, zh, single=True)}
    clauses = tuple(
        frozenset(w for w in _words(clause, zh, single=True) if w not in named)
        for clause in _CLAUSE.split(rest)
        if clause.strip()
    )
    value_clause: frozenset[str] = frozenset()  # the content words of the first clause with a value
    valued = [clause for clause in _CLAUSE.split(text) if _values(clause)[0]]
    if valued:
        value_clause = frozenset(w for w in _words(_values(valued[0])[1], zh, single=True) if w not in named)
    # "装修预算是8000块，家电也算在里面": an additive word adds a value only in a clause that gives one
    additive = (_ADDITIVE_ZH if zh else _ADDITIVE_EN).search(" ; ".join(valued) if valued else text)
    return Slots(
        {k: frozenset(v) for k, v in kinds.items()},
        tuple(w for w in _words(rest, zh) if w not in named),
        clauses,
        value_clause,
        _words(_AMOUNTS.sub(" ", re.sub(r"[\"“”「」『』]", " ", text)), zh, gaps=True),
        frozenset(kinds.get("id", ())),
        bool(additive),
        _ends(text, zh),
        says_changed(text),
    )


_DATED_EN = re.compile(
    r"\b(?:yesterday|today|tonight|last night|this (?:morning|afternoon|evening)|just now|earlier today"
    r"|\d+ (?:days?|hours?|minutes?) ago)\b",
    re.IGNORECASE,
)
_DATED_ZH = re.compile(r"昨天|今天|今晚|昨晚|今早|刚才|前天|刚刚")
_CLAUSE = re.compile(r"[,;，；。.!?！？—–]|\s-\s|\bbut\b|但是?|不过")

# ------------------------------------------------------------------ the decision


def _differing_kinds(new: Slots, old: Slots) -> list[str]:
    """The kinds of value both state, with other values."""
    out = []
    for kind in sorted(set(new.values) & set(old.values)):
        a, b = new.values[kind], old.values[kind]
        if kind != "id" and a != b and ((not a <= b and not b <= a) or kind == "number"):
            out.append(kind)
    return out


def _modifier(words: tuple[str, ...], anchor: str) -> str | None:
    if anchor not in words:
        return None
    i = words.index(anchor)
    return words[i - 1] if i > 0 else None


def _other_modifier(new: Slots, old: Slots, anchors: list[str], *, one_sided: bool = True) -> bool:
    """ "kitchen budget" / "wedding budget", "Netflix password" / "Hulu password", "汽车保险" /
    "电动车保险": the anchor names two things."""
    new_only = set(new.named_words) - set(old.named_words) - {""}
    old_only = set(old.named_words) - set(new.named_words) - {""}
    for anchor in anchors:
        a, b = _modifier(new.named_words, anchor), _modifier(old.named_words, anchor)
        if a in new_only and b in old_only:
            return True
        # "the home office budget" / "the budget for the trip to Japan": one names more on each side
        if one_sided and ((a in new_only and old_only) or (b in old_only and new_only)):
            return True
    return False


_POSSESSOR = re.compile(r"\b(my|our|its|his|her|their)\s+([a-z]+)(?:\s+([a-z]+))?", re.IGNORECASE)


def _other_owner(new_text: str, old_text: str, anchors: list[str]) -> bool:
    """ "its name" / "my name": a possessive pronoun that puts the anchor on someone else."""

    def possessors(text: str) -> set[str]:
        return {
            "self" if m.group(1).lower() in ("my", "our") else "other"
            for m in _POSSESSOR.finditer(text)
            if {_stem(w.lower()) for w in m.groups()[1:] if w} & set(anchors)
        }

    a, b = possessors(new_text), possessors(old_text)
    return bool(a and b and not a & b)


def _of_what(text: str, anchor: str) -> str | None:
    """ "the budget for the car repair" -> "car": what an English anchor is *for* or *of*."""
    m = re.search(rf"\b{re.escape(anchor)}\w*\s+(?:for|of)\s+(?:the\s+|my\s+|our\s+|a\s+|an\s+)?([a-z]+)", text, re.I)
    return _stem(m.group(1).lower()) if m else None


def _says_more(new: Slots, old: Slots, anchors: list[str]) -> bool:
    """Without a change word the new statement must say what the old one said, of the same value:
    no other predicate in the anchor's clause ("房租每月5号交" is not "房租3000"; one other word
    when it shares two: "team lunch budget's $30 a head" / "… $20 per person"), none of the old
    one's missing, and no value of a kind the old one lacks while it lacks one of the old one's
    ("delayed 3 hours" / "delayed 40 minutes" on other days). A name counts as a word ("My
    Spanish class" / "Spanish class")."""
    old_words = old.all_words | (set(old.named_words) & new.all_words)  # a name on one side, a word on the other
    new_words = new.all_words | (set(new.named_words) & old.all_words)
    clause = next((c for c in new.clauses if anchors[0] in c), new.all_words)
    if len(clause - old_words - set(old.named_words)) > (1 if len(anchors) >= 2 else 0):
        return True
    if len(old_words - new_words) > (1 if len(old_words) >= 3 else 0):
        return True
    only_new, only_old = set(new.values) - set(old.values), set(old.values) - set(new.values)
    return bool(only_new and only_old)


def _same_short_predicate(new: Slots, old: Slots) -> list[str]:
    """ "我每天喝两升水" / "我一天喝三升水": no shared word of two characters, but the same
    one-character words and nothing else; they anchor it."""
    a, b = new.all_words, old.all_words
    return sorted(a) if len(a) >= 2 and a == b and all(len(w) == 1 for w in a) else []


def _names_another_thing(new: Slots, old: Slots) -> bool:
    """ "Actually the budget for the new laptop is now 14500" after "my phone bill is 3350",
    "更正：我的猫叫王芳" after "我的兔子叫张伟": the clause with the new value names something the old
    statement does not."""
    # a Chinese single character the old statement says inside a word counts as said ("起" of "起床")
    said = {w for w in new.value_clause if len(w) == 1 and is_chinese(w) and any(w in o for o in old.all_words)}
    return bool(new.value_clause - old.all_words - _CORRECTION_WORDS - said)


def distinct_ids(new_text: str, old_text: str) -> bool:
    """Each names an identifier the other does not ("Q1" / "Q2", "AA120" / "AA455", 一季度 / 二季度)."""
    new, old = slots(new_text).ids, slots(old_text).ids
    return bool(new and old and not new & old)


# Heads an ending may name its thing by ("quit the bakery gig" ends "a weekend job at the bakery").
_GENERIC_HEADS = frozenset(
    "gig job thing plan subscription membership habit class lesson service account app program routine".split()  # noqa: SIM905
)


def _said_around(word: str, old_words: frozenset[str]) -> bool:
    """An ending's word the old statement says in other form: a generic head ("gig"), another
    form of one of its words ("electricity" / "electric"), or a second verb ("emptied and closed")."""
    return word in _GENERIC_HEADS or word.endswith("ed") or any(len(w) >= 5 and word[:5] == w[:5] for w in old_words)


def slot_update(new_text: str, old_text: str) -> str:
    """Why ``new_text`` sets a new value of what ``old_text`` said ("" when it does not)."""
    new, old = slots(new_text), slots(old_text)
    if new.additive:
        return ""
    # an ending names what it ends, one character too (戒酒 ends 喝点酒); names count ("Chris and I broke up")
    ended = (new.ends & (old.all_words | set(old.named_words))) - {""} if not old.ends else frozenset()
    said = ended | {w for w in new.ends - ended if _said_around(w, old.all_words)}
    anchors = [w for w in old.words if w in new.words] or _same_short_predicate(new, old) or sorted(ended)
    if not anchors or distinct_ids(new_text, old_text):
        return ""  # nothing in common, or "the Q1 report" / "the Q2 report": two things
    if (_DATED_ZH if is_chinese(old_text) else _DATED_EN).search(old_text):
        return ""  # "there were issues at work today": what happened on a day ends or changes nothing
    if _other_owner(new_text, old_text, anchors):
        return ""  # "its name is Mia now" after "my name is Ivy"
    # "I've quit coffee completely" after "I drink coffee every morning": the clause that ends says
    # nothing the old statement does not ("我已经不住在深圳了" does not end "我去深圳的航班16点半起飞")
    if ended and said == new.ends:
        return "" if _other_modifier(new, old, anchors, one_sided=False) else "rule: it ended what it said"
    if _other_modifier(new, old, anchors):
        return ""
    if any((a := _of_what(new_text, w)) and (b := _of_what(old_text, w)) and a != b for w in anchors):
        return ""  # "the budget for the trip to Japan" / "the budget for the car repair"
    kinds = _differing_kinds(new, old)
    if not kinds:
        return ""
    if new.changed:
        return f"rule: a new {kinds[0]} for {anchors[0]}"
    if len(kinds) > 1 or _says_more(new, old, anchors):
        return ""  # "the Monday class at 6pm" / "the Wednesday class at 7:30pm": two classes
    if (_DATED_ZH if is_chinese(new_text) else _DATED_EN).search(new_text):
        return ""  # "paid $120 for it yesterday": what happened on a day, not a value that holds
    return f"rule: {anchors[0]} restated with a new {kinds[0]}"


# A correction of what was just said: a cue at the start ("Sorry, 7KLM281.", "Wait, it's the 4th",
# "More like 187") or a slip named anywhere ("typo", "I got that wrong", 打错了, 记混了).
_CORRECTS_EN = re.compile(
    r"^\W*(?:(?:oops|whoops|sorry|wait|no|nope|hmm|ugh|argh|eh|oh no|ah|my bad|actually|correction|typo|scratch that"
    r"|i mean|i meant|let me fix that|more like|closer to|make that|not \S+,)\b)"
    r"|\b(?:typo|got (?:that|it) wrong|wrong \w+|mixed? (?:them|it|those) up|misspoke|autocorrect|i was (?:rounding"
    r"|lowballing|wrong|off)|(?:it's|it is|is) actually|\S+ actually,)",
    re.IGNORECASE,
)
# Words a correction says about itself ("typo", "rounding up", 记错) rather than about another thing.
_CORRECTION_WORDS = frozenset(
    (  # noqa: SIM905 - a word list reads better as words
        "typo mistake wrong correction fix check checked honestly total rounding lowballing mean meant actually"
        " 更正 纠正 说错 记错 打错 写错 看错 其实 应该 不对 抱歉"
        # hedges a corrected value comes with ("一般是一点多才睡", "usually around 187")
        " usually normally about around roughly 一般 通常 平时 大概 左右 多 才 只"
    ).split()
)
_CORRECTS_ZH = re.compile(
    r"不对|打错|写错|记错|记混|看错|搞错|说错|说多了|说少了|口误|更正|纠正|啊不是|哦不|不好意思|其实是|其实才|其实只"
    r"|准确说|应该是|看串了|弄混了|抱歉"
)


# "17D, not 17C", "Lydia, not Linda", "Not 55, it's 58k", "是30公斤，不是斤": the value denied.
_DENIED = re.compile(
    r"\b(?:not|isn['’]t|wasn['’]t)\s+(?:the\s+|a\s+|an\s+)?([^\s,.;:!?—–]+(?:\s[^\s,.;:!?—–]+)?)|不是([^，。；！？,.;!?]{1,8})",
    re.IGNORECASE,
)


# "Sorry, Lydia": after a correction's cue a name is the value, not someone addressed.
_LEADING_CUE = re.compile(
    r"^(?:\W*\b(?:oops|whoops|sorry|wait|no|nope|hmm|ugh|eh|ah|my bad|actually|correction|typo|i mean|i meant)\b)+\W*",
    re.IGNORECASE,
)


def _denies_old_value(new_text: str, old_text: str) -> str | None:
    """``new_text`` without its "not X" when X is what ``old_text`` said: a correction by its denial."""
    old = " ".join(old_text.lower().split())
    for m in _DENIED.finditer(new_text):
        denied = (m.group(1) or m.group(2)).strip().lower()
        if denied and (denied in old or denied.rstrip("s") in old):
            return new_text[: m.start()] + " " + new_text[m.end() :]
    return None


def correction_cue(text: str) -> bool:
    """Says it corrects what was just said: a cue ("sorry", 打错了) or a denied value ("…, not 17C")."""
    return bool((_CORRECTS_ZH if is_chinese(text) else _CORRECTS_EN).search(text) or _DENIED.search(text))


_SPEAKER_EN = r"i|i'm|i’m|me|my|mine|we|our|us"
_ANYONE_EN = re.compile(rf"\b(?:{_SPEAKER_EN}|he|she|his|her|they|their|its)\b", re.IGNORECASE)
# The speaker as owner or subject ("my", "I'm 36"), not as the actor of a change ("we pushed his bedtime").
_NAMED_EN = re.compile(r"\b(?:my|mine|our|ours|i|i['’]m|i['’]ve|we['’]re)\b", re.IGNORECASE)
_ANYONE_ZH = re.compile(r"我|咱|他|她|它")
_NAMED_ZH = re.compile(r"(?:我|咱)(?!们?[把给将])")


def _without_cue(text: str) -> str:
    """The text without its correction cue and the speaker of the cue ("I got that wrong", "哎我记错了，")."""
    if is_chinese(text):
        return re.sub(rf"(?:[哎哦嗯啊]?我)?(?:{_CORRECTS_ZH.pattern})了?[，,。！!]?", " ", text)
    return re.sub(rf"(?:\bI\s+)?(?:{_CORRECTS_EN.pattern})[,.!—–-]*", " ", text, flags=re.IGNORECASE)


def names_anyone(text: str, *, pronouns: bool = True) -> bool:
    """Names a person ("my", 我, a proper name) or points at one ("her", 她), outside its correction
    cue ("哎我记错了" is the speaker's slip, not a statement about the speaker). Without ``pronouns``:
    names an owner other than by a pronoun ("my", 我的, a proper name; "we pushed his bedtime" does not)."""
    zh, text = is_chinese(text), _without_cue(text)
    pattern = (_ANYONE_ZH if zh else _ANYONE_EN) if pronouns else (_NAMED_ZH if zh else _NAMED_EN)
    return bool(pattern.search(text)) or (not zh and bool(proper_names(text)))


def slot_correction(new_text: str, old_text: str, *, changed: bool = False) -> str:
    """Why ``new_text`` corrects the value ``old_text`` just gave ("" when it does not): a correction
    cue, or a denial of the old value ("17D, not 17C"), and a value of a kind the old statement has,
    with another value ("Oops, March 21." after "My birthday is March 12."; "是33码" after "儿子穿32码的鞋").
    ``changed``: the new statement says a change without naming its thing ("作息调了，改成十点半睡"),
    which, like a cue, applies to the nearest value of its kind."""
    if (rest := _denies_old_value(new_text, old_text)) is not None:
        # the denial ties it to the old value: any value the old statement lacks is its correction
        new, old = slots(_LEADING_CUE.sub("", rest)), slots(old_text)
        given = {(k, v) for k, vs in new.values.items() for v in vs}
        if not new.additive and given - {(k, v) for k, vs in old.values.items() for v in vs}:
            return "rule: a correction of the value it denies"
        return ""
    if not changed and not (_CORRECTS_ZH if is_chinese(new_text) else _CORRECTS_EN).search(new_text):
        return ""
    clauses = re.split(r"(?<=[，,。.!！—–])\s*", new_text, maxsplit=1)
    lead_cue = len(clauses) == 2 and (_CORRECTS_ZH if is_chinese(new_text) else _CORRECTS_EN).search(clauses[0])
    restated = re.sub(r"应该|其实|actually\s+", "", clauses[1] if lead_cue else new_text)
    if same_words_new_value(restated, old_text):  # "哎我记错了，师傅上门应该是周二下午"
        return "rule: a correction in the same words"
    new, old = slots(new_text), slots(old_text)
    if new.additive or _names_another_thing(new, old):
        return ""
    kinds = _differing_kinds(new, old)
    new_ids, old_ids = new.ids | new.values.get("code", frozenset()), old.ids | old.values.get("code", frozenset())
    ids_differ = len(new_ids) == 1 and len(old_ids) == 1 and new_ids != old_ids
    # "More like 187" after "I weigh 180 lbs": a bare number corrects an amount of any unit
    bare = new.values.get("number", frozenset())
    amounts = {v for k, vs in old.values.items() if k == "money" or k.startswith("qty:") for v in vs}
    if not kinds and set(new.values) == {"number"} and amounts and not bare & amounts:
        kinds = ["number"]
    if kinds or ids_differ:
        return f"rule: a correction of the {kinds[0] if kinds else 'id'} just said"
    return ""


# ------------------------------------------------------------------ the same words, one value changed
# "My phone is an iPhone 12." / "My phone is a Pixel 8.", "I prefer aisle seats." / "I prefer window
# seats.", "我坐飞机喜欢靠过道" / "我坐飞机喜欢靠窗": the same sentence but for one short span after
# the verb that sets the value. Only after a frame that holds one value at a time: a copula after a
# named thing ("my phone is", not "I am": a person is many things) or a verb of one choice ("prefer",
# "drive", 住, 开); "I have a cat" / "I have a dog" and "I like X" / "I like Y" add, they do not replace.
_EN_TOKEN = re.compile(r"[a-z0-9$€£¥@][\w$€£¥@.:,/+-]*?(?=[.,;:!?]*(?:\s|$)|['’]s\b)|['’]s\b", re.IGNORECASE)
_EN_COPULA = frozenset({"is", "are", "be"})
_EN_ONE_CHOICE = frozenset(
    "prefer prefers drive drives commute commutes live lives work works weigh weighs charge charges aim bank"  # noqa: SIM905
    " banks by at in for with".split()
)
_EN_EDGE_FILLER = frozenset("actually so ok okay well now currently nowadays anyway honestly btw".split())  # noqa: SIM905
_EN_NEGATION = frozenset("not no never don't doesn't isn't aren't won't can't n't".split())  # noqa: SIM905
_EN_ARTICLES = frozenset({"a", "an", "the"})
# "That bowl is gorgeous!" / "That bowl is awesome, Mel!": an opinion said twice, not a value set anew.
_EVALUATIVE = frozenset(
    "awesome amazing gorgeous beautiful lovely wonderful fantastic incredible stunning impressive cute pretty"  # noqa: SIM905
    " nice cool fun great good bad terrible awful horrible fine okay ok interesting exciting boring hard easy tough"
    " crazy wild special perfect sweet adorable inspiring brave proud happy sad glad sorry so really very super".split()
)
_TRAILING_NAME = re.compile(r",\s*(?-i:[A-Z][a-z]+)\s*([!.?]|$)")  # "…, Mel!": someone addressed
_EN_SHAPE = frozenset("on at in to by for from with my our his her their".split())  # noqa: SIM905
_ZH_ONE_CHOICE = ("住在", "住", "开", "用", "穿", "靠", "坐", "选", "订", "找", "叫")
_ZH_EDGE = re.compile(r"(?<=^我)(?:现在|目前|如今|其实)|^(?:现在|目前|如今|其实)|(?:了|啦|哦|呢|吧)$")
_ZH_SELF = re.compile(r"我们|我|咱们|的|是|叫")


def _en_tokens(text: str) -> list[str]:
    text = _TRAILING_NAME.sub(r"\1", _said(text))
    tokens = [t.lower() for t in _EN_TOKEN.findall(text)]
    while tokens and tokens[0] in _EN_EDGE_FILLER:
        tokens.pop(0)
    while tokens and tokens[-1] in _EN_EDGE_FILLER:
        tokens.pop()
    # "my bike's a Trek", "budget's $30": a copula before an article or a number; "Mochi's insulin" owns
    following = [*tokens[1:], ""]
    return [
        "is"
        if t in ("'s", "’s")
        and (following[i] in _EN_ARTICLES or following[i][:1] in "0123456789$€£¥" or not following[i])
        else t
        for i, t in enumerate(tokens)
    ]


def _split_common(a: list[str] | str, b: list[str] | str) -> tuple[int, int]:
    """The lengths of the common prefix and of the common suffix that does not overlap it."""
    p = 0
    while p < min(len(a), len(b)) and a[p] == b[p]:
        p += 1
    s = 0
    while s < min(len(a), len(b)) - p and a[len(a) - 1 - s] == b[len(b) - 1 - s]:
        s += 1
    return p, s


def _en_frame(prefix: list[str], suffix: list[str]) -> bool:
    """The shared words around the changed span hold one value at a time: a named thing and a copula,
    a verb of one choice (with its preposition: "commute by", "live in"), or the speaker's verb with a
    shared rest that names the thing ("I take [oat] milk in my coffee")."""
    content = [w for w in prefix if w not in _EN_STOP and w not in _EN_COPULA and len(w) >= 3]
    if prefix and prefix[-1] in _EN_COPULA:  # "my phone is", not "I am" / "I'm"
        return bool(content) and not any(w in ("i", "i'm", "we", "we're", "i’m") for w in prefix[-2:])
    if prefix and (prefix[-1] in _EN_ONE_CHOICE or (len(prefix) > 1 and prefix[-2] in _EN_ONE_CHOICE)):
        return any(w in _EN_ONE_CHOICE for w in prefix if w not in ("by", "at", "in", "for", "with"))
    # "I take [oat] milk in my coffee": the speaker's verb, and the shared rest names the thing
    return len(prefix) >= 2 and prefix[0] in ("i", "we") and any(w not in _EN_STOP and len(w) >= 3 for w in suffix[1:])


def _shape(token: str) -> str:
    if token in _EN_ARTICLES:
        return "article"
    if token in _EN_SHAPE:
        return token
    return "number" if token[:1].isdigit() or token[:1] in "$€£¥" else "word"


def _typed(text: str) -> dict[str, frozenset[str]]:
    return {k: v for k, v in slots(text).values.items() if k not in ("name", "number")}


def _english_span(old_text: str, new_text: str) -> tuple[str, str] | None:
    """The one short span (≤ 4 words each) in which two English statements differ, when the rest
    frames a single value and both spans have the same shape; None otherwise."""
    a, b = _en_tokens(old_text), _en_tokens(new_text)
    p, s = _split_common(a, b)
    while p and a[p - 1] in _EN_ARTICLES | _EN_SHAPE:  # "is [my brother Dev]": the determiner goes with the value
        p -= 1
    old_span, new_span = a[p : len(a) - s], b[p : len(b) - s]
    if not (0 < len(old_span) <= 4 and 0 < len(new_span) <= 4) or not _en_frame(a[:p], a[len(a) - s :]):
        return None
    if {*a, *b} & _EN_NEGATION or _shape(old_span[0]) != _shape(new_span[0]):
        return None  # "The car is blue" / "The car is a manual": another kind of thing said
    if {*old_span, *new_span} & (_EN_COPULA | {"'s", "’s"}):
        return None  # "name is Ollie" / "breed is corgi mix": another attribute of the thing
    if any(all(w in _EVALUATIVE or w in _EN_ARTICLES for w in span) for span in (old_span, new_span)):
        return None
    return " ".join(old_span), " ".join(new_span)


def _chinese_span(old_text: str, new_text: str) -> tuple[str, str] | None:
    """The same for Chinese, by characters: the span after a verb of one choice or after 是 / 叫 of a
    named thing, backed off up to two characters when the values begin alike (大众 / 大巴)."""
    a, b = (_ZH_EDGE.sub("", re.sub(r"[\s。！!.，,]+$", "", t.strip())) for t in (old_text, new_text))
    p, s = _split_common(a, b)
    for k in range(p, max(p - 2, 0) - 1, -1):  # back to a verb of one choice ("靠过道" / "靠窗")
        head = a[:k].removesuffix("的是").removesuffix("是")
        one_choice = head.endswith(_ZH_ONE_CHOICE) or ("最" in head and head.endswith(("喜欢", "爱", "喝", "吃")))
        one_choice = one_choice or (k == p and head.endswith("在"))  # "我在市场部" / "我在产品部", not "我在学…"
        named = a[:k].endswith(("是", "叫")) and len(_ZH_SELF.sub("", a[:k])) >= 2
        if one_choice or named:
            old_span, new_span = a[k : len(a) - s], b[k : len(b) - s].removeprefix("的是")
            if not (0 < len(old_span) <= 12 and 0 < len(new_span) <= 12):
                return None
            if re.search(r"[，,；;不没是叫]", old_span + new_span):
                return None  # "额度是四万" / "年费是每年300": another attribute
            if old_span[0].isdigit() != new_span[0].isdigit():
                return None  # "华为GT4" / "46毫米的": a model is not a size
            return old_span, new_span
    return None


def same_words_new_value(new_text: str, old_text: str) -> str:
    """Why ``new_text`` is ``old_text`` with another value in the same words ("" when it is not)."""
    spans = (_chinese_span if is_chinese(old_text) else _english_span)(old_text, new_text)
    if spans is None or slots(new_text).additive:
        return ""
    old_span, new_span = spans
    old_kinds, new_kinds = _typed(old_span), _typed(new_span)
    if set(old_kinds) != set(new_kinds):
        return ""  # "on June 14" / "at the Rosewood Inn": a date is not a place
    return f"rule: the same words with a new value ({new_span})"
