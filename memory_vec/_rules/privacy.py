"""PII redaction before storage. Pure.

With ``redact_pii=True`` every message is redacted before it is embedded,
stored or put in the working state: e-mail addresses, phone numbers
(including Chinese mobile numbers), Chinese resident ID numbers and payment
card numbers (Luhn-checked) become typed placeholders like ``[EMAIL]``.
Pass your own ``Redactor`` (any ``text -> text`` callable with a ``name``)
to add rules or replace them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

__all__ = ["DEFAULT_RULES", "PIIRule", "Redactor", "RegexRedactor", "luhn_ok"]


def luhn_ok(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2 == 1:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def _id_card_ok(number: str) -> bool:
    """GB 11643 check digit of an 18-character Chinese resident ID."""
    weights = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)
    checks = "10X98765432"
    total = sum(int(c) * w for c, w in zip(number[:17], weights))
    return checks[total % 11] == number[17].upper()


@dataclass(frozen=True)
class PIIRule:
    name: str
    pattern: re.Pattern[str]
    placeholder: str
    check: Callable[[str], bool] | None = None


_DIGITS = re.compile(r"\D")

DEFAULT_RULES: tuple[PIIRule, ...] = (
    PIIRule("email", re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}"), "[EMAIL]"),
    PIIRule(
        "cn_id_card",
        re.compile(r"(?<!\d)[1-9]\d{5}(?:19|20)\d{2}(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\d|3[01])\d{3}[\dXx](?![\dXx])"),
        "[ID_CARD]",
        _id_card_ok,
    ),
    PIIRule("cn_mobile", re.compile(r"(?<![\d+])(?:\+?86[ -]?)?1[3-9]\d[ -]?\d{4}[ -]?\d{4}(?![\d ]\d)"), "[PHONE]"),
    PIIRule("card", re.compile(r"(?<!\d)(?:\d[ -]?){12,18}\d(?!\d)"), "[CARD]", lambda m: luhn_ok(_DIGITS.sub("", m))),
    # International (+CC ...) and North-American style numbers; bare digit
    # runs are left alone (amounts, years, order numbers).
    PIIRule(
        "phone",
        re.compile(
            r"\+\d{1,3}[ .-]?(?:\(\d{1,4}\)[ .-]?)?\d{1,4}(?:[ .-]\d{2,4}){1,4}(?!\d)"
            r"|(?<!\d)\(\d{3}\)\s?\d{3}-\d{4}(?!\d)|(?<![\d-])\d{3}-\d{3}-\d{4}(?![\d-])"
        ),
        "[PHONE]",
    ),
)


class Redactor:
    """Protocol-like base: ``redact(text) -> text``."""

    name = "redactor"

    def redact(self, text: str) -> str:
        raise NotImplementedError


class RegexRedactor(Redactor):
    """Redacts with ordered regex rules (most specific first).

    Example:
        >>> RegexRedactor().redact("mail me at a.b@example.com or 13812345678")
        'mail me at [EMAIL] or [PHONE]'
    """

    name = "regex"

    def __init__(self, rules: Sequence[PIIRule] = DEFAULT_RULES) -> None:
        self.rules = tuple(rules)

    def redact(self, text: str) -> str:
        for rule in self.rules:

            def replace(m: re.Match[str], rule: PIIRule = rule) -> str:
                return rule.placeholder if rule.check is None or rule.check(m.group(0)) else m.group(0)

            text = rule.pattern.sub(replace, text)
        return text
