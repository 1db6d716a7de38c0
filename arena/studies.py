"""Seeded simulation studies of the statistics: the ladder's rating (placement time, order
dependence, error as games grow) and the SPRT's error rates and length, each next to the
method it replaced. The tests run small versions (tests/test_ladder.py, tests/test_sprt.py);
``python -m arena.studies`` (or ``make study``) prints the larger ones.

Everything here is pure simulation on the logistic Elo model (an advantage of ``d`` Elo points
wins with probability ``1 / (1 + 10**(-d/400))``); no game is played.
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Callable

from arena.rating import ANCHOR, elo_update, expected_score, fit_units

# ---------------------------------------------------------------------- the ladder

Result = tuple[str, str, float]


def _play(rng: random.Random, true: dict[str, float], a: str, b: str) -> Result:
    return a, b, 1.0 if rng.random() < expected_score(true[a] - true[b]) else 0.0


def field(rng: random.Random, bots: int = 6, spread: float = 100.0) -> dict[str, float]:
    """True ratings of ``bots`` bots, normal around 0 with SD ``spread`` Elo."""
    return {f"f{i}": rng.gauss(0.0, spread) for i in range(bots)}


def field_results(rng: random.Random, true: dict[str, float], games: int) -> list[Result]:
    """``games`` matches between random pairs of the field."""
    names = sorted(true)
    return [_play(rng, true, *rng.sample(names, 2)) for _ in range(games)]


class Fitted:
    """The ladder as it is now: the maximum-likelihood fit over every result, warm-started from
    the previous fit (:mod:`arena.ladder`). Refitted when :attr:`elo` is read after a change
    (the store refits after every result; reading after every result here does the same)."""

    name = "ML fit"

    def __init__(self, results: list[Result]) -> None:
        self.results = list(results)
        self._elo: dict[str, float] = {}
        self._stale = True

    @property
    def elo(self) -> dict[str, float]:
        """Elo by bot."""
        if self._stale:
            units = [(a, b, s, 1) for a, b, s in self.results]
            fitted = fit_units(units, variance="model", start=self._elo)  # same point estimate as robust
            self._elo = {r.name: r.elo for r in fitted.ratings}
            self._stale = False
        return self._elo

    def add(self, result: Result) -> None:
        self.results.append(result)
        self._stale = True


class Incremental:
    """The ladder as it was: incremental Elo with K = 20, every bot starting at 1500."""

    name = "Elo K=20"

    def __init__(self, results: list[Result]) -> None:
        self.elo: dict[str, float] = {}
        for r in results:
            self.add(r)

    def add(self, result: Result) -> None:
        a, b, s = result
        self.elo[a], self.elo[b] = elo_update(self.elo.get(a, ANCHOR), self.elo.get(b, ANCHOR), s)


Ladder = Callable[[list[Result]], "Fitted | Incremental"]


def placement_games(ladder: Ladder, seed: int, field_games: int = 300, advantage: float = 200.0,
                    within: float = 50.0, cap: int = 200) -> int:
    """Games a newcomer ``advantage`` Elo above the field's mean needs before its rating, minus
    the mean rating of the field, first comes within ``within`` Elo of ``advantage`` (``cap + 1``
    if it never does in ``cap`` games). The field of six has played ``field_games`` matches
    among itself first; the newcomer then plays random members of the field."""
    rng = random.Random(seed)
    true = field(rng)
    true_mean = statistics.fmean(true.values())
    names = sorted(true)
    lad = ladder(field_results(rng, true, field_games))
    true["new"] = true_mean + advantage
    for n in range(1, cap + 1):
        opp = rng.choice(names)
        lad.add(_play(rng, true, "new", opp) if rng.random() < 0.5 else _play(rng, true, opp, "new"))
        est = lad.elo["new"] - statistics.fmean(lad.elo[x] for x in names)
        if abs(est - advantage) <= within:
            return n
    return cap + 1


def order_dependence(ladder: Ladder, seed: int, games: int = 600, orders: int = 8) -> tuple[float, float]:
    """Play ``games`` results among a field of six once, then feed the same results to the
    ladder in ``orders`` random orders. Returns ``(SD of a bot's final rating across orders,
    averaged over bots, in Elo; fraction of orders whose ranking differs from the first's)``."""
    rng = random.Random(seed)
    true = field(rng)
    results = field_results(rng, true, games)
    finals = []
    for _ in range(orders):
        shuffled = results[:]
        rng.shuffle(shuffled)
        lad = ladder(shuffled[:1])
        for r in shuffled[1:]:
            lad.add(r)
        finals.append(dict(lad.elo))
    names = sorted(true)
    sd = statistics.fmean(statistics.pstdev(f[x] for f in finals) for x in names)
    rank = [sorted(names, key=lambda x: -f[x]) for f in finals]
    changed = sum(r != rank[0] for r in rank[1:]) / max(len(rank) - 1, 1)
    return sd, changed


def error_curve(ladder: Ladder, seed: int, checkpoints: tuple[int, ...] = (100, 400, 1600),
                bots: int = 8) -> list[float]:
    """RMS error (Elo) of the ratings, each centred on its mean, after each checkpoint number
    of games among ``bots`` bots playing random pairs."""
    rng = random.Random(seed)
    true = field(rng, bots, 150.0)
    names = sorted(true)
    tm = statistics.fmean(true.values())
    lad = ladder([])
    out = []
    played = 0
    for cp in checkpoints:
        for _ in range(cp - played):
            lad.add(_play(rng, true, *rng.sample(names, 2)))
        played = cp
        em = statistics.fmean(lad.elo.get(x, ANCHOR) for x in names)
        out.append(math.sqrt(statistics.fmean((lad.elo.get(x, ANCHOR) - em - (true[x] - tm)) ** 2 for x in names)))
    return out


def ladder_study(seeds: int = 101) -> str:
    """The larger ladder study, as text: placement (median games), order dependence and the
    error curve for the fit and for incremental Elo."""
    lines = ["ladder study (logistic model; see arena/studies.py)"]
    for ladder in (Incremental, Fitted):
        place = [placement_games(ladder, s) for s in range(seeds)]
        order = [order_dependence(ladder, s) for s in range(max(seeds // 10, 3))]
        curve = [error_curve(ladder, s) for s in range(max(seeds // 20, 3))]
        rms = [math.sqrt(statistics.fmean(c[i] ** 2 for c in curve)) for i in range(3)]
        lines.append(
            f"  {ladder.name:9}: newcomer +200 within 50 Elo after a median of {statistics.median(place):.0f} games "
            f"(mean {statistics.fmean(place):.1f}); same results reordered: rating SD "
            f"{statistics.fmean(o[0] for o in order):.1f} Elo, ranking changed in "
            f"{100 * statistics.fmean(o[1] for o in order):.0f}% of orders; RMS error after 100/400/1600 games: "
            + "/".join(f"{e:.0f}" for e in rms)
        )
    return "\n".join(lines)


if __name__ == "__main__":  # pragma: no cover - the printed study
    print(ladder_study())
