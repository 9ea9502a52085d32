"""Questions about the order of two events, split into one query per event.

"Did Priya join the chess club before or after she baked the lemon tart?",
"Which came first, Marek's move or his new job?", "搬家和换工作哪个先?",
"她先去了北京还是先买了车?". Such a question needs the turns of *both*
events; one embedding of the whole question lands between them, and the top
k fills with whichever event dominates. The read path recalls each event on
its own next to the whole question and interleaves the lists
(``MemoryConfig.ranking.split_order_questions``).

Only explicit comparisons split: "the day after X" asks for a relative date
(:mod:`.temporal`), not an order, and stays whole. Pure: text in, parts out.
"""

from __future__ import annotations

import re

__all__ = ["event_order_parts"]

_EN_WHICH = re.compile(
    r"^\s*(?:so\s+|and\s+)?(?:which|what)\s+(?:one\s+|event\s+|thing\s+)?"
    r"(?:came|happened|occurred|was|did\s+\w+(?:\s+\w+)?|took\s+place)?\s*"
    r"(?:first|earlier|sooner|before|last|later|more\s+recently)\b\s*(?:[,:;—–-]\s*)?",
    re.IGNORECASE,
)
_EN_WHICH_AFTER = re.compile(
    r"[,:;—–-]?\s*(?:which|what)\s+(?:one\s+|event\s+)?(?:came|happened|occurred|was|did\s+\w+)?\s*"
    r"(?:first|earlier|sooner|last|later)\b.*$",
    re.IGNORECASE,
)
_EN_YES_NO = re.compile(r"^\s*(?:did|was|were|is|are|has|had|does|do)\b", re.IGNORECASE)
# "before or after" / "before" / "after" / "earlier than" between the two events;
# not "the day after", "two weeks before" (a relative date, not an order).
_EN_RELATIVE_UNIT = re.compile(
    r"(?:\b(?:the|a|one|two|three|four|five|six|seven|few|several|couple\s+of|\d+)\s+"
    r"(?:days?|weeks?|weekends?|months?|years?|nights?|mornings?|evenings?|hours?)\s*)$",
    re.IGNORECASE,
)
_EN_ORDER_WORD = re.compile(
    r"\s+(?:(?:happen|take\s+place|come|occur)\s+)?(?:before\s+or\s+after|after\s+or\s+before|"
    r"earlier\s+than|later\s+than|before|after|prior\s+to)\s+",
    re.IGNORECASE,
)
_EN_HAPPEN = re.compile(r"\s+(?:happen|take\s+place|come|occur)$", re.IGNORECASE)

_ZH_CUE = re.compile(r"(?:哪个|哪件事?|哪一个|谁)(?:更)?(?:先|早|在前|在先|靠前|晚|在后)|先后|顺序")
_ZH_AND = re.compile(r"(?:和|与|跟|还是)")
_ZH_EITHER = re.compile(r"^(?P<a>.+?)(?:，|,)?还是(?P<b>.+)$")
_ZH_BEFORE_AFTER = re.compile(r"^(?P<a>.+?)是?在(?P<b>.+?)(?:之前|以前|前)还是(?:之后|以后|后)")
_ZH_TAIL = re.compile(
    r"(?:[，,]?(?:哪个|哪件事?|哪一个|谁)(?:更)?(?:先|早|在前|在先|靠前|晚|在后).*|[，,]?先后.*|"
    r"[，,]?的?顺序.*)$"
)
# "A比B早吗", "A早于B吗", "A在B之前吗", "是先A后B吗"
_ZH_THAN = re.compile(
    r"^(?P<a>.+?)(?:比(?P<b1>.+?)(?:更)?(?:早|晚|先|后)|(?:早于|晚于)(?P<b2>.+?)|是?在(?P<b3>.+?)"
    r"(?:之前|以前|之后|以后))(?:发生|的)?(?:吗|么|嘛|呢)?$"
)
_ZH_THEN = re.compile(r"^(?:是|是不是)?先(?P<a>.+?)(?:，|,)?(?:后|再|然后|才)(?P<b>.+?)(?:的)?(?:吗|么|嘛|呢)?$")
_ZH_FIRST = re.compile(r"^(?:是)?先|(?:更早|先|在前|发生)$")
_TRIM = " \t,，。.:：;；?？!！—–-"
_MAX_CHARS = 300  # an order question is short; the lazy patterns above are quadratic in the length
_LEAD_WORDS = frozenset({"which", "what", "so", "and", "i"})


def event_order_parts(question: str) -> tuple[str, ...]:
    """The two events a question compares in time, or ``()`` if it does not."""
    text = " ".join(question.split())
    if not text or len(text) > _MAX_CHARS:
        return ()
    parts = _chinese_parts(text) if re.search(r"[\u4e00-\u9fff]", text) else _english_parts(text)
    parts = tuple(p.strip(_TRIM) for p in parts)
    if len(parts) != 2 or not all(_substantial(p) for p in parts):
        return ()
    return parts


def _english_parts(text: str) -> tuple[str, ...]:
    body = text.rstrip(" ?.!")
    which = _EN_WHICH.match(body)
    if which:  # "Which came first, A or B"; "What did Marek do first, A or B" keeps "Marek"
        names = [w for w in re.findall(r"\b[A-Z][\w'’-]*", body[: which.end()]) if w.lower() not in _LEAD_WORDS]
        return tuple(" ".join([*(n for n in names if n not in part), part]) for part in _split_or(body[which.end() :]))
    tail = _EN_WHICH_AFTER.search(body)
    if tail and tail.start() > 0:  # "A or B: which came first"
        return _split_or(body[: tail.start()])
    if not _EN_YES_NO.match(body):
        return ()
    either = re.split(r"\s+(?:happen\s+|come\s+)?first\s*,?\s+or\s+", body, maxsplit=1, flags=re.IGNORECASE)
    if len(either) == 2:  # "Did A happen first, or B?"
        return _EN_YES_NO.sub("", either[0], count=1), either[1]
    for m in _EN_ORDER_WORD.finditer(body):
        if _EN_RELATIVE_UNIT.search(body[: m.start()]):
            continue
        first = _EN_HAPPEN.sub("", body[: m.start()])
        first = _EN_YES_NO.sub("", first, count=1)
        return first, body[m.end() :]
    return ()


def _split_or(body: str) -> tuple[str, ...]:
    pieces = re.split(r"\s*,?\s+or\s+", body, maxsplit=1, flags=re.IGNORECASE)
    if len(pieces) != 2:
        pieces = re.split(r"\s*,?\s+and\s+", body, maxsplit=1, flags=re.IGNORECASE)
    return tuple(pieces) if len(pieces) == 2 else ()


def _chinese_parts(text: str) -> tuple[str, ...]:
    body = text.strip(_TRIM)
    m = _ZH_BEFORE_AFTER.match(body)
    if m:  # "A是在B之前还是之后"
        return m.group("a"), m.group("b")
    if _ZH_CUE.search(body):  # "A和B哪个先" / "A还是B，哪个更早"
        head = _ZH_TAIL.sub("", body)
        pieces = _ZH_AND.split(head, maxsplit=1)
        return tuple(_ZH_FIRST.sub("", p.strip(_TRIM)) for p in pieces) if len(pieces) == 2 else ()
    asks = bool(re.search(r"[吗么嘛呢]$", body)) or "?" in text or "？" in text
    m = _ZH_THAN.match(body) if asks else None  # "A比B早吗": only as a question
    if m:
        return m.group("a"), m.group("b1") or m.group("b2") or m.group("b3")
    m = _ZH_THEN.match(body) if asks else None
    if m:
        return m.group("a"), m.group("b")
    m = _ZH_EITHER.match(body)
    if m and ("先" in m.group("a") or "先" in m.group("b")):  # "先A还是先B"
        return _ZH_FIRST.sub("", m.group("a").strip(_TRIM)), _ZH_FIRST.sub("", m.group("b").strip(_TRIM))
    return ()


def _substantial(part: str) -> bool:
    """Enough of an event to search for: two words, or two Chinese characters."""
    if re.search(r"[\u4e00-\u9fff]", part):
        return len(re.findall(r"[\u4e00-\u9fff]", part)) >= 2
    return len(re.findall(r"\w+", part)) >= 2
