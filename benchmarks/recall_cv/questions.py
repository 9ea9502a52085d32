"""Frozen question sets (``benchmarks/questions/*.json``): load, verify, freeze.

Each file holds a header (``frozen_on``, ``source``, ``license``, ``id_scheme``,
``sha256``) and a ``questions`` list. The checksum is the SHA-256 of the
canonical JSON of that list (sorted keys, no spaces, UTF-8). It is checked
twice on every load: against the file's own header and against
:data:`FROZEN_SHA256` below, so an edit to a question (or its evidence)
fails loudly unless this module is edited too, in the same reviewable diff.

A question is ``{"id", "conversation", "type", "question", "evidence",
"anchor", "answer"}``: ``conversation`` is the LoCoMo ``sample_id`` or the
MemoryBank user (the store user the question is asked of); ``evidence`` the
turn ids needed to answer it; ``anchor`` the subset that only dates the
question (relative-date questions name an anchor event, the rest of the
evidence is the target).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["FROZEN_SHA256", "QUESTION_DIR", "Question", "checksum", "freeze", "load_frozen"]

QUESTION_DIR = Path(__file__).resolve().parent.parent / "questions"
# Set name -> file: named apart from the dataset files the sets only reference by turn id.
QUESTION_FILES = {
    "locomo_dev_extra": "frozen_locomo_extra.json",
    "memorybank_en": "frozen_mb_en.json",
    "memorybank_cn": "frozen_mb_cn.json",
}

#: The checksums the sets were frozen with (2026-12-01, before any tuning on them).
FROZEN_SHA256: dict[str, str] = {
    "locomo_dev_extra": "5d6176d00e3a831dd1212e02b61c6574d4b002e2e8fc326503573f3b0c0286de",
    "memorybank_en": "2b6fc70d0031736fcd4b79d6609232ac9d18dfc1590aacb856ecf27be02f443d",
    "memorybank_cn": "2fcf95b5a0bb3b1eca6888accb9102ce0a326c20cb05af1902844f0bf4904905",
}


@dataclass(frozen=True)
class Question:
    """One recall question: what is asked of which store user, and which turns answer it."""

    id: str
    conversation: str
    question: str
    evidence: tuple[str, ...]
    category: str  # LoCoMo category name, or the frozen type
    source: str  # "locomo" (the dataset's own qa) or the frozen set's name
    anchor: tuple[str, ...] = field(default=())

    @property
    def target(self) -> tuple[str, ...]:
        return tuple(e for e in self.evidence if e not in self.anchor)


def checksum(questions: list[dict[str, Any]]) -> str:
    canonical = json.dumps(questions, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def load_frozen(name: str, directory: Path = QUESTION_DIR) -> list[Question]:
    """The questions of one frozen set, after both checksum checks."""
    path = directory / QUESTION_FILES.get(name, f"{name}.json")
    doc = json.loads(path.read_text(encoding="utf-8"))
    actual = checksum(doc["questions"])
    if actual != doc.get("sha256"):
        raise ValueError(f"{path}: questions were edited after freezing (sha256 {actual}, header {doc.get('sha256')})")
    expected = FROZEN_SHA256.get(name)
    if expected and actual != expected:
        raise ValueError(f"{path}: sha256 {actual} differs from FROZEN_SHA256[{name!r}] = {expected}")
    return [
        Question(
            q["id"], q["conversation"], q["question"], tuple(q["evidence"]), q["type"], name, tuple(q.get("anchor", ()))
        )
        for q in doc["questions"]
    ]


def freeze(path: Path, header: dict[str, Any], questions: list[dict[str, Any]]) -> str:
    """Write a set with its checksum; returns the checksum (to paste into FROZEN_SHA256)."""
    digest = checksum(questions)
    doc = {**header, "sha256": digest, "questions": questions}
    path.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return digest
