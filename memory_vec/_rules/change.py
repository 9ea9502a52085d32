"""A change the user states outright: what changed, from which value, to which.

Conflict-overwrite prefers this explicit evidence to similarity: "we raised
the budget to 8000", "把预算从5000改成8000了", "预算由5000调整为8000", "改到周四",
"it's 8000 now, not 5000", "不是2800，是3200". A :class:`StatedChange` names
the thing (``thing``: "budget", "预算"; None when the sentence does not say),
the value it replaces when the sentence names it (``old``) and the new value
(``new``). The resolver then supersedes only an older statement that speaks
of that thing and holds that old value (or, without one, a different value of
the same thing).

English and Chinese. Pure: no I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from memory_vec._rules.assertion import says_changed
from memory_vec._rules.facts import distinct_subjects, extract_values, is_chinese, subject_value

__all__ = [
    "StatedChange",
    "change_applies",
    "corrects",
    "holds_value",
    "names_thing",
    "numbers",
    "retraction",
    "retracts",
    "stated_change",
    "thing_words",
]


@dataclass(frozen=True)
class StatedChange:
    #: The thing whose value changed ("kitchen budget", "装修预算"), lower-cased; None if unnamed.
    thing: str | None
    #: The value it had, when the sentence names it ("5000" in "from 5000 to 8000", "not 5000").
    old: str | None
    #: The value it has now.
    new: str
    cue: str


_EN_VERB = (
    r"changed|moved|raised|lowered|increased|decreased|bumped|upped|cut|trimmed|slashed|reduced|extended|pushed"
    r"|rescheduled|switched|shifted|reset|revised|updated|upgraded|downgraded|tightened|scaled|capped|renamed"
    r"|transferred|relocated|hiked|dropped|set|adjusted|doubled|halved"
)
# Verbs that say a value changed whatever follows; the others ("moved the couch to the hall", "dropped
# the kids to school") need a value after "to" (a number, a date, a name).
_EN_CHANGE_ONLY = frozenset(
    "changed switched renamed updated upgraded downgraded revised reset rescheduled adjusted".split()  # noqa: SIM905
)
_EN_DET = r"(?:(?:the|my|our|his|her|their|its|this|that)\s+)?"
# "We bumped the kitchen budget up to 8k", "I changed my forum username to nightowl_22",
# "they moved the lesson from Wednesday to Friday".
_EN_ACTIVE = re.compile(
    rf"\b(?P<verb>{_EN_VERB})(?:\s+(?:back|down|up))?\s+{_EN_DET}(?!(?:to|from|in|into|on|at|up|down|back|off|out|over)\b)"
    r"(?P<thing>[a-z][a-z0-9'’\- ]{0,40}?)\s+"
    r"(?:(?:up|down|back|over|forward|ahead|earlier|later|out)\s+)?"
    r"(?:from\s+(?P<old>[^,;!?]{1,30}?)\s+)?to\s+(?P<new>(?:[^,;!?]|(?<=\d),(?=\d{3})){1,40})",
    re.IGNORECASE,
)
# "My car's service appointment got moved to the 8th", "the deadline has been pushed back to May 3".
_EN_PASSIVE = re.compile(
    rf"\b{_EN_DET}(?P<thing>[a-z][a-z0-9'’\- ]{{0,40}}?)\s+"
    rf"(?:(?:got|has been|have been|was|were|is being|just got)\s+)?(?:just\s+)?(?P<verb>{_EN_VERB})\s+"
    r"(?:(?:up|down|back|over|forward|ahead|earlier|later)\s+)?"
    r"(?:from\s+(?P<old>[^,;!?]{1,30}?)\s+)?to\s+(?P<new>(?:[^,;!?]|(?<=\d),(?=\d{3})){1,40})",
    re.IGNORECASE,
)
_EN_SUBJECT_WORDS = re.compile(r"^(?:i|we|you|he|she|they|it|me|us|him|them)$", re.IGNORECASE)
# "It's 8000 now, not 5000", "spot 21, not 12", "not 6:40, it's 6:04", "8000, not 5000".
_EN_NOT_AFTER = re.compile(
    r"(?:^|[\s,:—–-])(?P<new>[^,;!?—–]{1,30}?)\s*(?:now\s*)?[,—–-]?\s*(?:and\s+)?not\s+(?P<old>[^,;.!?—–]{1,25}?)\s*(?:[,;.!?—–]|$)",
    re.IGNORECASE,
)
_EN_NOT_BEFORE = re.compile(
    r"(?:^|[\s,:—–-])not\s+(?P<old>[^,;!?—–]{1,25}?)\s*[,;—–-]\s*(?:but\s+)?"
    r"(?:it['’]s|it is|it was|that['’]s|i meant)?\s*"
    r"(?P<new>[^,;.!?—–]{1,30}?)\s*(?:[,;.!?—–]|$)",
    re.IGNORECASE,
)

# Chinese change verbs, longest first.
_ZH_VERB = (
    r"调整为|调整到|提高到|降低到|增加到|减少到|升级到|升级成|推迟到|提前到|改签到|改期到|改名叫|改名为|改名成"
    r"|改成|改为|改到|改叫|改在|调成|调到|调为|调低到|调高到|提到|降到|降为|压到|加到|砍到|缩到|减到|涨到|换成|换到"
    r"|变成|变为|升到|挪到|转到"
)
_ZH_THING = r"(?:把|将)?(?P<thing>[\u4e00-\u9fffA-Za-z]{1,12}?)"
_ZH_ADVERB = r"(?:我|我们|已经|刚|刚刚|也|都|就|又|现在|今年|这次)*"
# 把预算从5000改成8000了 / 预算由5000调整为8000 / 预算调整到8000元 / 例会改到周四 / 狗改名叫旺财.
_ZH_CHANGE = re.compile(
    _ZH_THING + _ZH_ADVERB + r"(?:(?:从|由)(?P<old>[^，。,！!；;]{1,12}?))?"
    rf"(?P<verb>{_ZH_VERB})(?P<new>[^，。,！!；;了]{{1,16}})"
)
# 不是2800，是3200 / 是24路，不是42路.
_ZH_NOT_BEFORE = re.compile(
    r"不是(?P<old>[^，。,！!；;]{1,12}?)[，,、]\s*(?:而)?(?:是|应该是)(?P<new>[^，。,！!；;]{1,16})"
)
_ZH_NOT_AFTER = re.compile(
    r"(?:是|应该是)(?P<new>[^，。,！!；;]{1,16}?)[，,、]\s*(?:而)?不是(?P<old>[^，。,！!；;]{1,12}?)(?:[，。,！!；;]|$)"
)
_ZH_COUNT = re.compile(r"[一二两三四五六七八九十半\d]+\s*[片粒颗次顿杯瓶个块元位天周]")  # "一片", "两次"
_ZH_WHEN = re.compile(r"^(?:最近|现在|目前|如今|刚刚|刚|已经|今天|今年|这周|本周|这次|后来|然后)+")
_ZH_LEAD = re.compile(r"^(?:我的|我们的|我们家|我家|我们|我|咱们|这个|那个|家里的?)")

_CN_DIGIT = {"零": 0, "〇": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9}
_CN_UNIT = {"十": 10, "百": 100, "千": 1000}
_CN_NUMERAL = re.compile(r"[零〇一二两三四五六七八九十百千万]+")
_AM_PM = re.compile(r"(?<![\d:])(\d{1,2})(?:[:.](\d{2}))?\s*([ap]\.?m\.?)(?![a-z])", re.IGNORECASE)
_CLOCK = re.compile(r"(?<![\d:])(\d{1,2})(?:[:：]|点)(\d{2}|\d(?=分))(?![\d:])")
_ARABIC = re.compile(r"(?<![A-Za-z0-9_.])(\d[\d,]*(?:\.\d+)?)\s*([kK](?![a-zA-Z])|万|千)?")


def cn_number(numeral: str) -> float | None:
    """两万 -> 20000, 一万五 -> 15000, 十二万 -> 120000, 四千五 -> 4500, 八百 -> 800."""
    total, section, digit, last_unit = 0.0, 0.0, None, 1
    for ch in numeral:
        if ch in _CN_DIGIT:
            digit = _CN_DIGIT[ch]
        elif ch in _CN_UNIT:
            section += (digit if digit is not None else 1) * _CN_UNIT[ch]
            digit, last_unit = None, _CN_UNIT[ch]
        elif ch == "万":
            total += (section + (digit or 0)) * 10000
            section, digit, last_unit = 0.0, None, 10000
        else:
            return None
    if digit is not None:  # 一万五 = 15000, 四千五 = 4500: a trailing digit counts a tenth of the last unit
        section += digit * (last_unit // 10 if last_unit >= 100 else 1)
    value = total + section
    return value or None


def change_applies(change: StatedChange, new_text: str, old_text: str, old_subject: str | None) -> bool:
    """``old_text`` holds the value ``change`` replaces: the old value it names ("from 5000", "not
    5000"), or, when it names none, another value of the thing it names ("raised the budget to 8000"
    after "the budget is 5000")."""
    if holds_value(old_text, change.new):
        return False  # the old statement already says the new value
    if change.thing is not None:
        if not names_thing(old_text, change.thing):
            return False
        if old_subject and distinct_subjects(change.thing, old_subject.rsplit("/", 1)[-1]):
            return False  # "the wedding budget" is not "the kitchen budget"
    if change.old is not None:
        # "I like dogs, not cats" names no wrong value of a statement about cats: a word must come with
        # a correction ("sorry, not penicillin — it's sulfa").
        return holds_value(old_text, change.old) and (
            bool(numbers(change.old)) or change.thing is not None or says_changed(new_text)
        )
    return change.thing is not None and bool(
        extract_values(old_text) or numbers(old_text) or subject_value(old_text) or _ZH_COUNT.search(old_text)
    )


def numbers(text: str) -> set[float]:
    """The numbers a text states, Arabic or Chinese ("8k" and "8000", "两万" and "20000" are equal)."""
    found: set[float] = set()
    for hours, minutes, half in _AM_PM.findall(text):  # "9pm" is 21, not the 9 of "9am"
        found.add(int(hours) % 12 + (12 if half.lower().startswith("p") else 0) + int(minutes or 0) / 100)
    text = _AM_PM.sub(" ", text)
    for hours, minutes in _CLOCK.findall(text):  # "6:40" is one value, not 6 and 40
        found.add(int(hours) + int(minutes) / 100)
    for digits, scale in _ARABIC.findall(_CLOCK.sub(" ", text)):
        try:
            value = float(digits.replace(",", ""))
        except ValueError:
            continue
        found.add(value * {"k": 1000, "K": 1000, "万": 10000, "千": 1000}.get(scale, 1))
    if is_chinese(text):
        for numeral in _CN_NUMERAL.findall(text):
            if len(numeral) > 1 or numeral in "两三四五六七八九十":  # not the 一 of 一下, 一起
                cn = cn_number(numeral)
                if cn is not None:
                    found.add(cn)
    return found


def _clean(text: str | None) -> str | None:
    if text is None:
        return None
    text = re.sub(r"^(?:the|a|an|my|our)\s+", "", text.strip(" \"'“”‘’「」"), flags=re.IGNORECASE)
    return text.strip(" \"'“”‘’「」.") or None


# A clause ending in a subject with its verb or an auxiliary: the "not" that follows negates the verb.
_ENDS_IN_VERB = re.compile(
    r"(?:\b(?:i['’]m|we['’]re|you['’]re|they['’]re|he['’]s|she['’]s|it['’]s|that['’]s|there['’]s|am|is|are|was"
    r"|were|be|been|do|does|did|will|would|can|could|should|shall|may|might|must|have|has|had|gonna|wanna)"
    r"|n['’]t)$",
    re.IGNORECASE,
)


def _english(text: str) -> StatedChange | None:
    for pattern in (_EN_ACTIVE, _EN_PASSIVE):
        if (m := pattern.search(text)) and not _EN_SUBJECT_WORDS.match(m.group("thing").strip()):
            thing, new, verb = _clean(m.group("thing")), _clean(m.group("new")), m.group("verb").lower()
            if thing and new and (verb in _EN_CHANGE_ONLY or _has_value(new)):
                return StatedChange(thing.lower(), _clean(m.group("old")), new, verb)
    for pattern in (_EN_NOT_BEFORE, _EN_NOT_AFTER):
        if m := pattern.search(text):
            old, new = _clean(m.group("old")), _clean(m.group("new"))
            # Both sides must be values: "not 5000", "not penicillin", never "not sure" or "not really";
            # and "not" after a verb negates it ("I'm not giving up", "we're not alone"): no value before it.
            if (
                old
                and new
                and (numbers(old) or len(old.split()) <= 2)
                and _looks_like_value(old, new)
                and not _ENDS_IN_VERB.search(new)
            ):
                return StatedChange(None, old, _tail_value(new), "not")
    return None


_NOT_VALUES = re.compile(
    r"^(?:sure|really|bad|quite|yet|now|anymore|exactly|only|just|always|that|this|so|too|much|many|even|at all"
    r"|me|him|her|them|us|you|it|a|the|to|for|with|because|if|when|one|all|again)\b",
    re.IGNORECASE,
)


def _looks_like_value(old: str, new: str) -> bool:
    if _NOT_VALUES.match(old):
        return False
    old_numbers, new_numbers = numbers(old), numbers(new)
    if old_numbers or new_numbers:
        return bool(old_numbers and new_numbers) and old_numbers != new_numbers
    return len(old.split()) <= 2 and old.lower() not in new.lower()


_CAPITALISED = re.compile(r"\b[A-Z][\w&.-]+")


def _has_value(text: str) -> bool:
    """A number, a time or date, or a name: "8k", "10:15", "September 6", "Progressive"."""
    return bool(numbers(text) or _CAPITALISED.search(text))


def _tail_value(new: str) -> str:
    """ "wait, I misread the ticket — it's 7:15" -> "7:15": the words after the last "it's"/"is"."""
    m = re.search(r"(?:it['’]s|it is|that['’]s|is|i meant|meant)\s+(.+)$", new, re.IGNORECASE)
    return (m.group(1) if m else new).strip()


def _chinese(text: str) -> StatedChange | None:
    for pattern in (_ZH_NOT_BEFORE, _ZH_NOT_AFTER):
        if m := pattern.search(text):
            old, new = m.group("old").strip(), m.group("new").strip()
            if old and new and old != new:
                return StatedChange(None, old, new, "不是")
    if m := _ZH_CHANGE.search(text):
        # "刚把套餐换成…", "医生把我的二甲双胍加到…": the thing is what 把 takes; "最近改成…" names none
        thing = re.split(r"[把将]", m.group("thing") or "")[-1]
        thing = _ZH_LEAD.sub("", _ZH_WHEN.sub("", thing))
        new = m.group("new").strip()
        if new:
            return StatedChange(thing or None, m.group("old"), new, m.group("verb"))
    return None


# A correction that does not name the wrong value: "sorry, I meant 8000", "typo, it's 450 g", "说错了，是7点15".
_CORRECTION_EN = re.compile(
    r"\b(?:i meant|i mean|i misspoke|i misread|typo|correction|correct myself|scratch that|make that|my bad"
    r"|i was wrong|wrong (?:time|date|number|day)|(?:i )?got (?:that|it) wrong|autocorrect)\b",
    re.IGNORECASE,
)
_CORRECTION_ZH = re.compile(
    r"说错了|打错了|写错了|记错了|看错了|搞错了|弄错了|口误|更正|纠正一下|改一下，|不对，|不对,"
)


def corrects(text: str) -> bool:
    """The sentence corrects something said before, without naming the wrong value."""
    return bool((_CORRECTION_ZH if is_chinese(text) else _CORRECTION_EN).search(text))


def stated_change(text: str) -> StatedChange | None:
    """The change ``text`` states outright, or None (see the module docstring)."""
    text = " ".join(text.split())
    return _chinese(text) if is_chinese(text) else _english(text)


def holds_value(text: str, value: str) -> bool:
    """``text`` states ``value``: the same numbers (8k = 8000, 两万 = 20000), else the same words."""
    wanted = numbers(value)
    if wanted:
        return wanted <= numbers(text)
    value = value.casefold().strip()
    if is_chinese(value):
        return value in text.casefold()
    return re.search(rf"\b{re.escape(value)}\b", text.casefold()) is not None


_THING_FILLER = frozenset("the a an of for to my our your his her their its s new old current".split())  # noqa: SIM905


def thing_words(thing: str) -> set[str]:
    if is_chinese(thing):
        return set(thing) - set("的我们你他她它这那个家")
    return {w for w in re.split(r"[\s'’\-/]+", thing.lower()) if w and w not in _THING_FILLER}


def names_thing(text: str, thing: str) -> bool:
    """``text`` speaks of ``thing``: its head word ("budget" of "kitchen budget", "预算" of "装修预算")
    appears, and every other word of it too or none that contradicts ("kitchen" vs "wedding" is left
    to the subject check)."""
    if is_chinese(thing):
        return thing[-2:] in text
    # "budget for the birthday party": the head is the word before the preposition, not "party".
    named = re.split(r"\s+(?:for|of|at|in|on|with|from|to)\s+", thing.lower(), maxsplit=1)
    words = [w for w in re.split(r"[\s'’\-/]+", " ".join(named)) if w and w not in _THING_FILLER]
    head_words = [w for w in re.split(r"[\s'’\-/]+", named[0]) if w and w not in _THING_FILLER]
    if not head_words:
        return False
    # Every word must be there: "the home office budget" is not "the budget for the trip to Japan".
    return all(
        re.search(rf"\b{re.escape(re.sub(r'(?<=[a-z]{3})s$', '', w))}(?:s|es)?\b", text, re.IGNORECASE)
        for w in {head_words[-1], *words}
    )


# ---------------------------------------------------------------------------- retractions
# "I'm not vegetarian anymore", "I don't smoke anymore", "I'm no longer subscribed to Audible",
# "I stopped going to pottery", "Cancelled Disney+ yesterday", "I'm off metformin now".
_RX_END = (
    r"(?P<x>[a-z0-9+][a-z0-9+'’\- ]{1,40}?)\s*"
    r"(?=\banymore\b|\bany more\b|\bnow\b|\bas of\b|\byesterday\b|\bthis\b|\blast\b|[,.;:!?—–]|$)"
)
_RETRACT_EN = (
    re.compile(r"\b(?:i|we)(?:['’]m| am|['’]re| are)\s+(?:not|no longer)\s+(?:a |an |the )?" + _RX_END, re.IGNORECASE),
    re.compile(
        r"\b(?:i|we)\s+(?:don['’]t|do not)\s+(?P<x>[a-z0-9+][a-z0-9+'’\- ]{1,40}?)\s+(?:anymore|any more)\b",
        re.IGNORECASE,
    ),
    re.compile(r"\b(?:i|we)\s+no longer\s+" + _RX_END, re.IGNORECASE),
    re.compile(
        r"(?:^|\b(?:i|we)\s+(?:['’]ve\s+|have\s+)?(?:just\s+|finally\s+|already\s+)?)"
        r"(?:quit|stopped|cancell?ed|gave up(?: on)?|dropped out of|stepped down from|got rid of|turned off|disabled)"
        r"\s+(?:the |my |our |doing |going to )?" + _RX_END,
        re.IGNORECASE,
    ),
    re.compile(r"\b(?:i|we)(?:['’]m| am|['’]re| are)\s+(?:off|done with)\s+(?:the |my )?" + _RX_END, re.IGNORECASE),
)
_RETRACT_ZH = (
    # 我现在不吃素了 / 我已经不喝咖啡了 / 儿子不上足球课了 / 不熬夜了
    re.compile(r"(?:不再|已经不|再也不|现在不|都不|不)(?P<x>[\u4e00-\u9fffA-Za-z+]{2,8}?)了"),
    # 腾讯视频会员我取消了 / 烟戒了 / 外卖兼职不干了 / 生酮我放弃了
    re.compile(
        r"(?:^|[，,。])(?P<x>[\u4e00-\u9fffA-Za-z+]{1,10}?)(?:我|我们|都|也|已经|早就)*"
        r"(?:戒了|停了|减停了|退了|退订了|退租了|退学了|注销了|关掉了|关了|取消了|辞了|拆了|卖了|拔了|放弃了|弃剧了|没续费"
        r"|到期没续|不学了|不干了|不做了|不上了|不用了|不练了|不去了|不种了)"
    ),
    # 我退出业委会了 / 取消了健身卡
    re.compile(r"(?:退出了?|取消了|退掉了?|停掉了?)(?P<x>[\u4e00-\u9fffA-Za-z+]{2,10}?)(?:了|[，,。！!]|$)"),
)
# Not a state someone keeps: "I don't know anymore", "我不那么焦虑了", "I'm not sure".
_RETRACT_NOT_STATES_EN = re.compile(
    r"^(?:sure|know|think|care|feel|remember|understand|get it|mind|want|need to|have to|going|able|allowed|ready"
    # Leaving to do something ("I'm off to do some taekwondo!"), a negated intention ("I'm not gonna let
    # anything stop me") or a negated ending ("I'm not giving up"): nothing stops holding.
    r"|to|gonna|gon na|about to|giving up|quitting|stopping|leaving|letting|kidding|joking|trying"
    r"|alone|afraid|worried|scared|happy|sad|angry|mad|upset|tired|stressed|so|that|very|too|really|even|quite"
    r"|like|love|enjoy|prefer|hate|dislike"  # a liking: the opposite-liking rule compares its object
    r"|just|only|much|many|at all|the only|one|it|them|this|a fan of it)\b",
    re.IGNORECASE,
)
_RETRACT_NOT_STATES_ZH = re.compile(
    r"^(?:那么|太|很|怎么|知道|想|会|能|要|够|敢|好|舒服|开心|难过|害怕|担心|用|是|在|再|一样)"
)
_LIGHT = frozenset(
    (  # noqa: SIM905 - a word list reads better as words
        "a an the to my our your his her their for with at in on of up one it them that this anymore any more now"
        " really even lol need have has do doing use using go going take taking get getting be being been off"
    ).split()
)


def _stem(word: str) -> str:
    for suffix in ("ing", "ed", "es", "s", "e"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def retraction(text: str) -> str | None:
    """What the user says no longer holds ("vegetarian", "smoke", "喝咖啡", "烟"), or None."""
    text = " ".join(text.split())
    zh = is_chinese(text)
    for pattern in _RETRACT_ZH if zh else _RETRACT_EN:
        for m in pattern.finditer(text):
            thing = m.group("x").strip(" '’-")
            if thing and not (_RETRACT_NOT_STATES_ZH if zh else _RETRACT_NOT_STATES_EN).match(thing):
                return thing.lower()
    return None


def _content_words(text: str) -> set[str]:
    return {_stem(w) for w in re.findall(r"[a-z0-9+]+", text.lower()) if w not in _LIGHT}


_NEGATED_EN = re.compile(
    r"\b(?:not|never|no longer|don['’]t|doesn['’]t|didn['’]t|isn['’]t|aren['’]t|stopped|quit)\b", re.IGNORECASE
)


def retracts(thing: str, old_text: str) -> bool:
    """``old_text`` asserts what the retraction ends: every content word of ``thing`` ("bike to
    work" after "I don't bike to work anymore"), and the old statement is not itself a negation."""
    if is_chinese(thing):
        core = thing.replace("的", "")
        return bool(core) and core in old_text.replace("的", "") and f"不{core[:1]}" not in old_text
    words = _content_words(thing)
    return bool(words) and words <= _content_words(old_text) and not _NEGATED_EN.search(old_text)
