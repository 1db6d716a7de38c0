"""Ratings on the Elo scale.

* :func:`fit` / :func:`fit_ratings` - a maximum-likelihood Bradley-Terry fit over all results of
  a tournament (as BayesElo and Ordo do): order-independent, draws count as half a win, the
  mean rating anchored at :data:`ANCHOR`, with a 95% interval per bot from the observed
  Fisher information. A weak prior of one virtual draw against an opponent of strength 0
  (natural-log scale) keeps a bot that won or lost everything finite. The :class:`Fit` also
  gives the variance of the difference of any two ratings, from which :meth:`Fit.los` gives
  the likelihood of superiority and :meth:`Fit.separated` the 95% separation marks.
* :func:`fit_pairs` - the same fit for results grouped in duplicate pairs (two matches on one
  deal seed with the seats swapped), with intervals that take the pair as the unit of variance
  (see its docstring).
* :func:`fit_units` - the general form: any units of ``g`` games (a match, a duplicate pair,
  or the ``g`` twin deals of a duplicate-deals pair), optionally warm-started from earlier
  ratings (the persistent ladder, :mod:`arena.stats.ladder`, refits this way in the background).
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

Computation (:mod:`arena.stats.information`). The units are aggregated per pair of bots that
met, so the work grows with the distinct units and pairs, not with the games nor the cube of the
field: ``H`` is a sparse ``n x n`` matrix with one entry per pair (a weighted graph Laplacian
plus the prior's diagonal). The per-pair sums are all the fit needs (the likelihood, its
derivatives and the robust variance are sums over a pair's units of ``c g``, ``c s``, ``c s^2``,
``c g s``, ``c g^2`` and ``c``): :class:`LadderTotals` keeps them up to date unit by unit and
:func:`fit_totals` fits them, so a ladder's background fitter never handles the units again
(:mod:`arena.schedule.fitter`). Newton's steps are solved exactly (LAPACK Cholesky) up to 400
bots, beyond by a preconditioned conjugate gradient to a relative residual of 1e-10; Newton
stops after a step that moves no strength by more than 1e-6, its convergence being quadratic
there (what is left is of the order of 1e-12, far below 2e-7 Elo). The intervals are exact up to
:data:`arena.stats.information.EXACT_BOTS` bots (a dense inverse, only there); beyond, exact
still where the bots can be laid out in blocks that only meet their neighbours (a ladder pairing
rating neighbours, the season's: :mod:`arena.stats.blocks`, a block-tridiagonal selected
inversion, long pairs corrected by Woodbury's identity at the rank of the pairs or of the bots
they join; a refit keeps the earlier fit's order, newcomers put in, while it is the shorter:
:func:`layout_hint`), else a probing estimate with an
exact coarse part gives the per-bot variances and those of the differences of rating neighbours,
within a few percent of the exact ones (the measured accuracy is in
:mod:`arena.stats.information`; :attr:`Fit.check` is the error found on a few bots solved
exactly in each fit); any other pair's difference is computed exactly on demand. The dense
fit this replaced (pure Python, ``O(n^3)``: 4 s at 200 bots) is kept as the tests' reference in
tests/dense_fit.py; the two agree within 1e-6 Elo and 1e-6 relative on the intervals. The fit
runs OpenBLAS on one thread (:func:`arena.stats.information.one_blas_thread`): it shares the
machine with a server.

A rating is *provisional* (:attr:`Rating.provisional`) while its 95% interval is wider than
:data:`PROVISIONAL_CI95`.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from operator import itemgetter
from typing import Any

import msgspec
import numpy as np
import scipy.sparse as sp

from arena.stats.information import EXACT_BOTS, Intervals, Model, Pairs, aggregate, newton, one_blas_thread

ANCHOR = 1500.0
"""Mean rating of the bots in a fit."""
K_FACTOR = 20.0
"""K-factor of :func:`elo_update` (points per unit of surprise)."""
_SCALE = 400.0 / math.log(10.0)  # Elo points per natural-log unit of strength
Z95 = 1.959963984540054
"""The two-sided 95% normal quantile: intervals are ``± Z95 * sd``."""
PROVISIONAL_CI95 = 100.0
"""Half-width (Elo points) of the 95% interval above which a rating is provisional
(:attr:`Rating.provisional`): the bot has not played enough for its place to mean much yet.
A bot that scores about half against opponents whose ratings are well known has
``ci95 ~ Z95 * 400 / ln 10 * 2 / sqrt(games) ~ 681 / sqrt(games)`` (model variance), so it stops
being provisional after about 46 games (sooner with duplicate pairs, whose robust interval is
narrower; later against provisional opponents). ± 100 Elo is about the gap between two bots of
which one scores 64%: a narrower interval places a bot within a class of its peers, a wider one
does not; and a ladder of weeks gives each bot hundreds of games, so only newcomers carry the
mark."""
RELAYOUT = 1.02
""":func:`fit_totals` reuses the last fit's layout of the same bots (``LadderTotals.layout``) until
the pairs that met outnumber those it was made for by this factor: the layout only orders the
bots (for the preconditioner and the blocks: any order gives the same fit), and making it costs
about a third of a second on the season's 10,000 bots."""
ROBUST_PRIOR_UNITS = 1.0
"""Virtual units per matchup, at the model's variance, in the robust variance (see module)."""


class Rating(msgspec.Struct):
    """A bot's fitted rating: ``elo`` with a 95% interval ``± ci95`` (Elo points), games and
    results."""

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

    @property
    def provisional(self) -> bool:
        """Whether the 95% interval is wider than :data:`PROVISIONAL_CI95` (± 100 Elo)."""
        return self.ci95 > PROVISIONAL_CI95


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
    (each game its own unit; see the module docstring). Raises ``ValueError`` for a score
    outside [0, 1], a bot playing itself or another ``variance``.
    """
    units: Counter = Counter()
    tallies = []
    for a, b, s in results:
        s = float(s)
        if not 0.0 <= s <= 1.0:
            raise ValueError(f"game score {s!r} of {a!r} vs {b!r} is not in [0, 1]")
        units[(a, b, s, 1)] += 1
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
    Raises ``ValueError`` for a score outside [0, 2].
    """
    units: Counter = Counter()
    tallies = []
    for a, b, s in pairs:
        s = float(s)
        if not 0.0 <= s <= 2.0:
            raise ValueError(f"pair score {s!r} of {a!r} vs {b!r} is not in [0, 2]")
        units[(a, b, s, 2)] += 1
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
    *,
    intervals: str = "auto",
) -> Fit:
    """Fit Elo ratings to units ``(a, b, score_of_a, g)``: ``g`` games (``g >= 1``) in which
    ``a`` scored ``score_of_a`` points (0 to ``g``, a draw counting ½).

    A unit is what varies together: one unpaired match (``g = 1``), a duplicate pair (``g =
    2``), or the ``g`` twin deals of a duplicate-deals pair. ``units`` may also be a mapping
    from each distinct unit to how many times it occurred (what the store keeps; the cost of the
    fit grows with the distinct units and the pairs of bots that met, not with their counts).
    With the default ``variance="robust"`` the intervals are clustered by unit (the sandwich of
    the module docstring), ``"model"`` gives the inverse information. ``start`` maps bot names
    to Elo ratings to start Newton's method from (a warm start: the maximum is the same, it is
    only reached in fewer steps). ``tallies`` gives ``(a, b, wins of a, losses of a, draws)`` per
    unit for the win/loss/draw counts; by default each unit is split with the fewest draws
    (``floor(score)`` wins, one draw for a half point, the rest losses). ``intervals`` is
    ``"auto"`` (exact up to :data:`arena.stats.information.EXACT_BOTS` bots; beyond, exact by blocks
    where the layout allows, else probed), ``"exact"``, ``"blocks"`` or ``"probing"`` (to compare
    them; see the module docstring). Raises ``ValueError`` for a
    score outside ``[0, g]``, ``g < 1``, a bot playing itself, another ``variance`` or
    ``intervals``.
    """
    if isinstance(units, Mapping):
        distinct: Mapping = units  # the keys are distinct already (1 == 1.0 for a dict)
    else:
        distinct = Counter((a, b, s, g) for a, b, s, g in units)
    return _fit(distinct, None if tallies is None else list(tallies), names, variance, start, intervals)


def fit_ratings(results: Iterable[tuple[str, str, float]], names: Iterable[str] = ()) -> list[Rating]:
    """Fit Elo ratings to ``(a, b, score_of_a)`` results; return them best first.

    The ratings of :func:`fit` with model intervals; ``names`` adds bots with no games.
    """
    return fit(results, names).ratings


class Fit:
    """The result of :func:`fit`, :func:`fit_pairs` or :func:`fit_units`: ``ratings`` best
    first, ``names`` sorted, ``variance`` (``"model"`` or ``"robust"``) and ``method``: how the
    intervals were computed, ``"exact"``, ``"blocks"`` (exact too) or ``"probing"`` (beyond
    :data:`arena.stats.information.EXACT_BOTS` bots; see the module docstring).

    There is no dense covariance matrix but for small fields (:attr:`cov`): the variance of a
    rating difference (:meth:`sd_diff`) is kept for the neighbours in rating order, computed
    when first asked for any other pair, and from it :meth:`los` and :meth:`separated`."""

    __slots__ = ("ratings", "names", "variance", "_index", "_by_name", "_intervals", "layout")

    def __init__(self, ratings: list[Rating], names: list[str], variance: str,
                 intervals: Intervals | None = None) -> None:
        self.ratings = ratings
        self.names = names
        self.variance = variance
        self._index = {n: i for i, n in enumerate(names)}
        self._by_name = {r.name: r for r in ratings}
        self._intervals = intervals
        self.layout: Any = None
        """The fit's :class:`arena.stats.layout.Layout` (None for an empty field)."""

    def __getitem__(self, name: str) -> Rating:
        return self._by_name[name]

    def __repr__(self) -> str:
        body = ", ".join(f"{r.name}={r.elo:.0f}±{r.ci95:.0f}" for r in self.ratings)
        return f"Fit({self.variance}: {body})"

    @property
    def method(self) -> str:
        """``"exact"``, ``"blocks"`` or ``"probing"``: how the intervals were computed."""
        return self._intervals.method if self._intervals is not None else "exact"

    @property
    def check(self) -> float:
        """For probed intervals, the largest relative error of a bot's interval found by
        solving a few bots exactly as well (:data:`arena.stats.information.CHECKED`: a sample
        spread over the ratings); 0.0 for exact intervals. A few percent is the probing's
        usual accuracy; much more says the field has a structure the probing does not catch."""
        return self._intervals.check if self._intervals is not None else 0.0

    @property
    def cov(self) -> np.ndarray:
        """The covariance matrix (Elo points squared, ``n x n``, indexed like :attr:`names`) of
        the anchored ratings, exact, computed on first use: ``O(n^3)`` time and ``n^2`` memory,
        so only for fields of at most :data:`arena.stats.information.EXACT_BOTS` bots (``ValueError`` beyond)."""
        if self._intervals is None:
            return np.zeros((0, 0))
        return self._intervals.dense() * _SCALE**2

    def sd_diff(self, a: str, b: str) -> float:
        """Standard deviation (Elo points) of ``elo_a - elo_b``."""
        if self._intervals is None or a == b:
            return 0.0
        return _SCALE * math.sqrt(self._intervals.pair(self._index[a], self._index[b]))

    def neighbour_sd(self) -> list[float]:
        """:meth:`sd_diff` of each rating and the next one in :attr:`ratings` (``n - 1`` values,
        Elo points): what the separation marks of a leaderboard need, at no extra cost."""
        return [self.sd_diff(x.name, y.name) for x, y in zip(self.ratings, self.ratings[1:])]

    def los(self, a: str, b: str) -> float:
        """Likelihood of superiority: P(a is stronger than b) = Phi(diff / sd(diff))."""
        diff = self._by_name[a].elo - self._by_name[b].elo
        sd = self.sd_diff(a, b)
        if sd == 0.0:
            return 0.5 if diff == 0.0 else float(diff > 0.0)
        return 0.5 * (1.0 + math.erf(diff / (sd * math.sqrt(2.0))))

    def los_matrix(self) -> dict[tuple[str, str], float]:
        """:meth:`los` for every ordered pair of distinct bots (``n^2`` values: small fields)."""
        return {(a, b): self.los(a, b) for a in self.names for b in self.names if a != b}

    def overlapping(self, a: str, b: str) -> bool:
        """Whether the 95% intervals ``elo ± ci95`` of ``a`` and ``b`` overlap. Far stricter
        than a test of the difference (two intervals can overlap while the difference is
        clearly non-zero): the tables use :meth:`separated` instead."""
        ra, rb = self._by_name[a], self._by_name[b]
        return abs(ra.elo - rb.elo) <= ra.ci95 + rb.ci95

    def diff_ci95(self, a: str, b: str) -> float:
        """Half-width (Elo) of the 95% interval of ``elo_a - elo_b``."""
        return Z95 * self.sd_diff(a, b)

    def separated(self, a: str, b: str) -> bool:
        """Whether ``a`` and ``b`` are separated at 95%: the interval of the difference
        ``elo_a - elo_b ± diff_ci95`` excludes 0. Exactly when :meth:`los` is above 97.5% or
        below 2.5% (the same normal approximation), so the marks agree with the LOS matrix."""
        diff = self._by_name[a].elo - self._by_name[b].elo
        return abs(diff) > self.diff_ci95(a, b)



_KEY = np.int64(1 << 32)  # a pair's key: i * _KEY + j, ranks i < j


class LadderTotals:
    """A ladder's units summed per pair of bots that met: the sufficient statistics of the fit
    (:func:`fit_totals`), kept up to date unit by unit, so that a refit costs ``O(bots +
    pairs)`` vectorised work however many units and matches lie behind them.

    ``names``: the bots, sorted; a pair ``(i, j)`` (``i < j``: ranks in ``names``) is oriented
    from the bot first by name. ``keys`` (``m``, int64, ascending): ``i * 2**32 + j``;
    ``stats`` (``8 x m``, float64), per pair: ``G`` games, ``S`` points of ``i``, ``S2 = sum c
    s^2``, ``SG = sum c g s``, ``G2 = sum c g^2``, ``U = sum c`` units, ``W`` wins of ``i`` and
    ``D`` draws, with ``s`` the unit's points of ``i``, ``g`` its games and ``c`` its count (the
    losses of ``i`` are ``G - W - D``; wins, losses and draws split a unit as
    :func:`fit_units` does by default, from its first bot's side). The ladder's points are
    multiples of ½, so every sum is exact in float64: the totals do not depend on the order in
    which units were added, and removing a unit (``c = -1``) restores them exactly.

    Memory: 72 bytes per pair (1M pairs: 72 MB) and the names."""

    FIELDS = ("G", "S", "S2", "SG", "G2", "U", "W", "D")

    def __init__(self) -> None:
        self.names: list[str] = []
        self.layout: tuple | None = None
        """The last fit's ``(bots, Layout, pairs)``, reused by :func:`fit_totals` (:data:`RELAYOUT`)."""
        self._index: dict[str, int] = {}
        self.keys = np.zeros(0, np.int64)
        self.stats = np.zeros((len(self.FIELDS), 0))

    def __len__(self) -> int:
        """Pairs of bots with totals (some may hold no unit any more: ``U == 0``)."""
        return int(self.keys.size)

    def ranks(self, names: Sequence[str]) -> np.ndarray:
        """The ranks of ``names`` (int64 array) in :attr:`names`, adding the bots not seen yet
        (their arrival renumbers the ranks after them; the pairs' keys follow, in order)."""
        new = set(names).difference(self._index)
        if new:
            merged = sorted(new.union(self.names))
            index = {x: k for k, x in enumerate(merged)}
            if self.keys.size:
                remap = np.fromiter((index[x] for x in self.names), np.int64, len(self.names))
                self.keys = remap[self.keys // _KEY] * _KEY + remap[self.keys % _KEY]  # monotone: still sorted
            self.names, self._index = merged, index
        return np.fromiter(map(self._index.__getitem__, names), np.int64, len(names))

    def add_units(self, names: Sequence[str], a: np.ndarray, b: np.ndarray, s: np.ndarray, g: np.ndarray,
                  c: np.ndarray) -> None:
        """Add units: bot ``names[a[k]]`` scored ``s[k]`` points in ``g[k]`` games against
        ``names[b[k]]``, counted ``c[k]`` times (negative: taken back). ``a``, ``b``: integer
        arrays indexing ``names``; ``s``, ``g``, ``c``: arrays of the same length. Units are not
        checked (the store's are valid; :func:`fit_units` says what is)."""
        s, g, c = (np.asarray(x, float) for x in (s, g, c))
        rank = self.ranks(names)
        ra, rb = rank[np.asarray(a, np.int64)], rank[np.asarray(b, np.int64)]
        flip = ra > rb
        s_lo = np.where(flip, g - s, s)
        win = np.floor(s)
        draw = (s - win >= 0.25).astype(float)
        w_lo = np.where(flip, g - win - draw, win)
        cg = c * g
        self._accumulate(np.minimum(ra, rb), np.maximum(ra, rb),
                         np.stack([cg, c * s_lo, c * s_lo * s_lo, cg * s_lo, cg * g, c, c * w_lo, c * draw]))

    def _accumulate(self, i: np.ndarray, j: np.ndarray, rows: np.ndarray) -> None:
        if i.size == 0:
            return
        keys, inv = np.unique(i * _KEY + j, return_inverse=True)
        sums = np.stack([np.bincount(inv, r, keys.size) for r in rows])
        pos = np.searchsorted(self.keys, keys)
        found = pos < self.keys.size
        found[found] = self.keys[pos[found]] == keys[found]
        self.stats[:, pos[found]] += sums[:, found]
        if not found.all():
            new = ~found
            self.keys = np.insert(self.keys, pos[new], keys[new])
            self.stats = np.insert(self.stats, pos[new], sums[:, new], axis=1)

    def as_dict(self) -> dict[tuple[str, str], tuple[float, ...]]:
        """``{(bot, bot): totals}`` of the pairs holding a unit (for tests and comparisons)."""
        keep = self.stats[5] != 0
        i, j = self.keys[keep] // _KEY, self.keys[keep] % _KEY
        return {(self.names[x], self.names[y]): tuple(col) for x, y, col in
                zip(i.tolist(), j.tolist(), self.stats[:, keep].T.tolist())}

    def results(self) -> int:
        """The games the totals hold (a ladder's finished, not aborted, matches)."""
        return int(round(float(self.stats[0].sum())))


def fit_totals(totals: LadderTotals, variance: str = "robust", start: Mapping[str, float] | None = None,
               intervals: str = "auto") -> Fit:
    """:func:`fit_units` on a ladder's :class:`LadderTotals`: the same ratings, intervals and
    tallies as on the units they sum (up to rounding in the last digits), in ``O(bots + pairs)``
    vectorised work before the solves. The field is the bots of the pairs holding a unit.
    ``intervals`` as in :func:`fit_units`, or ``"none"``: ratings alone, every ``ci95`` NaN
    (the background fitter refits the intervals less often than the ratings:
    :mod:`arena.schedule.fitter`). Raises ``ValueError`` for another ``variance`` or ``intervals``."""
    if variance not in ("model", "robust"):
        raise ValueError(f"variance must be 'model' or 'robust', not {variance!r}")
    if intervals not in ("auto", "exact", "blocks", "probing", "none"):
        raise ValueError(f"intervals must be 'auto', 'exact', 'blocks', 'probing' or 'none', not {intervals!r}")
    keep = totals.stats[5] > 0
    # (read in place when every pair holds a unit, as usual: a copy of a million pairs' totals is 25 ms)
    keys, stats = (totals.keys, totals.stats) if keep.all() else (totals.keys[keep], totals.stats[:, keep])
    i, j = keys // _KEY, keys % _KEY
    used = np.zeros(len(totals.names), bool)
    used[i], used[j] = True, True
    bots = totals.names
    if not used.all():  # bots whose units were all taken back: not in the field
        rank = np.cumsum(used) - 1
        i, j = rank[i], rank[j]
        bots = [x for x, u in zip(totals.names, used.tolist()) if u]
    n = len(bots)
    if n == 0:
        return Fit([], [], variance)
    gg, ss, s2, sg, g2, u, w, d = stats
    pairs = Pairs(n, i, j, gg, ss, s2, sg, g2, u, np.bincount(i, ss, n) + np.bincount(j, gg - ss, n))

    def tallies() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        loss = gg - w - d
        out = (np.bincount(i, w, n) + np.bincount(j, loss, n), np.bincount(i, loss, n) + np.bincount(j, w, n),
               np.bincount(i, d, n) + np.bincount(j, d, n))
        return tuple(np.rint(x).astype(np.int64) for x in out)  # type: ignore[return-value]

    cached = getattr(totals, "layout", None)  # (bots, layout, pairs): the last fit's, reused while still close
    reuse = cached[1] if cached and len(totals) <= cached[2] * RELAYOUT and cached[0] == bots else None
    hint = layout_hint(bots, pairs, cached[0], cached[1]) if cached and reuse is None else None
    fitted = _solve(bots, pairs, _start(bots, start), variance, intervals, tallies, reuse, hint)
    if fitted.layout is not reuse:
        totals.layout = (bots, fitted.layout, len(totals))
    return fitted


def _fit(
    units: Mapping[tuple[str, str, float, int], int],
    tallies: list[tuple[str, str, int, int, int]] | None,
    names: Iterable[str],
    variance: str,
    start: Mapping[str, float] | None = None,
    intervals: str = "auto",
) -> Fit:
    """Shared core: ``units`` counts each distinct ``(a, b, score of a, games)``; ``tallies``
    as in :func:`fit_units` (None: the default split); ``start`` Elo ratings to start from."""
    if variance not in ("model", "robust"):
        raise ValueError(f"variance must be 'model' or 'robust', not {variance!r}")
    if intervals not in ("auto", "exact", "blocks", "probing"):
        raise ValueError(f"intervals must be 'auto', 'exact', 'blocks' or 'probing', not {intervals!r}")
    keys = list(units)
    m = len(keys)
    a_names, b_names = list(map(itemgetter(0), keys)), list(map(itemgetter(1), keys))
    bots = sorted(set(names).union(a_names, b_names))
    n = len(bots)
    if n == 0:
        return Fit([], [], variance)
    index = {b: i for i, b in enumerate(bots)}
    a = np.fromiter(map(index.__getitem__, a_names), np.int64, m)
    b = np.fromiter(map(index.__getitem__, b_names), np.int64, m)
    s = np.fromiter(map(itemgetter(2), keys), float, m)
    g = np.fromiter(map(itemgetter(3), keys), float, m)
    c = np.fromiter(units.values(), float, m)
    if np.any(c < 0) or np.any(c != np.floor(c)):
        raise ValueError("unit counts must be whole numbers >= 0")
    _check(keys, a, b, s, g)
    if not c.all():  # units counted 0 times: not played (their bots stay in the field, without games)
        keep = c > 0
        a, b, s, g, c = a[keep], b[keep], s[keep], g[keep], c[keep]
    theta0 = _start(bots, start)
    pairs = aggregate(n, a, b, s, g, c)
    return _solve(bots, pairs, theta0, variance, intervals, lambda: _tallies(n, index, tallies, a, b, s, g, c))


def _start(bots: list[str], start: Mapping[str, float] | None) -> np.ndarray:
    """Strengths (natural-log units) to start Newton's method from: ``start`` (Elo by bot),
    the anchor for a bot it does not name; all at the anchor without ``start``."""
    if not start:
        return np.zeros(len(bots))
    return (np.fromiter((start.get(x, ANCHOR) for x in bots), float, len(bots)) - ANCHOR) / _SCALE


class _Order:
    """An earlier fit's layout known by its order alone (``position``: a place per bot), as
    :func:`layout_hint` reads it."""

    def __init__(self, position: np.ndarray) -> None:
        self.position = position


def stored_layout(places: Mapping[str, int]) -> tuple[list[str], Any, int]:
    """A :attr:`LadderTotals.layout` from the places a fit stored (``ladder.place``, revision
    0005: bot -> place in its layout), for a fitter that starts: its first fit tries that order
    (:func:`layout_hint`) beside a fresh one and never reuses it as it is (it counts no pairs)."""
    names = list(places)
    return names, _Order(np.array([places[x] for x in names], np.int64)), 0


def layout_places(totals: LadderTotals) -> dict[str, int] | None:
    """Each bot's place in the layout of the last fit of ``totals`` (what
    :meth:`arena.store.results.Results.save_ladder_fit` stores), or None if no fit laid the
    field out (a small field's fits need no layout)."""
    cached = totals.layout
    if cached is None or cached[1] is None:
        return None
    return dict(zip(cached[0], cached[1].position.tolist()))


def layout_hint(bots: list[str], pairs: Pairs, earlier: list[str], layout: Any) -> np.ndarray | None:
    """An order of ``bots`` (one number per bot, :class:`arena.stats.layout.Layout`'s ``key``)
    from an earlier fit's ``layout`` of the bots ``earlier``: each bot at its place there, a
    newcomer at the mean place of the opponents it has there (after every placed bot if none),
    so that a ladder keeps its order while a few bots paired at random would send a fresh
    reverse Cuthill-McKee order's levels across the chain (:attr:`arena.stats.information.Model.layout`
    keeps the shorter of the two). None if no bot of ``bots`` was in the earlier fit."""
    index = {b: k for k, b in enumerate(earlier)}
    at = np.array([index.get(b, -1) for b in bots], np.int64)
    known = at >= 0
    if not known.any():
        return None
    n = len(bots)
    place = np.where(known, layout.position[np.maximum(at, 0)], 0).astype(float)
    if not known.all():
        a, b = np.concatenate([pairs.i, pairs.j]), np.concatenate([pairs.j, pairs.i])
        met = ~known[a] & known[b]
        total = np.bincount(a[met], place[b[met]], n)
        count = np.bincount(a[met], minlength=n)
        last = place[known].max() + 1.0
        place = np.where(known, place, np.where(count > 0, total / np.maximum(count, 1), last))
    return np.argsort(np.argsort(place, kind="stable"), kind="stable")


def _solve(bots: list[str], pairs: Pairs, theta0: np.ndarray, variance: str, intervals: str,
           tallies: Callable[[], tuple[np.ndarray, np.ndarray, np.ndarray]], layout: Any = None,
           hint: np.ndarray | None = None) -> Fit:
    """The fit of the aggregated ``pairs`` of the sorted ``bots`` from ``theta0``: ratings
    best first (then by name), with intervals (``intervals``: ``"auto"``, ``"exact"``,
    ``"probing"``, or ``"none"``: no interval computed, every ``ci95`` NaN) and the win/loss/draw
    counts ``tallies()`` gives per bot."""
    n = len(bots)
    with one_blas_thread():
        model = Model(pairs, ROBUST_PRIOR_UNITS, layout, hint)
        settled: list[Intervals] = []

        def settle(at: np.ndarray, p: np.ndarray, h: sp.csr_matrix) -> Callable[[np.ndarray], np.ndarray] | None:
            """The intervals at Newton's iterate ``at`` (its last, expectedly), whose block
            factors take its step exactly (:func:`arena.stats.information.newton`); not for the
            dense exact intervals of a small field (cheap, and computed at theta itself)."""
            if intervals == "exact" or intervals == "auto" and n <= EXACT_BOTS:
                return None
            settled[:] = [_intervals(model, at, p, h, variance, intervals)]
            return settled[0].exact_solve()

        theta, last, p, h = newton(model, theta0, settle=settle if intervals != "none" else None)
        elo = ANCHOR + _SCALE * (theta - theta.mean())
        order = np.lexsort((np.arange(n), -elo))  # best first, then by name
        got = None
        if intervals != "none":  # settled: at Newton's last iterate (its exact step tiny); else at theta itself
            got = settled[0] if settled and settled[0].theta is last else \
                _intervals(model, theta, *model.at(theta)[::2], variance, intervals)
    ci95 = np.full(n, np.nan) if got is None else (Z95 * _SCALE) * np.sqrt(got.var)
    wins, losses, draws = tallies()
    out = [Rating(name=bots[i], elo=e, ci95=w, games=x + y + z, wins=x, losses=y, draws=z)
           for i, e, w, x, y, z in zip(order.tolist(), elo[order].tolist(), ci95[order].tolist(),
                                       wins[order].tolist(), losses[order].tolist(), draws[order].tolist())]
    fitted = Fit(out, bots, variance, got)
    fitted.layout = model._layout  # noqa: SLF001 - None where no step needed it (small fields)
    return fitted


def _intervals(model: Model, theta: np.ndarray, p: np.ndarray, h: sp.csr_matrix, variance: str,
               method: str) -> Intervals:
    """The :class:`Intervals` at ``theta`` (``p``, ``h`` there), for the rating neighbours in the
    order of ``theta``, model or robust (``variance``)."""
    n = theta.size
    order = np.lexsort((np.arange(n), -theta))  # best first, then by index (as the ratings' names)
    return Intervals(model, theta, h, model.meat(theta, p) if variance == "robust" else None, order, method)


def _check(keys: list, a: np.ndarray, b: np.ndarray, s: np.ndarray, g: np.ndarray) -> None:
    """Raise ``ValueError`` naming the first unit with a bot playing itself, ``g < 1`` or a score
    outside ``[0, g]``."""
    bad = np.flatnonzero((a == b) | (g < 1) | ~((s >= 0.0) & (s <= g)))
    if bad.size:
        x, y, sc, gm = keys[int(bad[0])]
        if x == y:
            raise ValueError(f"{x!r} cannot play itself")
        if gm < 1:
            raise ValueError(f"unit of {x!r} vs {y!r} has {gm} games")
        raise ValueError(f"score {sc!r} of {x!r} vs {y!r} is not in [0, {gm}]")


def _tallies(n: int, index: dict[str, int], tallies: list | None, a: np.ndarray, b: np.ndarray,
             s: np.ndarray, g: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Wins, losses and draws per bot (integer arrays): from ``tallies`` or the default split."""
    if tallies is not None:
        w, lo, d = np.zeros(n, np.int64), np.zeros(n, np.int64), np.zeros(n, np.int64)
        for x, y, tw, tl, td in tallies:
            i, j = index[x], index[y]
            w[i] += tw
            lo[i] += tl
            d[i] += td
            w[j] += tl
            lo[j] += tw
            d[j] += td
        return w, lo, d
    win = np.floor(s)
    draw = (s - win >= 0.25).astype(float)
    loss = g - win - draw
    w = np.bincount(a, c * win, n) + np.bincount(b, c * loss, n)
    lo = np.bincount(a, c * loss, n) + np.bincount(b, c * win, n)
    d = np.bincount(a, c * draw, n) + np.bincount(b, c * draw, n)
    return np.rint(w).astype(np.int64), np.rint(lo).astype(np.int64), np.rint(d).astype(np.int64)
