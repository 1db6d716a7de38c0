"""Seeded simulation studies of the statistics: the ladder's rating (placement time, order
dependence, error as games grow) and the SPRT's error rates and length, each next to the
method it replaced. The tests run small versions (tests/test_ladder.py, tests/test_sprt.py);
``python -m arena.stats.studies`` (or ``make study``) prints the larger ones.

Everything here is pure simulation on the logistic Elo model (an advantage of ``d`` Elo points
wins with probability ``1 / (1 + 10**(-d/400))``); no game is played.
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Callable

from arena.stats.rating import ANCHOR, elo_update, expected_score, fit_units
from arena.stats.sprt import SPRT

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
    the previous fit (:mod:`arena.stats.ladder`). Refitted when :attr:`elo` is read after a change
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
                    within: float = 50.0, cap: int = 200, errors: list[float] | None = None) -> int:
    """Games a newcomer ``advantage`` Elo above the field's mean needs before its rating, minus
    the mean rating of the field, first comes within ``within`` Elo of ``advantage`` (``cap + 1``
    if it never does in ``cap`` games). The field of six has played ``field_games`` matches
    among itself first; the newcomer then plays random members of the field. With ``errors``
    given, the game goes on to ``cap`` and the error after each game is appended to it."""
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
        if errors is not None:
            errors.append(abs(est - advantage))
        elif abs(est - advantage) <= within:
            return n
    if errors is not None:
        return next((i + 1 for i, e in enumerate(errors) if e <= within), cap + 1)
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
    lines = ["ladder study (logistic model; see arena/stats/studies.py)"]
    for ladder in (Incremental, Fitted):
        place = [placement_games(ladder, s) for s in range(seeds)]
        paths: list[list[float]] = [[] for _ in range(seeds)]
        for s in range(seeds):
            placement_games(ladder, s, cap=20, errors=paths[s])
        at10 = statistics.fmean(p[9] <= 50.0 for p in paths)
        med10 = statistics.median(p[9] for p in paths)
        order = [order_dependence(ladder, s) for s in range(max(seeds // 10, 3))]
        curve = [error_curve(ladder, s) for s in range(max(seeds // 20, 3))]
        rms = [math.sqrt(statistics.fmean(c[i] ** 2 for c in curve)) for i in range(3)]
        lines.append(
            f"  {ladder.name:9}: newcomer +200 within 50 Elo after a median of {statistics.median(place):.0f} games "
            f"(mean {statistics.fmean(place):.1f}), within 50 Elo after its 10th game in {100 * at10:.0f}% of runs "
            f"(median error then {med10:.0f} Elo); same results reordered: rating SD "
            f"{statistics.fmean(o[0] for o in order):.1f} Elo, ranking changed in "
            f"{100 * statistics.fmean(o[1] for o in order):.0f}% of orders; RMS error after 100/400/1600 games: "
            + "/".join(f"{e:.0f}" for e in rms)
        )
    return "\n".join(lines)


# ---------------------------------------------------------------------- the SPRT


def pair_score(rng: random.Random, elo: float, luck: float = 1.0) -> int:
    """The tested bot's score (0, 1 or 2) over a duplicate pair: ``elo`` its advantage; the deal
    gives the seat holding the good cards ``luck`` extra natural-log strength (sign random per
    deal, flipped by the seat swap), so the two matches of a pair are negatively correlated.
    The strength is set so that the expected score of a match is the logistic one of ``elo``."""
    theta = _strength(elo, luck)
    u = luck if rng.random() < 0.5 else -luck
    return sum(rng.random() < 1.0 / (1.0 + math.exp(-(theta + sign * u))) for sign in (1, -1))


def _strength(elo: float, luck: float) -> float:
    """``theta`` with ``(sigma(theta + luck) + sigma(theta - luck)) / 2 = expected_score(elo)``
    (bisection; the mean of the two is increasing in ``theta``)."""
    target = expected_score(elo)
    lo, hi = -20.0, 20.0
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        mean = 0.5 * sum(1.0 / (1.0 + math.exp(-(mid + u))) for u in (luck, -luck))
        lo, hi = (mid, hi) if mean < target else (lo, mid)
    return 0.5 * (lo + hi)


def sprt_runs(true_elo: float, runs: int, seed: int, elo0: float = 0.0, elo1: float = 60.0,
              alpha: float = 0.05, beta: float = 0.05, luck: float = 1.0,
              cap: int = 100_000) -> list[tuple[str, int, str, int]]:
    """``runs`` SPRTs of ``elo0`` against ``elo1`` on pairs of a bot ``true_elo`` better, each
    judged on one and the same LLR path by both stopping rules: ``(status with the overshoot
    correction, pairs, status with Wald's plain bounds, pairs)``. The corrected bounds lie
    inside Wald's, so the corrected test stops first; the path goes on until Wald's stops."""
    rng = random.Random(seed)
    out = []
    for _ in range(runs):
        t = SPRT(elo0, elo1, alpha, beta, outcomes=(0, 1, 2), overshoot=True)
        first: tuple[str, int] | None = None
        lower, upper = t.bounds
        for n in range(1, cap + 1):
            t.add(pair_score(rng, true_elo, luck))
            if first is None and t.status() != "continue":
                first = (t.status(), n)
            value = t.llr()
            if value >= upper or value <= lower:
                out.append((*(first or ("continue", cap)), "H1" if value >= upper else "H0", n))
                break
        else:
            out.append((*(first or ("continue", cap)), "continue", cap))
    return out


def sprt_summary(runs: list[tuple[str, int, str, int]], wrong: str) -> tuple[float, float, float, float]:
    """``(error rate corrected, mean pairs corrected, error rate Wald, mean pairs Wald)``;
    ``wrong`` is the status that is an error at this true Elo."""
    n = len(runs)
    return (sum(r[0] == wrong for r in runs) / n, statistics.fmean(r[1] for r in runs),
            sum(r[2] == wrong for r in runs) / n, statistics.fmean(r[3] for r in runs))


def sprt_study(runs: int = 1000) -> str:
    """The larger SPRT study, as text: error rates and average pairs at elo0 and elo1, with and
    without the overshoot correction, for two widths of the test."""
    lines = [f"SPRT study (alpha = beta = 0.05, duplicate pairs with deal luck, {runs} runs per line)"]
    for elo0, elo1 in ((0.0, 60.0), (0.0, 20.0)):
        for true, wrong in ((elo0, "H1"), (elo1, "H0")):
            k = runs if elo1 - elo0 > 30 else max(runs // 4, 50)
            e_c, n_c, e_w, n_w = sprt_summary(sprt_runs(true, k, seed=int(true) + 7, elo0=elo0, elo1=elo1), wrong)
            lines.append(
                f"  H0 {elo0:g} H1 {elo1:g}, true {true:g} ({k} runs): Wald error {e_w:.3f}, {n_w:.0f} pairs; "
                f"overshoot-corrected error {e_c:.3f}, {n_c:.0f} pairs ({100 * (1 - n_c / n_w):.1f}% fewer)"
            )
    return "\n".join(lines)


if __name__ == "__main__":  # pragma: no cover - the printed study
    print(ladder_study())
    print(sprt_study())
