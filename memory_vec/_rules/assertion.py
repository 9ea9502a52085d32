"""What a statement asserts: its modality, whether it is a state or an event, and its entity.

Conflict-overwrite asks one question of a new statement before any value is
compared: *does it assert, now, a value that holds until changed?* Only then
may it replace an older value of the same owner, entity and attribute. The
rest is stored as what it is and never replaces anything:

* **modality**: ``asserted`` (now), ``past`` ("used to", "last year", 去年),
  ``hypothetical`` ("suppose", "if … were", 假设, 如果…的话), ``reported``
  ("he told me", "according to", 同事说, 听说), ``question``, ``planned``
  ("might", "thinking of", 打算, 下个月可能), ``echo`` (the assistant's words);
* **kind**: a ``state`` (budget, address, name, schedule, a liking) or an
  ``event`` (something that happened at a time: "I ran 5 km on Monday"); events
  accumulate, they never supersede;
* **entity**: an identifier that names *which* thing ("room 101", "3号床",
  "flight LH 402"): two statements about different entities never supersede.

English and Chinese. Pure: no I/O.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass

from memory_vec._rules.facts import is_chinese, is_question

__all__ = ["Assertion", "Kind", "Modality", "assess", "says_changed", "why_not_superseding"]


class Modality(str, enum.Enum):
    """How a statement holds its value. Stored as the ``modality`` metadata field."""

    ASSERTED = "asserted"
    PAST = "past"
    HYPOTHETICAL = "hypothetical"
    REPORTED = "reported"
    QUESTION = "question"
    PLANNED = "planned"
    ECHO = "echo"


class Kind(str, enum.Enum):
    STATE = "state"
    EVENT = "event"


@dataclass(frozen=True)
class Assertion:
    modality: Modality
    kind: Kind
    #: Identifiers naming which thing ("room 101", "3号床"), lower-cased; empty when none.
    entities: frozenset[str] = frozenset()
    #: The words that decided the modality or kind (for the trace).
    cue: str = ""
    #: Says its value changed or corrects it ("moved to room 5B", "my bad, it's room 402").
    changed: bool = False


# An update marker wins over a past or plan cue: "it was 5000 but now it's 8000",
# "原来是5000，现在改成8000了", "we moved it to Thursday".
_UPDATE_EN = re.compile(
    r"\b(?:now|currently|these days|nowadays|from now on|anymore|any more|no longer|no more|not \w+ anymore"
    r"|(?:has|have|had|was|were|got|been)\s+(?:just\s+)?(?:changed|moved|raised|lowered|increased|decreased|cut"
    r"|bumped|updated|renamed|switched|pushed|extended|reduced|shifted|rescheduled|upped|dropped)"
    r"|(?:changed|moved|raised|lowered|increased|decreased|bumped|updated|switched|upped|reduced|shifted"
    r"|rescheduled|pushed|dropped|cut|hiked|lowered)\b[^.!?]{0,40}\bto\b|instead of|rather than|not \S+ but|correction"
    r"|i meant|i mean|actually|typo|oops|my bad|sorry|after all|scratch that|no wait|misread|correct myself"
    r"|not \S+,? (?:it's|it is)"
    r"|(?:it's|it is) \S+,? not)\b",
    re.IGNORECASE,
)
_UPDATE_ZH = re.compile(
    r"现在|目前|如今|改成|改为|改到|改叫|改名|换成|换到|换了|调整|调到|调成|变成|变为|升到|涨到|降到|降为|提高到|增加到"
    r"|减少到|减到|推迟到|提前到|挪到|搬到|搬去|不再|已经不|不.{0,6}了$|不对|说错了|更正|其实是|从.{1,12}(?:改|变|调|换|涨|降)"
    r"|打错了|写错了|记错了|看错了|搞错了|口误|纠正|不是.{1,12}[，,是]|应该是"
)

_RECENT = re.compile(
    r"\blast (?:week|weekend|night|month|time)\b|\bjust\b|上周|上星期|上礼拜|上个?月|刚", re.IGNORECASE
)
_NOW_EN = re.compile(r"\b(?:now|currently|these days|nowadays|from now on|as of (?:today|now))\b", re.IGNORECASE)
_NOW_ZH = re.compile(r"现在|目前|如今|眼下")
_STARTED = re.compile(r"\b(?:as of|since|starting|effective)\s+$|从$", re.IGNORECASE)

_PAST_EN = re.compile(
    r"\b(?:used to|use to|formerly|previously|originally|at first|at the time|back then|back in|in the past"
    r"|once upon|when i was|when we were|as a (?:kid|child|student)|in (?:college|school|high school)"
    r"|last (?:year|month|week|summer|winter|spring|fall|autumn|time|semester|quarter|season)"
    r"|(?:a|one|two|three|four|five|six|ten|\d+) (?:years?|months?|weeks?|decades?) ago|years ago"
    r"|before (?:that|the move|covid|i moved|we moved)|in (?:19|20)\d\d\b(?=[^.!?]*\b(?:was|were|had|paid|cost)\b)"
    r"|(?:was|were|had|paid|cost)\b[^.!?]*\bin (?:19|20)\d\d\b|in my (?:teens|twenties|thirties|forties|fifties|youth)"
    r"|during (?:college|school|finals|the pandemic|lockdown|my|our|the)"
    r"|when (?:i|we) (?:lived|worked|was|were|had|started)"
    r"|(?:was|were|had been)\b[^.!?]*\b(?:until|till|before) "
    r"|\b(?:my|our) (?:first|old|previous|former|last)\b[^.!?]{0,30}\b(?:was|were|had)\b)",
    re.IGNORECASE,
)
_PAST_ZH = re.compile(
    r"以前|之前|原来|原先|原本|曾经|过去|当时|那时|那会儿|当年|去年|前年|上个?月|上周|上星期|上礼拜|小时候|上学时|以往|早先|早些年"
    r"|(?:几|两|三|\d+)年前|那几年|那年|刚开始|一开始|的时候|那时候|当初|起初|早年|第一次|头一回|前是|前的"
    r"|(?:大学|高中|初中|小学|读书|上学|念书|实习|单身)(?:时|那会|那阵)|(?:19|20)\d\d年(?=[^，。,]{0,8}?(?:才|还只|那会|的时候|时候))"
)

_HYPOTHETICAL_EN = re.compile(
    r"^(?:(?:ok(?:ay)?|so|well|but|and|hmm|just)[,\s]+)*(?:suppose|supposing|let'?s say|let us say|say|imagine"
    r"|what if|if|in case|assuming|assume|hypothetically|pretend|even if|unless|in theory|theoretically)\b"
    r"|\b(?:i wish|we wish|if only|were to|would be|would have|would cost|could be|if it were|if we had"
    r"|in a perfect world|in an ideal world|dream (?:is|would be)|hypothetically|for the sake of argument)\b",
    re.IGNORECASE,
)
_HYPOTHETICAL_ZH = re.compile(
    r"^(?:嗯|那|那么|就)?[，,\s]*(?:假设|假如|如果|要是|万一|假使|倘若|设想|比如说|比方说|打个比方|即使|就算|哪怕)"
    r"|的话(?![费题筒剧语术梅])|但愿|要是.*就好了|真希望|我希望|巴不得|理想(?:情况|状态)下|想象一下"
)

_REPORTED_EN = re.compile(
    r"\b(?:according to|i heard|i've heard|we heard|heard that|apparently|allegedly|supposedly|rumou?r has it"
    r"|word is|people say|they say|it is said|reportedly)\b"
    r"|^(?:(?:ok(?:ay)?|so|well|but|and|also|btw)[,\s]+)*(?!i\b|we\b|i'm\b)(?:[a-z']+\s+){0,3}?[a-z']+\s+"
    r"(?:said|says|told me|tells me|told us|mentioned|claims|claimed|thinks|thought|believes|reckons|insists"
    r"|swears|wrote|texted|emailed|informed me|let me know|suggested|figures|guesses|assumes|is convinced)\b"
    r"|\b(?!i\b|we\b)[a-z]+\s+(?:heard|hears|told me|told us|tells me|says|said)\b(?!\s+(?:of|about|no|yes|hi)\b)",
    re.IGNORECASE,
)
_REPORTED_ZH = re.compile(
    r"听说|据说|据.{1,8}(?:说|讲|称|透露)|传言|有人说|别人说|大家都说|好像说"
    r"|^(?!我[说讲觉认以]|我们)[^，,。！？!?]{1,8}?(?:说(?![错少多漏反成])|讲|告诉我|跟我说|和我说|提到(?![\d零一二两三四五六七八九十百千万])|觉得|认为|以为|表示|声称|透露|发消息说)"
)

_PLAN_EN = re.compile(
    r"\b(?:might|may(?!\s*\d)|maybe|perhaps|possibly|probably|could|planning|(?<!phone )(?<!data )plan to|plans to"
    r"|(?<!stopped )(?<!quit )(?<!started )going to|gonna"
    r"|(?<!was )(?<!were )thinking of|thinking about|considering|consider|intend|intending|hoping to|hope to"
    r"|want to|wanna|(?<![a-z])(?:i|we)['’]ll|next time"
    r"|would like to|'d like to"
    r"|aiming to|aim to|about to|looking into|tempted to|debating|might as well|potentially|eventually|someday"
    r"|one day|in the future|at some point|soon-ish|if all goes well|will (?:probably|likely|maybe|possibly))\b",
    re.IGNORECASE,
)
_PLAN_ZH = re.compile(
    r"打算|准备|考虑|计划|讨论|商量|要不要|想要|想把|想换|想搬|想改|想去|可能|也许|或许|大概|说不定|估计|也说不定"
    r"|将来|以后可能|有望|争取|希望能|预计|到时候|回头|改天|等.{1,6}再"
)

# An event: something done at a time, by the speaker; a change verb makes it a state update.
_EVENT_EN = re.compile(
    r"(?:^|\b(?:i|we|i've|we've)\s+)(?:just\s+|finally\s+|also\s+|then\s+)?"
    r"(?:ran|run|walked|swam|hiked|biked|cycled|rode|jogged|watched|saw|visited|ate|had|drank|cooked|baked|bought"
    r"|purchased|ordered|read|finished|played|went|attended|met|called|phoned|texted|emailed|spent|paid|took"
    r"|made|did|wrote|sent|received|got back|came back|flew|drove|caught|lost|won|scored|tried|tested|fixed"
    r"|cleaned|painted|planted|picked|booked|returned|gave|hosted|celebrated|danced|sang|practiced|practised"
    r"|studied|learned|learnt|lifted|trained|climbed|skied|surfed|fished|camped|travel(?:l)?ed|toured|stopped by"
    r"|dropped by|picked up|hung out|caught up|slept|filled up|filled|grabbed|spent|visited|hit|did|saw|got)\b",
    re.IGNORECASE,
)
_TIME_ANCHOR_EN = re.compile(
    r"\b(?:yesterday|today|tonight|this (?:morning|afternoon|evening|week|weekend)|last (?:night|weekend)"
    r"|on (?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|the \d+)|(?:monday|tuesday|wednesday"
    r"|thursday|friday|saturday|sunday)(?: (?:morning|afternoon|evening|night))?|earlier|just now|\d+ days? ago"
    r"|at lunch|after work|over the weekend|in the (?:morning|afternoon|evening)|for (?:lunch|dinner|breakfast)"
    r"|again|on (?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]* \d+|another)\b",
    re.IGNORECASE,
)
# Any verb in the past tense, or a passive, with a time anchor: "the flight was delayed on May 2",
# "we celebrated on Friday" (an irregular verb outside _EVENT_EN still needs its entry there).
_PAST_VERB_EN = re.compile(r"\b(?:i|we|he|she|they|it|was|were)\s+(?:just\s+|finally\s+)?[a-z]{3,}ed\b", re.IGNORECASE)
_CHANGE_VERB_EN = re.compile(
    r"\b(?:moved|changed|switched|raised|lowered|increased|decreased|bumped|renamed|updated|upgraded|downgraded"
    r"|replaced|reduced|extended|postponed|rescheduled|quit|stopped|joined|left|started|became|sold|cancel(?:l)?ed"
    r"|got (?:married|divorced|promoted|engaged|a new)|now|anymore|no longer|got rid of|gave up|took [\w\s]{0,20}off"
    r"|turned off|broke up|done with|no more|went (?:up|down)|got a raise|(?:is|are|'s) (?:up|down) to)\b",
    re.IGNORECASE,
)
_EVENT_ZH = re.compile(
    r"(?:跑|走|游|骑|爬|看|吃|喝|买|去|做|写|玩|打|参加|见|逛|花|付|点|订|读|听|学|练|拍|做了|逛了|唱|跳|钓|逛|聚|约|送|收到|拿到)"
    r"(?:了|过)"
)
_TIME_ANCHOR_ZH = re.compile(
    r"昨天|今天|前天|今早|今晚|昨晚|刚才|刚刚|上午|下午|晚上|早上|中午|周[一二三四五六日天末]|星期[一二三四五六日天]|礼拜[一二三四五六日天]"
    r"|这周|这个周末|上周末|\d+号|\d+月\d+[日号]|又"
)
_CHANGE_VERB_ZH = re.compile(
    r"改|换|搬|调|变|涨|降|升|增|减|推迟|提前|取消|不再|已经不|辞|离职|入职|加入|停|戒|退|分手|离婚|不.{0,4}了"
)

# "room 101", "flat 3B", "gate B12", "table #4", "LH 402"; "3号床", "101室", "2号线", "A座".
_ENTITY_EN = re.compile(
    r"\b(?P<noun>room|rm|flat|apartment|apt|unit|suite|table|gate|seat|bus|line|route|flight|order|ticket|case"
    r"|invoice|account|building|bldg|floor|house|bed|ward|class|grade|lane|platform|terminal|locker|desk|office"
    r"|lot|plot|stall|booth|court|field|bay|dock|cabin|car|train|block|section|row|aisle|door|pod|server|machine"
    r"|station|ward|cell|box|shelf|bin|tank|cage|kennel|stable|villa|cottage|studio|lab|clinic|branch|store|shop"
    r"|project|phase|sprint|module|chapter|lesson|unit|level|number|no\.?|#)\s*#?(?P<id>[a-z]?\d+[a-z]?)\b"
    r"|\b(?P<noun_l>room|gate|building|wing|lot|terminal|line|team|group|plan|option|tier|section|block|court)\s+"
    r"(?P<letter>[A-Z])\b",
    re.IGNORECASE,
)
_ENTITY_ZH = re.compile(
    r"(?<!月)(?<![\d月])(?P<id>[A-Za-z]?\d+[A-Za-z]?)\s*(?P<noun>号床|号楼|号房|号线|号桌|号门|号柜|号车|室|房|栋|楼|层|床|座|班|组|车厢|排|区|单元|路)"
    r"|(?P<noun2>房间|病房|会议室|教室|宿舍|航班|订单|账户|车次|桌|床位)\s*(?P<id2>[A-Za-z]*\d+[A-Za-z]?)"
)


def _entities(text: str) -> frozenset[str]:
    found = set()
    for m in _ENTITY_EN.finditer(text):
        if m.group("noun"):
            found.add(f"{m.group('noun').lower().rstrip('.')} {m.group('id').lower()}")
        elif m.group("letter").isupper():  # "room A", not "plan a trip"
            found.add(f"{m.group('noun_l').lower()} {m.group('letter').lower()}")
    for m in _ENTITY_ZH.finditer(text):
        if m.group("id"):
            found.add(f"{m.group('id').lower()}{m.group('noun')}")
        else:
            found.add(f"{m.group('noun2')}{m.group('id2').lower()}")
    return frozenset(found)


def _modality(text: str, role: str) -> tuple[Modality, str]:
    if role != "user":
        return Modality.ECHO, role
    if is_question(text) or text.rstrip().endswith(("?", "？")):
        return Modality.QUESTION, "?"
    zh = is_chinese(text)
    hypothetical, reported, past, plan, update = (
        (_HYPOTHETICAL_ZH, _REPORTED_ZH, _PAST_ZH, _PLAN_ZH, _UPDATE_ZH)
        if zh
        else (_HYPOTHETICAL_EN, _REPORTED_EN, _PAST_EN, _PLAN_EN, _UPDATE_EN)
    )
    # Hypothetical and reported frame the whole statement, whatever else it says.
    for modality, pattern in ((Modality.HYPOTHETICAL, hypothetical), (Modality.REPORTED, reported)):
        if m := pattern.search(text):
            return modality, m.group(0)
    # "It was 5000 but now it's 8000": a past value followed by the current one asserts the current one.
    # A change dated recently ("I moved to Lyon last weekend") is an update; one dated long ago ("last
    # year we raised it to 8000", "去年把预算改成8000") tells history unless "now" follows.
    # "divorced as of last month", "vegan since last year": the time a current state began.
    m = next((m for m in past.finditer(text) if not _STARTED.search(text, 0, m.start())), None)
    if m and not _updates_after_past(text, m.group(0), update, zh):
        return Modality.PAST, m.group(0)
    # "We might raise it to 9000": the change is inside the plan; only a later "now" asserts.
    if (m := plan.search(text)) and not (_NOW_ZH if zh else _NOW_EN).search(text, m.end()):
        return Modality.PLANNED, m.group(0)
    return Modality.ASSERTED, ""


_CHANGE_WORD = re.compile(
    r"chang|mov|rais|lower|increas|decreas|cut|bump|updat|renam|switch|push|extend|reduc|shift|reschedul|upp"
    r"|dropp|hik|改|换|调|变|升|涨|降|提高|增加|减|推迟|提前|挪|搬",
    re.IGNORECASE,
)


def _updates_after_past(text: str, past_cue: str, update: re.Pattern[str], zh: bool) -> bool:
    """A past cue with an update marker: the statement asserts the value now, unless the only marker
    is a change verb and the cue is long ago ("last year we raised it to 8000" tells history)."""
    markers = [m.group(0) for m in update.finditer(text)]
    if not markers:
        return False
    if _RECENT.search(past_cue) or (_NOW_ZH if zh else _NOW_EN).search(text):
        return True
    return any(not _CHANGE_WORD.search(marker) for marker in markers)


def _kind(text: str) -> tuple[Kind, str]:
    if says_changed(text):
        return Kind.STATE, ""  # "sorry, I got that wrong, ...": a correction of a value, not an event
    if is_chinese(text):
        m = _EVENT_ZH.search(text)
        # Dated: "我们邀请了20位客人" sets a count that holds, "我周一跑了5公里" happened once.
        if m and not _CHANGE_VERB_ZH.search(text) and _TIME_ANCHOR_ZH.search(text):
            return Kind.EVENT, m.group(0)
        return Kind.STATE, ""
    m = _EVENT_EN.search(text) or (_TIME_ANCHOR_EN.search(text) and _PAST_VERB_EN.search(text))
    if m and not _CHANGE_VERB_EN.search(text):
        return Kind.EVENT, m.group(0)
    return Kind.STATE, ""


def assess(text: str, role: str = "user") -> Assertion:
    """What ``text`` (said by ``role``) asserts. See the module docstring."""
    text = " ".join(text.split())
    modality, cue = _modality(text, role)
    kind, kind_cue = _kind(text)
    return Assertion(modality, kind, _entities(text), cue or kind_cue, says_changed(text))


def says_changed(text: str) -> bool:
    """The statement says its value changed ("now", "moved to", "no longer", "改成", "调整为")."""
    return bool((_UPDATE_ZH if is_chinese(text) else _UPDATE_EN).search(text))


def why_not_superseding(new: Assertion, old: Assertion) -> str:
    """The reason ``new`` may not replace ``old`` ("" when it may, as far as the model goes).

    Values, subjects and owners are compared by the resolver afterwards; this
    is the gate before it: only an asserted-now state replaces an asserted
    state, and never one about another entity.
    """
    if new.modality is not Modality.ASSERTED:
        return f"new is {new.modality.value} ({new.cue})"
    if old.modality is not Modality.ASSERTED:
        return f"old is {old.modality.value}"
    if new.kind is Kind.EVENT or old.kind is Kind.EVENT:
        return f"an event ({new.cue or 'old'}) accumulates"
    if new.entities and old.entities and not new.entities & old.entities and not _renumbered(new, old):
        return f"another entity ({', '.join(sorted(new.entities))})"
    return ""


def _noun(entity: str) -> str:
    return entity.split()[0] if " " in entity else re.sub(r"^[A-Za-z]?\d+[A-Za-z]?", "", entity)


def _renumbered(new: Assertion, old: Assertion) -> bool:
    """ "They moved the workshop to room 5B", "my bad, it's room 402": a changed number of the same
    kind of thing, said as a change."""
    return new.changed and {_noun(e) for e in new.entities} == {_noun(e) for e in old.entities}
