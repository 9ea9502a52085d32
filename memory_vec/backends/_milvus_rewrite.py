"""Purge Milvus Lite's files of deleted rows by rewriting the collection.

Milvus Lite (3.x) deletes by tombstone: a deleted row's text stays in the
Parquet data files (and in the write-ahead log until a flush) until its
automatic compaction merges those files, which it does only once a
partition has several files of a similar size; ``compact()`` does nothing.
No call removes a row from disk. :func:`rewrite` copies the rows that remain
to a new collection and drops the old one:

1. copy every row (vector included) of ``C`` to ``T``, flush ``T``, and
   check that ``T`` holds as many rows as ``C``;
2. rename ``C`` to ``O``;
3. rename ``T`` to ``C``;
4. drop ``O`` (and remove its directory, should a crash have left part of it).

Crashes lose no acknowledged row (writes wait for the rewrite, see
:class:`ReadGate` and the backend's lock). :func:`recover`, which ``open``
runs, finishes or undoes an interrupted rewrite: during step 1 ``C`` is
whole and ``T`` is dropped; between steps 2 and 3 ``C`` is missing and ``T``
complete (step 2 only follows a successful check), so ``T`` becomes ``C``;
during step 4 ``C`` is the new copy and ``O`` is dropped. Until the rewrite
has run to its end, the forgotten rows may still be in the old files (the
interrupted ``forget`` returned no receipt: run it again).

Cost: every remaining row is read and written once more, plus a flush and
the index build.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from memory_vec._model.errors import BackendError
from memory_vec.backends import _milvus_schema
from memory_vec.backends._milvus_errors import Translate
from memory_vec.backends._milvus_rows import request_batches
from memory_vec.backends._milvus_scan import RowReader
from memory_vec.backends.base import EVERY_RECORD

__all__ = ["ReadGate", "RewriteResult", "recover", "rewrite", "side_names"]


class ReadGate:
    """Many reads at once, or one rewrite: a read never meets a collection being renamed."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._readers = 0
        self._closed = False

    @contextlib.contextmanager
    def reading(self) -> Iterator[None]:
        with self._cond:
            while self._closed:
                self._cond.wait()
            self._readers += 1
        try:
            yield
        finally:
            with self._cond:
                self._readers -= 1
                self._cond.notify_all()

    @contextlib.contextmanager
    def exclusive(self) -> Iterator[None]:
        with self._cond:
            while self._closed:
                self._cond.wait()
            self._closed = True
            while self._readers:
                self._cond.wait()
        try:
            yield
        finally:
            with self._cond:
                self._closed = False
                self._cond.notify_all()


@dataclass(frozen=True)
class RewriteResult:
    rows: int  # rows copied to the new collection
    leftovers: list[str]  # directories of the old collection that could not be removed


def side_names(collection: str) -> tuple[str, str]:
    """The names of the new copy and of the old collection during a rewrite of ``collection``."""
    digest = hashlib.sha1(collection.encode("utf-8")).hexdigest()[:16]
    return f"memvec_rewrite_{digest}_new", f"memvec_rewrite_{digest}_old"


def recover(
    client: Any, collection: str, *, data_dir: str | None, timeout: float, translate: Callable[[str], Translate]
) -> list[str]:
    """Finish or undo a rewrite a crash interrupted (see the module doc); what was done."""
    new, old = side_names(collection)
    done: list[str] = []
    with translate("recover from an interrupted rewrite"):
        if not client.has_collection(collection, timeout=timeout):
            source = new if client.has_collection(new, timeout=timeout) else old
            if client.has_collection(source, timeout=timeout):
                client.rename_collection(source, collection, timeout=timeout)
                done.append(f"renamed {source} to {collection}")
        for name in (new, old):
            if client.has_collection(name, timeout=timeout):
                client.drop_collection(name, timeout=timeout)
                done.append(f"dropped {name}")
    _remove_dirs(data_dir, (new, old))
    return done


def rewrite(
    client: Any,
    collection: str,
    *,
    data_dir: str | None,
    batch: int,
    timeout: float,
    num_partitions: int,
    index_type: str,
    index_params: dict[str, Any],
    translate: Callable[[str], Translate],
) -> RewriteResult:
    """Copy the rows of ``collection`` to a fresh one that takes its place (see the module doc)."""
    recover(client, collection, data_dir=data_dir, timeout=timeout, translate=translate)
    new, old = side_names(collection)
    _milvus_schema.load(
        client, collection, index_type=index_type, index_params=index_params, timeout=timeout, translate=translate
    )  # not loaded yet when purge() runs without open()
    with translate("create the rewrite's copy"):
        info = client.describe_collection(collection, timeout=timeout)
        _milvus_schema.create_like(
            client,
            new,
            info,
            num_partitions=num_partitions,
            index_type=index_type,
            index_params=index_params,
            timeout=timeout,
        )
    _milvus_schema.load(
        client, new, index_type=index_type, index_params=index_params, timeout=timeout, translate=translate
    )
    copied = _copy(client, collection, new, batch=batch, timeout=timeout, translate=translate)
    with translate("check the rewrite's copy"):
        client.flush(new, timeout=timeout)
        source, target = _count(client, collection, timeout), _count(client, new, timeout)
    if not source == target == copied:
        with translate("drop an incomplete copy"):
            client.drop_collection(new, timeout=timeout)
        raise BackendError(
            f"Milvus Lite rewrite of {collection!r}: copied {copied} rows, the copy holds {target}, "
            f"the collection {source}; nothing was replaced (its deleted rows stay on disk)"
        )
    with translate("swap in the rewritten collection"):
        client.rename_collection(collection, old, timeout=timeout)
        client.rename_collection(new, collection, timeout=timeout)
        client.drop_collection(old, timeout=timeout)
    leftovers = _remove_dirs(data_dir, (old,))
    _milvus_schema.load(
        client, collection, index_type=index_type, index_params=index_params, timeout=timeout, translate=translate
    )
    return RewriteResult(copied, leftovers)


def _copy(
    client: Any, source: str, target: str, *, batch: int, timeout: float, translate: Callable[[str], Translate]
) -> int:
    reader = RowReader(client, source, "Strong", timeout, batch, False, translate)
    copied = 0
    page: list[dict[str, Any]] = []
    for _record, row in reader.matching(EVERY_RECORD, None, _milvus_schema.OUTPUT, with_vectors=True):
        page.append(row)
        if len(page) >= batch:
            copied += _insert(client, target, page, batch, timeout, translate)
            page = []
    return copied + _insert(client, target, page, batch, timeout, translate)


def _insert(
    client: Any,
    target: str,
    rows: list[dict[str, Any]],
    batch: int,
    timeout: float,
    translate: Callable[[str], Translate],
) -> int:
    for chunk in request_batches(rows, batch):
        with translate(f"copy {len(chunk)} rows"):
            client.insert(target, chunk, timeout=timeout)
    return len(rows)


def _count(client: Any, collection: str, timeout: float) -> int:
    rows = client.query(
        collection, filter='id != ""', output_fields=["count(*)"], consistency_level="Strong", timeout=timeout
    )
    return int(rows[0]["count(*)"]) if rows else 0


def _remove_dirs(data_dir: str | None, names: tuple[str, ...]) -> list[str]:
    """Remove what a crash left of these collections' directories (Milvus Lite's default database)."""
    if data_dir is None:
        return []
    left = []
    for name in names:
        folder = os.path.join(data_dir, "collections", name)
        if os.path.isdir(folder):
            shutil.rmtree(folder, ignore_errors=True)
            if os.path.exists(folder):
                left.append(folder)
    return left
