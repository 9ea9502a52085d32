"""How a stored vector is made: one policy for every path that stores
vectors (new messages, healing, import, re-embedding).

With ``contextual_embedding`` a message's vector also represents the
messages around it in its session, so a short reply ("Yes, five years ago!")
is found by what it answers. Three methods (``contextual_method``), with
``c`` = ``contextual_chars`` and ``w`` = ``contextual_weight``:

* ``"pair"`` (default): a user message and the assistant reply right after
  it are one *unit* and share one vector: ``normalize(v(unit) + w *
  v(previous unit))``, where ``v(unit)`` embeds the unit's texts joined by
  newlines (after the last ``c`` characters of the message before it, when
  ``c`` > 0). Any other message is a unit of its own, mixed the same way
  with the unit before it: a lone assistant message, and a user message
  without its reply (a burst of short messages, or a reply still to come:
  it is stored again with the pair's vector when the reply comes in a later
  call; its weight is ``contextual_lone_weight``, 0 keeps it plain). A turn
  embeds one text (the pair) besides its recall query: the previous unit's
  vector was embedded the turn before, and the user message's plain vector
  (for its facts) is the recall query's. ``contextual_own_weight`` = ``o``
  (opt-in, embeds nothing more): a user message in a pair adds ``o *
  v(itself)``, its recall query's vector, so its own words weigh more than
  the reply's. Both are recorded in the policy's tag.
* ``"text"``: each message embeds ``previous[-c:] + "\\n" + message``, so every
  message is embedded a second time as context (the earlier default, ``c``
  = 500).
* ``"vector"``: ``normalize(w * v(previous) + v(message))`` of plain vectors.

Facts and summaries embed their text. The record's text is never changed;
only what its vector represents. A stored vector is a function of the
session's messages, not of how they were batched into calls, so importing
or re-embedding a store gives the vectors its writes gave. A collection
records the policy next to the model id (:meth:`EmbedTextPolicy.space_id`)
and never holds vectors of two policies: a store made by another policy
needs ``memory-vec reembed`` (:mod:`memory_vec._pipelines.maintenance`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

import numpy as np

from memory_vec._model.records import MemoryRecord
from memory_vec.embeddings.base import normalize_rows

if TYPE_CHECKING:
    from memory_vec._model.config import MemoryConfig

__all__ = ["POLICY_SEPARATOR", "EmbedTextPolicy", "VectorPlan"]

#: Separates the model id from the policy tag in the id a collection records.
POLICY_SEPARATOR = "#"
#: Context characters of the text method before the policy was recorded.
LEGACY_TEXT_CHARS = 500

Turn = tuple[str, str]  # (role, text) of one message


@dataclass(frozen=True)
class VectorPlan:
    """The texts to embed for some stored vectors, and how to combine them.

    Stored vector ``i`` is the vector of ``texts[own[i]]``, plus ``weight``
    (or ``context_weights[i]`` when given) times the vector of
    ``texts[context[i]]`` when ``context[i]`` is not None, plus
    ``plain_weight`` times the vector of ``texts[plain[i]]`` when ``plain``
    is given and ``plain[i]`` is not None (renormalized when anything is
    mixed in). ``texts`` holds each text once.
    """

    texts: tuple[str, ...]
    own: tuple[int, ...]
    context: tuple[int | None, ...]
    weight: float = 0.0
    plain: tuple[int | None, ...] = ()
    plain_weight: float = 0.0
    context_weights: tuple[float, ...] = ()

    def vectors(self, embedded: np.ndarray) -> np.ndarray:
        """Stored vectors from the vectors of ``texts`` (same order)."""
        embedded = np.asarray(embedded, dtype=np.float32)
        if not self.own:
            return np.zeros((0, embedded.shape[1] if embedded.ndim == 2 else 0), dtype=np.float32)
        out: np.ndarray = embedded[list(self.own)].copy()
        mixed: set[int] = set()
        context_weights = self.context_weights or (self.weight,) * len(self.own)
        plain_weights = (self.plain_weight,) * len(self.own)
        for extra, weights in ((self.context, context_weights), (self.plain, plain_weights)):
            pairs = [(i, c) for i, c in enumerate(extra) if c is not None]
            if pairs:
                rows, sources = [i for i, _ in pairs], [c for _, c in pairs]
                scale = np.asarray([weights[i] for i in rows], dtype=np.float32)[:, None]
                out[rows] += scale * embedded[sources]
                mixed.update(rows)
        if mixed:
            rows = sorted(mixed)
            out[rows] = normalize_rows(out[rows])
        return out


@dataclass
class _PlanBuilder:
    weight: float
    plain_weight: float = 0.0
    index: dict[str, int] = field(default_factory=dict)
    own: list[int] = field(default_factory=list)
    context: list[int | None] = field(default_factory=list)
    plain: list[int | None] = field(default_factory=list)
    context_weights: list[float] = field(default_factory=list)

    def _at(self, text: str | None) -> int | None:
        return None if text is None else self.index.setdefault(text, len(self.index))

    def add(
        self, text: str, mixed_with: str | None = None, plain: str | None = None, weight: float | None = None
    ) -> None:
        self.context.append(self._at(mixed_with))
        self.own.append(self.index.setdefault(text, len(self.index)))
        self.plain.append(self._at(plain))
        self.context_weights.append(self.weight if weight is None else weight)

    def plan(self) -> VectorPlan:
        plain = tuple(self.plain) if any(p is not None for p in self.plain) else ()
        weights = tuple(self.context_weights) if any(w != self.weight for w in self.context_weights) else ()
        return VectorPlan(
            tuple(self.index),
            tuple(self.own),
            tuple(self.context),
            self.weight,
            plain,
            self.plain_weight if plain else 0.0,
            weights,
        )


@dataclass(frozen=True)
class EmbedTextPolicy:
    """What each stored vector is (see the module docs).

    Example:
    >>> turns = [("user", "Hi"), ("assistant", "Hello!"), ("user", "Where do you live?"), ("assistant", "Paris.")]
    >>> plan = EmbedTextPolicy(method="pair", weight=1.0).plan_window(turns, targets=[2, 3])
    >>> plan.texts, plan.own, plan.context
    (('Hi\\nHello!', 'Where do you live?\\nParis.'), (1, 1), (0, 0))
    >>> EmbedTextPolicy(method="text", chars=500).plan_window(turns[:2], [1]).texts
    ('Hi\\nHello!',)
    """

    contextual: bool = True
    method: Literal["pair", "text", "vector"] = "pair"
    chars: int = 0
    weight: float = 1.0
    #: pair: a user message also mixes in this times its own plain vector (its recall query's).
    own_weight: float = 0.0
    #: pair: a user message without its reply (yet) is a unit of its own, mixed with this times the
    #: unit before (0: plain).
    lone_weight: float = 0.5

    @classmethod
    def from_config(cls, config: MemoryConfig) -> EmbedTextPolicy:
        chars = config.contextual_chars
        if chars is None:
            chars = LEGACY_TEXT_CHARS if config.contextual_method == "text" else 0
        return cls(
            contextual=config.contextual_embedding,
            method=config.contextual_method,
            chars=chars,
            weight=config.contextual_weight,
            own_weight=config.contextual_own_weight,
            lone_weight=config.contextual_lone_weight,
        )

    @classmethod
    def earlier_default(cls) -> EmbedTextPolicy:
        """The policy of stores made before the policy was recorded."""
        return cls(method="text", chars=LEGACY_TEXT_CHARS)

    # --- identity ---------------------------------------------------------------
    @property
    def tag(self) -> str:
        """What a collection records next to the model id. Empty for plain
        vectors and for the text method with 500 characters, which stores
        made before the tag existed hold."""
        if not self.contextual or (self.method == "text" and self.chars == LEGACY_TEXT_CHARS):
            return ""
        if self.method == "vector":
            return f"vector:w{self.weight:g}"
        if self.method == "text":
            return f"text:c{self.chars}"
        tag = f"pair:c{self.chars}:w{self.weight:g}"
        if self.own_weight:
            tag += f":o{self.own_weight:g}"
        return tag + (f":u{self.lone_weight:g}" if self.lone_weight else "")

    def space_id(self, model_id: str) -> str:
        """The id a collection records for vectors of ``model_id`` under this policy."""
        return f"{model_id}{POLICY_SEPARATOR}{self.tag}" if self.tag else model_id

    # --- the rule ---------------------------------------------------------------
    def _recipe(self, turns: Sequence[Turn], i: int) -> tuple[str, str | None, str | None, float | None]:
        """(text to embed, text whose vector is mixed in with ``weight`` (or
        the fourth item), text whose vector is mixed in with ``own_weight``)
        for message ``i``."""
        text = turns[i][1]
        before = turns[i - 1][1] if i > 0 else None
        if not self.contextual:
            return text, None, None, None
        if self.method == "vector":
            return text, before, None, None
        if self.method == "text":
            return self._with_context(turns, i, text), None, None, None
        unit = self._unit(turns, i)
        if unit is None:
            return text, None, None, None  # a user message without its reply (yet): plain
        own = self._unit_text(turns, *unit)
        plain = text if self.own_weight and turns[i][0] == "user" and unit[1] > unit[0] else None
        lone = turns[i][0] == "user" and unit[1] == unit[0]
        weight = self.lone_weight if lone else self.weight
        if not weight or unit[0] == 0:
            return own, None, plain, None
        previous = self._unit(turns, unit[0] - 1)
        context = turns[unit[0] - 1][1] if previous is None else self._unit_text(turns, *previous)
        return own, context, plain, (weight if lone else None)

    def _unit(self, turns: Sequence[Turn], i: int) -> tuple[int, int] | None:
        """The messages that share message ``i``'s vector under the pair method."""
        role = turns[i][0]
        if role == "user":
            if i + 1 < len(turns) and turns[i + 1][0] == "assistant":
                return i, i + 1
            return (i, i) if self.lone_weight else None
        if role == "assistant" and i > 0 and turns[i - 1][0] == "user":
            return i - 1, i
        return i, i

    def _unit_text(self, turns: Sequence[Turn], first: int, last: int) -> str:
        return self._with_context(turns, first, "\n".join(text for _, text in turns[first : last + 1]))

    def _with_context(self, turns: Sequence[Turn], first: int, body: str) -> str:
        if first == 0 or not self.chars:
            return body
        return f"{turns[first - 1][1][-self.chars :]}\n{body}"

    def completes_pair(self, previous: Sequence[Turn], new: Sequence[Turn]) -> bool:
        """Whether storing ``new`` after ``previous`` changes the stored
        vector of ``previous[-1]``: a user message whose reply comes now."""
        return (
            self.contextual
            and self.method == "pair"
            and bool(previous)
            and bool(new)
            and previous[-1][0] == "user"
            and new[0][0] == "assistant"
        )

    # --- plans ------------------------------------------------------------------
    def plan_window(self, turns: Sequence[Turn], targets: Sequence[int]) -> VectorPlan:
        """Stored vectors of ``turns[t]`` for each target; ``turns`` are
        consecutive messages of one session, including the neighbours the
        rule reads (up to four messages before a target and one after)."""
        builder = _PlanBuilder(self.weight, self.own_weight)
        for i in targets:
            builder.add(*self._recipe(turns, i))
        return builder.plan()

    def plan_records(self, records: Sequence[MemoryRecord], known: Sequence[MemoryRecord] = ()) -> VectorPlan:
        """Stored records (import, re-embedding): a message's neighbours are
        the messages next to it by ``seq`` in its session among ``records``
        and ``known``; facts and summaries embed their text."""
        sessions: dict[tuple[str, str], list[MemoryRecord]] = {}
        for r in {r.id: r for r in [*known, *records]}.values():
            if r.kind == "message":
                sessions.setdefault((r.user_id, r.session_id), []).append(r)
        where: dict[str, tuple[list[Turn], int]] = {}
        for members in sessions.values():
            members.sort(key=lambda r: (r.seq, r.timestamp))
            turns = [(r.role, r.text) for r in members]
            for i, r in enumerate(members):
                where[r.id] = (turns, i)
        builder = _PlanBuilder(self.weight, self.own_weight)
        for r in records:
            if r.kind == "message":
                builder.add(*self._recipe(*where[r.id]))
            else:
                builder.add(r.text)
        return builder.plan()
