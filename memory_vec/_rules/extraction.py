"""Fact extraction: a message becomes atomic facts (:class:`ExtractedFact`).

* :class:`RuleExtractor`: English and Chinese, offline.
* :class:`LLMExtractor`: any ``prompt -> text`` callable, strict JSON.

Each fact says whose it is (:attr:`ExtractedFact.owner`: the user, a
relative or colleague, a named person; see :mod:`memory_vec._rules.owners`) and
its subject key is qualified by that owner, so facts of different people
never supersede each other. Pure: no I/O beyond the caller's LLM.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from memory_vec._rules.change import retraction, stated_change
from memory_vec._rules.facts import analyze, is_question, owned_subject, split_sentences
from memory_vec._rules.owners import OTHER, USER, detect_owner, normalize_owner, qualify, split_key

__all__ = ["EXTRACTION_PROMPT", "RETRACT", "ExtractedFact", "FactExtractor", "LLMExtractor", "RuleExtractor"]

FACT_TYPES = ("preference", "constraint", "task", "profile", "event")


@dataclass(frozen=True)
class ExtractedFact:
    text: str
    subject: str | None
    importance: float
    type: str = "profile"
    transient: bool = False
    negated: bool = False  # "not X anymore": retracts the subject
    #: Whose fact: ``"user"``, a relation ("wife", "同事"), a lower-cased name,
    #: or ``"other"``; None: not stated, read from the subject key or the text.
    owner: str | None = None


@runtime_checkable
class FactExtractor(Protocol):
    name: str

    def extract(self, role: str, text: str) -> list[ExtractedFact]: ...


RETRACT = re.compile(
    r"\b(?:no longer|not .* anymore|anymore|stopped|quit)\b|不再|已经不|取消了?"
    r"|(?:现在|以后)?不(?:喜欢|爱|吃|喝).{0,8}了",
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
    now") are marked so the value filter can skip them. Each fact carries its
    owner; a pronoun ("her budget") refers to the last person the message
    named.
    """

    name = "rules"

    def __init__(self, *, roles: Sequence[str] = ("user",), min_importance: float = 0.35) -> None:
        self.roles = tuple(roles)
        self.min_importance = min_importance

    def extract(self, role: str, text: str) -> list[ExtractedFact]:
        if role not in self.roles or _GREETING.match(text):
            return []
        facts = []
        context: str | None = None  # the last person named in this message
        for sentence in split_sentences(text):
            if len(sentence) < 4 or is_question(sentence):
                continue
            owner, subject = owned_subject(sentence, context=context)
            if owner not in (USER, OTHER):
                context = owner
            s = analyze(sentence)
            # "Switched my phone plan to the unlimited one", "烟戒了": a stated change or a retraction is a
            # fact even without a value.
            changed = stated_change(sentence) is not None or retraction(sentence) is not None
            has_signal = (
                s.preference
                or s.constraint
                or s.decision
                or s.task
                or subject
                or s.numbers
                or s.dates
                or s.names
                or changed
            )
            if not has_signal and not s.transient:
                continue
            importance = round(min(1.0, s.value + 0.1), 3)
            # A key-value statement ("我的猫叫小红") is a fact even without other signals.
            if importance < self.min_importance and not s.transient and not subject and not changed:
                continue
            facts.append(
                ExtractedFact(
                    text=sentence,
                    subject=subject,
                    importance=importance,
                    type=_fact_type(s.preference, s.constraint, s.task, bool(s.dates)),
                    transient=s.transient,
                    negated=bool(RETRACT.search(sentence)),
                    owner=owner,
                )
            )
        return facts


EXTRACTION_PROMPT = """Extract durable facts from the message below: facts about the user, and facts the user
states about other people (relatives, colleagues, friends, people by name).
Return ONLY a JSON array. Each item: {{"fact": "<one atomic fact, a full sentence in the message's language>",
"owner": "<whose fact it is: user, or the person as the user calls them, e.g. wife, colleague, mom, 同事, Anna>",
"subject": "<short key for the attribute, without the owner, e.g. budget, diet, flight, dog name>",
"importance": <0..1>, "type": "preference|constraint|task|profile|event"}}.
"My colleague's budget is 3000" -> owner "colleague", subject "budget"; "the budget is 5000" -> owner "user".
Skip greetings, questions and one-off instructions (e.g. "convert this file now"). Return [] if nothing.

MESSAGE ({role}): {text}
JSON:"""

_OWNER_FIELDS = ("owner", "whose", "person", "about")


class LLMExtractor:
    """Extraction with any LLM callable; strict JSON; one call per message.

    Malformed JSON, an exception or a timeout yields no facts and a reason
    in :attr:`last_error` (the core puts it in the trace); the raw message
    is stored regardless. An item's ``owner`` may be missing, null or free
    text ("the user's wife", "User"): it is normalized, and read from the
    fact's text when unusable.
    """

    name = "llm"

    def __init__(
        self, llm: Callable[[str], str], *, roles: Sequence[str] = ("user",), prompt: str = EXTRACTION_PROMPT
    ) -> None:
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
        if isinstance(items, dict) and isinstance(items.get("facts"), list):
            items = items["facts"]  # {"facts": [...]}: a common wrapping
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
            owner, key = _owned_key(item, subject, text)
            facts.append(
                ExtractedFact(
                    text,
                    key,
                    importance,
                    kind,
                    transient=analyze(text).transient,
                    negated=bool(RETRACT.search(text)),
                    owner=owner,
                )
            )
        if skipped:
            self.last_error = "; ".join(skipped)
        return facts


def _owned_key(item: dict[str, object], subject: str, text: str) -> tuple[str, str | None]:
    """Owner and owner-qualified key of one LLM item, robust to how the owner was given."""
    declared = next((normalize_owner(item[f]) for f in _OWNER_FIELDS if f in item), None)
    raw = re.sub(r"\s+", " ", subject.strip().lower())
    keyed, _ = split_key(raw)  # "wife/age": the model qualified the key itself
    if keyed is not None:
        raw = raw.split("/", 1)[1].strip()
        declared = declared if declared not in (None, USER) else normalize_owner(keyed)
    raw = raw.replace("/", " ")
    owner = declared if declared is not None else detect_owner(text)
    if owner == USER and declared is None:
        stated, _ = owned_subject(text)  # "The user's wife is 34": the text names the owner
        owner = stated
    return owner, qualify(raw, owner)
