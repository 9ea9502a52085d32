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
from memory_vec._rules.change import numbers
from memory_vec._rules.facts import is_chinese, proper_names
from memory_vec._rules.owners import ZH_SURNAMES

__all__ = ["Slots", "distinct_ids", "slot_correction", "slot_update"]

# ------------------------------------------------------------------ value kinds
_MONEY = re.compile(
    r"[$€£¥]\s?\d[\d,]*(?:\.\d+)?\s?[kK]?|\d[\d,]*(?:\.\d+)?\s?[kK]?\s?(?:dollars?|bucks|euros?|eur|usd|quid|pounds?"
    r"|rmb|yuan|grand)\b|(?:\d[\d,.]*|[零〇一二两三四五六七八九十百千万]+)\s*(?:万|千)?\s*(?:元|块钱|块|美元|欧元|刀)",
    re.IGNORECASE,
)
_AMOUNT = re.compile(r"\b\d+(?:\.\d+)?[kK]\b")  # "40k", "8k"
_CLOCK = re.compile(
    r"\b\d{1,2}(?::\d{2})?\s?(?:[ap]\.?m\.?)(?![a-z])|\b\d{1,2}:\d{2}\b|\bnoon\b|\bmidnight\b"
    r"|(?:早上|上午|中午|下午|晚上|凌晨|傍晚)?(?:\d{1,2}|[一二两三四五六七八九十]{1,3})(?:点|:)(?:半|一刻|三刻|\d{1,2}分?|[一二三四五六七八九十]{1,3}分?)?",
    re.IGNORECASE,
)
_WEEKDAY = re.compile(
    r"\b(?:mon|tues|wednes|thurs|fri|satur|sun)days?\b|(?:周|星期|礼拜)[一二三四五六日天]",
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
_QUOTED = re.compile(r"[\"“「『]([^\"“”「」『』]{1,40})[\"”」』]")
# A quoted value sets a slot after a copula or a naming word ('the hint is "pizza"', '叫“小鹿”'); elsewhere
# it says which one ('secret of "a" in "b"') and is an identifier.
_SETS_QUOTED = re.compile(
    r"(?:\b(?:is|are|was|were|called|named|to|now|hint|password|name)|['’]s|[:：是叫为成])\s*$", re.IGNORECASE
)


def _quoted(m: re.Match[str]) -> tuple[str, str]:
    kind = "name" if _SETS_QUOTED.search(m.string[: m.start()]) else "id"
    return kind, m.group(1).strip().lower()


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
    take("id", _ID, lambda m: ("id", " ".join(m.group(0).lower().split())))
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
    r"|不.{1,6}了|注销|关了|关掉|结束了|吃完了|用完了|没续费"
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
    " 彻底 已经 终于 正式 现在 了 学期 这学期 这周 最近 本月 这个月 今年".split()
)


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
        if zh:  # 不学芭蕾了: the cue holds the thing, so the cue's own words go, not its span
            words = {w for w in _words(text[start:end], zh, single=True) if not _ZH_END_WORD.fullmatch(w)}
        else:  # the clause, its cue left out
            words = set(_words(text[start : m.start()] + " " + text[m.end() : end], zh, single=True))
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


_SPEAKER = re.compile(r"^[A-Z][\w .'-]{0,30}:\s")  # "Caroline: ...", how chat logs are often stored
# A name after a greeting addresses someone ("Thanks, Melanie", "Hi Mel"): not a value of anything.
_VOCATIVE = re.compile(
    r"\b(?:thanks|thank you|thx|hi|hey|hello|bye|dear|ok|okay|yes|yeah|no|wow|sorry|congrats|aw+|oh|haha|right)"
    r",?\s+[A-Z][a-z]+\b",
    re.IGNORECASE,
)


@lru_cache(maxsize=2048)
def slots(text: str) -> Slots:
    text = _VOCATIVE.sub(" ", _SPEAKER.sub("", " ".join(text.split())))
    zh = is_chinese(text)
    kinds, rest = _values(text)
    named = {w for name in kinds.get("name", ()) for w in _words(name, zh, single=True)}
    clauses = tuple(
        frozenset(w for w in _words(clause, zh, single=True) if w not in named)
        for clause in _CLAUSE.split(rest)
        if clause.strip()
    )
    value_clause: frozenset[str] = frozenset()  # the content words of the first clause with a value
    for clause in _CLAUSE.split(text):
        clause_values, clause_rest = _values(clause)
        if clause_values:
            value_clause = frozenset(w for w in _words(clause_rest, zh, single=True) if w not in named)
            break
    return Slots(
        {k: frozenset(v) for k, v in kinds.items()},
        tuple(w for w in _words(rest, zh) if w not in named),
        clauses,
        value_clause,
        _words(re.sub(r"[\"“”「」『』]", " ", text), zh, gaps=True),
        frozenset(kinds.get("id", ())),
        bool((_ADDITIVE_ZH if zh else _ADDITIVE_EN).search(text)),
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


def _says_more(new: Slots, old: Slots, anchor: str) -> bool:
    """Without a change word the new statement must say what the old one said, of the same value:
    no other predicate in the anchor's clause ("房租每月5号交" is not "房租3000"), none of the old
    one's missing, and no value of a kind the old one lacks while it lacks one of the old one's
    ("delayed 3 hours" / "delayed 40 minutes" on other days)."""
    old_words, new_words = old.all_words, new.all_words
    clause = next((c for c in new.clauses if anchor in c), new_words)
    if clause - old_words:
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
    return bool(new.value_clause - old.all_words - _CORRECTION_WORDS)


def distinct_ids(new_text: str, old_text: str) -> bool:
    """Each names an identifier the other does not ("Q1" / "Q2", "AA120" / "AA455", 一季度 / 二季度)."""
    new, old = slots(new_text).ids, slots(old_text).ids
    return bool(new and old and not new & old)


def slot_update(new_text: str, old_text: str) -> str:
    """Why ``new_text`` sets a new value of what ``old_text`` said ("" when it does not)."""
    new, old = slots(new_text), slots(old_text)
    if new.additive:
        return ""
    anchors = [w for w in old.words if w in new.words] or _same_short_predicate(new, old)
    if not anchors or distinct_ids(new_text, old_text):
        return ""  # nothing in common, or "the Q1 report" / "the Q2 report": two things
    if (_DATED_ZH if is_chinese(old_text) else _DATED_EN).search(old_text):
        return ""  # "there were issues at work today": what happened on a day ends or changes nothing
    if _other_owner(new_text, old_text, anchors):
        return ""  # "its name is Mia now" after "my name is Ivy"
    # "I've quit coffee completely" after "I drink coffee every morning": the clause that ends says
    # nothing the old statement does not ("我已经不住在深圳了" does not end "我去深圳的航班16点半起飞")
    if new.ends and new.ends <= old.all_words and new.ends & set(anchors) and not old.ends:
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
    if len(kinds) > 1 or _says_more(new, old, anchors[0]):
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
    ).split()
)
_CORRECTS_ZH = re.compile(
    r"不对|打错|写错|记错|记混|看错|搞错|说错|说多了|说少了|口误|更正|纠正|啊不是|哦不|不好意思|其实是|其实才|其实只"
    r"|准确说|应该是|看串了|弄混了|抱歉"
)


def slot_correction(new_text: str, old_text: str) -> str:
    """Why ``new_text`` corrects the value ``old_text`` just gave ("" when it does not): a correction
    cue and a value of a kind the old statement has, with another value ("Oops, March 21." after
    "My birthday is March 12."; "是33码" after "儿子穿32码的鞋")."""
    if not (_CORRECTS_ZH if is_chinese(new_text) else _CORRECTS_EN).search(new_text):
        return ""
    new, old = slots(new_text), slots(old_text)
    if new.additive or _names_another_thing(new, old):
        return ""
    kinds = _differing_kinds(new, old)
    ids_differ = len(new.ids) == 1 and len(old.ids) == 1 and new.ids != old.ids
    # "More like 187" after "I weigh 180 lbs": a bare number corrects an amount of any unit
    bare = new.values.get("number", frozenset())
    amounts = {v for k, vs in old.values.items() if k == "money" or k.startswith("qty:") for v in vs}
    if not kinds and set(new.values) == {"number"} and amounts and not bare & amounts:
        kinds = ["number"]
    if kinds or ids_differ:
        return f"rule: a correction of the {kinds[0] if kinds else 'id'} just said"
    return ""
