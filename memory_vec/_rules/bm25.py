"""Per-user keyword index: BM25 over the same memories as the vector store.

Neither rank-bm25 nor bm25s adds documents in place: both rebuild their
statistics from the whole corpus. A memory grows by one message per turn,
so :class:`BM25Index` keeps the term statistics itself (an inverted index
with document frequencies and lengths, updated in O(len(message)) per add or
remove) and scores only the documents that share a term with the query.
The scoring is Lucene's BM25 (the ``"lucene"`` method of bm25s)::

    idf(t)      = ln(1 + (N - df(t) + 0.5) / (df(t) + 0.5))
    score(d, q) = sum_t idf(t) * tf / (tf + k1 * (1 - b + b * |d| / avgdl))

Each term's contribution is below ``idf(t)``, so ``score / sum_t idf(t)`` is
in [0, 1] and does not depend on the other documents of the query: it is the
normalized value that ranking fuses with cosine (prefix-consistent, and the
final-score threshold keeps its meaning).

A turn's words often sit in the message it answers ("How was the support
group?" / "It was great, so inspiring"), so a search may add a share of the
previous turn's score to each turn (``context_weight``; the core passes
``MemoryConfig.ranking.bm25_context_weight``): computed at query time from the same
postings, no second index and no change to what is stored.

The index also knows each memory's session and sequence number (for the
turns around a hit) and its speaker (for the speaker boost), so neither
needs a scan of the store at query time.

Tokens: jieba words for Chinese text, lower-cased word tokens otherwise,
minus a short list of function words in both languages. The index is pure
data; the store's :class:`~memory_vec._storage.keywords.KeywordIndex` holds one per
user, built from the engine's rows.
"""

from __future__ import annotations

import functools
import logging
import math
import os
import re
import sys
import threading
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from memory_vec._model.records import MemoryRecord

__all__ = ["BM25Index", "IndexedDoc", "jieba_words", "mentioned_speakers", "tokenize"]

_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)?", re.UNICODE)
_EN_STOP_WORDS = """
a about above after again against all am an and any are as at be because been before being below between both
but by can could did do does doing down during each few for from further had has have having he her here hers
herself him himself his how i if in into is it its itself just me more most my myself no nor not now of off on
once only or other our ours ourselves out over own same she should so some such than that the their theirs
them themselves then there these they this those through to too under until up very was we were what when
where which while who whom why will with would you your yours yourself yourselves s t d ll m re ve don didn
doesn isn wasn aren weren won wouldn couldn shouldn hasn haven hadn im ive id youre thats its oh yeah yes hey
hi wow
"""
_ZH_STOP_WORDS = """
的 了 是 我 你 他 她 它 们 在 也 就 都 而 及 与 和 着 或 一个 没有 我们 你们 他们 这 那 这个
那个 吗 呢 吧 啊 呀 哦 嗯 么 什么 怎么 有 很 还 又 就是 不 会 要 能 可以 给 把 被 让 对 从 到
上 下 中 里 说 去 来 过 为 以 之 所以 因为 但是 如果 然后
"""
_EN_STOP = frozenset(_EN_STOP_WORDS.split())
_ZH_STOP = frozenset(_ZH_STOP_WORDS.split())

_jieba_lock = threading.Lock()
_JIEBA_RUN = 200
_LONG_RUN = re.compile(rf"([^\s，。！？、；：,!?;:]{{{_JIEBA_RUN}}})")


@functools.cache
def _jieba() -> Any:
    """jieba, set up once: its logger at WARNING (no "Building prefix dict ... Loading model cost"
    lines in the caller's output) and its dictionary cache in the user cache directory instead of
    the system temp directory. None when jieba is not installed."""
    try:
        import jieba  # type: ignore[import-untyped]
    except ImportError:
        return None
    logging.getLogger("jieba").setLevel(logging.WARNING)
    if jieba.dt.tmp_dir is None and jieba.dt.cache_file is None:  # unless the application chose
        cache_dir = os.path.join(_user_cache_dir(), "memory-vec")
        try:
            os.makedirs(cache_dir, exist_ok=True)
            jieba.dt.tmp_dir = cache_dir
        except OSError:  # a read-only home: jieba keeps its default (the temp directory)
            pass
    return jieba


def _user_cache_dir() -> str:
    if sys.platform == "win32":
        return os.environ.get("LOCALAPPDATA") or os.path.expanduser("~\\AppData\\Local")
    if sys.platform == "darwin":
        return os.path.expanduser("~/Library/Caches")
    return os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")


def jieba_words(text: str) -> list[str]:
    """jieba's words of ``text`` (search mode, sub-words too); one per character without jieba."""
    jieba = _jieba()
    if jieba is None:  # no jieba: one token per CJK character still matches
        return list(text)
    # jieba is quadratic in a run without a break (8,000 of one character: ~1 s);
    # runs longer than _JIEBA_RUN are cut into pieces, other text goes whole.
    pieces = [p for p in _LONG_RUN.split(text) if p] if _LONG_RUN.search(text) else [text]
    with _jieba_lock:  # jieba's lazy initialisation is not thread-safe
        return [word for piece in pieces for word in jieba.cut_for_search(piece)]


def tokenize(text: str) -> list[str]:
    """Index/query tokens: jieba words for Chinese runs, words otherwise.

    Lower-cased, NFKC-insensitive for ASCII case, function words dropped.

    Example:
        >>> tokenize("Priya went to the chess support group")
        ['priya', 'went', 'chess', 'support', 'group']
    """
    lowered = text.lower()
    if not _CJK.search(lowered):
        return [w for w in (m.replace("'", "") for m in _WORD.findall(lowered)) if w not in _EN_STOP]
    out: list[str] = []
    for raw in jieba_words(lowered):
        word = raw.strip()
        if not word or not any(ch.isalnum() for ch in word):
            continue
        if _CJK.search(word):
            if word not in _ZH_STOP:
                out.append(word)
        else:
            out.extend(w for w in (m.replace("'", "") for m in _WORD.findall(word)) if w not in _EN_STOP)
    return out


@dataclass(frozen=True)
class IndexedDoc:
    """What the index needs of one memory."""

    id: str
    text: str
    session_id: str = ""
    seq: int = 0
    speaker: str | None = None
    #: Messages are turns with a position; facts share their source's seq.
    positional: bool = True

    @classmethod
    def from_record(cls, record: MemoryRecord) -> IndexedDoc:
        """The indexed view of a stored record (speaker from its metadata)."""
        speaker = record.metadata.get("speaker")
        return cls(
            record.id,
            record.text,
            record.session_id,
            record.seq,
            speaker if isinstance(speaker, str) else None,
            positional=record.kind == "message",
        )


class BM25Index:
    """Incremental BM25 over one user's memories.

    Example:
        >>> index = BM25Index()
        >>> index.add([IndexedDoc("a", "the flight code is XK-42"), IndexedDoc("b", "we talked about food")])
        >>> [doc_id for doc_id, _ in index.search("what was XK-42?", k=5)]
        ['a']

    Thread-safe: adds, removes and searches take one lock.
    """

    def __init__(self, *, k1: float = 1.2, b: float = 0.75) -> None:
        self.k1 = k1
        self.b = b
        self._postings: dict[str, dict[str, int]] = {}
        self._doc_terms: dict[str, dict[str, int]] = {}
        self._doc_len: dict[str, int] = {}
        self._total_len = 0
        self._position: dict[str, tuple[str, int]] = {}
        self._by_position: dict[tuple[str, int], str] = {}
        self._speaker: dict[str, str] = {}
        self._speaker_counts: dict[str, int] = {}
        # Numpy mirror for scoring: one slot per document. Term arrays are
        # built on first use and dropped when the term's postings change.
        self._slot: dict[str, int] = {}
        self._slot_ids: list[str | None] = []
        self._free: list[int] = []
        self._len_arr = np.zeros(64, dtype=np.float64)
        self._seq_arr = np.zeros(64, dtype=np.int64)
        self._next_arr = np.full(64, -1, dtype=np.int64)  # slot of the following turn
        self._term_arrays: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self._lock = threading.RLock()

    def __len__(self) -> int:
        return len(self._doc_len)

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self._doc_len

    # --- writes -----------------------------------------------------------------------
    def add(self, docs: Iterable[IndexedDoc]) -> None:
        """Index memories; an id already present is replaced."""
        with self._lock:
            for doc in docs:
                if doc.id in self._doc_len:
                    self._remove_one(doc.id)
                terms = Counter(tokenize(doc.text))
                for term, tf in terms.items():
                    self._postings.setdefault(term, {})[doc.id] = tf
                    self._term_arrays.pop(term, None)
                length = sum(terms.values())
                self._doc_terms[doc.id] = terms
                self._doc_len[doc.id] = length
                self._total_len += length
                self._position[doc.id] = (doc.session_id, doc.seq)
                slot = self._new_slot(doc.id, length, doc.seq)
                if doc.positional:
                    key = (doc.session_id, doc.seq)
                    holder = self._by_position.get(key)
                    if holder is not None and holder != doc.id:
                        self._next_arr[self._slot[holder]] = -1  # no longer the turn at that position
                    self._by_position[key] = doc.id
                    following = self._by_position.get((doc.session_id, doc.seq + 1))
                    self._next_arr[slot] = self._slot[following] if following is not None else -1
                    previous = self._by_position.get((doc.session_id, doc.seq - 1))
                    if previous is not None:
                        self._next_arr[self._slot[previous]] = slot
                if doc.speaker:
                    speaker = doc.speaker.casefold()
                    self._speaker[doc.id] = speaker
                    self._speaker_counts[speaker] = self._speaker_counts.get(speaker, 0) + 1

    def remove(self, doc_ids: Iterable[str]) -> int:
        """Drop memories by id; returns how many were indexed."""
        with self._lock:
            return sum(1 for doc_id in list(doc_ids) if self._remove_one(doc_id))

    def _remove_one(self, doc_id: str) -> bool:
        terms = self._doc_terms.pop(doc_id, None)
        if terms is None:
            return False
        for term in terms:
            self._term_arrays.pop(term, None)
            posting = self._postings.get(term)
            if posting is not None:
                posting.pop(doc_id, None)
                if not posting:
                    del self._postings[term]
        self._total_len -= self._doc_len.pop(doc_id)
        position = self._position.pop(doc_id)
        if self._by_position.get(position) == doc_id:
            del self._by_position[position]
            previous = self._by_position.get((position[0], position[1] - 1))
            if previous is not None:
                self._next_arr[self._slot[previous]] = -1
        slot = self._slot.pop(doc_id)
        self._slot_ids[slot] = None
        self._len_arr[slot] = 0.0
        self._next_arr[slot] = -1
        self._free.append(slot)
        speaker = self._speaker.pop(doc_id, None)
        if speaker is not None:
            self._speaker_counts[speaker] -= 1
            if not self._speaker_counts[speaker]:
                del self._speaker_counts[speaker]
        return True

    # --- reads ------------------------------------------------------------------------
    def search(
        self, query: str, *, k: int, context_weight: float = 0.0, extra_terms: Mapping[str, float] | None = None
    ) -> list[tuple[str, float]]:
        """The top ``k`` (id, normalized score in [0, 1]) pairs, best first.

        ``context_weight`` > 0 adds that share of the previous turn's score
        (same session, sequence number minus one) to each turn's score, so a
        reply is found by the words of the message it answers; the sum is
        divided by ``1 + context_weight`` to stay in [0, 1]. Facts neither
        give nor take context. Ties keep the newer memory first (higher
        sequence number). ``extra_terms`` (term -> weight in (0, 1], e.g.
        from :meth:`feedback_terms`) count beside the query's own words at
        that weight, in the score and in its normalization.
        """
        weights = dict.fromkeys(tokenize(query), 1.0)
        for term, weight in (extra_terms or {}).items():
            weights.setdefault(term, weight)
        with self._lock:
            n = len(self._doc_len)
            if not n or not weights:
                return []
            avgdl = max(self._total_len / n, 1e-9)
            k1, b = self.k1, self.b
            scores = np.zeros(len(self._slot_ids), dtype=np.float64)
            idf_total = 0.0
            touched = False
            for term, weight in weights.items():
                posting = self._postings.get(term)
                df = len(posting) if posting else 0
                idf = weight * math.log(1.0 + (n - df + 0.5) / (df + 0.5))
                idf_total += idf
                if not posting:
                    continue
                slots, tfs = self._arrays(term, posting)
                norm = k1 * (1.0 - b + b * self._len_arr[slots] / avgdl)
                scores[slots] += idf * tfs / (tfs + norm)  # a term lists each slot once
                touched = True
            if not touched:
                return []
            if context_weight > 0:
                hit = np.nonzero(scores)[0]
                following = self._next_arr[hit]
                has_next = following >= 0
                scores[following[has_next]] += context_weight * scores[hit[has_next]].copy()
                idf_total *= 1.0 + context_weight
            hit = np.nonzero(scores)[0]
            if len(hit) > k:  # keep the k best (plus ties at the cut) before sorting
                cut = np.partition(scores[hit], len(hit) - k)[len(hit) - k]
                hit = hit[scores[hit] >= cut]
            # best score first; ties: newer turn (higher seq) first, then slot
            order = np.lexsort((hit, -self._seq_arr[hit], -scores[hit]))[:k]
            top = [(self._slot_ids[i], float(scores[i])) for i in hit[order]]
        return [(doc_id, min(1.0, score / idf_total)) for doc_id, score in top if doc_id is not None]

    def feedback_terms(
        self, doc_ids: Iterable[str], *, n: int, exclude: str = "", min_docs: int = 2
    ) -> dict[str, float]:
        """The ``n`` words that best characterize ``doc_ids`` (pseudo-relevance
        feedback), weighted in (0, 1], the best 1.

        A word's weight is its idf times its share of each document's words,
        summed over the documents (RM3's term model with BM25's idf): words
        that several top hits share and few other memories use. Words of
        ``exclude`` (the query) and words in fewer than ``min_docs`` of the
        documents are left out, so a single hit cannot steer the expansion.
        """
        skip = set(tokenize(exclude))
        with self._lock:
            count = len(self._doc_len)
            mass: dict[str, float] = {}
            seen_in: dict[str, int] = {}
            for doc_id in doc_ids:
                terms = self._doc_terms.get(doc_id)
                if not terms:
                    continue
                length = self._doc_len[doc_id]
                for term, tf in terms.items():
                    if term in skip:
                        continue
                    df = len(self._postings.get(term, ()))
                    idf = math.log(1.0 + (count - df + 0.5) / (df + 0.5))
                    mass[term] = mass.get(term, 0.0) + idf * tf / length
                    seen_in[term] = seen_in.get(term, 0) + 1
        shared = sorted(((w, t) for t, w in mass.items() if seen_in[t] >= min_docs), reverse=True)[:n]
        if not shared:
            return {}
        top = shared[0][0]
        return {term: weight / top for weight, term in shared}

    def _new_slot(self, doc_id: str, length: int, seq: int) -> int:
        if self._free:
            slot = self._free.pop()
            self._slot_ids[slot] = doc_id
        else:
            slot = len(self._slot_ids)
            self._slot_ids.append(doc_id)
            if slot >= len(self._len_arr):
                grow = len(self._len_arr)
                self._len_arr = np.concatenate([self._len_arr, np.zeros(grow)])
                self._seq_arr = np.concatenate([self._seq_arr, np.zeros(grow, dtype=np.int64)])
                self._next_arr = np.concatenate([self._next_arr, np.full(grow, -1, dtype=np.int64)])
        self._slot[doc_id] = slot
        self._len_arr[slot] = float(length)
        self._seq_arr[slot] = seq
        self._next_arr[slot] = -1
        return slot

    def _arrays(self, term: str, posting: dict[str, int]) -> tuple[np.ndarray, np.ndarray]:
        cached = self._term_arrays.get(term)
        if cached is None:
            slot = self._slot
            cached = (
                np.fromiter((slot[d] for d in posting), dtype=np.int64, count=len(posting)),
                np.fromiter(posting.values(), dtype=np.float64, count=len(posting)),
            )
            self._term_arrays[term] = cached
        return cached

    def neighbor_ids(self, doc_id: str, window: int) -> tuple[list[str], list[str]]:
        """Ids of up to ``window`` turns before and after a memory in its session."""
        with self._lock:
            position = self._position.get(doc_id)
            if position is None or window <= 0:
                return [], []
            session, seq = position
            before = [self._by_position.get((session, seq - i)) for i in range(window, 0, -1)]
            after = [self._by_position.get((session, seq + i)) for i in range(1, window + 1)]
        return [d for d in before if d], [d for d in after if d]

    @property
    def speakers(self) -> frozenset[str]:
        """Case-folded speaker names seen in the memories' metadata."""
        with self._lock:
            return frozenset(self._speaker_counts)


def mentioned_speakers(query: str, speakers: Iterable[str]) -> set[str]:
    """Known speakers (case-folded) that the query names as a whole word.

    A name that is not a whole word of the query does not count (``"Al"``
    is not named by ``"also"``); Chinese names match as substrings.
    """
    lowered = query.casefold()
    words = set(_WORD.findall(lowered)) | {w.removesuffix("'s") for w in _WORD.findall(lowered)}
    named = set()
    for name in speakers:
        if not name:
            continue
        if _CJK.search(name):
            if name in lowered:
                named.add(name)
        elif " " in name.strip():
            if re.search(r"\b" + re.escape(name) + r"\b", lowered):
                named.add(name)
        elif name in words:
            named.add(name)
    return named
