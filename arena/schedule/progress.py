"""Plain progress lines for a tournament whose output is not a terminal (a CI log, ``nohup``).

A progress bar redrawn in place is unreadable in a log file, so when stdout is not a TTY
``arena tournament`` prints instead, in the manner of cutechess-cli:

* every ``every`` matches, or when ``every_s`` seconds have passed since the last line, one line
  per pair that played since then::

      [40/200 12.3s] Score of greedy vs random: 18 - 2 - 0  [0.900] 20

  (wins - losses - draws of the first bot against the second, its score fraction, games);
* every ``elo_every`` matches, the running Elo of every bot (maximum likelihood fit of
  :func:`arena.stats.rating.fit` over the matches so far, ± the 95% interval)::

      [200/1000 61.0s] Elo: greedy 1737 ±48, random 1263 ±48

  (the first one says why its ± may differ from the final table's: there each duplicate pair
  is one unit of variance, :func:`arena.stats.rating.fit_units`).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from arena.stats.rating import fit_units

NOTE = ("  (± here counts each match on its own; the final table's counts the two matches of a duplicate "
        "pair as one unit, so it may differ)")
"""Said after the first running Elo line: why its ± is not the final table's."""


class PlainProgress:
    """Counts results and prints the lines above through ``out`` (default ``print``).

    ``clock`` gives seconds (``time.monotonic`` by default; tests pass a fake one)."""

    def __init__(
        self,
        every: int = 10,
        every_s: float = 30.0,
        elo_every: int = 200,
        out: Callable[[str], None] = print,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.every, self.every_s, self.elo_every = max(1, every), every_s, max(1, elo_every)
        self._elo_said = False
        self.out, self.clock = out, clock
        self.total = 0
        self.done = 0
        self.t0 = clock()
        self.last_line = self.t0
        self.tally: dict[tuple[str, str], list[int]] = {}
        self.dirty: list[tuple[str, str]] = []
        self.units: Counter[tuple[str, str, float, int]] = Counter()
        """Each distinct result ``(bot0, bot1, score of bot0, 1)`` and how often it came: at most
        three per pair of seats, whatever the number of matches (the running Elo's input)."""

    def start(self, total: int) -> None:
        """The number of matches to play (0 if unknown)."""
        self.total = total

    def result(self, bot0: str, bot1: str, winner: int | None) -> None:
        """Count one finished match (``winner``: seat 0, 1 or None for a draw or abort)."""
        self.done += 1
        a, b = sorted((bot0, bot1))
        won_by_a = None if winner is None else ((bot0, bot1)[winner] == a)
        t = self.tally.setdefault((a, b), [0, 0, 0])
        t[2 if won_by_a is None else 0 if won_by_a else 1] += 1
        if (a, b) not in self.dirty:
            self.dirty.append((a, b))
        self.units[(bot0, bot1, 0.5 if winner is None else 1.0 - winner, 1)] += 1
        now = self.clock()
        if self.done % self.every == 0 or now - self.last_line >= self.every_s or self.done == self.total:
            self.flush(now)
        if self.done % self.elo_every == 0 or self.done == self.total:
            self.elo(now)

    def _prefix(self, now: float) -> str:
        of = f"/{self.total}" if self.total else ""
        return f"[{self.done}{of} {now - self.t0:.1f}s]"

    def flush(self, now: float | None = None) -> None:
        """Print the score line of every pair that played since the last one."""
        now = self.clock() if now is None else now
        for a, b in self.dirty:
            w, lo, d = self.tally[(a, b)]
            n = w + lo + d
            self.out(f"{self._prefix(now)} Score of {a} vs {b}: {w} - {lo} - {d}  [{(w + d / 2) / n:.3f}] {n}")
        self.dirty.clear()
        self.last_line = now

    def elo(self, now: float | None = None) -> None:
        """Print the running Elo of every bot."""
        now = self.clock() if now is None else now
        ratings = fit_units(self.units, variance="model").ratings  # as fit() over the matches one by one
        note = "" if self._elo_said else NOTE
        self._elo_said = True
        self.out(f"{self._prefix(now)} Elo: " + ", ".join(f"{r.name} {r.elo:.0f} ±{r.ci95:.0f}" for r in ratings)
                 + note)

    def on_result(self, row: Any, result: Any) -> None:
        """An ``on_result`` callback of :func:`arena.schedule.tournament.run_tournament`."""
        self.result(row.bot0, row.bot1, result.winner)
