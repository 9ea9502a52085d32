"""Rule-based signals about a sentence: is it a preference, a constraint,
a decision; does it carry numbers, dates, names; what subject does it set.

Pure functions shared by the extractive summarizer (which sentences to
keep, which newer sentence overrides an older one), importance scoring and
the conflict resolver. English and Chinese.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from memory_vec._rules.owners import EN_PERSON, OTHER, ZH_PERSON, detect_owner, qualify, subject_holder

__all__ = [
    "SentenceSignals",
    "analyze",
    "distinct_subjects",
    "extract_values",
    "is_chinese",
    "is_question",
    "mentions_subject",
    "owned_subject",
    "preference",
    "proper_names",
    "split_sentences",
    "subject_key",
    "subject_value",
]

_CJK = re.compile(r"[\u4e00-\u9fff]")
# After a full stop, never inside a number: "2.5 mg", "5000.50", "37.5度" are one sentence.
# Not inside "8.5", "leehome.net" or "example.com": a sentence's stop is not followed by a digit or lowercase letter.
_SENTENCE_SPLIT = re.compile(r"(?<=[。！？；])\s*|(?<=[.!?;])(?![\da-z])\s*|\n+")
_NUMBER = re.compile(
    r"(?<![A-Za-z0-9.])[-+]?\d[\d,]*(?:\.\d+)?"
    r"(?:\s?(?:%|k|K|万|千|元|块|美元|usd|USD|eur|EUR|kg|km|GB|MB|小时|天|年|月|岁|years?|days?|hours?|dollars?|euros?"
    r"|(?:am|pm|AM|PM)\b))?"
)
_DATE = re.compile(
    r"\b(?:\d{4}-\d{1,2}-\d{1,2}|\d{1,2}/\d{1,2}(?:/\d{2,4})?"
    r"|(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?\s+\d{1,2}"
    r"|(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|tomorrow|yesterday|today|next week|last week))\b"
    r"|\d{1,4}年\d{1,2}月(?:\d{1,2}[日号])?|\d{1,2}月\d{1,2}[日号]|(?:明天|昨天|今天|下周|上周|周[一二三四五六日天])",
    re.IGNORECASE,
)
# Not after a sentence end or a "Speaker: " prefix, where any word is capitalised.
_NAME = re.compile(r"(?<![.!?:]\s)(?<!^)\b[A-Z][a-z]{2,}(?:\s[A-Z][a-z]+)?\b")
# A Chinese name has no capital: "我家的狗叫豆豆", "她名叫李娜" name one.
_ZH_NAMED = re.compile(r"(?:名叫|名字是|名字叫|叫做|叫)([\u4e00-\u9fff]{1,4})")
# Capitalised words that start chat lines but name nobody ("Hey Mel", "Thanks, Anna").
_NOT_NAMES = {
    "hey",
    "hi",
    "hello",
    "thanks",
    "thank",
    "wow",
    "yeah",
    "yes",
    "oh",
    "the",
    "that",
    "this",
    "sounds",
    "glad",
    "awesome",
    "great",
    "sure",
    "well",
    "cool",
    "nice",
    "congrats",
    "sorry",
}

_PREFERENCE = re.compile(
    r"\b(?:i|we)\s+(?:really\s+)?(?:like|love|prefer|enjoy|hate|dislike|want|don't like|do not like|can't stand)\b"
    r"|\bmy favou?rite\b"
    r"|我(?:现在|一直|也|还|真的)?(?:很|最|非常|比较)?(?:喜欢|爱|讨厌|偏好|更喜欢|不喜欢|希望|想要)|偏好",
    re.IGNORECASE,
)
_CONSTRAINT = re.compile(
    r"\b(?:must|never|always|don't|do not|avoid|no more than|at most|at least|only|required?|make sure|limit"
    r"|budget|deadline|allergic)\b"
    r"|不要|别|必须|一定要|务必|禁止|不能|不许|只能|至少|最多|以后都|每次都|预算|截止|过敏"
    r"|(?:以后|今后|从现在起).{0,8}(?:都|一律|总是)|一律",
    re.IGNORECASE,
)
_DECISION = re.compile(
    r"\b(?:decided|we'll go with|let's go with|agreed|confirmed|chose|choose|settled on|plan is|switch(?:ed)? to"
    r"|changed? to|from now on|anymore|no longer)\b"
    r"|决定|确定|选了|选择|同意|改成|改为|改到|换成|换到|推迟到|提前到|涨到|降到|搬到|调整到|调整为|从现在起|不再|已经不",
    re.IGNORECASE,
)
_TASK = re.compile(
    r"\b(?:todo|to-do|remind me|need to|have to|task|next step|pending|follow up)\b|待办|提醒我|需要|任务|下一步",
    re.IGNORECASE,
)
_TRANSIENT = re.compile(
    r"^\s*(?:please\s+)?(?:convert|translate|summari[sz]e|format|rewrite|fix|run|open|show|print|list|draft|write)\b"
    r".*\b(?:now|this|that|it)\b"
    r"|^\s*(?:请)?(?:帮我)?(?:把|将)?.{0,12}(?:转换|翻译|总结|格式化|改写|运行|打开)(?:一下|成)",
    re.IGNORECASE,
)

# "X is/was (now) Y", "X changed to Y", "X leaves at Y"; Chinese "X调整到Y", "X是Y", "X改为Y",
# "X 7点起飞" / "X 9月26日截止" (a thing and the time of its event).
_SUBJECT_EN = re.compile(
    r"(?:^|\b)(?:the\s+|my\s+|our\s+)?(?P<subject>[a-z][a-z'’ \-]{1,40}?)\s+(?:now\s+|still\s+)?"
    r"(?:is|was|are|were|will be|has been|have been|changed to|changes to|moved to|set to|increased to|decreased to"
    r"|raised to|lowered to|leaves at|departs at|takes off at|lands at|arrives at|starts at|begins at|ends at)"
    r"\s+(?:now\s+|still\s+|actually\s+)?(?P<value>.+)",
    re.IGNORECASE,
)
_SUBJECT_ZH = re.compile(
    r"(?P<subject>[\u4e00-\u9fffA-Za-z]{1,10}?)(?:现在|已经|目前)?"
    r"(?:调整到|调整为|改成|改为|改到|换成|换到|推迟到|提前到|涨到|降到|变成|提高到|降低到|增加到|减少到|定为|定在|设为|是|为|叫)"
    r"(?P<value>.+)"
)
_EVENT_ZH = re.compile(
    r"(?P<subject>[\u4e00-\u9fffA-Za-z]{1,12}?)"
    r"(?P<value>(?:\d{1,4}年)?\d{1,2}月\d{1,2}[日号]|\d{1,2}[:：]\d{2}|\d{1,2}点(?:半|\d{1,2}分?)?|周[一二三四五六日天])"
    r"(?:准时|左右)?(?:截止|起飞|出发|开始|结束|到期|举行|降落|到达|开会|见面)"
)
_CAP = r"(?P<value>(?!(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday)\b)[A-Z][\w&.-]*(?:\s[A-Z][\w&.-]*)*)"
_ADV_EN = r"(?:(?:now|still|no longer|don't|do not|also|just|already)\s+)?"
# Profile statements without "is", under one subject each: where someone
# lives or works, how old they are. The owner qualifies the key later.
_ZH_ADV = r"(?:现在|已经不|已经|目前|一直|也|还|不|刚|最近|上个月)?"
_PROFILE = (
    (
        re.compile(r"\bI(?:'ve| have)?\s+" + _ADV_EN + r"(?:live|living|moved|relocated)\s+(?:in|to)\s+" + _CAP),
        "residence",
    ),
    (
        re.compile(
            rf"\b{EN_PERSON}\s+"
            + _ADV_EN
            + r"(?:lives|live|lived|has moved|have moved|moved|relocated)\s+(?:in|to)\s+"
            + _CAP
        ),
        "residence",
    ),
    (re.compile(r"\bI(?:'m| am)?\s+" + _ADV_EN + r"(?:work(?:ing)?\s+(?:at|for)|joined)\s+" + _CAP), "employer"),
    (
        re.compile(
            rf"(?:\b{EN_PERSON}\s+{_ADV_EN}joined|\b(?:works|worked|is working|has worked)\s+(?:at|for))\s+" + _CAP
        ),
        "employer",
    ),
    (
        re.compile(
            rf"\b(?:I(?:'m|’m| am)|{EN_PERSON}\s+(?:is|was))\s+(?:now\s+|already\s+)?(?P<value>\d{{1,3}})"
            r"\s+years?\s+old|\b(?:I|" + EN_PERSON + r")\s+(?:just\s+)?turned\s+(?P<value2>\d{1,3})\b"
        ),
        "age",
    ),
    (
        re.compile(
            rf"(?:^|[，,])(?:{ZH_PERSON}|我)"
            + _ZH_ADV
            + r"(?:住在|搬到了?|搬去了?)(?P<value>[\u4e00-\u9fff]{1,8}?)(?=了|[，。,.！]|$)"
        ),
        "住址",
    ),
    (
        re.compile(
            rf"(?:^|[，,])(?:(?:{ZH_PERSON}|我)"
            + _ZH_ADV
            + r"|现在)在(?P<value>(?!一)(?:(?!考虑|是否|打算|准备|想要|想找|找|要)[\u4e00-\u9fffA-Za-z]){1,10}?)"
            r"(?:工作|上班)"
        ),
        "工作单位",
    ),  # not "在一家公司工作" nor "在考虑找一份新工作": no value
    (re.compile(rf"(?:^|[，,])(?:{ZH_PERSON}|我)(?:今年|现在|已经|刚|才|也)*(?P<value>\d{{1,3}})岁"), "年龄"),
)
_STOP_SUBJECT = {
    "it",
    "this",
    "that",
    "there",
    "he",
    "she",
    "they",
    "what",
    "which",
    "who",
    "i",
    "you",
    "we",
    "这",
    "那",
    "它",
    "我",
    "你",
    "他",
    "她",
    # adverbs before 是 ("尤其是…", "我也是…") are not subjects
    "尤其",
    "特别",
    "主要",
    "就",
    "也",
    "还",
    "都",
    "只",
    "但",
    "可",
    "总",
    "真",
    "其实",
    "只是",
    "还是",
    "也是",
    "就是",
    "可能",
    "应该",
}
_LEAD_IN = re.compile(
    r"^(?:(?:ok(?:ay)?|so|well|actually|also|and|but|hey|hi|oh|note that|remember that|fyi|by the way|btw"
    r"|just so you know|update|correction|these days|nowadays|lately)[,:\s]+)+"
    r"|^(?:另外|还有|对了|记住|注意|更新|更正一下|更正|我说错了)[，,：:\s]*",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class SentenceSignals:
    preference: bool
    constraint: bool
    decision: bool
    task: bool
    numbers: tuple[str, ...]
    dates: tuple[str, ...]
    names: tuple[str, ...]
    transient: bool
    subject: str | None

    @property
    def value(self) -> float:
        """A rough usefulness score in [0, 1] for keeping a sentence."""
        score = 0.1
        score += 0.3 if self.preference else 0.0
        score += 0.3 if self.constraint else 0.0
        score += 0.25 if self.decision else 0.0
        score += 0.15 if self.task else 0.0
        score += 0.15 if self.numbers else 0.0
        score += 0.1 if self.dates else 0.0
        score += 0.05 if self.names else 0.0
        score += 0.1 if self.subject else 0.0
        score -= 0.3 if self.transient else 0.0
        return max(0.0, min(1.0, score))


def is_chinese(text: str) -> bool:
    return bool(_CJK.search(text))


# A statement with a confirmation tag ("the budget is 5000, right?", "预算是5000，对吧？") asserts it.
_TAG_QUESTION = re.compile(
    r"[,，]\s*(?:right|ok(?:ay)?|correct|yes|no|isn't it|aren't they|don't you|you know|remember)\s*[?？]+\s*$"
    r"|[，,]?\s*(?:对吧|对吗|是吧|是吗|好吗|行吗|可以吗|没错吧)\s*[?？]+\s*$",
    re.IGNORECASE,
)
_TAG_TAIL = 40  # longer than any confirmation tag with its comma and marks
_QUESTION_EN = re.compile(
    r"^(?:(?:so|and|but|ok(?:ay)?|hey|well|also|btw)[,\s]+)*(?:"
    r"(?:what|when|where|who|whom|whose|which|why|how)(?:['’]s\b|\s+(?:much|many|long|old|often|far)\b)?"
    r"\s+(?:(?:is|are|was|were|do|does|did|can|could|should|will|would|has|have)\b|['’]s\b)"
    r"|(?:what|when|where|who|which|why|how)['’]s\b"
    r"|(?:is|are|was|were|can|could|will|would|should)\s+(?:my|the|your|our|you|i|we|he|she|it|they|there|this|that)\b"
    # "do / have" + a pronoun only: "Do the dishes", "Have the report ready" are instructions
    r"|(?:do|does|did|have|has)\s+(?:you|i|we|he|she|it|they)\b)",
    re.IGNORECASE,
)
# Without a question mark: 吗 at the end, or an interrogative that is not the
# "any" of 谁都 / 什么时候都 / 哪里都 ("I'm free any time" is a fact).
_QUESTION_ZH = re.compile(
    r"吗[\s。.!！~～]*$|多少(?:钱|个|天|岁|人|次)?[\s。.!！]*$"
    r"|(?:是不是|有没有|对不对|能不能|可不可以|会不会|为什么|怎么样|什么时候|在哪|哪里|哪儿|哪个|哪些|谁|是多少)"
    r"(?![^，,。.！!]{0,4}[都也])"
)


def is_question(sentence: str) -> bool:
    """A question, not a statement: "what is my budget?", "我的预算是多少", "预算是不是8000？".

    Questions are never facts: stored as one, "我的预算是多少？" superseded
    "我的预算是5000元" (same subject, a new "value"). A statement with a
    confirmation tag ("…, right?") is not a question.
    """
    text = " ".join(sentence.split())
    if _TAG_QUESTION.search(text[-_TAG_TAIL:]):  # tags end the text; a bounded tail keeps it linear
        return False
    if text.endswith(("?", "？")):
        return True
    return bool(_QUESTION_ZH.search(text) if is_chinese(text) else _QUESTION_EN.match(text))


def split_sentences(text: str) -> list[str]:
    """Sentences with runs of whitespace squeezed to one space (the analyzers' patterns
    backtrack over long runs: 30k spaces cost seconds)."""
    return [" ".join(s.split()) for s in _SENTENCE_SPLIT.split(text) if s and s.strip()]


def _normalize_subject(raw: str) -> str | None:
    subject = _LEAD_IN.sub("", raw.strip()).strip(" ,.:;，。：").lower()
    subject = re.sub(r"^(?:the|my|our|your|a|an)\s+", "", subject)
    subject = re.sub(r"\s+", " ", subject)
    # "my sister's name is A" and "my sister is called B" set the same thing.
    subject = re.sub(r"(?:['’]s name|的名字)$", "", subject)
    if not subject or subject in _STOP_SUBJECT or len(subject) > 40:
        return None
    if not is_chinese(subject) and len(subject.split()) > 4:
        return None
    return subject


def _raw_subject(sentence: str) -> str | None:
    text = _LEAD_IN.sub("", sentence.strip())
    for pattern, subject in _PROFILE:
        if pattern.search(text):
            return subject
    if is_chinese(text):
        m = _SUBJECT_ZH.search(text) or _EVENT_ZH.search(text)
        if m:
            subject = re.sub(
                r"^(?:我的|我们的|我们|你的|这个|那个|我)?(?:现在|目前|已经|最近)?", "", m.group("subject")
            )
            # "我的猫" -> "猫": one character is a subject once a possessive was stripped.
            return _normalize_subject(subject) if len(subject) >= 2 or subject != m.group("subject") else None
        return None
    m = _SUBJECT_EN.search(text)
    if not m:
        return None
    return _normalize_subject(m.group("subject"))


def owned_subject(sentence: str, *, context: str | None = None) -> tuple[str, str | None]:
    """(owner, owner-qualified subject key) of a sentence.

    The owner is the possessor named in the subject itself ("my colleague's
    budget is …"), else the sentence's holder (:func:`~memory_vec._rules.owners.detect_owner`;
    ``context``: the person named earlier in the message, for pronouns).
    """
    sentence = " ".join(sentence.split())
    raw = _raw_subject(sentence)
    holder = subject_holder(raw) if raw else None
    if holder == OTHER:  # "her budget": whose, the sentence and its context tell
        holder = None
    owner = holder or detect_owner(sentence, context=context)
    return owner, qualify(raw, owner)


def subject_key(sentence: str) -> str | None:
    """The subject a sentence sets a value for ("budget"), qualified by its
    owner when it is someone else's ("colleague/budget"), or None."""
    return owned_subject(sentence)[1]


_SUBJECT_FILLER = {"the", "a", "an", "of", "for", "to", "my", "our", "your", "its", "his", "her", "their", "s", "name"}
_SUBJECT_FILLER_ZH = set("的我们你他她它这那个")


def _subject_words(subject: str) -> set[str]:
    if is_chinese(subject):
        return set(subject) - _SUBJECT_FILLER_ZH - {"/"}
    return {w for w in re.split(r"[\s'’\-/]+", subject) if w and w not in _SUBJECT_FILLER}


def distinct_subjects(a: str, b: str) -> bool:
    """Each subject has a word the other lacks: two different things
    ("thesis deadline" / "project deadline")."""
    wa, wb = _subject_words(a), _subject_words(b)
    return bool(wa - wb) and bool(wb - wa)


def _subject_head(subject: str) -> str | None:
    """The attribute's head word: "budget" in "travel budget" or "colleague/budget", "预算" in "婚礼的预算"."""
    attribute = subject.rsplit("/", 1)[-1]
    if is_chinese(attribute):
        attribute = attribute.rsplit("的", 1)[-1]
        return attribute[-2:] or None
    words = [w for w in re.split(r"[\s'’\-]+", attribute) if w and w not in _SUBJECT_FILLER]
    return words[-1] if words else None


def mentions_subject(text: str, subject: str, own_subject: str | None) -> bool:
    """The text speaks of the subject ("Got it, a budget of 5000" of "travel
    budget") without setting another one (``own_subject``, its own key:
    "the wedding budget is …")."""
    head = _subject_head(subject)
    if not head:
        return False
    if own_subject and distinct_subjects(own_subject, subject):
        return False
    if is_chinese(head):
        return head in text
    return re.search(rf"\b{re.escape(head)}\b", text, re.IGNORECASE) is not None


def subject_value(sentence: str) -> str | None:
    """The value a sentence sets for its subject ("green tea" in "my favorite
    drink is now green tea"), normalized; None without a subject."""
    text = _LEAD_IN.sub("", sentence.strip())
    m = next((found for pattern, _ in _PROFILE if (found := pattern.search(text))), None)
    if m is None and is_chinese(text):
        m = _SUBJECT_ZH.search(text) or _EVENT_ZH.search(text)
    m = m or _SUBJECT_EN.search(text)
    if not m:
        return None
    raw = m.group("value") or (m.groupdict().get("value2") or "")
    value = re.sub(r"[\s,.!?;:，。！？；：、了啦呢]+", " ", raw.lower()).strip()
    return value or None


# A stated liking or dislike and its object: "I love sushi", "I don't like sushi (anymore)",
# "我很喜欢吃火锅", "我不吃火锅了". Plain "eat/drink/吃/喝" is a preference only when negated
# ("I don't eat meat"); "I ate sushi" is an event.
# The liker is a person ("I", "we", "my wife", "Anna", "我", "我老婆", "张敏"), not
# "many people enjoy chess" (an assistant's small talk).
_PREF_EN = re.compile(
    rf"(?:\b(?:i|i'm|i’m|i am|we|we're|we are|you|he|she|they|he's|she's)|(?-i:{EN_PERSON})(?:'s|’s)?)\s+"
    r"(?:(?:really|still|now|also|actually|just|totally|do|does|truly|absolutely)\s+)*"
    r"(?P<neg>(?:don't|do not|doesn't|does not|didn't|no longer|never|not|can't|cannot|won't|stopped|quit)\s+"
    r"(?:really\s+|even\s+|much\s+)?)?"
    r"(?P<verb>like|likes|liking|love|loves|enjoy|enjoys|prefer|prefers|into|adore|adores|hate|hates|dislike"
    r"|dislikes|stand|eat|eats|eating|drink|drinks|drinking)\s+(?P<obj>[a-z][a-z \-]{1,30}?)"
    r"(?=\s+(?:anymore|any more|now|either|at all|these days|lately|much|so much|very much)\b|\s*[.,!;]|\s*$)",
    re.IGNORECASE,
)
_PREF_ZH = re.compile(
    rf"(?:我们|我|咱们|他们|她们|他|她|{ZH_PERSON})(?:现在|其实|一直|也|还|真的|已经|以后|从小|最近|本来)*"
    r"(?P<neg>不再|已经不|再也不|不太|不是很|不怎么|没那么|不)?(?:很|最|非常|比较|太|特别|真的|也|还|都)?"
    r"(?P<verb>喜欢|爱|讨厌|受不了|吃|喝)(?:吃|喝)?(?P<obj>[\u4e00-\u9fff]{1,6}?)(?=了|吗|啦|呢|[。，！,.!]|$)"
)
_PREF_NEGATIVE_VERBS = {"hate", "hates", "dislike", "dislikes", "讨厌", "受不了"}
_PREF_PLAIN_VERBS = {"eat", "eats", "eating", "drink", "drinks", "drinking", "stand", "吃", "喝"}


def preference(sentence: str) -> tuple[str, bool] | None:
    """(object, likes it) of a stated preference, or None (also for questions)."""
    if sentence.rstrip().endswith(("?", "？")):
        return None
    m = (_PREF_ZH if is_chinese(sentence) else _PREF_EN).search(sentence)
    if not m:
        return None
    verb = m.group("verb").lower()
    negated = bool(m.group("neg"))
    if verb in _PREF_PLAIN_VERBS and not negated:
        return None
    obj = re.sub(r"^(?:eating |drinking |to eat |to drink |the |a |an |吃|喝)", "", m.group("obj").strip().lower())
    obj = re.sub(r"(?<=[a-z]{3})s$", "", obj)  # "burgers" / "burger"
    if not obj:
        return None
    return obj, negated == (verb in _PREF_NEGATIVE_VERBS)


_CALENDAR = re.compile(r"^(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec|mon|tue|wed|thu|fri|sat|sun)", re.I)


def proper_names(text: str) -> set[str]:
    """Capitalised names that are not calendar words ("Tokyo", "Anna", not "May")."""
    names = set()
    for name in _NAME.findall(text):
        words = [w for w in name.lower().split() if w not in _NOT_NAMES]
        if words and not _CALENDAR.match(words[0]):
            names.add(" ".join(words))
    return names


def extract_values(text: str) -> set[str]:
    """Numbers, dates and capitalised names: what makes two statements differ."""
    values = {re.sub(r"[,\s]", "", n).lower() for n in _NUMBER.findall(text)}
    values |= {d.lower() for d in _DATE.findall(text)}
    for name in _NAME.findall(text):
        words = name.lower().split()
        while words and words[0] in _NOT_NAMES:
            words = words[1:]
        if words:
            values.add(" ".join(words))
    return values


@lru_cache(maxsize=4096)
def analyze(sentence: str) -> SentenceSignals:
    # Cached: a message is analysed for its importance and again, sentence by
    # sentence, by the extractor (the signals are immutable).
    return SentenceSignals(
        preference=bool(_PREFERENCE.search(sentence)) or preference(sentence) is not None,
        constraint=bool(_CONSTRAINT.search(sentence)),
        decision=bool(_DECISION.search(sentence)),
        task=bool(_TASK.search(sentence)),
        numbers=tuple(_NUMBER.findall(sentence)),
        dates=tuple(_DATE.findall(sentence)),
        names=tuple(_NAME.findall(sentence)) + tuple(_ZH_NAMED.findall(sentence)),
        transient=bool(_TRANSIENT.search(sentence)),
        subject=subject_key(sentence),
    )
