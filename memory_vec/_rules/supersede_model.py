"""A small learned judge of "does this new statement replace that old one?".

Logistic regression over hashed word and character n-grams of both texts
plus the statement model's signals (:mod:`memory_vec._rules.assertion`): no
embedder involved, so it works the same with any embedding model. Trained by
``benchmarks/supersede/train.py`` on the dev split of the supersede set; the
weights ship as package data (``supersede_model.json``, a few KB) and load
once, offline.

Pure: no I/O beyond reading the package's own data file.
"""

from __future__ import annotations

import base64
import functools
import json
import math
import re
import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import resources

import numpy as np

from memory_vec._rules.assertion import Assertion, Kind, Modality, assess
from memory_vec._rules.change import change_applies, retraction, retracts, stated_change
from memory_vec._rules.facts import extract_values, is_chinese, preference, subject_key

__all__ = ["DIMENSION", "SupersedeModel", "pair_features", "shipped_model"]

#: Hashed feature space. 2**12 buckets keep the shipped weights a few KB.
DIMENSION = 1 << 12
_WORD = re.compile(r"[a-z0-9']+|[\u4e00-\u9fff]", re.IGNORECASE)
_DATA_FILE = "supersede_model.json"


def _bucket(feature: str) -> int:
    return zlib.crc32(feature.encode("utf-8")) % DIMENSION


def _ngrams(prefix: str, text: str) -> Iterable[str]:
    text = " ".join(text.casefold().split())
    words = _WORD.findall(text)
    for i, w in enumerate(words):
        yield f"{prefix}w:{w}"
        if i + 1 < len(words):
            yield f"{prefix}b:{w} {words[i + 1]}"
    if is_chinese(text):
        chars = [c for c in text if not c.isspace()]
        for i in range(len(chars) - 1):
            yield f"{prefix}c:{chars[i]}{chars[i + 1]}"


def _signals(old: Assertion, new: Assertion, old_text: str, new_text: str) -> Iterable[str]:
    yield f"s:new_modality={new.modality.value}"
    yield f"s:old_modality={old.modality.value}"
    yield f"s:new_kind={new.kind.value}"
    yield f"s:old_kind={old.kind.value}"
    if new.entities and old.entities:
        yield "s:same_entity" if new.entities & old.entities else "s:other_entity"
    old_subject, new_subject = subject_key(old_text), subject_key(new_text)
    if old_subject and new_subject:
        yield "s:same_subject" if old_subject == new_subject else "s:other_subject"
    old_values, new_values = extract_values(old_text), extract_values(new_text)
    if old_values and new_values:
        yield "s:values_differ" if old_values != new_values else "s:values_same"
        if old_values & new_values and old_values != new_values:
            yield "s:values_overlap"
    old_pref, new_pref = preference(old_text), preference(new_text)
    if old_pref and new_pref and old_pref[0] == new_pref[0]:
        yield "s:same_liking" if old_pref[1] == new_pref[1] else "s:liking_flipped"
    shared = set(_WORD.findall(old_text.casefold())) & set(_WORD.findall(new_text.casefold()))
    yield f"s:shared_words={min(len(shared), 6)}"
    if new.modality is Modality.ASSERTED and new.kind is Kind.STATE:
        yield "s:new_asserted_state"
    if change := stated_change(new_text):
        yield "s:stated_change"
        if change_applies(change, new_text, old_text, old_subject):
            yield "s:stated_change_of_old"
    if (retracted := retraction(new_text)) is not None:
        yield "s:retraction"
        if retracts(retracted, old_text):
            yield "s:retraction_of_old"


def pair_features(old_text: str, new_text: str, *, new_role: str = "user") -> np.ndarray:
    """The pair's feature counts, hashed into :data:`DIMENSION` buckets (L2-normalised)."""
    old, new = assess(old_text), assess(new_text, new_role)
    x = np.zeros(DIMENSION, dtype=np.float32)
    for feature in (*_ngrams("n", new_text), *_ngrams("o", old_text), *_signals(old, new, old_text, new_text)):
        x[_bucket(feature)] += 1.0
    norm = float(np.linalg.norm(x))
    return x / norm if norm else x


@dataclass(frozen=True)
class SupersedeModel:
    weights: np.ndarray
    bias: float
    #: Probability at or above which a pair counts as a supersede.
    threshold: float = 0.5

    def probability(self, old_text: str, new_text: str, *, new_role: str = "user") -> float:
        z = float(pair_features(old_text, new_text, new_role=new_role) @ self.weights) + self.bias
        return 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, z))))

    def to_json(self) -> str:
        packed = base64.b64encode(zlib.compress(self.weights.astype(np.float16).tobytes(), 9)).decode("ascii")
        return json.dumps(
            {"dimension": DIMENSION, "bias": self.bias, "threshold": self.threshold, "weights_f16_zlib": packed}
        )

    @classmethod
    def from_json(cls, text: str) -> SupersedeModel:
        data = json.loads(text)
        if data["dimension"] != DIMENSION:
            raise ValueError(f"supersede model has dimension {data['dimension']}, this code hashes to {DIMENSION}")
        raw = zlib.decompress(base64.b64decode(data["weights_f16_zlib"]))
        weights = np.frombuffer(raw, dtype=np.float16).astype(np.float32)
        return cls(weights, float(data["bias"]), float(data["threshold"]))


@functools.cache
def shipped_model() -> SupersedeModel:
    """The model trained on the dev split, shipped with the package (loaded once)."""
    text = resources.files("memory_vec._rules").joinpath(_DATA_FILE).read_text(encoding="utf-8")
    return SupersedeModel.from_json(text)
