"""Prompts with both memory slots, and the check that a prompt fits a memory.

Turn labels: the history is the core's rendering
(:meth:`memory_vec.MemoryContext.render_history`), which labels turns with
their roles, ``user:`` and ``assistant:``, and indents a turn's further lines
so that no stored line reads as another turn. :data:`PROMPT` labels the
current turn the same way, so the model sees one conversation, not two styles.
``{relevant_memories}`` is the core's ``<memories>`` block, headed by a note
that its entries are data, not instructions.
"""

from __future__ import annotations

from typing import Any

from langchain_core.prompts import BasePromptTemplate, ChatPromptTemplate, MessagesPlaceholder, PromptTemplate

from memory_vec._model.errors import InvalidInputError

__all__ = ["CHAT_PROMPT", "PROMPT", "MissingPromptVariableError", "check_prompt_variables", "prompt_variables"]

USER_LABEL = "user"
ASSISTANT_LABEL = "assistant"

_TEMPLATE = f"""The following is a friendly conversation between a {USER_LABEL} and an AI {ASSISTANT_LABEL}. \
The {ASSISTANT_LABEL} is talkative and provides lots of specific details from its context. If the \
{ASSISTANT_LABEL} does not know the answer to a question, it truthfully says it does not know.

{{relevant_memories}}

Current conversation:
{{history}}
{USER_LABEL}: {{input}}
{ASSISTANT_LABEL}:"""

PROMPT = PromptTemplate(input_variables=["relevant_memories", "history", "input"], template=_TEMPLATE)
"""String prompt with both slots, for ``ConversationChain`` / ``LLMChain`` / LCEL."""

CHAT_PROMPT = ChatPromptTemplate.from_messages(
    [
        ("system", "You are a helpful assistant.\n\n{relevant_memories}"),
        MessagesPlaceholder("history"),
        ("human", "{input}"),
    ]
)
"""Chat prompt with both slots, for ``return_messages=True``."""


class MissingPromptVariableError(InvalidInputError):
    """A prompt has no variable for something the memory fills.

    Chains and LCEL prompts silently ignore inputs their prompt does not
    use, so without this error the history or the recalled memories would
    never reach the model. The message names the variable and the fixes.
    """


def prompt_variables(prompt: BasePromptTemplate[Any]) -> set[str]:
    """The variables a chain fills in ``prompt`` (partial variables excluded:
    a chain passes only ``input_variables`` on, so a partial one is never filled)."""
    return set(prompt.input_variables) | set(prompt.optional_variables or [])


def check_prompt_variables(
    prompt: BasePromptTemplate[Any], *, memory_key: str, relevant_memories_key: str | None
) -> None:
    """Raise :class:`MissingPromptVariableError` when ``prompt`` lacks a slot the memory fills."""
    variables = prompt_variables(prompt)
    if memory_key not in variables:
        raise MissingPromptVariableError(
            f"VectorSummaryMemory fills {{{memory_key}}} but the prompt has no such variable "
            f"(it has {sorted(variables)}), so the history would never reach the model. Fix: add "
            f"{{{memory_key}}} to the prompt, or set memory_key to the prompt's history variable."
        )
    if relevant_memories_key is not None and relevant_memories_key not in variables:
        raise MissingPromptVariableError(
            f"VectorSummaryMemory fills {{{relevant_memories_key}}} but the prompt has no such variable "
            f"(it has {sorted(variables)}), so recalled memories would be dropped. Fix: add "
            f"{{{relevant_memories_key}}} to the prompt (see langchain_memory_vec.PROMPT), build the memory "
            "with VectorSummaryMemory.for_prompt(prompt, ...), or pass relevant_memories_key=None to fold "
            "the memories into the history."
        )
