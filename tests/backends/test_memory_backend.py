"""The in-process backend against the conformance suite."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from memory_vec.backends import InMemoryBackend
from memory_vec.testing.conformance import BackendConformance


class TestInMemoryBackend(BackendConformance):
    """Process memory: nothing survives close() in another instance or process."""

    supports_reopen = False
    supports_multiprocess = False

    @pytest.fixture
    def backend(self) -> Iterator[InMemoryBackend]:
        store = InMemoryBackend()
        yield store
        store.drop()
