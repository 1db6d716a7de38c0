"""What the ladder's background fitter costs on a season's store (issue 21), read-only.

``python -m arena.tools.bench_fit [DB]`` (default: the newest SQLite season store ``make
bench-season`` cached in ``~/.cache/arena-bench-season``) opens the file read-only (SQLite's
``mode=ro``: nothing is written, whoever else reads it) and prints, as the fitter of
:mod:`arena.schedule.fitter` pays them:

* the first load (:meth:`arena.schedule.fitter.FitState.update`: every unit, summed per pair),
  wall and CPU seconds, and the peak and current memory of this process;
* ``--rounds`` refits of the ratings, each after ``--results`` new results added to the sums in
  memory (duplicate pairs, four in five between bots at most 30 places apart on the stored
  ladder, one in five between random bots; the store is not written, so the rows a refit reads
  are not measured here: tests/test_fit_input.py counts them);
* the last refit twice: the ratings alone, then ratings and intervals (the full refit), and
  the intervals' share (the difference).

CPU seconds are this process's (the machine may be shared; the wall time then says little).
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import sqlite3
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from arena.schedule.fitter import FitState, compute_fit
from arena.store.fit_input import RANKED, Units

CACHE = Path.home() / ".cache" / "arena-bench-season"
"""Where ``make bench-season`` caches its seeded stores (``arena.tools.bench_season``)."""


class ReadOnlyStore:
    """What :mod:`arena.store.fit_input` reads through (``run``, ``connection.snapshot()``,
    ``dialect``), on an SQLite file opened read-only (``mode=ro``): the bench never writes the
    cached store, nor stamps or upgrades its schema. ``raw`` is the driver's connection."""

    dialect = "sqlite"

    def __init__(self, path: Path) -> None:
        self.raw = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, isolation_level=None)
        self._conn = sa.create_engine("sqlite://", creator=lambda: self.raw).connect()
        self.connection = self

    def run(self, statement: Any, params: Any = None) -> Any:
        """Run a store statement on the file."""
        return self._conn.execute(statement, params)

    @contextmanager
    def snapshot(self) -> Any:
        """One read transaction (SQLite's deferred ``BEGIN``); inside one already open, it joins it
        (as the store's own: the chunked first load reads the new matches inside a range's)."""
        if self.raw.in_transaction:
            yield
            return
        self._conn.exec_driver_sql("BEGIN")
        try:
            yield
        finally:
            self._conn.exec_driver_sql("ROLLBACK")


def _memory() -> str:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    with open("/proc/self/status") as f:
        now = next((int(line.split()[1]) / 1024 for line in f if line.startswith("VmRSS")), 0.0)
    return f"peak {peak:.0f} MB, now {now:.0f} MB"


def _timed(f: Any, *args: Any) -> tuple[Any, float, float]:
    w, c = time.perf_counter(), time.process_time()
    out = f(*args)
    return out, time.perf_counter() - w, time.process_time() - c


def main(argv: list[str] | None = None) -> int:
    """Print the fitter's costs on a season store (see the module docstring); 2 if there is none."""
    p = argparse.ArgumentParser(prog="python -m arena.tools.bench_fit", description=__doc__.split("\n")[0])
    p.add_argument("db", nargs="?", help="an SQLite season store (default: the newest in the bench's cache)")
    p.add_argument("--game", default="ecarte")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--results", type=int, default=100)
    args = p.parse_args(argv)
    stores = sorted(CACHE.glob("season-*.db"), key=lambda x: x.stat().st_mtime) if CACHE.is_dir() else []
    db = Path(args.db) if args.db else (stores[-1] if stores else None)
    if db is None or not db.is_file():
        print(f"no season store at {db or CACHE}: run `make bench-season` first, or name one", file=sys.stderr)
        return 2
    store = ReadOnlyStore(db)
    print(f"{db} (load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")
    state = FitState(args.game)
    _, wall, cpu = _timed(state.update, store)
    assert state.cursor is not None
    print(f"first load: {wall:.2f} s wall, {cpu:.2f} s CPU; {len(state.totals.names):,} bots, "
          f"{len(state.totals):,} pairs, {state.cursor.results:,} results; memory {_memory()}")
    rng = random.Random(1)
    ranked = [r[0] for r in store.run(RANKED, {"game": args.game})]
    for k in range(args.rounds + 1):
        rows = []
        for n in range(max(args.results // 2, 1)):
            x = rng.randrange(len(ranked))
            y = min(len(ranked) - 1, max(0, x + rng.choice((-1, 1)) * rng.randint(1, 30))) if n % 5 else \
                rng.randrange(len(ranked))
            if y != x:
                rows.append((ranked[x], ranked[y], rng.choice((0.0, 1.0, 1.0, 2.0)), 2, 1))
        u = Units.of(rows)
        state.totals.add_units(u.names, u.a, u.b, u.s, u.g, u.c)
        intervals = k == args.rounds
        (ratings, _), wall, cpu = _timed(compute_fit, state.totals, state.elo, False, state.ci95)
        print(f"refit {k + 1}, ratings alone: {wall:.2f} s wall, {cpu:.2f} s CPU; memory {_memory()}")
        if intervals:  # the same refit with the intervals: the full refit, and the intervals' share
            (ratings, _), f_wall, f_cpu = _timed(compute_fit, state.totals, state.elo, True, state.ci95)
            print(f"refit {k + 1}, full (ratings and intervals): {f_wall:.2f} s wall, {f_cpu:.2f} s CPU; "
                  f"intervals {f_wall - wall:.2f} s wall, {f_cpu - cpu:.2f} s CPU; memory {_memory()}")
        state.fitted(ratings, intervals, 0.0)
    print(f"load average {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":  # pragma: no cover - the printed benchmark
    raise SystemExit(main())
