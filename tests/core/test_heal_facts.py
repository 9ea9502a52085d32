"""A process killed between the working-state append and the vector write:
the next core re-stores the messages (heal) and their facts and supersedes,
so the old value is never served as current again (issue #15: nothing
acknowledged is lost, whatever the write mode)."""

from __future__ import annotations

import pytest

from memory_vec._model.errors import BackendError, BackendUnavailableError, RecordRejectedError
from memory_vec._pipelines.resolution import fact_id
from memory_vec.backends import InMemoryBackend, RecordFilter
from memory_vec.state import InMemoryStateStore

EVERYTHING = RecordFilter(include_superseded=True, include_archived=True)


class Outage(InMemoryBackend):
    """The in-process backend, refusing writes while ``down`` (a store that went away)."""

    def __init__(self) -> None:
        super().__init__()
        self.down = False

    def _check(self) -> None:
        if self.down:
            raise BackendUnavailableError("the store is down")

    def upsert(self, records, vectors) -> None:  # type: ignore[no-untyped-def]
        self._check()
        super().upsert(records, vectors)

    def update(self, records) -> None:  # type: ignore[no-untyped-def]
        self._check()
        super().update(records)


def _crashed_after(make_core, backend: Outage, state, text: str):  # type: ignore[no-untyped-def]
    """``text`` added by a core whose writes never reach the store (it dies first)."""
    doomed = make_core(backend=backend, state=state)
    backend.down = True
    result = doomed.add_message("user", text)
    backend.down = False  # the store is back, the process that held the pending writes is gone
    assert result.pending
    return result


def test_the_next_core_re_derives_the_lost_facts_and_supersede(make_core) -> None:  # type: ignore[no-untyped-def]
    backend, state = Outage(), InMemoryStateStore()
    first = make_core(backend=backend, state=state)
    old = first.add_message("user", "The budget is 5000 dollars.")
    assert old.fact_ids
    lost = _crashed_after(make_core, backend, state, "Actually the budget is now 8000 dollars.")
    assert lost.fact_ids and lost.superseded_ids
    assert backend.get([lost.id]) == []  # only the working state has it

    restarted = make_core(backend=backend, state=state)
    restarted.build_context("what is the budget")  # the session's first read heals it
    hits = restarted.recall("what is the budget", k=5)
    assert "8000" in hits[0].text
    assert not any("5000" in h.text for h in hits)  # the old value is history, not current
    # The facts carry the ids the lost write gave them, so a fact that did arrive is not doubled.
    facts = backend.scan(RecordFilter(kinds=("fact",), include_superseded=True))
    assert {f.id for f in facts if lost.id in f.source_ids} == set(lost.fact_ids)
    assert lost.fact_ids == [fact_id(lost.id, 0)]
    [old_fact] = backend.get(old.fact_ids)
    assert old_fact.superseded_by == lost.fact_ids[0]

    again = make_core(backend=backend, state=state)  # a second restart finds nothing to do
    before = backend.count(EVERYTHING)
    again.build_context("what is the budget")
    assert backend.count(EVERYTHING) == before


def test_a_message_whose_facts_arrived_is_not_resolved_again(make_core) -> None:  # type: ignore[no-untyped-def]
    # The facts (and supersedes) are written before their message: when a
    # crash lands between the two, heal re-stores the message alone; deciding
    # its fact again could supersede what was said after it.
    backend, state = Outage(), InMemoryStateStore()
    first = make_core(backend=backend, state=state)
    first.add_message("user", "The budget is 5000 dollars.")
    second = first.add_message("user", "Actually the budget is now 8000 dollars.")
    third = first.add_message("user", "Sorry, the budget is 6500 dollars after all.")
    assert third.superseded_ids
    backend.delete(ids=[second.id])  # as if the process died before the message itself was stored

    restarted = make_core(backend=backend, state=state)
    restarted.build_context("what is the budget")  # the session's first read heals it
    hits = restarted.recall("what is the budget", k=5)
    assert [r.id for r in backend.get([second.id])] == [second.id]  # the message is back
    assert "6500" in hits[0].text
    assert not any("8000" in h.text for h in hits)
    [kept] = backend.get(second.fact_ids)
    assert kept.superseded_by == third.fact_ids[0]  # untouched by the heal


@pytest.mark.parametrize("extractor", ["rules", "none"])
def test_heal_restores_the_supersede_in_both_fact_modes(make_core, extractor: str) -> None:  # type: ignore[no-untyped-def]
    backend, state = Outage(), InMemoryStateStore()
    first = make_core(backend=backend, state=state, fact_extractor=extractor)
    first.add_message("user", "My favourite city is Lisbon.")
    _crashed_after(
        lambda **kw: make_core(fact_extractor=extractor, **kw), backend, state, "My favourite city is now Porto."
    )
    restarted = make_core(backend=backend, state=state, fact_extractor=extractor)
    restarted.build_context("favourite city")
    hits = restarted.recall("favourite city", k=5)
    assert "Porto" in hits[0].text
    assert not any("Lisbon" in h.text for h in hits)


class RefusesUpdates(InMemoryBackend):
    """The in-process backend, refusing every update as bad data (not an outage)."""

    def update(self, records) -> None:  # type: ignore[no-untyped-def]
        raise BackendError("refused: a field the collection does not accept")


def test_a_refused_supersede_still_stores_the_turn_and_says_so(make_core) -> None:  # type: ignore[no-untyped-def]
    # Supersedes are written first now; their refusal must not keep the turn's own rows out.
    backend = RefusesUpdates()
    core = make_core(backend=backend)
    core.add_message("user", "The budget is 5000 dollars.")
    with pytest.raises(RecordRejectedError):
        core.add_message("user", "Actually the budget is now 8000 dollars.")
    stored = backend.scan(RecordFilter(user_id="u1"))
    assert any("8000" in r.text and r.kind == "message" for r in stored)
    assert any("8000" in r.text and r.kind == "fact" for r in stored)
    assert {d.record_id for d in core.dead_letters()}  # the refused supersedes are kept, not dropped


def test_maintain_heals_the_sessions_nobody_opens_again(make_core) -> None:  # type: ignore[no-untyped-def]
    backend, state = Outage(), InMemoryStateStore()
    lost = _crashed_after(make_core, backend, state, "My favourite city is Porto.")  # session s1
    other = make_core(backend=backend, state=state, session_id="s2")  # the user comes back in a new chat
    other.build_context("where should we travel?")
    assert backend.get([lost.id]) == []  # s1 is not opened again
    report = other.maintain()
    assert report.restored == 1
    assert [r.id for r in backend.get([lost.id])] == [lost.id]
    assert {r.id for r in backend.get(lost.fact_ids)} == set(lost.fact_ids)
    assert other.maintain().restored == 0


class DiesAtCall(Outage):
    """Fails (as a killed process would stop) at the ``n``-th write call once armed."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[str] = []
        self.die_at: int | None = None

    def _note(self, name: str) -> None:
        self.calls.append(name)
        if self.die_at is not None and len(self.calls) == self.die_at:
            raise BackendUnavailableError(f"the process died at its {name}")

    def upsert(self, records, vectors) -> None:  # type: ignore[no-untyped-def]
        self._note("upsert")
        super().upsert(records, vectors)

    def insert_new(self, records, vectors) -> None:  # type: ignore[no-untyped-def]
        self._note("insert_new")
        super().upsert(records, vectors)

    def update(self, records) -> None:  # type: ignore[no-untyped-def]
        self._note("update")
        super().update(records)


@pytest.mark.parametrize("die_at", [1, 2])
def test_a_turn_write_cut_between_its_calls_never_leaves_the_old_value_current(make_core, die_at: int) -> None:  # type: ignore[no-untyped-def]
    backend, state = DiesAtCall(), InMemoryStateStore()
    make_core(backend=backend, state=state).add_message("user", "The budget is 5000 dollars.")
    doomed = make_core(backend=backend, state=state)
    backend.calls.clear()
    backend.die_at = die_at  # the turn's write is cut after die_at - 1 calls (a process killed there)
    assert doomed.add_message("user", "Actually the budget is now 8000 dollars.").pending
    assert backend.calls[0] == "update"  # the supersede goes first
    backend.die_at = None
    restarted = make_core(backend=backend, state=state)
    restarted.build_context("what is the budget")
    hits = restarted.recall("what is the budget", k=5)
    assert "8000" in hits[0].text and not any("5000" in h.text for h in hits)


@pytest.mark.parametrize("extractor", ["rules", "none"])
def test_heal_never_supersedes_what_was_said_after_the_lost_message(make_core, extractor: str) -> None:  # type: ignore[no-untyped-def]
    backend, state = Outage(), InMemoryStateStore()
    worker = make_core(backend=backend, state=state, fact_extractor=extractor)  # has healed s1 already
    worker.add_message("user", "The budget is 5000 dollars.")
    lost = _crashed_after(
        lambda **kw: make_core(fact_extractor=extractor, **kw),
        backend,
        state,
        "Actually the budget is now 8000 dollars.",
    )
    later = worker.add_message("user", "Sorry, the budget is 6500 dollars after all.")
    restarted = make_core(backend=backend, state=state, fact_extractor=extractor)
    restarted.build_context("what is the budget")
    current = [r.text for r in backend.scan(RecordFilter(user_id="u1"))]
    assert current and all("6500" in text for text in current)
    [healed] = backend.get([lost.id])
    assert healed.valid_to is not None  # history: superseded by what was said after it
    assert healed.superseded_by in {later.id, *later.fact_ids}


def test_a_refused_supersede_in_heal_still_restores_the_message_once(make_core) -> None:  # type: ignore[no-untyped-def]
    class RefusesOldValue(Outage):
        refuse = False

        def update(self, records) -> None:  # type: ignore[no-untyped-def]
            if self.refuse and any("5000" in r.text for r in records):
                raise BackendError("refused: a field the collection does not accept")
            super().update(records)

    backend, state = RefusesOldValue(), InMemoryStateStore()
    make_core(backend=backend, state=state).add_message("user", "The budget is 5000 dollars.")
    lost = _crashed_after(make_core, backend, state, "Actually the budget is now 8000 dollars.")
    backend.refuse = True
    restarted = make_core(backend=backend, state=state)
    restarted.add_message("user", "The weather is nice today.")
    assert [r.id for r in backend.get([lost.id])] == [lost.id]
    letters = len(restarted.dead_letters())
    assert letters >= 1
    restarted.add_message("user", "My cat is called Miso.")
    assert len(restarted.dead_letters()) == letters  # healed once, not again on every turn


def test_heal_finds_the_facts_that_arrived_whatever_the_extractor_says_now(make_core) -> None:  # type: ignore[no-untyped-def]
    from memory_vec import MemoryConfig, MemoryCore
    from memory_vec._rules.conflict import ExtractedFact
    from memory_vec.testing import DeterministicHashEmbedder

    class ChangeableLLM:  # stands in for an LLM extractor: another answer on the second call
        name, last_error, calls = "llm", "", 0

        def extract(self, role: str, content: str) -> list[ExtractedFact]:
            if role != "user" or "Lisbon" not in content:
                return []
            self.calls += 1
            if self.calls == 1:
                return [
                    ExtractedFact("Remind me tomorrow", None, 0.2, transient=True),
                    ExtractedFact("User lives in Lisbon", "home", 0.8),
                ]
            return [ExtractedFact("The user lives in Lisbon", "home", 0.8)]

    llm, backend, state = ChangeableLLM(), Outage(), InMemoryStateStore()

    def with_llm() -> MemoryCore:
        return MemoryCore(
            MemoryConfig(user_id="u1", session_id="s1", score_threshold=0.0),
            embedder=DeterministicHashEmbedder(dimension=64),
            backend=backend,
            state_store=state,
            extractor=llm,
        )

    first = with_llm().add_message("user", "Remind me tomorrow. I live in Lisbon.")
    backend.delete(ids=[first.id])  # the facts arrived, the message did not
    with_llm().build_context("where do I live")
    facts = backend.scan(RecordFilter(user_id="u1", kinds=("fact",)))
    assert [f.id for f in facts] == first.fact_ids  # no second copy under the new answer's index


def test_a_refused_message_in_heal_is_a_dead_letter_once_not_a_retry_every_turn(make_core) -> None:  # type: ignore[no-untyped-def]
    class RefusesPorto(Outage):
        refuse = False

        def upsert(self, records, vectors) -> None:  # type: ignore[no-untyped-def]
            if self.refuse and any("Porto" in r.text for r in records):
                raise BackendError("refused: a field the collection does not accept")
            super().upsert(records, vectors)

    backend, state = RefusesPorto(), InMemoryStateStore()
    lost = _crashed_after(
        lambda **kw: make_core(fact_extractor="none", **kw), backend, state, "My favourite city is Porto."
    )
    backend.refuse = True
    restarted = make_core(backend=backend, state=state, fact_extractor="none")
    restarted.add_message("user", "The weather is nice today.")  # heals first: the refusal is not its error
    assert [d.record_id for d in restarted.dead_letters()] == [lost.id]
    restarted.add_message("user", "My cat is called Miso.")
    assert len(restarted.dead_letters()) == 1
    assert any("Miso" in r.text for r in backend.scan(RecordFilter(user_id="u1")))
