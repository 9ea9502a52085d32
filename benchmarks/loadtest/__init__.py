"""Load test: a real multi-worker chat service over a Chroma server and Redis.

What runs (issue #15, target 6):

* **Service** (``service.py``): FastAPI, served by ``uvicorn --workers N``.
  Each request builds the scope's memory the LangChain way
  (``VectorSummaryMemory`` over a ``MemoryCore`` for the request's user and
  session; Chroma server backend, Redis working state, the default embedder
  multilingual-e5-small loaded once in every worker), loads the memory
  variables, formats the package's ``PROMPT``, answers with a scripted model
  (offline, deterministic, quotes the first recalled memory) and saves the
  exchange. ``POST /floor`` embeds the same texts and nothing else: the
  turn's embedding floor (the pair once, the query once).
* **Users** (``script.py``): English and Chinese (one in four) trip-planning
  conversations about budgets, cities, food, colleagues and pets, the same
  kinds of facts with each user's own values, plus a canary token per user.
* **Load** (``generator.py``): all users at once on loopback, each turn
  starting when the user's previous turn has answered; then the floor phase,
  same users, same concurrency, same texts. Every reply's context is checked
  for other users' canaries as it arrives.
* **Verification** (``verify.py``): a fresh client over the same servers
  checks every user's records: exactly 2 x turns messages, the texts sent,
  in seq order, nothing of anyone else, working state consistent.

Run (starts and stops Chroma, Redis and the service itself; ~5 minutes for
32 x 20 on 2 cores)::

    pip install -e '.[bench]'    # fastapi, uvicorn, httpx, psutil; plus redis-server on the PATH
    HF_HUB_OFFLINE=1 OMP_NUM_THREADS=1 python -m benchmarks.loadtest \\
        --users 32 --turns 20 --workers 4 --out benchmarks/out/loadtest

It prints a table (p50/p95 per turn, turns/s, the floor and the ratios,
texts embedded per turn, leaks, verification) and writes ``report.json`` and
the server logs under ``--out``; the exit status is 1 on a leak, a failed
request or a verification problem. ``tests/langchain/test_loadtest_smoke.py``
runs the same machinery with 3 users x 3 turns and 2 workers.
"""
