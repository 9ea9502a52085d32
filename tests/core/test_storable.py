"""Framework text made storable for the adapters (memory_vec._rules.storable), and a
long question that must not fail the turn it is asked in."""

from __future__ import annotations

from typing import Any

import pytest

from memory_vec import MemoryConfig, MessageInput
from memory_vec._model.errors import ContentTooLargeError, InvalidContentError, InvalidMetadataError
from memory_vec._rules.storable import check_inputs, storable_text


def test_text_the_core_takes_is_left_as_it_is() -> None:
    text = "Tab\tand newline\nand 中文 and emoji 🙂"
    assert storable_text(text, 1000) == (text, [])


def test_control_characters_and_lone_surrogates_are_made_storable() -> None:
    text, notes = storable_text("\x1b[32mOK\x1b[0m \ud800!", 1000)
    assert text == "[32mOK[0m \ufffd!"
    assert notes == ["control characters removed", "lone surrogates replaced"]


@pytest.mark.parametrize("unit", ["a", "é", "中", "🙂"])
def test_long_text_is_cut_on_a_character_boundary_with_a_note(unit: str) -> None:
    text, notes = storable_text(unit * 5000, 1000)
    size = len(text.encode("utf-8"))
    assert size <= 1000 and text.startswith(unit * 10) and "[… cut here:" in text
    assert notes == [f"cut from {len((unit * 5000).encode())} to {size} bytes"]


@pytest.mark.parametrize(
    ("message", "error"),
    [
        (MessageInput("user", "\x00"), InvalidContentError),
        (MessageInput("user", "x" * 5000), ContentTooLargeError),
        (MessageInput("user", "ok", metadata={"k": {1, 2}}), InvalidMetadataError),
    ],
)
def test_check_inputs_raises_what_add_messages_would(message: MessageInput, error: type[Exception]) -> None:
    with pytest.raises(error):
        check_inputs([message], MemoryConfig(max_content_bytes=4096))


def test_a_question_over_the_content_limit_is_recalled_by_its_first_part(make_core: Any) -> None:
    core = make_core(max_content_bytes=4096)
    core.add_message("user", "my rent is 1200 EUR", session_id="old")
    ctx = core.build_context("what is my rent? " + "please " * 2000, session_id="new")
    assert any("1200" in m.text for m in ctx.relevant)
    assert ctx.trace is not None and any("recalled by its first 4096" in ev for ev in ctx.trace.events)
    with pytest.raises(ContentTooLargeError):  # recall itself still says what is wrong
        core.recall("x" * 5000)
