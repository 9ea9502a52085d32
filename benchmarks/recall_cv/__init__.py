"""Cross-validated recall harness (issue #17): ``python -m benchmarks.recall_cv``.

Modules: ``corpora`` (what is stored and asked), ``questions`` (the frozen
sets and their checksums), ``messy_chat`` (the messaging-app rewrite),
``runner`` (stores filled through ``MemoryCore``, the grid asked through
``MemoryCore.recall``, baselines), ``stats`` (leave-one-conversation-out,
bootstrap), ``evaluate`` (``evaluate()``: one configuration, every suite),
``report`` (markdown). Method and usage: ``benchmarks/README.md``.
"""
