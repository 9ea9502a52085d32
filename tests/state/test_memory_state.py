"""InMemoryStateStore through the state conformance suite."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from memory_vec.state import InMemoryStateStore
from memory_vec.testing.state_conformance import StateStoreConformance


class TestInMemoryStateStore(StateStoreConformance):
    @pytest.fixture
    def store(self) -> Iterator[InMemoryStateStore]:
        s = InMemoryStateStore()
        yield s
        s.close()
