"""The one-dimensional layout of a field's bots that the rating fit's solvers work in
(:mod:`arena.stats.information`: the coarse space's hat functions, :mod:`arena.stats.blocks`:
the blocks): an order in which bots that met are close."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components, reverse_cuthill_mckee

COARSE_SPAN = 20
"""Fewest ranks of the layout between two nodes of the coarse space (hat functions); the span
is twice the median distance in the layout between bots that met, when that is more."""


class Layout:
    """A one-dimensional layout of the bots from the graph of who met whom (``pattern``): the
    connected components (``comp``, ``size`` per component) and each bot's ``rank`` within its
    component in the reverse Cuthill-McKee order of ``order`` (by default ``pattern``; the span
    is measured on it): a breadth-first order from a peripheral bot, in which bots that met are
    close; when bots meet their rating neighbours it recovers the chain from the weakest to the
    strongest, whatever the current ratings say. ``position``: the place in the whole order.
    ``key`` (one number per bot) gives the order within components instead of the reverse
    Cuthill-McKee one."""

    def __init__(self, pattern: sp.csr_matrix, order: sp.csr_matrix | None = None,
                 key: np.ndarray | None = None) -> None:
        n = pattern.shape[0]
        ncomp, self.comp = connected_components(pattern, directed=False)
        self.size = np.bincount(self.comp, minlength=ncomp)
        graph = pattern if order is None else order
        if key is None:
            rcm = np.empty(n, np.int64)
            rcm[reverse_cuthill_mckee(graph, symmetric_mode=True)] = np.arange(n)
        else:  # an order given (an earlier fit's layout, newcomers put in: arena.stats.rating.layout_hint)
            rcm = key
        ranked = np.lexsort((rcm, self.comp))
        self.position = np.empty(n, np.int64)
        self.position[ranked] = np.arange(n)
        first = np.concatenate([[0], np.cumsum(self.size)[:-1]])
        self.rank = self.position - first[self.comp]
        # the coarse space's span: two typical steps between bots that met, at least COARSE_SPAN
        self.span = max(COARSE_SPAN, 2 * int(self.length(graph)))

    def length(self, pattern: sp.csr_matrix) -> float:
        """The median distance in this layout between two bots that met in ``pattern`` (0 if none did)."""
        rows = np.repeat(np.arange(pattern.shape[0]), np.diff(pattern.indptr))
        length = np.abs(self.position[rows] - self.position[pattern.indices])
        length = length[length > 0]
        return float(np.median(length)) if length.size else 0.0
