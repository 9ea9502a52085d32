"""The chat service under load: FastAPI + ``VectorSummaryMemory`` over a Chroma
server and Redis, as a multi-worker deployment would run it.

Run by uvicorn with several worker processes (``runner.start_service``);
configured by environment variables, so every worker builds the same thing:

* ``LOADTEST_CHROMA_URL``, ``LOADTEST_REDIS_URL``, ``LOADTEST_COLLECTION``:
  the stores (one collection per run).
* ``LOADTEST_READY_DIR``: each worker writes ``<pid>.json`` there once its
  model is loaded and its store is open (what it took, in seconds).
* ``LOADTEST_MEMORY_PER``: ``request`` (default) builds the memory per
  request; ``session`` keeps each session's memory in the worker (bounded
  LRU), so its core's vector cache survives between the session's turns
  when they come back to this worker.

Per request the service builds the scope's memory, the LangChain way: a
``MemoryCore`` for the request's user and session (the store and the
embedder are shared by every core of the process) wrapped in a
``VectorSummaryMemory``; ``aload_memory_variables`` -> the prompt (the
package's ``PROMPT``) -> a scripted model -> ``asave_context``. The reply
carries the context it built, so the load generator can check it.

Endpoints: ``POST /turn``, ``POST /floor`` (the same texts embedded once as
a pair and once as a query, nothing else: the turn's embedding floor),
``GET /health``.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import os
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from fastapi import FastAPI
from pydantic import BaseModel

from benchmarks.loadtest.script import scripted_answer
from langchain_memory_vec import PROMPT, VectorSummaryMemory
from memory_vec import MemoryConfig, MemoryCore
from memory_vec._rules.bm25 import tokenize
from memory_vec.embeddings import Embedder, get_embedder

# The request's count of embedded texts; the core's async methods run in a
# worker thread with a copy of the context, which shares this list.
_embedded: contextvars.ContextVar[list[int] | None] = contextvars.ContextVar("loadtest_embedded", default=None)


class CountingEmbedder:
    """The process's embedder, counting the texts each request embeds."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    @property
    def dimension(self) -> int:
        return int(self.inner.dimension)

    def _count(self, n: int) -> None:
        counter = _embedded.get()
        if counter is not None:
            counter[0] += n

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        self._count(len(texts))
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> np.ndarray:
        self._count(1)
        return self.inner.embed_query(text)

    async def aembed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return await asyncio.to_thread(self.embed_documents, texts)

    async def aembed_query(self, text: str) -> np.ndarray:
        return await asyncio.to_thread(self.embed_query, text)


def _store_settings() -> dict[str, Any]:
    replica = os.environ.get("LOADTEST_REPLICA_DOCS")
    return {
        "backend": "chroma",
        "url": os.environ["LOADTEST_CHROMA_URL"],
        "redis_url": os.environ["LOADTEST_REDIS_URL"],
        "collection": os.environ["LOADTEST_COLLECTION"],
        **({"replica_docs": int(replica)} if replica else {}),
    }


@dataclass
class _Worker:
    """This worker process's state, set up by the lifespan."""

    embedder: CountingEmbedder | None = None
    settings: dict[str, Any] = field(default_factory=dict)
    per_session: bool = False
    memories: OrderedDict[tuple[str, str], VectorSummaryMemory] = field(default_factory=OrderedDict)


_Process = _Worker()


_MAX_KEPT = 1024


def _memory(user_id: str, session_id: str) -> VectorSummaryMemory:
    key = (user_id, session_id)
    memory = _Process.memories.get(key) if _Process.per_session else None
    if memory is None:
        config = MemoryConfig(**_Process.settings, user_id=user_id, session_id=session_id)
        memory = VectorSummaryMemory(core=MemoryCore(config, embedder=_Process.embedder))  # type: ignore[arg-type]
        if _Process.per_session:
            _Process.memories[key] = memory
            while len(_Process.memories) > _MAX_KEPT:
                _Process.memories.popitem(last=False)
    elif _Process.per_session:
        _Process.memories.move_to_end(key)
    return memory


@asynccontextmanager
async def _lifespan(app: FastAPI) -> AsyncIterator[None]:
    started = time.perf_counter()
    _Process.settings = _store_settings()
    _Process.per_session = os.environ.get("LOADTEST_MEMORY_PER", "request") == "session"
    _Process.embedder = CountingEmbedder(get_embedder(MemoryConfig().embedding_model))
    _Process.embedder.embed_query("warm-up")  # loads the model before the first request
    # jieba builds its dictionary on first use (seconds per worker): do it
    # before serving instead of inside the first Chinese turn.
    tokenize("预热 warm-up")
    model_s = time.perf_counter() - started
    MemoryCore(MemoryConfig(**_Process.settings), embedder=_Process.embedder)  # opens the shared store
    ready_dir = os.environ.get("LOADTEST_READY_DIR")
    if ready_dir:
        report = {"pid": os.getpid(), "model_s": model_s, "ready_s": time.perf_counter() - started}
        Path(ready_dir, f"{os.getpid()}.json").write_text(json.dumps(report), encoding="utf-8")
    yield


app = FastAPI(lifespan=_lifespan)


class TurnIn(BaseModel):
    user_id: str
    session_id: str
    message: str


class FloorIn(BaseModel):
    message: str
    answer: str


@app.get("/health")
async def health() -> dict[str, Any]:
    return {"pid": os.getpid()}


@app.post("/turn")
async def turn(body: TurnIn) -> dict[str, Any]:
    started = time.perf_counter()
    counter = [0]
    _embedded.set(counter)
    memory = _memory(body.user_id, body.session_id)
    built = time.perf_counter()
    inputs = {"input": body.message}
    variables = await memory.aload_memory_variables(inputs)
    loaded = time.perf_counter()
    prompt = await PROMPT.ainvoke({**inputs, **variables})
    answer = scripted_answer(body.message, variables["relevant_memories"])
    await memory.asave_context(inputs, {"output": answer})
    done = time.perf_counter()
    return {
        "answer": answer,
        "history": variables["history"],
        "relevant": variables["relevant_memories"],
        "prompt_chars": len(prompt.to_string()),
        "pid": os.getpid(),
        "server_ms": (done - started) * 1000,
        "build_ms": (built - started) * 1000,
        "load_ms": (loaded - built) * 1000,
        "save_ms": (done - loaded) * 1000,
        "embedded_texts": counter[0],
    }


@app.post("/floor")
async def floor(body: FloorIn) -> dict[str, Any]:
    """What any vector memory pays per turn: embed the exchange, embed the query."""
    assert _Process.embedder is not None
    embedder = _Process.embedder.inner

    def work() -> None:
        embedder.embed_documents([f"{body.message}\n{body.answer}"])
        embedder.embed_query(body.message)

    started = time.perf_counter()
    await asyncio.to_thread(work)
    return {"pid": os.getpid(), "server_ms": (time.perf_counter() - started) * 1000}
