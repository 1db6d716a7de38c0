"""The linear algebra of the rating fit (:mod:`arena.stats.rating`): the sparse information matrix, Newton's method on
it, and the variances of the anchored ratings, with no dense matrix beyond :data:`EXACT_BOTS` bots.

Everything here is on the natural-log scale of strengths ``theta``; :mod:`arena.stats.rating` turns it into Elo
points. The model, prior and robust variance are described there.

Shapes. ``n`` bots, ``m`` pairs of bots that met (each pair once, ``i < j``). The information matrix ``H`` (``n x
n``) is a weighted graph Laplacian (weight ``w_e = G_e p_e (1 - p_e)`` per pair, ``G_e`` its games) plus the prior's
diagonal ``p0 (1 - p0)``: ``n + 2 m`` non-zeros, one CSR pattern built once per fit (:class:`Model`). The robust
"meat" ``M`` has the same pattern (weight ``v_e``: the pair's shrunk squared residuals). Time and memory are ``O(n +
m)`` per conjugate-gradient step, except the exact intervals (``O(n^3)``, only up to ``EXACT_BOTS``).

Layout and coarse space. The bots are laid out in one dimension by the reverse Cuthill-McKee order of the graph of
who met whom (:class:`arena.stats.layout.Layout`, per connected component): a breadth-first order, in which bots
that met are close. On a ladder whose bots meet their rating neighbours it recovers the chain from the weakest to the
strongest, whatever the current ratings (which are only estimates) say. The coarse space (:class:`Coarse`) holds,
per component, piecewise linear "hat" functions of the layout's rank, one node every ``2 x`` the median layout
distance of two bots that met (at least :data:`arena.stats.layout.COARSE_SPAN`), but only where they are smooth
modes of the graph (:data:`MIN_HATS`, :data:`SMOOTH_HATS`: a chain-like component); elsewhere (a random, expander
graph: the slow mode is the constant) the component's indicator alone; nothing for a lone bot.

Solves. Newton's steps solve ``H x = g`` exactly with LAPACK up to :data:`DENSE_NEWTON_BOTS` bots, beyond by the
conjugate gradient preconditioned with Jacobi plus the coarse correction ``K = V (V^T H V)^-1 V^T``, to a relative
residual of 1e-10. Measured on 10,000 bots with 40 opponents each: 15-25 iterations on a random or a banded graph,
where Jacobi alone needs 220 on the banded one (season store, 1M pairs: 18-41, a warm refit 0.8-1.1 s CPU); a sparse
LU takes 0.07 s on the banded graph but a minute on the random one (nearly dense fill-in): not used.

Intervals, exact (up to ``EXACT_BOTS`` bots): ``C = H^-1`` by a dense Cholesky factorisation, the sandwich ``C M C``
from ``M C`` (sparse times dense), of which only the diagonal and the entries of rating neighbours are formed; the
anchored variance is ``(P C P)_ii`` with ``P = I - 11^T/n``.

Intervals, by blocks (beyond ``EXACT_BOTS`` bots, when the layout is narrow): exact, by the block-tridiagonal
selected inversion of :mod:`arena.stats.blocks`, the long pairs added back by Woodbury's identity at the rank of the
pairs or, when fewer, of the bots they join (a scattered subset paired at random) (the season's 10,000 bots,
~200 opponents each, make 40-44 blocks of up to 300; 1.5-1.7 s of CPU on a busy machine, the costs in
:mod:`arena.stats.blocks`; in single precision, within 1e-5 of double's 1e-13: :data:`arena.stats.blocks.PRECISION`).

Intervals, scalable (beyond ``EXACT_BOTS`` bots): probing (after J. M. Tang and Y. Saad, "A probing method for
computing the diagonal of a matrix inverse", Numer. Linear Algebra Appl. 19, 2012) of what remains once the coarse
part is taken out exactly. ``H^-1 = K + R`` holds exactly for the Galerkin coarse part ``K`` (smooth, global,
computed on the small coarse matrix), and ``R = H^-1 - K`` decays fast away from the diagonal. Each bot gets one of
:data:`PROBES` colours (:func:`colours`: greedy in the layout's order, never the colour of a bot it met nor of its
rating neighbours, the least recently used), each colour is a probe vector of seeded random signs, and one block
solve ``Y = H^-1 Z`` (relative residual 1e-3: the probing error dominates) gives ``(R z)_i z_i = R_ii`` plus the
entries of same-coloured bots, which are far apart in the graph. Where the coarse space is an indicator only, the
explicit first-order part of ``R`` between bots that met (``D^-1 W D^-1``) is subtracted before reading. Slow modes
the coarse space missed show as low-energy Ritz vectors of ``span(R Z)`` and join it (:func:`_slow_modes`; two
leagues joined by a few matches, say). The sandwich is ``K M K + K M R + R M K + R M R``: the first term exact, the
others probed the same way (a second block solve), ``R M R`` less its own first-order part. The anchoring uses the
exact solves ``H^-1 1`` and ``H^-1 M H^-1 1``. Last, :data:`CHECKED` bots spread over the ratings are solved exactly
too (relative residual 1e-7): their variances replace the estimates, and the largest relative error found on them is
the fit's ``check``.

Accuracy of the probed intervals against the exact ones, on synthetic fields of 2,000 bots
(:mod:`arena.stats.synthetic`: 40 units and 40 opponents per bot, half duplicate pairs, draws; seed 2000), largest /
rms error of the standard deviation per bot and per difference of rating neighbours, robust: random 2.1 / 0.51 % and
1.5 / 0.40 %; neighbours 2.7 / 0.70 % and 4.5 / 1.05 %; mixed 5.2 / 0.89 % and 5.0 / 0.90 % (model: about the same).
The check saw 0.8-1.4 % on these fields; larger fields and two ladders joined by a few matches do worse (4,000 bots,
mixed: 10.7 % per bot; two ladders of 1,000 joined by 5 matches: 33 %; the season, ~200 opponents per bot: 18-28 %),
which is why a narrow layout gets the exact blocks. Any pair not of rating neighbours gets an exact variance on
demand (:meth:`Intervals.pair`).
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import numpy as np
import scipy.linalg as la
import scipy.sparse as sp

from arena.stats import blocks
from arena.stats.layout import Layout

EXACT_BOTS = 2000
"""Largest field whose intervals are computed exactly (a dense ``n x n`` inverse, ``O(n^3)``:
0.7 s of CPU for the whole fit at 2,000 bots on the development machine, 0.17 s at 1,000, where
probing would take 0.17 s and 0.08 s); larger fields are probed."""
DENSE_NEWTON_BOTS = 400
"""Largest field whose Newton steps are solved with a dense Cholesky factorisation (exact and,
at this size, faster than iterating); larger fields use the preconditioned conjugate gradient."""
PROBES = 48
"""Probe vectors of the scalable intervals (colours of the layout's order)."""
MIN_HATS = 8
"""A component gets hat functions only if that makes more of them than this: fewer means that
bots that met are as far apart in the layout as the component is long (an expander-like graph,
with no smooth modes but the constant)."""
CHECKED = 8
"""Bots the probed intervals also solve exactly: the probing's check (:attr:`Intervals.check`)."""
SLOW_MODES = 0.2
"""Energy (fraction of the Jacobi norm) below which a Ritz vector of the first probes' solutions
joins the coarse space (:func:`_slow_modes`). Measured on 2,000 bots: the lowest is 0.86 on a
random graph, 0.92 on a ladder of rating neighbours, 0.61 on a mixture of both, and 0.015 for
two random leagues of 1,000 bots joined by 5 matches, whose difference is then caught."""
SMOOTH_HATS = 0.5
"""A component keeps its hat functions when their energy ``v^T H v`` is below this fraction
of their Jacobi norm ``v^T D v``. Measured on 2,000 bots: 0.33-0.34 on ladders of rating
neighbours (40 or 150 opponents each), 0.99 with hats of 20 ranks on a random graph (hats no
smoother than noise); the component's indicator is then kept alone."""
LAYOUT_GAMES = 0.25
"""The layout (:class:`Layout`) may order the bots by the pairs that played at least this
fraction of the games of either bot's most played pair (a ladder's chain of rating neighbours),
leaving out pairs met once or twice (random opponents), a few of which make a breadth-first order
jump across the chain. Season store with 50 random duplicate pairs added: every pair's layout
gave 176-183 CG iterations per Newton step, this one 18 (0.15-0.3: 18-22)."""
LAYOUT_GAIN = 0.75
"""That layout is used only where it brings the bots that met closer (median distance below this fraction)."""
NEWTON_TOL = 1e-9
"""The accuracy Newton's method reaches on the strengths (natural-log units; 2e-7 Elo)."""
MAX_STEP = 2.0
"""Most a Newton step moves one strength (natural-log units: about 350 Elo): a newcomer who won
all his few games is far from the maximum, and a full step from there, which the log-likelihood
of the whole field accepts, could throw his strength out of floating point's reach (his
``p (1 - p)`` 0 in every pair: a singular information matrix)."""
NEWTON_QUADRATIC = 1e-6
"""Newton stops after a step moving no strength by more than this: converging quadratically, it
is then within about 1e-12 of :data:`NEWTON_TOL`'s bound (sparing a last, confirming solve)."""
SETTLE_STEP = 1e-3
"""A Newton step below this (natural-log units) is followed by one expected below
:data:`NEWTON_QUADRATIC`: its iterate is where :func:`newton` lets its caller compute the
intervals (``settle``), whose block factors then take that last step exactly. Measured on the
season's field (10,000 bots): a step of 2.8e-4 was followed by one of 2.8e-9, 1.1e-1 by 6.9e-4,
6.9e-4 by 2.9e-8 (so about 0.06 times the square)."""
PROBE_SEED = 20260421
"""Seed of the probes' random signs: the same results give the same intervals."""


class Pairs:
    """The units aggregated per pair of bots ``i < j`` (arrays of length ``m``): games ``G``,
    points of ``i`` ``S`` and the sums the robust variance needs (``S2 = sum c s^2``, ``SG =
    sum c g s``, ``G2 = sum c g^2``, ``U = sum c``: units), plus each bot's points ``score``
    (length ``n``). Built from per-unit arrays by :func:`aggregate`."""

    __slots__ = ("n", "i", "j", "G", "S", "S2", "SG", "G2", "U", "score")

    def __init__(self, n: int, i, j, G, S, S2, SG, G2, U, score) -> None:  # noqa: N803 - the model's names
        self.n, self.i, self.j, self.G, self.S, self.S2, self.SG, self.G2, self.U, self.score = (
            n, i, j, G, S, S2, SG, G2, U, score)


def aggregate(n: int, a: np.ndarray, b: np.ndarray, s: np.ndarray, g: np.ndarray, c: np.ndarray) -> Pairs:
    """Aggregate units (bot indices ``a``, ``b``, points of ``a`` ``s``, games ``g``, count ``c``:
    arrays of one length) per pair of bots; the order of the units does not matter."""
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    s_lo = np.where(a == lo, s, g - s)
    keys, inv = np.unique(lo * n + hi, return_inverse=True)
    m = keys.size
    cg = c * g
    return Pairs(n, keys // n, keys % n, np.bincount(inv, cg, m), np.bincount(inv, c * s_lo, m),
                 np.bincount(inv, c * s_lo * s_lo, m), np.bincount(inv, cg * s_lo, m),
                 np.bincount(inv, cg * g, m), np.bincount(inv, c, m),
                 np.bincount(a, c * s, n) + np.bincount(b, c * (g - s), n))


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * x))


class Model:
    """The log-likelihood of :mod:`arena.stats.rating` on ``pairs``, with the sparse pattern of
    ``H`` and ``M`` built once (CSR, ``n + 2 m`` entries): :meth:`at` fills it for a ``theta``."""

    def __init__(self, pairs: Pairs, robust_prior_units: float, layout: Layout | None = None,
                 hint: np.ndarray | None = None) -> None:
        self.pairs = pairs  # layout: an earlier fit's, of the same bots (any order is right; a close one is fast)
        self.hint = hint  # an order to try beside the layout computed afresh (see layout)
        self.k = robust_prior_units
        n, m = pairs.n, pairs.i.size
        rows = np.concatenate([pairs.j, np.arange(n), pairs.i])
        cols = np.concatenate([pairs.i, np.arange(n), pairs.j])
        # the CSR order of these entries by scipy's linear-time conversion, which keeps this order in a row:
        # sorted already (lower, diagonal, upper) for pairs by (i, j), i < j, as totals come (the sort: a check)
        where = sp.csr_matrix((np.arange(1, rows.size + 1, dtype=float), (rows, cols)), shape=(n, n))
        where.sort_indices()
        order = where.data.astype(np.int64) - 1
        self._perm = order
        self.indices = where.indices
        self.indptr = where.indptr
        self.rows = rows[order]
        self.offdiag = self.rows != self.indices
        self.keys = self.rows.astype(np.int64) * n + self.indices  # sorted: entry lookup
        self.m = m
        self._layout: Layout | None = layout if layout is not None and layout.position.size == pairs.n else None
        self.reused = self._layout is not None

    @property
    def layout(self) -> Layout:
        """The :class:`Layout` of the pattern (computed once; see :data:`LAYOUT_GAMES`), or the
        order ``hint`` gave (an earlier fit's, newcomers put in: :func:`arena.stats.rating.layout_hint`)
        when its pairs are no longer apart, by the median (:meth:`Layout.length`): a few bots
        paired at random across a ladder send the reverse Cuthill-McKee order's breadth-first
        levels all over the chain (the season bench: median distance 142 against 61 in the
        earlier order, and the blocks then found no narrow layout)."""
        if self._layout is None:
            q, n = self.pairs, self.pairs.n
            pattern = sp.csr_matrix((np.ones(self.indices.size), self.indices, self.indptr), shape=(n, n))
            self._layout = Layout(pattern)
            most = np.zeros(n)  # each bot's most games against one opponent
            np.maximum.at(most, np.concatenate([q.i, q.j]), np.concatenate([q.G, q.G]))
            strong = q.G >= LAYOUT_GAMES * np.minimum(most[q.i], most[q.j])
            if not strong.all():
                i, j = np.concatenate([q.i[strong], q.j[strong]]), np.concatenate([q.j[strong], q.i[strong]])
                other = Layout(pattern, sp.csr_matrix((np.ones(i.size), (i, j)), shape=(n, n)))
                if other.length(pattern) < LAYOUT_GAIN * self._layout.length(pattern):
                    self._layout = other
            if self.hint is not None:  # an earlier fit's order, kept while it is the shorter
                hinted = Layout(pattern, key=self.hint)
                if hinted.length(pattern) <= self._layout.length(pattern):
                    self._layout = hinted
        return self._layout

    def matrix(self, edge: np.ndarray, diag: np.ndarray) -> sp.csr_matrix:
        """The symmetric matrix with ``-edge`` off the diagonal (per pair) and ``diag`` on it."""
        data = np.concatenate([neg := -edge, diag, neg])[self._perm]  # (negated once for both triangles)
        n = self.pairs.n
        return sp.csr_matrix((data, self.indices, self.indptr), shape=(n, n))

    def entries(self, mat: sp.csr_matrix, i: np.ndarray, j: np.ndarray) -> np.ndarray:
        """``mat[i, j]`` for index arrays (``mat`` of this pattern; 0 where ``i, j`` never met)."""
        key = i.astype(np.int64) * self.pairs.n + j
        pos = np.minimum(np.searchsorted(self.keys, key), self.keys.size - 1)
        return np.where(self.keys[pos] == key, mat.data[pos], 0.0)

    def at(self, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray, sp.csr_matrix]:
        """``(p, gradient, H)`` at ``theta``: ``p`` per pair (``i`` beats ``j``), the gradient of
        the log-likelihood with the prior, the observed information."""
        q = self.pairs
        p = _sigmoid(theta[q.i] - theta[q.j])
        p0 = _sigmoid(theta)
        gp = q.G * p
        grad = 0.5 - p0 + q.score - np.bincount(q.i, gp, q.n) - np.bincount(q.j, q.G - gp, q.n)
        w = gp * (1.0 - p)
        d = p0 * (1.0 - p0) + np.bincount(q.i, w, q.n) + np.bincount(q.j, w, q.n)
        return p, grad, self.matrix(w, d)

    def loglik(self, theta: np.ndarray) -> float:
        """The log-likelihood with the prior (up to a constant)."""
        q = self.pairs
        x = theta[q.i] - theta[q.j]
        # log p = -log(1 + e^-x), log(1 - p) = -log(1 + e^x)
        return float(-(q.S * np.logaddexp(0.0, -x)).sum() - ((q.G - q.S) * np.logaddexp(0.0, x)).sum()
                     - 0.5 * (np.logaddexp(0.0, -theta) + np.logaddexp(0.0, theta)).sum())

    def meat(self, theta: np.ndarray, p: np.ndarray) -> sp.csr_matrix:
        """``M`` of the sandwich: per pair the squared unit residuals ``sum c (s - g p)^2``
        shrunk toward the model's ``G p (1 - p)`` with ``k`` virtual units, plus the prior."""
        q = self.pairs
        r2 = q.S2 - 2.0 * p * q.SG + p * p * q.G2
        model = q.G * p * (1.0 - p)
        v = (q.U * r2 + self.k * model) / (q.U + self.k)
        p0 = _sigmoid(theta)
        d = p0 * (1.0 - p0) + np.bincount(q.i, v, q.n) + np.bincount(q.j, v, q.n)
        return self.matrix(v, d)


# ------------------------------------------------------------------ solvers


class Coarse:
    """The two-level preconditioner on ``H``: Jacobi plus a coarse space ``V`` built per
    connected component of the model's :class:`Layout`: hat functions of the layout's rank every
    ``span`` ranks (the layout's span unless given) in a component of more than
    :data:`MIN_HATS` ``x span`` bots where they are smooth (:data:`SMOOTH_HATS`; the ``cb``
    "big" coarse nodes), the component's indicator in any other component (``cs`` "small"
    nodes), nothing for a lone bot (Jacobi is exact there); :meth:`augment` may add dense
    columns (slow modes found later). A bot has at most two coarse functions (``c0``/``c1`` with weights
    ``w0``/``w1``). The coarse matrix ``V^T H V`` is block diagonal: kept as a dense ``cb x cb``
    matrix (the large components) and a diagonal of ``cs`` (the small ones); so is its inverse
    (:attr:`hci`, :attr:`hci_small`). :meth:`k` applies ``K = V (V^T H V)^-1 V^T``,
    :meth:`precondition` ``D^-1 + K``."""

    def __init__(self, h: sp.csr_matrix, model: Model, span: int | None = None) -> None:
        n = h.shape[0]
        self.model = model
        self.d = h.diagonal()
        size = model.layout.size
        span = span or model.layout.span
        hatted = size > MIN_HATS * span
        self._build(h, hatted, span)
        if self.cb:  # keep the hats only where they are smooth modes of the graph
            hc = np.diag(self._hc)
            vdv = (np.bincount(self.c0, self.w0**2 * self.d, self.cb + self.cs)
                   + np.bincount(self.c1, self.w1**2 * self.d, self.cb + self.cs))[:self.cb]
            owner = self.hat_component
            energy = np.bincount(owner, hc, size.size) / np.maximum(np.bincount(owner, vdv, size.size), 1e-300)
            rough = hatted & (energy >= SMOOTH_HATS)
            if rough.any():
                self._build(h, hatted & ~rough, span)
        self.hci = la.cho_solve(la.cho_factor(self._hc, lower=True, check_finite=False), np.eye(self.cb),
                                check_finite=False) if self.cb else np.zeros((0, 0))
        self.hci_small = 1.0 / self._hc_small
        self.u = np.zeros((n, 0))
        self.gu = np.zeros((0, 0))

    def _build(self, h: sp.csr_matrix, hatted: np.ndarray, span: int) -> None:
        """The coarse space with hats in the components where ``hatted``, an indicator in the
        other components of two bots or more."""
        n = h.shape[0]
        layout = self.model.layout
        size, comp, rank = layout.size, layout.comp, layout.rank
        m = size[comp]
        hats = np.where(hatted, -(-(size - 1) // span) + 1, 0)
        big_at = np.concatenate([[0], np.cumsum(hats)[:-1]])
        small = ~hatted & (size >= 2)
        small_at = np.cumsum(small) - 1
        self.cb = cb = int(hats.sum())
        self.cs = int(small.sum())
        self.hat_component = np.repeat(np.arange(size.size), hats)
        self.kind = np.where(hats[comp] > 0, 2, np.where(small[comp], 1, 0))
        x = np.where(self.kind == 2, rank * (hats[comp] - 1) / np.maximum(m - 1, 1), 0.0)
        lo = np.minimum(np.floor(x).astype(np.int64), np.maximum(hats[comp] - 2, 0))
        t = np.where(self.kind == 2, x - lo, 0.0)
        self.c0 = np.where(self.kind == 2, big_at[comp] + lo, np.where(self.kind == 1, cb + small_at[comp], 0))
        self.c1 = np.where(self.kind == 2, self.c0 + 1, self.c0)
        self.w0 = np.where(self.kind > 0, 1.0 - t, 0.0)
        self.w1 = t
        rows = np.concatenate([np.arange(n), np.arange(n)])
        self.v = sp.csr_matrix((np.concatenate([self.w0, self.w1]), (rows, np.concatenate([self.c0, self.c1]))),
                               shape=(n, max(cb + self.cs, 1)))
        self.v.eliminate_zeros()
        self.vt = self.v.T.tocsr()
        self._hc, self._hc_small = self.project(h)

    def project(self, mat: sp.csr_matrix) -> tuple[np.ndarray, np.ndarray]:
        """``V^T mat V`` for a matrix of the model's pattern: ``(dense cb x cb, diagonal cs)``
        (two sparse products: ``V`` has at most two entries per bot)."""
        cb, cs = self.cb, self.cs
        product = (self.vt @ mat @ self.v).tocsr()
        dense = product[:cb, :cb].toarray() if cb else np.zeros((0, 0))
        return dense, product.diagonal()[cb:cb + cs]

    def _vsolve(self, y: np.ndarray) -> np.ndarray:
        """``(V^T H V)^-1 y`` for ``y`` of the coarse space's length (rows; ``c`` or ``c x r``)."""
        cb, cs = self.cb, self.cs
        small = self.hci_small[:, None] if y.ndim == 2 else self.hci_small
        return np.concatenate([self.hci @ y[:cb], y[cb:cb + cs] * small, y[cb + cs:] * 0.0])

    def k(self, x: np.ndarray) -> np.ndarray:
        """``K x`` (``x``: ``n`` or ``n x r``)."""
        return self.v @ self._vsolve(self.vt @ x) + self.k_extra(x)

    def k_extra(self, x: np.ndarray) -> np.ndarray:
        """The part of ``K x`` from the columns :meth:`augment` added (0 if none)."""
        if not self.u.shape[1]:
            return np.zeros_like(x)
        return self.u @ (self.gu @ (self.u.T @ x))

    def precondition(self, r: np.ndarray) -> np.ndarray:
        """``(D^-1 + K) r``."""
        return (r / self.d[:, None] if r.ndim == 2 else r / self.d) + self.k(r)

    def augment(self, h: sp.csr_matrix, u: np.ndarray) -> None:
        """Add the columns of ``u`` (``n x q``: slow modes the hats and indicators missed) to the
        coarse space, made ``H``-orthogonal to it so that the coarse matrix stays block
        diagonal: ``K = V (V^T H V)^-1 V^T + U (U^T H U)^-1 U^T``."""
        u = u - self.k(h @ u)
        self.u = np.hstack([self.u, u]) if self.u.shape[1] else u
        hu = h @ self.u
        self.gu = la.inv(self.u.T @ hu)
        self.gu = 0.5 * (self.gu + self.gu.T)

    def _vrows(self, p: np.ndarray, i: np.ndarray) -> np.ndarray:
        """``(V P)[i]`` for a coarse-space matrix ``P`` (``c x q``)."""
        return self.w0[i, None] * p[self.c0[i]] + self.w1[i, None] * p[self.c1[i]]

    def k_entries(self, i: np.ndarray, j: np.ndarray) -> np.ndarray:
        """``K[i, j]`` for index arrays ``i``, ``j``."""
        out = self._ventries((self.hci, self.hci_small), i, j)
        if self.u.shape[1]:
            out += np.einsum("ij,ij->i", self.u[i] @ self.gu, self.u[j])
        return out

    def kmk_entries(self, mat: sp.csr_matrix, i: np.ndarray, j: np.ndarray) -> np.ndarray:
        """``(K mat K)[i, j]`` for a matrix of the model's pattern and index arrays ``i``, ``j``."""
        dense, diag = self.project(mat)
        out = self._ventries((self.hci @ dense @ self.hci, diag * self.hci_small**2), i, j)
        if self.u.shape[1]:
            mu = mat @ self.u
            cross = self._vsolve(self.vt @ mu) @ self.gu  # (V^T H V)^-1 V^T mat U (U^T H U)^-1
            uu = self.gu @ (self.u.T @ mu) @ self.gu
            out += (np.einsum("ij,ij->i", self._vrows(cross, i), self.u[j])
                    + np.einsum("ij,ij->i", self.u[i], self._vrows(cross, j))
                    + np.einsum("ij,ij->i", self.u[i] @ uu, self.u[j]))
        return out

    def _ventries(self, s: tuple[np.ndarray, np.ndarray], i: np.ndarray, j: np.ndarray) -> np.ndarray:
        """``(V S V^T)[i, j]`` for index arrays ``i``, ``j`` and a block-diagonal coarse
        matrix ``S = (dense cb x cb, diagonal cs)``; 0 between components."""
        big, small = s
        out = np.zeros(i.size)
        both = (self.kind[i] == 2) & (self.kind[j] == 2)
        x, y = i[both], j[both]
        if x.size:
            out[both] = (self.w0[x] * self.w0[y] * big[self.c0[x], self.c0[y]]
                         + self.w0[x] * self.w1[y] * big[self.c0[x], self.c1[y]]
                         + self.w1[x] * self.w0[y] * big[self.c1[x], self.c0[y]]
                         + self.w1[x] * self.w1[y] * big[self.c1[x], self.c1[y]])
        same = (self.kind[i] == 1) & (self.kind[j] == 1) & (self.c0[i] == self.c0[j])
        out[same] = small[self.c0[i[same]] - self.cb]
        return out


def block_cg(h: sp.csr_matrix, b: np.ndarray, precondition: Callable[[np.ndarray], np.ndarray],
             rtol: float | np.ndarray, maxiter: int = 2000) -> np.ndarray:
    """Solve ``h X = b`` (``b``: ``n`` or ``n x r``) by the preconditioned conjugate gradient,
    each column on its own (its own step lengths) until its residual is below ``rtol`` (a
    number, or one per column) times its right-hand side's norm; finished columns leave the
    block. Raises ``ArithmeticError`` if
    a column has not converged after ``maxiter`` steps."""
    vector = b.ndim == 1
    bb = b[:, None] if vector else b
    out = np.zeros_like(bb)
    goal = rtol * np.linalg.norm(bb, axis=0)
    active = np.flatnonzero(np.linalg.norm(bb, axis=0) > goal)
    x = np.zeros((bb.shape[0], active.size))
    r = bb[:, active].copy()
    goal = goal[active]
    z = precondition(r)
    p = z.copy()
    rz = np.einsum("ij,ij->j", r, z)
    for _ in range(maxiter):
        if active.size == 0:
            break
        q = h @ p
        alpha = rz / np.einsum("ij,ij->j", p, q)
        x += p * alpha
        r -= q * alpha
        done = np.sqrt(np.einsum("ij,ij->j", r, r)) <= goal
        if done.any():
            out[:, active[done]] = x[:, done]
            keep = ~done
            active, x, r, p, rz, goal = active[keep], x[:, keep], r[:, keep], p[:, keep], rz[keep], goal[keep]
            if active.size == 0:
                break
        z = precondition(r)
        rz_new = np.einsum("ij,ij->j", r, z)
        p = z + p * (rz_new / rz)
        rz = rz_new
    else:
        raise ArithmeticError(f"conjugate gradient: {active.size} columns not converged in {maxiter} steps")
    return out[:, 0] if vector else out


class Solver:
    """Solves with ``H``: a dense Cholesky factorisation for ``n <= dense_bots``, else
    :func:`block_cg` preconditioned by ``coarse`` (a :class:`Coarse`; one built for ``H`` and the
    model's layout if None: a preconditioner need not be built for this very ``H``, Newton's
    steps reuse the first one)."""

    def __init__(self, h: sp.csr_matrix, model: Model, coarse: Coarse | None = None,
                 dense_bots: int | None = None) -> None:
        self.h = h
        self.dense = h.shape[0] <= (DENSE_NEWTON_BOTS if dense_bots is None else dense_bots)
        self.coarse = coarse
        if self.dense:
            self.factor = la.cho_factor(h.toarray(), lower=True, check_finite=False)
        elif coarse is None:
            self.coarse = Coarse(h, model)

    def solve(self, b: np.ndarray, rtol: float = 1e-10) -> np.ndarray:
        """``H^-1 b`` (``b``: ``n`` or ``n x r``); ``rtol`` for the iterative solves."""
        if self.dense:
            return la.cho_solve(self.factor, b, check_finite=False)
        assert self.coarse is not None
        return block_cg(self.h, b, self.coarse.precondition, rtol)


def newton(model: Model, theta: np.ndarray, max_iter: int = 100,
           settle: Callable[[np.ndarray, np.ndarray, sp.csr_matrix], Callable[[np.ndarray], np.ndarray] | None]
           | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray, sp.csr_matrix]:
    """Maximise the log-likelihood from ``theta`` (a copy is made). A full Newton step is taken
    unless it would lower the log-likelihood (far from the maximum), then it is halved until it
    does not; no strength moves by more than :data:`MAX_STEP` in one step. It stops after a step
    below :data:`NEWTON_QUADRATIC` and returns ``(theta, last, p, H)``: the maximum, and the
    iterate ``last`` that step started from with ``p`` and ``H`` there (within
    :data:`NEWTON_QUADRATIC` of the maximum: the intervals are computed there, sparing a last
    evaluation). ``settle(last, p, H)``, if given, is called at an iterate reached by a step
    below :data:`SETTLE_STEP`, whose own step is then expected far below
    :data:`NEWTON_QUADRATIC` (quadratic convergence): a caller that wants the intervals computes
    them there and may return an exact solve with that ``H`` (the intervals' block factors), which
    takes the step instead of the conjugate gradient; if that step is not below
    :data:`NEWTON_QUADRATIC` after all, Newton goes on and may call it again. Raises
    ``ArithmeticError`` if it has not converged in ``max_iter`` steps."""
    theta = np.array(theta, dtype=float)
    coarse = None
    size = np.inf
    for _ in range(max_iter):
        p, grad, h = model.at(theta)
        here = theta.copy()  # (what settle sees is what is returned as last: the same array)
        exact = settle(here, p, h) if settle is not None and size < SETTLE_STEP else None
        if exact is not None:
            step = exact(grad)
        else:
            solver = Solver(h, model, coarse)
            coarse = solver.coarse
            step = solver.solve(grad)
        np.clip(step, -MAX_STEP, MAX_STEP, out=step)
        size = float(np.abs(step).max()) if step.size else 0.0
        if size > 0.5:  # a big step: make sure it climbs
            base = model.loglik(theta)
            t = 1.0
            while t > 1e-6 and model.loglik(theta + t * step) < base:
                t *= 0.5
            step = t * step
            size *= t
        theta += step
        if size < NEWTON_QUADRATIC:  # near the maximum: what is left is of the order of size^2
            return theta, here, p, h
    raise ArithmeticError(f"Newton's method did not converge in {max_iter} steps")


# ------------------------------------------------------------------ intervals


class Intervals:
    """Variances (natural-log units squared) of the anchored strengths ``theta - mean theta``:
    ``var`` per bot and ``pairs`` ``{(i, j): var(theta_i - theta_j)}`` (``i < j``) for the pairs
    of rating neighbours in ``order``, computed exactly (``method="exact"``, the default up to
    :data:`EXACT_BOTS` bots; ``"blocks"``, exact too, the default beyond where
    :func:`arena.stats.blocks.plan` finds a narrow layout) or probed (``"probing"``); :meth:`pair` gives any other pair
    exactly on demand and :meth:`dense` the whole anchored covariance. ``check`` is, for probed
    intervals, the largest relative error of the per-bot standard deviation found on
    :data:`CHECKED` bots solved exactly as well (0 for exact intervals)."""

    def __init__(self, model: Model, theta: np.ndarray, h: sp.csr_matrix, m: sp.csr_matrix | None,
                 order: np.ndarray, method: str = "auto") -> None:
        self.model, self.theta, self.h, self.m = model, theta, h, m
        self.n = h.shape[0]
        self._solver: Solver | None = None
        self._dense: np.ndarray | None = None
        i, j = np.minimum(order[:-1], order[1:]), np.maximum(order[:-1], order[1:])
        self._blocks: blocks.Blocks | None = None
        starts, pattern = None, sp.csr_matrix((np.ones(model.indices.size), model.indices, model.indptr), shape=h.shape)
        for _ in range(2 if method in ("auto", "blocks") and self.n > (EXACT_BOTS if method == "auto" else 1) else 0):
            starts = blocks.plan(np.argsort(model.layout.position), pattern)
            if starts is not None or not model.reused:
                break
            model._layout, model.reused = None, False  # an earlier fit's layout: try this field's own
        starts = np.array([0, self.n]) if starts is None and method == "blocks" else starts  # asked for: dense
        self.method = method if method != "auto" else "exact" if self.n <= EXACT_BOTS else \
            "blocks" if starts is not None else "probing"
        if self.method == "probing" and model.reused:  # probing depends on the layout: this field's own
            model._layout, model.reused = None, False
        self.check = 0.0
        if self.n < 2:
            self.var, diff = np.zeros(self.n), np.zeros(0)  # a lone bot is the anchor
        elif self.method == "exact":
            self.var, diff = self._exact(i, j)
        elif self.method == "blocks":
            self.var, diff, self._blocks = blocks.intervals(h, m, np.argsort(model.layout.position), starts, i, j)
        else:
            self.var, diff, self.check = _probed(model, h, m, i, j)
        self.var = np.maximum(self.var, 0.0)
        known = ~np.isnan(diff)
        self.pairs = dict(zip(zip(i[known].tolist(), j[known].tolist()), np.maximum(diff[known], 0.0).tolist()))
        for x, y in zip(i[~known].tolist(), j[~known].tolist()):
            self.pairs[(x, y)] = self._pair(x, y)

    def _exact(self, i: np.ndarray, j: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        n = self.n
        c = blocks.spd_inverse(self.h.toarray())
        u = c.mean(axis=1)
        if self.m is None:
            diag, q, t = np.diag(c).copy(), u, float(u.mean())
            diff = c[i, i] + c[j, j] - 2.0 * c[i, j]
            if n <= 500:
                self._dense = c - u[:, None] - u[None, :] + t
        else:
            mc = self.m @ c
            diag = np.einsum("ij,ij->j", c, mc)
            mu = self.m @ u
            q, t = c @ mu, float(u @ mu)
            cross = np.einsum("ij,ij->j", c[:, i], mc[:, j])
            diff = diag[i] + diag[j] - 2.0 * cross
            if n <= 500:
                cmc = c @ mc
                self._dense = cmc - q[:, None] - q[None, :] + t
        return diag - 2.0 * q + t, diff

    def exact_solve(self) -> Callable[[np.ndarray], np.ndarray] | None:
        """``b -> H^-1 b`` (``b``: ``n``), exact, where the method has it at hand: the block
        factors (:meth:`arena.stats.blocks.Blocks.solve`), else None."""
        return self._blocks.solve if self._blocks is not None else None

    def pair(self, i: int, j: int) -> float:
        """``var(theta_i - theta_j)``: from the cache (rating neighbours), else from the dense
        covariance (computed on first use up to :data:`EXACT_BOTS` bots), else by one (model)
        or two (robust) conjugate-gradient solves to a relative residual of 1e-12."""
        if i == j:
            return 0.0
        key = (min(i, j), max(i, j))
        got = self.pairs.get(key)
        if got is None:
            with one_blas_thread():
                got = self._pair(i, j)
            self.pairs[key] = got
        return got

    def _pair(self, i: int, j: int) -> float:
        if self._dense is not None or self.n <= EXACT_BOTS:  # a small field: the whole matrix, once
            d = self.dense()
            return max(float(d[i, i] + d[j, j] - 2.0 * d[i, j]), 0.0)
        if self._blocks is not None:  # exact: X_ii + X_jj - 2 X_ij
            x = self._blocks.covariances(np.array([i, j, i]), np.array([i, j, j]))
            return max(float(x[0] + x[1] - 2.0 * x[2]), 0.0)
        b = np.zeros(self.n)
        b[i], b[j] = 1.0, -1.0
        x = self.solver().solve(b, 1e-12)
        return max(float(b @ x) if self.m is None else float(x @ (self.m @ x)), 0.0)

    def solver(self) -> Solver:
        """A :class:`Solver` for ``H`` (built once)."""
        if self._solver is None:
            self._solver = Solver(self.h, self.model)
        return self._solver

    def dense(self) -> np.ndarray:
        """The anchored covariance, ``n x n`` (natural-log units squared), exact. ``O(n^3)``:
        raises ``ValueError`` beyond :data:`EXACT_BOTS` bots."""
        if self._dense is None:
            if self.n > EXACT_BOTS:
                raise ValueError(f"{self.n} bots: too many for a dense covariance (at most {EXACT_BOTS})")
            with one_blas_thread():
                c = blocks.spd_inverse(self.h.toarray())
                if self.m is not None:
                    c = c @ (self.m @ c)
                u = c.mean(axis=1)
                self._dense = c - u[:, None] - u[None, :] + float(u.mean())
        return self._dense


def colours(model: Model, i: np.ndarray, j: np.ndarray, k: int) -> np.ndarray:
    """The probes' colours (``0 .. k-1`` per bot): greedy in the layout's order, each bot takes
    a colour that none of the bots it met has taken, nor its rating neighbours (the pairs
    ``(i[x], j[x])``, whose covariances are read off the probes), the one used least recently
    in the layout's order among those, so that bots of one colour are far apart in the graph.
    A bot that met ``k`` others or more has to share a colour with one of them: the least shared,
    then the least recently used; never with a rating neighbour (two of them, ``k > 2``).
    ``O(n + m)``, a Python loop over the bots."""
    n = model.pairs.n
    order = np.argsort(model.layout.position)
    ptr, adj = model.indptr, model.indices  # the bots met (and the bot itself, uncoloured yet)
    partner_ptr = np.concatenate([[0], np.cumsum(np.bincount(np.concatenate([i, j]), minlength=n))])
    partners = np.concatenate([j, i])[np.argsort(np.concatenate([i, j]), kind="stable")]
    col = np.full(n, k, np.int64)  # k: no colour yet, counted in a spare bin never chosen
    last = np.full(k + 1, -1.0)
    last[k] = np.inf
    big = float(n + 1)
    for step, v in enumerate(order.tolist()):
        clash = np.bincount(col[adj[ptr[v]:ptr[v + 1]]], minlength=k + 1) * big
        clash += np.bincount(col[partners[partner_ptr[v]:partner_ptr[v + 1]]], minlength=k + 1) * big * big
        c = int((clash + last).argmin())
        col[v] = c
        last[c] = step
    return col


class _Probes:
    """The probe vectors ``Z`` (``n x k``: bot ``i`` has ``sign[i]`` in column ``col[i]``) and how
    to read an operator's diagonal and ``(i, j)`` entries off its probes ``Y = A Z``."""

    def __init__(self, model: Model, i: np.ndarray, j: np.ndarray, k: int) -> None:
        n = model.pairs.n
        self.model, self.i, self.j, self.k, self.n = model, i, j, k, n
        self.col = colours(model, i, j, k)
        self.sign = np.where(np.random.default_rng(PROBE_SEED).random(n) < 0.5, -1.0, 1.0)
        self.z = np.zeros((n, k))
        self.z[np.arange(n), self.col] = self.sign

    def read(self, y: np.ndarray, explicit: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Diagonal and ``(i, j)`` entries (symmetrised) of ``A`` from ``y = A Z``, after
        subtracting a known part ``E`` of ``A`` given by its values on the model's pattern off
        the diagonal (``explicit``; ``E``'s entries are then exact, only ``A - E`` is probed)."""
        model, i, j, col, sign, n, k = self.model, self.i, self.j, self.col, self.sign, self.n, self.k
        ij = np.zeros(i.size)
        if explicit is not None:
            off, rows, cols = model.offdiag, model.rows, model.indices
            e = np.where(off, explicit, 0.0)
            y = y - np.bincount(rows[off] * k + col[cols[off]], e[off] * sign[cols[off]], n * k).reshape(n, k)
            ij = model.entries(sp.csr_matrix((e, cols, model.indptr), shape=(n, n)), i, j)
        diag = y[np.arange(n), col] * sign
        return diag, ij + 0.5 * (y[i, col[j]] * sign[j] + y[j, col[i]] * sign[i])

    def cross(self, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Diagonal and ``A[i, j] + A[j, i]`` of a non-symmetric ``A`` from ``y = A Z``."""
        col, sign, i, j = self.col, self.sign, self.i, self.j
        return y[np.arange(self.n), col] * sign, y[i, col[j]] * sign[j] + y[j, col[i]] * sign[i]


def _slow_modes(coarse: Coarse, h: sp.csr_matrix, rz: np.ndarray) -> np.ndarray:
    """Slow modes of ``H`` left in ``R Z`` (``n x q``, maybe ``q = 0``): the Ritz vectors of
    ``span(R Z)`` whose energy ``u^T H u`` is below :data:`SLOW_MODES` of ``u^T D u``. ``R``'s
    columns are local bumps but for the slow modes the coarse space missed (two leagues joined by
    a few matches, say), which they then carry across the whole field."""
    root = np.sqrt(coarse.d)
    left, sv, _ = np.linalg.svd(rz * root[:, None], full_matrices=False)
    basis = left[:, sv > 1e-8 * sv.max()] if sv.size and sv.max() > 0 else left[:, :0]
    if basis.shape[1] == 0:  # (an orthonormal basis of D^1/2 span(R Z): no spurious null directions)
        return np.zeros((rz.shape[0], 0))
    scaled = basis / root[:, None]
    values, vectors = la.eigh(scaled.T @ (h @ scaled))
    return scaled @ vectors[:, values < SLOW_MODES]


def _probed(model: Model, h: sp.csr_matrix, m: sp.csr_matrix | None, i: np.ndarray,
            j: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """The scalable intervals of the module docstring: per-bot anchored variances, the
    variances of the differences ``theta_i - theta_j`` for the pairs ``(i, j)`` (NaN for a pair
    whose two bots share a colour: the caller solves those), and the check: the largest
    relative error of the per-bot standard deviations on :data:`CHECKED` bots solved exactly
    (whose variances are then the exact ones)."""
    n, k = h.shape[0], PROBES
    coarse = Coarse(h, model)
    probes = _Probes(model, i, j, k)
    z, rows, cols, d = probes.z, model.rows, model.indices, coarse.d
    # R z = H^-1 (I - H K) z: solved directly (the right-hand side has no coarse part, so the
    # tolerance is relative to R, not to the far larger coarse part); then H^-1 1 for the anchoring
    # and the check: a few bots, spread over the ratings, solved exactly (anchored)
    sample = np.unique(np.concatenate([i[:1], j[-1:], i[np.linspace(0, i.size - 1, CHECKED).astype(int)]]))
    exact_rhs = -np.ones((n, sample.size)) / n
    exact_rhs[sample, np.arange(sample.size)] += 1.0
    rtol = np.concatenate([np.full(k, 1e-3), np.full(1 + sample.size, 1e-7)])
    y = block_cg(h, np.hstack([z - h @ coarse.k(z), np.ones((n, 1)), exact_rhs]), coarse.precondition, rtol)
    rz, h1, x_sample = y[:, :k], y[:, k], y[:, k + 1:]
    slow = _slow_modes(coarse, h, rz)
    if slow.shape[1]:
        coarse.augment(h, slow)
        rz = rz - coarse.k_extra(z)
    w_data = -h.data  # the pair weights off the diagonal
    # explicit first-order parts, where the coarse space is a component's indicator only (an
    # expander-like graph: R is H^-1 but for the constant, and its entries between bots that met
    # are close to the Neumann series' first term, D^-1 W D^-1). Measured on a random graph of
    # 2,000 bots: largest error 15% -> 2.7%; slightly worse where hats took the smooth part.
    first = coarse.kind[rows] != 2
    r_diag, r_ij = probes.read(rz, w_data / (d[rows] * d[cols]) * first)
    if m is None:
        full = coarse.k_entries(np.arange(n), np.arange(n)) + r_diag
        var = full - 2.0 * h1 / n + h1.sum() / n**2
        cov_ij = coarse.k_entries(i, j) + r_ij
        truth = np.einsum("ij,ij->j", exact_rhs, x_sample)
    else:
        mrz = m @ rz
        rtol = np.concatenate([np.full(k, 1e-3), [1e-7]])
        y2 = block_cg(h, np.hstack([mrz - h @ coarse.k(mrz), (m @ h1)[:, None]]), coarse.precondition, rtol)
        c1 = y2[:, k]
        md, v_data = m.diagonal(), -m.data
        # R M R's first-order part off the diagonal: (-v + w M_ll / d_l + w M_ii / d_i) / (d_i d_l)
        b1 = (-v_data + w_data * md[cols] / d[cols] + w_data * md[rows] / d[rows]) / (d[rows] * d[cols]) * first
        rmr_diag, rmr_ij = probes.read(y2[:, :k], b1)
        kmr_diag, kmr_ij = probes.cross(coarse.k(mrz))  # K M R, and R M K = (K M R)^T
        full = coarse.kmk_entries(m, np.arange(n), np.arange(n)) + 2.0 * kmr_diag + rmr_diag
        var = full - 2.0 * c1 / n + c1.sum() / n**2
        cov_ij = coarse.kmk_entries(m, i, j) + kmr_ij + rmr_ij
        truth = np.einsum("ij,ij->j", x_sample, m @ x_sample)
    error = float(np.abs(np.sqrt(np.maximum(var[sample], 0.0) / truth) - 1.0).max()) if sample.size else 0.0
    var[sample] = truth
    return var, np.where(probes.col[i] == probes.col[j], np.nan, full[i] + full[j] - 2.0 * cov_ij), error


_BLAS: list | None = None
_BLAS_LOCK = threading.Lock()


def _blas_thread_setters() -> list:
    """``openblas_set_num_threads_local`` of each OpenBLAS that numpy and scipy loaded (Linux,
    OpenBLAS >= 0.3.27); empty where there is none (another BLAS, another system)."""
    global _BLAS
    with _BLAS_LOCK:
        if _BLAS is None:
            found = []
            try:
                with open("/proc/self/maps") as maps:
                    paths = sorted({line.split()[-1] for line in maps if "openblas" in line.lower()})
                for path in paths:
                    setter = getattr(ctypes.CDLL(path), "openblas_set_num_threads_local", None)
                    if setter is not None:
                        setter.restype, setter.argtypes = ctypes.c_int, [ctypes.c_int]
                        found.append(setter)
            except OSError:
                found = []
            _BLAS = found
        return _BLAS


@contextmanager
def one_blas_thread() -> Iterator[None]:
    """Run the block with OpenBLAS on one thread (in this thread only, restored after). The fit
    runs beside a server: measured on the 2-core machine with other work running, a 200-bot fit
    took 0.06-0.09 s on one BLAS thread and 0.2-1.3 s on two (OpenBLAS's threads spin waiting
    for a core). No effect without OpenBLAS."""
    setters = _blas_thread_setters()
    before = [f(1) for f in setters]
    try:
        yield
    finally:
        for f, n in zip(setters, before):
            f(n)
