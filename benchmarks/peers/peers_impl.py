"""The peers: what a LangChain or LlamaIndex user would pick instead.

Each is configured as documented by its framework, with the shared embedder,
the shared scripted LLM, cl100k token counting, the same retrieval k and the
same buffer budget as ours (2,000 tokens for summary + recent turns).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from memory_vec._rules.bm25 import tokenize

from .shared import CachedEmbedder, CountingLLM, LCEmbeddings, LCScriptedLLM, LIEmbedding, LIScriptedLLM, li_tokenizer
from .systems import System, Turn

BUFFER_TOKENS = 2000  # = MemoryConfig.max_token_limit (summary + recent turns)


def _chroma_client(workdir: Path):  # type: ignore[no-untyped-def]
    import chromadb

    return chromadb.PersistentClient(path=str(workdir / f"chroma-{uuid.uuid4().hex[:8]}"))


# --------------------------------------------------------------------------- LangChain
class LCVectorStoreRetriever(System):
    """``VectorStoreRetrieverMemory`` over ``langchain_chroma.Chroma`` (embedded)."""

    retrieves = True
    note = "one document per save_context (input + output)"

    def __init__(self, embedder: CachedEmbedder, llm: CountingLLM, workdir: Path, k: int = 5) -> None:
        super().__init__(embedder, llm, workdir, k)
        from langchain_chroma import Chroma
        from langchain_classic.memory import VectorStoreRetrieverMemory

        self._Chroma, self._Memory = Chroma, VectorStoreRetrieverMemory
        self.client = _chroma_client(workdir)
        self.emb = LCEmbeddings(embedder)
        self.store = Chroma(collection_name="live", embedding_function=self.emb, client=self.client)
        self.memory = VectorStoreRetrieverMemory(
            retriever=self.store.as_retriever(search_kwargs={"k": k}), memory_key="history", input_key="input"
        )
        self.per_conv: dict[str, object] = {}

    def save(self, user: str, assistant: str) -> None:
        self.memory.save_context({"input": user}, {"output": assistant})

    def load(self, query: str) -> str:
        return str(self.memory.load_memory_variables({"input": query})["history"])

    def fill(self, texts: Sequence[str], vectors: np.ndarray) -> None:
        # The documents save_context writes: "input: {user}\noutput: {assistant}".
        docs = [f"input: {texts[i]}\noutput: {texts[i + 1]}" for i in range(0, len(texts) - 1, 2)]
        self.embedder.warm(docs)
        for i in range(0, len(docs), 1000):
            self.store.add_texts(docs[i : i + 1000])

    def index_locomo(self, conv_id: str, turns: Sequence[Turn]) -> None:
        # One document per turn (the unit recall is scored on), with its dia_id.
        store = self._Chroma(collection_name=f"c{conv_id}", embedding_function=self.emb, client=self.client)
        store.add_texts([t.text for t in turns], metadatas=[{"dia_id": t.dia_id} for t in turns])
        self.per_conv[conv_id] = store

    def retrieve(self, conv_id: str, question: str, k: int) -> list[str]:
        store = self.per_conv[conv_id]
        memory = self._Memory(
            retriever=store.as_retriever(search_kwargs={"k": k}),  # type: ignore[attr-defined]
            memory_key="history",
            input_key="input",
            return_docs=True,
        )
        docs = memory.load_memory_variables({"input": question})["history"]
        return [d.metadata.get("dia_id", "") for d in docs]


class _LCBuffer(System):
    def _history(self) -> str:
        return str(self.memory.load_memory_variables({})["history"])

    def save(self, user: str, assistant: str) -> None:
        self.memory.save_context({"input": user}, {"output": assistant})

    def load(self, query: str) -> str:
        return self._history()

    def fill(self, texts: Sequence[str], vectors: np.ndarray) -> None:
        # A buffer keeps only its last ~2,000 tokens (plus a summary): fill its
        # steady state directly instead of replaying 10k turns.
        from langchain_core.messages import AIMessage, HumanMessage

        kept: list[str] = []
        total = 0
        for text in reversed(texts):
            total += self.llm_lc.get_num_tokens(text)
            if total > BUFFER_TOKENS:
                break
            kept.append(text)
        kept.reverse()
        self.memory.chat_memory.add_messages(
            [HumanMessage(t) if (len(texts) - len(kept) + i) % 2 == 0 else AIMessage(t) for i, t in enumerate(kept)]
        )


class LCSummaryBuffer(_LCBuffer):
    """``ConversationSummaryBufferMemory(max_token_limit=2000)`` with the scripted LLM."""

    uses_llm = True

    def __init__(self, embedder: CachedEmbedder, llm: CountingLLM, workdir: Path, k: int = 5) -> None:
        super().__init__(embedder, llm, workdir, k)
        from langchain_classic.memory import ConversationSummaryBufferMemory

        self.llm_lc = LCScriptedLLM(script=llm)
        self.memory = ConversationSummaryBufferMemory(llm=self.llm_lc, max_token_limit=BUFFER_TOKENS)

    def fill(self, texts: Sequence[str], vectors: np.ndarray) -> None:
        super().fill(texts, vectors)
        self.memory.moving_summary_buffer = self.llm.answer


class LCTokenBuffer(_LCBuffer):
    """``ConversationTokenBufferMemory(max_token_limit=2000)``; no LLM calls."""

    def __init__(self, embedder: CachedEmbedder, llm: CountingLLM, workdir: Path, k: int = 5) -> None:
        super().__init__(embedder, llm, workdir, k)
        from langchain_classic.memory import ConversationTokenBufferMemory

        self.llm_lc = LCScriptedLLM(script=llm)  # only for get_num_tokens
        self.memory = ConversationTokenBufferMemory(llm=self.llm_lc, max_token_limit=BUFFER_TOKENS)


# --------------------------------------------------------------------------- LlamaIndex
_MESSAGE = re.compile(r"<message role='[^']*'>(.*?)</message>", re.DOTALL)


def _render(messages: Sequence[object]) -> str:
    return "\n".join(f"{m.role.value}: {m.content}" for m in messages)  # type: ignore[attr-defined]


class LIVectorBlockMemory(System):
    """``Memory`` (short-term 2,000 tokens) + ``VectorMemoryBlock`` over ``ChromaVectorStore``.

    Messages reach the vector block only when the short-term queue overflows,
    in flush batches (token_flush_size=500), one node per batch.
    """

    retrieves = True
    note = "one node per flushed batch (~500 tokens); recall counts the batch's turns in order"

    def __init__(self, embedder: CachedEmbedder, llm: CountingLLM, workdir: Path, k: int = 5) -> None:
        super().__init__(embedder, llm, workdir, k)
        self.client = _chroma_client(workdir)
        self.emb = LIEmbedding(embedder)
        self.memory, self.block = self._make("live", k)
        self.per_conv: dict[str, tuple[object, dict[str, str]]] = {}

    def _make(self, name: str, k: int):  # type: ignore[no-untyped-def]
        from llama_index.core.memory import Memory, VectorMemoryBlock
        from llama_index.vector_stores.chroma import ChromaVectorStore

        store = ChromaVectorStore(chroma_collection=self.client.get_or_create_collection(name))
        block = VectorMemoryBlock(name="retrieved", vector_store=store, embed_model=self.emb, similarity_top_k=k)
        memory = Memory.from_defaults(
            session_id=name,
            token_limit=int(BUFFER_TOKENS / 0.8),
            chat_history_token_ratio=0.8,
            token_flush_size=500,
            memory_blocks=[block],
            tokenizer_fn=li_tokenizer,
        )
        return memory, block

    def save(self, user: str, assistant: str) -> None:
        from llama_index.core.llms import ChatMessage

        self.memory.put_messages(
            [ChatMessage(role="user", content=user), ChatMessage(role="assistant", content=assistant)]
        )

    def load(self, query: str) -> str:
        return _render(self.memory.get(input=query))

    def fill(self, texts: Sequence[str], vectors: np.ndarray) -> None:
        # The nodes the block would have written: batches of ~500 tokens of
        # formatted messages. Vectors: the normalized mean of the batch's turn
        # vectors (a stand-in; query cost does not depend on the values).
        from llama_index.core.schema import TextNode

        nodes, batch, vecs, tokens = [], [], [], 0
        for i, text in enumerate(texts):
            role = "user" if i % 2 == 0 else "assistant"
            batch.append(f"<message role='{role}'>{text}</message>")
            vecs.append(vectors[i])
            tokens += len(li_tokenizer(text))
            if tokens >= 500 or i == len(texts) - 1:
                v = np.mean(vecs, axis=0)
                node = TextNode(text="\n".join(batch), metadata={"session_id": "live"})
                node.embedding = (v / np.linalg.norm(v)).tolist()
                nodes.append(node)
                batch, vecs, tokens = [], [], 0
        for i in range(0, len(nodes), 1000):
            self.block.vector_store.add(nodes[i : i + 1000])

    def index_locomo(self, conv_id: str, turns: Sequence[Turn]) -> None:
        from llama_index.core.async_utils import asyncio_run
        from llama_index.core.llms import ChatMessage
        from llama_index.core.storage.chat_store.base_db import MessageStatus

        memory, block = self._make(f"c{conv_id}", 50)
        for i in range(0, len(turns), 2):
            memory.put_messages([ChatMessage(role=t.role, content=t.text) for t in turns[i : i + 2]])
        # What is still in the short-term queue never reached the block: push it
        # in flush-sized batches so every turn is retrievable.
        rest = asyncio_run(memory.sql_store.get_messages(memory.session_id, status=MessageStatus.ACTIVE))
        batch: list[object] = []
        tokens = 0
        for m in rest:
            batch.append(m)
            tokens += len(li_tokenizer(str(m.content)))
            if tokens >= 500:
                asyncio_run(block.aput(batch))
                batch, tokens = [], 0
        if batch:
            asyncio_run(block.aput(batch))
        lookup: dict[str, str] = {}
        for t in turns:
            lookup.setdefault(t.text, t.dia_id)
        self.per_conv[conv_id] = (block, lookup)

    def retrieve(self, conv_id: str, question: str, k: int) -> list[str]:
        # What VectorMemoryBlock._aget runs for a one-message query, keeping the nodes.
        from llama_index.core.vector_stores.types import VectorStoreQuery

        block, lookup = self.per_conv[conv_id]
        vec = self.emb.get_query_embedding(question)
        res = block.vector_store.query(
            VectorStoreQuery(
                query_embedding=vec,
                query_str=question,  # type: ignore[attr-defined]
                similarity_top_k=k,
            )
        )
        out: list[str] = []
        for node in res.nodes or []:
            for text in _MESSAGE.findall(node.get_content()):
                dia = lookup.get(text.split("\nAdditional Info:")[0])
                if dia and dia not in out:
                    out.append(dia)
        return out[:k]


class LIChatSummary(System):
    """``ChatSummaryMemoryBuffer(token_limit=2000)`` with the scripted LLM."""

    uses_llm = True

    def __init__(self, embedder: CachedEmbedder, llm: CountingLLM, workdir: Path, k: int = 5) -> None:
        super().__init__(embedder, llm, workdir, k)
        from llama_index.core.memory import ChatSummaryMemoryBuffer

        self.memory = ChatSummaryMemoryBuffer.from_defaults(
            llm=LIScriptedLLM(llm), token_limit=BUFFER_TOKENS, tokenizer_fn=li_tokenizer
        )

    def save(self, user: str, assistant: str) -> None:
        from llama_index.core.llms import ChatMessage

        self.memory.put(ChatMessage(role="user", content=user))
        self.memory.put(ChatMessage(role="assistant", content=assistant))

    def load(self, query: str) -> str:
        return _render(self.memory.get(input=query))

    def fill(self, texts: Sequence[str], vectors: np.ndarray) -> None:
        from llama_index.core.llms import ChatMessage

        msgs = [ChatMessage(role="system", content=self.llm.answer)]
        kept: list[str] = []
        total = 0
        for text in reversed(texts):
            total += len(li_tokenizer(text))
            if total > BUFFER_TOKENS - 150:
                break
            kept.append(text)
        kept.reverse()
        msgs += [
            ChatMessage(role="user" if (len(texts) - len(kept) + i) % 2 == 0 else "assistant", content=t)
            for i, t in enumerate(kept)
        ]
        self.memory.set(msgs)


# --------------------------------------------------------------------------- plain baselines
class DenseTopK(System):
    """Every turn embedded; cosine top-k with numpy; prompt = top-k turns."""

    retrieves = True

    def __init__(self, embedder: CachedEmbedder, llm: CountingLLM, workdir: Path, k: int = 5) -> None:
        super().__init__(embedder, llm, workdir, k)
        self.texts: list[str] = []
        self.matrix = np.zeros((1024, embedder.dimension), np.float32)
        self.per_conv: dict[str, tuple[np.ndarray, list[str]]] = {}

    def _add(self, texts: Sequence[str], vectors: np.ndarray) -> None:
        n = len(self.texts)
        while n + len(texts) > len(self.matrix):
            self.matrix = np.concatenate([self.matrix, np.zeros_like(self.matrix)])
        self.matrix[n : n + len(texts)] = vectors
        self.texts.extend(texts)

    def save(self, user: str, assistant: str) -> None:
        self._add([user, assistant], self.embedder.embed_documents([user, assistant]))

    def load(self, query: str) -> str:
        if not self.texts:
            return ""
        scores = self.matrix[: len(self.texts)] @ self.embedder.embed_query(query)
        top = np.argsort(-scores, kind="stable")[: self.k]
        return "\n".join(self.texts[i] for i in top)

    def fill(self, texts: Sequence[str], vectors: np.ndarray) -> None:
        self._add(texts, vectors)

    def index_locomo(self, conv_id: str, turns: Sequence[Turn]) -> None:
        self.per_conv[conv_id] = (self.embedder.vectors([t.text for t in turns]), [t.dia_id for t in turns])

    def retrieve(self, conv_id: str, question: str, k: int) -> list[str]:
        matrix, dias = self.per_conv[conv_id]
        scores = matrix @ self.embedder.embed_query(question)
        return [dias[i] for i in np.argsort(-scores, kind="stable")[:k]]


class BM25TopK(System):
    """rank_bm25's BM25Okapi over memory-vec's tokenizer; rebuilt on the next
    load after a write (rank_bm25 has no incremental update)."""

    retrieves = True

    def __init__(self, embedder: CachedEmbedder, llm: CountingLLM, workdir: Path, k: int = 5) -> None:
        super().__init__(embedder, llm, workdir, k)
        self.texts: list[str] = []
        self.tokens: list[list[str]] = []
        self.index = None
        self.per_conv: dict[str, tuple[object, list[str]]] = {}

    def save(self, user: str, assistant: str) -> None:
        self.fill([user, assistant], np.zeros((0,)))

    def fill(self, texts: Sequence[str], vectors: np.ndarray) -> None:
        self.texts.extend(texts)
        self.tokens.extend(tokenize(t) or ["_"] for t in texts)
        self.index = None

    def _search(self, index: object, query: str, k: int) -> list[int]:
        scores = index.get_scores(tokenize(query))  # type: ignore[attr-defined]
        return [int(i) for i in np.argsort(-scores, kind="stable")[:k] if scores[i] > 0]

    def load(self, query: str) -> str:
        from rank_bm25 import BM25Okapi

        if not self.texts:
            return ""
        if self.index is None:
            self.index = BM25Okapi(self.tokens)
        return "\n".join(self.texts[i] for i in self._search(self.index, query, self.k))

    def index_locomo(self, conv_id: str, turns: Sequence[Turn]) -> None:
        from rank_bm25 import BM25Okapi

        self.per_conv[conv_id] = (BM25Okapi([tokenize(t.text) or ["_"] for t in turns]), [t.dia_id for t in turns])

    def retrieve(self, conv_id: str, question: str, k: int) -> list[str]:
        index, dias = self.per_conv[conv_id]
        return [dias[i] for i in self._search(index, question, k)]


class FullHistory(System):
    """The whole conversation in every prompt."""

    def __init__(self, embedder: CachedEmbedder, llm: CountingLLM, workdir: Path, k: int = 5) -> None:
        super().__init__(embedder, llm, workdir, k)
        self.lines: list[str] = []

    def save(self, user: str, assistant: str) -> None:
        self.lines += [f"user: {user}", f"assistant: {assistant}"]

    def load(self, query: str) -> str:
        return "\n".join(self.lines)

    def fill(self, texts: Sequence[str], vectors: np.ndarray) -> None:
        self.lines += [f"{'user' if i % 2 == 0 else 'assistant'}: {t}" for i, t in enumerate(texts)]
