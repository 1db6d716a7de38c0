"""The dense maximum-likelihood fit the ladder used until issue 21, kept as the reference the
sparse fit of :mod:`arena.stats.rating` is tested against (tests/test_rating.py) and timed against
(``python -m arena.stats.synthetic``).

Pure Python lists: Newton's method with a Gaussian elimination per step, the covariance from a
dense Gauss-Jordan inverse and the robust sandwich from two dense products, all ``O(n^3)`` in the
number of bots ``n`` (200 bots: a few seconds). The model, prior, anchoring and robust variance
are those of the module docstring of :mod:`arena.stats.rating`; the code is the one that was there
(issue 14), unchanged but for the names.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping

from arena.stats.rating import ANCHOR, ROBUST_PRIOR_UNITS, Rating

_SCALE = 400.0 / math.log(10.0)


class DenseFit:
    """Ratings best first, ``names`` sorted, ``cov`` the dense covariance (Elo points squared)
    of the anchored ratings indexed like ``names``, and ``variance``."""

    def __init__(self, ratings: list[Rating], names: list[str], cov: list[list[float]], variance: str) -> None:
        self.ratings = ratings
        self.names = names
        self.cov = cov
        self.variance = variance
        self._index = {n: i for i, n in enumerate(names)}
        self._by_name = {r.name: r for r in ratings}

    def __getitem__(self, name: str) -> Rating:
        return self._by_name[name]

    def sd_diff(self, a: str, b: str) -> float:
        """Standard deviation of ``elo_a - elo_b`` from the covariance matrix."""
        i, j = self._index[a], self._index[b]
        c = self.cov
        return math.sqrt(max(c[i][i] + c[j][j] - 2.0 * c[i][j], 0.0))


def dense_fit_units(
    units: Iterable[tuple[str, str, float, int]] | Mapping[tuple[str, str, float, int], int],
    names: Iterable[str] = (),
    variance: str = "robust",
    start: Mapping[str, float] | None = None,
) -> DenseFit:
    """The old ``fit_units``: units ``(a, b, score of a, games)`` (or a mapping unit -> count),
    default tallies (``floor(score)`` wins, a draw for a half point)."""
    distinct: Counter = Counter()
    if isinstance(units, Mapping):
        for (a, b, s, g), count in units.items():
            distinct[(a, b, float(s), int(g))] += int(count)
    else:
        distinct.update((a, b, float(s), int(g)) for a, b, s, g in units)
    tallies = []
    for (a, b, s, g), count in distinct.items():
        wins = math.floor(s)
        draws = 1 if s - wins >= 0.25 else 0
        tallies.append((a, b, wins * count, (g - wins - draws) * count, draws * count))
    return _fit(distinct, tallies, names, variance, start)


def _fit(
    units: list[tuple[str, str, float, int]] | Counter,
    tallies: list[tuple[str, str, int, int, int]],
    names: Iterable[str],
    variance: str,
    start: Mapping[str, float] | None = None,
) -> DenseFit:
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
        return DenseFit([], [], [], variance)
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
    return DenseFit(out, bots, cov_elo, variance)


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
