"""Columns of the block inverse ``C_b = H_b^-1`` and of its sandwich ``X_b = C_b M_b C_b`` at a few
bots, carried along the chain of block factors of :class:`arena.stats.blocks.Blocks` (its module
docstring has the notation): the long pairs' correction (``Blocks._long``) is built from them.

Shapes. ``n`` bots by place, ``N`` blocks; the bots asked for are ``t`` places (ascending), so
each output is ``n x t``. A column of bot ``x`` in block ``T`` is, in block ``J``: for ``J > T``,
``C_{J,T} = B_{J-1}^T C_{J-1,T}`` and ``X_{J,T} = C_JJ (pi_J + tail_J^T C_{J,T})`` with ``pi_{J+1}
= A_J pi_J + W_J^T C_{J,T}``, ``pi_T = head_T^T C_TT`` (the walks' recursions of
``Blocks.covariances``, as columns); for ``J < T`` the mirror: ``C_{J,T} = A_J^T C_{J+1,T}`` and
``pi'_J = B_J pi'_{J+1} + W'_{J+1}^T C_{J+1,T}``, with ``head'_K = E_K + A_{K-1} M_{K-1,K}``,
``tail'_K = F_K - M_KK - A_{K-1} M_{K-1,K}`` and ``W'_K = M_{K,K-1} + A_{K-1} (M_{K-1,K-1} +
A_{K-2} M_{K-2,K-1})`` (:func:`mirror`). Two sweeps, one each way, carry every column at once.

Far from its bot, a column is the field's smooth common mode: the columns of bots more than
:data:`NEAR_BLOCKS` blocks behind a sweep span few dimensions together. A sweep therefore carries
the near columns whole and the far ones as a basis times coefficients (``V W``), cut again
(:data:`CARRY_TOL`) as columns leave the near window, so its work per block grows with the near
columns, not with ``t``. On the season bench's store (632 columns, 40 blocks of ~250) a sweep
carries about 50 columns whole and a basis of 5-21 directions for up to 600 far ones, instead of
the band product and the two band solves that made ``X_b U`` (six products of ``s x s x t`` per
block) and the carrying of ``C_b U`` at full width: the long pairs' correction took 0.6-0.8 s of
CPU and takes 0.35 s, a full refit 2.3-2.8 s and now 2.1-2.2 s, the intervals within 3e-13 of
before. The far bases are handed to ``Blocks._half`` (:class:`Far`). When ``U``'s columns are the
long pairs' own (``e_a - e_b``), ``Q = C_b U`` combines these columns (:func:`times_sparse`)."""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

NEAR_BLOCKS = 2
"""Blocks behind a sweep whose bots' columns it carries whole; farther ones, through their low rank."""
CARRY_TOL = {np.dtype(np.float64): 1e-10, np.dtype(np.float32): 1e-6}
"""By precision (:data:`arena.stats.blocks.PRECISION`): directions of the far columns' basis below
this fraction of its largest singular value are dropped when columns join it (each part, ``C`` and
``pi``, scaled to norm one first): the season bench's store keeps 5-21 directions in double
precision (its far columns alone, rank 1 or 2 at 1e-8), fewer in single, whose rounding (about
1e-7 of a column) is above the double's cut; the single cut is taken well above that rounding."""


def mirror(md: list, ml: list, a: list, head: list, tail: list, bm: list) -> tuple[list, list, list]:
    """``(head', tail', W')`` of the module docstring from the meat's blocks ``md`` (``M_KK``) and
    ``ml`` (``M_{K+1,K}``), the factors ``A_K``, the sandwich's ``head`` (``F_K + B_K M_{K+1,K}``),
    ``tail`` (``E_K - M_KK - B_K M_{K+1,K}``) and ``bm`` (``B_K M_{K+1,K}``, zero for the last
    block); ``W'[0]`` is None (no step leaves the first block)."""
    nb = len(md)
    am = [np.zeros_like(md[0])] + [a[k - 1] @ ml[k - 1].T for k in range(1, nb)]  # A_{K-1} M_{K-1,K}
    heads = [tail[k] + md[k] + bm[k] + am[k] for k in range(nb)]  # E_K + am_K
    tails = [head[k] - bm[k] - md[k] - am[k] for k in range(nb)]  # F_K - M_KK - am_K
    steps = [None] + [ml[k - 1] + a[k - 1] @ (md[k - 1] + am[k - 1]) for k in range(1, nb)]
    return heads, tails, steps


def at(bl: Any, places: np.ndarray, sandwich: bool, mirrored: tuple[list, list, list] | None = None,
       bases: list[list[Far]] | None = None) -> tuple[np.ndarray, np.ndarray | None]:
    """``(C_b[:, x], X_b[:, x])`` for the bots at ``places`` (ascending), rows by place, of the
    :class:`arena.stats.blocks.Blocks` ``bl``; ``X_b`` only if ``sandwich`` (robust blocks, with
    ``mirrored`` from :func:`mirror`), else None. ``bases`` (one empty list per block), if given,
    receives each block's far columns as :class:`Far` (none, one or two: the columns of the bots
    more than :data:`NEAR_BLOCKS` blocks before it, after it)."""
    st, nb, t = bl.starts, bl.nb, places.size
    blk = bl.block[places]
    lo = np.searchsorted(blk, np.arange(nb), side="left")  # columns of block k: lo[k]:hi[k]
    hi = np.searchsorted(blk, np.arange(nb), side="right")
    q = np.empty((bl.n, t), bl.dtype)
    x = np.empty((bl.n, t), bl.dtype) if sandwich else None
    own = [bl.c[k][:, places[lo[k]:hi[k]] - st[k]] for k in range(nb)]  # C_kk at the block's own bots
    forward = _Sweep(t, sandwich, ahead=True)
    for k in range(nb):  # the columns of the bots in blocks 0..k
        if k:
            forward.step(bl.b[k - 1].T, bl.a[k - 1] if sandwich else None, bl.w[k - 1].T if sandwich else None)
        forward.add(own[k], bl.head[k] if sandwich else None)
        forward.cut(int(lo[k - NEAR_BLOCKS]) if k >= NEAR_BLOCKS else 0)
        forward.write(bl.c[k], bl.tail[k] if sandwich else None, slice(st[k], st[k + 1]), q, x,
                      None if bases is None else bases[k])
    backward = _Sweep(t, sandwich, ahead=False)
    heads, tails, steps = mirrored if mirrored is not None else ([None] * nb, [None] * nb, [None] * nb)
    for k in range(nb - 2, -1, -1):  # the columns of the bots in blocks k+1..N-1
        backward.add(own[k + 1], heads[k + 1] if sandwich else None)
        backward.step(bl.a[k].T, bl.b[k] if sandwich else None, steps[k + 1].T if sandwich else None)
        backward.cut(int(hi[k + NEAR_BLOCKS]) if k + NEAR_BLOCKS < nb else t)
        backward.write(bl.c[k], tails[k] if sandwich else None, slice(st[k], st[k + 1]), q, x,
                       None if bases is None else bases[k])
    return q, x


class Far:
    """A block's rows of the far columns ``cols`` (a slice) of :func:`at`, those of the bots before
    the block (``before``) or after it: ``C = vq @ w`` and, with the sandwich, ``X = vx @ w``
    (``vq``, ``vx``: ``s x m``; ``w``: ``m x f``)."""

    def __init__(self, cols: slice, before: bool, vq: np.ndarray, vx: np.ndarray | None, w: np.ndarray) -> None:
        self.cols, self.before, self.vq, self.vx, self.w = cols, before, vq, vx, w


class _Sweep:
    """The columns a sweep carries in its current block (of ``t`` columns in all): the near ones
    whole (``cq``: rows of ``C``; ``cp``: the sandwich's ``pi``; ``s x c``), the far ones as ``vq @
    w`` and ``vp @ w`` (``vq``, ``vp``: ``s x m``; ``w``: ``m x f``). Forward (``ahead``) the
    columns carried are ``[far | near]`` from column 0; backward ``[near | far]`` up to column ``t``."""

    def __init__(self, t: int, sandwich: bool, ahead: bool) -> None:
        self.t, self.sandwich, self.ahead = t, sandwich, ahead
        self.cq = self.cp = self.vq = self.vp = self.w = np.zeros((0, 0))  # (replaced at the first add)

    def add(self, oq: np.ndarray, head: np.ndarray | None) -> None:
        """The columns ``oq`` of the current block's own bots (``C_TT``) join the near ones, with
        their ``pi = head^T C_TT``: forward after them, backward before."""
        op = head.T @ oq if head is not None else np.zeros((oq.shape[0], 0), oq.dtype)
        if not self.cq.shape[0]:  # the first block: nothing carried yet
            rows = oq.shape[0]
            self.cq, self.cp = oq, op
            self.vq, self.vp = np.zeros((rows, 0), oq.dtype), np.zeros((rows if self.sandwich else 0, 0), oq.dtype)
            self.w = np.zeros((0, 0), oq.dtype)
            return
        both = (lambda old, new: np.hstack([old, new])) if self.ahead else (lambda old, new: np.hstack([new, old]))
        self.cq = both(self.cq, oq)
        if self.sandwich:
            self.cp = both(self.cp, op)

    def step(self, bq: np.ndarray, ap: np.ndarray | None, wq: np.ndarray | None) -> None:
        """To the next block: ``q <- bq q`` and ``pi <- ap pi + wq q`` (the old ``q``)."""
        if self.sandwich:
            assert ap is not None and wq is not None
            self.cp = ap @ self.cp + wq @ self.cq
            self.vp = ap @ self.vp + wq @ self.vq
        self.cq, self.vq = bq @ self.cq, bq @ self.vq

    def cut(self, edge: int) -> None:
        """The near columns beyond ``edge`` (forward: the columns before it; backward: from it on)
        join the far ones, whose basis is cut to its rank again (:data:`CARRY_TOL`)."""
        f, c = self.w.shape[1], self.cq.shape[1]
        first = f if self.ahead else self.t - f - c  # the first near column
        k = edge - first if self.ahead else first + c - edge  # near columns leaving
        if k <= 0:
            return
        leave = slice(0, k) if self.ahead else slice(c - k, c)
        stay = slice(k, c) if self.ahead else slice(0, c - k)
        m = self.vq.shape[1]
        order = (lambda far, near: [far, near]) if self.ahead else (lambda far, near: [near, far])
        bq = np.hstack(order(self.vq, self.cq[:, leave]))
        parts = [bq / max(np.linalg.norm(bq), 1e-300)]
        bp = None
        if self.sandwich:
            bp = np.hstack(order(self.vp, self.cp[:, leave]))
            parts.append(bp / max(np.linalg.norm(bp), 1e-300))
        _, sv, vt = np.linalg.svd(np.vstack(parts), full_matrices=False)
        vt = vt[sv > CARRY_TOL[bq.dtype] * max(sv[0], 1e-300)] if sv.size else vt[:0]
        vt = vt.astype(bq.dtype, copy=False)
        self.vq = bq @ vt.T
        if bp is not None:
            self.vp = bp @ vt.T
        # the coefficients: vt times blockdiag(w, I) (forward) or blockdiag(I, w) (backward)
        if self.ahead:
            self.w = np.hstack([vt[:, :m] @ self.w, vt[:, m:]])
        else:
            self.w = np.hstack([vt[:, :k], vt[:, k:] @ self.w])
        self.cq = self.cq[:, stay]
        if self.sandwich:
            self.cp = self.cp[:, stay]

    def write(self, c: np.ndarray, tail: np.ndarray | None, rows: slice, q: np.ndarray, x: np.ndarray | None,
              bases: list[Far] | None) -> None:
        """The current block's rows of the carried columns: ``C`` and, with the sandwich,
        ``X = C_JJ (pi + tail^T q)``; their far part's bases appended to ``bases`` if given."""
        f, n = self.w.shape[1], self.cq.shape[1]
        far = slice(0, f) if self.ahead else slice(self.t - f, self.t)
        near = slice(f, f + n) if self.ahead else slice(self.t - f - n, self.t - f)
        q[rows, near] = self.cq
        q[rows, far] = self.vq @ self.w
        vx = None
        if x is not None and tail is not None:
            x[rows, near] = c @ (self.cp + tail.T @ self.cq)
            vx = c @ (self.vp + tail.T @ self.vq)
            x[rows, far] = vx @ self.w
        if bases is not None and f:
            bases.append(Far(far, self.ahead, self.vq, vx, self.w))


def times_sparse(dense: np.ndarray, sparse: sp.csc_matrix) -> np.ndarray:
    """``dense @ sparse`` (``n x t`` C-ordered, by ``t x r`` with a few entries a column) as a
    C-ordered ``n x r`` array in ``dense``'s precision: for each ``m``, the ``m``-th entries of
    all columns at once, a gather of ``dense``'s columns (``np.take``) scaled by them (a column
    with fewer entries takes column 0 scaled by 0). scipy's ``dense @ sparse`` is ``(sparse.T @
    dense.T).T``: strided reads and an F-ordered result whose row gathers are strided again; on
    the season bench's store (``n`` 10,000, ``t`` 1,052, ``r`` 778) it took 0.3-0.4 s, this
    0.045 s."""
    counts = np.diff(sparse.indptr)
    out = np.zeros((dense.shape[0], sparse.shape[1]), dense.dtype)
    for m in range(int(counts.max(initial=0))):
        has = counts > m
        at = np.where(has, sparse.indptr[:-1] + m, 0)
        term = np.take(dense, np.where(has, sparse.indices[at], 0), axis=1)
        term *= np.where(has, sparse.data[at], 0).astype(dense.dtype)
        out += term
    return out
