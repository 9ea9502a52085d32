"""Supersedes in the wild: which overwrites real conversations trigger.

Ingests the LoCoMo dev conversations and MemoryBank (English and Chinese)
through the public API (``MemoryCore`` with default settings: default
embedder, ``backend="memory"``, rule extractor and resolver), one user per
conversation / person, one ``add_message`` per turn in order, and records
every supersede a write made: for each ``WriteResult`` with
``superseded_ids``, the old records' texts (``core.get(id).text``), the new
message text, the new write's fact texts and ``WriteResult.reason``.

Ingestion follows ``benchmarks/locomo_recall.py``: LoCoMo's first speaker is
``user``, the second ``assistant``; a turn is stored as
``"{speaker}: {text}"`` (image turns add ``" [shares {blip_caption}]"``)
with its session's date (``--plain`` stores the bare text instead).
MemoryBank: ``query`` is the user, ``response`` the assistant; one session
per date.

Outputs (``--out DIR``): ``pairs.jsonl`` (one object per superseded record)
and ``counts.json`` (writes, supersedes and superseded records per corpus
and language). ``--embcache PATH`` memoizes the default embedder's vectors
on disk (same model, same vectors) so a run on other code re-embeds nothing.

Usage (also runs against older code: copy it out and set PYTHONPATH)::

    HF_HUB_OFFLINE=1 python benchmarks/supersede/in_the_wild.py \\
        --data ../shared/data --out /tmp/bench_out/wild_new --embcache /tmp/bench_out/wild_emb.npz
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np

from memory_vec import MemoryConfig, MemoryCore
from memory_vec.embeddings import get_embedder


class CachedEmbedder:
    """The default embedder, memoized per text (and on disk between runs)."""

    def __init__(self, inner: Any, path: Path | None) -> None:
        self.inner = inner
        self.path = path
        self.cache: dict[str, np.ndarray] = {}
        self.fresh = 0
        if path is not None and path.exists():
            data = np.load(path, allow_pickle=False)
            self.cache = dict(zip(data["texts"].tolist(), data["vectors"]))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    @property
    def dimension(self) -> int:
        return int(self.inner.dimension)

    def warm(self, texts: Sequence[str]) -> None:
        missing = sorted({t for t in texts if t not in self.cache})
        for i in range(0, len(missing), 64):
            chunk = missing[i : i + 64]
            for t, v in zip(chunk, self.inner.embed_documents(chunk)):
                self.cache[t] = v
            self.fresh += len(chunk)
        self.save()

    def save(self) -> None:
        if self.path is None or not self.cache:
            return
        texts = list(self.cache)
        np.savez(self.path, texts=np.array(texts), vectors=np.stack([self.cache[t] for t in texts]))

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        missing = [t for t in dict.fromkeys(texts) if t not in self.cache]
        if missing:
            for t, v in zip(missing, self.inner.embed_documents(missing)):
                self.cache[t] = v
            self.fresh += len(missing)
        return np.stack([self.cache[t] for t in texts])

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_documents([text])[0]  # e5 in memory-vec is symmetric


# --------------------------------------------------------------------------- corpora
Turn = tuple[str, str, str, float, dict[str, Any]]  # role, text, session, timestamp, metadata


def locomo_turns(conv: dict[str, Any], plain: bool) -> Iterator[Turn]:
    c = conv["conversation"]
    roles = {c["speaker_a"]: "user", c["speaker_b"]: "assistant"}
    n = 1
    while f"session_{n}" in c:
        start = (
            datetime.strptime(c[f"session_{n}_date_time"].strip(), "%I:%M %p on %d %B, %Y")
            .replace(tzinfo=timezone.utc)
            .timestamp()
        )
        for i, t in enumerate(c[f"session_{n}"]):
            text = t["text"] if plain else f"{t['speaker']}: {t['text']}"
            if t.get("blip_caption"):
                text += f" [shares {t['blip_caption']}]"
            meta = {"dia_id": t["dia_id"], "speaker": t["speaker"]}
            yield roles.get(t["speaker"], "user"), text, f"session_{n}", start + 30 * i, meta
        n += 1


def memorybank_turns(person: dict[str, Any]) -> Iterator[Turn]:
    for date in sorted(person["history"]):
        start = datetime.strptime(date, "%Y-%m-%d").replace(tzinfo=timezone.utc).timestamp()
        for i, qr in enumerate(person["history"][date]):
            for j, (role, key) in enumerate((("user", "query"), ("assistant", "response"))):
                text = (qr.get(key) or "").strip()
                if text:
                    yield role, text, date, start + 60 * i + 30 * j, {"turn": f"{date}#{i}", "field": key}


def corpora(data: Path, plain: bool) -> list[tuple[str, str, str, list[Turn]]]:
    """(corpus, lang, user, turns) per conversation / person."""
    out = []
    for conv in json.loads((data / "locomo" / "locomo_dev.json").read_text(encoding="utf-8")):
        out.append(("locomo", "en", conv["sample_id"], list(locomo_turns(conv, plain))))
    for lang, fname in (("en", "memory_bank_en.json"), ("zh", "memory_bank_cn.json")):
        bank = json.loads((data / "memorybank" / fname).read_text(encoding="utf-8"))
        for name, person in bank.items():
            out.append(("memorybank", lang, f"mb-{lang}-{name}", list(memorybank_turns(person))))
    return out


# --------------------------------------------------------------------------- run
def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", required=True, help="the shared data dir (locomo/, memorybank/)")
    ap.add_argument("--out", required=True, help="output dir: pairs.jsonl, counts.json")
    ap.add_argument("--embcache", default=None, help="npz file memoizing the default embedder's vectors")
    ap.add_argument("--plain", action="store_true", help="LoCoMo: store the bare text, without 'Speaker: '")
    ap.add_argument("--limit", type=int, default=0, help="first N conversations / persons per corpus (smoke)")
    args = ap.parse_args(argv)

    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    convs = corpora(Path(args.data), args.plain)
    if args.limit:
        seen: Counter[tuple[str, str]] = Counter()
        kept = []
        for conv in convs:
            seen[conv[:2]] += 1
            if seen[conv[:2]] <= args.limit:
                kept.append(conv)
        convs = kept

    cfg = MemoryConfig()  # defaults: embedding_model default, backend "memory", rules
    embedder = CachedEmbedder(
        get_embedder(cfg.embedding_model, device=cfg.embedding_device, batch_size=cfg.embedding_batch_size),
        Path(args.embcache) if args.embcache else None,
    )
    t0 = time.perf_counter()
    embedder.warm([t[1] for conv in convs for t in conv[3]])
    print(f"warm: {embedder.fresh} texts embedded in {time.perf_counter() - t0:.0f}s", file=sys.stderr, flush=True)
    core = MemoryCore(cfg, embedder=embedder)  # type: ignore[arg-type]

    counts: dict[str, dict[str, Any]] = {}
    reasons: dict[str, Counter[str]] = {}
    with (out_dir / "pairs.jsonl").open("w", encoding="utf-8") as fh:
        for corpus, lang, user, turns in convs:
            key = f"{corpus}/{lang}"
            c = counts.setdefault(
                key,
                {"conversations": 0, "writes": 0, "user_writes": 0, "facts": 0, "supersedes": 0, "superseded": 0},
            )
            rc = reasons.setdefault(key, Counter())
            c["conversations"] += 1
            t1 = time.perf_counter()
            for idx, (role, text, session, ts, meta) in enumerate(turns):
                res = core.add_message(role, text, timestamp=ts, metadata=meta, session_id=session, user_id=user)
                c["writes"] += 1
                c["user_writes"] += role == "user"
                c["facts"] += len(res.fact_ids)
                if not res.superseded_ids:
                    continue
                reason = getattr(res, "reason", "") or ""
                c["supersedes"] += 1
                c["superseded"] += len(res.superseded_ids)
                rc[reason.split(":")[0] or "(empty)"] += 1
                new_facts = [core.get(fid, user_id=user).text for fid in res.fact_ids]
                for sid in res.superseded_ids:
                    old = core.get(sid, user_id=user)
                    old_src = ""
                    if old.kind != "message" and old.source_ids:
                        try:
                            old_src = core.get(old.source_ids[0], user_id=user).text
                        except Exception:
                            old_src = ""
                    row = {
                        "corpus": corpus,
                        "lang": lang,
                        "user": user,
                        "turn": idx,
                        "new_role": role,
                        "new": text,
                        "new_facts": new_facts,
                        "old": old.text,
                        "old_kind": old.kind,
                        "old_role": old.role,
                        "old_source": old_src,
                        "old_meta": {k: v for k, v in old.metadata.items() if k in ("dia_id", "turn", "field")},
                        "new_meta": meta,
                        "reason": reason,
                    }
                    fh.write(json.dumps(row, ensure_ascii=False) + "\n")
            print(
                f"{key} {user}: {len(turns)} turns in {time.perf_counter() - t1:.0f}s, "
                f"{c['supersedes']} supersedes so far",
                file=sys.stderr,
                flush=True,
            )
    embedder.save()
    for key, c in counts.items():
        c["reasons"] = dict(reasons[key].most_common())
        c["supersedes_per_1k_user_writes"] = round(1000 * c["supersedes"] / max(1, c["user_writes"]), 2)
    summary = {"counts": counts, "embedded_fresh": embedder.fresh, "seconds": round(time.perf_counter() - t0, 1)}
    (out_dir / "counts.json").write_text(json.dumps(summary, indent=2, ensure_ascii=False), encoding="utf-8")
    print(json.dumps(summary, indent=2, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
