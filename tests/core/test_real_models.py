"""The default configuration with real models: offline, English and Chinese."""

from __future__ import annotations

import time

import pytest

from memory_vec import MemoryConfig, MemoryCore
from memory_vec.backends import InMemoryBackend
from memory_vec.embeddings import E5_SMALL_ID, MINILM_ID, SentenceTransformerEmbedder, get_embedder
from memory_vec.state import InMemoryStateStore
from memory_vec.testing import parts

pytestmark = pytest.mark.integration


def fresh_core(**config) -> MemoryCore:  # type: ignore[no-untyped-def]
    config.setdefault("user_id", "u1")
    return MemoryCore(MemoryConfig(**config), backend=InMemoryBackend(), state_store=InMemoryStateStore())


def test_default_embedder_is_offline_multilingual_e5() -> None:
    core = fresh_core()
    assert parts(core).embedder.model_id == E5_SMALL_ID
    assert parts(core).embedder.dimension == 384


def test_english_recall_with_default_model() -> None:
    core = fresh_core()
    core.add_message("user", "Please always show amounts with two decimals.")
    core.add_message("user", "My dog Biscuit is a golden retriever.")
    core.add_message("user", "I moved to Lisbon last spring.")
    hits = core.recall("How should I format the money values?", k=1)
    assert hits and "two decimals" in hits[0].text
    hits = core.recall("what breed is my pet?", k=1)
    assert hits and "Biscuit" in hits[0].text


def test_chinese_end_to_end_summary_and_recall() -> None:
    core = fresh_core(session_id="zh", max_token_limit=300, summary_max_tokens=120, keep_recent_turns=2)
    core.add_message("user", "我的预算是5000元，金额请保留两位小数。")
    core.add_message("assistant", "好的，预算5000元，金额保留两位小数。")
    core.add_message("user", "我对花生过敏，千万不要推荐含花生的菜。")
    fillers = [
        "今天天气不错，我们去公园散步吧。",
        "最近在看一本关于历史的书，很有意思。",
        "周末想去爬山，你有什么推荐吗？",
        "我昨天做了红烧肉，味道还可以。",
    ]
    for i in range(12):
        core.add_message("user", fillers[i % 4])
        core.add_message("assistant", "好的，听起来很不错。" + fillers[(i + 1) % 4])
    core.add_message("user", "预算调整到8000元。")
    for i in range(8):
        core.add_message("user", fillers[i % 4])
    state = core.working_state()
    assert "8000" in state.summary and "5000" not in state.summary
    assert "花生" in state.summary
    hits = core.recall("我有什么食物过敏？", k=3)
    assert any("花生" in h.text for h in hits)
    ctx = core.build_context("推荐一道菜")
    assert ctx.tokens["summary"] + ctx.tokens["recent"] <= 300


@pytest.mark.slow
def test_minilm_loads_offline_from_package() -> None:
    emb = get_embedder("all-MiniLM-L6-v2")
    assert isinstance(emb, SentenceTransformerEmbedder) and emb.model_id == MINILM_ID
    vecs = emb.embed_documents(["The budget is 5000.", "How much money can we spend?", "I like cats."])
    assert vecs.shape == (3, 384)
    assert float(vecs[0] @ vecs[1]) > float(vecs[0] @ vecs[2])


def test_a_new_core_per_request_costs_milliseconds() -> None:
    fresh_core()  # model loaded once
    cfg = MemoryConfig(user_id="web", collection="per-request")
    t0 = time.perf_counter()
    for _ in range(20):
        MemoryCore(cfg)
    assert (time.perf_counter() - t0) / 20 < 0.05
