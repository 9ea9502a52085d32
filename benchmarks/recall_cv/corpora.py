"""What the harness stores and asks: corpora of turns and their question suites.

A corpus is a list of :class:`Turn` (one store user per LoCoMo conversation
or MemoryBank user, one session per LoCoMo session or MemoryBank day). A
suite is a list of :class:`~.questions.Question` asked of one corpus.

* ``locomo``: LoCoMo dev as ``locomo_recall.py`` ingests it (``"{speaker}:
  {text}"`` + ``" [shares {caption}]"``, turns 30 s apart from the session
  date, roles speaker_a = user, speaker_b = assistant).
* ``messy``: the same conversations after :mod:`.messy_chat` (one message
  per burst, 4 s apart, each keeping its turn's ``dia_id``).
* ``memorybank_en`` / ``memorybank_cn``: each day's query/response pairs as
  user/assistant messages, stored as typed (no name prefix: a companion app
  stores what was said), at 20:00 of the day plus one minute per message;
  turn ids ``<user>/<date>/<pair>/<q|r>``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from .messy_chat import messify_conversation
from .questions import Question

__all__ = ["CATEGORIES", "Turn", "evidence_ids", "locomo_questions", "locomo_turns", "memorybank_turns", "messy_turns"]

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}


@dataclass(frozen=True)
class Turn:
    user: str
    session: str
    timestamp: float
    role: str
    text: str
    turn_id: str
    speaker: str


def _session_date(text: str) -> datetime:
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=timezone.utc)


def _sessions(conv: dict[str, Any]) -> list[tuple[str, float, list[dict[str, Any]]]]:
    c = conv["conversation"]
    out = []
    n = 1
    while f"session_{n}" in c:
        out.append((f"session_{n}", _session_date(c[f"session_{n}_date_time"]).timestamp(), c[f"session_{n}"]))
        n += 1
    return out


def locomo_turns(data: Sequence[dict[str, Any]]) -> list[Turn]:
    turns = []
    for conv in data:
        c = conv["conversation"]
        roles = {c["speaker_a"]: "user", c["speaker_b"]: "assistant"}
        for session, start, items in _sessions(conv):
            for i, t in enumerate(items):
                text = f"{t['speaker']}: {t['text']}"
                if t.get("blip_caption"):
                    text += f" [shares {t['blip_caption']}]"
                turns.append(
                    Turn(
                        conv["sample_id"],
                        session,
                        start + 30 * i,
                        roles.get(t["speaker"], "user"),
                        text,
                        t["dia_id"],
                        t["speaker"],
                    )
                )
    return turns


def messy_turns(data: Sequence[dict[str, Any]], seed: int = 0) -> list[Turn]:
    turns = []
    for conv in data:
        c = conv["conversation"]
        roles = {c["speaker_a"]: "user", c["speaker_b"]: "assistant"}
        for session, start, items in _sessions(messify_conversation(conv, seed)):
            turn_index = -1
            last = None
            for m in items:
                if m["dia_id"] != last:
                    turn_index, last = turn_index + 1, m["dia_id"]
                turns.append(
                    Turn(
                        conv["sample_id"],
                        session,
                        start + 30 * turn_index + 4 * m["burst"],
                        roles.get(m["speaker"], "user"),
                        f"{m['speaker']}: {m['text']}",
                        m["dia_id"],
                        m["speaker"],
                    )
                )
    return turns


def memorybank_turns(path: Path) -> list[Turn]:
    data = json.loads(path.read_text(encoding="utf-8"))
    turns = []
    for raw_name, user in data.items():
        name = raw_name.strip()
        for date, pairs in user["history"].items():
            start = datetime.strptime(date, "%Y-%m-%d").replace(hour=20, tzinfo=timezone.utc).timestamp()
            for i, pair in enumerate(pairs):
                for j, (role, key, tag, speaker) in enumerate(
                    (("user", "query", "q", name), ("assistant", "response", "r", "AI companion"))
                ):
                    text = str(pair.get(key) or "").strip()
                    if text:
                        turns.append(
                            Turn(name, date, start + 60 * (2 * i + j), role, text, f"{name}/{date}/{i}/{tag}", speaker)
                        )
    return turns


def evidence_ids(raw: Sequence[str], valid: set[str]) -> list[str]:
    """LoCoMo evidence, normalized as the data README says: split on ';',
    drop stray colons, strip leading zeros; ids that name no turn are ignored."""
    out: list[str] = []
    for item in raw:
        for part in str(item).split(";"):
            nums = re.findall(r"\d+", part)
            if len(nums) != 2:
                continue
            dia = f"D{int(nums[0])}:{int(nums[1])}"
            if dia in valid and dia not in out:
                out.append(dia)
    return out


def locomo_questions(data: Sequence[dict[str, Any]], turns: Sequence[Turn]) -> list[Question]:
    """The dataset's own qa, in file order (the order ``locomo_recall.py`` asks them)."""
    valid: dict[str, set[str]] = {}
    for t in turns:
        valid.setdefault(t.user, set()).add(t.turn_id)
    out = []
    for conv in data:
        sid = conv["sample_id"]
        for i, qa in enumerate(conv["qa"]):
            out.append(
                Question(
                    f"{sid}-qa-{i:03d}",
                    sid,
                    qa["question"],
                    tuple(evidence_ids(qa.get("evidence", []), valid.get(sid, set()))),
                    CATEGORIES[int(qa["category"])],
                    "locomo",
                )
            )
    return out


def check_evidence(questions: Sequence[Question], turns: Sequence[Turn]) -> None:
    """Frozen evidence must name turns of the corpus (a typo would count as a miss forever)."""
    valid = {(t.user, t.turn_id) for t in turns}
    bad = [(q.id, e) for q in questions for e in q.evidence if (q.conversation, e) not in valid]
    if bad:
        raise ValueError(f"evidence ids that name no turn of the corpus: {bad[:10]} ({len(bad)} in all)")
