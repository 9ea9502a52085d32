"""Working state in Redis, shared by many processes and machines.

Keys (``<ns>`` the namespace; ids base64url-encoded, so no id can collide
with another key):

* ``memvec:<ns>:s:<user>:<session>:meta`` hash: summary, summary_tokens,
  next_seq, folded_through, updated_at; ``...:msgs`` sorted set: score = seq,
  member = ``"<seq>:<message json>"``; ``memvec:<ns>:u:<user>`` the user's sessions;
* ``memvec:<ns>:kv:<user>`` the user's keyword version; ``memvec:<ns>:dl``
  hash: record id -> dead letter JSON;
* ``memvec:<ns>:v:<kind><digest>`` the shared vector cache
  (:mod:`memory_vec._storage.vector_cache`): float32 bytes keyed by a digest
  of model id and text (never the text), expiring after ``VECTOR_TTL_S``.

``append`` and ``commit_fold`` are Lua scripts, so Redis runs each atomically
(seqs come from ``next_seq`` inside the script; a fold commits only if
``folded_through``, and the summary when asked, are unchanged). A new keyword
version is one ``GETSET``. Message JSON is built in Python and never decoded
by Lua (cjson would round timestamps to 14 digits).
"""

from __future__ import annotations

import base64
import contextlib
import json
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from memory_vec._model.errors import DependencyMissingError, StateStoreError
from memory_vec.state._letters import letter_from_json, letters_to_json
from memory_vec.state._redis_scripts import (
    APPEND,
    CLEAR,
    COMMIT_FOLD,
    DROP_MESSAGES,
    EDIT_MESSAGE,
)
from memory_vec.state.base import DeadLetter, NewMessage, StateMessage, WorkingState

__all__ = ["VECTOR_TTL_S", "RedisStateStore"]

#: How long a shared vector stays: a user's next turn mostly comes within
#: minutes; a vector costs ~1.6 KB of Redis memory (384-d) while it lives.
VECTOR_TTL_S = 600


def _enc(value: str) -> str:
    return base64.urlsafe_b64encode(value.encode("utf-8")).decode("ascii").rstrip("=")


class RedisStateStore:
    """Working state in Redis with atomic append and compare-and-set folds.

    Example:
        >>> store = RedisStateStore("redis://127.0.0.1:6379/0", namespace="memory_vec")  # doctest: +SKIP
        >>> store.append("alice", "chat-1", [NewMessage("m1", "user", "hi", 0.0, 1)])  # doctest: +SKIP
        [1]
    """

    name = "redis"

    def __init__(self, url: str, *, namespace: str = "memory_vec", timeout: float = 10.0) -> None:
        """Connect lazily to ``url``.

        Args:
            url: ``redis://``, ``rediss://`` or ``unix://`` URL.
            namespace: Key prefix part (the collection name), so stores can share a Redis.
            timeout: Socket timeout in seconds.

        Raises:
            DependencyMissingError: The ``redis`` package is not installed.
        """
        try:
            import redis
        except ImportError as exc:
            raise DependencyMissingError(
                "The Redis working-state store needs the redis package: pip install 'memory-vec[redis]'"
            ) from exc
        self.url = url
        self.namespace = namespace
        self._redis_errors: tuple[type[BaseException], ...] = (redis.RedisError,)
        self._client: Any = redis.Redis.from_url(
            url, socket_timeout=timeout, socket_connect_timeout=timeout, decode_responses=True
        )
        self._prefix = f"memvec:{_enc(namespace)}:"
        self._bytes_client: Any = None  # vectors are bytes; the main client decodes to str
        self._timeout = timeout
        self._append = self._client.register_script(APPEND)
        self._drop = self._client.register_script(DROP_MESSAGES)
        self._edit = self._client.register_script(EDIT_MESSAGE)
        self._fold = self._client.register_script(COMMIT_FOLD)
        self._clear = self._client.register_script(CLEAR)

    # --- keys -------------------------------------------------------------------------
    def _keys(self, user_id: str, session_id: str) -> list[str]:
        base = f"{self._prefix}s:{_enc(user_id)}:{_enc(session_id)}"
        return [base + ":meta", base + ":msgs", self._user_key(user_id)]

    def _user_key(self, user_id: str) -> str:
        return f"{self._prefix}u:{_enc(user_id)}"

    def _keyword_keys(self, user_id: str) -> tuple[str, str, str]:
        # the version, and the keyword log of 0.1 (left by a store it wrote: forget removes it too)
        user = _enc(user_id)
        return f"{self._prefix}kv:{user}", f"{self._prefix}k:{user}", f"{self._prefix}kl:{user}"

    @contextmanager
    def _errors(self, action: str) -> Iterator[None]:
        try:
            yield
        except self._redis_errors as exc:
            raise StateStoreError(
                f"Redis working-state store at {_redact(self.url)} failed to {action}: {exc}. "
                "Check that Redis is running and MemoryConfig.redis_url is right."
            ) from exc

    # --- StateStore -----------------------------------------------------------------------
    def load(self, user_id: str, session_id: str) -> WorkingState:
        meta_key, msgs_key, _ = self._keys(user_id, session_id)
        with self._errors("load a session"):
            pipe = self._client.pipeline(transaction=True)  # one consistent snapshot
            pipe.hgetall(meta_key)
            pipe.zrange(msgs_key, 0, -1)
            meta, members = pipe.execute()
        return _state(user_id, session_id, meta, members)

    def append(self, user_id: str, session_id: str, messages: Sequence[NewMessage], *, first_seq: int = 1) -> list[int]:
        if not messages:
            return []
        payloads = [
            json.dumps([m.id, m.role, m.content, m.timestamp, m.tokens, m.metadata], ensure_ascii=False)
            for m in messages
        ]
        with self._errors("append messages"):
            seqs = self._append(
                keys=self._keys(user_id, session_id), args=[session_id, repr(time.time()), int(first_seq), *payloads]
            )
        return [int(s) for s in seqs]

    def commit_fold(
        self,
        user_id: str,
        session_id: str,
        *,
        expected_folded_through: int,
        folded_through: int,
        summary: str,
        summary_tokens: int,
        expected_summary: str | None = None,
    ) -> bool:
        with self._errors("commit a summary fold"):
            done = self._fold(
                keys=self._keys(user_id, session_id),
                args=[
                    int(expected_folded_through),
                    int(folded_through),
                    summary,
                    int(summary_tokens),
                    repr(time.time()),
                    session_id,
                    "0" if expected_summary is None else "1",
                    expected_summary or "",
                ],
            )
        return bool(int(done))

    def set_summary(self, user_id: str, session_id: str, summary: str, summary_tokens: int) -> None:
        meta_key, _, user_key = self._keys(user_id, session_id)
        with self._errors("set the summary"):
            pipe = self._client.pipeline(transaction=True)
            pipe.hsetnx(meta_key, "next_seq", 1)
            pipe.hsetnx(meta_key, "folded_through", 0)
            pipe.hset(meta_key, mapping={"summary": summary, "summary_tokens": int(summary_tokens)})
            pipe.sadd(user_key, session_id)
            pipe.execute()

    def replace(self, state: WorkingState) -> None:
        meta_key, msgs_key, user_key = self._keys(state.user_id, state.session_id)
        with self._errors("replace a session"):
            pipe = self._client.pipeline(transaction=True)
            pipe.delete(meta_key, msgs_key)
            pipe.hset(
                meta_key,
                mapping={
                    "summary": state.summary,
                    "summary_tokens": int(state.summary_tokens),
                    "next_seq": int(state.next_seq),
                    "folded_through": int(state.folded_through),
                    "updated_at": repr(time.time()),
                },
            )
            if state.messages:
                pipe.zadd(msgs_key, {_encode(m): m.seq for m in state.messages})
            pipe.sadd(user_key, state.session_id)
            pipe.execute()

    def clear(self, user_id: str, session_id: str) -> int:
        with self._errors("clear a session"):
            return int(self._clear(keys=self._keys(user_id, session_id), args=[session_id]))

    def drop_messages(self, user_id: str, session_id: str, ids: Sequence[str]) -> int:
        if not ids:
            return 0
        # A member is "<seq>:" + the JSON list [id, ...]: matched by its encoded id, atomically.
        with self._errors("drop messages"):
            return int(
                self._drop(
                    keys=self._keys(user_id, session_id)[1:2],
                    args=[json.dumps(i, ensure_ascii=False) for i in dict.fromkeys(ids)],
                )
            )

    def forget_user(self, user_id: str) -> None:
        with self._errors("forget a user"):
            sessions = self._client.smembers(self._user_key(user_id))
            keys = [k for s in sessions for k in self._keys(user_id, s)[:2]]
            self._client.delete(*keys, *self._keyword_keys(user_id), self._user_key(user_id))

    def edit_message(self, user_id: str, session_id: str, old: StateMessage, new: StateMessage) -> bool:
        if new.seq != old.seq:
            return False
        with self._errors("edit a message"):
            return bool(
                self._edit(keys=self._keys(user_id, session_id)[1:2], args=[_encode(old), _encode(new), new.seq])
            )

    def sessions(self, user_id: str) -> list[str]:
        with self._errors("list sessions"):
            return sorted(self._client.smembers(self._user_key(user_id)))

    # --- keyword versions ----------------------------------------------------------
    def keyword_version(self, user_id: str) -> str | None:
        with self._errors("read a keyword version"):
            found = self._client.get(self._keyword_keys(user_id)[0])
        return None if found is None else str(found)

    def new_keyword_version(self, user_id: str, version: str) -> str | None:
        with self._errors("change a keyword version"):
            found = self._client.getset(self._keyword_keys(user_id)[0], version)
        return None if found is None else str(found)

    # --- dead letters ----------------------------------------------------------------
    def add_dead_letters(self, letters: Sequence[DeadLetter]) -> None:
        payloads = letters_to_json(letters)
        if not payloads:
            return
        with self._errors("store dead letters"):
            self._client.hset(self._prefix + "dl", mapping={d.record_id: p for d, p in zip(letters, payloads)})

    def dead_letters(self, user_id: str | None = None) -> list[DeadLetter]:
        with self._errors("read dead letters"):
            payloads = self._client.hvals(self._prefix + "dl")
        found = [letter_from_json(p) for p in payloads]
        return sorted(
            (d for d in found if user_id is None or d.user_id == user_id), key=lambda d: (d.failed_at, d.record_id)
        )

    def remove_dead_letters(self, record_ids: Sequence[str]) -> int:
        if not record_ids:
            return 0
        with self._errors("remove dead letters"):
            return int(self._client.hdel(self._prefix + "dl", *set(record_ids)))

    # --- shared vector cache (an optimisation: errors read as misses) -------------------
    def _vectors_client(self) -> Any:
        if self._bytes_client is None:
            import redis

            self._bytes_client = redis.Redis.from_url(
                self.url, socket_timeout=self._timeout, socket_connect_timeout=self._timeout
            )
        return self._bytes_client

    def cached_vectors(self, keys: Sequence[str]) -> list[bytes | None]:
        """Vectors cached under ``keys`` by any process (None where absent)."""
        if not keys:
            return []
        try:
            return list(self._vectors_client().mget([f"{self._prefix}v:{k}" for k in keys]))
        except self._redis_errors:
            return [None] * len(keys)

    def cache_vectors(self, items: Mapping[str, bytes], owner: str | None = None) -> None:
        """Cache vectors for every process, for ``VECTOR_TTL_S`` seconds;
        ``owner``: the user whose texts they are (``forget_vectors`` drops them)."""
        if not items:
            return
        with contextlib.suppress(*self._redis_errors):
            pipe = self._vectors_client().pipeline(transaction=False)
            keys = [f"{self._prefix}v:{key}" for key in items]
            for key, blob in zip(keys, items.values()):
                pipe.set(key, blob, ex=VECTOR_TTL_S)
            if owner is not None:
                # Scored by time, so a user who never pauses does not grow the list forever.
                now = time.time()
                owned = self._owned_vectors(owner)
                pipe.zadd(owned, dict.fromkeys(keys, now))
                pipe.zremrangebyscore(owned, "-inf", now - VECTOR_TTL_S)
                pipe.expire(owned, VECTOR_TTL_S)
            pipe.execute()

    def forget_vectors(self, owner: str) -> int:
        """Drop the cached vectors of a user's texts (``forget``); how many were there."""
        client = self._vectors_client()
        with self._errors("forget cached vectors"):
            keys = list(client.zrange(self._owned_vectors(owner), 0, -1))
            if keys:
                client.delete(*keys)
            client.delete(self._owned_vectors(owner))
        return len(keys)

    def _owned_vectors(self, owner: str) -> str:
        return f"{self._prefix}vu:{_enc(owner)}"

    def purge(self) -> None:
        """Nothing the client can do: Redis' own persistence (RDB snapshots,
        the AOF) keeps deleted keys until it is rewritten; an operator runs
        ``BGREWRITEAOF`` / ``BGSAVE`` (see the README's reliability section)."""

    def close(self) -> None:
        with contextlib.suppress(*self._redis_errors):  # closing is best effort
            self._client.close()
            if self._bytes_client is not None:
                self._bytes_client.close()


def _state(user_id: str, session_id: str, meta: dict[str, str], members: list[str]) -> WorkingState:
    state = WorkingState(user_id, session_id)
    if meta:
        state.summary = meta.get("summary", "")
        state.summary_tokens = int(meta.get("summary_tokens", 0))
        state.next_seq = int(meta.get("next_seq", 1))
        state.folded_through = int(meta.get("folded_through", 0))
        state.updated_at = float(meta.get("updated_at", 0.0))
    state.messages = [_decode(m) for m in members]
    return state


def _encode(m: StateMessage) -> str:
    return f"{m.seq}:" + json.dumps([m.id, m.role, m.content, m.timestamp, m.tokens, m.metadata], ensure_ascii=False)


def _decode(member: str) -> StateMessage:
    seq, _, payload = member.partition(":")
    msg_id, role, content, timestamp, tokens, metadata = json.loads(payload)
    return StateMessage(int(seq), msg_id, role, content, float(timestamp), int(tokens), metadata)


def _redact(url: str) -> str:
    # Never echo a password from the URL into an error message.
    if "@" in url and "://" in url:
        scheme, rest = url.split("://", 1)
        return f"{scheme}://***@{rest.rsplit('@', 1)[1]}"
    return url
