"""The contest's ladder pairing: which two ready bots play next (``arena serve``).

A contest pairs continuously among the bots that are connected and idle. Each decision costs the
same on the last day of a season as on the first: it never reads the history nor the database,
only the pair counts of the connected bots (:class:`PairCounts`: each bot's row of the store's
``pair_counts`` read once when it connects, then kept up to date by the contest's own results)
and the ratings of the last background fit (held in memory, :attr:`LadderPairing.elo`).

Rules (``pairing`` in the contest file):

* ``"round-robin"``: bots that have met least play next.
* ``"rating"``: bots close on the persistent ladder play next (fewest meetings breaking ties).

Small fields (at most :data:`SMALL_FIELD` connected bots) are paired exactly as a full
round-robin would be: the best pair among all ready pairs; in a round-robin, while matches are
in play, only a pair that has met no more than the least-met connected pair may start (with
few bots the idle ones are often the pair that just played: rather than replay it, the
scheduler waits for the busy bot whose meeting is due).

Larger fields choose among a bounded set of candidates, so a decision costs ``O(ready bots)``
in memory and :data:`CANDIDATES` dictionary lookups, never the square of the field:

* the *anchor* is the ready bot that has waited longest (ready since the earliest moment:
  bots that just connected first, then by the order in which their last unit ended, then
  by name);
* round-robin: the anchor meets the least-met of :data:`CANDIDATES` ready bots drawn at random
  (seeded by the contest's seed);
* rating: the anchor meets, among its :data:`CANDIDATES` nearest ready bots on the ladder, the
  nearest (fewest meetings, then name, breaking ties).

Fairness this keeps: no ready bot waits while bots that became ready after it are paired
(first come, first served by the anchor rule), so every bot plays at the rate its own speed
allows; in a round-robin the least-met of a random sample of 32 is, for a bot with ``m``
opponents, among the least-met ``m/33`` of them on average, so meeting counts stay even across
the field; the rating rule keeps each bot's opponents within its 32 nearest ready rivals.
"""

from __future__ import annotations

import heapq
import random
from collections.abc import Callable, Collection, Mapping
from typing import Literal

SMALL_FIELD = 16
"""Up to this many connected bots, pairing considers every ready pair (see the module docstring)."""
CANDIDATES = 32
"""Opponents considered for the anchor in larger fields."""
FIRST_ELO = 1500.0
"""The rating assumed for a bot not yet on the ladder (the fit's mean)."""

Counts = Callable[[str, list[str]], Mapping[str, int]]
"""``counts(bot, others) -> {other: finished matches between them}`` (missing: none):
:meth:`PairCounts.counts` (in memory) or :meth:`arena.store.sqlite.Store.pair_counts` for one game."""

Load = Callable[[str], Mapping[str, int]]
"""``load(bot) -> {opponent: finished matches between them}``: every opponent ``bot`` has met
(:meth:`arena.store.sqlite.Store.opponents` for one game: one index range of ``pair_counts``)."""


class PairCounts:
    """The pair counts of the connected bots, in memory, so that a pairing decision runs no SQL.

    ``rows[bot]`` is ``{opponent: finished (not aborted) matches between them}`` for every bot
    loaded. :meth:`sync` loads a bot when it connects (``load``: one indexed read, its row of
    ``pair_counts``), again when it reconnects (a new connection object: what other processes
    recorded meanwhile is picked up), and forgets a bot once it is gone; :meth:`add` counts
    each result the contest commits, in the same trio step as the commit, so a row is always
    what the store holds. A bot that reconnects while its unit is in play is reloaded once the
    unit has ended (its results are then all committed), never in between.

    Memory: the rows of the connected bots, one entry per opponent each has met, whatever the
    number of matches (a season's bot meets a few hundred). Raises whatever ``load`` raises
    (a storage error, for the caller's health check)."""

    def __init__(self, load: Load) -> None:
        self.load = load
        self.rows: dict[str, dict[str, int]] = {}
        self._conn: dict[str, object] = {}
        self.loads = 0
        """Rows read from the store so far (a statistic for tests and the curious)."""

    def sync(self, connected: Mapping[str, object], busy: Collection[str] = ()) -> None:
        """Bring the rows in line with ``connected`` (bot -> its connection object, any object
        whose identity changes when the bot reconnects): load the bots not loaded for that
        connection (not while ``busy``: in a unit), forget those gone. Cost: one read per bot
        (re)connected since the last call; none otherwise."""
        for gone in [b for b in self.rows if b not in connected]:
            del self.rows[gone]
            self._conn.pop(gone, None)
        for bot, conn in connected.items():
            if self._conn.get(bot) is not conn and not (bot in busy and bot in self.rows):
                self.rows[bot] = dict(self.load(bot))
                self._conn[bot] = conn
                self.loads += 1

    def add(self, a: str, b: str) -> None:
        """One more finished (not aborted) match between ``a`` and ``b``, just committed."""
        if (row := self.rows.get(a)) is not None:
            row[b] = row.get(b, 0) + 1
        if (row := self.rows.get(b)) is not None:
            row[a] = row.get(a, 0) + 1

    def counts(self, bot: str, others: list[str]) -> dict[str, int]:
        """``{other: matches met}`` for each of ``others`` that ``bot`` has met (a :data:`Counts`),
        from memory. A bot not loaded (never synced) is loaded here first."""
        row = self.rows.get(bot)
        if row is None:
            row = self.rows[bot] = dict(self.load(bot))
            self.loads += 1
        return {o: n for o in others if (n := row.get(o))}


class LadderPairing:
    """The pairing rule of a contest (see the module docstring). ``counts`` reads pair counts;
    ``seed`` seeds the candidate draw. Tell it :meth:`idle` when a bot's unit ends (or it
    connects); set :attr:`elo` (bot -> Elo) after each fit."""

    def __init__(self, rule: Literal["round-robin", "rating"], counts: Counts, seed: int = 0) -> None:
        self.rule = rule
        self.counts = counts
        self.rng = random.Random(f"ladder-pairing:{seed}")
        self.elo: dict[str, float] = {}
        self._turn: dict[str, int] = {}
        self._clock = 0

    def idle(self, *bots: str) -> None:
        """``bots`` are idle again (their unit ended): they queue behind the bots already waiting."""
        for bot in bots:
            self._clock += 1
            self._turn[bot] = self._clock

    def choose(self, ready: list[str], connected: list[str], running: int) -> tuple[str, str] | None:
        """The pair to play next among ``ready`` (idle, connected bots), or None to wait.
        ``connected``: every connected bot (busy ones included); ``running``: units in play."""
        if len(ready) < 2:
            return None
        if len(connected) <= SMALL_FIELD:
            return self._small(sorted(ready), sorted(connected), running)
        anchor = min(ready, key=lambda b: (self._turn.get(b, 0), b))
        others = [b for b in ready if b != anchor]
        if self.rule == "rating":
            mine = self.elo.get(anchor, FIRST_ELO)
            pool = heapq.nsmallest(CANDIDATES, others, key=lambda b: (abs(self.elo.get(b, FIRST_ELO) - mine), b))
        else:
            pool = others if len(others) <= CANDIDATES else self.rng.sample(others, CANDIDATES)
        met = self.counts(anchor, pool)
        if self.rule == "rating":
            best = min(pool, key=lambda b: (abs(self.elo.get(b, FIRST_ELO) - mine), met.get(b, 0), b))
        else:
            best = min(pool, key=lambda b: (met.get(b, 0), self._turn.get(b, 0), b))
        return (anchor, best) if anchor < best else (best, anchor)

    def _small(self, ready: list[str], connected: list[str], running: int) -> tuple[str, str] | None:
        """Every ready pair of a small field (at most :data:`SMALL_FIELD` connected bots)."""
        met: dict[tuple[str, str], int] = {}
        for i, a in enumerate(connected):
            later = connected[i + 1:]
            for b, n in self.counts(a, later).items():
                met[(a, b)] = n
        pairs = [(a, b) for i, a in enumerate(ready) for b in ready[i + 1:]]
        if self.rule == "round-robin" and running:
            least = min((met.get((a, b), 0) for i, a in enumerate(connected) for b in connected[i + 1:]), default=0)
            pairs = [p for p in pairs if met.get(p, 0) <= least]
            if not pairs:
                return None
        if self.rule == "rating":
            return min(pairs, key=lambda p: (abs(self.elo.get(p[0], FIRST_ELO) - self.elo.get(p[1], FIRST_ELO)),
                                             met.get(p, 0), p))
        return min(pairs, key=lambda p: (met.get(p, 0), p))
