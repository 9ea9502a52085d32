"""GuardedBackend: timeouts and retries, with a stub standing in for a flaky network."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memory_vec._model.errors import BackendTimeoutError, BackendUnavailableError, InvalidInputError
from memory_vec.backends import InMemoryBackend, RecordFilter
from memory_vec.backends.guard import GuardedBackend
from memory_vec.testing.conformance import BackendConformance, make_record


class FlakyNetwork(InMemoryBackend):
    """The in-process backend behind a scripted network: failures and delays per call."""

    def __init__(self, script: list[Any] | None = None) -> None:
        super().__init__()
        self.script = list(script or [])
        self.calls = 0

    def count(self, where: RecordFilter | None = None) -> int:
        self.calls += 1
        step = self.script.pop(0) if self.script else None
        if isinstance(step, BaseException):
            raise step
        if isinstance(step, float):
            time.sleep(step)
        return super().count(where)


class TestGuardedInMemory(BackendConformance):
    """The wrapper itself must keep every backend contract."""

    @pytest.fixture
    def backend(self) -> Iterator[GuardedBackend]:
        store = GuardedBackend(InMemoryBackend(), timeout=5.0, retries=1)
        yield store
        store.drop()
        store.close()


def test_slow_call_times_out() -> None:
    guarded = GuardedBackend(FlakyNetwork([1.0]), timeout=0.1, retries=0)
    guarded.open(dimension=4, model_id="m")
    started = time.monotonic()
    with pytest.raises(BackendTimeoutError, match=r"count took longer than 0\.1 s"):
        guarded.count()
    assert time.monotonic() - started < 0.5
    guarded.close()


def test_transient_failures_are_retried_with_backoff() -> None:
    network = FlakyNetwork([BackendUnavailableError("down"), BackendUnavailableError("down")])
    guarded = GuardedBackend(network, timeout=1.0, retries=2, backoff=0.05)
    guarded.open(dimension=4, model_id="m")
    started = time.monotonic()
    assert guarded.count() == 0
    assert network.calls == 3
    assert time.monotonic() - started >= 0.05 + 0.10  # two sleeps, the second doubled


def test_a_timeout_counts_as_a_transient_failure() -> None:
    network = FlakyNetwork([0.5])
    guarded = GuardedBackend(network, timeout=0.1, retries=1, backoff=0.01)
    guarded.open(dimension=4, model_id="m")
    assert guarded.count() == 0 and network.calls == 2


def test_retries_give_up_with_the_last_error() -> None:
    network = FlakyNetwork([BackendUnavailableError(f"down {i}") for i in range(5)])
    guarded = GuardedBackend(network, timeout=1.0, retries=2, backoff=0.01)
    guarded.open(dimension=4, model_id="m")
    with pytest.raises(BackendUnavailableError, match="down 2"):
        guarded.count()
    assert network.calls == 3


def test_other_errors_are_not_retried() -> None:
    network = FlakyNetwork([InvalidInputError("bad filter")])
    guarded = GuardedBackend(network, timeout=1.0, retries=3, backoff=0.01)
    guarded.open(dimension=4, model_id="m")
    with pytest.raises(InvalidInputError):
        guarded.count()
    assert network.calls == 1


def test_async_twin_is_guarded_too() -> None:
    import asyncio

    guarded = GuardedBackend(FlakyNetwork([1.0]), timeout=0.1, retries=0)
    guarded.open(dimension=4, model_id="m")
    with pytest.raises(BackendTimeoutError):
        asyncio.run(guarded.acount())


def test_extras_pass_through() -> None:
    guarded = GuardedBackend(InMemoryBackend(), timeout=1.0)
    guarded.open(dimension=4, model_id="m")
    guarded.upsert([make_record("r1")], np.eye(4, dtype=np.float32)[:1])
    assert guarded.model_id == "m" and guarded.name == "memory"
    guarded.drop()
    assert guarded.count() == 0


def test_limits_are_the_wrapped_backends(tmp_path: Path) -> None:
    from memory_vec.backends.chroma import ChromaBackend
    from memory_vec.backends.milvus import MilvusBackend

    milvus = MilvusBackend(str(tmp_path / "milvus.db"))  # nothing is contacted before open()
    for inner in (InMemoryBackend(), ChromaBackend(path=tmp_path / "chroma"), milvus):
        guarded = GuardedBackend(inner, timeout=1.0)
        assert guarded.limits is inner.limits
    assert GuardedBackend(milvus, timeout=1.0).limits.max_text_bytes == 65535
