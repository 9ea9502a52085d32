"""The core's async twins: the sync methods' exact signatures, every argument
passed through, and ``async with`` closing the core as ``with`` does."""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Callable
from typing import Any

import pytest

from memory_vec import MemoryConfig, MemoryCore
from memory_vec.backends import InMemoryBackend
from memory_vec.state import InMemoryStateStore
from memory_vec.testing import DeterministicHashEmbedder

_NOT_METHODS = {"__init__", "__enter__", "__exit__", "__aenter__", "__aexit__"}


def _twins() -> list[tuple[str, str]]:
    names = {name for name, member in vars(MemoryCore).items() if inspect.isfunction(member)}
    return sorted((name, f"a{name}") for name in names if not name.startswith("_") and f"a{name}" in names)


def test_every_public_method_has_an_async_twin() -> None:
    public = {
        name
        for name, member in vars(MemoryCore).items()
        if inspect.isfunction(member) and not name.startswith("_") and not inspect.iscoroutinefunction(member)
    }
    assert public - {name for name, _ in _twins()} == set()


@pytest.mark.parametrize(("sync", "twin"), _twins(), ids=[t for _, t in _twins()])
def test_twin_has_the_sync_methods_signature(sync: str, twin: str) -> None:
    sync_sig = inspect.signature(getattr(MemoryCore, sync))
    twin_sig = inspect.signature(getattr(MemoryCore, twin))
    assert inspect.iscoroutinefunction(getattr(MemoryCore, twin))
    assert list(twin_sig.parameters.values()) == list(sync_sig.parameters.values())
    assert twin_sig.return_annotation == sync_sig.return_annotation
    assert not any(p.kind is p.VAR_KEYWORD for p in twin_sig.parameters.values())


class _Stop(Exception):
    """Raised by the spy once it has seen the call."""


def _marker(parameter: inspect.Parameter) -> Any:
    return object() if parameter.default is inspect.Parameter.empty else ("given", parameter.name)


@pytest.mark.parametrize(("sync", "twin"), _twins(), ids=[t for _, t in _twins()])
def test_twin_passes_every_argument_to_its_sync_method(
    sync: str, twin: str, make_core: Callable[..., MemoryCore], monkeypatch: pytest.MonkeyPatch
) -> None:
    core = make_core()
    seen: list[inspect.BoundArguments] = []
    sync_sig = inspect.signature(getattr(core, sync))

    def spy(*args: Any, **kwargs: Any) -> Any:
        seen.append(sync_sig.bind(*args, **kwargs))
        raise _Stop

    monkeypatch.setattr(core, sync, spy)
    args, kwargs = [], {}
    for p in sync_sig.parameters.values():
        value = ["a message"] if p.name == "messages" else _marker(p)  # aadd_messages lists its input
        if p.kind is p.KEYWORD_ONLY:
            kwargs[p.name] = value
        else:
            args.append(value)
    with pytest.raises(_Stop):
        asyncio.run(getattr(core, twin)(*args, **kwargs))
    (call,) = seen
    assert [call.arguments[p] for p in sync_sig.parameters] == [*args, *kwargs.values()]


def test_async_twins_store_and_recall_with_their_arguments(make_core: Callable[..., MemoryCore]) -> None:
    core = make_core()

    async def run() -> None:
        await core.aadd_message("user", "kiwis are my favourite fruit", metadata={"topic": "food"}, user_id="ann")
        await core.aadd_messages([("user", "kiwis grow in New Zealand")], session_id="trip", user_id="ann")
        await core.aadd_message("user", "kiwis for bob", user_id="bob")
        hits = await core.arecall("kiwis", user_id="ann", filters={"topic": "food"}, k=5)
        assert [h.text for h in hits] == ["kiwis are my favourite fruit"]
        in_trip = await core.arecall("kiwis", user_id="ann", scope="session", session_id="trip")
        assert {h.session_id for h in in_trip} == {"trip"}
        state = await core.aworking_state(session_id="trip", user_id="ann")
        assert [m.content for m in state.messages] == ["kiwis grow in New Zealand"]
        receipt = await core.aforget(user_id="ann", session_id="trip")
        assert receipt.records_deleted == 1 and receipt.remaining_after_scan == 0
        assert all(h.user_id == "bob" for h in await core.arecall("kiwis", user_id="bob"))

    asyncio.run(run())


def _slow_summary(prompt: str) -> str:
    time.sleep(0.3)  # still folding when the block ends, unless closing waits for it
    return "- the user plans a trip to Lisbon"


def _folding_core() -> MemoryCore:
    config = MemoryConfig(
        user_id="u1",
        session_id="s1",
        max_token_limit=120,
        summary_max_tokens=60,
        keep_recent_turns=1,
        summary_in_background=True,
    )
    return MemoryCore(
        config,
        embedder=DeterministicHashEmbedder(dimension=64),
        backend=InMemoryBackend(),
        state_store=InMemoryStateStore(),
        llm=_slow_summary,
    )


_TURNS = [("user", f"Plan for the Lisbon trip, part {i}: museums, food and a day at the beach.") for i in range(12)]


def test_async_with_closes_the_core_like_with() -> None:
    with _folding_core() as core:
        core.add_messages(_TURNS)
    after_with = core.working_state().summary

    async def run() -> MemoryCore:
        async with _folding_core() as core:
            await core.aadd_messages(_TURNS)
        return core

    core = asyncio.run(run())
    assert "trip to Lisbon" in after_with
    assert core.working_state().summary == after_with  # the background fold ran before the block ended
