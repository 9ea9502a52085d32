"""Build a persist_dir with memory-vec 0.1 (commit f391e6f): two collections
of embedded Chroma and two of Milvus Lite under one directory, so that the
0.1 SQLite working state (state.sqlite3) holds sessions of all four."""

import sys
from datetime import datetime, timezone

from memory_vec import MemoryConfig, MemoryCore
from memory_vec.testing import DeterministicHashEmbedder

out = sys.argv[1]
emb = DeterministicHashEmbedder(dimension=64)
t0 = datetime(2024, 5, 1, 12, 0, tzinfo=timezone.utc).timestamp()
for backend in ("chroma", "milvus"):
    for coll, word in (("legacy_a", "apricot"), ("legacy_b", "blueberry")):
        core = MemoryCore(
            MemoryConfig(
                backend=backend,
                persist_dir=f"{out}/{backend}",
                collection=coll,
                user_id="alice",
                session_id="s1",
                fact_extractor="none",
                max_token_limit=200,
                summary_max_tokens=80,
                keep_recent_turns=2,
            ),
            embedder=emb,
        )
        for i in range(6):
            core.add_message("user", f"note {i}: the {coll} secret fruit is {word} number {i}", timestamp=t0 + i)
            core.add_message("assistant", f"noted {word} {i}", timestamp=t0 + i + 0.5)
        core.add_message("user", f"I live in {word} street", session_id="s2", timestamp=t0 + 100)
        core.close()
print("ok")
