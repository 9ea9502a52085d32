"""No user ever sees another user's memories, on every backend."""

from __future__ import annotations

import random

import pytest

from memory_vec.backends import RecordFilter
from memory_vec.testing import parts

pytestmark = [pytest.mark.integration, pytest.mark.slow]

WORDS = [
    "apple",
    "river",
    "stone",
    "cloud",
    "piano",
    "garden",
    "rocket",
    "violet",
    "tiger",
    "harbor",
    "lantern",
    "meadow",
    "candle",
    "summit",
    "falcon",
    "orchard",
    "copper",
    "velvet",
    "thunder",
    "willow",
]
HOSTILE = ['a"b', "it's", "back\\slash", "x' or 1==1 --", '" || true || "', "用户😀", "u" * 256, "%_*"]


def test_randomized_thousand_users_zero_cross_user_results(core_factory, backend_kind) -> None:  # type: ignore[no-untyped-def]
    # The 1,000-user run on one backend (#45, test tiers); every other backend runs the same
    # interleaving with 200 users: the filters are the backend's, the count only adds time.
    rng = random.Random(42)
    users = [f"user-{i}" for i in range(1000 if backend_kind == "sqlite" else 200)]
    # Texts without numbers or names: no facts, so each turn is one upsert.
    core = core_factory(include_shared=False)
    written: dict[str, set[str]] = {u: set() for u in users}
    order = list(users)
    rng.shuffle(order)
    checks = 0
    for step, user in enumerate(order):
        text = " ".join(rng.sample(WORDS, 5))
        session = f"s{rng.randint(0, 2)}"
        result = core.add_messages([("user", text), ("assistant", "ok " + text)], user_id=user, session_id=session)
        written[user].update(r.id for r in result)
        if step % 4 == 0:  # recalls interleaved with writes
            probe = rng.choice(users)
            hits = core.recall(" ".join(rng.sample(WORDS, 2)), k=10, user_id=probe)
            assert {h.user_id for h in hits} <= {probe}
            assert {h.id for h in hits} <= written[probe]
            checks += 1
    core.flush()
    for user in rng.sample(users, 50):
        hits = core.recall(" ".join(rng.sample(WORDS, 3)), k=20, user_id=user)
        assert hits and {h.user_id for h in hits} == {user}
        ctx = core.build_context("apple river", user_id=user, session_id="fresh")
        assert all(h.user_id == user for h in ctx.relevant)
    assert checks >= len(users) // 4
    assert parts(core).backend.count(RecordFilter(user_id="user-7")) == len(written["user-7"])


def test_hostile_ids_are_stored_and_filtered_exactly(core_factory) -> None:  # type: ignore[no-untyped-def]
    core = core_factory(fact_extractor="none")
    for uid in HOSTILE:
        for sid in HOSTILE[:3]:
            core.add_message("user", f"secret of {uid!r} in {sid!r}", user_id=uid, session_id=sid)
    core.flush()
    for uid in HOSTILE:
        hits = core.recall("secret of", k=50, user_id=uid)
        assert len(hits) == 3 and {h.user_id for h in hits} == {uid}
        assert {h.session_id for h in hits} == set(HOSTILE[:3])
        one = core.recall("secret of", k=50, user_id=uid, scope="session", session_id=HOSTILE[1])
        assert [h.session_id for h in one] == [HOSTILE[1]]
    hits = core.recall("secret", k=5, user_id="x' or 1==1 --", filters={"k": "' or 1==1"})
    assert hits == []
