"""Sequential probability ratio test over duplicate pairs: does bot A beat the baseline by
``elo1`` rather than ``elo0`` Elo points?

A *duplicate pair* is two matches on the same deal seed with the seats swapped. Each pair gives
A a pair score in ``{0, 1, 2}`` (or ``{0, 0.5, 1, 1.5, 2}`` once draws exist), which the test
reads as the per-match score fraction ``x = pair_score / 2``. Pairs are independent and
identically distributed; the two matches inside a pair are not (they share the deal luck), and
that is why the pair, not the match, is the unit of the test - as fishtest does with its
pentanomial pairs of games, here trinomial (or pentanomial in half-points).

Method - the generalized SPRT (GSPRT) of the multinomial model of pair outcomes:

* The outcomes ``x_k`` occur with unknown probabilities ``p_k``. A hypothesis fixes only the
  expected score ``s = sum_k p_k x_k``, with ``s = 1 / (1 + 10**(-elo/400))`` (logistic Elo).
* Given the observed frequencies ``f_k = n_k / N``, the maximum-likelihood distribution with
  mean ``s`` is ``p_k = f_k / (1 + lam * (x_k - s))`` where ``lam`` is the unique root of
  ``sum_k f_k (x_k - s) / (1 + lam (x_k - s)) = 0`` in the interval where every denominator
  is positive (M. Van den Bergh, "Maximum likelihood estimation of a multinomial distribution
  with given expectation value", Proposition 1.1,
  http://hardy.uhasselt.be/Fishtest/support_MLE_multinomial.pdf). The root makes the ``p_k``
  sum to 1 automatically: ``sum p_k = 1 - lam * g(lam)``.
* The log-likelihood ratio is ``LLR = sum_k n_k log(p1_k / p0_k)`` with ``p0``, ``p1`` the
  maximum-likelihood distributions under ``s0``, ``s1`` (the generalized likelihood ratio;
  J. Liu et al., GSPRT, http://stat.columbia.edu/~jcliu/paper/GSPRT_SQA3.pdf).
* Wald's bounds (A. Wald, "Sequential tests of statistical hypotheses", 1945): accept H0 when
  ``LLR <= log(beta / (1 - alpha))``, H1 when ``LLR >= log((1 - beta) / alpha)``.
* Overshoot correction (on by default, as in fishtest since 2020): the LLR does not land on a
  bound but jumps past it, so Wald's bounds give error rates below the nominal ones and tests
  longer than needed. For a random walk, the expected overshoot over a far boundary is
  ``E[H^2] / (2 E[H])`` where ``H`` is a *ladder height*, the amount by which the walk beats
  its previous record (D. Siegmund, "Sequential Analysis: Tests and Confidence Intervals",
  Springer 1985, ch. VIII, corrected random walks). The test estimates it from its own path:
  each time the LLR sets a new maximum (minimum), the excess over the previous record is one
  ladder height; with ``m1, sq1`` the sum and the sum of squares of the upward ones (``m0,
  sq0`` downward, starting from 0) it stops at ``upper - sq1 / (2 m1)`` and ``lower + sq0 /
  (2 |m0|)``. This is fishtest's dynamic overshoot correction (fishtest
  ``server/fishtest/stats/stat_util.py``, ``update_SPRT``). Simulations (``make study``,
  ``tests/test_sprt.py``) show the error rates stay at or below the nominal ones while fewer
  pairs are needed.
* Before the maximum likelihood step, every possible outcome with no observation gets a
  pseudo-count of :data:`EPSILON` (fishtest's regularisation). The possible outcomes always
  include 0 and 2, so any ``s`` strictly between 0 and 1 has a maximum-likelihood distribution,
  even after one pair or when every pair so far ended the same way.

The Elo estimate (:meth:`SPRT.elo_estimate`) is the mean per-pair score fraction ``m`` with its
standard error ``sqrt(var / N)`` from the per-pair variance, converted with
``elo(m) = -400 log10(1/m - 1)`` and the delta method ``d elo / d m = 400 / (ln 10 m (1 - m))``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

EPSILON = 1e-3
"""Pseudo-count given to each possible pair outcome that has not been observed."""
PAIR_SCORES = (0.0, 0.5, 1.0, 1.5, 2.0)
"""Default possible pair scores: two matches, each won (1), drawn (1/2) or lost (0)."""


def expected_score(elo: float) -> float:
    """Expected per-match score of a player ``elo`` points stronger (logistic Elo)."""
    return 1.0 / (1.0 + 10.0 ** (-elo / 400.0))


def elo_from_score(s: float) -> float:
    """Inverse of :func:`expected_score`; ``±inf`` at a score of 1 or 0."""
    if s <= 0.0:
        return -math.inf
    if s >= 1.0:
        return math.inf
    return -400.0 * math.log10(1.0 / s - 1.0)


def mle_distribution(counts: Mapping[float, float], s: float) -> dict[float, float] | None:
    """Maximum-likelihood distribution over the outcomes of ``counts`` with expected value ``s``.

    ``counts`` maps each outcome ``x_k`` (a score fraction) to how often it was seen (any
    non-negative weight). Returns ``{x_k: p_k}`` (outcomes with a zero count get ``p_k = 0``),
    or ``None`` when no distribution supported on the observed outcomes has mean ``s``, i.e.
    ``s`` is not strictly inside the range of observed outcomes (the likelihood is then 0),
    except for the degenerate case where every observation equals ``s``. ``lam`` is found by a
    Newton iteration safeguarded by bisection on its bracket (see the module docstring).
    """
    total = sum(counts.values())
    if total <= 0:
        raise ValueError("no observations")
    obs = [(x - s, n / total) for x, n in counts.items() if n > 0]
    dmin = min(d for d, _ in obs)
    dmax = max(d for d, _ in obs)
    if dmin == 0.0 == dmax:
        lam = 0.0  # all observations equal s
    elif dmin >= 0.0 or dmax <= 0.0:
        return None  # s outside (or on the edge of) the observed range
    else:
        lam = _solve_lambda(obs, lo=-1.0 / dmax, hi=-1.0 / dmin)
    out = {x: 0.0 for x in counts}
    for x, n in counts.items():
        if n > 0:
            out[x] = (n / total) / (1.0 + lam * (x - s))
    return out


def _solve_lambda(obs: list[tuple[float, float]], lo: float, hi: float) -> float:
    """Root of the strictly decreasing ``g(lam) = sum f d / (1 + lam d)`` on ``(lo, hi)``;
    ``g`` tends to +inf at ``lo`` and to -inf at ``hi``."""

    def g_and_slope(lam: float) -> tuple[float, float]:
        g = dg = 0.0
        for d, f in obs:
            q = d / (1.0 + lam * d)
            g += f * q
            dg -= f * q * q
        return g, dg

    lam = 0.0 if lo < 0.0 < hi else 0.5 * (lo + hi)
    for _ in range(200):
        g, dg = g_and_slope(lam)
        if g == 0.0:
            return lam
        if g > 0.0:
            lo = lam
        else:
            hi = lam
        step = lam - g / dg  # Newton; dg < 0 always
        lam_new = step if lo < step < hi else 0.5 * (lo + hi)
        if abs(lam_new - lam) <= 1e-15 * max(1.0, abs(lam)) or hi - lo <= 1e-15 * max(1.0, abs(lam)):
            return lam_new
        lam = lam_new
    return lam


def profile_loglik(counts: Mapping[float, float], s: float) -> float:
    """``sum_k n_k log p_k`` of the maximum-likelihood distribution with mean ``s``
    (``-inf`` when there is none)."""
    p = mle_distribution(counts, s)
    if p is None:
        return -math.inf
    return sum(n * math.log(p[x]) for x, n in counts.items() if n > 0)


def llr(counts: Mapping[float, float], s0: float, s1: float) -> float:
    """Generalized log-likelihood ratio of mean score ``s1`` against ``s0`` for outcome counts
    ``{score fraction: count}``, without regularisation: ``sum n_k log(p1_k / p0_k)``.

    0 with no observations; ``±inf`` when only one hypothesis is possible given the observed
    outcomes; ``nan`` when neither is.
    """
    if sum(counts.values()) <= 0:
        return 0.0
    p0 = mle_distribution(counts, s0)
    p1 = mle_distribution(counts, s1)
    if p0 is None or p1 is None:
        return profile_loglik(counts, s1) - profile_loglik(counts, s0)
    return sum(n * math.log(p1[x] / p0[x]) for x, n in counts.items() if n > 0)


class SPRT:
    """A GSPRT of ``elo0`` (H0) against ``elo1`` (H1) for the tested bot, fed duplicate pairs.

    ``outcomes`` lists the possible pair scores (default :data:`PAIR_SCORES`, 0 to 2 in halves;
    0 and 2 are always added). :meth:`add` takes A's score over one pair.
    """

    def __init__(
        self,
        elo0: float,
        elo1: float,
        alpha: float = 0.05,
        beta: float = 0.05,
        outcomes: Iterable[float] = PAIR_SCORES,
        overshoot: bool = True,
    ) -> None:
        if not elo0 < elo1:
            raise ValueError("elo0 must be below elo1")
        if not (0.0 < alpha < 1.0 and 0.0 < beta < 1.0 and alpha + beta < 1.0):
            raise ValueError("alpha and beta must be in (0, 1) with alpha + beta < 1")
        self.elo0, self.elo1, self.alpha, self.beta = float(elo0), float(elo1), alpha, beta
        self.s0, self.s1 = expected_score(elo0), expected_score(elo1)
        values = sorted({float(v) for v in outcomes} | {0.0, 2.0})
        if values[0] < 0.0 or values[-1] > 2.0:
            raise ValueError("pair scores must lie in [0, 2]")
        self._counts: dict[float, int] = {v: 0 for v in values}
        self.overshoot = overshoot
        self._llr = 0.0
        # ladder heights of the LLR path (module docstring): record, sum, sum of squares,
        # downward (0) and upward (1)
        self._ref0 = self._m0 = self._sq0 = 0.0
        self._ref1 = self._m1 = self._sq1 = 0.0

    @property
    def bounds(self) -> tuple[float, float]:
        """Wald's decision bounds ``(log(beta/(1-alpha)), log((1-beta)/alpha))`` on the LLR."""
        return math.log(self.beta / (1.0 - self.alpha)), math.log((1.0 - self.beta) / self.alpha)

    @property
    def stop_bounds(self) -> tuple[float, float]:
        """The LLR bounds the test stops at: Wald's :attr:`bounds`, moved inward by the
        estimated overshoot ``(sq0 / (2 |m0|), sq1 / (2 m1))`` when ``overshoot`` is on."""
        lower, upper = self.bounds
        if not self.overshoot:
            return lower, upper
        o0 = -self._sq0 / self._m0 / 2.0 if self._m0 else 0.0
        o1 = self._sq1 / self._m1 / 2.0 if self._m1 else 0.0
        if lower + o0 >= upper - o1:  # cannot happen with sane bounds; never cross them
            return lower, upper
        return lower + o0, upper - o1

    @property
    def counts(self) -> dict[float, int]:
        """How many pairs ended with each possible pair score (a copy, ascending)."""
        return dict(self._counts)

    @property
    def pairs(self) -> int:
        """Number of pairs added."""
        return sum(self._counts.values())

    def add(self, pair_score: float, n: int = 1) -> None:
        """Record ``n`` pairs in which the tested bot scored ``pair_score`` (0..2) points."""
        key = float(pair_score)
        if key not in self._counts:
            raise ValueError(f"pair score {pair_score!r} is not one of {sorted(self._counts)}")
        if n < 0:
            raise ValueError("n must be non-negative")
        self._counts[key] += n
        self._llr = self._compute_llr()
        if self._llr < self._ref0:  # a new minimum: one downward ladder height
            delta = self._llr - self._ref0
            self._m0 += delta
            self._sq0 += delta * delta
            self._ref0 = self._llr
        if self._llr > self._ref1:  # a new maximum: one upward ladder height
            delta = self._llr - self._ref1
            self._m1 += delta
            self._sq1 += delta * delta
            self._ref1 = self._llr

    def llr(self) -> float:
        """The regularised GSPRT log-likelihood ratio of H1 against H0 (0 with no pairs)."""
        return self._llr

    def _compute_llr(self) -> float:
        if self.pairs == 0:
            return 0.0
        reg = {v / 2.0: (n if n > 0 else EPSILON) for v, n in self._counts.items()}
        return llr(reg, self.s0, self.s1)

    def status(self) -> str:
        """``"H1"`` (A is ``elo1`` better), ``"H0"`` (at most ``elo0``) or ``"continue"``, by
        :attr:`stop_bounds`."""
        lower, upper = self.stop_bounds
        value = self.llr()
        if value >= upper:
            return "H1"
        if value <= lower:
            return "H0"
        return "continue"

    def elo_estimate(self) -> tuple[float, float]:
        """``(elo, ci95)`` from the mean and variance of the per-pair score fraction.

        The variance is the sample variance (divisor ``N - 1``) of the per-pair fractions.
        ``(nan, inf)`` with no pairs; ``ci95`` is ``inf`` with one pair and the Elo ``±inf``
        when every pair was won (lost) outright.
        """
        n = self.pairs
        if n == 0:
            return math.nan, math.inf
        mean = sum(v / 2.0 * k for v, k in self._counts.items()) / n
        elo = elo_from_score(mean)
        if n < 2 or not math.isfinite(elo):
            return elo, math.inf
        var = sum(k * (v / 2.0 - mean) ** 2 for v, k in self._counts.items()) / (n - 1)
        slope = 400.0 / (math.log(10.0) * mean * (1.0 - mean))
        return elo, 1.96 * slope * math.sqrt(var / n)

    def summary(self) -> str:
        """One line for the CLI, e.g.
        ``pairs 120  W-D-L 30-80-10  [0:10 1:80 2:30]  LLR 1.23 [-2.94, 2.94]  elo 35 ± 40``.

        W-D-L counts pairs won (score above 1), drawn (exactly 1) and lost; the bracket lists
        how many pairs ended with each pair score seen at least once.
        """
        c = self._counts
        won = sum(k for v, k in c.items() if v > 1.0)
        drawn = c.get(1.0, 0)
        lost = sum(k for v, k in c.items() if v < 1.0)
        dist = " ".join(f"{_fmt_points(v)}:{k}" for v, k in c.items() if k)
        lower, upper = self.bounds
        stop = ""
        if self.stop_bounds != (lower, upper):
            stop = " stop at [{:.2f}, {:.2f}]".format(*self.stop_bounds)
        elo, ci = self.elo_estimate()
        if math.isnan(elo):
            elo_txt = "elo n/a"
        elif math.isinf(elo):
            elo_txt = f"elo {'+' if elo > 0 else '-'}inf"
        else:
            elo_txt = f"elo {round(elo)} ± {round(ci) if math.isfinite(ci) else 'inf'}"
        return (
            f"pairs {self.pairs}  W-D-L {won}-{drawn}-{lost}  [{dist}]  "
            f"LLR {self.llr():.2f} [{lower:.2f}, {upper:.2f}]{stop}  {elo_txt}"
        )


def _fmt_points(v: float) -> str:
    return f"{v:g}"
