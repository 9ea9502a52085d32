"""Conflict-overwrite benchmark: stale values, current values, false overwrites.

Builds the generated suite (:mod:`suite`: MemoryBank filler with planted and
later-updated facts, plus look-alike control facts), ingests every
conversation through the public API (``MemoryCore`` with the default
embedder, in-process backend, one user per conversation, one
``add_messages`` call per user/assistant pair), then asks one question per
updated slot and per control and reads the top 5 of ``recall``.

Modes, each on a fresh store:

* ``baseline``: no conflict handling: ``fact_extractor="none"`` and a
  resolver that always answers ADD (plain recall over messages);
* ``messages``: ``fact_extractor="none"`` as shipped (user messages are
  checked for conflicts themselves);
* ``rules``: the default (rule extractor + rule resolver);
* ``rules+oracle-judge``: rules plus a SCRIPTED STAND-IN JUDGE that answers
  from the suite's ground truth. It is not an LLM: it shows the ceiling of
  the judge path (what an ideal judge adds on the borderline cases the rules
  hand over), not the quality of any model.

Metrics (per language and mode), provenance-based through message metadata
that facts inherit:

* stale@5: share of updated-slot questions whose top 5 holds a record from
  the outdated statement (target 0); ``stale-value@5`` is the looser string
  check: the outdated value appears in any top-5 text, whatever its source;
* current@5: share whose top 5 holds a record from the current statement;
* applied: share of updates after which every record of the old statement
  is superseded by the new one;
* false overwrites: superseded records that should not have been (source a
  control fact, filler, or a slot superseded by another slot's statement);
  ``control damaged``: control facts with any record superseded;
  ``control@5``: control questions whose top 5 holds the control.

Optional LoCoMo part (``--locomo PATH``): the dev split ingested as in
``benchmarks/locomo_recall.py`` with fact extraction + overwrite on
(``rules``) vs. off (``baseline``), recall@10 of message hits (facts map to
their source turn's ``dia_id`` through inherited metadata).

Usage::

    HF_HUB_OFFLINE=1 python benchmarks/conflict/run.py \\
        --memorybank ../shared/data/memorybank --locomo ../shared/data/locomo/locomo_dev.json

``--suite extended`` adds look-alike families about other people's
attributes and negated preferences (``owner_families.py``) to the same
conversations; its JSON goes to ``<out>/conflict_extended.json``.

Embeddings are memoized on disk (``<out>/conflict_embcache_*.npz``: the same
model's vectors, computed once) so the modes and reruns do not re-embed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]

import suite as S  # noqa: E402

from memory_vec import MemoryConfig, MemoryCore  # noqa: E402
from memory_vec._core import MessageInput  # noqa: E402
from memory_vec._rules.conflict import ConflictAction, ConflictDecision, ConflictResolver, RuleExtractor  # noqa: E402
from memory_vec._rules.facts import split_sentences  # noqa: E402
from memory_vec._rules.summary import ExtractiveSummarizer  # noqa: E402
from memory_vec._rules.tokens import get_token_counter  # noqa: E402
from memory_vec.backends import InMemoryBackend, RecordFilter  # noqa: E402
from memory_vec.embeddings import get_embedder  # noqa: E402
from memory_vec.state import InMemoryStateStore  # noqa: E402
from memory_vec.testing import parts  # noqa: E402

MODES = ("baseline", "messages", "rules", "rules+oracle-judge")
MODE_LABELS = {
    "baseline": "baseline: no conflict handling (messages, resolver always ADD)",
    "messages": "fact_extractor=none (messages checked for conflicts)",
    "rules": "rules (default: rule extractor + rule resolver)",
    "rules+oracle-judge": "rules + SCRIPTED STAND-IN judge (oracle from suite ground truth, not an LLM)",
}


# --------------------------------------------------------------------------- harness pieces
class CachedEmbedder:
    """The real embedder, memoized per text (and on disk between runs)."""

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

    def warm(self, texts: Sequence[str], label: str) -> None:
        missing = sorted({t for t in texts if t not in self.cache})
        t0 = time.perf_counter()
        for i in range(0, len(missing), 64):
            chunk = missing[i : i + 64]
            for t, v in zip(chunk, self.inner.embed_documents(chunk)):
                self.cache[t] = v
            self.fresh += len(chunk)
            if (i // 64) % 5 == 4:
                print(
                    f"  [{label}] embedded {i + len(chunk)}/{len(missing)} in {time.perf_counter() - t0:.0f}s",
                    file=sys.stderr,
                    flush=True,
                )
        if missing:
            self.save()

    def save(self) -> None:
        if self.path is None:
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
        return self.embed_documents([text])[0]  # e5 in memory-vec is symmetric ("query:" on both sides)

    async def aembed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return self.embed_documents(texts)

    async def aembed_query(self, text: str) -> np.ndarray:
        return self.embed_query(text)


class AlwaysAdd(ConflictResolver):
    """Harness-only baseline: never supersedes, never deduplicates."""

    def decide(self, fact: Any, existing: Any, **_: Any) -> ConflictDecision:
        return ConflictDecision(ConflictAction.ADD, reason="baseline: no conflict handling")


class OracleJudge:
    """SCRIPTED STAND-IN for an LLM judge, harness only: answers the resolver's
    prompt from the suite's ground truth (UPDATE the older statements of the
    same slot when the new statement is a planted update; ADD otherwise).

    The truth is per conversation (``conversation`` is set before each one is
    ingested): the same sentence is a plant in one conversation and an update
    or a control in another (about a fifth of them), and a lookup across
    conversations made the stand-in veto true updates."""

    def __init__(self, truth: dict[tuple[str, str], tuple[str, int, str]]) -> None:
        self.truth = truth
        self.conversation = ""
        self.calls = 0
        self.verdicts: Counter[str] = Counter()

    def __call__(self, prompt: str) -> str:
        self.calls += 1
        listing = re.findall(r"^\[(\d+)\] (.*)$", prompt, re.MULTILINE)
        m = re.search(r"^New statement: (.*)$", prompt, re.MULTILINE)
        new = self.truth.get((self.conversation, m.group(1).strip())) if m else None
        answer = "ADD"
        if new is not None and new[2] == "update":
            hits = [
                i
                for i, text in listing
                if (old := self.truth.get((self.conversation, text.strip()))) and old[0] == new[0] and old[1] < new[1]
            ]
            if hits:
                answer = "UPDATE " + " ".join(hits)
        self.verdicts[answer.split()[0]] += 1
        return answer


def ground_truth(convs: Sequence[S.Conversation]) -> dict[tuple[str, str], tuple[str, int, str]]:
    """(conversation, text) -> (slot, stage, kind) of every planted, updated and control statement."""
    truth: dict[tuple[str, str], tuple[str, int, str]] = {}
    for conv in convs:
        for turn in conv.turns:
            if turn.kind in ("plant", "update", "control"):
                for text in [turn.text, *split_sentences(turn.text)]:
                    truth[(conv.id, text)] = (turn.slot, turn.stage, turn.kind)
    return truth


def make_core(mode: str, embedder: CachedEmbedder, judge: OracleJudge | None) -> MemoryCore:
    counter = get_token_counter("cl100k_base")
    cfg = MemoryConfig(
        user_id="bench",
        session_id="bench",
        fact_extractor="none" if mode in ("baseline", "messages") else "rules",
        conflict_judge=mode == "rules+oracle-judge",
    )
    core = MemoryCore(
        cfg,
        embedder=embedder,
        backend=InMemoryBackend(),
        state_store=InMemoryStateStore(),  # type: ignore[arg-type]
        summarizer=ExtractiveSummarizer(counter=counter),
        token_counter=counter,
        llm=judge if mode == "rules+oracle-judge" else None,
    )
    if mode == "baseline":
        # Harness only: the engine's resolver has no public setter (it is not a
        # user-facing knob), so the baseline swaps it on the engine.
        core._engine.resolver = AlwaysAdd(threshold=parts(core).resolver.threshold)
    return core


def suite_texts(convs: Sequence[S.Conversation]) -> list[str]:
    rx = RuleExtractor()
    texts: list[str] = []
    for conv in convs:
        for turn in conv.turns:
            texts.append(turn.text)
            texts.extend(f.text for f in rx.extract(turn.role, turn.text))
        texts.extend(q.text for q in conv.questions)
    return texts


# --------------------------------------------------------------------------- the suite
def ingest(core: MemoryCore, conv: S.Conversation) -> None:
    t0 = 1_700_000_000.0
    turns = conv.turns
    for i in range(0, len(turns), 2):
        pair = turns[i : i + 2]
        core.add_messages(
            [
                MessageInput(t.role, t.text, t0 + 60 * (i + j), S.turn_metadata(conv, i + j, t))
                for j, t in enumerate(pair)
            ],
            user_id=conv.id,
            session_id=f"s{i // 24}",
        )


def evaluate(core: MemoryCore, conv: S.Conversation) -> dict[str, Any]:
    backend = parts(core).backend
    records = backend.scan(RecordFilter(user_id=conv.id, include_superseded=True, include_archived=True))
    by_id = {r.id: r for r in records}
    false_by_source: Counter[str] = Counter()
    correct = 0
    examples: list[tuple[str, str]] = []
    for r in records:
        if not r.superseded_by:
            continue
        w = by_id.get(r.superseded_by)
        rm, wm = r.metadata, (w.metadata if w else {})
        if rm.get("suite_kind") == "plant" and wm.get("slot") == rm.get("slot") and wm.get("stage", -1) > rm["stage"]:
            correct += 1
        else:
            false_by_source[str(rm.get("suite_kind"))] += 1
            if len(examples) < 4:
                examples.append((r.text[:90], w.text[:90] if w else "?"))
    # updates applied: every record of the old statement superseded by the new one
    old_records: dict[str, list[Any]] = defaultdict(list)
    for r in records:
        if r.metadata.get("suite_kind") == "plant":
            old_records[r.metadata["slot"]].append(r)
    applied = 0
    for slot, recs in old_records.items():
        ok = all(
            r.superseded_by
            and by_id.get(r.superseded_by) is not None
            and by_id[r.superseded_by].metadata.get("slot") == slot
            for r in recs
        )
        applied += int(ok)
    damaged = {r.metadata["slot"] for r in records if r.metadata.get("suite_kind") == "control" and r.superseded_by}
    rows = []
    for q in conv.questions:
        hits = core.recall(q.text, k=5, user_id=conv.id)
        slots = [(h.metadata.get("slot"), h.metadata.get("stage"), h.metadata.get("suite_kind")) for h in hits]
        current_stage = 0 if q.control else 1
        rows.append(
            {
                "control": q.control,
                "family": q.family,
                "stale": (not q.control) and any(s == q.slot and st == 0 for s, st, _ in slots),
                "current": any(s == q.slot and st == current_stage for s, st, _ in slots),
                "stale_value": bool(q.stale_value) and any(q.stale_value in h.text for h in hits),
                "has_stale_value": bool(q.stale_value),
            }
        )
    n_control = sum(1 for q in conv.questions if q.control)
    return {
        "superseded_correct": correct,
        "false_by_source": dict(false_by_source),
        "examples": examples,
        "updates": len(old_records),
        "applied": applied,
        "controls": n_control,
        "controls_damaged": len(damaged),
        "records": len(records),
        "questions": rows,
    }


def run_suite(lang: str, convs: list[S.Conversation], embedder: CachedEmbedder, modes: Sequence[str]) -> dict[str, Any]:
    truth = ground_truth(convs)
    out: dict[str, Any] = {}
    for mode in modes:
        judge = OracleJudge(truth) if mode == "rules+oracle-judge" else None
        core = make_core(mode, embedder, judge)
        t0 = time.perf_counter()
        per_conv = []
        for conv in convs:
            if judge is not None:
                judge.conversation = conv.id
            ingest(core, conv)
            core.flush()
            per_conv.append(evaluate(core, conv))
        elapsed = time.perf_counter() - t0
        qs = [r for c in per_conv for r in c["questions"]]
        upd = [r for r in qs if not r["control"]]
        ctl = [r for r in qs if r["control"]]
        false_src: Counter[str] = Counter()
        for c in per_conv:
            false_src.update(c["false_by_source"])
        n_false = sum(false_src.values())
        n_correct = sum(c["superseded_correct"] for c in per_conv)
        by_family: dict[str, dict[str, float]] = {}
        for fam in sorted({r["family"] for r in upd}):
            rows = [r for r in upd if r["family"] == fam]
            by_family[fam] = {
                "n": len(rows),
                "stale@5": statistics.fmean(r["stale"] for r in rows),
                "current@5": statistics.fmean(r["current"] for r in rows),
            }
        sv = [r for r in upd if r["has_stale_value"]]
        out[mode] = {
            "label": MODE_LABELS[mode],
            "updates": len(upd),
            "controls": len(ctl),
            "stale@5": statistics.fmean(r["stale"] for r in upd),
            "stale-value@5": statistics.fmean(r["stale_value"] for r in sv) if sv else 0.0,
            "current@5": statistics.fmean(r["current"] for r in upd),
            "control@5": statistics.fmean(r["current"] for r in ctl) if ctl else 0.0,
            "applied": sum(c["applied"] for c in per_conv) / max(1, sum(c["updates"] for c in per_conv)),
            "superseded_correct": n_correct,
            "false_overwrites": n_false,
            "false_by_source": dict(false_src),
            "false_overwrite_rate": n_false / max(1, n_false + n_correct),
            "controls_damaged": sum(c["controls_damaged"] for c in per_conv),
            "records": sum(c["records"] for c in per_conv),
            "judge_calls": judge.calls if judge else 0,
            "judge_verdicts": dict(judge.verdicts) if judge else {},
            "by_family": by_family,
            "false_examples": [e for c in per_conv for e in c["examples"]][:8],
            "seconds": elapsed,
        }
        print(
            f"[{lang}] {mode}: stale@5 {out[mode]['stale@5']:.3f} current@5 {out[mode]['current@5']:.3f} "
            f"false {n_false} ({elapsed:.0f}s)",
            file=sys.stderr,
            flush=True,
        )
    return out


# --------------------------------------------------------------------------- LoCoMo
def run_locomo(path: str, embedder: CachedEmbedder, modes: Sequence[str]) -> dict[str, Any]:
    import locomo_recall as L

    data = json.loads(Path(path).read_text(encoding="utf-8"))
    rx = RuleExtractor()
    texts: list[str] = []
    for conv in data:
        c = conv["conversation"]
        n = 1
        while f"session_{n}" in c:
            for t in c[f"session_{n}"]:
                text = L.turn_text(t)
                texts.append(text)
                if t["speaker"] == c["speaker_a"]:
                    texts.extend(f.text for f in rx.extract("user", text))
            n += 1
        texts.extend(qa["question"] for qa in conv["qa"])
    embedder.warm(texts, "locomo")
    out: dict[str, Any] = {}
    for mode in modes:
        core = make_core(mode, embedder, None)
        t0 = time.perf_counter()
        questions = []
        for conv in data:
            valid = L.ingest(core, conv)
            questions += [(conv["sample_id"], qa, L.evidence_ids(qa.get("evidence", []), valid)) for qa in conv["qa"]]
        core.flush()
        r10, r5, kinds = [], [], Counter()
        for user, qa, evidence in questions:
            hits = core.recall(qa["question"], k=10, user_id=user)
            kinds.update(h.kind for h in hits)
            found = [h.metadata.get("dia_id", "") for h in hits]
            r10.append(L.recall_at(found, evidence, 10))
            r5.append(L.recall_at(found, evidence, 5))
        allrec = [
            r
            for conv in data
            for r in parts(core).backend.scan(
                RecordFilter(user_id=conv["sample_id"], include_superseded=True, include_archived=True)
            )
        ]
        out[mode] = {
            "label": MODE_LABELS[mode],
            "questions": len(questions),
            "r@5": statistics.fmean(r5),
            "r@10": statistics.fmean(r10),
            "hit_kinds": dict(kinds),
            "facts": sum(r.kind == "fact" for r in allrec),
            "superseded_messages": sum(r.kind == "message" and bool(r.superseded_by) for r in allrec),
            "superseded_facts": sum(r.kind == "fact" and bool(r.superseded_by) for r in allrec),
            "seconds": time.perf_counter() - t0,
        }
        print(f"[locomo] {mode}: r@10 {out[mode]['r@10']:.3f}", file=sys.stderr, flush=True)
    return out


# --------------------------------------------------------------------------- output
def markdown(result: dict[str, Any]) -> str:
    lines: list[str] = []
    for lang, modes in result["suite"].items():
        first = next(iter(modes.values()))
        lines += [
            (
                f"#### {lang} ({result['params'].get('suite', 'current')} suite): "
                f"{result['params']['conversations']} conversations, {first['updates']} updates, "
                f"{first['controls']} controls"
            ),
            "",
            (
                "| mode | stale@5 ↓ | stale-value@5 ↓ | current@5 ↑ | applied ↑ | false overwrites ↓ (rate) "
                "| by source | controls damaged ↓ | control@5 ↑ | judge calls |"
            ),
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        for row in modes.values():
            src = ", ".join(f"{k} {v}" for k, v in sorted(row["false_by_source"].items())) or "-"
            lines.append(
                f"| {row['label']} | {row['stale@5']:.3f} | {row['stale-value@5']:.3f} | {row['current@5']:.3f} | "
                f"{row['applied']:.3f} | {row['false_overwrites']} ({row['false_overwrite_rate']:.3f}) | {src} | "
                f"{row['controls_damaged']}/{row['controls']} | {row['control@5']:.3f} | {row['judge_calls']} |"
            )
        fams = sorted(first["by_family"])
        lines += [
            "",
            f"Per family ({lang}), stale@5 / current@5:",
            "",
            "| mode | " + " | ".join(fams) + " |",
            "|---|" + "---|" * len(fams),
        ]
        for name, row in modes.items():
            cells = [f"{row['by_family'][f]['stale@5']:.2f} / {row['by_family'][f]['current@5']:.2f}" for f in fams]
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
        lines.append("")
    if result.get("locomo"):
        lines += [
            "#### LoCoMo dev: effect of fact extraction + overwrite on recall",
            "",
            "| mode | questions | R@5 | R@10 | facts stored | superseded msgs / facts | hit kinds (top 10) |",
            "|---|---|---|---|---|---|---|",
        ]
        for row in result["locomo"].values():
            lines.append(
                f"| {row['label']} | {row['questions']} | {row['r@5']:.3f} | {row['r@10']:.3f} | "
                f"{row['facts']} | {row['superseded_messages']} / {row['superseded_facts']} | "
                f"{', '.join(f'{k} {v}' for k, v in sorted(row['hit_kinds'].items()))} |"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--memorybank", default="../shared/data/memorybank", help="dir with memory_bank_{en,cn}.json")
    parser.add_argument("--lang", action="append", choices=("en", "cn"), help="repeatable; default both")
    parser.add_argument("--mode", action="append", choices=MODES, help="repeatable; default all")
    parser.add_argument("--conversations", type=int, default=20)
    parser.add_argument("--updates", type=int, default=12, help="updated slots per conversation (max 12)")
    parser.add_argument("--controls", type=int, default=6, help="control facts per conversation")
    parser.add_argument("--filler-pairs", type=int, default=30, help="MemoryBank query/response pairs per conversation")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--suite",
        choices=("current", "extended"),
        default="current",
        help="extended: also other people's attributes and negated preferences (owner_families.py)",
    )
    parser.add_argument(
        "--owner-updates",
        type=int,
        default=10,
        help="with --suite extended: owner/negation slots per conversation (max 10)",
    )
    parser.add_argument("--locomo", default=None, help="locomo_dev.json: also measure LoCoMo recall@10 on vs off")
    parser.add_argument("--out", default=str(HERE.parent / "out"), help="directory for conflict.json and the cache")
    parser.add_argument("--embedder", default="multilingual-e5-small")
    args = parser.parse_args(argv)
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    inner = get_embedder(args.embedder)
    safe = re.sub(r"[^A-Za-z0-9]+", "_", inner.model_id)
    embedder = CachedEmbedder(inner, out_dir / f"conflict_embcache_{safe}.npz")
    modes = args.mode or list(MODES)
    result: dict[str, Any] = {
        "params": dict(vars(args)),
        "embedder": inner.model_id,
        "conflict_threshold": getattr(inner, "conflict_threshold", None),
        "suite": {},
    }
    for lang in args.lang or ["en", "cn"]:
        convs = S.build_suite(
            Path(args.memorybank) / f"memory_bank_{lang}.json",
            lang,
            conversations=args.conversations,
            updates=args.updates,
            controls=args.controls,
            filler_pairs=args.filler_pairs,
            seed=args.seed,
            suite=args.suite,
            owner_updates=args.owner_updates,
        )
        embedder.warm(suite_texts(convs), lang)
        result["suite"][lang] = run_suite(lang, convs, embedder, modes)
    if args.locomo:
        result["locomo"] = run_locomo(
            args.locomo, embedder, [m for m in ("baseline", "messages", "rules") if m in modes]
        )
    result["fresh_embeddings"] = embedder.fresh
    name = "conflict.json" if args.suite == "current" else f"conflict_{args.suite}.json"
    (out_dir / name).write_text(json.dumps(result, indent=2, ensure_ascii=False), encoding="utf-8")
    print(markdown(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
