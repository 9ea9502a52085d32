"""VectorSummaryMemory: slots, budgets, isolation, chains, LCEL, async, errors."""

from __future__ import annotations

import asyncio
import warnings
from typing import Any

import pytest
from langchain_classic.chains import ConversationChain, LLMChain
from langchain_classic.chains.conversation.prompt import PROMPT as STOCK_PROMPT
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models.fake import FakeListLLM
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import PromptTemplate
from pydantic import ValidationError

from langchain_memory_vec import (
    CHAT_PROMPT,
    INTERNAL_TAG,
    PROMPT,
    CoreChatMessageHistory,
    MissingPromptVariableError,
    VectorSummaryMemory,
)
from memory_vec import MemoryConfig, MemoryCore
from memory_vec._model.errors import InvalidInputError
from memory_vec._rules.summary import SUMMARY_PROMPT
from memory_vec.testing import parts

from .conftest import SMALL_BUDGET, SUMMARY_MARKER, PromptCapture

FILLER = "We also talked about the weather, the garden, the new bike lane and weekend plans at length."
SUMMARY_INSTRUCTION = SUMMARY_PROMPT.splitlines()[0]


def chat(memory: VectorSummaryMemory, turns: list[str]) -> None:
    for i, text in enumerate(turns):
        memory.save_context({"input": text}, {"output": f"Answer {i}: {FILLER}"})


def slots(prompt: str) -> tuple[str, str, str]:
    """Split a PROMPT rendering into (relevant slot, history slot, current input)."""
    head, rest = prompt.split("Current conversation:\n", 1)
    history, current = rest.rsplit("\nuser: ", 1)
    return head, history, current


def test_construction_emits_no_deprecation_warning(core_factory: Any) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        memory = VectorSummaryMemory(core=core_factory())
        memory.load_memory_variables({"input": "hello"})
    assert [str(w.message) for w in caught] == []


def test_prompt_slots_hold_summary_recent_turns_and_recalled_memory(core_factory: Any, capture: PromptCapture) -> None:
    old = VectorSummaryMemory(core=core_factory(session_id="old"))
    old.save_context({"input": "My favourite tea is oolong from Taiwan."}, {"output": "Noted, oolong."})
    memory = VectorSummaryMemory(core=core_factory(session_id="now"))
    chat(memory, [f"Turn {i} about the project plan. {FILLER}" for i in range(6)])
    assert memory.core is not None and memory.core.working_state().summary.startswith(SUMMARY_MARKER)

    llm = FakeListLLM(responses=["Oolong, as you said."])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # LLMChain's own deprecation notice
        chain = LLMChain(llm=llm, prompt=PROMPT, memory=memory)
    chain.invoke({"input": "Which tea do I like, oolong or green?"}, {"callbacks": [capture]})

    relevant, history, current = slots(capture.prompts[0])
    assert "oolong from Taiwan" in relevant and "Relevant memories" in relevant
    assert SUMMARY_MARKER.strip() in history and "Summary of earlier conversation" in history
    assert "Turn 5 about the project plan" in history  # the latest turn is recent, verbatim
    assert "Turn 0 about the project plan" not in history  # folded into the summary
    assert "oolong" not in history
    assert current.startswith("Which tea do I like")
    # The chain saved the turn afterwards.
    assert [m.text for m in memory.chat_memory.messages][-2:] == [
        "Which tea do I like, oolong or green?",
        "Oolong, as you said.",
    ]


@pytest.mark.slow
def test_hundred_turns_stay_within_budget(core_factory: Any, capture: PromptCapture) -> None:
    core: MemoryCore = core_factory()
    memory = VectorSummaryMemory(core=core, relevant_memories_key=None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ConversationChain's own deprecation notice
        chain = ConversationChain(llm=FakeListLLM(responses=[f"Sure. {FILLER}"]), memory=memory)
    counter = parts(core).counter
    for i in range(100):
        chain.invoke({"input": f"Message {i}: the budget for item {i} is {i * 10} dollars."}, {"callbacks": [capture]})
        ctx = core.build_context(f"budget for item {i}")
        assert ctx.tokens["summary"] + ctx.tokens["recent"] <= SMALL_BUDGET["max_token_limit"]
        assert ctx.tokens["relevant"] <= SMALL_BUDGET["relevant_token_limit"]
    template_tokens = counter.count(chain.prompt.template)
    budget = SMALL_BUDGET["max_token_limit"] + SMALL_BUDGET["relevant_token_limit"]
    # Headers and role labels add a little per line; 100 raw turns would be ~5000 tokens.
    assert max(counter.count(p) for p in capture.prompts) <= budget + template_tokens + 80
    assert len(core.working_state().messages) < 20
    assert core.working_state().summary.startswith(SUMMARY_MARKER)


def test_two_users_on_one_store_never_see_each_other(core_factory: Any) -> None:
    alice = VectorSummaryMemory(core=core_factory(user_id="alice", session_id="a1"))
    bob = VectorSummaryMemory(core=core_factory(user_id="bob", session_id="b1"))
    alice.save_context({"input": "My locker code is 4711, keep it secret."}, {"output": "Kept secret."})
    bob.save_context({"input": "I like sailing."}, {"output": "Nice."})

    seen_by_bob = bob.load_memory_variables({"input": "What is my locker code?"})
    assert "4711" not in str(seen_by_bob)
    alice_later = VectorSummaryMemory(core=core_factory(user_id="alice", session_id="a2"))
    seen_by_alice = alice_later.load_memory_variables({"input": "What is my locker code?"})
    assert "4711" in seen_by_alice["relevant_memories"]
    assert "sailing" not in str(seen_by_alice)


def test_return_messages_puts_summary_in_a_system_message(core_factory: Any) -> None:
    memory = VectorSummaryMemory(core=core_factory(), return_messages=True)
    chat(memory, [f"Point {i} of the plan. {FILLER}" for i in range(6)])
    history = memory.load_memory_variables({"input": "and next?"})["history"]
    assert isinstance(history[0], SystemMessage) and SUMMARY_MARKER.strip() in history[0].text
    assert isinstance(history[-2], HumanMessage) and history[-2].text.startswith("Point 5")
    assert isinstance(history[-1], AIMessage)


def test_conversation_chain_stock_prompt_with_folded_memories(core_factory: Any, capture: PromptCapture) -> None:
    VectorSummaryMemory(core=core_factory(session_id="old")).save_context(
        {"input": "The staging server is called hermes."}, {"output": "OK."}
    )
    memory = VectorSummaryMemory(core=core_factory(), relevant_memories_key=None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        chain = ConversationChain(llm=FakeListLLM(responses=["hermes"]), memory=memory)
    out = chain.invoke({"input": "What is the staging server called?"}, {"callbacks": [capture]})
    assert out["response"] == "hermes"
    assert "The staging server is called hermes." in capture.prompts[0].split("Human: What is")[0]


def test_stock_prompt_without_relevant_slot_is_refused_or_folded(core_factory: Any, capture: PromptCapture) -> None:
    # A memory built without seeing the prompt fills {relevant_memories}:
    # ConversationChain compares variables itself and refuses the stock prompt,
    memory = VectorSummaryMemory(core=core_factory())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ValidationError, match="relevant_memories"):
            ConversationChain(llm=FakeListLLM(responses=["x"]), memory=memory)
    # check_prompt names the fixes,
    with pytest.raises(MissingPromptVariableError) as err:
        memory.check_prompt(STOCK_PROMPT)
    assert "relevant_memories_key=None" in str(err.value) and "for_prompt" in str(err.value)
    assert isinstance(err.value, InvalidInputError)
    # and a memory built for the stock prompt folds the memories into {history}.
    VectorSummaryMemory(core=core_factory(session_id="old")).save_context(
        {"input": "The staging server is called hermes."}, {"output": "OK."}
    )
    folded = VectorSummaryMemory.for_prompt(STOCK_PROMPT, core=core_factory())
    assert folded.memory_variables == ["history"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        chain = ConversationChain(llm=FakeListLLM(responses=["hermes"]), memory=folded)
    chain.invoke({"input": "What is the staging server called?"}, {"callbacks": [capture]})
    assert "The staging server is called hermes." in capture.prompts[0].split("Human: What is")[0]


def test_for_prompt_folds_memories_a_custom_prompt_has_no_slot_for(core_factory: Any, capture: PromptCapture) -> None:
    VectorSummaryMemory(core=core_factory(session_id="old")).save_context(
        {"input": "My locker code is 4711."}, {"output": "Noted."}
    )
    prompt = PromptTemplate.from_template("{history}\nQ: {input}\nA:")
    memory = VectorSummaryMemory.for_prompt(prompt, core=core_factory())
    chain = LLMChain(llm=FakeListLLM(responses=["4711"]), prompt=prompt, memory=memory)
    chain.invoke({"input": "What is my locker code?"}, {"callbacks": [capture]})
    assert "My locker code is 4711." in capture.prompts[0].split("Q: What is")[0]  # folded, not dropped
    memory.check_prompt(prompt)

    # A prompt with the slot gets the memories in it, not in the history.
    slotted = VectorSummaryMemory.for_prompt(PROMPT, core=core_factory(session_id="new"))
    loaded = slotted.load_memory_variables({"input": "What is my locker code?"})
    assert "My locker code is 4711." in loaded["relevant_memories"]
    assert "4711" not in loaded["history"]


def test_for_prompt_refuses_a_prompt_without_the_needed_variables(core_factory: Any) -> None:
    no_history = PromptTemplate.from_template("{relevant_memories}\nQ: {input}\nA:")
    with pytest.raises(MissingPromptVariableError, match=r"\{history\}"):
        VectorSummaryMemory.for_prompt(no_history, config=MemoryConfig(user_id="never-built"))
    prompt = PromptTemplate.from_template("{history}\nQ: {input}\nA:")
    with pytest.raises(MissingPromptVariableError, match=r"\{facts\}"):  # an explicit key is checked, not folded
        VectorSummaryMemory.for_prompt(prompt, core=core_factory(), relevant_memories_key="facts")
    chat = VectorSummaryMemory.for_prompt(CHAT_PROMPT, core=core_factory(), return_messages=True)
    assert chat.memory_variables == ["history", "relevant_memories"]


def test_llm_chain_with_custom_prompt_and_input_key(core_factory: Any, capture: PromptCapture) -> None:
    memory = VectorSummaryMemory(
        core=core_factory(), memory_key="chat", relevant_memories_key="facts", input_key="question"
    )
    prompt = PromptTemplate.from_template(
        "Facts:\n{facts}\nChat:\n{chat}\nTopic: {topic}\nQuestion: {question}\nAnswer:"
    )
    chain = LLMChain(llm=FakeListLLM(responses=["Blue.", "Blue again."]), prompt=prompt, memory=memory)
    chain.invoke({"topic": "colours", "question": "My favourite colour is blue."})
    chain.invoke({"topic": "colours", "question": "What colour do I like?"}, {"callbacks": [capture]})
    assert "user: My favourite colour is blue." in capture.prompts[0].split("Topic:")[0]
    stored = [m.text for m in memory.chat_memory.messages]
    assert stored == ["My favourite colour is blue.", "Blue.", "What colour do I like?", "Blue again."]


def test_multi_key_inputs_without_input_key_name_the_fix(core_factory: Any) -> None:
    memory = VectorSummaryMemory(core=core_factory())
    with pytest.raises(InvalidInputError, match=r"input_key="):
        memory.load_memory_variables({"topic": "x", "question": "y"})
    with pytest.raises(InvalidInputError, match=r"input_key="):
        memory.save_context({"topic": "x", "question": "y"}, {"text": "z"})
    assert memory.chat_memory.messages == []  # nothing half-stored


def test_lcel_recipe_manual_load_and_save(core_factory: Any, capture: PromptCapture) -> None:
    memory = VectorSummaryMemory(core=core_factory())
    chain = PROMPT | FakeListLLM(responses=["Noted.", "You said Lisbon."]) | StrOutputParser()
    for question in ["I moved to Lisbon last year.", "Where do I live?"]:
        inputs = {"input": question}
        answer = chain.invoke({**inputs, **memory.load_memory_variables(inputs)}, {"callbacks": [capture]})
        memory.save_context(inputs, {"output": answer})
    _, history, current = slots(capture.prompts[1])
    assert "user: I moved to Lisbon last year.\nassistant: Noted." in history
    assert current.startswith("Where do I live?")
    memory.check_prompt(PROMPT)  # both slots present: no error


def test_history_and_current_turn_share_one_labelling(core_factory: Any) -> None:
    memory = VectorSummaryMemory.for_prompt(PROMPT, core=core_factory())
    memory.save_context({"input": "I live in Lisbon."}, {"output": "Noted, Lisbon."})
    question = "Where do I live?"
    inputs = {"input": question}
    lines = PROMPT.format(**inputs, **memory.load_memory_variables(inputs)).splitlines()
    # The labels PROMPT gives the current turn ...
    user_label = lines[-2].removesuffix(question)
    assistant_label = lines[-1]
    assert lines[-2].endswith(question) and user_label and assistant_label.endswith(":")
    # ... are the labels of the same speakers' earlier turns in the history.
    assert f"{user_label}I live in Lisbon." in lines
    assert f"{assistant_label} Noted, Lisbon." in lines

    # Chat form: earlier and current user turns are both human messages.
    chat = VectorSummaryMemory.for_prompt(CHAT_PROMPT, core=core_factory(session_id="chat"), return_messages=True)
    chat.save_context({"input": "I live in Lisbon."}, {"output": "Noted, Lisbon."})
    messages = CHAT_PROMPT.format_messages(**inputs, **chat.load_memory_variables(inputs))
    assert [type(m) for m in messages[-3:]] == [HumanMessage, AIMessage, HumanMessage]


def test_stream_then_save_with_chat_prompt(core_factory: Any, capture: PromptCapture) -> None:
    memory = VectorSummaryMemory(core=core_factory(), return_messages=True)
    memory.check_prompt(CHAT_PROMPT)
    chain = CHAT_PROMPT | FakeListChatModel(responses=["Streaming works fine."])
    inputs = {"input": "Does streaming work?"}
    chunks = list(chain.stream({**inputs, **memory.load_memory_variables(inputs)}))
    assert len(chunks) > 1
    memory.save_context(inputs, {"output": "".join(c.text for c in chunks)})
    assert [m.text for m in memory.chat_memory.messages] == ["Does streaming work?", "Streaming works fine."]


def test_async_paths_astream_and_clear(core_factory: Any) -> None:
    asyncio.run(_async_paths(core_factory))


async def _async_paths(core_factory: Any) -> None:
    memory = VectorSummaryMemory(core=core_factory())
    chain = PROMPT | FakeListLLM(responses=["Berlin it is."]) | StrOutputParser()
    inputs = {"input": "Our offsite will be in Berlin."}
    parts = [p async for p in chain.astream({**inputs, **await memory.aload_memory_variables(inputs)})]
    await memory.asave_context(inputs, {"output": "".join(parts)})
    loaded = await memory.aload_memory_variables({"input": "Where is the offsite?"})
    assert "user: Our offsite will be in Berlin.\nassistant: Berlin it is." in loaded["history"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        conv = ConversationChain(llm=FakeListLLM(responses=["ok"]), memory=memory, prompt=PROMPT)
    await conv.ainvoke({"input": "Thanks."})
    assert len(memory.chat_memory.messages) == 4
    assert [m.text for m in await memory.chat_memory.aget_messages()][-2:] == ["Thanks.", "ok"]
    await memory.aclear()
    assert memory.chat_memory.messages == []
    assert (await memory.aload_memory_variables({"input": "Where is the offsite?"}))["relevant_memories"] == ""


def test_summary_calls_stay_out_of_the_users_run(core_factory: Any, capture: PromptCapture) -> None:
    memory = VectorSummaryMemory(core=core_factory())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        chain = ConversationChain(llm=FakeListLLM(responses=[f"Right. {FILLER}"]), memory=memory, prompt=PROMPT)
    for i in range(6):
        chain.invoke({"input": f"Fact {i}: {FILLER}"}, {"callbacks": [capture], "tags": ["user-run"]})
    assert memory.core is not None and memory.core.working_state().summary.startswith(SUMMARY_MARKER)
    assert len(capture.prompts) == 6  # only the user's own calls
    assert not any(SUMMARY_INSTRUCTION in p for p in capture.prompts)
    assert not any(INTERNAL_TAG in tags for tags in capture.tags)


def test_built_from_config_llm_and_embeddings(capture: PromptCapture) -> None:
    summary_llm = FakeListLLM(responses=[SUMMARY_MARKER])
    memory = VectorSummaryMemory(
        config=MemoryConfig(
            user_id="carol", session_id="c1", score_threshold=0.0, collection="lc_fake_emb", **SMALL_BUDGET
        ),
        llm=summary_llm,
        embeddings=DeterministicFakeEmbedding(size=32),
    )
    chat(memory, [f"Item {i}. {FILLER}" for i in range(6)])
    assert memory.core is not None
    memory.core.flush()  # the LLM's fold runs off the turn by default
    assert memory.core.working_state().summary.startswith(SUMMARY_MARKER)
    assert memory.config is memory.core.config
    with pytest.raises(ValueError, match="either core"):  # pydantic wraps it in a ValidationError
        VectorSummaryMemory(core=memory.core, config=MemoryConfig())
    with pytest.raises(ValueError, match="manages chat_memory itself"):
        VectorSummaryMemory(core=memory.core, chat_memory=CoreChatMessageHistory(memory.core, session_id="other"))


def test_history_keeps_a_tool_calling_exchange_and_gives_the_calls_back(core_factory: Any) -> None:
    """OpenAI-style calls have no text: the exchange is stored and read back with its calls."""
    from langchain_core.messages import ToolMessage

    history = CoreChatMessageHistory(core_factory(max_token_limit=4000, summary_max_tokens=500), session_id="tools")
    call = {"name": "weather", "args": {"city": "Paris"}, "id": "call_1", "type": "tool_call"}
    history.add_messages(
        [
            HumanMessage("What's the weather in Paris?"),
            AIMessage(content="", tool_calls=[call]),
            ToolMessage("18C sunny", tool_call_id="call_1"),
            AIMessage("It is 18C in Paris."),
        ]
    )
    back = history.messages
    assert [type(m).__name__ for m in back] == ["HumanMessage", "AIMessage", "ToolMessage", "AIMessage"]
    assert back[1].content == "" and back[1].tool_calls == [call]
    assert back[2].tool_call_id == "call_1" and back[3].tool_calls == []


def test_save_context_with_an_empty_answer_keeps_the_input(core_factory: Any) -> None:
    memory = VectorSummaryMemory(core=core_factory())
    memory.save_context({"input": "My budget is 5000."}, {"output": "  "})
    assert [m.content for m in memory.core.working_state().messages] == ["My budget is 5000."]
    with pytest.raises(InvalidInputError):
        memory.save_context({"input": None}, {"output": "ok"})


def test_tool_call_arguments_too_large_for_metadata_do_not_lose_the_exchange(core_factory: Any) -> None:
    history = CoreChatMessageHistory(core_factory(max_token_limit=20000, summary_max_tokens=500), session_id="big")
    call = {"name": "write_file", "args": {"code": "x = 1\n" * 5000}, "id": "call_9", "type": "tool_call"}
    history.add_messages([HumanMessage("Write the file."), AIMessage(content="", tool_calls=[call])])
    back = history.messages[-1]
    assert [(c["name"], c["args"], c["id"]) for c in back.tool_calls] == [("write_file", {}, "call_9")]
