"""Fact extraction and conflict decisions. Pure: no I/O.

* Extractors turn a message into atomic facts (:class:`ExtractedFact`):
  :class:`RuleExtractor` (English and Chinese, offline) and
  :class:`LLMExtractor` (any ``prompt -> text`` callable, strict JSON).
* :class:`ConflictResolver` compares a new fact with its nearest existing
  facts in the same scope and decides ADD, UPDATE (supersede the old ones),
  NOOP (exact duplicate) or DELETE (the user retracted it). An optional LLM
  judge settles borderline cases.
* :func:`patch_summary` makes the running summary agree with an update.
"""

from __future__ import annotations

import enum
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from .facts import analyze, extract_values, is_chinese, split_sentences, subject_key, subject_value
from .recall.ranking import dedupe_key

__all__ = [
    "EXTRACTION_PROMPT",
    "ConflictAction",
    "ConflictDecision",
    "ConflictResolver",
    "ExistingFact",
    "ExtractedFact",
    "FactExtractor",
    "LLMExtractor",
    "RuleExtractor",
    "patch_summary",
]

FACT_TYPES = ("preference", "constraint", "task", "profile", "event")


@dataclass(frozen=True)
class ExtractedFact:
    text: str
    subject: str | None
    importance: float
    type: str = "profile"
    transient: bool = False
    negated: bool = False  # "not X anymore": retracts the subject


@runtime_checkable
class FactExtractor(Protocol):
    name: str

    def extract(self, role: str, text: str) -> list[ExtractedFact]: ...


_NEGATION = re.compile(
    r"\b(?:not|no longer|don't|do not|never|anymore|stopped|quit)\b|不再|不要|别再|已经不|没有再|取消了?",
    re.IGNORECASE,
)
_RETRACT = re.compile(r"\b(?:no longer|not .* anymore|anymore|stopped|quit)\b|不再|已经不|取消了?"
                      r"|(?:现在|以后)?不(?:喜欢|爱|吃|喝).{0,8}了", re.IGNORECASE)
# What a preference is about: "I love sushi" / "I'm not into sushi anymore" / "我不吃火锅了".
_PREF_OBJECT = re.compile(
    r"\b(?:like|love|enjoy|prefer|into|eat(?:ing)?|drink(?:ing)?)\s+(?P<en>[a-z][a-z \-]{1,30}?)"
    r"(?=\s+(?:anymore|any more|now|either|at all)\b|\s*[.,!;]|\s*$)"
    r"|(?:喜欢|爱|吃|喝)(?P<zh>[\u4e00-\u9fff]{1,6}?)(?=了|吗|[。，！]|$)",
    re.IGNORECASE,
)
_GREETING = re.compile(
    r"^\s*(?:hi|hello|hey|thanks|thank you|ok|okay|yes|no|sure|great|cool|你好|谢谢|好的|嗯|是的)[\s!.。！]*$",
    re.IGNORECASE,
)


def _fact_type(preference: bool, constraint: bool, task: bool, dates: bool) -> str:
    if constraint:
        return "constraint"
    if preference:
        return "preference"
    if task:
        return "task"
    return "event" if dates else "profile"


class RuleExtractor:
    """Offline extraction of user facts, English and Chinese.

    A sentence becomes a fact when it states a preference ("I like / prefer /
    hate / never", "我喜欢 / 讨厌 / 不要 / 希望 / 以后都"), sets a value
    ("X is / was changed to Y", "预算调整到8000元"), or carries numbers with
    units, dates or names. Transient instructions ("convert this file to PDF
    now") are marked so the value filter can skip them.
    """

    name = "rules"

    def __init__(self, *, roles: Sequence[str] = ("user",), min_importance: float = 0.35) -> None:
        self.roles = tuple(roles)
        self.min_importance = min_importance

    def extract(self, role: str, text: str) -> list[ExtractedFact]:
        if role not in self.roles or _GREETING.match(text):
            return []
        facts = []
        for sentence in split_sentences(text):
            if len(sentence) < 4:
                continue
            s = analyze(sentence)
            has_signal = (s.preference or s.constraint or s.decision or s.task or s.subject or s.numbers
                          or s.dates or s.names)
            if not has_signal and not s.transient:
                continue
            importance = round(min(1.0, s.value + 0.1), 3)
            # A key-value statement ("我的猫叫小红") is a fact even without other signals.
            if importance < self.min_importance and not s.transient and not s.subject:
                continue
            facts.append(
                ExtractedFact(
                    text=sentence,
                    subject=s.subject,
                    importance=importance,
                    type=_fact_type(s.preference, s.constraint, s.task, bool(s.dates)),
                    transient=s.transient,
                    negated=bool(_RETRACT.search(sentence)),
                )
            )
        return facts


EXTRACTION_PROMPT = """Extract durable facts about the user from the message below.
Return ONLY a JSON array. Each item: {{"fact": "<one atomic fact, a full sentence in the message's language>",
"subject": "<short key, e.g. budget, diet, dog name>", "importance": <0..1>,
"type": "preference|constraint|task|profile|event"}}.
Skip greetings, questions and one-off instructions (e.g. "convert this file now"). Return [] if nothing.

MESSAGE ({role}): {text}
JSON:"""


class LLMExtractor:
    """Extraction with any LLM callable; strict JSON; one call per message.

    Malformed JSON, an exception or a timeout yields no facts and a reason
    in :attr:`last_error` (the core puts it in the trace); the raw message
    is stored regardless.
    """

    name = "llm"

    def __init__(self, llm: Callable[[str], str], *, roles: Sequence[str] = ("user",),
                 prompt: str = EXTRACTION_PROMPT) -> None:
        self.llm = llm
        self.roles = tuple(roles)
        self.prompt = prompt
        self.last_error = ""

    def extract(self, role: str, text: str) -> list[ExtractedFact]:
        self.last_error = ""
        if role not in self.roles:
            return []
        try:
            answer = self.llm(self.prompt.format(role=role, text=text))
        except Exception as exc:  # noqa: BLE001 - any failure of the caller's LLM must not lose the message
            self.last_error = f"extractor LLM failed: {exc}"
            return []
        return self.parse(answer)

    def parse(self, answer: object) -> list[ExtractedFact]:
        if not isinstance(answer, str):
            self.last_error = f"extractor returned {type(answer).__name__}, not JSON text"
            return []
        body = answer.strip()
        fence = re.search(r"```(?:json)?\s*(.*?)```", body, re.DOTALL)
        if fence:
            body = fence.group(1).strip()
        try:
            items = json.loads(body)
        except json.JSONDecodeError as exc:
            self.last_error = f"extractor returned malformed JSON: {exc.msg}"
            return []
        if not isinstance(items, list):
            self.last_error = "extractor JSON is not an array"
            return []
        facts, skipped = [], []
        for item in items:
            if not isinstance(item, dict) or not isinstance(item.get("fact"), str) or not item["fact"].strip():
                skipped.append("item without fact text")
                continue
            subject = item.get("subject")
            if not isinstance(subject, str) or not subject.strip():
                skipped.append(f"fact without subject: {item['fact'][:40]!r}")
                continue
            try:
                importance = min(1.0, max(0.0, float(item.get("importance", 0.5))))
            except (TypeError, ValueError):
                importance = 0.5
            declared = item.get("type")
            kind = declared if isinstance(declared, str) and declared in FACT_TYPES else "profile"
            text = item["fact"].strip()
            facts.append(ExtractedFact(text, subject.strip().lower(), importance, kind,
                                       transient=analyze(text).transient, negated=bool(_RETRACT.search(text))))
        if skipped:
            self.last_error = "; ".join(skipped)
        return facts


class ConflictAction(str, enum.Enum):
    ADD = "ADD"
    UPDATE = "UPDATE"
    DELETE = "DELETE"
    NOOP = "NOOP"


@dataclass(frozen=True)
class ExistingFact:
    """A current memory near the new fact (facts, or messages without extractor)."""

    id: str
    text: str
    subject: str | None
    similarity: float
    source_ids: tuple[str, ...] = ()


@dataclass(frozen=True)
class ConflictDecision:
    action: ConflictAction
    superseded: tuple[str, ...] = ()
    duplicate_of: str | None = None
    reason: str = ""
    judged: bool = False


@dataclass
class ConflictResolver:
    """Decides what a new fact does to its nearest existing facts.

    Rules, in order: the same text (up to case and punctuation) is a NOOP;
    the same subject key with other values is an UPDATE; similarity at or
    above ``threshold`` with differing numbers, dates or names is an UPDATE;
    a retraction ("not X anymore") of a subject is a DELETE of it. Pairs
    within ``judge_margin`` below the threshold, or with the same subject and
    no values to compare, go to the optional ``judge`` (``prompt -> text``
    answering ADD / UPDATE / DELETE / NOOP).
    """

    threshold: float = 0.8
    judge: Callable[[str], str] | None = None
    judge_margin: float = 0.1
    judge_calls: int = field(default=0, init=False)

    def decide(
        self, fact: ExtractedFact, existing: Sequence[ExistingFact], *, subject_only: bool = False
    ) -> ConflictDecision:
        """``subject_only``: supersede only on a matching subject key (used for
        raw messages when no extractor runs, where similar chat lines with
        different numbers are usually different things, not updates)."""
        new_key = dedupe_key(fact.text)
        new_values = extract_values(fact.text)
        new_subject = fact.subject or subject_key(fact.text)
        superseded: list[str] = []
        borderline: list[ExistingFact] = []
        for old in existing:
            if dedupe_key(old.text) == new_key:
                return ConflictDecision(ConflictAction.NOOP, duplicate_of=old.id, reason="exact duplicate")
            old_subject = old.subject or subject_key(old.text)
            old_values = extract_values(old.text)
            same_subject = bool(new_subject) and new_subject == old_subject
            # Both name a subject and each names something the other does not
            # ("thesis deadline" / "project deadline"): similar wording alone
            # must not make one overwrite the other.
            other_subject = bool(new_subject and old_subject and _distinct_subjects(new_subject, old_subject))
            if fact.negated and same_subject:
                superseded.append(old.id)
                continue
            if fact.negated and not _RETRACT.search(old.text) and _same_preference_object(fact.text, old.text):
                superseded.append(old.id)  # "I love sushi" -> "I don't like sushi anymore"
                continue
            # (Tried: letting a nested subject, "budget cap" / "budget", supersede
            # on differing values. Conflict benchmark, EN: stale@5 0.113 -> 0.083
            # but current@5 0.979 -> 0.921 and false overwrites 42 -> 99: dropped.)
            if same_subject and new_values != old_values and (new_values or old_values):
                superseded.append(old.id)
            elif same_subject and not new_values and not old_values and _new_value_text(fact.text, old.text):
                superseded.append(old.id)  # "favorite drink is tea" -> "... is now coffee"
            elif (not subject_only and old.similarity >= self.threshold and new_values and old_values
                  and not other_subject
                  and new_values != old_values and _comparable(new_values, old_values)
                  and not _different_units(fact.text, old.text)):
                superseded.append(old.id)
            elif same_subject or old.similarity >= self.threshold - self.judge_margin:
                borderline.append(old)
        if superseded:
            action = ConflictAction.DELETE if fact.negated else ConflictAction.UPDATE
            return ConflictDecision(action, tuple(superseded), reason="same subject, new value")
        if self.judge is not None and borderline:
            return self._ask_judge(fact, borderline)
        return ConflictDecision(ConflictAction.ADD, reason="new fact")

    def _ask_judge(self, fact: ExtractedFact, borderline: Sequence[ExistingFact]) -> ConflictDecision:
        assert self.judge is not None
        listing = "\n".join(f"[{i}] {old.text}" for i, old in enumerate(borderline))
        prompt = (
            "A user's memory holds these facts:\n" + listing + f"\n\nNew statement: {fact.text}\n"
            "Answer with one word and the indexes it affects, e.g. 'UPDATE 0' or 'ADD' or 'NOOP 1' or 'DELETE 0':\n"
            "ADD (new information), UPDATE (replaces those facts), DELETE (retracts them), NOOP (already known)."
        )
        self.judge_calls += 1
        try:
            answer = str(self.judge(prompt)).strip().upper()
        except Exception as exc:  # noqa: BLE001 - any failure of the caller's judge falls back to keeping both
            return ConflictDecision(ConflictAction.ADD, reason=f"judge failed: {exc}", judged=True)
        words = answer.replace(",", " ").split()
        verb = words[0] if words else "ADD"
        indexes = [int(w) for w in words[1:] if w.isdigit() and int(w) < len(borderline)]
        targets = tuple(borderline[i].id for i in indexes) or tuple(b.id for b in borderline[:1])
        if verb == "UPDATE":
            return ConflictDecision(ConflictAction.UPDATE, targets, reason="judge: update", judged=True)
        if verb == "DELETE":
            return ConflictDecision(ConflictAction.DELETE, targets, reason="judge: delete", judged=True)
        if verb == "NOOP":
            return ConflictDecision(ConflictAction.NOOP, duplicate_of=targets[0], reason="judge: known", judged=True)
        return ConflictDecision(ConflictAction.ADD, reason="judge: add", judged=True)


_SUBJECT_FILLER = {"the", "a", "an", "of", "for", "to", "my", "our", "your", "its", "his", "her", "their", "s", "name"}
_SUBJECT_FILLER_ZH = set("的我们你他她它这那个")


def _subject_words(subject: str) -> set[str]:
    if is_chinese(subject):
        return set(subject) - _SUBJECT_FILLER_ZH
    return {w for w in re.split(r"[\s'’\-]+", subject) if w and w not in _SUBJECT_FILLER}


def _distinct_subjects(a: str, b: str) -> bool:
    """Each subject has a word the other lacks: two different things."""
    wa, wb = _subject_words(a), _subject_words(b)
    return bool(wa - wb) and bool(wb - wa)


def _new_value_text(new_text: str, old_text: str) -> bool:
    """Short values that differ ("green tea" / "black coffee"); long ones
    ("my boss is very demanding and ...") describe, they do not set a value."""
    new, old = subject_value(new_text), subject_value(old_text)
    if not new or not old or new == old:
        return False
    return all(len(v) <= 12 if is_chinese(v) else len(v.split()) <= 4 for v in (new, old))


def _pref_object(text: str) -> str | None:
    m = _PREF_OBJECT.search(text)
    if not m:
        return None
    obj = (m.group("en") or m.group("zh") or "").strip().lower()
    obj = re.sub(r"^(?:吃|喝|eating |drinking |the )", "", obj)
    return obj or None


def _same_preference_object(new_text: str, old_text: str) -> bool:
    new = _pref_object(new_text)
    return bool(new) and new == _pref_object(old_text)


_UNIT = re.compile(r"\d[\d,.:]*\s*(?P<unit>[a-z]{2,}|[\u4e00-\u9fff])", re.IGNORECASE)


def _different_units(a: str, b: str) -> bool:
    """"60 guests" vs "160 chairs": numbers that count different things."""
    ua = {m.lower() for m in _UNIT.findall(a)}
    ub = {m.lower() for m in _UNIT.findall(b)}
    return bool(ua and ub) and not (ua & ub)


def _comparable(a: set[str], b: set[str]) -> bool:
    """Two value sets disagree meaningfully: both numeric, or both names/dates."""
    def numeric(values: set[str]) -> bool:
        return any(v[:1].isdigit() or v[:1] in "+-" for v in values)

    return numeric(a) == numeric(b)


def patch_summary(summary: str, *, subject: str | None, old_texts: Sequence[str], new_text: str) -> str:
    """Make a line-oriented summary agree with an update: lines that state
    the superseded values go, and the new statement is added."""
    if not summary:
        return summary
    old_values: set[str] = set()
    for text in old_texts:
        old_values |= extract_values(text)
    new_values = extract_values(new_text)
    stale = old_values - new_values
    kept = []
    for line in summary.splitlines():
        lowered = line.lower()
        mentions_subject = bool(subject and subject in lowered)
        carries_stale = bool(stale) and bool(extract_values(line) & stale)
        if carries_stale and (mentions_subject or not subject):
            continue
        kept.append(line)
    if len(kept) == len(summary.splitlines()):
        return summary  # the summary never stated the old value
    marker = "- [user] " if summary.lstrip().startswith("- ") else ""
    kept.append(f"{marker}{new_text}")
    return "\n".join(kept)


def fact_language(text: str) -> str:
    return "zh" if is_chinese(text) else "en"
