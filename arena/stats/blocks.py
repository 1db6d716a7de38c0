"""Exact intervals of a large field whose information matrix is block tridiagonal in the layout's
order (:class:`arena.stats.layout.Layout`): a ladder whose bots meet their rating neighbours.

Shapes. ``n`` bots, laid out in the layout's order and cut into ``N`` consecutive blocks
(sizes ``s_K``, :func:`partition`) so that no pair of bots that met lies more than one block
apart: ``H`` (``n x n``, the information) and ``M`` (the robust meat, same pattern) are then block
tridiagonal. Every quantity below is a dense block (``s_K x s_L``).

Method (a selected inversion: the block form of K. Takahashi, J. Fagan and M.-S. Chen, 1973, as
two-filter recursions). The forward Schur complements ``S_1 = H_11``, ``S_{K+1} = H_{K+1,K+1} -
H_{K+1,K} S_K^-1 H_{K,K+1}`` and the backward ones ``S'_N = H_NN``, ``S'_K = H_KK - H_{K,K+1}
S'_{K+1}^-1 H_{K+1,K}`` give ``A_K = -H_{K+1,K} S_K^-1`` and ``B_K = -H_{K,K+1} S'_{K+1}^-1``.
With ``C = H^-1``: ``C_KK = (S_K + S'_K - H_KK)^-1``, and a row block of ``C`` far from the
diagonal is a product: ``C_{T,J} = C_TT B_T B_{T+1} ... B_{J-1}`` for ``J > T``. The sandwich
``X = C M C`` follows from the same factors: with ``F_1 = M_11``, ``F_{K+1} = A_K F_K A_K^T +
M_{K+1,K+1} + A_K M_{K,K+1} + M_{K+1,K} A_K^T`` (what ``M`` weighs on the rows of ``C`` left of
``K``) and its mirror ``E_K`` from the right, ``X_TT = C_TT (F_T + E_T - M_TT) C_TT``; ``X_{T,J}``
(``J > T``) walks the chain from ``T`` to ``J`` carrying only the rows of the pairs asked for
(:meth:`Blocks.covariances`). Everything is exact up to rounding, in single precision by default
(:data:`PRECISION`: within 1e-5 of double on the season): no probe, no sampling.

Cost: ``O(sum_K s_K^3)`` for the factors and the sandwich (about ``26 s^3`` flops per block of
``s`` bots, robust), nearly all in matrix products: at these sizes (~250) OpenBLAS's triangular
solves take 4-5 times a product's time per flop on one thread, so the solves with ``S_K`` are
products with ``L_K^-1`` (``trtri``). Then ``O(s^2)`` per walked row and block for the pairs of
rating neighbours, which may lie many blocks apart in the layout (the ratings are estimates, the
layout follows who met whom: on the season-shaped field 17% of them share a block, 15% are in
adjacent ones, the rest up to 30 blocks apart); a walk's rows are its bots' until they are cut
to a few directions. Measured on that field (10,000 bots, 10 million matches, ``python -m
arena.tools.bench_fit --synthetic``: 40 blocks of up to 280 and 109 long pairs), CPU on a shared
2-core machine: the intervals 1.5-1.7 s after the ratings' 0.45-0.5 s (before this module's
rework: 2.2-2.5 s), of which the blocks' factors and sandwich 0.6-0.7 s, the neighbours'
covariances 0.3-0.4 s, the long pairs 0.2 s, :func:`plan` 0.07 s.
Memory: a few dense blocks per block (``8 s^2`` bytes each). A random (expander) graph has no
narrow layout (one block of ``n``): :func:`partition` says so and the caller uses another method.

Long pairs (:func:`plan` leaves the longest out of the blocks) come back as a low-rank correction
(:meth:`Blocks._long`, :func:`low_rank`) whose rank is the number of pairs or, when fewer, of the
bots they join. The second form is what a contest's random pairing of a scattered subset makes:
the season bench's 500 connected bots of 10,000 played 3,300 long pairs among themselves in a
minute, a correction of rank 495 instead of 3,300 (which :data:`MAX_LONG` refused: the intervals
were probed, 8.8-9.2 s of CPU and only within 30%). Its ``Q = C_b U`` and ``Y = C_b M_b C_b U``
are made of the columns of ``C_b`` and of the sandwich at those bots, carried along the chain of
factors (:func:`arena.stats.columns.at`: those of far bots through their low rank), and the
low-rank part of every variance and covariance comes from ``Z Q^T + Q Z^T``. ``Z`` is one
product per block of rows whose columns are those of the bots near that block
(:data:`arena.stats.columns.NEAR_BLOCKS`) and the low rank of the others (:meth:`Blocks._half`,
from the columns' sweeps): far from its bot, a column of ``C_b`` or of ``C_b M_b C_b`` is the
field's smooth common mode, so the far columns seen from a block have
rank 1 or 2 at 1e-8 (the season bench's store: 550 of 632 columns far from each block). On the
store the season bench left (rank 632, 40 blocks), old and new code alternated, the intervals
within 3e-13: ``Z`` took two ``n x r x r`` products, 0.29-0.39 s, and takes 0.11-0.14 s;
``Y`` took a band product and two band solves at full width; the correction took 0.6-0.8 s and
takes 0.35 s; a full refit took 2.7-3.1 s of CPU and takes 2.1-2.2 s (in double precision;
1.5 s in single, :data:`PRECISION`). The ``n x r`` arrays are
few: a fresh one costs its page faults (system time). Earlier stages' figures are in
docs/contests.md (Running a season).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.linalg as la
import scipy.sparse as sp

from arena.stats import columns

PRECISION = np.dtype(np.float32)
"""The floating-point type of the blocks' dense work (factors, sandwich, walks, the long pairs'
columns), unless :class:`Blocks` is given another: single precision, because the intervals are
statistical estimates shown to a tenth of an Elo point, and single precision does a block's
products, factorisations and memory traffic in half the time of double (on the development
machine: a 230-square product 0.22 ms against 0.45 ms). The ratings do not depend on it: Newton's
last step is a block solve refined once against ``H`` in double precision (:meth:`Blocks.solve`),
and the anchoring's solves too. Measured against double precision on the season bench's stores
(10,000 bots; the seed alone and after a bench run with 648 long pairs): every interval within
7e-6 (relative; 1.6e-4 Elo), every difference of rating neighbours' variances within 1.8e-5, the
ratings within 4e-12 Elo; a full refit 1.38 s and 2.1 s of CPU in double precision, 1.03 s and
1.56 s in single (with the rank cuts below). Tests check both precisions against the dense
inverse (double to 1e-9, single to 1e-4)."""

RANK_TOL = {np.dtype(np.float64): 1e-7, np.dtype(np.float32): 1e-6}
"""By precision (:data:`PRECISION`): directions below this fraction of the largest singular value
are dropped from the walked rows of :meth:`Blocks.covariances`. Double precision, season-shaped
field (10,000 bots): the standard deviations of the differences of rating neighbours then stay
within 1e-6 (relative) of those at 1e-9, with a third less work; 1e-4 would cost another tenth and
err by 1e-4; with walks of only their bots' rows: within 4.4e-8 of walks with no cut (1e-14).
Single precision rounds a row to about 1e-7 of its norm: its cut is above that (the walks'
Gram matrices are formed in double)."""
SKETCH = 64
"""Directions of the random sketch that first tries to cut a walked basis (:func:`_compress`):
three blocks from its start, the season-shaped field's keep 2-40 of ~230 at :data:`RANK_TOL`."""
PROBE_SEED = 20260421
"""Seed of the sketch: the same results give the same intervals."""
SMALL_BASIS = 24
"""A walked basis of at most this many rows is not cut further (nothing to gain)."""
MIN_BLOCK = 64
"""Fewest bots in a block (smaller blocks make more, smaller BLAS calls: slower)."""


def partition(order: np.ndarray, pattern: sp.csr_matrix, limit: int | None = None) -> np.ndarray:
    """Cut the bots, taken in ``order`` (a permutation of ``0 .. n-1``), into consecutive blocks
    such that two bots that met (``pattern``, ``n x n``, symmetric) lie in the same block or in
    two adjacent ones, but for pairs more than ``limit`` places apart (the long pairs, if a
    limit is given). Returns the blocks' starts in the order, ``N + 1`` values ending with ``n``.
    Greedy: each block reaches as far as the farthest bot the previous block met, and spans at
    least :data:`MIN_BLOCK` bots."""
    floor = MIN_BLOCK if limit is None else min(limit, MIN_BLOCK)
    return _greedy(_Reach(order, pattern, floor).farthest(limit))


class _Reach:
    """How far each bot reaches in ``order``: per place, the farthest place of a bot it met,
    counting every pair or only those at most a limit apart (:meth:`farthest`). The pairs at
    least ``floor`` places apart (``big_place``, ``big_other``, ``big_length``: each pair once,
    from its lower place) are kept aside, so that each limit costs ``O(n)`` plus their number."""

    def __init__(self, order: np.ndarray, pattern: sp.csr_matrix, floor: int) -> None:
        n = order.size
        position = np.empty(n, np.int64)
        position[order] = np.arange(n)
        counts = np.diff(pattern.indptr)
        mine = np.repeat(position, counts)
        other = position[pattern.indices]
        ahead = other - mine
        self.pairs = int((ahead > 0).sum())
        big = np.flatnonzero(ahead >= floor)
        self.big_place, self.big_other, self.big_length = mine[big], other[big], ahead[big]
        other[big] = mine[big]
        self.base = np.arange(n)
        full = np.flatnonzero(counts > 0)
        if full.size:
            far = np.maximum.reduceat(other, pattern.indptr[full])
            self.base[position[full]] = np.maximum(far, position[full])

    def farthest(self, limit: int | None) -> np.ndarray:
        """Per place, the farthest place met by any bot up to there, leaving out the pairs more
        than ``limit`` places apart (``limit >= floor``, or None: every pair)."""
        reach = self.base.copy()
        keep = slice(None) if limit is None else self.big_length <= limit
        np.maximum.at(reach, self.big_place[keep], self.big_other[keep])
        return np.maximum.accumulate(reach)


def _greedy(farthest: np.ndarray) -> np.ndarray:
    """The blocks' starts for :func:`partition`, given the farthest place met up to each place."""
    n = farthest.size
    starts = [0]
    end = min(MIN_BLOCK, n) - 1  # the first block: at least MIN_BLOCK
    while end < n - 1:
        start = starts[-1]
        starts.append(end + 1)
        end = max(int(farthest[end]), end + MIN_BLOCK, start)
        end = min(end, n - 1)
    starts.append(n)
    return np.asarray(starts, np.int64)


def cost(starts: np.ndarray) -> float:
    """The factors' work, in units of ``s^3`` flops summed over the blocks."""
    s = np.diff(starts).astype(float)
    return float((s**3).sum())


class Blocks:
    """The block-tridiagonal selected inversion of the module docstring for ``h`` (and ``m``,
    the meat, or None for the model variance), both ``n x n`` sparse of one symmetric pattern,
    in the bots' ``order`` cut at ``starts`` (:func:`partition`), the dense work in ``dtype``
    (default :data:`PRECISION`). Raises ``ArithmeticError`` if ``h`` is not positive definite,
    ``ValueError`` for a ``dtype`` other than float32 or float64."""

    def __init__(self, h: sp.csr_matrix, m: sp.csr_matrix | None, order: np.ndarray, starts: np.ndarray,
                 dtype: Any = None) -> None:
        self.n = n = order.size
        self.order, self.starts = order, starts
        self.nb = nb = starts.size - 1
        self.block = np.repeat(np.arange(nb), np.diff(starts))  # by place in the order
        self.place = np.empty(n, np.int64)
        self.place[order] = np.arange(n)
        cut = _Cut(h, self.place, self.block, starts)
        self.dtype = np.dtype(PRECISION if dtype is None else dtype)
        if self.dtype not in RANK_TOL:
            raise ValueError(f"blocks work in float32 or float64, not {self.dtype}")
        self._h = h  # (the residual of the solves' refinement)
        self.hd, self.hl = cut(h, self.dtype)
        self.md, self.ml = cut(m, self.dtype) if m is not None else (self.hd, self.hl)
        self.robust = m is not None
        self._factor()
        self.hd = self.hl = []  # (H's blocks: used; the memory goes to what follows)
        self.long = cut.long.size
        self._mirror: tuple[list, list, list] | None = None
        if self.robust:
            bm = self._sandwich()
            if self.long:  # the sandwich's mirror, for the long pairs' columns (columns.at)
                self._mirror = columns.mirror(self.md, self.ml, self.a, self.head, self.tail, bm)
        self.q = self.k = self.g = np.zeros((0, 0))
        self.y: np.ndarray | None = None  # (C_b M_b C_b at the long pairs' bots, until _half writes Z over it)
        self._z: np.ndarray | None = None
        self._bases: list[list[columns.Far]] = []  # (per block: the far columns' low rank, for _half)
        self._cols = np.zeros((0, 0))  # (the bots' columns of C_b, for _half)
        self._sub: sp.csr_matrix | None = None
        self._sinv: list[np.ndarray] | None = None
        if self.long:
            self._long(h, m, order[cut.long_a], order[cut.long_b], -h.data[cut.long], None if m is None else
                       -m.data[cut.long])
        self.md = self.ml = []  # (M's blocks: used)
        self._mirror = None

    def _long(self, h: sp.csr_matrix, m: sp.csr_matrix | None, a: np.ndarray, b: np.ndarray, w: np.ndarray,
              v: np.ndarray | None) -> None:
        """The long pairs ``(a, b)`` (bots), weights ``w`` in ``H`` and ``v`` in ``M``, left out of
        the blocks: ``H = H_b + U W U^T`` (:func:`low_rank`: ``U``'s columns the pairs' ``e_a - e_b``
        and ``W`` diagonal, or, when the pairs join fewer bots than there are pairs, the bots'
        ``e_x`` and ``W`` the pairs' Laplacian among them; ``M = M_b + U V U^T`` alike). By
        Woodbury's identity (in the form that needs no ``W^-1``: a Laplacian has none) ``C = C_b -
        Q K Q^T`` with ``Q = C_b U``, ``G = U^T Q`` and ``K = (I + W G)^-1 W``; and ``C M C = C_b M_b
        C_b - Q K Y^T - Y K Q^T + Q (K S K + R V R^T) Q^T`` with ``Y = C_b M_b Q``, ``S = Q^T M_b Q
        = U^T Y``, ``R = I - K G`` (``C U = Q R``). Both are made of the columns of ``C_b`` and of
        ``C_b M_b C_b`` at the ``t`` bots ``U`` touches (:func:`arena.stats.columns.at`, the far ones
        through their low rank; ``U = E sub``, ``sub`` ``t x r``, the identity when ``U``'s
        columns are the bots'), rows by place in the order. ``Q`` (``n x r``) is kept whole."""
        u, weights, meat = low_rank(self.n, a, b, w, v)
        r = u.shape[1]
        up = u.tocsr()[self.order]  # U's rows by place (r columns; one or two entries each)
        places = np.flatnonzero(np.diff(up.indptr))  # the places U touches, ascending
        self._bases = [[] for _ in range(self.nb)]  # (the far columns' low rank, for _half)
        cols, self.y = columns.at(self, places, self.robust and meat is not None, self._mirror, self._bases)
        sub = up[places]  # t x r: U = sub's rows at those places
        if sub.nnz == r == places.size:  # U's columns are the bots' e_x: Q is their columns of C_b
            perm = sub.indices  # place places[p] is U's column perm[p]: take U's columns in that order
            weights = weights[np.ix_(perm, perm)]
            meat = None if meat is None else meat[np.ix_(perm, perm)]
            self.q, self._sub = cols, None
        else:  # Q = C_b U = (the bots' columns of C_b) sub, and Y alike
            self.q, self._sub = columns.times_sparse(cols, sub.tocsc()), sub.tocsr()
        self._cols = cols
        uq = self._in_u(cols[places])  # G = U^T Q
        uq = 0.5 * (uq + uq.T)
        self.k = la.solve(np.eye(r) + weights @ uq, weights, check_finite=False)
        self.k = 0.5 * (self.k + self.k.T)
        if self.y is not None and meat is not None:
            s = self._in_u(self.y[places])  # S = Q^T M_b Q = U^T C_b M_b C_b U
            rr = np.eye(r) - self.k @ uq
            self.g = self.k @ (0.5 * (s + s.T)) @ self.k + rr @ meat @ rr.T
            self.g = 0.5 * (self.g + self.g.T)

    def _in_u(self, block: np.ndarray) -> np.ndarray:
        """``sub^T block sub`` (``r x r``) for a ``t x t`` block at the bots ``U`` touches: the
        block itself when ``U``'s columns are those bots'."""
        if self._sub is None:
            return block
        half = np.asarray(self._sub.T @ block)  # (sparse products: sub has one or two entries a column)
        return np.asarray(self._sub.T @ half.T).T

    def _columns(self, places: np.ndarray) -> np.ndarray:
        """``C_b[:, x]`` for the bots at ``places`` (ascending), ``n x t`` with rows by place
        (:func:`arena.stats.columns.at`)."""
        return columns.at(self, places, False)[0]

    def _factor(self) -> None:
        nb, hd, hl = self.nb, self.hd, self.hl
        # hl[k] = H_{k+1,k}; forward Schur complements S_k and A_k = -H_{k+1,k} S_k^-1 (and the
        # inverses of their Cholesky factors, L_k^-1: the block solves' products)
        self.fwd, self.a = [], []
        s_fwd: list = []
        s = hd[0]
        for k in range(nb):
            s_fwd.append(s)
            inverse = _inverse_factor(_cho(s))
            self.fwd.append(inverse)
            if k + 1 < nb:
                a, gram = _schur_step(inverse, hl[k].T)
                self.a.append(a)
                s = hd[k + 1] - gram
        # backward: S'_k, B_{k-1} = -H_{k-1,k} S'_k^-1, and C_kk = (S_k + S'_k - H_kk)^-1 at once (neither
        # complement kept: a block list less in memory)
        self.b: list = [None] * max(nb - 1, 0)
        self.c: list = [None] * nb
        s = hd[nb - 1]
        for k in range(nb - 1, -1, -1):
            self.c[k] = spd_inverse(s_fwd[k] + s - hd[k])
            s_fwd[k] = None
            if k > 0:
                self.b[k - 1], gram = _schur_step(_inverse_factor(_cho(s)), hl[k - 1])
                s = hd[k - 1] - gram

    def _sandwich(self) -> list[np.ndarray]:
        nb, md, ml, a, b = self.nb, self.md, self.ml, self.a, self.b
        f = [md[0].copy()]  # (F_k becomes the head in place, below)
        for k in range(nb - 1):  # A F A^T + A M_{k,k+1} + M_{k+1,k} A^T = Y + Y^T, Y = A (F A^T / 2 + M_{k,k+1})
            y = a[k] @ (0.5 * (f[k] @ a[k].T) + ml[k].T)
            f.append(y + y.T + md[k + 1])
        bm = [b[k] @ ml[k] for k in range(nb - 1)] + [np.zeros_like(md[nb - 1])]  # B_k M_{k+1,k}
        # a walk's step (_Walk.advance): p(J+1) = p(J) A_J^T + psi(J) W_J, with W_J = M_{J,J+1} +
        # B_J (M_{J+1,J+1} + B_{J+1} M_{J+2,J+1}) (what the rows psi B_J and psi B_J B_{J+1} weigh)
        self.w = [ml[k].T + b[k] @ (md[k + 1] + bm[k + 1]) for k in range(nb - 1)]
        self.x, self.tail, self.head = [None] * nb, [None] * nb, f
        e = md[nb - 1].copy()  # E_k, from the last block back
        for k in range(nb - 1, -1, -1):
            # the diagonal of X_kk = C_kk (F_k + E_k - M_kk) C_kk (C_kk symmetric): one product per block
            self.x[k] = np.einsum("ij,ij->i", self.c[k] @ (f[k] + e - md[k]), self.c[k])
            before = b[k - 1] @ e @ b[k - 1].T + md[k - 1] + bm[k - 1] + bm[k - 1].T if k else None
            # the right part of G_{T,J}: E_J - M_JJ - B_J M_{J+1,J}; the left part of G_{T,T}: F_T + B_T M_{T+1,T}
            e -= md[k]
            e -= bm[k]
            self.tail[k] = e
            f[k] += bm[k]
            e = before
        return bm

    def solve(self, rhs: np.ndarray) -> np.ndarray:
        """``H^-1 rhs`` (``rhs``: ``n`` or ``n x r``, bots' indices; float64), exact: block forward
        and back substitution on the factors, and the long pairs' correction; in a precision below
        double (:data:`PRECISION`), refined once with the residual ``rhs - H x`` in double
        precision (iterative refinement: the error is squared, to about 1e-11 relative)."""
        rhs = np.asarray(rhs, float)
        out = self._solve_once(rhs)
        if self.dtype != np.float64:
            out += self._solve_once(rhs - self._h @ out)
        return out

    def _solve_once(self, rhs: np.ndarray) -> np.ndarray:
        out = np.empty(rhs.shape)
        out[self.order] = self._solve_placed(rhs[self.order].astype(self.dtype, copy=False), self.long > 0)
        return out

    def _solve_placed(self, y: np.ndarray, long: bool = False) -> np.ndarray:
        """``H_b^-1 y`` (``y``: ``n`` or ``n x r``, rows by place, overwritten: the result), or
        ``H^-1 y`` if ``long`` (the long pairs' correction ``- Q K Q^T y``): a forward sweep
        ``y_{K+1} += A_K y_K`` and a backward one ``x_K = S_K^-1 y_K + A_K^T x_{K+1}`` (``A_K^T =
        -S_K^-1 H_{K,K+1}``), with ``S_K^-1`` dense (:meth:`_inverses`) for many columns, as
        ``L_K^-T (L_K^-1 y_K)`` for a few (the two products' cost beats forming it). In place,
        the products into two scratch blocks (a fresh ``n x r`` array costs its page faults)."""
        st, nb = self.starts, self.nb
        low = (self.k @ (self.q.T @ y)).astype(y.dtype) if long else None  # (in Q's precision: no n x r upcast)
        parts = [y[st[k]:st[k + 1]] for k in range(nb)]
        width = int(np.diff(st).max())
        one, two = np.empty((width, *y.shape[1:]), y.dtype), np.empty((width, *y.shape[1:]), y.dtype)
        for k in range(nb - 1):
            parts[k + 1] += np.matmul(self.a[k], parts[k], out=one[:parts[k + 1].shape[0]])
        inv = self._inverses() if y.ndim > 1 and y.shape[1] > FEW_COLUMNS else None
        for k in range(nb - 1, -1, -1):
            part = parts[k]
            within = two[:part.shape[0]]  # S_k^-1 y_k
            if inv is not None:
                np.matmul(inv[k], part, out=within)
            else:
                np.matmul(self.fwd[k].T, np.matmul(self.fwd[k], part, out=one[:part.shape[0]]), out=within)
            if k + 1 < nb:
                np.add(within, np.matmul(self.a[k].T, parts[k + 1], out=one[:part.shape[0]]), out=part)
            else:
                part[...] = within
        if low is not None:
            y -= self.q @ low
        return y

    def _inverses(self) -> list[np.ndarray]:
        """The forward Schur complements' inverses ``S_K^-1 = L_K^-T L_K^-1`` (dense, symmetric),
        computed once (LAPACK ``lauum``: ``s^3 / 3`` flops a block)."""
        if self._sinv is None:
            self._sinv = []
            for inverse in self.fwd:
                lower, info = la.get_lapack_funcs("lauum", (inverse,))(inverse, lower=1)
                if info:
                    raise ArithmeticError(f"lauum {info}")
                self._sinv.append(_symmetric(lower))
        return self._sinv

    def variances(self) -> np.ndarray:
        """The diagonal of ``C`` (model) or ``C M C`` (robust), per bot (not anchored)."""
        out = np.concatenate(self.x if self.robust else [np.diag(x) for x in self.c])
        if self.long:  # the diagonal of the low-rank part Z Q^T + Q Z^T (_half)
            out += 2.0 * np.einsum("ij,ij->i", self._half(), self.q)
        res = np.empty(self.n)
        res[self.order] = out
        return res

    def _half(self) -> np.ndarray:
        """``Z`` (``n x r``, rows by place), computed once, with ``Z Q^T + Q Z^T`` the long pairs'
        part of ``C`` or ``C M C``: ``Z = -Q K / 2`` (model) or ``Q G / 2 - Y K`` (robust; ``K``,
        ``G`` symmetric). Every variance and covariance of that part takes its rows from it.
        Block by block of rows, from the bots' columns of ``C_b`` and ``C_b M_b C_b`` (``Q = C_b E
        sub``: the coefficients ``sub G / 2`` and ``sub K``): those of the bots within
        :data:`arena.stats.columns.NEAR_BLOCKS` blocks whole, those farther on either side through
        the low rank the columns' sweeps carried them in (:class:`arena.stats.columns.Far`: far
        from its bot, a column is the field's smooth common mode). So the work grows with ``n r``
        times the near columns, not with ``n r^2``."""
        if self._z is None:
            def sub(c: np.ndarray) -> np.ndarray:  # (coefficients by bot, in the blocks' precision: cast once)
                return (c if self._sub is None else np.asarray(self._sub @ c)).astype(self.dtype)

            terms = [(self._cols, sub(0.5 * self.g), True), (self.y, sub(-self.k), False)] if self.robust else \
                [(self._cols, sub(-0.5 * self.k), True)]
            # Z written over Y (the bots' columns, when they are U's), a block of rows at a time
            out = self.y if self.robust and self._sub is None else np.empty_like(self.q)
            st, t = self.starts, self._cols.shape[1]
            for k in range(self.nb):
                fars = self._bases[k]
                near = slice(max([f.cols.stop for f in fars if f.before], default=0),
                             min([f.cols.start for f in fars if not f.before], default=t))
                lefts, rights = [], []  # Z's rows = hstack(lefts) @ vstack(rights): one product
                for mat, coef, is_q in terms:
                    lefts.append(mat[st[k]:st[k + 1], near])
                    rights.append(coef[near])
                    for f in fars:
                        lefts.append(f.vq if is_q else f.vx)
                        rights.append(f.w @ coef[f.cols])
                out[st[k]:st[k + 1]] = np.hstack(lefts) @ np.vstack(rights)
            self._z, self.y, self._cols, self._bases = out, None, np.zeros((0, 0)), []
        return self._z

    def _low_rank(self, i: np.ndarray, j: np.ndarray) -> np.ndarray:
        """The long pairs' part of ``C[i, j]`` or ``(C M C)[i, j]`` (bots): ``Z[i] . Q[j] + Q[i] . Z[j]``
        (:meth:`_half`)."""
        z, pi, pj = self._half(), self.place[i], self.place[j]
        out = np.empty(i.size)
        for c in range(0, i.size, CHUNK):  # (rows gathered a chunk at a time: no n x r copies)
            a, b = pi[c:c + CHUNK], pj[c:c + CHUNK]
            out[c:c + CHUNK] = np.einsum("ij,ij->i", z[a], self.q[b]) + np.einsum("ij,ij->i", self.q[a], z[b])
        return out

    def covariances(self, i: np.ndarray, j: np.ndarray) -> np.ndarray:
        """``C[i, j]`` (model) or ``(C M C)[i, j]`` (robust) for index arrays of bots, exact
        (:data:`RANK_TOL` aside): walking the blocks between each pair's two bots, all the pairs
        leaving one block at once (:class:`_Walk`): the first :data:`NEAR` blocks one source block
        at a time, at nearly full rank; then, the walked rows cut to a few directions, every
        source's walk together in one sweep (one product per block for all)."""
        pi, pj = self.place[i], self.place[j]
        lo, hi = np.minimum(pi, pj), np.maximum(pi, pj)
        out = np.empty(i.size)
        st, blk = self.starts, self.block
        handed: list[list[_Walk]] = [[] for _ in range(self.nb)]
        for t in np.unique(blk[lo]).tolist():
            rows = np.flatnonzero(blk[lo] == t)
            rows = rows[np.argsort(blk[hi[rows]], kind="stable")]
            walk = _Walk(self, t, rows, lo[rows] - st[t], hi[rows], blk[hi[rows]])
            for jb in range(t, min(t + NEAR, self.nb)):
                walk.finish(jb, out)
                if walk.over():
                    break
                walk.prune(jb)
                walk.advance([walk], jb)
                if jb >= t + 2:  # (closer, the rows have nearly full rank still: nothing to cut)
                    walk.compress()
            else:
                if t + NEAR < self.nb:
                    handed[t + NEAR].append(walk)
        active: list[_Walk] = []
        for jb in range(self.nb):
            active = [w for w in active + handed[jb] if not w.finish(jb, out)]
            if active and jb + 1 < self.nb:
                active[0].advance(active, jb)
        return out + self._low_rank(i, j) if self.long else out


FEW_COLUMNS = 8
"""Right-hand sides of at most this many columns are solved with the inverse Cholesky factors
(two products a block) rather than the Schur complements' inverses (one product, formed once)."""
CHUNK = 256
"""Rows of the long pairs' ``n x r`` factors gathered at a time (:meth:`Blocks._low_rank`)."""
NEAR = 4
"""Blocks walked one source block at a time (:meth:`Blocks.covariances`) before the walks join: by
then a walk keeps 6-10 directions on the season-shaped field (2 or 3: 110-125, and a slower sweep)."""


class _Walk:
    """The walk of :meth:`Blocks.covariances` from block ``t`` for the pairs ``rows`` (their
    places ``local`` within block ``t``, the other bots' places ``far`` in blocks ``target``,
    ascending). It carries, for the rows ``z`` of ``C_tt`` of the bots ``local``, ``psi(J) = z
    B_t ... B_{J-1}`` (rows of ``C_{t,J}``) and, robust, ``p(J) = z P_{t,J}`` (what ``M`` weighs
    left of ``J``), kept as ``coef @ basis``: these rows span fewer and fewer dimensions as ``J``
    moves away (the far covariances are smooth), so the basis is cut to its numerical rank
    (:data:`RANK_TOL`). A step to ``J + 1`` is ``psi B_J`` and ``p A_J^T + psi W_J``
    (:attr:`Blocks.w`)."""

    def __init__(self, blocks: Blocks, t: int, rows: np.ndarray, local: np.ndarray, far: np.ndarray,
                 target: np.ndarray) -> None:
        self.blocks, self.rows, self.far, self.target = blocks, rows, far, target
        bots, which = np.unique(local, return_inverse=True)
        z = blocks.c[t][bots]  # the basis: the rows of C_tt of the bots; coef picks them (one-hot)
        self.psi = z
        self.p = z @ blocks.head[t] if blocks.robust else np.zeros((z.shape[0], 0), z.dtype)
        self.coef = np.zeros((local.size, z.shape[0]), z.dtype)
        self.coef[np.arange(local.size), which] = 1.0
        self.done = 0
        self.last: np.ndarray | None = np.zeros(bots.size, np.int64)  # per basis row (a bot): its farthest block
        np.maximum.at(self.last, which, target)

    def prune(self, jb: int) -> None:
        """Drop the rows of the basis that no pair left to finish uses (bots whose pairs all
        ended by block ``jb``), until the basis is cut (its rows are no longer bots)."""
        if self.last is not None:
            keep = self.last > jb
            if not keep.all():
                self.coef, self.psi, self.p, self.last = self.coef[:, keep], self.psi[keep], self.p[keep], \
                    self.last[keep]

    def over(self) -> bool:
        """Whether every pair is done."""
        return self.done == self.rows.size

    def finish(self, jb: int, out: np.ndarray) -> bool:
        """Write to ``out`` the covariances of the pairs ending in block ``jb`` (the walk being
        there); returns :meth:`over`."""
        bl, done = self.blocks, self.done
        stop = done + int(np.searchsorted(self.target[done:], jb, side="right"))
        if stop > done:
            cols = self.far[done:stop] - bl.starts[jb]
            pick = self.coef[done:stop]
            if bl.robust:  # (fewer basis rows than pairs: through the basis)
                rows = pick @ (self.p + self.psi @ bl.tail[jb]) if pick.shape[1] < stop - done else \
                    pick @ self.p + (pick @ self.psi) @ bl.tail[jb]
                out[self.rows[done:stop]] = np.einsum("ij,ij->i", rows, bl.c[jb][cols])
            else:
                out[self.rows[done:stop]] = (pick @ self.psi)[np.arange(stop - done), cols]
            self.done = stop
        return self.over()

    @staticmethod
    def advance(walks: list[_Walk], jb: int) -> None:
        """Move ``walks`` (all at block ``jb``) to block ``jb + 1``: one product per operator for
        all of them (their bases stacked)."""
        bl = walks[0].blocks
        if len(walks) == 1:
            w = walks[0]
            if bl.robust:
                w.p = w.p @ bl.a[jb].T + w.psi @ bl.w[jb]
            w.psi = w.psi @ bl.b[jb]
            return
        sizes = np.cumsum([w.psi.shape[0] for w in walks])[:-1]
        psi = np.vstack([w.psi for w in walks])
        if bl.robust:
            p = np.vstack([w.p for w in walks]) @ bl.a[jb].T + psi @ bl.w[jb]
            for w, part in zip(walks, np.split(p, sizes)):
                w.p = part
        for w, part in zip(walks, np.split(psi @ bl.b[jb], sizes)):
            w.psi = part
            if not bl.robust:
                w.p = np.zeros((part.shape[0], 0), part.dtype)

    def compress(self) -> None:
        """Cut the basis to its numerical rank (:func:`_compress`)."""
        coef, self.p, self.psi = _compress(self.coef, self.p, self.psi)
        if coef is not self.coef:  # cut: the rows are combinations of bots now
            self.coef, self.last = coef, None


def _compress(coef: np.ndarray, p: np.ndarray, psi: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``coef @ [p | psi]`` with the basis cut to its numerical rank (:data:`RANK_TOL` of the
    largest singular value): first by a seeded random sketch of :data:`SKETCH` directions (N.
    Halko, P.-G. Martinsson and J. A. Tropp, 2011), kept when its own smallest singular value is
    below the tolerance (the rank is then well inside the sketch); else from the eigenvectors of
    the basis's Gram matrix."""
    if coef.shape[1] <= SMALL_BASIS:
        return coef, p, psi
    stacked = np.hstack([p, psi])
    k, tol = stacked.shape[0], RANK_TOL[stacked.dtype]
    u = None
    if SKETCH < k:
        omega = np.random.default_rng(PROBE_SEED).standard_normal((stacked.shape[1], SKETCH)).astype(stacked.dtype)
        q, _ = np.linalg.qr((stacked @ omega).astype(float))
        small = q.T @ stacked
        values, left = la.eigh(small @ small.T, check_finite=False)  # ascending: sv^2
        top = max(values[-1], 1e-300)
        if values[0] <= tol**2 * top:
            u = q @ left[:, values > tol**2 * top]
    if u is None:
        wide = stacked.astype(float)
        values, vectors = la.eigh(wide @ wide.T, check_finite=False)
        keep = values > tol**2 * max(values[-1], 1e-300)
        if keep.sum() >= 0.8 * values.size:
            return coef, p, psi
        u = vectors[:, keep]
    u = u.astype(stacked.dtype)
    new = u.T @ stacked
    return coef @ u, new[:, :p.shape[1]], new[:, p.shape[1]:]


def low_rank(n: int, a: np.ndarray, b: np.ndarray, w: np.ndarray, v: np.ndarray | None
             ) -> tuple[sp.csc_matrix, np.ndarray, np.ndarray | None]:
    """``(U, W, V)`` with ``sum_p w_p (e_a - e_b)(e_a - e_b)^T = U W U^T`` (and ``V`` for ``v``
    alike; None if ``v`` is) over the pairs ``p = (a_p, b_p)`` of bots (``n`` of them), in the
    representation of lower rank: the pairs' own columns ``e_a - e_b`` with ``W = diag(w)`` (rank:
    the pairs), or the columns ``e_x`` of the bots they join with ``W`` their Laplacian (rank: the
    bots; a few bots meeting many far opponents, as when a contest pairs a scattered subset of
    a ladder at random). ``U`` is sparse (CSC, ``n x r``)."""
    r = a.size
    ends, which = np.unique(np.concatenate([a, b]), return_inverse=True)
    if ends.size >= r:
        cols = np.arange(r)
        signs = np.concatenate([np.ones(r), -np.ones(r)])
        u = sp.csc_matrix((signs, (np.concatenate([a, b]), np.concatenate([cols, cols]))), shape=(n, r))
        return u, np.diag(w), None if v is None else np.diag(v)
    u = sp.csc_matrix((np.ones(ends.size), (ends, np.arange(ends.size))), shape=(n, ends.size))
    ia, ib = which[:r], which[r:]
    return u, _laplacian(ends.size, ia, ib, w), None if v is None else _laplacian(ends.size, ia, ib, v)


def _laplacian(r: int, i: np.ndarray, j: np.ndarray, w: np.ndarray) -> np.ndarray:
    """The ``r x r`` Laplacian of the weighted pairs ``(i, j, w)``: ``sum w (e_i - e_j)(e_i - e_j)^T``."""
    out = np.zeros((r, r))
    np.add.at(out, (np.concatenate([i, j, i, j]), np.concatenate([i, j, j, i])), np.concatenate([w, w, -w, -w]))
    return out


def spd_inverse(s: np.ndarray) -> np.ndarray:
    """The inverse of a symmetric positive definite matrix, dense (LAPACK ``potrf``/``potri``):
    a block here, the whole information matrix of a small field in
    :mod:`arena.stats.information`. Raises ``ArithmeticError`` if it is not positive definite."""
    potrf, potri = la.get_lapack_funcs(("potrf", "potri"), (s,))
    lower, info = potrf(s, lower=1, clean=1)
    if info == 0:
        lower, info = potri(lower, lower=1)
    if info:
        raise ArithmeticError(f"information matrix not positive definite (potrf/potri {info})")
    return _symmetric(lower)


def _symmetric(lower: np.ndarray) -> np.ndarray:
    """The symmetric matrix whose lower triangle is ``lower``'s (zeros above, as LAPACK leaves
    them after a clean ``potrf``): ``lower + lower^T`` with the diagonal taken once."""
    out = lower + lower.T
    out.flat[::out.shape[0] + 1] = lower.diagonal()
    return out


def _inverse_factor(lower: np.ndarray) -> np.ndarray:
    """``L^-1`` (lower triangular, zeros above, Fortran-ordered) of a Cholesky factor ``L`` (zeros
    above: :func:`_cho`), by LAPACK's ``trtri``. At a block's size (~230) OpenBLAS's triangular
    solves (``trsm``) take 4-5 times a product's time per flop on one thread: the solves with
    ``S = L L^T`` are products with ``L^-1`` instead."""
    inverse, info = la.get_lapack_funcs("trtri", (lower,))(lower, lower=1)
    if info:
        raise ArithmeticError(f"information matrix not positive definite (trtri {info})")
    return inverse


def _schur_step(inverse: np.ndarray, h: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For ``S = L L^T`` (``inverse``: ``L^-1``, :func:`_inverse_factor`, Fortran-ordered: BLAS
    takes it without a copy) and a coupling block ``h`` (``s_K x s_L``): ``(-(S^-1 h)^T, h^T
    S^-1 h)``: with ``Y = L^-1 h``, two triangular products (``trmm``: half a product's flops, and
    faster at these sizes) and ``Y^T Y`` (a product: faster than ``syrk`` here, though it makes
    both triangles)."""
    trmm = la.get_blas_funcs("trmm", (inverse,))
    y = trmm(1.0, inverse, h, lower=1)  # L^-1 h
    return trmm(-1.0, inverse, y, lower=1, trans_a=1).T, y.T @ y  # -(L^-T Y)^T = -(S^-1 h)^T


def _cho(s: np.ndarray) -> np.ndarray:
    """The lower Cholesky factor of ``s``, zeros above (LAPACK ``potrf``, clean). Raises
    ``ArithmeticError`` if ``s`` is not positive definite."""
    lower, info = la.get_lapack_funcs("potrf", (s,))(s, lower=1, clean=1)
    if info:
        raise ArithmeticError(f"information matrix not positive definite (potrf {info})")
    return lower


class _Cut:
    """Cuts a sparse matrix of ``h``'s pattern (CSR, the same ``indices`` and ``indptr``) into its
    dense diagonal blocks ``mat_KK`` and sub-diagonal blocks ``mat_{K+1,K}`` (the bots' ``place``
    in the order, their ``block``): one vectorised scatter per matrix, the positions computed once."""

    def __init__(self, h: sp.csr_matrix, place: np.ndarray, block: np.ndarray, starts: np.ndarray) -> None:
        size = np.diff(starts)
        nb = size.size
        # a flat buffer: the diagonal blocks, then the sub-diagonal ones
        diag_at = np.concatenate([[0], np.cumsum(size * size)])
        low_at = diag_at[-1] + np.concatenate([[0], np.cumsum(size[1:] * size[:-1])])
        self.size, self.nb, self.diag_at, self.low_at = size, nb, diag_at, low_at
        self.total = int(low_at[-1])
        small = np.int32 if self.total < 2**31 else np.int64
        # per bot (by index): its block, its place within the block, where its row starts in its
        # diagonal block and in its sub-diagonal block (K, K-1) of the buffer
        bb = block[place].astype(small)
        loc = (place - starts[bb]).astype(small)
        left = np.maximum(bb - 1, 0)
        row_d = (diag_at[bb] + loc * size[bb]).astype(small)
        row_l = (low_at[left] + loc * size[left]).astype(small)
        counts, col = np.diff(h.indptr), h.indices
        gap = np.repeat(bb, counts) - bb[col]  # block of the row minus block of the column, per entry
        self.diag = np.flatnonzero(gap == 0)
        self.low = np.flatnonzero(gap == 1)
        self.where_d = np.repeat(row_d, counts)[self.diag] + loc[col[self.diag]]
        self.where_l = np.repeat(row_l, counts)[self.low] + loc[col[self.low]]
        # the long pairs (upper entries more than a block apart): left out, their weight taken
        # off the two bots' diagonal entries (H_b = H - U W U^T)
        far = np.flatnonzero(np.abs(gap) > 1)
        if far.size:
            rows = np.repeat(np.arange(h.shape[0]), counts)[far]
            far = far[place[rows] < place[col[far]]]
        self.long = far
        self.long_a = place[np.repeat(np.arange(h.shape[0]), counts)[far]] if far.size else far
        self.long_b = place[col[far]]
        ends = np.concatenate([self.long_a, self.long_b])
        self.long_at = diag_at[block[ends]] + (ends - starts[block[ends]]) * (size[block[ends]] + 1)

    def __call__(self, mat: sp.csr_matrix, dtype: Any) -> tuple[list[np.ndarray], list[np.ndarray]]:
        flat = np.zeros(self.total, dtype)
        flat[self.where_d] = mat.data[self.diag]
        flat[self.where_l] = mat.data[self.low]
        if self.long.size:  # the off-diagonal entries are -weight: adding them takes the weight off
            np.add.at(flat, self.long_at, np.concatenate([mat.data[self.long], mat.data[self.long]]))
        s, da, la_ = self.size, self.diag_at, self.low_at
        diag = [flat[da[k]:da[k + 1]].reshape(s[k], s[k]) for k in range(self.nb)]
        low = [flat[la_[k]:la_[k + 1]].reshape(s[k + 1], s[k]) for k in range(self.nb - 1)]
        return diag, low


BLOCK_WIDTH = 600
"""Widest typical block (bots: the root of ``sum_K s_K^3 / n``) for which the
block-tridiagonal intervals are used: beyond (a random, expander-like graph has no narrow layout)
their cost grows towards a dense inversion's and the caller probes instead. The season's ladder
(10,000 bots, ~200 opponents each, mean rank distance 30) makes blocks of 190-300 bots."""


LONG_SHARES = (2e-5, 5e-5, 1e-4, 2e-4, 4e-4, 1e-3, 2e-3, 4e-3, 8e-3)
"""When every pair cannot be kept within adjacent blocks at a good price (a few random pairs
across a ladder: a newcomer's first opponents, a random pairing), the blocks may be cut leaving
out one of these shares of the pairs, the longest in the layout; those are added back exactly as
a low-rank correction (:class:`Blocks`, :func:`low_rank`) of rank at most :data:`MAX_LONG`.
:func:`plan` takes the cheapest cut by :func:`work`. The larger shares serve a subset of the
field paired at random (the season bench: 500 bots scattered over 10,000 playing a round-robin
made 3,300 long pairs among 500 bots, 0.3% of the pairs: a correction of rank 500)."""
NARROW = 320
""":func:`plan` keeps every pair within adjacent blocks, without trying to leave out the longest,
when the blocks are this narrow (bots, as :data:`BLOCK_WIDTH`) already: the season's are 237."""
MAX_LONG = 800
"""Highest rank of the long pairs' correction (:func:`low_rank`: the long pairs, or the bots they
join if fewer; two solves and a product per unit of rank)."""


def work(starts: np.ndarray, long: int) -> float:
    """The flops the block intervals take, roughly: about ``60 s^3`` per block of ``s`` bots
    (factors, sandwich, walks) and ``18 n s`` per unit of the long pairs' rank ``long`` (its
    solves and products, :func:`low_rank`), ``s`` the mean block."""
    n = float(starts[-1])
    return 60.0 * cost(starts) + 18.0 * long * n * n / max(starts.size - 1, 1)


def plan(order: np.ndarray, pattern: sp.csr_matrix) -> np.ndarray | None:
    """The blocks' starts (:func:`partition`): keeping every pair within adjacent blocks, or
    leaving out the longest pairs (a share of :data:`LONG_SHARES`, of rank at most :data:`MAX_LONG`),
    whichever costs least (:func:`work`) among those whose blocks are narrow enough
    (:data:`BLOCK_WIDTH`); None if none is. A pair two blocks apart or more spans a whole block
    between (at least :data:`MIN_BLOCK` places): only the pairs that long are looked at again
    for each share."""
    n = order.size
    reach = _Reach(order, pattern, MIN_BLOCK)
    starts = _greedy(reach.farthest(None))
    if cost(starts) <= min(NARROW, BLOCK_WIDTH)**2 * n:  # every pair kept, and narrow: nothing to gain
        return starts
    # pairs at least this long, exact from MIN_BLOCK on (below, the limit is MIN_BLOCK anyway)
    longer = np.cumsum(np.bincount(reach.big_length, minlength=n)[::-1])[::-1]
    best, best_work = None, np.inf
    for share in (0.0, *LONG_SHARES):
        limit = None
        if share:  # the shortest length leaving at most this share of the pairs out
            limit = max(int(np.searchsorted(-longer, -share * reach.pairs, side="left")), MIN_BLOCK)
            if limit >= n - 1:
                continue
        starts = _greedy(reach.farthest(limit))
        if cost(starts) > BLOCK_WIDTH**2 * n:
            continue
        block = np.repeat(np.arange(starts.size - 1), np.diff(starts))  # by place
        far = np.abs(block[reach.big_place] - block[reach.big_other]) > 1
        rank = min(int(far.sum()), np.unique(np.concatenate([reach.big_place[far], reach.big_other[far]])).size)
        if rank <= MAX_LONG and work(starts, rank) < best_work:
            best, best_work = starts, work(starts, rank)
    return best


def intervals(h: sp.csr_matrix, m: sp.csr_matrix | None, order: np.ndarray, starts: np.ndarray,
              i: np.ndarray, j: np.ndarray, dtype: Any = None) -> tuple[np.ndarray, np.ndarray, Blocks]:
    """Exact anchored variances per bot (``n``) and of the differences ``theta_i - theta_j`` for
    the pairs ``(i, j)`` (index arrays), model (``m`` None) or robust, with the :class:`Blocks`
    that computed them (for other pairs later). Anchoring: ``var_i = X_ii - 2 (X 1)_i / n +
    1^T X 1 / n^2`` with ``X 1`` from exact block solves."""
    n = order.size
    blocks = Blocks(h, m, order, starts, dtype)
    x1 = blocks.solve(np.ones(n))
    if m is not None:
        x1 = blocks.solve(m @ x1)
    diag = blocks.variances()
    var = diag - 2.0 * x1 / n + x1.sum() / n**2
    diff = diag[i] + diag[j] - 2.0 * blocks.covariances(i, j) if i.size else np.zeros(0)
    return var, diff, blocks
