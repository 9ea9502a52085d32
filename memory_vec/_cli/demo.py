"""The offline demo: a long scripted conversation through the memory.

Facts are planted early ("amounts with two decimals", "budget is 5000"),
buried under small talk, and one is updated late ("budget is now 8000").
Each turn shows the memory's slots and their tokens against sending the
whole history; the update is shown as a supersede (old value -> new value,
kept as history); at the end, questions show what recall brings back.

The store is kept (SQLite, standard library only, under ``persist_dir``,
default ``./.memory_vec/demo``) so that the ``memory-vec`` commands printed
at the end can inspect it; a new run replaces the previous one's records.
"""

from __future__ import annotations

import json
import os
import random
import shlex
import shutil
import sys
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from memory_vec._core import MemoryCore
from memory_vec._model.config import MemoryConfig
from memory_vec._model.records import RecalledMemory, WriteResult

__all__ = ["DEFAULT_DEMO_DIR", "DemoTurn", "build_script", "run_demo"]

DEFAULT_DEMO_DIR = os.path.join(".memory_vec", "demo")
DEMO_USER = "demo-user"
#: The demo's store: a SQLite file, kept and inspectable, with nothing to install beyond the core.
DEFAULT_DEMO_BACKEND = "sqlite"


@dataclass(frozen=True)
class DemoTurn:
    user: str
    assistant: str


_EN_FACTS = {
    3: ("Please always show amounts with two decimals.", "Understood: amounts with two decimals from now on."),
    6: ("Our travel budget is 5000 euros for the whole trip.", "Got it, a budget of 5000 euros."),
    9: ("I'm allergic to peanuts, so never suggest dishes with peanuts.", "Noted: no peanuts, ever."),
    14: ("My dog is called Biscuit, he's a golden retriever.", "Biscuit sounds lovely!"),
    20: ("We decided to fly to Kyoto on April 3rd.", "Kyoto on April 3rd it is."),
    130: ("Update: the travel budget is now 8000 euros.", "Updated: the budget is 8000 euros now."),
}
_EN_FILLER = [
    "What do you think about {x}?",
    "I watched a documentary about {x} yesterday.",
    "Can you tell me something fun about {x}?",
    "My friend keeps talking about {x}.",
    "Is {x} popular these days?",
    "I read an article on {x} this morning.",
]
_EN_TOPICS = [
    "jazz",
    "gardening",
    "chess",
    "volcanoes",
    "baking bread",
    "marathons",
    "old cameras",
    "board games",
    "the ocean",
    "street food",
    "astronomy",
    "podcasts",
    "origami",
    "tea",
]
_EN_REPLIES = [
    "{X} is a great topic; there is a lot to say about it.",
    "Interesting! {X} has a long history.",
    "Many people enjoy {x}; it is a nice way to relax.",
    "Sure, {x} can be surprisingly deep.",
]
_EN_QUESTIONS = [
    "What is our travel budget?",
    "How should amounts be formatted?",
    "Which foods must you avoid suggesting?",
    "What is my dog's name?",
    "When are we flying to Kyoto?",
]

_ZH_FACTS = {
    3: ("以后金额都保留两位小数。", "明白，以后金额都保留两位小数。"),
    6: ("我们这次旅行的预算是5000元。", "好的，预算5000元。"),
    9: ("我对花生过敏，千万不要推荐含花生的菜。", "记住了，不推荐含花生的菜。"),
    14: ("我家的狗叫豆豆，是一只金毛。", "豆豆听起来很可爱！"),
    20: ("我们决定4月3日飞去京都。", "好的，4月3日去京都。"),
    130: ("更新一下：预算调整到8000元。", "已更新，预算现在是8000元。"),
}
_ZH_FILLER = [
    "你觉得{x}怎么样？",
    "我昨天看了一个关于{x}的纪录片。",
    "能跟我讲讲{x}的趣事吗？",
    "我朋友一直在聊{x}。",
    "最近{x}流行吗？",
    "今天早上我读了一篇关于{x}的文章。",
]
_ZH_TOPICS = [
    "爵士乐",
    "园艺",
    "象棋",
    "火山",
    "烤面包",
    "马拉松",
    "老相机",
    "桌游",
    "大海",
    "街头小吃",
    "天文",
    "播客",
    "折纸",
    "喝茶",
]
_ZH_REPLIES = [
    "{x}是个很好的话题，可以聊很多。",
    "有意思！{x}有很长的历史。",
    "很多人喜欢{x}，很放松。",
    "当然，{x}其实很有深度。",
]
_ZH_QUESTIONS = [
    "我们的旅行预算是多少？",
    "金额应该怎么显示？",
    "推荐菜的时候要避开什么？",
    "我家的狗叫什么名字？",
    "我们什么时候飞京都？",
]


def build_script(lang: str = "en", turns: int = 150, seed: int = 7) -> tuple[list[DemoTurn], list[str]]:
    """The scripted conversation (user/assistant pairs) and the final questions."""
    rng = random.Random(seed)
    facts, filler, topics, replies, questions = (
        (_ZH_FACTS, _ZH_FILLER, _ZH_TOPICS, _ZH_REPLIES, _ZH_QUESTIONS)
        if lang == "zh"
        else (_EN_FACTS, _EN_FILLER, _EN_TOPICS, _EN_REPLIES, _EN_QUESTIONS)
    )
    script = []
    update_turn = min(130, turns - 5)
    for i in range(turns):
        key = 130 if i == update_turn else i
        if key in facts and (key != 130 or i == update_turn):
            user, assistant = facts[key]
        else:
            topic = rng.choice(topics)
            user = rng.choice(filler).format(x=topic)
            assistant = rng.choice(replies).format(x=topic, X=topic[:1].upper() + topic[1:])
        script.append(DemoTurn(user, assistant))
    return script, questions


def openai_compatible_llm(base_url: str, model: str, api_key: str | None) -> Callable[[str], str]:
    """A ``prompt -> text`` callable for an OpenAI-compatible endpoint (stdlib only)."""
    url = base_url.rstrip("/") + "/chat/completions"

    def call(prompt: str) -> str:
        body = json.dumps({"model": model, "messages": [{"role": "user", "content": prompt}]}).encode()
        headers = {"Content-Type": "application/json", **({"Authorization": f"Bearer {api_key}"} if api_key else {})}
        request = urllib.request.Request(url, data=body, headers=headers)
        with urllib.request.urlopen(request, timeout=60) as response:
            return str(json.load(response)["choices"][0]["message"]["content"])

    return call


def _shown_path(path: str) -> str:
    """``path`` relative to the working directory when it lies under it, else absolute."""
    full = os.path.abspath(path)
    rel = os.path.relpath(full)
    return full if rel.startswith("..") else rel


def _cli_prefix() -> str:
    """How to call the ``memory-vec`` command of this very installation."""
    script = Path(sys.executable).parent / "memory-vec"
    on_path = shutil.which("memory-vec")
    if on_path and script.exists() and Path(on_path).resolve() == script.resolve():
        return "memory-vec"
    if script.exists():
        return shlex.quote(_shown_path(str(script)))
    return f"{shlex.quote(sys.executable)} -m memory_vec"


def _how_found(hit: RecalledMemory) -> str:
    found = f"cosine {hit.components.get('similarity', hit.similarity):.2f}"
    if "bm25" in hit.components:
        found += f" · keywords {hit.components['bm25']:.2f}"
    return found


def _quote(text: str, width: int = 60) -> str:
    text = " ".join(text.split())
    return '"' + (text if len(text) <= width else text[: width - 1] + "…") + '"'


LEGEND = """\
Columns, in tokens ({tokenizer}) of the prompt for that turn's model call:
  summary   the rolling summary of older turns
  recent    the latest turns, verbatim
  relevant  memories recalled for the new message (from any earlier turn)
  memory    what memory-vec sends: summary + recent + relevant + the new user message
  full      what sending the whole conversation so far would cost (every earlier message + the new one)
  saved     1 - memory / full: the share of that turn's prompt tokens memory-vec does not send"""


def _print_supersedes(core: MemoryCore, turn: int, results: list[WriteResult], out: TextIO) -> list[str]:
    """Show each supersede of this turn as old value -> new value; returns the new facts' ids."""
    shown: list[str] = []
    for result in results:
        if not result.superseded_ids:
            continue
        current = result.fact_ids[0] if result.fact_ids else result.id
        chain = core.history(current)
        old, new = (chain[-2].text if len(chain) > 1 else "?"), chain[-1].text
        print(f"{turn:>5}  UPDATE {_quote(old)} -> {_quote(new)}", file=out)
        print(
            f"       {len(result.superseded_ids)} older record(s) (the old fact and the messages that stated it) "
            "are superseded: kept as history, no longer recalled as current",
            file=out,
        )
        shown.append(current)
    return shown


def run_demo(
    *,
    lang: str = "en",
    backend: str | None = None,
    turns: int = 150,
    persist_dir: str | None = None,
    llm_url: str | None = None,
    llm_model: str = "gpt-4o-mini",
    out: TextIO = sys.stdout,
    every: int = 10,
) -> dict[str, object]:
    """Run the scripted conversation; print per-turn slots, supersedes and a final table.

    ``backend=None`` is the SQLite store (``"memory"`` keeps nothing). A persistent store
    goes to ``persist_dir`` (default ``./.memory_vec/demo``); the demo user's records of a
    previous run are removed first.
    """
    backend = backend or DEFAULT_DEMO_BACKEND
    persist_dir = persist_dir or DEFAULT_DEMO_DIR
    config = MemoryConfig(
        user_id=DEMO_USER,
        session_id=f"demo-{lang}",
        backend=backend,
        persist_dir=os.path.abspath(persist_dir),
        collection=f"demo_{lang}",
    )
    llm = openai_compatible_llm(llm_url, llm_model, os.environ.get("OPENAI_API_KEY")) if llm_url else None
    t_start = time.perf_counter()
    core = MemoryCore(config, llm=llm)
    core.forget(user_id=DEMO_USER)  # a re-run starts from an empty store, not on top of the last one
    counter = core._parts.counter
    script, questions = build_script(lang, turns)
    full_history_tokens = 0
    memory_tokens_total = 0
    full_tokens_total = 0
    where = (
        f"{backend} store in {_shown_path(persist_dir)} (kept after the demo)"
        if backend != "memory"
        else "in-process store (kept nowhere: the default, --backend sqlite, keeps one)"
    )
    print(
        f"memory-vec demo · {lang} · {where} · embedder={core._parts.embedder.model_id} · "
        f"summarizer={'llm' if llm else 'extractive (offline)'} · {turns} turns",
        file=out,
    )
    print(LEGEND.format(tokenizer=config.tokenizer), file=out)
    print(f"\n{'turn':>5} {'summary':>8} {'recent':>7} {'relevant':>9} {'memory':>7} {'full':>7}  saved", file=out)
    updated_facts: list[str] = []
    for i, turn in enumerate(script, 1):
        ctx = core.build_context(turn.user)
        if llm is not None:
            prompt = f"{ctx.render_history()}\n{ctx.render()}\nuser: {turn.user}\nassistant:"
            assistant = llm(prompt)
        else:
            assistant = turn.assistant
        full_history_tokens += counter.count(turn.user)
        memory_tokens_total += ctx.tokens["total"] + counter.count(turn.user)
        full_tokens_total += full_history_tokens
        results = core.add_messages([("user", turn.user), ("assistant", assistant)])
        full_history_tokens += counter.count(assistant)
        if i % every == 0 or i == len(script):
            t = ctx.tokens
            memory = t["total"] + counter.count(turn.user)
            full = full_history_tokens - counter.count(assistant)
            print(
                f"{i:>5} {t['summary']:>8} {t['recent']:>7} {t['relevant']:>9} {memory:>7} {full:>7}  "
                f"{1 - memory / max(full, 1):>5.0%}",
                file=out,
            )
        updated_facts += _print_supersedes(core, i, results, out)
    answers = _print_answers(core, questions, out)
    _print_histories(core, updated_facts, out)
    state = core.working_state()
    print("\nRunning summary:", file=out)
    print(state.summary or "(empty)", file=out)
    saved = 1 - memory_tokens_total / max(full_tokens_total, 1)
    print(
        f"\nPrompt tokens over the conversation (each turn's prompt, summed over {len(script)} turns): "
        f"memory {memory_tokens_total:,} vs full history {full_tokens_total:,} ({saved:.0%} saved). "
        f"Took {time.perf_counter() - t_start:.1f}s.",
        file=out,
    )
    core.close()
    if backend != "memory":
        _print_inspect(config, persist_dir, updated_facts, out)
    return {
        "memory_tokens": memory_tokens_total,
        "full_tokens": full_tokens_total,
        "answers": answers,
        "summary": state.summary,
        "persist_dir": os.path.abspath(persist_dir) if backend != "memory" else None,
        "updated_facts": updated_facts,
    }


def _print_answers(core: MemoryCore, questions: list[str], out: TextIO) -> dict[str, list[tuple[str, float]]]:
    print(
        "\nQuestions after the conversation (recalled memories, best first; for each, how it was found: "
        "cosine = meaning, keywords = shared words (0 when none), both in [0, 1]; indented lines are the "
        "turns said just before and after it, shown as its context, not as answers):",
        file=out,
    )
    answers: dict[str, list[tuple[str, float]]] = {}
    for q in questions:
        hits = core.recall(q, k=3)
        answers[q] = [(h.text, h.score) for h in hits]
        print(f"\nQ: {q}", file=out)
        for rank, h in enumerate(hits, 1):
            print(f"   {rank}. [{h.timestamp:%Y-%m-%d} · {h.role}] {h.text}   ({_how_found(h)})", file=out)
            for nb in h.neighbors:
                where = "before" if nb.seq < h.seq else "after "
                print(f"        {where}: [{nb.role}] {_quote(nb.text, 70)}", file=out)
    return answers


def _print_histories(core: MemoryCore, updated_facts: list[str], out: TextIO) -> None:
    for fact_id in updated_facts:
        print("\nSupersede history of the updated fact (oldest first; only the last one is current):", file=out)
        for record in core.history(fact_id):
            status = "current   " if record.valid_to is None else "superseded"
            print(f"   {status}  {record.id}  {_quote(record.text, 70)}", file=out)


def _print_inspect(config: MemoryConfig, persist_dir: str, updated_facts: list[str], out: TextIO) -> None:
    """Write the store's config next to it and print the commands that inspect it."""
    import yaml

    config_path = os.path.join(persist_dir, "memory.yaml")
    settings = {
        "backend": config.backend,
        "persist_dir": config.persist_dir,
        "collection": config.collection,
        "user_id": config.user_id,
        "session_id": config.session_id,
    }
    with open(config_path, "w", encoding="utf-8") as fh:
        fh.write("# the demo's store, for memory-vec --config (written by memory-vec demo)\n")
        yaml.safe_dump(settings, fh, sort_keys=False, allow_unicode=True)
    cli = f"{_cli_prefix()} {{}} --config {shlex.quote(_shown_path(config_path))}"
    print(
        f"\nThe store is kept in {_shown_path(persist_dir)} (a new demo run replaces it; "
        f"rm -r {shlex.quote(_shown_path(persist_dir))} removes it). Inspect it with:",
        file=out,
    )
    print(f"  {cli.format('stats')}", file=out)
    print(f"  {cli.format('list')} --kind fact --include-superseded", file=out)
    for fact_id in updated_facts[:1]:
        print(f"  {cli.format('show')} {fact_id}", file=out)
    question = "what is our travel budget?" if config.session_id.endswith("en") else "我们的旅行预算是多少？"
    print(f"  {cli.format('search')} {shlex.quote(question)}", file=out)
