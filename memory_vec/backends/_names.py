"""The name a collection has inside a backend that restricts names.

``MemoryConfig.collection`` takes any id (Chinese, spaces, two letters); Chroma
wants 3-512 of ``[a-zA-Z0-9._-]`` and the Milvus server letters, digits and
``_``. A name the backend takes is used as it is (so every store made so far
keeps its collection); any other is mapped, always the same way, to an ASCII
name with a digest of the whole name. A name given in the mapped form
(``mv-…-<16 hex digits>``) is mapped too, so no name used as it is can be
another name's mapped one: two names never share a collection.
"""

from __future__ import annotations

import contextlib
import hashlib
import ipaddress
import re
from typing import Any

__all__ = ["chroma_name", "milvus_collection", "milvus_name"]

_CHROMA_OK = re.compile(r"[a-zA-Z0-9][a-zA-Z0-9._-]{1,510}[a-zA-Z0-9]")
_MILVUS_OK = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,254}")
_LOOKS_MAPPED = re.compile(r"mv[-_](?:.*[-_])?[0-9a-f]{16}")
_SLUG_CHARS = 40


def chroma_name(name: str) -> str:
    """``name`` if Chroma accepts it (also no ``..``, not an IP address), else ``mv-<ascii>-<digest>``."""
    if (
        _CHROMA_OK.fullmatch(name)
        and ".." not in name
        and not _is_ip_address(name)
        and not _LOOKS_MAPPED.fullmatch(name)
    ):
        return name
    return _mapped(name, "-")


def milvus_name(name: str) -> str:
    """``name`` if the Milvus server accepts it, else ``mv_<ascii>_<digest>``."""
    return name if _MILVUS_OK.fullmatch(name) and not _LOOKS_MAPPED.fullmatch(name) else _mapped(name, "_")


def _mapped(name: str, sep: str) -> str:
    # The readable part helps someone listing collections; the digest keeps names apart.
    slug = re.sub(r"[^A-Za-z0-9]+", sep, name).strip(sep)[:_SLUG_CHARS].strip(sep)
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return sep.join(part for part in ("mv", slug, digest) if part)


def _is_ip_address(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def milvus_collection(client: Any, requested: str, is_server: bool, timeout: float) -> str:
    """The collection to open for ``MemoryConfig.collection`` = ``requested``.

    Milvus Lite takes any name, so its stores keep the name as given; a server
    gets :func:`milvus_name`, unless the name is one a server refuses and it
    already holds a collection under it (a server that took it: Milvus Lite
    served over a URL). A name in the mapped form never falls back so: it
    could be another name's collection.
    """
    mapped = milvus_name(requested)
    if not is_server or mapped == requested:
        return requested
    if not _MILVUS_OK.fullmatch(requested) and not client.has_collection(mapped, timeout=timeout):
        with contextlib.suppress(Exception):  # a server that refuses the name refuses to look it up
            if client.has_collection(requested, timeout=timeout):
                return requested
    return mapped
