"""Test helpers shipped with memory-vec: fakes and the backend conformance suite.

A third-party backend runs the same suite::

    from memory_vec.testing.conformance import BackendConformance

    class TestMyBackend(BackendConformance):
        @pytest.fixture
        def backend(self):
            b = MyBackend(...)
            yield b
            b.drop()
"""

from __future__ import annotations

from memory_vec.testing.fakes import DeterministicHashEmbedder, ScriptedLLM

__all__ = ["DeterministicHashEmbedder", "ScriptedLLM"]
