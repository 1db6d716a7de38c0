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
  are not measured here: tests/test_fit_input.py counts them); with ``--among N``, every new
  result is between two bots drawn at random from ``N`` bots of the field (as ``make
  bench-season``'s round-robin among its remote bots: nearly every result a pair that never met);
* the last refit twice: the ratings alone, then ratings and intervals (the full refit), and
  the intervals' share (the difference).

``--synthetic`` reads no store: the totals are those of ``make bench-season``'s history
(:func:`season_totals`: the same pairs and results as :func:`arena.store.season_seed.make_season`
draws for the default :class:`~arena.store.season_seed.SeasonSpec`, 10,000 bots and 10 million
matches, summed in memory), so the fit's costs can be measured without the seeded database.
``--repeat`` times the last refit's two fits that many times (CPU ranges on a busy machine).

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

import numpy as np
import sqlalchemy as sa

from arena.schedule.fitter import FitState, compute_fit
from arena.stats.rating import LadderTotals
from arena.store.fit_input import RANKED, Units, places_kept
from arena.store.season_seed import SeasonSpec, draw_pairs

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
        self.places = places_kept(self.raw)
        """Whether the ladder keeps the fit's places (revision 0005; the cached season is older)."""

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


def season_totals(spec: SeasonSpec) -> tuple[LadderTotals, list[str]]:
    """The ladder totals of the history :func:`arena.store.season_seed.make_season` generates for
    ``spec`` (its first draws, in its order: strengths, pairs, both halves' winners; one unit of
    two games per duplicate pair, the points of its first bot), without the matches' other
    columns; and the bot names strongest first. Memory: about 40 bytes per duplicate pair while
    summing."""
    rng, strength, order, a, b = draw_pairs(spec)
    p = spec.matches // 2
    p_a = 1.0 / (1.0 + 10.0 ** ((strength[b] - strength[a]) / 400.0))  # a beats b
    points = (rng.random((p, 2)) < p_a[:, None]).sum(axis=1).astype(float)
    totals = LadderTotals()
    names = spec.names()
    totals.add_units(names, a, b, points, np.full(p, 2.0), np.ones(p))
    return totals, [names[k] for k in order[::-1].tolist()]


def _memory() -> str:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    with open("/proc/self/status") as f:
        now = next((int(line.split()[1]) / 1024 for line in f if line.startswith("VmRSS")), 0.0)
    return f"peak {peak:.0f} MB, now {now:.0f} MB"


def _timed(f: Any, *args: Any) -> tuple[Any, float, float]:
    w, c = time.perf_counter(), time.process_time()
    out = f(*args)
    return out, time.perf_counter() - w, time.process_time() - c


def _load(args: argparse.Namespace) -> tuple[FitState, list[str]] | None:
    """The fitter's state after its first load (a store's, or the synthetic season's) and the
    bots strongest first; None (said on stderr) when there is no store."""
    state = FitState(args.game)
    if args.synthetic:
        spec = SeasonSpec()
        (state.totals, ranked), wall, cpu = _timed(season_totals, spec)
        print(f"synthetic season ({spec.bots:,} bots, {spec.matches:,} matches, window {spec.window:g}; load "
              f"average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores): summed in {wall:.2f} s wall, "
              f"{cpu:.2f} s CPU; {len(state.totals):,} pairs; memory {_memory()}")
        return state, ranked
    stores = sorted(CACHE.glob("season-*.db"), key=lambda x: x.stat().st_mtime) if CACHE.is_dir() else []
    db = Path(args.db) if args.db else (stores[-1] if stores else None)
    if db is None or not db.is_file():
        print(f"no season store at {db or CACHE}: run `make bench-season` first, name one, or use --synthetic",
              file=sys.stderr)
        return None
    store = ReadOnlyStore(db)
    print(f"{db} (load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")
    _, wall, cpu = _timed(state.update, store)
    assert state.cursor is not None
    print(f"first load: {wall:.2f} s wall, {cpu:.2f} s CPU; {len(state.totals.names):,} bots, "
          f"{len(state.totals):,} pairs, {state.cursor.results:,} results; memory {_memory()}")
    return state, [r[0] for r in store.run(RANKED, {"game": args.game})]


def main(argv: list[str] | None = None) -> int:
    """Print the fitter's costs on a season store (see the module docstring); 2 if there is none."""
    p = argparse.ArgumentParser(prog="python -m arena.tools.bench_fit", description=__doc__.split("\n")[0])
    p.add_argument("db", nargs="?", help="an SQLite season store (default: the newest in the bench's cache)")
    p.add_argument("--game", default="ecarte")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--results", type=int, default=100)
    p.add_argument("--synthetic", action="store_true", help="the season's history summed in memory, no store")
    p.add_argument("--among", type=int, default=0,
                   help="new results between random bots of this many (0: mostly rating neighbours)")
    p.add_argument("--repeat", type=int, default=1, help="times the last refit's two fits are timed (default 1)")
    args = p.parse_args(argv)
    if args.among < 0 or args.among == 1:
        p.error(f"--among takes 0 (rating neighbours) or a number of bots of at least 2, not {args.among}")
    loaded = _load(args)
    if loaded is None:
        return 2
    state, ranked = loaded
    rng = random.Random(1)
    among = rng.sample(range(len(ranked)), min(args.among, len(ranked))) if args.among else None
    for k in range(args.rounds + 1):
        rows = []
        for n in range(max(args.results // 2, 1)):
            if among is not None:
                x, y = rng.sample(among, 2)
            else:
                x = rng.randrange(len(ranked))
                y = min(len(ranked) - 1, max(0, x + rng.choice((-1, 1)) * rng.randint(1, 30))) if n % 5 else \
                    rng.randrange(len(ranked))
            if y != x:
                rows.append((ranked[x], ranked[y], rng.choice((0.0, 1.0, 1.0, 2.0)), 2, 1))
        u = Units.of(rows)
        state.totals.add_units(u.names, u.a, u.b, u.s, u.g, u.c)
        last = k == args.rounds
        for _ in range(args.repeat if last else 1):
            (ratings, _), wall, cpu = _timed(compute_fit, state.totals, state.elo, False, state.ci95)
            print(f"refit {k + 1}, ratings alone: {wall:.2f} s wall, {cpu:.2f} s CPU; memory {_memory()}")
            if last:  # the same refit with the intervals: the full refit, and the intervals' share
                (full, _), f_wall, f_cpu = _timed(compute_fit, state.totals, state.elo, True, state.ci95)
                print(f"refit {k + 1}, full (ratings and intervals): {f_wall:.2f} s wall, {f_cpu:.2f} s CPU; "
                      f"intervals {f_wall - wall:.2f} s wall, {f_cpu - cpu:.2f} s CPU; memory {_memory()}")
        state.fitted(full if last else ratings, last, 0.0)
    print(f"load average {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":  # pragma: no cover - the printed benchmark
    raise SystemExit(main())
