"""Whose fact is it: the user's, a relative's or colleague's, a named person's.

A statement about someone else ("my colleague's budget is 3000", "我妈今年
60岁") must never supersede the user's own fact ("the budget is now 8000",
"我今年35岁"). :func:`detect_owner` finds the holder of a sentence's fact,
:func:`qualify` turns a subject key into an owner-qualified one
("colleague/budget"; the user's keys stay unqualified, so records stored
before owners existed keep their meaning) and :func:`owner_of` reads the
owner back from a stored fact. Pure functions, English and Chinese.

The holder of a clause is what it starts with (after lead-ins, hedges such as
"I think" and a reporter such as "my boss said"): a relation ("my wife",
"our son", "Mom's", "我老婆", "我同事", "我妈"), a person's name ("Anna's",
"李华的"), a third-person pronoun ("her budget", "他今年…": the person named
earlier in the message, else ``"other"``) or the user ("I", "my", "我").
The sentence's owner is the holder of its last clause that has one ("Sorry,
I got that wrong, my sister's name is Grace" is about the sister).
"""

from __future__ import annotations

import re

__all__ = [
    "EN_PERSON",
    "OTHER",
    "USER",
    "ZH_PERSON",
    "ZH_SURNAMES",
    "detect_owner",
    "normalize_owner",
    "owner_of",
    "qualify",
    "split_key",
    "subject_holder",
]

USER = "user"
OTHER = "other"  # a third person the text does not name

# Synonyms share one label; different people keep different labels ("boss" is not "manager").
# Not service providers ("my doctor's appointment", "my teacher's class" are the user's).
_EN_KIN = {
    "wife": "wife",
    "husband": "husband",
    "partner": "partner",
    "spouse": "spouse",
    "boyfriend": "boyfriend",
    "girlfriend": "girlfriend",
    "fiance": "fiance",
    "fiancé": "fiance",
    "fiancee": "fiance",
    "fiancée": "fiance",
    "mom": "mother",
    "mum": "mother",
    "mother": "mother",
    "mommy": "mother",
    "mama": "mother",
    "dad": "father",
    "father": "father",
    "daddy": "father",
    "papa": "father",
    "parents": "parents",
    "sister": "sister",
    "brother": "brother",
    "sibling": "sibling",
    "son": "son",
    "daughter": "daughter",
    "kid": "child",
    "toddler": "child",
    "child": "child",
    "kids": "children",
    "children": "children",
    "baby": "baby",
    "grandma": "grandmother",
    "grandmother": "grandmother",
    "granny": "grandmother",
    "grandpa": "grandfather",
    "grandfather": "grandfather",
    "grandparents": "grandparents",
    "uncle": "uncle",
    "aunt": "aunt",
    "auntie": "aunt",
    "cousin": "cousin",
    "niece": "niece",
    "nephew": "nephew",
    "mother-in-law": "mother-in-law",
    "father-in-law": "father-in-law",
    "in-laws": "in-laws",
    "stepmother": "stepmother",
    "stepfather": "stepfather",
    "stepson": "stepson",
    "stepdaughter": "stepdaughter",
    "friend": "friend",
    "best friend": "best friend",
    "bestie": "best friend",
    "buddy": "friend",
    "colleague": "colleague",
    "coworker": "colleague",
    "co-worker": "colleague",
    "workmate": "colleague",
    "boss": "boss",
    "manager": "manager",
    "supervisor": "supervisor",
    "teammate": "teammate",
    "assistant": "assistant",
    "employee": "employee",
    "client": "client",
    "customer": "customer",
    "neighbor": "neighbor",
    "neighbour": "neighbor",
    "roommate": "roommate",
    "flatmate": "roommate",
    "housemate": "roommate",
    "classmate": "classmate",
    "landlord": "landlord",
    "landlady": "landlord",
    "tenant": "tenant",
}
_ZH_KIN = {
    "老婆": "妻子",
    "妻子": "妻子",
    "太太": "妻子",
    "媳妇": "妻子",
    "爱人": "妻子",
    "夫人": "妻子",
    "老公": "丈夫",
    "丈夫": "丈夫",
    "男朋友": "男朋友",
    "男友": "男朋友",
    "女朋友": "女朋友",
    "女友": "女朋友",
    "对象": "对象",
    "未婚妻": "未婚妻",
    "未婚夫": "未婚夫",
    "妈妈": "妈妈",
    "妈": "妈妈",
    "老妈": "妈妈",
    "母亲": "妈妈",
    "爸爸": "爸爸",
    "爸": "爸爸",
    "老爸": "爸爸",
    "父亲": "爸爸",
    "父母": "父母",
    "爸妈": "父母",
    "哥哥": "哥哥",
    "哥": "哥哥",
    "姐姐": "姐姐",
    "姐": "姐姐",
    "弟弟": "弟弟",
    "弟": "弟弟",
    "妹妹": "妹妹",
    "妹": "妹妹",
    "儿子": "儿子",
    "女儿": "女儿",
    "孩子": "孩子",
    "小孩": "孩子",
    "宝宝": "孩子",
    "小宝": "孩子",
    "大宝": "孩子",
    "爷爷": "爷爷",
    "奶奶": "奶奶",
    "外公": "外公",
    "姥爷": "外公",
    "外婆": "外婆",
    "姥姥": "外婆",
    "叔叔": "叔叔",
    "阿姨": "阿姨",
    "舅舅": "舅舅",
    "姑姑": "姑姑",
    "婶婶": "婶婶",
    "岳父": "岳父",
    "岳母": "岳母",
    "公公": "公公",
    "婆婆": "婆婆",
    "表哥": "表哥",
    "表姐": "表姐",
    "表弟": "表弟",
    "表妹": "表妹",
    "堂哥": "堂哥",
    "堂姐": "堂姐",
    "堂弟": "堂弟",
    "堂妹": "堂妹",
    "同事": "同事",
    "老板": "老板",
    "领导": "领导",
    "上司": "上司",
    "经理": "经理",
    "同学": "同学",
    "同桌": "同桌",
    "室友": "室友",
    "邻居": "邻居",
    "朋友": "朋友",
    "好朋友": "朋友",
    "闺蜜": "闺蜜",
    "客户": "客户",
    "房东": "房东",
}
_ONE_CHAR_ZH = {"妈", "爸", "哥", "姐", "弟", "妹"}  # only right after 我 / 我的

_EN_KIN_ALT = "|".join(sorted((re.escape(k) for k in _EN_KIN), key=len, reverse=True))
_ZH_KIN_ALT = "|".join(sorted((k for k in _ZH_KIN if k not in _ONE_CHAR_ZH), key=len, reverse=True))
_ZH_ONE_ALT = "|".join(sorted(_ONE_CHAR_ZH))
_EN_MOD = r"(?:(?:older|younger|little|big|elder|baby|new|old|ex|step|twin|late)[- ]?)?"
_POSS = r"(?:'s|’s|s'|’)"

_LEAD = re.compile(
    r"^(?:(?:ok(?:ay)?|so|well|actually|also|and|but|hey|hi|oh|note that|remember that|fyi|by the way|btw"
    r"|just so you know|update|correction|heads up|sorry|these days|nowadays|lately|as for|for|about"
    r"|i think|i guess|i believe|i heard|i just (?:learned|found out|heard)|i found out|i know|apparently"
    r"|it seems|it turns out)\b(?:\s+that\b)?[,:\s]*)+"
    r"|^(?:另外|还有|对了|记住|注意|更新一下|更新|更正一下|更正|我说错了|其实|我觉得|我听说|听说|我记得|好像|据说|顺便说一下)[，,：:\s]*",
    re.IGNORECASE,
)
# "my boss said (that) …", "我妈说…": the reporter is an antecedent, the report is the clause.
_REPORT = re.compile(
    r"^(?P<who>.{1,40}?)\s+(?:said|says|told me|tells me|mentioned|thinks|wrote)\s+(?:that\s+)?"
    r"|^(?P<zh>.{1,8}?)(?:说|告诉我|跟我说|提到)(?:了)?[，,：:]?",
    re.IGNORECASE,
)
_CLAUSE = re.compile(r"[,;:，；：]|\s-\s|\s—\s|\bbut\b|但是?|不过")  # one space each side: linear

# "my wife", "our son's", "the user's boss"; without a possessive pronoun only as
# a possessor ("Mom's flight", "the boss's budget"): "the client meeting" is no one's.
_EN_KIN_HOLDER = re.compile(
    rf"^(?:(?:(?:my|our|your|the user{_POSS}|user{_POSS})\s+){_EN_MOD}(?P<kin>{_EN_KIN_ALT})(?![a-z])"
    rf"|(?:the\s+)?{_EN_MOD}(?P<kin_poss>{_EN_KIN_ALT}){_POSS}(?=\s|$))(?P<rest>.*)$",
    re.IGNORECASE,
)
_EN_KIN_INSIDE = re.compile(rf"\b(?:my|our|the user{_POSS})\s+{_EN_MOD}(?P<kin>{_EN_KIN_ALT})(?![a-z])", re.IGNORECASE)
_ZH_KIN_INSIDE = re.compile(rf"(?:我们|我|咱们)的?(?P<kin>{_ZH_KIN_ALT}|{_ZH_ONE_ALT}(?![们伦斯比]))")
_EN_OF_KIN = re.compile(
    rf"^the\s+[a-z]+(?:\s[a-z]+)?\s+of\s+(?:my|our)\s+{_EN_MOD}(?P<kin>{_EN_KIN_ALT})\b", re.IGNORECASE
)
# "your" too: the assistant's echo of the user's fact ("your budget is 5000").
_EN_SELF = re.compile(
    r"^(?:i|i'm|i’m|i've|i’ve|i'll|i’ll|i'd|i’d|me|my|mine|we|we're|we’re|we've|our|us"
    r"|your|the user|user)(?![a-z])",
    re.IGNORECASE,
)
_EN_PRONOUN = re.compile(r"^(?:he|she|he's|she's|his|her|hers)(?![a-z])|^their\s+[a-z]", re.IGNORECASE)
# "Anna's budget", or a name doing something a person does ("Tom works at …", "Anna is 34").
_EN_NAME = re.compile(
    rf"^(?P<name>[A-Z][a-z]{{2,}})(?:(?P<poss>{_POSS})(?=\s|$)|\s+(?=(?:is|was|works|worked|lives|lived|moved"
    r"|turned|turns|flies|leaves|left|has|had|just|now|will|wants|likes|loves|hates|prefers|doesn't|does not"
    r"|earns|makes|got|bought|joined|started|quit|studies|teaches|drives)\b))"
)
_EN_FIRST_PERSON = re.compile(r"\b(?:I|I'm|I’m|me|my|mine|we|our|us)\b")
# Capitalised words that start a clause without naming a person.
_NOT_NAMES = {
    "the",
    "this",
    "that",
    "these",
    "those",
    "there",
    "here",
    "what",
    "which",
    "who",
    "when",
    "where",
    "why",
    "how",
    "it",
    "its",
    "today",
    "tomorrow",
    "yesterday",
    "tonight",
    "now",
    "then",
    "next",
    "last",
    "every",
    "everyone",
    "everybody",
    "someone",
    "somebody",
    "nobody",
    "let",
    "please",
    "thanks",
    "thank",
    "yes",
    "no",
    "sure",
    "great",
    "cool",
    "nice",
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
    "christmas",
    "easter",
    "our",
    "your",
    "their",
    "they",
    "one",
    "all",
    "both",
    "each",
    "some",
    "any",
    "many",
    "most",
    "rent",
    "dinner",
    "lunch",
    "breakfast",
    "work",
    "school",
    "got",
    "noted",
    "understood",
    "done",
    "perfect",
    "alright",
    "welcome",
    "good",
    "hello",
    "hey",
    "sorry",
    "wow",
    "well",
    "also",
    "okay",
    "everything",
    "nothing",
    "something",
    "traffic",
    "weather",
    "rain",
    # adverbs and interjections that open a clause: "Just got a raise", "Finally moved to Lyon"
    "just",
    "finally",
    "recently",
    "lately",
    "actually",
    "still",
    "already",
    "honestly",
    "basically",
    "anyway",
    "apparently",
    "luckily",
    "sadly",
    "unfortunately",
    "maybe",
    "probably",
    "definitely",
    "currently",
    "seriously",
    "oops",
    "update",
}
# What follows a person who starts a clause: "李强的…", "我同事今年…", "张敏爱吃…".
_ZH_AFTER_PERSON = (
    "的|家|今年|在|住|是|叫|也|已经|现在|下周|明天|每|要|刚|去|从|还|爱|喜欢|讨厌|不|很|最|都|说|想|会|有|跳槽|搬|换"
    "|周[一二三四五六日天末]|星期|礼拜|这|本|上个?|下个?"
)
_ZH_KIN_HOLDER = re.compile(
    rf"^(?:(?:我们|我|咱们|用户)(?:的)?(?:(?P<kin1>{_ZH_KIN_ALT})|(?P<one>{_ZH_ONE_ALT})(?![们伦斯比]))"
    rf"|(?P<kin2>{_ZH_KIN_ALT})(?={_ZH_AFTER_PERSON}))(?P<rest>.*)$"
)
_ZH_SELF = re.compile(r"^(?:我|咱|用户)")
_ZH_PRONOUN = re.compile(r"^(?:他|她)(?:们)?")
# Common surnames that rarely start another word; 小X / 老X / 阿X nicknames.
ZH_SURNAMES = "王李张刘陈杨赵吴徐孙朱胡郭郑梁宋唐冯邓曹彭肖袁蒋蔡魏吕丁沈姚崔谭汪廖贾韦邹秦邱薛闫侯邵覃"
_ZH_NAME_CORE = (
    rf"[{ZH_SURNAMES}][\u4e00-\u9fff]{{1,2}}?"
    r"|(?:小|老|阿)(?![区时说学组费家人鼠板师公婆妈爸孩])[\u4e00-\u9fff]"
)
_ZH_NAME = re.compile(rf"^(?P<name>{_ZH_NAME_CORE})(?={_ZH_AFTER_PERSON})")

#: Regex fragments for "another person" at the start of a phrase, used by
#: :mod:`memory_vec._rules.facts` for profile statements ("my wife works at …",
#: "Anna lives in …", "我老公在…工作", "李强今年23岁").
EN_PERSON = (
    rf"(?:(?:[Mm]y|[Oo]ur)\s+(?i:{_EN_MOD}(?:{_EN_KIN_ALT}))"
    r"|(?!(?:The|This|That|It|There|We|They|He|She|You|Now|Today)\b)[A-Z][a-z]{2,})"
)
ZH_PERSON = (
    rf"(?:(?:我们|我|咱们)的?(?:{_ZH_KIN_ALT}|{_ZH_ONE_ALT}(?![们伦斯比]))"
    rf"|(?:{_ZH_KIN_ALT})|(?:{_ZH_NAME_CORE}))"
)


def _canonical_kin(word: str) -> str:
    word = word.lower().replace("’", "'")
    return _EN_KIN.get(word) or _ZH_KIN.get(word) or word


def _clean(text: str) -> str:
    return _LEAD.sub("", text.strip()).strip()


def _clause_holder(clause: str) -> tuple[str | None, bool]:
    """(holder, is_pronoun) of a clause: who its fact is about, None if impersonal."""
    clause = _clean(clause)
    if not clause:
        return None, False
    m = _EN_KIN_HOLDER.match(clause)
    if m and not re.match(r"\s*(?:and|&)\s+(?:i|me)\b", m.group("rest"), re.IGNORECASE):
        return _canonical_kin(m.group("kin") or m.group("kin_poss")), False
    m = _EN_OF_KIN.match(clause)
    if m:
        return _canonical_kin(m.group("kin")), False
    m = _ZH_KIN_HOLDER.match(clause)
    if m and not re.match(r"(?:和|跟|与)(?:我)", m.group("rest")):
        return _canonical_kin(m.group("one") or m.group("kin1") or m.group("kin2")), False
    if _EN_SELF.match(clause) or _ZH_SELF.match(clause):
        return USER, False
    if _EN_PRONOUN.match(clause) or _ZH_PRONOUN.match(clause):
        return OTHER, True
    m = _EN_NAME.match(clause)
    if m and m.group("name").lower() not in _NOT_NAMES and (m.group("poss") or not _EN_FIRST_PERSON.search(clause)):
        return m.group("name").lower(), False
    m = _ZH_NAME.match(clause)
    if m:
        return m.group("name"), False
    return None, False


def detect_owner(sentence: str, *, context: str | None = None) -> str:
    """Who a sentence's fact is about: :data:`USER`, a relation label
    ("colleague", "妻子"), a lower-cased name, or :data:`OTHER`.

    ``context`` is the last person named earlier in the same message; a
    pronoun ("her budget", "她的航班") refers to it.
    """
    text = _clean(" ".join(sentence.split()))  # runs of spaces made the clause split quadratic
    antecedent = context
    report = _REPORT.match(text)
    if report:
        who, pronoun = _clause_holder(report.group("who") or report.group("zh") or "")
        if who not in (None, USER) and not pronoun:
            antecedent = who
        text = text[report.end() :]
    owner: str | None = None
    for clause in _CLAUSE.split(text):
        holder, pronoun = _clause_holder(clause)
        if holder is None:
            continue
        if pronoun:
            holder = antecedent or OTHER
        elif holder != USER:
            antecedent = holder
        owner = holder
    if owner is None:
        # No clause starts with anyone: a relation named inside an impersonal
        # statement holds it ("The airline moved my colleague's flight, it leaves at 9").
        m = _EN_KIN_INSIDE.search(text) or _ZH_KIN_INSIDE.search(text)
        if m:
            owner = _canonical_kin(m.group("kin"))
    return owner or USER


def subject_holder(subject: str) -> str | None:
    """The person a subject phrase belongs to: "colleague's budget" -> "colleague",
    "sister" -> "sister", "老婆的预算" -> "妻子", "her budget" -> :data:`OTHER`."""
    s = subject.strip()
    m = _EN_KIN_HOLDER.match("my " + s)
    if m and re.match(rf"(?:{_POSS})?(?:\s|$)", m.group("rest")):
        return _canonical_kin(m.group("kin"))
    m = _ZH_KIN_HOLDER.match("我" + s)
    if m and re.match(r"(?:的|$)", m.group("rest")):
        return _canonical_kin(m.group("one") or m.group("kin1") or m.group("kin2"))
    if re.match(r"(?:his|her|their)\s|(?:他|她)们?的", s, re.IGNORECASE):
        return OTHER
    return None


def normalize_owner(raw: object) -> str | None:
    """An owner label from free text (an LLM's ``owner`` field); None when unusable."""
    if not isinstance(raw, str):
        return None
    text = re.sub(r"\s+", " ", raw.strip().lower().replace("’", "'")).strip(" .:;\"'")
    text = re.sub(r"^(?:the user's|user's|my|our|the|我的|我们的|我|用户的)\s*", "", text)
    if text in ("", "user", "the user", "me", "i", "self", "myself", "speaker", "用户", "我", "自己", "本人"):
        return USER
    if text in ("other", "someone", "someone else", "third party", "他", "她", "他们", "他人", "别人"):
        return OTHER
    if text in _EN_KIN or text in _ZH_KIN:
        return _canonical_kin(text)
    text = text.replace("/", " ")
    return text if len(text) <= 40 else None


def split_key(key: str | None) -> tuple[str | None, str | None]:
    """(owner, attribute) of an owner-qualified key; (None, key) otherwise."""
    if not key or "/" not in key:
        return None, key
    owner, _, attribute = key.partition("/")
    if not owner or " " in owner:
        return None, key
    return owner, attribute or None


def qualify(subject: str | None, owner: str) -> str | None:
    """The owner-qualified subject key: ``"colleague/budget"``; the user's
    keys and keys naming only the person ("sister") stay as they are."""
    if not subject or owner == USER:
        return subject
    if split_key(subject)[0] is not None:
        return subject
    attribute = _strip_holder(subject, owner)
    if not attribute or attribute == owner:
        return owner
    return f"{owner}/{attribute}"


def _strip_holder(subject: str, owner: str) -> str:
    """ "colleague's budget" -> "budget"; "同事的预算" -> "预算"; "her age" -> "age"."""
    s = subject.strip()
    m = _EN_KIN_HOLDER.match(s) or _EN_KIN_HOLDER.match("my " + s)
    if m and _canonical_kin(m.group("kin") or m.group("kin_poss")) == owner:
        s = m.group("rest")
    else:
        m2 = _ZH_KIN_HOLDER.match(s) or _ZH_KIN_HOLDER.match("我" + s)
        if m2 and _canonical_kin(m2.group("one") or m2.group("kin1") or m2.group("kin2") or "") == owner:
            s = m2.group("rest")
        elif s.lower().startswith(owner):
            s = s[len(owner) :]
    s = re.sub(r"^(?:his|her|their|他的|她的|他们的|她们的|他|她)\s*", "", s.strip(), flags=re.IGNORECASE)
    return re.sub(r"^(?:'s|’s|s'|’|的)", "", s.strip()).strip()


def owner_of(subject: str | None, text: str) -> str:
    """The owner of a stored fact: from its qualified key, else from its text."""
    owner, _ = split_key(subject)
    return owner if owner is not None else detect_owner(text)
