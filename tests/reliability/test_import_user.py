"""import_memories writes into the core's own user (issue #44, point 6): an
export of user A imported on user B's core becomes B's, and never reaches A's
records, summary or recent turns. Another user is an explicit, admin path."""

from __future__ import annotations

from typing import Any

import pytest

from memory_vec import CrossUserImportError, InvalidInputError
from memory_vec.backends import InMemoryBackend, RecordFilter
from memory_vec.state import InMemoryStateStore
from memory_vec.testing import parts


def _everything(user: str) -> RecordFilter:
    return RecordFilter(user_id=user, include_superseded=True, include_archived=True)


def _shared_store(make_core: Any) -> tuple[Any, Any]:
    backend, state = InMemoryBackend(), InMemoryStateStore()
    alice = make_core(backend=backend, state=state, user_id="alice")
    bob = make_core(backend=backend, state=state, user_id="bob")
    return alice, bob


def test_an_export_of_another_user_goes_into_the_cores_own_user(make_core: Any) -> None:
    alice, bob = _shared_store(make_core)
    alice.add_message("user", "My monthly budget is 5000 dollars.")
    alice.add_message("user", "My monthly budget is 7000 dollars.")
    alice.add_message("user", "I live in Lyon.")
    export = alice.export_memories()
    alice.add_message("user", "Alice's later note, after the export.")
    before = sorted((r.id, r.text, r.valid_to) for r in parts(alice).backend.scan(_everything("alice")))
    alice_state = alice.working_state()

    assert bob.import_memories(export) == len(export["records"])

    # Alice's records, summary and recent turns are as they were.
    assert sorted((r.id, r.text, r.valid_to) for r in parts(alice).backend.scan(_everything("alice"))) == before
    assert alice.working_state() == alice_state
    # Bob holds a copy: his own user id, links kept within the copy, his working state.
    copied = parts(bob).backend.scan(_everything("bob"))
    assert len(copied) == len(export["records"])
    assert {r.user_id for r in copied} == {"bob"}
    ids = {r.id for r in copied}
    assert not ids & {r[0] for r in before}
    assert all(set(r.source_ids) <= ids and (r.superseded_by is None or r.superseded_by in ids) for r in copied)
    assert any(r.superseded_by for r in copied)  # the supersede chain came along
    state = bob.working_state()
    assert state.user_id == "bob"
    assert [m.content for m in state.messages] == [m.content for m in alice_state.messages[:3]]
    assert {m.id for m in state.messages} <= ids
    assert any("7000" in h.text for h in bob.recall("monthly budget", k=5))


def test_importing_the_same_export_twice_replaces_the_copy(make_core: Any) -> None:
    alice, bob = _shared_store(make_core)
    alice.add_message("user", "I live in Lyon.")
    export = alice.export_memories()
    bob.import_memories(export)
    bob.import_memories(export)
    assert parts(bob).backend.count(_everything("bob")) == len(export["records"])


def test_another_user_is_refused_unless_the_admin_path_is_named(make_core: Any) -> None:
    alice, bob = _shared_store(make_core)
    alice.add_message("user", "I live in Lyon.")
    bob.add_message("user", "Bob's own note.")
    export = bob.export_memories()
    alice_before = parts(alice).backend.count(_everything("alice"))
    with pytest.raises(CrossUserImportError, match="allow_other_user=True") as info:
        bob.import_memories(export, user_id="alice")
    assert isinstance(info.value, InvalidInputError)
    assert parts(alice).backend.count(_everything("alice")) == alice_before
    assert [m.content for m in alice.working_state().messages] == ["I live in Lyon."]

    assert bob.import_memories(export, user_id="carol", allow_other_user=True) == len(export["records"])
    assert {r.user_id for r in parts(bob).backend.scan(_everything("carol"))} == {"carol"}
    assert bob.working_state(user_id="carol").messages[0].content == "Bob's own note."
    # Naming the core's own user is no admin path.
    assert bob.import_memories(export, user_id="bob") == len(export["records"])


def test_a_record_of_a_third_user_inside_the_file_is_still_refused(make_core: Any) -> None:
    alice, bob = _shared_store(make_core)
    alice.add_message("user", "first")
    alice.add_message("user", "second")
    export = alice.export_memories()
    export["records"][0]["user_id"] = "mallory"
    with pytest.raises(InvalidInputError, match="nothing written"):
        bob.import_memories(export)
    assert parts(bob).backend.count(_everything("bob")) == 0
