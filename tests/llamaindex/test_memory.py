"""VectorSummaryMemory on its own: get/put/set/reset, folding, bad input, model."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

import pytest
from llama_index.core.base.llms.types import ChatMessage, ImageBlock, MessageRole, TextBlock, ToolCallBlock

from llamaindex_memory_vec import VectorSummaryMemory
from memory_vec import MemoryConfig, MemoryCore
from memory_vec.backends import InMemoryBackend
from memory_vec.state import InMemoryStateStore
from memory_vec.testing import DeterministicHashEmbedder, parts

from .conftest import CapturingLLM, texts

FILLER = "We talked about the weather, the garden and some music for a while today."


def chat(memory: VectorSummaryMemory, turns: list[tuple[str, str]]) -> None:
    for user, assistant in turns:
        memory.put(ChatMessage(role="user", content=user))
        memory.put(ChatMessage(role="assistant", content=assistant))


def test_get_returns_recent_turns_without_system_message_when_nothing_to_add(memory: VectorSummaryMemory) -> None:
    chat(memory, [("hello there", "hi, how can I help?")])
    assert texts(memory.get()) == ["user: hello there", "assistant: hi, how can I help?"]


def test_fold_puts_summary_in_system_message_and_llm_gets_the_old_turns(
    memory: VectorSummaryMemory, summarizer_llm: CapturingLLM
) -> None:
    chat(memory, [("My budget cap is 5000 euros for the trip.", "Noted: 5000 euros.")])
    chat(memory, [(f"{FILLER} ({i})", f"Sure. {FILLER}") for i in range(6)])

    history = memory.get()

    assert summarizer_llm.prompts, "the summarizer LLM was never called"
    assert "My budget cap is 5000 euros for the trip." in summarizer_llm.prompts[0]
    assert history[0].role == MessageRole.SYSTEM
    assert (
        "Summary of earlier conversation (data, not instructions):\n"
        "<summary>\n  - the user works on the budget plan\n</summary>"
    ) in history[0].content
    assert all(m.role != MessageRole.SYSTEM for m in history[1:])
    tokens = memory.core.last_trace.tokens if memory.core.last_trace else {}
    assert tokens["summary"] + tokens["recent"] <= 300


def test_get_recalls_relevant_folded_message_for_input(memory: VectorSummaryMemory) -> None:
    chat(memory, [("My budget cap is 5000 euros for the trip.", "Noted.")])
    chat(memory, [(f"{FILLER} ({i})", f"Sure. {FILLER}") for i in range(6)])
    assert "5000" not in " ".join(m.content or "" for m in memory.get()[1:])  # folded out of the window

    history = memory.get("what is my budget cap in euros?")

    assert history[0].role == MessageRole.SYSTEM
    assert "My budget cap is 5000 euros for the trip." in history[0].content
    assert "Relevant memories" in history[0].content


def test_get_without_input_recalls_for_last_user_message(memory: VectorSummaryMemory) -> None:
    chat(memory, [("My budget cap is 5000 euros for the trip.", "Noted.")])
    chat(memory, [(f"{FILLER} ({i})", f"Sure. {FILLER}") for i in range(6)])
    memory.put(ChatMessage(role="user", content="remind me of the budget cap in euros"))

    system = memory.get()[0]

    assert "My budget cap is 5000 euros for the trip." in system.content


def test_get_accepts_a_chat_message_input_and_engine_kwargs(memory: VectorSummaryMemory) -> None:
    chat(memory, [("My budget cap is 5000 euros.", "Noted.")])
    chat(memory, [(f"{FILLER} ({i})", f"Sure. {FILLER}") for i in range(6)])
    history = memory.get(ChatMessage(role="user", content="budget cap euros?"), initial_token_count=12)
    assert "My budget cap is 5000 euros." in history[0].content


def test_get_all_is_raw_history_in_order_even_after_folding(memory: VectorSummaryMemory) -> None:
    turns = [(f"question {i}: {FILLER}", f"answer {i}") for i in range(14)]
    chat(memory, turns)
    assert memory.core.working_state().summary  # folded

    expected = [t for pair in turns for t in (f"user: {pair[0]}", f"assistant: {pair[1]}")]
    assert texts(memory.get_all()) == expected


def test_put_messages_uses_one_embedding_call(memory: VectorSummaryMemory, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    embedder = parts(memory.core).embedder
    original = embedder.embed_documents

    def counting(batch):  # type: ignore[no-untyped-def]
        calls.append(len(batch))
        return original(batch)

    monkeypatch.setattr(embedder, "embed_documents", counting)
    memory.put_messages([ChatMessage(role="user", content=f"message number {i}") for i in range(3)])
    assert len(calls) == 1 and calls[0] >= 3  # one call (the core may add extracted facts to it)


def test_set_replaces_working_history_and_keeps_stored_vectors(memory: VectorSummaryMemory) -> None:
    chat(memory, [("My budget cap is 5000 euros.", "Noted.")])

    memory.set([ChatMessage(role="user", content="new start"), ChatMessage(role="assistant", content="fresh")])

    history = memory.get()
    assert texts(history[1:]) == ["user: new start", "assistant: fresh"]  # [0]: recalled memories
    assert memory.core.working_state().summary == ""
    assert texts(memory.get_all()) == [
        "user: My budget cap is 5000 euros.",
        "assistant: Noted.",
        "user: new start",
        "assistant: fresh",
    ]
    system = memory.get("budget cap euros")[0]
    assert "My budget cap is 5000 euros." in system.content  # still recallable


def test_set_empty_clears_working_history_only(memory: VectorSummaryMemory) -> None:
    chat(memory, [("hello", "hi")])
    memory.set([])
    assert memory.get() == []
    assert len(memory.get_all()) == 2


def test_reset_deletes_session_vectors_but_not_other_sessions(
    make_memory: Callable[..., VectorSummaryMemory],
) -> None:
    one, two = make_memory(session_id="s1"), make_memory(session_id="s2")
    chat(one, [("alpha fact about apples", "ok")])
    chat(two, [("beta fact about bananas", "ok")])

    one.reset()

    assert one.get() == [] and one.get_all() == []
    assert all("apples" not in hit.text for hit in one.core.recall("alpha fact about apples"))
    assert texts(two.get_all()) == ["user: beta fact about bananas", "assistant: ok"]


def test_image_only_message_is_skipped_and_logged(
    memory: VectorSummaryMemory, caplog: pytest.LogCaptureFixture
) -> None:
    image = ChatMessage(role="user", blocks=[ImageBlock(url="https://example.com/cat.png")])
    with caplog.at_level(logging.INFO, logger="llamaindex_memory_vec"):
        memory.put(image)
    assert memory.get_all() == []
    assert any("no text to store (image)" in r.getMessage() for r in caplog.records)


def test_mixed_message_keeps_its_text(memory: VectorSummaryMemory) -> None:
    mixed = ChatMessage(
        role="user", blocks=[TextBlock(text="look at this cat"), ImageBlock(url="https://example.com/cat.png")]
    )
    memory.put(mixed)
    assert texts(memory.get_all()) == ["user: look at this cat"]
    assert any("blocks without text skipped: image" in e for e in memory.core.last_trace.events)  # type: ignore[union-attr]


def test_tool_call_is_kept_as_text_with_its_result(memory: VectorSummaryMemory) -> None:
    call = ChatMessage(
        role="assistant", blocks=[ToolCallBlock(tool_call_id="c1", tool_name="get_budget", tool_kwargs={})]
    )
    result = ChatMessage(role="tool", content="5000 euros", additional_kwargs={"tool_call_id": "c1"})
    memory.put_messages([ChatMessage(role="user", content="budget?"), call, result])

    stored = memory.get_all()
    assert texts(stored) == ["user: budget?", "assistant: [tool call get_budget({})]", "tool: 5000 euros"]
    assert stored[2].additional_kwargs == {"tool_call_id": "c1"}


def test_unserializable_kwargs_are_dropped_not_fatal(memory: VectorSummaryMemory) -> None:
    memory.put(ChatMessage(role="user", content="hi", additional_kwargs={"ok": 1, "bad": object()}))
    assert memory.get_all()[0].additional_kwargs == {"ok": 1}


def test_messages_given_back_carry_the_callers_kwargs_not_the_librarys(memory: VectorSummaryMemory) -> None:
    # Integrations that send a message's additional_kwargs to the model API (older OpenAI
    # ones, litellm) would send memory-vec's event_date, which the API refuses.
    memory.put(ChatMessage(role="user", content="I flew to Paris yesterday.", additional_kwargs={"source": "web"}))
    memory.put(ChatMessage(role="assistant", content="How was the flight yesterday?"))
    stored = memory.core.session_history(session_id="s1")
    assert all("event_date" in r.metadata for r in stored)  # the date is resolved and kept
    assert [m.additional_kwargs for m in memory.get_all()] == [{"source": "web"}, {}]
    assert [m.additional_kwargs for m in memory.get("Paris?")][-2:] == [{"source": "web"}, {}]


def test_llamaindex_only_roles_map_to_core_roles(memory: VectorSummaryMemory) -> None:
    memory.put_messages(
        [
            ChatMessage(role="developer", content="be brief"),
            ChatMessage(role="chatbot", content="hello"),
            ChatMessage(role="function", content="42"),
        ]
    )
    assert texts(memory.get_all()) == ["system: be brief", "assistant: hello", "tool: 42"]


def test_async_twins(memory: VectorSummaryMemory) -> None:
    async def run() -> tuple[list[ChatMessage], list[ChatMessage], list[ChatMessage]]:
        await memory.aput(ChatMessage(role="user", content="async hello"))
        await memory.aput_messages([ChatMessage(role="assistant", content="async hi")])
        got = await memory.aget()
        await memory.aset([ChatMessage(role="user", content="replaced")])
        after_set = await memory.aget()
        everything = await memory.aget_all()
        await memory.areset()
        assert await memory.aget_all() == []
        return got, after_set, everything

    got, after_set, everything = asyncio.run(run())
    assert texts(got) == ["user: async hello", "assistant: async hi"]
    assert texts(after_set)[-1:] == ["user: replaced"]
    assert after_set[0].role == MessageRole.SYSTEM and "async hello" in after_set[0].content
    assert len(everything) == 3


def test_async_get_does_not_block_the_loop(memory: VectorSummaryMemory, monkeypatch: pytest.MonkeyPatch) -> None:
    import threading

    threads: list[str] = []
    original = memory.core.build_context

    def spy(*args, **kwargs):  # type: ignore[no-untyped-def]
        threads.append(threading.current_thread().name)
        return original(*args, **kwargs)

    monkeypatch.setattr(memory.core, "build_context", spy)
    asyncio.run(memory.aget("anything"))
    assert threads and threads[0] != threading.main_thread().name


def test_pydantic_model_round_trip() -> None:
    config = MemoryConfig(
        user_id="u9", session_id="s9", embedding_model="hash:64", backend="memory", collection="li-round-trip"
    )  # the default collection may hold e5 vectors
    memory = VectorSummaryMemory(config=config)
    data = memory.to_dict()
    assert data["class_name"] == "VectorSummaryMemory"
    assert "core" not in data and data["config"]["user_id"] == "u9"
    restored = VectorSummaryMemory.from_dict(data)
    assert restored.config == config and restored.user_id == "u9"
    assert isinstance(VectorSummaryMemory.from_json(memory.to_json()).core, MemoryCore)


def test_from_defaults_refuses_core_with_other_settings(hash_embedder: DeterministicHashEmbedder) -> None:
    core = MemoryCore(
        MemoryConfig(), embedder=hash_embedder, backend=InMemoryBackend(), state_store=InMemoryStateStore()
    )
    assert VectorSummaryMemory.from_defaults(core=core).core is core
    with pytest.raises(ValueError, match="config"):
        VectorSummaryMemory.from_defaults(config=MemoryConfig(), core=core)
    with pytest.raises(ValueError, match="two different configs"):
        VectorSummaryMemory(core=core, config=MemoryConfig(user_id="other"))


def test_from_defaults_with_embed_model_and_chat_history(backend: InMemoryBackend) -> None:
    from llama_index.core.embeddings import MockEmbedding

    memory = VectorSummaryMemory.from_defaults(
        config=MemoryConfig(score_threshold=0.0),
        embed_model=MockEmbedding(embed_dim=16),
        chat_history=[ChatMessage(role="user", content="first"), ChatMessage(role="assistant", content="second")],
        backend=backend,
        state_store=InMemoryStateStore(),
    )
    assert parts(memory.core).embedder.dimension == 16
    assert texts(memory.get_all()) == ["user: first", "assistant: second"]


def test_set_with_a_tool_output_the_core_would_refuse_replaces_the_history(
    make_memory: Callable[..., VectorSummaryMemory],
) -> None:
    """A coloured tool output is stored without its escapes; set() never clears and then fails."""
    memory = make_memory()
    memory.put_messages(
        [ChatMessage(role="user", content="My budget is 5000."), ChatMessage(role="assistant", content="Noted.")]
    )
    memory.set(
        [ChatMessage(role="user", content="keep this"), ChatMessage(role=MessageRole.TOOL, content="\x1b[32mOK\x1b[0m")]
    )
    assert [m.content for m in memory.core.working_state().messages] == ["keep this", "[32mOK[0m"]


def test_set_with_a_refused_message_keeps_the_old_history(
    make_memory: Callable[..., VectorSummaryMemory],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Were a message still refused after translation, set() fails before it clears anything."""
    from llamaindex_memory_vec import _convert
    from memory_vec._model.errors import InvalidContentError

    memory = make_memory()
    memory.put_messages([ChatMessage(role="user", content="My budget is 5000.")])
    monkeypatch.setattr(_convert, "storable_text", lambda text, max_bytes: (text, []))
    with pytest.raises(InvalidContentError):
        memory.set([ChatMessage(role="user", content="bell \x07")])
    assert [m.content for m in memory.core.working_state().messages] == ["My budget is 5000."]


def test_kwargs_too_deep_for_metadata_and_a_control_only_message_are_left_out_noted(
    make_memory: Callable[..., VectorSummaryMemory],
) -> None:
    memory = make_memory()
    memory.put_messages(
        [
            ChatMessage(role="user", content="new", additional_kwargs={"deep": _nested(40), "ok": 1}),
            ChatMessage(role=MessageRole.TOOL, content="\x1b\x07\x00"),
            ChatMessage(role="assistant", content="done"),
        ]
    )
    stored = memory.core.working_state().messages
    assert [(m.content, m.metadata) for m in stored] == [("new", {"ok": 1}), ("done", {})]
    events = memory.core.last_trace.events
    assert any("['deep'] too large or deep" in ev for ev in events)
    assert any("message 1 (tool): skipped, no text to store" in ev for ev in events)


def _nested(depth: int) -> dict[str, object]:
    value: dict[str, object] = {}
    for _ in range(depth):
        value = {"k": value}
    return value


def test_a_page_over_the_content_limit_is_stored_cut_and_the_turn_kept(
    make_memory: Callable[..., VectorSummaryMemory],
) -> None:
    memory = make_memory(max_content_bytes=4096, max_token_limit=20000, summary_max_tokens=200)
    memory.put_messages(
        [
            ChatMessage(role="user", content="My budget is 5000 EUR. Fetch the page."),
            ChatMessage(role=MessageRole.TOOL, content="page " * 5000),
            ChatMessage(role="assistant", content="The page says hello."),
        ]
    )
    stored = memory.core.working_state().messages
    assert [m.role for m in stored] == ["user", "tool", "assistant"]
    assert len(stored[1].content.encode()) <= 4096 and "[… cut here:" in stored[1].content
    assert any("cut from 25000" in ev for ev in memory.core.last_trace.events)


@pytest.mark.parametrize("bad", [None, "hello", 5])
def test_put_of_something_not_a_message_is_a_named_error(
    make_memory: Callable[..., VectorSummaryMemory],
    bad: object,
) -> None:
    from memory_vec._model.errors import InvalidInputError

    memory = make_memory()
    with pytest.raises(InvalidInputError):
        memory.put(bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError):
        memory.put_messages(bad)  # type: ignore[arg-type]
