"""End to end with the real default embedder (offline) and the config's default stores."""

from __future__ import annotations

import uuid

import pytest
from langchain_core.language_models.fake import FakeListLLM
from langchain_core.output_parsers import StrOutputParser

from langchain_memory_vec import PROMPT, VectorSummaryMemory
from memory_vec import MemoryConfig

from .conftest import PromptCapture


@pytest.mark.integration
def test_default_embedder_recalls_a_paraphrase_across_sessions(capture: PromptCapture) -> None:
    user = f"it-{uuid.uuid4().hex[:8]}"
    first = VectorSummaryMemory(config=MemoryConfig(user_id=user, session_id="monday"))
    first.save_context(
        {"input": "I am allergic to peanuts, so never suggest recipes with them."},
        {"output": "Understood, no peanuts."},
    )
    first.save_context({"input": "The team standup moved to 9:30."}, {"output": "Noted."})

    later = VectorSummaryMemory(config=MemoryConfig(user_id=user, session_id="friday"))
    chain = PROMPT | FakeListLLM(responses=["A peanut-free curry."]) | StrOutputParser()
    inputs = {"input": "Suggest a dinner recipe, keeping my food allergy in mind."}
    answer = chain.invoke({**inputs, **later.load_memory_variables(inputs)}, {"callbacks": [capture]})
    later.save_context(inputs, {"output": answer})

    relevant = capture.prompts[0].split("Current conversation:")[0]
    assert "allergic to peanuts" in relevant
    assert later.chat_memory.messages[-1].text == "A peanut-free curry."
    first.clear()
    later.clear()
