"""Build stores that memory-vec 0.2.dev before the synchronous engine (commit b05f8e4) left
behind when it died with acknowledged turns not yet written: its background writer still
held them, an unflushed-sessions file (embedded Chroma, Milvus Lite) or leases in the SQLite
working state (a Chroma server) named them.

    PYTHONPATH=<checkout of b05f8e4> python make_pending.py OUT [CHROMA_SERVER_URL]

Each store: alice's session s1 has 4 turns written to the backend, then 3 more acknowledged
(in the working state's log) that the writer had not stored when the process was killed
(os._exit: no atexit flush). With a server URL, OUT/server holds the state file and the
server's collection is named legacy_server; copy the server's --path next to it.
"""

import os
import sys
from datetime import datetime, timezone

from memory_vec import MemoryConfig, MemoryCore
from memory_vec.testing import DeterministicHashEmbedder

out, server = sys.argv[1], (sys.argv[2] if len(sys.argv) > 2 else None)
t0 = datetime(2025, 3, 1, 9, 0, tzinfo=timezone.utc).timestamp()
emb = DeterministicHashEmbedder(dimension=64)
which = os.environ.get("MAKE_PENDING", "chroma")


def config(**kw: object) -> MemoryConfig:
    return MemoryConfig(
        user_id="alice",
        session_id="s1",
        fact_extractor="none",
        background_writes=True,
        flush_interval=3600.0,  # the writer thread waits: only an explicit flush stores the queue
        write_batch_size=100000,
        **kw,
    )


if server:
    core = MemoryCore(
        config(backend="chroma", url=server, persist_dir=f"{out}/server", collection="legacy_server"), embedder=emb
    )
else:
    core = MemoryCore(config(backend=which, persist_dir=f"{out}/{which}", collection="legacy_pending"), embedder=emb)
for i in range(4):
    core.add_message("user", f"stored {i}: the plum count is {i}", timestamp=t0 + i)
core.flush()
for i in range(4, 7):
    core.add_message("user", f"acknowledged {i}: the quince count is {i}", timestamp=t0 + i)
print("written 4, pending 3", flush=True)
os._exit(0)
