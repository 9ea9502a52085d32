"""What text a stored vector embeds: one policy for every path that stores
vectors (new messages, healing, import, re-embedding).

With ``contextual_embedding`` a message's vector embeds the message together
with the one before it in its session (its last 500 characters), so a short
reply ("Yes, five years ago!") is found by what it answers. The record's
text is never changed; only what its vector represents.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise

from .records import MemoryRecord

__all__ = ["EmbedTextPolicy"]


@dataclass(frozen=True)
class EmbedTextPolicy:
    """Example:
    >>> EmbedTextPolicy(contextual=True).for_messages("Where do you live?", ["In Paris."])
    ['Where do you live?\\nIn Paris.']
    """

    contextual: bool = True
    context_chars: int = 500

    def for_messages(self, previous: str | None, contents: Sequence[str]) -> list[str]:
        """Texts for consecutive new messages of one session; ``previous`` is
        the session's message before the first of them (None at the start)."""
        if not self.contextual:
            return list(contents)
        out = []
        for content in contents:
            out.append(content if previous is None else f"{previous[-self.context_chars:]}\n{content}")
            previous = content
        return out

    def for_records(self, records: Sequence[MemoryRecord], known: Sequence[MemoryRecord] = ()) -> list[str]:
        """Texts for stored records (import, re-embedding): a message's
        predecessor is the message with the next lower ``seq`` in its session
        among ``records`` and ``known``; facts and summaries embed their text."""
        if not self.contextual:
            return [r.text for r in records]
        by_session: dict[tuple[str, str], list[MemoryRecord]] = {}
        for r in [*known, *records]:
            if r.kind == "message":
                by_session.setdefault((r.user_id, r.session_id), []).append(r)
        previous: dict[str, str] = {}
        for turns in by_session.values():
            turns.sort(key=lambda r: (r.seq, r.timestamp))
            for before, after in pairwise(turns):
                if after.seq != before.seq:
                    previous[after.id] = before.text
        return [
            self.for_messages(previous.get(r.id), [r.text])[0] if r.kind == "message" else r.text
            for r in records
        ]
