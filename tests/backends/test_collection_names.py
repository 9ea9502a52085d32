"""Collection names mapped for backends that restrict them (memory_vec.backends._names)."""

from __future__ import annotations

import re

import pytest

from memory_vec.backends._names import chroma_name, milvus_name

CHROMA_RULE = re.compile(r"[a-zA-Z0-9][a-zA-Z0-9._-]{1,510}[a-zA-Z0-9]")
MILVUS_RULE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,254}")
AWKWARD = [
    "用户记忆",
    "my memories",
    "ab",
    "x",
    "-lead",
    "trail.",
    "a..b",
    "127.0.0.1",
    "::1",
    "a" * 600,
    "Team.Notes_v2-1",
    "我的 notes",
    "café",
    "\U0001f600emoji",
]


@pytest.mark.parametrize("name", ["memory_vec", "team-notes.v2", "abc", "A1_b-2.c3"])
def test_names_chroma_takes_are_kept(name: str) -> None:
    assert chroma_name(name) == name


@pytest.mark.parametrize("name", ["memory_vec", "_private", "Team_2", "a"])
def test_names_milvus_takes_are_kept(name: str) -> None:
    assert milvus_name(name) == name


@pytest.mark.parametrize("name", AWKWARD)
def test_mapped_names_are_valid_and_stable(name: str) -> None:
    for mapped, rule in ((chroma_name(name), CHROMA_RULE), (milvus_name(name), MILVUS_RULE)):
        assert rule.fullmatch(mapped), mapped
        assert ".." not in mapped
    assert chroma_name(name) == chroma_name(name) and milvus_name(name) == milvus_name(name)


def test_mapped_names_keep_names_apart() -> None:
    # The same readable part, different names: different collections.
    names = ["my memories", "my  memories", "my-memories!", "My memories", "用户记忆", "用户记忆2", "ab", "ab "]
    assert len({chroma_name(n) for n in names}) == len(names)
    assert len({milvus_name(n) for n in names}) == len(names)


def test_mapped_name_keeps_a_readable_part() -> None:
    assert chroma_name("my memories").startswith("mv-my-memories-")
    assert milvus_name("Team.Notes_v2-1").startswith("mv_Team_Notes_v2_1_")


@pytest.mark.parametrize("name", ["team a", "用户记忆", "ab", "my memories"])
def test_a_mapped_name_given_as_a_name_is_another_collection(name: str) -> None:
    """Someone naming their collection 'mv-team-a-<digest>' must not open the one of 'team a'."""
    for mapping in (chroma_name, milvus_name):
        mapped = mapping(name)
        if mapped == name:  # "ab" is a Milvus name as it is
            continue
        assert mapping(mapped) != mapped
        assert mapping(mapped) != mapping(name)


def test_a_legacy_server_collection_is_used_only_under_a_name_a_server_refuses() -> None:
    from memory_vec.backends._names import milvus_collection

    class Server:  # holds a collection under every name
        def has_collection(self, name: str, timeout: float) -> bool:
            return True

    class Empty:
        def has_collection(self, name: str, timeout: float) -> bool:
            return False

    mapped = milvus_name("team a")
    assert milvus_collection(Empty(), "team a", True, 1.0) == mapped
    assert milvus_collection(Server(), "team a", True, 1.0) == mapped  # the mapped one exists: it wins
    assert milvus_collection(Server(), mapped, True, 1.0) == milvus_name(mapped) != mapped
    assert milvus_collection(Empty(), "team a", False, 1.0) == "team a"  # Milvus Lite keeps any name
