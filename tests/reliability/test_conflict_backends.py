"""Conflict-overwrite, history and restore behave the same on every backend."""

from __future__ import annotations

import pytest

from memory_vec import WriteEvent

pytestmark = [pytest.mark.integration]


@pytest.mark.slow
def test_update_history_restore_on_every_backend(core_factory) -> None:  # type: ignore[no-untyped-def]
    core = core_factory(user_id="alice", session_id="s1")
    first = core.add_messages([("user", "The budget is 5000 dollars."), ("assistant", "Noted: 5000 dollars.")])[0]
    core.add_message("user", "I like green tea.")
    second = core.add_message("user", "Actually the budget is now 8000 dollars.", session_id="s2")
    assert second.event is WriteEvent.UPDATED and first.id in second.superseded_ids
    texts = [h.text for h in core.recall("what is the budget", k=10)]
    assert any("8000" in t for t in texts) and not any("5000" in t for t in texts)
    chain = core.history(second.fact_ids[0])
    assert [r.id for r in chain] == [first.fact_ids[0], second.fact_ids[0]]
    duplicate = core.add_message("user", "I like green tea.")
    assert duplicate.event is WriteEvent.SKIPPED_DUPLICATE
    core.restore(first.fact_ids[0])
    texts = [h.text for h in core.recall("what is the budget", k=10)]
    assert any("5000" in t for t in texts) and not any("8000" in t for t in texts)
    receipt = core.forget()
    assert receipt.remaining_after_scan == 0 and core.recall("budget", k=10) == []
