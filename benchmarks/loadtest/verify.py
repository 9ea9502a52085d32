"""After the load: a fresh client (a new ``MemoryCore`` over the same Chroma
server and Redis) checks that every user's memories are complete, in order,
and theirs alone.

Per user, from ``export_memories`` (every record, superseded ones too) and
``session_history``:

* exactly ``2 x turns`` message records, whose texts in ``seq`` order are the
  user's messages and the service's answers, alternating, as sent; seqs
  consecutive, timestamps non-decreasing;
* every record (messages, facts, summaries) has the user's id and session,
  and no other user's canary appears in any of them;
* the working state in Redis is that one session, and its recent turns are
  the end of the conversation;
* recall for the user with another user's canary as the query returns none
  of the other user's memories; with the user's own canary it finds it (so
  the check can see a canary at all).
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Sequence
from typing import Any

from benchmarks.loadtest.generator import CANARY, TurnRecord
from benchmarks.loadtest.script import UserScript
from memory_vec import MemoryConfig, MemoryCore

__all__ = ["verify_stores"]


def _expected(script: UserScript, answers: dict[int, str], turns_ok: Sequence[int]) -> list[str]:
    texts = []
    for t in turns_ok:
        texts += [script.messages[t], answers[t]]
    return texts


def _check_user(
    core: MemoryCore, u: int, script: UserScript, expected: list[str], others: Sequence[UserScript]
) -> tuple[list[str], Counter[str]]:
    problems: list[str] = []
    export = core.export_memories(user_id=script.user_id)
    records: list[dict[str, Any]] = export["records"]
    kinds = Counter(r["kind"] for r in records)
    messages = sorted((r for r in records if r["kind"] == "message"), key=lambda r: (r["seq"], r["timestamp"]))
    if len(messages) != len(expected):
        problems.append(f"{len(messages)} message records, expected {len(expected)}")
    texts = [r["text"] for r in messages]
    if texts != expected:
        first = next((i for i, (a, b) in enumerate(zip(texts, expected)) if a != b), min(len(texts), len(expected)))
        problems.append(f"message texts differ from what was sent from position {first} (missing, extra or reordered)")
    seqs = [r["seq"] for r in messages]
    if seqs and seqs != list(range(seqs[0], seqs[0] + len(seqs))):
        problems.append(f"seqs not consecutive: {seqs}")
    stamps = [r["timestamp"] for r in messages]
    if any(b < a for a, b in itertools.pairwise(stamps)):
        problems.append("timestamps decrease along seq")
    if [r["role"] for r in messages] != ["user", "assistant"] * (len(messages) // 2) + ["user"] * (len(messages) % 2):
        problems.append("roles do not alternate user/assistant")
    for r in records:
        if r["user_id"] != script.user_id or r["session_id"] != script.session_id:
            problems.append(f"record {r['id']} ({r['kind']}) belongs to {r['user_id']}/{r['session_id']}")
        foreign = set(CANARY.findall(r["text"])) - {script.canary}
        if foreign:
            problems.append(f"record {r['id']} holds other users' canaries {sorted(foreign)}")
    history = [r.text for r in core.session_history(session_id=script.session_id, user_id=script.user_id)]
    if history != expected:
        problems.append("session_history differs from what was sent")
    sessions = export["sessions"]
    if set(sessions) != {script.session_id}:
        problems.append(f"working state sessions {sorted(sessions)}, expected only {script.session_id}")
    else:
        recent = [m["content"] for m in sessions[script.session_id].get("messages", [])]
        if recent != expected[len(expected) - len(recent) :]:
            problems.append("working state's recent turns are not the end of the conversation")
    other = others[(u + 1) % len(others)]
    for hit in core.recall(f"the code {other.canary}", user_id=script.user_id, k=10):
        if hit.user_id != script.user_id or set(CANARY.findall(hit.text)) - {script.canary}:
            problems.append(f"recall for {script.user_id} returned {hit.user_id}'s memory {hit.id}")
    own = any(script.canary in hit.text for hit in core.recall(f"the code {script.canary}", user_id=script.user_id))
    kinds["own_canary_recalled"] = int(own)
    return problems, kinds


def verify_stores(settings: dict[str, Any], users: Sequence[UserScript], turns: Sequence[TurnRecord]) -> dict[str, Any]:
    """Check every user's stored memories against what the service answered.

    Args:
        settings: the service's store settings (backend, url, redis_url, collection).
        users: the scripts that were run.
        turns: the turn records of the run (only answered turns are expected in the store).
    """
    answers: dict[int, dict[int, str]] = {}
    for r in turns:
        if r.ok:
            answers.setdefault(r.user, {})[r.turn] = r.answer
    core = MemoryCore(MemoryConfig(**settings))
    problems: dict[str, list[str]] = {}
    totals: Counter[str] = Counter()
    facts_by_user = []
    for u, script in enumerate(users):
        done = sorted(answers.get(u, {}))
        found, kinds = _check_user(core, u, script, _expected(script, answers.get(u, {}), done), users)
        totals.update(kinds)
        facts_by_user.append(kinds["fact"])
        if found:
            problems[script.user_id] = found
    return {
        "users": len(users),
        "users_with_problems": len(problems),
        "problems": problems,
        "records_by_kind": {k: v for k, v in totals.items() if k != "own_canary_recalled"},
        "own_canary_recalled": totals["own_canary_recalled"],
        "facts_by_user": facts_by_user,
    }
