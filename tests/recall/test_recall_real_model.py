"""Hybrid recall with the real default embedder (multilingual-e5-small)."""

from __future__ import annotations

import pytest

from memory_vec import MemoryConfig, MemoryCore
from memory_vec.backends import InMemoryBackend
from memory_vec.state import InMemoryStateStore

pytestmark = pytest.mark.integration


def test_default_recall_with_real_embedder_english_and_chinese() -> None:
    core = MemoryCore(MemoryConfig(user_id="recall-int"), backend=InMemoryBackend(),
                      state_store=InMemoryStateStore())
    core.add_messages([
        {"role": "user", "content": "Caroline: I went to the LGBTQ support group yesterday.",
         "metadata": {"speaker": "Caroline"}},
        {"role": "assistant", "content": "Melanie: Did you go to the support group again?",
         "metadata": {"speaker": "Melanie"}},
        {"role": "assistant", "content": "Melanie: Yes, the booking code was KX-4471.",
         "metadata": {"speaker": "Melanie"}},
        {"role": "user", "content": "我最喜欢吃北京烤鸭，每个月都去全聚德。"},
        {"role": "user", "content": "今天的天气不错，适合去公园散步。"},
    ])
    hits = core.recall("What was the booking code KX-4471 for?", k=1)
    assert "KX-4471" in hits[0].text and hits[0].components["bm25"] > 0
    assert hits[0].neighbors  # the question it answers comes along as context
    core.config.speaker_boost = 0.1  # off by default (LoCoMo adversarial questions), on here
    hits = core.recall("When did Caroline go to the support group?", k=1)
    assert hits[0].metadata["speaker"] == "Caroline"
    hits = core.recall("我喜欢吃什么？", k=1)
    assert "烤鸭" in hits[0].text
    assert all(0.0 <= h.score <= 1.0 for h in core.recall("support group", k=5))
