"""With an LLM summarizer a due fold runs off the turn: save_context does not
wait for the LLM, the prompt meanwhile still holds the newest turns and
recall, and the summary arrives by flush()."""

from __future__ import annotations

import time
from typing import Any

import pytest
from langchain_core.language_models.fake import FakeListLLM

from langchain_memory_vec import VectorSummaryMemory
from tests.langchain.conftest import SUMMARY_MARKER

FILLER = "We went over the venue, the catering and the guest list again in detail."


class SlowLLM(FakeListLLM):
    """A summary LLM that takes ``delay`` seconds per call."""

    delay: float = 1.5
    calls: int = 0

    def _call(self, prompt: str, stop: Any = None, run_manager: Any = None, **kwargs: Any) -> str:
        self.calls += 1
        time.sleep(self.delay)
        return super()._call(prompt, stop, run_manager, **kwargs)


@pytest.mark.slow
def test_save_context_does_not_wait_for_the_summary_llm(core_factory: Any) -> None:
    llm = SlowLLM(responses=[SUMMARY_MARKER])
    core = core_factory(llm=llm, summary_in_background=None, session_id="bg")
    memory = VectorSummaryMemory(core=core)
    memory.save_context({"input": "My budget is 5000 euros."}, {"output": "Noted."})
    started = time.perf_counter()
    for i in range(6):
        memory.save_context({"input": f"Turn {i}. {FILLER}"}, {"output": f"Sure. {FILLER}"})
    elapsed = time.perf_counter() - started
    deadline = time.time() + 10
    while llm.calls == 0 and time.time() < deadline:
        time.sleep(0.05)
    assert llm.calls >= 1, "a fold was due"
    assert elapsed < llm.delay, f"the turns waited for the summary LLM ({elapsed:.2f}s)"
    variables = memory.load_memory_variables({"input": "what is my budget?"})
    assert "5000" in str(variables)  # recall still finds what the pending fold will summarise
    core.flush()
    assert core.working_state().summary.startswith(SUMMARY_MARKER)
