"""The web pages at the scale of a season: ``python -m arena.tools.bench_pages --db X``.

A season has 10,000 bots and 10 million matches; every page and ``/api`` endpoint must answer
with a p99 under :data:`TARGET_P99_MS` (issue 21). This tool

1. seeds a store (``--seed-matches N``, with ``--seed-bots``) with a synthetic history in one
   transaction of bulk inserts (:func:`arena.store.seed.season`); or uses the store as it is;
2. starts ``arena serve`` on it (no bot plays: the pages alone are measured), unless ``--url``
   names a server already running;
3. asks each page :data:`REQUESTS` times in turn over one kept-alive connection, from this
   process (the server runs in its own), and prints p50, p99 and the largest time per page
   (ms), and the size of ``/metrics``. It exits 1 when a p99 is over the target.

The season benchmark calls :func:`page_p99s` with its own server's base URL: the p99 (ms) of the
five representative pages of :data:`REPRESENTATIVE`, whose URLs (bot names, cursors deep in the
lists) are found through the API itself (:func:`representative_pages`), so they suit any store.

Figures depend on the machine: take them on an idle one, and say so when it was not.
"""

from __future__ import annotations

import argparse
import http.client
import json
import math
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

from arena.store.seed import is_empty, season
from arena.store.sqlite import Store

TARGET_P99_MS = 100.0
"""The issue's target for every page and endpoint."""
REQUESTS = 200
"""Requests per page (cycling through its URLs)."""
REPRESENTATIVE = ("leaderboard", "leaderboard_deep", "leaderboard_search", "history_deep", "bot_history_deep")
"""The five pages whose p99 :func:`page_p99s` gives by default."""
EXTRA = ("page", "api_matches", "api_status", "metrics", "replay_missing")
"""The other routes measured by the command (cheap: in memory, or one index probe)."""


# ------------------------------------------------------------------------------ measuring


class _Client:
    """One kept-alive HTTP/1.1 connection to ``base`` (``http://host:port``)."""

    def __init__(self, base: str, timeout: float = 30.0) -> None:
        parts = urlsplit(base)
        self.host, self.port, self.timeout = parts.hostname or "127.0.0.1", parts.port or 80, timeout
        self.conn: http.client.HTTPConnection | None = None

    def get(self, path: str) -> tuple[int, bytes]:
        """``GET path``: ``(status, body)``; reconnects once if the connection was closed."""
        for attempt in (0, 1):
            if self.conn is None:
                self.conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
            try:
                self.conn.request("GET", path)
                r = self.conn.getresponse()
                return r.status, r.read()
            except (http.client.HTTPException, OSError):
                self.conn.close()
                self.conn = None
                if attempt:
                    raise
        raise AssertionError("unreachable")

    def json(self, path: str) -> Any:
        status, body = self.get(path)
        if status != 200:
            raise RuntimeError(f"GET {path} answered {status}: {body[:200]!r}")
        return json.loads(body)

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()


def representative_pages(base_url: str, rng_seed: int = 7, variants: int = 20) -> dict[str, list[str]]:
    """The URLs (paths) of the pages to measure on the server at ``base_url``, found through its
    own API so that they suit any store: ``{page: [paths]}`` for the pages of
    :data:`REPRESENTATIVE` and :data:`EXTRA`, each with up to ``variants`` paths (bots and
    cursors spread over the field and the history). Raises ``RuntimeError`` if the server
    answers a page with an error, or has no rated bot or no finished match."""
    rng = random.Random(rng_seed)
    c = _Client(base_url)
    try:
        top = c.json("/api/leaderboard")
        if not top["leaderboard"]:
            raise RuntimeError("the server has no rated bot: seed the store first (--seed-matches)")
        newest = c.json("/api/history")
        if not newest["matches"]:
            raise RuntimeError("the server has no finished match: seed the store first (--seed-matches)")
        top_id = newest["matches"][0]["id"]
        deep_ids = [rng.randint(1, max(1, top_id)) for _ in range(variants)]
        names = set()
        for before in deep_ids:  # bots anywhere in the ranking: those of matches anywhere in the history
            for m in c.json(f"/api/history?before={before}&limit=3")["matches"]:
                names.update(m["bots"])
        pool = sorted(names) or [r["bot"] for r in top["leaderboard"]]
        names = rng.sample(pool, min(len(pool), variants))
    finally:
        c.close()
    return {
        "leaderboard": ["/api/leaderboard"],
        "leaderboard_deep": [f"/api/leaderboard?after={quote(n)}" for n in names],
        "leaderboard_search": [f"/api/leaderboard?q={quote(n[:rng.randint(2, 6)])}" for n in names],
        "history_deep": [f"/api/history?before={i}" for i in deep_ids],
        "bot_history_deep": [f"/api/history?bot={quote(n)}&before={i}" for n, i in zip(names, deep_ids, strict=False)],
        "page": ["/"],
        "api_matches": ["/api/matches"],
        "api_status": ["/api/status"],
        "metrics": ["/metrics"],
        "replay_missing": ["/api/replay/t0-m0"],
    }


def percentile(values: list[float], q: float) -> float:
    """The ``q`` quantile (0-1) of ``values`` by the nearest-rank rule."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def measure(base_url: str, pages: dict[str, list[str]], requests: int = REQUESTS) -> dict[str, dict[str, float]]:
    """Ask each page ``requests`` times (cycling through its paths) over one kept-alive
    connection: ``{page: {"p50", "p99", "max" (ms), "bytes" (largest body)}}``, after one warm-up
    round of every path. Raises ``RuntimeError`` when a page answers other than 200 (a
    ``replay_missing`` page: 404)."""
    c = _Client(base_url)
    out = {}
    try:
        for name, paths in pages.items():
            expected = 404 if name == "replay_missing" else 200
            for path in paths:
                c.get(path)
            times, size = [], 0
            for i in range(requests):
                path = paths[i % len(paths)]
                t = time.perf_counter()
                status, body = c.get(path)
                times.append((time.perf_counter() - t) * 1000)
                if status != expected:
                    raise RuntimeError(f"GET {path} answered {status}: {body[:200]!r}")
                size = max(size, len(body))
            out[name] = {"p50": percentile(times, 0.5), "p99": percentile(times, 0.99), "max": max(times),
                         "bytes": size}
    finally:
        c.close()
    return out


def page_p99s(base_url: str, pages: tuple[str, ...] = REPRESENTATIVE, requests: int = REQUESTS) -> dict[str, float]:
    """The p99 in ms of each of ``pages`` (names of :func:`representative_pages`; by default the
    five of :data:`REPRESENTATIVE`) on the server at ``base_url`` (``http://host:port``), over
    ``requests`` requests each: what the season benchmark reports."""
    found = representative_pages(base_url)
    return {name: figures["p99"] for name, figures in measure(base_url, {p: found[p] for p in pages},
                                                              requests).items()}


# ------------------------------------------------------------------------------ the command


def serve(db: str, folder: Path) -> tuple[subprocess.Popen, str]:
    """Start ``arena serve`` on ``db`` (no bot, no match) and return it with its web base URL."""
    config = folder / "contest.toml"
    config.write_text(f"name = \"bench-pages\"\ndb = {json.dumps(db)}\nlogs = {json.dumps(str(folder / 'logs'))}\n"
                      "http_port = 0\nmax_matches = 0\ntrust_bots = true\nshutdown_grace_s = 0.5\n"
                      "[server]\nport = 0\n")
    proc = subprocess.Popen([sys.executable, "-m", "arena.cli", "serve", "--config", str(config)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, PYTHONUNBUFFERED="1"))
    deadline = time.monotonic() + 600  # a first open of a large store builds its indexes
    assert proc.stdout is not None
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        if "http://" in line:
            return proc, "http://" + line.split("http://", 1)[1].split("/", 1)[0]
    proc.kill()
    raise RuntimeError(f"arena serve did not start: {proc.stderr.read()[-2000:] if proc.stderr else ''}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m arena.tools.bench_pages", description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", help="the store (an SQLite file or a postgresql:// URL)")
    parser.add_argument("--url", help="measure the server at this base URL instead of starting one")
    parser.add_argument("--seed-matches", type=int, default=0, help="first seed an empty store with this many matches")
    parser.add_argument("--seed-bots", type=int, default=10_000, help="bots of the seeded store (default 10,000)")
    parser.add_argument("--requests", type=int, default=REQUESTS, help=f"requests per page (default {REQUESTS})")
    parser.add_argument("--target-ms", type=float, default=TARGET_P99_MS, help="the p99 to meet (ms)")
    args = parser.parse_args(argv)
    if not args.db and not args.url:
        parser.error("give --db (a store to serve) or --url (a server to measure)")
    if args.seed_matches:

        store = Store(args.db)
        if not is_empty(store):
            print(f"{args.db} is not empty: seed a new store", file=sys.stderr)
            return 2

        def progress(done: int, total: int) -> None:
            print(f"\rseeding: {done:,} / {total:,} matches", end="", flush=True)

        info = season(store, args.seed_bots, args.seed_matches, progress=progress)
        store.close()
        print(f"\nseeded {info['bots']:,} bots and {info['matches']:,} matches in {info['seconds']:.0f} s")
    proc = None
    with tempfile.TemporaryDirectory(prefix="bench-pages-") as tmp:
        try:
            if args.url:
                base = args.url.rstrip("/")
            else:
                t = time.perf_counter()
                proc, base = serve(args.db, Path(tmp))
                print(f"arena serve answered at {base} after {time.perf_counter() - t:.1f} s")
            figures = measure(base, representative_pages(base), args.requests)
        finally:
            if proc is not None:
                proc.terminate()
                proc.wait(timeout=60)
    print(f"{'page':20} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8} {'bytes':>9}")
    missed = []
    for name, f in figures.items():
        flag = "" if f["p99"] < args.target_ms else f"  over {args.target_ms:g} ms"
        print(f"{name:20} {f['p50']:8.1f} {f['p99']:8.1f} {f['max']:8.1f} {f['bytes']:9,}{flag}")
        if flag:
            missed.append(name)
    if missed:
        print(f"p99 over {args.target_ms:g} ms: {', '.join(missed)}")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
