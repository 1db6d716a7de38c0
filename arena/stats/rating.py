"""Ratings on the Elo scale.

* :func:`fit` / :func:`fit_ratings` - a maximum-likelihood Bradley-Terry fit over all results of
  a tournament (as BayesElo and Ordo do): order-independent, draws count as half a win, the
  mean rating anchored at :data:`ANCHOR`, with a 95% interval per bot from the observed
  Fisher information. A weak prior of one virtual draw against an opponent of strength 0
  (natural-log scale) keeps a bot that won or lost everything finite. :func:`fit` also returns
  the covariance matrix of the ratings, from which :meth:`Fit.los` gives the likelihood of
  superiority.
* :func:`fit_pairs` - the same fit for results grouped in duplicate pairs (two matches on one
  deal seed with the seats swapped), with intervals that take the pair as the unit of variance
  (see its docstring).
* :func:`fit_units` - the general form: any units of ``g`` games (a match, a duplicate pair,
  or the ``g`` twin deals of a duplicate-deals pair), optionally warm-started from earlier
  ratings (the persistent ladder, :mod:`arena.stats.ladder`, refits this way after every result).
* :func:`elo_update` - the classic incremental Elo step with K-factor :data:`K_FACTOR` (kept
  for comparison in the studies of :mod:`arena.stats.studies`; the ladder no longer uses it).

Elo scale: an advantage of ``d`` points means an expected score of ``1 / (1 + 10**(-d/400))``.

Method. With strengths ``theta`` (natural-log units, ``elo = ANCHOR + 400/ln 10 * (theta -
mean theta)``), a unit of results between ``i`` and ``j`` - one game, or one pair of games -
made of ``g`` games in which ``i`` scored ``S`` contributes ``S log p_ij + (g - S) log(1 - p_ij)``
to the log-likelihood, ``p_ij = 1 / (1 + exp(theta_j - theta_i))`` (a draw is half a win and
half a loss, the usual Bradley-Terry treatment). Newton's method maximises it. ``H`` is the
observed information (minus the Hessian, prior included) at the maximum.

* ``variance="model"``: ``cov(theta) = H^-1`` (what BayesElo and Ordo report).
* ``variance="robust"``: the sandwich ``H^-1 M H^-1`` (P. J. Huber 1967, H. White 1980), with
  the units as clusters (K.-Y. Liang and S. L. Zeger 1986): ``M = sum_units u u^T`` where the
  unit's score vector is ``u = r (e_i - e_j)`` and ``r = S - g p_ij`` its residual. It measures
  the spread the results actually show instead of the binomial variance ``g p (1 - p)`` the
  model assumes, so it is narrower when the games of a pair are negatively correlated (the
  seat swap cancels the deal luck) or when there are draws, and wider when they are positively
  correlated or the model misfits a matchup. To stay honest with few units, each matchup's
  sum of squared residuals is shrunk toward the model's value with :data:`ROBUST_PRIOR_UNITS`
  virtual units, ``n (sum r^2 + k g p(1-p)) / (n + k)``, and the prior's virtual game enters
  ``M`` with its model variance; a bot without games therefore gets the model interval.

Covariances are reported for the anchored ratings (``theta - mean theta`` in Elo points); the
difference of two ratings has the same variance either way. The likelihood of superiority
``LOS(a, b) = Phi((elo_a - elo_b) / sd(elo_a - elo_b))`` is the normal approximation of the
posterior that BayesElo's ``los`` command reports (R. Coulom, BayesElo,
https://www.remi-coulom.fr/Bayesian-Elo/).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping

import msgspec

ANCHOR = 1500.0
"""Mean rating of the bots in a fit."""
K_FACTOR = 20.0
"""K-factor of :func:`elo_update` (points per unit of surprise)."""
_SCALE = 400.0 / math.log(10.0)  # Elo points per natural-log unit of strength
Z95 = 1.959963984540054
"""The two-sided 95% normal quantile: intervals are ``± Z95 * sd``."""

PROVISIONAL_CI95 = 100.0
"""A rating whose 95% half-width (Elo points) is wider than this, or unknown, is shown as provisional."""


class Rating(msgspec.Struct):
    """A bot's fitted rating: ``elo`` with a 95% interval ``± ci95``, games and results."""

    name: str
    elo: float
    ci95: float
    games: int
    wins: int
    losses: int
    draws: int

    @property
    def score(self) -> float:
        """Score fraction: (wins + draws/2) / games."""
        return (self.wins + 0.5 * self.draws) / self.games if self.games else 0.0


def expected_score(diff: float) -> float:
    """Expected score of a player rated ``diff`` Elo points above the opponent."""
    return 1.0 / (1.0 + 10.0 ** (-diff / 400.0))


def elo_update(r_a: float, r_b: float, score_a: float, k: float = K_FACTOR) -> tuple[float, float]:
    """One incremental Elo step: new ratings of A and B after A scored ``score_a`` (1, ½, 0)."""
    delta = k * (score_a - expected_score(r_a - r_b))
    return r_a + delta, r_b - delta


def fit(results: Iterable[tuple[str, str, float]], names: Iterable[str] = (), variance: str = "model") -> Fit:
    """Fit Elo ratings to ``(a, b, score_of_a)`` game results (score 1, ½ or 0; any value in
    [0, 1] is accepted as a fractional point). ``names`` adds bots with no games.

    ``variance`` is ``"model"`` (default: the inverse observed information) or ``"robust"``
    (each game its own unit; see the module docstring). Newton's method on the
    log-likelihood with the prior described in the module docstring; a few iterations.
    """
    units = []
    tallies = []
    for a, b, s in results:
        s = float(s)
        if not 0.0 <= s <= 1.0:
            raise ValueError(f"game score {s!r} of {a!r} vs {b!r} is not in [0, 1]")
        units.append((a, b, s, 1))
        tallies.append((a, b, 1 if s > 0.5 else 0, 1 if s < 0.5 else 0, 1 if s == 0.5 else 0))
    return _fit(units, tallies, names, variance)


def fit_pairs(pairs: Iterable[tuple[str, str, float]], names: Iterable[str] = (), variance: str = "robust") -> Fit:
    """Fit Elo ratings to duplicate pairs ``(a, b, score_of_a_over_the_two_matches)`` (0 to 2).

    The likelihood counts a pair as two games in which ``a`` scored the given total, so the
    ratings are exactly those :func:`fit` gives for the same games. The intervals, with the
    default ``variance="robust"``, take the pair as the unit of variance: the sandwich
    estimator of the module docstring from the per-pair score residuals ``S - 2 p_ab``. The
    two games of a pair share the deal (its luck mostly cancels with the seat swap), so the
    pair scores vary less than two independent games would and the interval is narrower than
    the model's; with independent games the two agree. ``variance="model"`` gives the
    intervals of :func:`fit` on the unpaired games.

    The win/loss/draw tallies split a pair score into two games with the fewest draws:
    2 = two wins, 1.5 = a win and a draw, 1 = a win and a loss, 0.5 = a draw and a loss.
    """
    units = []
    tallies = []
    for a, b, s in pairs:
        s = float(s)
        if not 0.0 <= s <= 2.0:
            raise ValueError(f"pair score {s!r} of {a!r} vs {b!r} is not in [0, 2]")
        units.append((a, b, s, 2))
        wins = 2 if s == 2.0 else 1 if s >= 1.0 else 0
        losses = 2 if s == 0.0 else 1 if s <= 1.0 else 0
        tallies.append((a, b, wins, losses, 2 - wins - losses))
    return _fit(units, tallies, names, variance)


def fit_units(
    units: Iterable[tuple[str, str, float, int]] | Mapping[tuple[str, str, float, int], int],
    names: Iterable[str] = (),
    variance: str = "robust",
    start: Mapping[str, float] | None = None,
    tallies: Iterable[tuple[str, str, int, int, int]] | None = None,
) -> Fit:
    """Fit Elo ratings to units ``(a, b, score_of_a, g)``: ``g`` games (``g >= 1``) in which
    ``a`` scored ``score_of_a`` points (0 to ``g``, a draw counting ½).

    A unit is what varies together: one unpaired match (``g = 1``), a duplicate pair (``g =
    2``), or the ``g`` twin deals of a duplicate-deals pair. ``units`` may also be a mapping
    from each distinct unit to how many times it occurred. With the default
    ``variance="robust"`` the intervals are clustered by unit (the sandwich of the module
    docstring), ``"model"`` gives the inverse information. ``start`` maps bot names to Elo
    ratings to start Newton's method from (a warm start: the maximum is the same, it is only
    reached in fewer steps). ``tallies`` gives ``(a, b, wins of a, losses of a, draws)`` per
    unit for the win/loss/draw counts; by default each unit is split with the fewest draws
    (``floor(score)`` wins, one draw for a half point, the rest losses). Raises
    ``ValueError`` for a score outside ``[0, g]``, ``g < 1`` or a bot playing itself.
    """
    distinct: Counter = Counter()  # a ladder repeats few distinct units
    if isinstance(units, Mapping):
        for (a, b, s, g), count in units.items():
            distinct[(a, b, float(s), int(g))] += int(count)
    else:
        distinct.update((a, b, float(s), int(g)) for a, b, s, g in units)
    out_tallies = []
    for (a, b, s, g), count in distinct.items():
        if g < 1:
            raise ValueError(f"unit of {a!r} vs {b!r} has {g} games")
        if not 0.0 <= s <= g:
            raise ValueError(f"score {s!r} of {a!r} vs {b!r} is not in [0, {g}]")
        wins = math.floor(s)
        draws = 1 if s - wins >= 0.25 else 0
        out_tallies.append((a, b, wins * count, (g - wins - draws) * count, draws * count))
    if tallies is not None:
        out_tallies = list(tallies)
    return _fit(distinct, out_tallies, names, variance, start)


def fit_ratings(results: Iterable[tuple[str, str, float]], names: Iterable[str] = ()) -> list[Rating]:
    """Fit Elo ratings to ``(a, b, score_of_a)`` results; return them best first.

    The ratings of :func:`fit` with model intervals; ``names`` adds bots with no games.
    """
    return fit(results, names).ratings


class Fit:
    """The result of :func:`fit` or :func:`fit_pairs`: ratings, best first, and the covariance
    matrix ``cov`` (Elo points squared) of the anchored ratings, indexed like ``names``
    (sorted). ``variance`` says how ``cov`` was estimated (``"model"`` or ``"robust"``)."""

    __slots__ = ("ratings", "names", "cov", "variance", "_index", "_by_name")

    def __init__(self, ratings: list[Rating], names: list[str], cov: list[list[float]], variance: str) -> None:
        self.ratings = ratings
        self.names = names
        self.cov = cov
        self.variance = variance
        self._index = {n: i for i, n in enumerate(names)}
        self._by_name = {r.name: r for r in ratings}

    def __getitem__(self, name: str) -> Rating:
        return self._by_name[name]

    def __repr__(self) -> str:
        body = ", ".join(f"{r.name}={r.elo:.0f}±{r.ci95:.0f}" for r in self.ratings)
        return f"Fit({self.variance}: {body})"

    def sd_diff(self, a: str, b: str) -> float:
        """Standard deviation of ``elo_a - elo_b`` from the covariance matrix."""
        i, j = self._index[a], self._index[b]
        c = self.cov
        return math.sqrt(max(c[i][i] + c[j][j] - 2.0 * c[i][j], 0.0))

    def los(self, a: str, b: str) -> float:
        """Likelihood of superiority: P(a is stronger than b) = Phi(diff / sd(diff))."""
        diff = self._by_name[a].elo - self._by_name[b].elo
        sd = self.sd_diff(a, b)
        if sd == 0.0:
            return 0.5 if diff == 0.0 else float(diff > 0.0)
        return 0.5 * (1.0 + math.erf(diff / (sd * math.sqrt(2.0))))

    def los_matrix(self) -> dict[tuple[str, str], float]:
        """:meth:`los` for every ordered pair of distinct bots."""
        return {(a, b): self.los(a, b) for a in self.names for b in self.names if a != b}

    def overlapping(self, a: str, b: str) -> bool:
        """Whether the 95% intervals ``elo ± ci95`` of ``a`` and ``b`` overlap. Far stricter
        than a test of the difference (two intervals can overlap while the difference is
        clearly non-zero): the tables use :meth:`separated` instead."""
        ra, rb = self._by_name[a], self._by_name[b]
        return abs(ra.elo - rb.elo) <= ra.ci95 + rb.ci95

    def diff_ci95(self, a: str, b: str) -> float:
        """Half-width (Elo) of the 95% interval of ``elo_a - elo_b``, from the covariance."""
        return Z95 * self.sd_diff(a, b)

    def separated(self, a: str, b: str) -> bool:
        """Whether ``a`` and ``b`` are separated at 95%: the interval of the difference
        ``elo_a - elo_b ± diff_ci95`` excludes 0. Exactly when :meth:`los` is above 97.5% or
        below 2.5% (the same normal approximation), so the marks agree with the LOS matrix."""
        diff = self._by_name[a].elo - self._by_name[b].elo
        return abs(diff) > self.diff_ci95(a, b)


ROBUST_PRIOR_UNITS = 1.0
"""Virtual units per matchup, at the model's variance, in the robust variance (see module)."""


def _fit(
    units: list[tuple[str, str, float, int]] | Counter,
    tallies: list[tuple[str, str, int, int, int]],
    names: Iterable[str],
    variance: str,
    start: Mapping[str, float] | None = None,
) -> Fit:
    """Shared core: ``units`` are ``(a, b, score of a, games)`` (a list, or a ``Counter`` of
    them: each distinct unit with its count); ``start`` Elo ratings to start from (see
    :func:`fit_units`)."""
    if not isinstance(units, Counter):
        units = Counter(units)
    if variance not in ("model", "robust"):
        raise ValueError(f"variance must be 'model' or 'robust', not {variance!r}")
    bots = sorted(set(names) | {u[0] for u in units} | {u[1] for u in units})
    n = len(bots)
    if n == 0:
        return Fit([], [], [], variance)
    index = {b: i for i, b in enumerate(bots)}
    # aggregate: games and score per pair of bots; squared residuals need the units later
    games = [[0.0] * n for _ in range(n)]
    score = [0.0] * n
    for (a, b, s, g), c in units.items():
        if a == b:
            raise ValueError(f"{a!r} cannot play itself")
        i, j = index[a], index[b]
        games[i][j] += g * c
        games[j][i] += g * c
        score[i] += s * c
        score[j] += (g - s) * c
    # natural-log strengths; prior opponent at 0
    theta = [((start or {}).get(b, ANCHOR) - ANCHOR) / _SCALE for b in bots]
    for _ in range(100):
        grad, info = _gradient_and_information(theta, games, score)
        step = _solve(info, grad)
        theta = [t + d for t, d in zip(theta, step)]
        if max(abs(d) for d in step) < 1e-10:
            break
    _, info = _gradient_and_information(theta, games, score)
    cov = _inverse(info)
    if variance == "robust":
        cov = _sandwich(cov, _meat(theta, units, index))
    # covariance of the anchored ratings theta - mean(theta), in Elo points squared
    row = [sum(r) / n for r in cov]
    tot = sum(row) / n
    cov_elo = [[_SCALE**2 * (cov[i][j] - row[i] - row[j] + tot) for j in range(n)] for i in range(n)]
    mean = sum(theta) / n
    tally = {b: [0, 0, 0] for b in bots}
    for a, b, w, lo, dr in tallies:
        tally[a][0] += w
        tally[a][1] += lo
        tally[a][2] += dr
        tally[b][0] += lo
        tally[b][1] += w
        tally[b][2] += dr
    out = []
    for b, i in index.items():
        w, lo, dr = tally[b]
        out.append(
            Rating(
                name=b,
                elo=ANCHOR + _SCALE * (theta[i] - mean),
                ci95=1.96 * math.sqrt(max(cov_elo[i][i], 0.0)),
                games=w + lo + dr,
                wins=w,
                losses=lo,
                draws=dr,
            )
        )
    out.sort(key=lambda r: (-r.elo, r.name))
    return Fit(out, bots, cov_elo, variance)


def _p(ti: float, tj: float) -> float:
    return 1.0 / (1.0 + math.exp(tj - ti))


def _gradient_and_information(
    theta: list[float], games: list[list[float]], score: list[float]
) -> tuple[list[float], list[list[float]]]:
    """Gradient of the log-likelihood (with the prior) and the observed information."""
    n = len(theta)
    grad = [0.0] * n
    info = [[0.0] * n for _ in range(n)]
    for i in range(n):
        p0 = _p(theta[i], 0.0)  # the prior's virtual draw
        grad[i] += 0.5 - p0 + score[i]
        info[i][i] += p0 * (1 - p0)
        for j in range(n):
            g = games[i][j]
            if g and i != j:
                p = _p(theta[i], theta[j])
                grad[i] -= g * p
                w = g * p * (1 - p)
                info[i][i] += w
                info[i][j] -= w
    return grad, info


def _meat(theta: list[float], units: Counter, index: dict[str, int]) -> list[list[float]]:
    """``M`` of the sandwich: per-matchup sums of squared unit residuals, shrunk toward the
    model's variance, plus the prior's virtual game at its model variance."""
    n = len(theta)
    sq: dict[tuple[int, int], list[float]] = {}  # matchup -> [units, sum r^2, sum g p (1-p)]
    for (a, b, s, g), c in units.items():
        i, j = sorted((index[a], index[b]))
        p = _p(theta[index[a]], theta[index[b]])
        acc = sq.setdefault((i, j), [0.0, 0.0, 0.0])
        acc[0] += c
        acc[1] += c * (s - g * p) ** 2
        acc[2] += c * g * p * (1 - p)
    meat = [[0.0] * n for _ in range(n)]
    for i in range(n):
        p0 = _p(theta[i], 0.0)
        meat[i][i] += p0 * (1 - p0)
    k = ROBUST_PRIOR_UNITS
    for (i, j), (m, r2, model) in sq.items():
        v = m * (r2 + k * model / m) / (m + k)
        meat[i][i] += v
        meat[j][j] += v
        meat[i][j] -= v
        meat[j][i] -= v
    return meat


def _sandwich(bread: list[list[float]], meat: list[list[float]]) -> list[list[float]]:
    n = len(bread)
    left = [[sum(bread[i][k] * meat[k][j] for k in range(n)) for j in range(n)] for i in range(n)]
    return [[sum(left[i][k] * bread[k][j] for k in range(n)) for j in range(n)] for i in range(n)]


def _solve(a: list[list[float]], b: list[float]) -> list[float]:
    """Solve ``a x = b`` by Gaussian elimination with partial pivoting (small, dense)."""
    n = len(b)
    m = [row[:] + [b[i]] for i, row in enumerate(a)]
    for c in range(n):
        p = max(range(c, n), key=lambda r: abs(m[r][c]))
        m[c], m[p] = m[p], m[c]
        for r in range(n):
            if r != c and m[r][c]:
                f = m[r][c] / m[c][c]
                for k in range(c, n + 1):
                    m[r][k] -= f * m[c][k]
    return [m[i][n] / m[i][i] for i in range(n)]


def _inverse(a: list[list[float]]) -> list[list[float]]:
    """Inverse by Gauss-Jordan elimination with partial pivoting (one ``O(n^3)`` pass)."""
    n = len(a)
    m = [row[:] + [1.0 if i == j else 0.0 for j in range(n)] for i, row in enumerate(a)]
    for c in range(n):
        p = max(range(c, n), key=lambda r: abs(m[r][c]))
        m[c], m[p] = m[p], m[c]
        pivot = m[c][c]
        m[c] = [x / pivot for x in m[c]]
        pc = m[c]
        for r in range(n):
            f = m[r][c]
            if r != c and f:
                row = m[r]
                m[r] = [x - f * y for x, y in zip(row, pc)]
    return [row[n:] for row in m]
