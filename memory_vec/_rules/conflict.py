"""Conflict decisions. Pure: no I/O.

* :class:`ConflictResolver` compares a new fact with its nearest existing
  facts in the same scope and decides ADD, UPDATE (supersede the old ones),
  NOOP (exact duplicate) or DELETE (the user retracted it). Facts of
  different owners (the user, a relative, a colleague, a named person; see
  :mod:`memory_vec._rules.owners`) never supersede each other. An optional LLM
  judge settles borderline cases.
* :func:`patch_summary` makes the running summary agree with an update.

The extractors live in :mod:`memory_vec._rules.extraction` and are re-exported here.
"""

from __future__ import annotations

import concurrent.futures
import enum
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from memory_vec._rules.assertion import Assertion, assess, says_changed, why_not_superseding
from memory_vec._rules.change import (
    StatedChange,
    change_applies,
    corrects,
    numbers,
    retraction,
    retracts,
    stated_change,
)
from memory_vec._rules.extraction import EXTRACTION_PROMPT, ExtractedFact, FactExtractor, LLMExtractor, RuleExtractor
from memory_vec._rules.facts import (
    distinct_subjects,
    extract_values,
    is_chinese,
    mentions_subject,
    preference,
    proper_names,
    subject_key,
    subject_value,
)
from memory_vec._rules.owners import OTHER, USER, detect_owner, owner_of
from memory_vec._rules.ranking import dedupe_key
from memory_vec._rules.slots import (
    correction_cue,
    distinct_ids,
    names_anyone,
    same_words_new_value,
    slot_correction,
    slot_update,
)
from memory_vec._rules.supersede_model import shipped_model

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
    "why_restore",
]


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
    #: A user message no fact was extracted from ("I smoke", "房租每月2500"): only the explicit
    #: rules (a retraction, a stated change, the same slot with a new value) may replace it.
    plain: bool = False


@dataclass(frozen=True)
class ConflictDecision:
    action: ConflictAction
    superseded: tuple[str, ...] = ()
    duplicate_of: str | None = None
    reason: str = ""
    judged: bool = False


_BORDERLINE = "borderline"
_CORRECTION = "rule: a correction of the value just said"
_NEAREST_CHANGE = "rule: a change of the nearest value of its kind"
_NEAREST_ONLY = (_CORRECTION, _NEAREST_CHANGE)


@dataclass(frozen=True)
class _NewFact:
    """What every comparison needs of the new fact, computed once."""

    fact: ExtractedFact
    key: str
    values: set[str]
    subject: str | None
    owner: str
    pref: tuple[str, bool] | None
    assertion: Assertion
    #: Says the value changed ("now", "moved to", "改成"): the frame may differ.
    changes: bool
    #: The change it states outright ("raised the budget to 8000", "从5000改成8000", "8000, not 5000").
    change: StatedChange | None
    #: Corrects the value said before without naming it ("sorry, I meant 8000", "说错了，是7点15").
    corrects: bool
    #: What it says no longer holds ("vegetarian" in "I'm not vegetarian anymore", "喝咖啡").
    retracted: str | None
    #: A correction that names no one and no subject ("打错字了，是刘琳" after "我妈叫刘玲"): it speaks
    #: of whoever the statement it corrects speaks of.
    owns_nothing: bool = False
    #: Names an owner other than by a pronoun ("my", 我的, a proper name): "we pushed his bedtime" does not.
    names_an_owner: bool = True

    @classmethod
    def of(cls, fact: ExtractedFact) -> _NewFact:
        subject = fact.subject or subject_key(fact.text)
        return cls(
            fact,
            dedupe_key(fact.text),
            extract_values(fact.text),
            subject,
            fact.owner or owner_of(fact.subject, fact.text),
            preference(fact.text),
            assess(fact.text),
            says_changed(fact.text),
            stated_change(fact.text),
            corrects(fact.text),
            retraction(fact.text),
            correction_cue(fact.text) and not names_anyone(fact.text) and not subject,
            names_anyone(fact.text, pronouns=False),
        )


@dataclass
class ConflictResolver:
    """Decides what a new fact does to its nearest existing facts.

    A fact of another owner is never touched: "my colleague's budget is
    3000" neither updates nor is updated by "the budget is now 8000". Then,
    in order: the same text (up to case and punctuation) is a NOOP; the same
    subject key with other values is an UPDATE; the same liked or disliked
    object with the opposite polarity ("I like X" / "I don't like X") is an
    UPDATE; similarity at or above ``threshold`` with differing numbers,
    dates or names is an UPDATE; a retraction ("not X anymore") of a subject
    is a DELETE of it. Pairs within ``judge_margin`` below the threshold, or
    with the same subject and no values to compare, go to the optional
    ``judge`` (``prompt -> text`` answering ADD / UPDATE / DELETE / NOOP).
    """

    threshold: float = 0.8
    judge: Callable[[str], str] | None = None
    #: ``rules`` (the statement model and the value rules below) or ``learned``
    #: (:class:`~memory_vec._rules.supersede_model.SupersedeModel` decides each same-owner pair).
    detector: str = "rules"
    judge_margin: float = 0.1
    #: Seconds to wait for the judge; on a timeout both values are kept.
    judge_timeout: float | None = 20.0
    #: Judge calls this resolver may make (None: no cap); past it the offline decision stands.
    judge_budget: int | None = None
    judge_calls: int = field(default=0, init=False)

    def decide(
        self,
        fact: ExtractedFact,
        existing: Sequence[ExistingFact],
        *,
        subject_only: bool = False,
        plain: bool = False,
    ) -> ConflictDecision:
        """``subject_only``: supersede only on a matching subject key (used for
        raw messages when no extractor runs, where similar chat lines with
        different numbers are usually different things, not updates).
        ``plain``: ``fact`` is a whole user message no fact was extracted from;
        like a plain old message, only the explicit rules may supersede."""
        new = _NewFact.of(fact)
        superseded: list[str] = []
        reasons: list[str] = []
        borderline: list[ExistingFact] = []
        kept_because = ""
        for old in existing:
            if dedupe_key(old.text) == new.key:
                return ConflictDecision(ConflictAction.NOOP, duplicate_of=old.id, reason="exact duplicate")
            if (old_owner := owner_of(old.subject, old.text)) != new.owner and not _speaks_of(new, old_owner):
                continue  # someone else's fact: not an update, not even a borderline one
            # Only an asserted-now state replaces an asserted state of the same entity.
            if why := why_not_superseding(new.assertion, assess(old.text)):
                kept_because = kept_because or why
                continue
            verdict = self._verdict(new, old, subject_only=subject_only, plain=plain or old.plain)
            if verdict in _NEAREST_ONLY:  # the nearest value it can correct or change, and that one only
                verdict = "" if any(r in _NEAREST_ONLY for r in reasons) else verdict
            if verdict == _BORDERLINE:
                borderline.append(old)
            elif verdict:
                superseded.append(old.id)
                reasons.append(verdict)
                if plain:
                    break  # a whole message replaces the nearest statement it restates, not every look-alike
        action = ConflictAction.DELETE if fact.negated else ConflictAction.UPDATE
        offline = (
            ConflictDecision(action, tuple(superseded), reason=reasons[0])
            if superseded
            else ConflictDecision(ConflictAction.ADD, reason=f"kept: {kept_because}" if kept_because else "new fact")
        )
        # The judge sees every supersede the offline path proposes and every pair it is unsure of.
        proposed = [old for old in existing if old.id in superseded] + borderline
        if self.judge is None or not proposed:
            return offline
        if self.judge_budget is not None and self.judge_calls >= self.judge_budget:
            return replace(offline, reason=f"{offline.reason} (judge budget of {self.judge_budget} calls spent)")
        return self._ask_judge(fact, proposed)

    def _verdict(self, new: _NewFact, old: ExistingFact, *, subject_only: bool, plain: bool) -> str:
        """The rules' or the learned judge's verdict on a pair that passed the statement gate."""
        if plain:  # a whole message on either side: the explicit rules only
            return _explicit_verdict(new, old.text, old.subject)
        if self.detector == "learned":  # behind the same gate: the judge decides the rest
            model = shipped_model()
            return "learned judge" if model.probability(old.text, new.fact.text) >= model.threshold else ""
        return self._rule_verdict(new, old, subject_only=subject_only)

    def _rule_verdict(self, new: _NewFact, old: ExistingFact, *, subject_only: bool) -> str:
        """Why the rules supersede ``old`` (the rule's name), :data:`_BORDERLINE`, or ""."""
        old_subject = old.subject or subject_key(old.text)
        old_values = extract_values(old.text)
        # "these are all great suggestions": a pointing word names what the chat points at, not a
        # thing whose value the user keeps.
        same_subject = bool(new.subject) and new.subject == old_subject and not _DEICTIC.match(new.subject or "")
        if new.fact.negated and same_subject:
            return "rule: retraction of the subject"
        if why := _explicit_verdict(new, old.text, old_subject):
            return why
        if distinct_ids(new.fact.text, old.text):
            return ""  # "the Q1 report" / "the Q2 report", "flight AA120" / "flight AA455": two things
        old_pref = preference(old.text)
        if new.pref and old_pref and new.pref[0] == old_pref[0] and new.pref[1] != old_pref[1]:
            return "rule: the opposite liking"  # "I love sushi" -> "I don't like sushi (anymore)", and back
        # (Tried: letting a nested subject, "budget cap" / "budget", supersede
        # on differing values. Conflict benchmark, EN: stale@5 0.113 -> 0.083
        # but current@5 0.979 -> 0.921 and false overwrites 42 -> 99: dropped.)
        values_differ = new.values != old_values
        # Without a change word, a new value must come in the same frame: "my rent is $1,400" and
        # "my rent is due on the 1st" share the subject but say two things.
        same_frame = new.changes or _frame(new.fact.text) == _frame(old.text)
        # a value on one side only: both must set a short value
        if (
            same_subject
            and same_frame
            and values_differ
            and ((new.values and old_values) or ((new.values or old_values) and _short_values(new.fact.text, old.text)))
        ):
            return "rule: same subject, new value"
        if same_subject and not new.values and not old_values and _new_value_text(new.fact.text, old.text):
            return "rule: same subject, new value"  # "favorite drink is tea" -> "... is now coffee"
        if (
            not subject_only
            and same_frame
            and old.similarity >= self.threshold
            and self._similar_new_value(new, old, old_subject)
        ):
            return "rule: similar statement, new value"
        if same_subject or old.similarity >= self.threshold - self.judge_margin:
            return _BORDERLINE
        return ""

    @staticmethod
    def _similar_new_value(new: _NewFact, old: ExistingFact, old_subject: str | None) -> bool:
        """Similar statements with comparable values that differ: the same thing changed."""
        old_values = extract_values(old.text)
        # Both name a subject and each names something the other does not
        # ("thesis deadline" / "project deadline"): similar wording alone
        # must not make one overwrite the other.
        if new.subject and old_subject and distinct_subjects(new.subject, old_subject):
            return False
        return (
            bool(new.values and old_values)
            and new.values != old_values
            and _comparable(new.values, old_values)
            and not _different_units(new.fact.text, old.text)
            and not _different_anchors(new.fact.text, old.text, new.values, old_values)
        )

    def _ask_judge(self, fact: ExtractedFact, borderline: Sequence[ExistingFact]) -> ConflictDecision:
        assert self.judge is not None
        listing = "\n".join(f"[{i}] {old.text}" for i, old in enumerate(borderline))
        prompt = (
            "A user's memory holds these facts:\n" + listing + f"\n\nNew statement: {fact.text}\n"
            "Answer with one word and the indexes it affects, e.g. 'UPDATE 0' or 'ADD' or 'NOOP 1' or 'DELETE 0':\n"
            "ADD (new information), UPDATE (replaces those facts), DELETE (retracts them), NOOP (already known)."
        )
        self.judge_calls += 1
        pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)
        try:
            answer = str(pool.submit(self.judge, prompt).result(timeout=self.judge_timeout)).strip().upper()
        except concurrent.futures.TimeoutError:
            reason = f"judge failed: no answer within {self.judge_timeout}s; both kept"
            return ConflictDecision(ConflictAction.ADD, reason=reason, judged=True)
        except Exception as exc:  # noqa: BLE001 - any failure of the caller's judge falls back to keeping both
            return ConflictDecision(ConflictAction.ADD, reason=f"judge failed: {exc}; both kept", judged=True)
        finally:
            pool.shutdown(wait=False)  # a hung judge must not hang the turn
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


# Whose schedules and doses a user keeps as the household's: "钢琴课调到周日下午三点了" after
# "我儿子的钢琴课是周六上午" speaks of the son's lesson; "the budget is now 8000" after "my
# colleague's budget is 3000" does not speak of the colleague's.
_HOUSEHOLD = frozenset(
    "child children son daughter baby mother father parents grandmother grandfather"  # noqa: SIM905
    " 孩子 儿子 女儿 妈妈 爸爸 父母 爷爷 奶奶 外公 外婆".split()
)


def _speaks_of(new: _NewFact, old_owner: str) -> bool:
    """A statement that names no one speaks of the owner of the statement it corrects, or of a
    member of the household whose thing it restates."""
    # "We pushed his bedtime to 8:30" after "our son's bedtime is 8pm": a pronoun points back at him
    household = old_owner in _HOUSEHOLD and new.owner in (USER, OTHER)
    return new.owns_nothing or (household and not new.names_an_owner)


def _explicit_verdict(new: _NewFact, old_text: str, old_subject: str | None) -> str:
    """The rules that read what the new statement says it does to the old one, in order: it ends it
    ("I'm not vegetarian anymore"), states the change ("raised the budget to 8000"), corrects the
    value just said ("sorry, I meant 8000", "Oops, March 21."), or sets the same slot anew ("My rent's
    $1,350 a month"). :data:`_CORRECTION` for a correction (the resolver keeps the nearest only)."""
    if new.retracted and retracts(new.retracted, old_text):
        return "rule: a retraction of what it said"
    if new.change is not None and change_applies(new.change, new.fact.text, old_text, old_subject):
        return "rule: a stated change of this value"
    if new.change is None and new.corrects and _correctable(new, old_text, old_subject):
        return _CORRECTION
    if why := slot_update(new.fact.text, old_text) or same_words_new_value(new.fact.text, old_text):
        return why
    # "是A4417，不是A4471": a change that names no thing may still correct the value just said, and
    # "改成十点半睡" changes the nearest value of its kind
    no_thing = new.change is None or new.change.thing is None
    changed = new.change is not None and new.change.thing is None and new.change.old is None
    if not no_thing or not slot_correction(new.fact.text, old_text, changed=changed):
        return ""
    return _NEAREST_CHANGE if changed and not corrects(new.fact.text) else _CORRECTION


def why_restore(old_text: str, new_text: str) -> str:
    """For a stored supersede (``new`` replaced ``old``): the reason the statement
    model would not make it today, "" if it still would. Stores written by 0.1's
    rules hold supersedes of events, past, reported or hypothetical values."""
    if owner_of(None, old_text) != owner_of(None, new_text):
        return "another owner"
    return why_not_superseding(assess(new_text), assess(old_text))


_DEICTIC = re.compile(r"(?:this|that|these|those|it|they|there|here)\b|(?:这|那)(?:些|个|样|里|儿)?", re.IGNORECASE)
_POSSESSIVE = re.compile(r"['’](?:s|re|m|ve|ll|d)$")
_FRAME_WORD = re.compile(r"[a-z]+(?:['’][a-z]+)?|[\u4e00-\u9fff]")
_FRAME_STOP = frozenset(
    (  # noqa: SIM905 - a word list reads better as words
        "a an the is are am was were be been being 's 'm 're my our your his her their i we you me us it its "
        "it's this that these those now currently actually still just anymore any more no longer so well oh "
        "ok okay yeah btw also too really very and but of as today days nowadays update correction sorry "
        "meant i'm we're it’s i’m wait hmm ugh oops yes right anyway "
        "我 的 是 了 们 咱 呢 啊 吧 啦 也 都 就 才 还 又 很 现 在 已 经 目 前 如 今 个 这 那 对 哦 嗯 呀 "
        "一 二 三 四 五 六 七 八 九 十 两 百 千 万"
    ).split()
)


def _frame(text: str) -> frozenset[str]:
    """A statement's words without its values and function words: what it says something about."""
    values = " ".join(extract_values(text))
    words = (_POSSESSIVE.sub("", w) for w in _FRAME_WORD.findall(text.lower()))
    return frozenset(w for w in words if w not in _FRAME_STOP and not (len(w) > 1 and w in values))


def _values(text: str) -> set[str]:
    """Numbers (8k = 8000, 两万 = 20000), dates and names."""
    return extract_values(text) | {f"{n:g}" for n in numbers(text)}


def _correctable(new: _NewFact, old_text: str, old_subject: str | None) -> bool:
    """ "Sorry, I meant 8000" after "the budget is 5000": values of one kind that differ, and no
    other subject named."""
    if new.subject and old_subject and distinct_subjects(new.subject, old_subject):
        return False
    new_numbers, old_numbers = numbers(new.fact.text), numbers(old_text)
    if new_numbers and old_numbers:
        return not new_numbers & old_numbers and not _different_units(new.fact.text, old_text)
    new_values, old_values = _values(new.fact.text), _values(old_text)
    return bool(new_values and old_values) and not new_values & old_values and _comparable(new_values, old_values)


def _short_values(new_text: str, old_text: str) -> bool:
    """Both set a short value ("my boss is called Henry" / "my boss is Anna"),
    not a description ("my boss is strict with deadlines and …")."""
    new, old = subject_value(new_text), subject_value(old_text)
    return bool(new and old) and all(
        len(v) <= 12 if is_chinese(v) else len(v.split()) <= 4 for v in (new or "", old or "")
    )


def _new_value_text(new_text: str, old_text: str) -> bool:
    """Short values that differ ("green tea" / "black coffee"); long ones
    ("my boss is strict with deadlines and ...") describe, they do not set a value."""
    new, old = subject_value(new_text), subject_value(old_text)
    if not new or not old or new == old:
        return False
    return all(len(v) <= 12 if is_chinese(v) else len(v.split()) <= 4 for v in (new, old))


_UNIT = re.compile(r"\d[\d,.:]*\s*(?P<unit>[a-z]{2,}|[\u4e00-\u9fff])", re.IGNORECASE)


def _different_units(a: str, b: str) -> bool:
    """ "60 guests" vs "160 chairs": numbers that count different things."""
    ua = {m.lower() for m in _UNIT.findall(a)}
    ub = {m.lower() for m in _UNIT.findall(b)}
    return bool(ua and ub) and not (ua & ub)


def _different_anchors(a: str, b: str, va: set[str], vb: set[str]) -> bool:
    """ "My flight to Tokyo leaves at 7:15" / "the flight to Denver leaves at
    16:30": each names a place or person the other does not, and their
    numbers differ too: two things, not one changed. (An update that keeps
    its anchor, "my flight to Tokyo now leaves at 9:15", shares the name.)"""
    na, nb = proper_names(a), proper_names(b)
    if not na or not nb or na & nb:
        return False
    digits = re.compile(r"\d")
    return any(digits.match(v) for v in va) and any(digits.match(v) for v in vb)


def _comparable(a: set[str], b: set[str]) -> bool:
    """Two value sets disagree meaningfully: both numeric, or both names/dates."""

    def numeric(values: set[str]) -> bool:
        return any(v[:1].isdigit() or v[:1] in "+-" for v in values)

    return numeric(a) == numeric(b)


def patch_summary(summary: str, *, subject: str | None, old_texts: Sequence[str], new_text: str | None) -> str:
    """Make a line-oriented summary agree with an update; the new statement is added.

    ``new_text`` None: the old statements were deleted; their lines go, nothing is added.

    A line goes when it repeats a superseded statement (the user's, or the
    assistant's echo of it), when it carries a superseded value and speaks of
    the subject ("[assistant] Got it, a budget of 5000 euros." after the
    travel budget changed), or when it states the opposite liking of the
    same thing. Lines about another person ("my colleague's budget …") stay.
    """
    if not summary:
        return summary
    owner = owner_of(subject, new_text or (old_texts[0] if old_texts else ""))
    old_keys = {dedupe_key(t) for t in old_texts}
    old_values: set[str] = set()
    for text in old_texts:
        old_values |= extract_values(text)
    stale = old_values - extract_values(new_text or "")
    new_pref = preference(new_text) if new_text else None
    lines = summary.splitlines()
    kept = []
    for line in lines:
        body = _LINE_PREFIX.sub("", line)
        if body and dedupe_key(body) in old_keys:
            continue
        if not body or detect_owner(body) != owner:
            kept.append(line)
            continue
        if (
            stale
            and extract_values(body) & stale
            and (not subject or mentions_subject(body, subject, subject_key(body)))
        ):
            continue
        pref = preference(body)
        if new_pref and pref and pref[0] == new_pref[0] and pref[1] != new_pref[1]:
            continue
        kept.append(line)
    if len(kept) == len(lines):
        return summary  # the summary never stated the old value
    if new_text:
        marker = "- [user] " if summary.lstrip().startswith("- ") else ""
        kept.append(f"{marker}{new_text}")
    return "\n".join(kept)


_LINE_PREFIX = re.compile(r"^\s*(?:[-*•]\s*)?(?:\[[a-z]+\]\s*)?")


def fact_language(text: str) -> str:
    return "zh" if is_chinese(text) else "en"
