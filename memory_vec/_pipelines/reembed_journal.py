"""The journal of a reembed: its records and new vectors on disk until the rewrite is done.

A module of its own because ``forget`` and ``clear`` (transfer) reach it too.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
from collections.abc import Sequence

import numpy as np

from memory_vec._model.config import MemoryConfig
from memory_vec._model.errors import InvalidInputError
from memory_vec._model.records import MemoryRecord
from memory_vec._storage.store import StoreKey

__all__ = ["ReembedJournal"]


class ReembedJournal:
    """The records and new vectors of a reembed, kept on disk until its rewrite is done."""

    def __init__(self, config: MemoryConfig) -> None:
        key = hashlib.sha256(repr(StoreKey.of(config)).encode("utf-8")).hexdigest()[:16]
        # In-process records live and die with the process: nothing to journal.
        name = f"reembed-{key}.journal.npz"
        self.path = "" if config.backend == "memory" else os.path.join(config.persist_dir, name)

    def load(self, space: str) -> tuple[list[MemoryRecord], np.ndarray] | None:
        if not self.path or not os.path.exists(self.path):
            return None
        with np.load(self.path, allow_pickle=False) as data:
            head = json.loads(str(data["head"]))
            if head["space"] != space:
                raise InvalidInputError(
                    f"reembed: a rewrite to {head['space']!r} did not finish (journal {self.path}); run reembed "
                    "with that model to finish it first"
                )
            return [MemoryRecord(**r) for r in head["records"]], np.asarray(data["vectors"], dtype=np.float32)

    def save(self, space: str, records: Sequence[MemoryRecord], vectors: np.ndarray) -> None:
        if not self.path:
            return
        os.makedirs(os.path.dirname(self.path) or ".", exist_ok=True)
        head = json.dumps({"space": space, "records": [dataclasses.asdict(r) for r in records]}, ensure_ascii=False)
        tmp = self.path + ".tmp.npz"
        np.savez(tmp, head=np.array(head), vectors=np.asarray(vectors, dtype=np.float32))
        os.replace(tmp, self.path)  # whole or absent: a crash while writing leaves no half journal

    def drop(self, user_id: str, session_id: str | None) -> int:
        """Take a user's (or a session's) records out of an unfinished rewrite, so finishing it
        cannot bring back what ``forget`` removed. Returns how many were dropped."""
        if not self.path or not os.path.exists(self.path):
            return 0
        with np.load(self.path, allow_pickle=False) as data:
            head = json.loads(str(data["head"]))
            vectors = np.asarray(data["vectors"], dtype=np.float32)
        keep = [
            i
            for i, r in enumerate(head["records"])
            if r["user_id"] != user_id or (session_id is not None and r["session_id"] != session_id)
        ]
        dropped = len(head["records"]) - len(keep)
        if dropped:
            self.save(head["space"], [MemoryRecord(**head["records"][i]) for i in keep], vectors[keep])
        return dropped

    def done(self) -> None:
        with contextlib.suppress(FileNotFoundError, NotADirectoryError):
            os.remove(self.path)
