"""Ratings on the Elo scale.

* :func:`fit_ratings` - a maximum-likelihood Bradley-Terry fit over all results of a
  tournament (as BayesElo and Ordo do): order-independent, draws count as half a win, the
  mean rating anchored at :data:`ANCHOR`, with a 95% interval per bot from the observed
  Fisher information. A weak prior of one virtual draw against an :data:`ANCHOR`-rated
  opponent keeps a bot that won or lost everything finite.
* :func:`elo_update` - the classic incremental Elo step with K-factor :data:`K_FACTOR`.

Elo scale: an advantage of ``d`` points means an expected score of ``1 / (1 + 10**(-d/400))``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import msgspec

ANCHOR = 1500.0
"""Mean rating of the bots in a fit."""
K_FACTOR = 20.0
"""K-factor of :func:`elo_update` (points per unit of surprise)."""
_SCALE = 400.0 / math.log(10.0)  # Elo points per natural-log unit of strength


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


def fit_ratings(results: Iterable[tuple[str, str, float]], names: Iterable[str] = ()) -> list[Rating]:
    """Fit Elo ratings to ``(a, b, score_of_a)`` results; return them best first.

    Newton's method on the log-likelihood of the Bradley-Terry model with the prior described
    in the module docstring; converges in a few iterations. ``names`` adds bots with no games.
    """
    results = list(results)
    bots = sorted(set(names) | {a for a, _, _ in results} | {b for _, b, _ in results})
    n = len(bots)
    if n == 0:
        return []
    index = {b: i for i, b in enumerate(bots)}
    # aggregate: games and score per ordered pair
    games = [[0.0] * n for _ in range(n)]
    score = [0.0] * n
    tally = {b: [0, 0, 0] for b in bots}
    for a, b, s in results:
        i, j = index[a], index[b]
        games[i][j] += 1
        games[j][i] += 1
        score[i] += s
        score[j] += 1 - s
        t = 0 if s > 0.5 else 1 if s < 0.5 else 2
        tally[a][t] += 1
        tally[b][{0: 1, 1: 0, 2: 2}[t]] += 1
    theta = [0.0] * n  # natural-log strengths; prior opponent at 0
    for _ in range(100):
        grad = [0.0] * n
        hess = [[0.0] * n for _ in range(n)]
        for i in range(n):
            p0 = 1.0 / (1.0 + math.exp(-theta[i]))  # vs the prior's virtual opponent
            grad[i] += 0.5 - p0
            hess[i][i] -= p0 * (1 - p0)
            grad[i] += score[i]
            for j in range(n):
                g = games[i][j]
                if g and i != j:
                    p = 1.0 / (1.0 + math.exp(theta[j] - theta[i]))
                    grad[i] -= g * p
                    w = g * p * (1 - p)
                    hess[i][i] -= w
                    hess[i][j] += w
        step = _solve([[-h for h in row] for row in hess], grad)
        theta = [t + d for t, d in zip(theta, step)]
        if max(abs(d) for d in step) < 1e-10:
            break
    cov = _inverse([[-h for h in row] for row in hess])
    mean = sum(theta) / n
    out = []
    for b, i in index.items():
        # variance of theta_i - mean(theta)
        var = cov[i][i] - 2 * sum(cov[i]) / n + sum(map(sum, cov)) / (n * n)
        w, lo, dr = tally[b]
        out.append(
            Rating(
                name=b,
                elo=ANCHOR + _SCALE * (theta[i] - mean),
                ci95=1.96 * _SCALE * math.sqrt(max(var, 0.0)),
                games=w + lo + dr,
                wins=w,
                losses=lo,
                draws=dr,
            )
        )
    out.sort(key=lambda r: (-r.elo, r.name))
    return out


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
    n = len(a)
    cols = [_solve(a, [1.0 if i == j else 0.0 for i in range(n)]) for j in range(n)]
    return [[cols[j][i] for j in range(n)] for i in range(n)]
