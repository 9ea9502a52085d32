"""Every public entry point, bad input: a named error and an unchanged store."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pytest

from memory_vec import (
    ContentTooLargeError,
    InvalidContentError,
    InvalidIdError,
    InvalidInputError,
    InvalidMetadataError,
    InvalidRoleError,
    InvalidTimestampError,
    MemoryCore,
    MemoryNotFoundError,
    MemoryVecError,
)
from memory_vec.backends import RecordFilter
from memory_vec.testing import parts

pytestmark = [pytest.mark.integration]

MB = "x" * (1 << 20)
SURROGATE = "bad \ud800 text"
CONTROL = "bell \x07 here"


class Unserializable:
    pass


Call = Callable[[MemoryCore], Any]

CASES: list[tuple[str, Call, type[MemoryVecError]]] = [
    ("add_message empty", lambda c: c.add_message("user", ""), InvalidContentError),
    ("add_message whitespace", lambda c: c.add_message("user", " \n\t "), InvalidContentError),
    ("add_message 1 MB", lambda c: c.add_message("user", MB), ContentTooLargeError),
    ("add_message bytes", lambda c: c.add_message("user", b"hi"), InvalidContentError),
    ("add_message list", lambda c: c.add_message("user", ["hi"]), InvalidContentError),
    ("add_message surrogate", lambda c: c.add_message("user", SURROGATE), InvalidContentError),
    ("add_message control chars", lambda c: c.add_message("user", CONTROL), InvalidContentError),
    ("add_message role", lambda c: c.add_message("human", "hi"), InvalidRoleError),
    ("add_message role None", lambda c: c.add_message(None, "hi"), InvalidRoleError),
    ("add_message NaN ts", lambda c: c.add_message("user", "hi", timestamp=math.nan), InvalidTimestampError),
    ("add_message inf ts", lambda c: c.add_message("user", "hi", timestamp=-math.inf), InvalidTimestampError),
    ("add_message str ts", lambda c: c.add_message("user", "hi", timestamp="2024-01-01"), InvalidTimestampError),
    ("add_message huge meta", lambda c: c.add_message("user", "hi", metadata={"k": MB}), InvalidMetadataError),
    (
        "add_message object meta",
        lambda c: c.add_message("user", "hi", metadata={"k": Unserializable()}),
        InvalidMetadataError,
    ),
    ("add_message set meta", lambda c: c.add_message("user", "hi", metadata={"k": {1, 2}}), InvalidMetadataError),
    ("add_message NaN meta", lambda c: c.add_message("user", "hi", metadata={"k": [math.nan]}), InvalidMetadataError),
    ("add_message session ''", lambda c: c.add_message("user", "hi", session_id=""), InvalidIdError),
    ("add_message user 257", lambda c: c.add_message("user", "hi", user_id="u" * 257), InvalidIdError),
    ("add_message user control", lambda c: c.add_message("user", "hi", user_id="a\nb"), InvalidIdError),
    ("add_messages one bad", lambda c: c.add_messages([("user", "fine"), ("user", SURROGATE)]), InvalidContentError),
    ("add_messages bad shape", lambda c: c.add_messages([{"role": "user"}]), InvalidInputError),
    (
        "add_messages extra key",
        lambda c: c.add_messages([{"role": "user", "content": "x", "foo": 1}]),
        InvalidInputError,
    ),
    ("recall empty", lambda c: c.recall(""), InvalidContentError),
    ("recall 1 MB", lambda c: c.recall(MB), ContentTooLargeError),
    ("recall k", lambda c: c.recall("x", k=-1), InvalidInputError),
    ("recall k bool", lambda c: c.recall("x", k=True), InvalidInputError),
    ("recall scope", lambda c: c.recall("x", scope="all"), InvalidInputError),
    ("recall since NaN", lambda c: c.recall("x", since=math.nan), InvalidTimestampError),
    ("recall filters nested", lambda c: c.recall("x", filters={"a": {"b": 1}}), InvalidMetadataError),
    ("recall filters inf", lambda c: c.recall("x", filters={"a": math.inf}), InvalidMetadataError),
    ("build_context user", lambda c: c.build_context("x", user_id=""), InvalidIdError),
    ("remember empty", lambda c: c.remember(""), InvalidContentError),
    ("remember importance", lambda c: c.remember("x y z", importance=2), InvalidInputError),
    ("remember visibility", lambda c: c.remember("x y z", visibility="public"), InvalidInputError),
    ("remember expire NaN", lambda c: c.remember("x y z", expire_at=math.nan), InvalidTimestampError),
    ("get missing", lambda c: c.get("no-such-id"), MemoryNotFoundError),
    ("get empty id", lambda c: c.get(""), InvalidIdError),
    ("update missing", lambda c: c.update("no-such-id", "text"), MemoryNotFoundError),
    ("delete missing", lambda c: c.delete("no-such-id"), MemoryNotFoundError),
    ("pin missing", lambda c: c.pin("no-such-id"), MemoryNotFoundError),
    ("forget bad user", lambda c: c.forget(user_id=""), InvalidIdError),
    ("clear bad session", lambda c: c.clear(session_id="s" * 300), InvalidIdError),
    ("import junk", lambda c: c.import_memories({"format": "other"}), InvalidInputError),
    (
        "import malformed",
        lambda c: c.import_memories({"format": "memory-vec/1", "user_id": "u1", "records": [{"x": 1}], "sessions": {}}),
        InvalidInputError,
    ),
    (
        "import session not a dict",
        lambda c: c.import_memories(
            {"format": "memory-vec/1", "user_id": "u1", "records": [], "sessions": {"s9": "x"}}
        ),
        InvalidInputError,
    ),
    (
        "import pinned str",
        lambda c: c.import_memories(
            {
                "format": "memory-vec/1",
                "user_id": "u1",
                "records": [
                    {
                        "id": "r" * 32,
                        "text": "t",
                        "role": "user",
                        "user_id": "u1",
                        "session_id": "s9",
                        "timestamp": 1.0,
                        "pinned": "no",
                    }
                ],
                "sessions": {},
            }
        ),
        InvalidInputError,
    ),
    ("add_messages None", lambda c: c.add_messages(None), InvalidInputError),
    ("add_messages one dict", lambda c: c.add_messages({"role": "user", "content": "hi"}), InvalidInputError),
    ("add_messages a string", lambda c: c.add_messages("hi"), InvalidInputError),
    ("build_context int", lambda c: c.build_context(5), InvalidContentError),
    ("recall include_shared str", lambda c: c.recall("x", include_shared="no"), InvalidInputError),
    ("maintain now str", lambda c: c.maintain(now="now"), InvalidTimestampError),
    ("maintain now NaN", lambda c: c.maintain(now=math.nan), InvalidTimestampError),
]


def snapshot(core: MemoryCore) -> tuple[int, list[tuple[int, str]], str]:
    everything = RecordFilter(include_superseded=True, include_archived=True)
    state = core.working_state()
    return parts(core).backend.count(everything), [(m.seq, m.content) for m in state.messages], state.summary


@pytest.mark.parametrize("kind", ["memory", "chroma", "milvus-lite"])
def test_every_entry_point_rejects_bad_input_before_writing(kind, request, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from .conftest import EMBEDDER, _config_factory

    core = MemoryCore(_config_factory(kind, request, tmp_path)(user_id="u1", session_id="s1"), embedder=EMBEDDER)
    core.add_message("user", "an existing message about the budget of 5000")
    before = snapshot(core)
    failures = []
    for name, call, error in CASES:
        try:
            call(core)
        except error:
            pass
        except Exception as exc:  # reported below with the case name
            failures.append(f"{name}: {type(exc).__name__}: {str(exc)[:120]}")
        else:
            failures.append(f"{name}: no error")
        if snapshot(core) != before:
            failures.append(f"{name}: the store changed")
            before = snapshot(core)
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("backend", ["sqlite", "chroma", "milvus"])
def test_an_unusable_persist_dir_is_a_config_error_naming_it(backend: str, tmp_path: Any) -> None:
    from memory_vec import ConfigError, MemoryConfig
    from memory_vec.testing.fakes import DeterministicHashEmbedder

    blocked = tmp_path / "a-file"
    blocked.write_text("not a directory")
    for path in ("/proc/self/no-such-dir", str(blocked / "store")):
        with pytest.raises(ConfigError, match="persist_dir"):
            MemoryCore(MemoryConfig(backend=backend, persist_dir=path), embedder=DeterministicHashEmbedder(8))
