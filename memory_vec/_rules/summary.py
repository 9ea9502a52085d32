"""Rolling summary compression.

:func:`plan_fold` decides, from token counts alone, whether the working
buffer must fold and which oldest messages go (never the last
``keep_recent_turns``, never a tool result apart from its call). A
:class:`Summarizer` folds them with the previous summary into a new one:

* :class:`LLMSummarizer` asks any ``prompt -> text`` callable with a
  structured prompt, and refuses empty, error-like or over-budget answers
  (:class:`~memory_vec._model.errors.SummaryRejectedError`): the previous summary
  stays and the fold is retried on a later turn.
* :class:`ExtractiveSummarizer` needs no LLM: it keeps the highest-value
  sentences within the budget, and a newer sentence about the same subject
  replaces the older one.
"""

from __future__ import annotations

import concurrent.futures
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from memory_vec._model.errors import SummaryRejectedError
from memory_vec._model.session import StateMessage
from memory_vec._rules.assertion import Kind, Modality, assess
from memory_vec._rules.facts import analyze, extract_values, is_chinese, mentions_subject, preference, split_sentences
from memory_vec._rules.owners import owner_of
from memory_vec._rules.tokens import TokenCounter

__all__ = [
    "SUMMARY_PROMPT",
    "ExtractiveSummarizer",
    "FoldPlan",
    "LLMSummarizer",
    "Summarizer",
    "plan_fold",
    "validate_summary",
]


@dataclass(frozen=True)
class FoldPlan:
    """Fold ``messages`` (the oldest unfolded ones) into the summary."""

    messages: tuple[StateMessage, ...]
    folded_through: int  # seq of the last folded message
    expected_folded_through: int  # state.folded_through when planned (CAS)
    buffer_tokens: int  # summary + recent before the fold


def plan_fold(
    messages: Sequence[StateMessage],
    *,
    summary_tokens: int,
    folded_through: int,
    max_token_limit: int,
    trigger_ratio: float,
    target_ratio: float,
    keep_recent: int,
) -> FoldPlan | None:
    """Which oldest messages to fold now, or None when under the trigger."""
    recent_tokens = sum(m.tokens for m in messages)
    buffer_tokens = summary_tokens + recent_tokens
    if buffer_tokens <= trigger_ratio * max_token_limit:
        return None
    foldable = len(messages) - keep_recent
    if foldable <= 0:
        return None
    target = target_ratio * max_token_limit
    end = 0
    remaining = recent_tokens
    while end < foldable and remaining > target:
        remaining -= messages[end].tokens
        end += 1
    # A tool result belongs with the call before it: fold both or neither.
    while end < len(messages) and messages[end].role == "tool":
        end += 1
    if end > foldable:  # that reached into the protected window: back off
        end = foldable
        while 0 < end < len(messages) and messages[end].role == "tool":
            end -= 1
    if end == 0:
        return None
    chunk = tuple(messages[:end])
    return FoldPlan(chunk, chunk[-1].seq, folded_through, buffer_tokens)


@runtime_checkable
class Summarizer(Protocol):
    """Folds messages into the previous summary; returns the new summary."""

    name: str

    def summarize(self, previous: str, messages: Sequence[StateMessage], *, max_tokens: int) -> str: ...


SUMMARY_PROMPT = """You maintain the running memory of a conversation between a user and an assistant.
Update the CURRENT SUMMARY with the NEW MESSAGES and return only the updated summary.

Keep, as short bullet points:
1. Explicit preferences, constraints and prohibitions of the user (formats, budgets, things to never do).
2. Confirmed decisions and their reasons.
3. Open tasks and their state.
4. Key numbers, names, dates, versions and ids.
5. Changes of mind or mood.

Rules:
- When a new message changes a fact, keep only the newer value (you may note "changed from X").
- Drop small talk and anything already resolved and unimportant.
- Write in the language the conversation uses{language_hint}.
- At most {max_tokens} tokens. No preamble, no closing remarks.

CURRENT SUMMARY:
{previous}

NEW MESSAGES:
{messages}

UPDATED SUMMARY:"""

_ERRORISH = re.compile(
    r"^\s*(?:error|exception|traceback|i'?m sorry|sorry,|as an ai|i cannot|i can't|unable to|rate limit|"
    r"internal server error|service unavailable|request failed|null|none|n/a|抱歉|对不起|错误|无法)",
    re.IGNORECASE,
)


def validate_summary(text: object, *, max_tokens: int, counter: TokenCounter) -> str:
    """The summary text if usable, else :class:`SummaryRejectedError`."""
    if not isinstance(text, str):
        raise SummaryRejectedError(f"summarizer returned {type(text).__name__}, not text")
    text = text.strip()
    if not text:
        raise SummaryRejectedError("summarizer returned an empty summary")
    if _ERRORISH.search(text):
        raise SummaryRejectedError(f"summarizer returned an error-like text: {text[:80]!r}")
    tokens = counter.count(text)
    if tokens > max_tokens:
        raise SummaryRejectedError(f"summary has {tokens} tokens, over its budget of {max_tokens}")
    return text


def _format_messages(messages: Sequence[StateMessage]) -> str:
    return "\n".join(f"{m.role}: {m.content}" for m in messages)


class LLMSummarizer:
    """Summarizes with any LLM callable ``prompt -> text``.

    Args:
        llm: a function taking the prompt string and returning the answer.
            Framework adapters pass their LLM wrapped this way.
        counter: the token counter used to enforce ``max_tokens``.
        timeout: seconds to wait for the LLM before the fold is given up.
        prompt: the template; it receives ``previous``, ``messages``,
            ``max_tokens`` and ``language_hint``.

    Example:
        >>> s = LLMSummarizer(lambda p: "- budget is 5000", counter=get_token_counter())  # doctest: +SKIP
    """

    name = "llm"

    def __init__(
        self,
        llm: Callable[[str], str],
        *,
        counter: TokenCounter,
        timeout: float | None = 60.0,
        prompt: str = SUMMARY_PROMPT,
    ) -> None:
        self.llm = llm
        self.counter = counter
        self.timeout = timeout
        self.prompt = prompt

    def build_prompt(self, previous: str, messages: Sequence[StateMessage], *, max_tokens: int) -> str:
        text = previous + " " + " ".join(m.content for m in messages)
        hint = " (Chinese: write the summary in Chinese)" if is_chinese(text) else ""
        return self.prompt.format(
            previous=previous or "(none yet)",
            messages=_format_messages(messages),
            max_tokens=max_tokens,
            language_hint=hint,
        )

    def summarize(self, previous: str, messages: Sequence[StateMessage], *, max_tokens: int) -> str:
        prompt = self.build_prompt(previous, messages, max_tokens=max_tokens)
        if self.timeout is None:
            answer = self.llm(prompt)
        else:
            # A hung LLM must not hang the chat turn: give up after timeout.
            pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)
            try:
                answer = pool.submit(self.llm, prompt).result(timeout=self.timeout)
            except concurrent.futures.TimeoutError as exc:
                raise SummaryRejectedError(f"summarizer LLM timed out after {self.timeout}s") from exc
            finally:
                pool.shutdown(wait=False)
        return validate_summary(answer, max_tokens=max_tokens, counter=self.counter)


@dataclass
class _Line:
    text: str
    subject: str | None
    value: float
    order: int


def _newest_value_wins(lines: list[_Line]) -> list[_Line]:
    """Drop older lines that a newer line about the same person overrides.

    An older line goes when it has the same (owner-qualified) subject key,
    when it speaks of the subject with other numbers/names (an echo such as
    "[assistant] Got it, a budget of 5000 euros." of a value that has since
    changed), or when it states the opposite liking of the same thing
    ("I like olives" after "I don't like olives"). A line about another
    person ("my colleague's budget is 3000") never overrides the user's.
    """
    owners = {line.order: owner_of(line.subject, _body(line.text)) for line in lines}
    latest: dict[str, _Line] = {}
    liked: dict[str, _Line] = {}
    prefs = {line.order: preference(_body(line.text)) for line in lines}
    for line in lines:
        if not _sets_current_value(line.text):
            continue  # a question, a plan, a past or reported value, an echo: kept as itself, overrides nothing
        if line.subject:
            latest[line.subject] = line
        pref = prefs[line.order]
        if pref:
            liked[f"{owners[line.order]}/{pref[0]}"] = line
    kept = []
    for line in lines:
        body, owner, pref = _body(line.text), owners[line.order], prefs[line.order]
        newer_pref = liked.get(f"{owner}/{pref[0]}") if pref else None
        superseded = newer_pref is not None and newer_pref.order > line.order
        for subject, newest in latest.items():
            if superseded:
                break
            if newest.order <= line.order:
                continue
            if line.subject == subject:
                superseded = True
            elif owner == owners[newest.order] and mentions_subject(body, subject, line.subject):
                old_values = extract_values(body)
                superseded = bool(old_values) and not old_values <= extract_values(newest.text)
        if not superseded:
            kept.append(line)
    return kept


def _sets_current_value(line: str) -> bool:
    """The user asserting, now, a state: the only kind of line that replaces another."""
    role = line[1 : line.index("]")] if line.startswith("[") and "]" in line else "user"
    statement = assess(_body(line), role)
    return statement.modality is Modality.ASSERTED and statement.kind is Kind.STATE


def _body(text: str) -> str:
    """A summary line without its "[role] " prefix."""
    return text.split("] ", 1)[-1] if text.startswith("[") else text


class ExtractiveSummarizer:
    """Keeps the highest-value sentences, without an LLM.

    Each line of the summary is one sentence with its speaker. Sentences
    score by preference, constraint, decision, task, numbers, dates and
    names; a newer sentence setting the same subject (``the budget is
    8000``) replaces the older one. Within ``max_tokens``, the best lines
    are kept in conversation order.
    """

    name = "extractive"
    inline = True  # fast, offline and bounded: its folds run inside the turn

    def __init__(self, *, counter: TokenCounter, min_value: float = 0.35) -> None:
        self.counter = counter
        self.min_value = min_value

    def summarize(self, previous: str, messages: Sequence[StateMessage], *, max_tokens: int) -> str:
        lines: list[_Line] = []
        order = 0
        for previous_line in previous.splitlines():
            raw = previous_line.strip()
            if not raw.startswith("- "):
                continue
            sentence = raw[2:]
            body = sentence.split("] ", 1)[-1] if sentence.startswith("[") else sentence
            signals = analyze(body)
            lines.append(_Line(sentence, signals.subject, signals.value, order))
            order += 1
        for m in messages:
            if m.role not in ("user", "assistant"):
                continue
            for sentence in split_sentences(m.content):
                signals = analyze(sentence)
                # The user's own statements are what a summary must not lose.
                value = signals.value + (0.1 if m.role == "user" else -0.05)
                if value < self.min_value or len(sentence) < 4:
                    continue
                lines.append(_Line(f"[{m.role}] {sentence}", signals.subject, value, order))
                order += 1
        lines = _newest_value_wins(lines)
        # Best value first (newer wins ties), then fit the budget.
        ranked = sorted(lines, key=lambda ln: (-ln.value, -ln.order))
        chosen: list[_Line] = []
        used = 0
        for line in ranked:
            cost = self.counter.count("- " + line.text + "\n")
            if used + cost > max_tokens:
                continue
            chosen.append(line)
            used += cost
        chosen.sort(key=lambda ln: ln.order)
        text = "\n".join("- " + ln.text for ln in chosen)
        if not text and previous:
            return previous  # nothing worth keeping was added: keep what we had
        return text
