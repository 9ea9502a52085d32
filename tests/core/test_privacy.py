from __future__ import annotations

import pytest

from memory_vec._rules.privacy import RegexRedactor, luhn_ok
from memory_vec.testing import parts

CASES = [
    ("write to jane.doe+x@example.co.uk please", "write to [EMAIL] please"),
    ("我的手机是13812345678", "我的手机是[PHONE]"),
    ("call +86 138 1234 5678 today", "call [PHONE] today"),
    ("call +1 415-555-2671 or (415) 555-2671", "call [PHONE] or [PHONE]"),
    ("身份证11010519491231002X", "身份证[ID_CARD]"),
    ("card 4111 1111 1111 1111 ok", "card [CARD] ok"),
    ("not a card 4111 1111 1111 1112", "not a card 4111 1111 1111 1112"),  # fails Luhn
    (
        "budget 5000, year 2023, order 123456789, date 2023-05-08",
        "budget 5000, year 2023, order 123456789, date 2023-05-08",
    ),
]


@pytest.mark.parametrize(("text", "expected"), CASES)
def test_default_rules(text: str, expected: str) -> None:
    assert RegexRedactor().redact(text) == expected


def test_luhn() -> None:
    assert luhn_ok("4111111111111111") and not luhn_ok("4111111111111112")


def test_redaction_happens_before_storage_embedding_and_state(make_core) -> None:  # type: ignore[no-untyped-def]
    core = make_core(redact_pii=True)
    r = core.add_message("user", "my email is bob@example.com and phone 13812345678")
    stored = parts(core).backend.get([r.id])[0].text
    assert stored == "my email is [EMAIL] and phone [PHONE]"
    assert core.working_state().messages[0].content == stored
    assert "bob@example.com" not in str(core.export_memories())


def test_custom_redactor_is_pluggable(make_core) -> None:  # type: ignore[no-untyped-def]
    from memory_vec._rules.privacy import Redactor

    class Names(Redactor):
        name = "names"

        def redact(self, text: str) -> str:
            return text.replace("Alice", "[NAME]")

    from memory_vec import MemoryConfig, MemoryCore
    from memory_vec.backends import InMemoryBackend
    from memory_vec.state import InMemoryStateStore

    base = make_core()
    core = MemoryCore(
        MemoryConfig(user_id="u"),
        embedder=parts(base).embedder,
        backend=InMemoryBackend(),
        state_store=InMemoryStateStore(),
        redactor=Names(),
    )
    r = core.add_message("user", "Alice likes tea")
    assert parts(core).backend.get([r.id])[0].text == "[NAME] likes tea"
