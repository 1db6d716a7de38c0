"""The store's hot path in CPU per operation: ``record_result``, a queue claim + commit, ``check_token``.

    python -m arena.tools.bench_store [--db PATH|postgresql://...] [--results 5000] [--pg]

What is measured: CPU time of this process (``time.process_time``, not wall time: the machine may
be busy, and on PostgreSQL the server's own work is in another process) per call, over
``--results`` results recorded with :meth:`~arena.store.sqlite.Store.record_result` (duplicate
pairs: half the results complete a pair, so the pair's unit is rewritten), as many queued matches
claimed and committed by a :class:`~arena.store.queue.MatchQueue` (the commit records the result
too), and as many :meth:`~arena.store.sqlite.Store.check_token` calls of a generated token. The
database is a fresh SQLite file in a temporary folder unless ``--db`` names one (which must be
empty); ``--pg`` starts a throwaway PostgreSQL cluster (:mod:`arena.tools.pg_cluster`).
Only public store methods are called, so the script also measures older versions of the store.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from arena.schedule.formats import Pairing
from arena.store.queue import MatchQueue
from arena.store.sqlite import open_store
from arena.tools.pg_cluster import start_cluster

BOTS = 40
"""Bots of the field: results spread over their pairs (ladder rows and pair counts are upserts)."""


def _result(i: int) -> Any:
    """A finished match's result as the referee makes it (the fields the store reads)."""
    winner = (None, 0, 1)[i % 3]
    return SimpleNamespace(winner=winner, scores=(7, 3), manches=(1, 0), reason="score", detail="",
                           faulty=None, decisions=120, deals=9, duration_ms=412, margin=4)


def _tournament(store: Any, n: int, seed: int) -> int:
    """A tournament of ``n`` matches in duplicate pairs (two seats each way) among :data:`BOTS` bots."""
    bots = [f"b{i:02d}" for i in range(BOTS)]
    matches = []
    for i in range(n):
        a, b = bots[(i // 2) % BOTS], bots[(i // 2 * 7 + 1 + i // (2 * BOTS)) % BOTS]
        if a == b:
            b = bots[(bots.index(a) + 1) % BOTS]
        matches.append(Pairing(index=i, bot0=a if i % 2 == 0 else b, bot1=b if i % 2 == 0 else a, seed=seed + i // 2,
                               pair=f"p{i // 2}"))
    return store.create_tournament("ecarte", "bench", seed, {}, bots, matches)


def measure(target: str, n: int) -> dict[str, float]:
    """CPU µs per ``record_result``, per queue claim + commit and per ``check_token`` on the store at
    ``target`` (empty or new), each over ``n`` calls."""
    store = open_store(target)
    try:
        keys = [m.match_key for m in store.pending_matches(_tournament(store, n, 1))]
        t0 = time.process_time()
        for i, key in enumerate(keys):
            store.record_result(key, _result(i), None, None)
        record = time.process_time() - t0

        tid = _tournament(store, n, 10**6)
        queue = MatchQueue(store)
        queue.enqueue(tid)
        t0 = time.process_time()
        for i in range(n):
            claim = queue.claim("w1")
            queue.commit(claim, _result(i), None, None)
        claimed = time.process_time() - t0
        assert queue.claim("w1") is None

        token = store.add_bot("bench-token")
        t0 = time.process_time()
        ok = sum(store.check_token("bench-token", token) for _ in range(n))
        tokens = time.process_time() - t0
        assert ok == n
    finally:
        store.close()
    return {"record_result": record / n * 1e6, "claim+commit": claimed / n * 1e6, "check_token": tokens / n * 1e6}


def main(argv: list[str] | None = None) -> int:
    """Run :func:`measure` and print one line per figure; exit status 0."""
    parser = argparse.ArgumentParser(prog="python -m arena.tools.bench_store", description=__doc__.split("\n")[0])
    parser.add_argument("--db", help="an empty database (SQLite path or postgresql:// URL); default: a new file")
    parser.add_argument("--results", type=int, default=5000, help="calls per figure (default 5000)")
    parser.add_argument("--pg", action="store_true", help="on a throwaway PostgreSQL cluster")
    args = parser.parse_args(argv)
    cluster = None
    with tempfile.TemporaryDirectory() as tmp:
        target = args.db or str(Path(tmp) / "bench.db")
        if args.pg and not args.db:
            cluster = start_cluster()
            cluster.sql("CREATE DATABASE bench")
            target = cluster.url("bench")
        try:
            figures = measure(target, args.results)
        finally:
            if cluster is not None:
                cluster.destroy()
    backend = "postgresql" if target.startswith("postgres") else "sqlite"
    print(f"store hot path ({backend}, CPU of this process per call, {args.results} calls): "
          + ", ".join(f"{k} {v:.0f} µs" for k, v in figures.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
