"""Test helpers shipped with memory-vec: fakes and the backend conformance suite.

A third-party backend runs the same suite::

    from memory_vec.testing.conformance import BackendConformance

    class TestMyBackend(BackendConformance):
        @pytest.fixture
        def backend(self):
            b = MyBackend(...)
            yield b
            b.drop()

Tests, benchmarks and tools reach a core's internals (store, backend, working
state, writer, embedder, ...) through :func:`parts`, not through ``MemoryCore``::

    from memory_vec.testing import parts

    parts(core).backend.count()
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memory_vec._pipelines.parts import CoreParts
from memory_vec.testing.fakes import DeterministicHashEmbedder, ScriptedLLM

if TYPE_CHECKING:
    from memory_vec._core import MemoryCore

__all__ = ["CoreParts", "DeterministicHashEmbedder", "ScriptedLLM", "parts"]


def parts(core: MemoryCore) -> CoreParts:
    """The parts ``core`` works with: a live, typed view for tests, benchmarks and tools."""
    return core._parts
