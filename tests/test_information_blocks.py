"""The exact block-tridiagonal intervals (arena/stats/blocks.py) against the dense exact ones, in
both precisions of the blocks' work (:data:`arena.stats.blocks.PRECISION`): double to the
tolerances the algorithm itself allows, single (the fit's default) to :data:`SINGLE`."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from arena.stats import blocks, columns, information
from arena.stats import rating as rating_mod
from arena.stats.layout import Layout
from arena.stats.rating import LadderTotals, fit_totals, fit_units
from arena.stats.synthetic import synthetic_field


def _ladder_units(n: int, seed: int, window: float = 6.0, units: int = 30, random_pairs: bool = True) -> dict:
    """A season-like ladder: each unit a duplicate pair between bots a geometric distance apart
    in strength rank (mean ``window``, a few long edges), plus a few random pairs (unless not
    ``random_pairs``)."""
    rng = np.random.default_rng(seed)
    strength = rng.normal(0.0, 1.0, n)
    order = np.argsort(strength)
    ra = rng.integers(0, n, n * units)
    rb = np.clip(ra + np.where(rng.random(ra.size) < 0.5, -1, 1) * rng.geometric(1.0 / window, ra.size), 0, n - 1)
    if random_pairs:
        rb[:n // 4] = rng.integers(0, n, n // 4)  # random opponents: far apart in the layout
    keep = ra != rb
    a, b = order[ra[keep]], order[rb[keep]]
    p = 1.0 / (1.0 + np.exp(strength[b] - strength[a]))
    score = (rng.random((a.size, 2)) < p[:, None]).sum(axis=1) * 1.0
    out: dict = {}
    for x, y, s in zip(a.tolist(), b.tolist(), score.tolist()):
        key = (f"b{x:03d}", f"b{y:03d}", s, 2)
        out[key] = out.get(key, 0) + 1
    return out


SINGLE = 1e-4
"""Relative tolerance of the single-precision blocks (their rounding: about 1e-6 on these fields, 7e-6
on the season's): an error of the method itself (a factor, a sweep or a walk wrong) is far larger."""


@pytest.fixture(params=["float64", "float32"])
def precision(request, monkeypatch):
    """A test that compares the blocks' numbers runs with them in double and in single precision
    (``usefixtures``; the tests of partitions, layouts and forms run once, at the default)."""
    monkeypatch.setattr(blocks, "PRECISION", np.dtype(request.param))
    return np.dtype(request.param)


def tol(rel: float) -> float:
    """``rel`` in double precision, at least :data:`SINGLE` in single (the current :data:`blocks.PRECISION`)."""
    return rel if blocks.PRECISION == np.float64 else max(rel, SINGLE)


FIELDS = {
    "neighbours": lambda: synthetic_field(300, graph="neighbours", seed=31).units,
    "mixed": lambda: synthetic_field(300, graph="mixed", seed=32).units,
    "ladder": lambda: _ladder_units(400, 33),
}


@pytest.mark.usefixtures("precision")
@pytest.mark.parametrize("name", sorted(FIELDS))
def test_block_intervals_equal_the_dense_exact_ones(name, monkeypatch):
    """Small blocks (many of them, so the walk across blocks and its rank cut are exercised):
    every bot's interval, every difference of rating neighbours and a pair far apart agree with
    the dense inverse to 1e-6 relative, model and robust (the sandwich)."""
    monkeypatch.setattr(blocks, "MIN_BLOCK", 8)
    monkeypatch.setattr(blocks, "SMALL_BASIS", 2)
    units = FIELDS[name]()
    for variance in ("model", "robust"):
        exact = fit_units(units, variance=variance, intervals="exact")
        got = fit_units(units, variance=variance, intervals="blocks")
        assert got.method == "blocks" and exact.method == "exact"
        assert got._intervals._blocks.nb > 3  # noqa: SLF001 - several blocks indeed
        for x, y in zip(exact.ratings, got.ratings):
            assert y.ci95 == pytest.approx(x.ci95, rel=tol(1e-6))
        assert got.neighbour_sd() == pytest.approx(exact.neighbour_sd(), rel=tol(1e-6))
        a, b = exact.ratings[0].name, exact.ratings[-1].name
        assert got.sd_diff(a, b) == pytest.approx(exact.sd_diff(a, b), rel=tol(1e-6))
        m = exact.ratings[len(exact.ratings) // 2].name
        assert got.sd_diff(a, m) == pytest.approx(exact.sd_diff(a, m), rel=tol(1e-6))


def test_the_partition_keeps_every_pair_within_adjacent_blocks():
    units = _ladder_units(300, 7)
    names = sorted({x for k in units for x in k[:2]})
    index = {x: k for k, x in enumerate(names)}
    i = np.array([index[k[0]] for k in units])
    j = np.array([index[k[1]] for k in units])
    n = len(names)
    pattern = sp.csr_matrix((np.ones(2 * i.size), (np.concatenate([i, j]), np.concatenate([j, i]))), shape=(n, n))
    for order in (np.arange(n), np.argsort(np.random.default_rng(2).random(n))):
        starts = blocks.partition(order, pattern)
        assert starts[0] == 0 and starts[-1] == n and np.all(np.diff(starts) > 0)
        place = np.empty(n, np.int64)
        place[order] = np.arange(n)
        block = np.searchsorted(starts, place, side="right") - 1
        assert np.abs(block[i] - block[j]).max() <= 1


def test_auto_uses_blocks_on_a_ladder_and_probing_on_a_random_field(monkeypatch):
    """Beyond EXACT_BOTS: a ladder of rating neighbours has a narrow layout (exact blocks), a
    random field has none (one block as wide as the field: probing)."""
    monkeypatch.setattr(information, "EXACT_BOTS", 100)
    monkeypatch.setattr(blocks, "BLOCK_WIDTH", 120)
    assert fit_units(synthetic_field(300, graph="neighbours", seed=4).units).method == "blocks"
    assert fit_units(synthetic_field(300, graph="random", seed=4).units).method == "probing"


@pytest.mark.usefixtures("precision")
@pytest.mark.parametrize("variance", ["model", "robust"])
def test_long_pairs_left_out_of_the_blocks_are_corrected_exactly(variance, monkeypatch):
    """Narrow blocks that cannot hold the ladder's random pairs: the longest pairs are left out
    of the blocks and added back by Woodbury's identity; the intervals still equal the dense ones."""
    monkeypatch.setattr(blocks, "MIN_BLOCK", 8)
    monkeypatch.setattr(blocks, "SMALL_BASIS", 2)
    monkeypatch.setattr(blocks, "BLOCK_WIDTH", 40)
    monkeypatch.setattr(blocks, "LONG_SHARES", (0.02,))
    units = _ladder_units(400, 33)
    exact = fit_units(units, variance=variance, intervals="exact")
    got = fit_units(units, variance=variance, intervals="blocks")
    assert got._intervals._blocks.long > 20  # noqa: SLF001 - long pairs there are
    for x in exact.ratings:
        assert got[x.name].ci95 == pytest.approx(x.ci95, rel=tol(1e-6))
    assert got.neighbour_sd() == pytest.approx(exact.neighbour_sd(), rel=tol(1e-6))
    a, b = exact.ratings[0].name, exact.ratings[-1].name
    assert got.sd_diff(a, b) == pytest.approx(exact.sd_diff(a, b), rel=tol(1e-6))


@pytest.mark.usefixtures("precision")
def test_a_ladder_refit_reuses_the_last_layout_and_fits_the_same(monkeypatch):
    """fit_totals keeps its layout on the totals and the next fit of the same bots reuses it
    (a few new pairs since): the ratings and intervals equal a fit from scratch."""
    monkeypatch.setattr(information, "EXACT_BOTS", 100)
    monkeypatch.setattr(information, "DENSE_NEWTON_BOTS", 50)
    monkeypatch.setattr(blocks, "MIN_BLOCK", 16)
    field = synthetic_field(300, graph="neighbours", seed=8)
    names = field.names
    index = {x: k for k, x in enumerate(names)}
    keys = list(field.units)

    def totals(extra: int) -> LadderTotals:
        t = LadderTotals()
        a = np.array([index[k[0]] for k in keys] + [0, 5, 9][:extra])
        b = np.array([index[k[1]] for k in keys] + [299, 250, 150][:extra])
        s = np.array([k[2] for k in keys] + [1.0, 0.5, 2.0][:extra])
        g = np.array([float(k[3]) for k in keys] + [2.0, 1.0, 2.0][:extra])
        c = np.array([float(x) for x in field.units.values()] + [1.0] * extra)
        t.add_units(names, a, b, s, g, c)
        return t

    ladder = totals(0)
    first = fit_totals(ladder)
    assert first.method == "blocks" and ladder.layout is not None and ladder.layout[1] is first.layout
    grown = totals(3)  # three new pairs (long ones): the same bots, 0.1% more pairs
    grown.layout = ladder.layout
    again = fit_totals(grown)
    assert again.layout is first.layout  # reused
    fresh = fit_totals(totals(3))
    assert fresh.layout is not first.layout
    for x, y in zip(fresh.ratings, again.ratings):
        assert x.name == y.name and x.elo == pytest.approx(y.elo, abs=1e-6)
        assert x.ci95 == pytest.approx(y.ci95, rel=tol(1e-6))
    assert fresh.neighbour_sd() == pytest.approx(again.neighbour_sd(), rel=tol(1e-6))


@pytest.mark.parametrize("seed", range(6))
def test_a_limited_partition_keeps_the_shorter_pairs_adjacent_and_blocks_wide(seed, monkeypatch):
    """With a limit, every pair at most that many places apart lies within adjacent blocks, and
    every block but the last spans at least MIN_BLOCK bots (what plan relies on: a pair two
    blocks apart or more is longer than MIN_BLOCK); plan's blocks are a partition's."""
    monkeypatch.setattr(blocks, "MIN_BLOCK", 8)
    rng = np.random.default_rng(seed)
    n = int(rng.integers(60, 300))
    i = rng.integers(0, n, 6 * n)
    j = np.clip(i + rng.geometric(0.15, i.size) * rng.choice([-1, 1], i.size), 0, n - 1)
    j[:n // 10] = rng.integers(0, n, n // 10)  # a few long pairs
    keep = i != j
    i, j = i[keep], j[keep]
    diag = np.arange(n)
    pattern = sp.csr_matrix((np.ones(2 * i.size + n), (np.concatenate([i, j, diag]), np.concatenate([j, i, diag]))),
                            shape=(n, n))
    order = np.argsort(rng.random(n)) if seed % 2 else np.arange(n)
    place = np.empty(n, np.int64)
    place[order] = np.arange(n)
    for limit in (None, 8, 20, 50):
        starts = blocks.partition(order, pattern, limit)
        assert starts[0] == 0 and starts[-1] == n and np.all(np.diff(starts)[:-1] >= blocks.MIN_BLOCK)
        block = np.searchsorted(starts, place, side="right") - 1
        short = np.ones(i.size, bool) if limit is None else np.abs(place[i] - place[j]) <= limit
        assert np.abs(block[i] - block[j])[short].max() <= 1
    monkeypatch.setattr(blocks, "BLOCK_WIDTH", 30)
    monkeypatch.setattr(blocks, "NARROW", 10)
    monkeypatch.setattr(blocks, "LONG_SHARES", (0.005, 0.01, 0.02))
    got = blocks.plan(order, pattern)
    if got is not None:
        assert any(np.array_equal(got, blocks.partition(order, pattern, limit)) for limit in [None, *range(8, n)])


def _ladder_with_a_random_subset(n: int, subset: int, games: int, seed: int) -> tuple[dict, dict]:
    """A ladder of rating neighbours (:func:`_ladder_units`), then the same plus a round-robin
    sample among ``subset`` bots scattered over it: many long pairs, few bots (what a contest
    pairing a connected subset of a season's field at random makes)."""
    before = _ladder_units(n, seed, random_pairs=False)
    after = dict(before)
    rng = np.random.default_rng(seed + 1)
    some = rng.choice(n, subset, replace=False)
    for _ in range(games):
        x, y = rng.choice(some, 2, replace=False)
        key = (f"b{x:03d}", f"b{y:03d}", float(rng.integers(0, 3)), 2)
        after[key] = after.get(key, 0) + 1
    return before, after


def _totals(units: dict) -> LadderTotals:
    names = sorted({x for k in units for x in k[:2]})
    index = {x: k for k, x in enumerate(names)}
    keys = list(units)
    t = LadderTotals()
    t.add_units(names, np.array([index[k[0]] for k in keys]), np.array([index[k[1]] for k in keys]),
                np.array([k[2] for k in keys]), np.array([float(k[3]) for k in keys]),
                np.array([float(c) for c in units.values()]))
    return t


def _pattern(fit) -> sp.csr_matrix:
    """Who met whom in the field of ``fit`` (a fit with intervals: its model's pattern)."""
    model = fit._intervals.model  # noqa: SLF001
    n = model.pairs.n
    return sp.csr_matrix((np.ones(model.indices.size), model.indices, model.indptr), shape=(n, n))


def _refit(before: dict, after: dict, variance: str = "robust", intervals: str = "auto"):
    """fit_totals of ``after`` as the background fitter makes it: after a fit of ``before``
    whose layout it may reuse (the same bots) or start from (rating.layout_hint)."""
    ladder = _totals(before)
    fit_totals(ladder, intervals="none")
    grown = _totals(after)
    grown.layout = ladder.layout
    return ladder, grown, fit_totals(grown, variance, intervals=intervals)


@pytest.mark.usefixtures("precision")
@pytest.mark.parametrize("variance", ["model", "robust"])
def test_many_long_pairs_among_few_bots_are_corrected_by_the_bots_exactly(variance, monkeypatch):
    """Twelve bots of a ladder playing 300 random games among themselves, refitted in the
    ladder's earlier order: the long pairs outnumber the bots they join, so the correction's
    rank is the bots' (the pairs' Laplacian among them: blocks.low_rank), and the intervals
    still equal the dense exact ones."""
    monkeypatch.setattr(blocks, "MIN_BLOCK", 8)
    monkeypatch.setattr(blocks, "SMALL_BASIS", 2)
    monkeypatch.setattr(blocks, "BLOCK_WIDTH", 40)
    monkeypatch.setattr(blocks, "LONG_SHARES", (0.02, 0.05, 0.1))
    monkeypatch.setattr("arena.stats.rating.RELAYOUT", 10.0)  # the earlier layout is reused as it is
    monkeypatch.setattr(information, "EXACT_BOTS", 100)
    monkeypatch.setattr(information, "DENSE_NEWTON_BOTS", 50)
    before, after = _ladder_with_a_random_subset(400, 12, 300, 33)
    exact = fit_units(after, variance=variance, intervals="exact")
    got = _refit(before, after, variance, "blocks")[2]
    b = got._intervals._blocks  # noqa: SLF001
    assert b.nb > 3 and b.long > 40 and b.q.shape[1] < b.long / 2  # many pairs, fewer bots: the bots' rank
    for x in exact.ratings:
        assert got[x.name].ci95 == pytest.approx(x.ci95, rel=tol(1e-6))
    assert got.neighbour_sd() == pytest.approx(exact.neighbour_sd(), rel=tol(1e-6))
    a, z = exact.ratings[0].name, exact.ratings[-1].name
    assert got.sd_diff(a, z) == pytest.approx(exact.sd_diff(a, z), rel=tol(1e-6))


def test_low_rank_gives_the_pairs_sum_in_either_form():
    """U W U^T = sum w (e_a - e_b)(e_a - e_b)^T, by the pairs' columns (few pairs) or by the bots'
    (many pairs among few bots), and V alike."""
    rng = np.random.default_rng(3)
    n = 30
    for a, b in ((np.array([0, 4, 9]), np.array([20, 25, 29])), (rng.integers(0, 5, 40), rng.integers(5, 9, 40))):
        w, v = rng.random(a.size) + 0.5, rng.random(a.size)
        want_w, want_v = np.zeros((n, n)), np.zeros((n, n))
        for x, y, p, q in zip(a, b, w, v):
            e = np.zeros(n)
            e[x], e[y] = 1.0, -1.0
            want_w += p * np.outer(e, e)
            want_v += q * np.outer(e, e)
        u, ww, vv = blocks.low_rank(n, a, b, w, v)
        assert u.shape[1] == min(a.size, np.unique(np.concatenate([a, b])).size)
        dense = u.toarray()
        assert np.allclose(dense @ ww @ dense.T, want_w) and np.allclose(dense @ vv @ dense.T, want_v)


@pytest.mark.usefixtures("precision")
def test_a_refit_after_random_pairs_and_a_newcomer_keeps_the_earlier_order(monkeypatch):
    """A ladder fitted once; then a scattered subset plays at random and a newcomer arrives (the
    layout cannot be reused: new bots). The fresh reverse Cuthill-McKee order of the new pattern
    is longer than the earlier order with the newcomer put in (rating.layout_hint), so the refit
    keeps the latter; the fit equals one from scratch."""
    monkeypatch.setattr(information, "EXACT_BOTS", 100)
    monkeypatch.setattr(information, "DENSE_NEWTON_BOTS", 50)
    monkeypatch.setattr(blocks, "MIN_BLOCK", 16)
    before, after = _ladder_with_a_random_subset(400, 40, 400, 21)
    after[("b999", "b010", 1.0, 2)] = 1  # a newcomer
    after[("b999", "b011", 2.0, 2)] = 1
    ladder, grown, again = _refit(before, after)
    model = again._intervals.model  # noqa: SLF001
    pattern = _pattern(again)
    assert again.layout.length(pattern) < Layout(pattern).length(pattern)  # the case at hand
    hint = rating_mod.layout_hint(grown.names, model.pairs, ladder.layout[0], ladder.layout[1])
    assert np.array_equal(again.layout.position, Layout(pattern, key=hint).position)
    at = again.layout.position
    lo, hi = sorted(int(at[grown.names.index(x)]) for x in ("b010", "b011"))
    assert lo <= at[grown.names.index("b999")] <= hi + 1  # between its opponents
    assert hi - lo < 100  # (a place that says something)
    scratch = fit_totals(_totals(after))
    for x, y in zip(scratch.ratings, again.ratings):
        assert x.name == y.name and x.elo == pytest.approx(y.elo, abs=1e-6)
        assert x.ci95 == pytest.approx(y.ci95, rel=tol(1e-6))


def test_a_fitter_that_starts_takes_the_stored_order_of_the_last_one(monkeypatch):
    """The places a fit stores (rating.layout_places) are what a fitter that starts hands its
    first fit (rating.stored_layout): on a ladder where a scattered subset has since played at
    random, that fit lays the field out in the stored order, shorter than a fresh one."""
    monkeypatch.setattr(information, "EXACT_BOTS", 100)
    monkeypatch.setattr(information, "DENSE_NEWTON_BOTS", 50)
    monkeypatch.setattr(blocks, "MIN_BLOCK", 16)
    before, after = _ladder_with_a_random_subset(400, 40, 400, 21)
    ladder = _totals(before)
    fit_totals(ladder, intervals="none")
    places = rating_mod.layout_places(ladder)
    assert places is not None and sorted(places.values()) == list(range(400))
    restarted = _totals(after)
    restarted.layout = rating_mod.stored_layout(places)
    again = fit_totals(restarted)
    pattern = _pattern(again)
    assert again.layout.length(pattern) < Layout(pattern).length(pattern)  # the case at hand
    in_order = np.array(restarted.names)[np.argsort(again.layout.position)]
    assert [places[x] for x in in_order] == sorted(places.values())  # the stored order


def _banded_field(n: int, extra: list[tuple[int, int]], seed: int) -> tuple[sp.csr_matrix, sp.csr_matrix]:
    """``(H, M)``: Laplacians (plus a small ridge) of a chain of bots each meeting its next three,
    with random weights, and the pairs ``extra``, in the bots' own order."""
    rng = np.random.default_rng(seed)
    a = np.concatenate([np.arange(n - d) for d in (1, 2, 3)] + [np.array([x for x, _ in extra], np.int64)])
    b = np.concatenate([np.arange(d, n) for d in (1, 2, 3)] + [np.array([y for _, y in extra], np.int64)])
    out = []
    for ridge in (0.1, 0.05):
        w = rng.random(a.size) + 0.2
        lap = sp.coo_matrix((np.concatenate([-w, -w]), (np.concatenate([a, b]), np.concatenate([b, a]))),
                            shape=(n, n)).tocsr()
        out.append((lap - sp.diags(np.asarray(lap.sum(axis=1)).ravel()) * 1.0 + ridge * sp.eye(n)).tocsr())
    h, m = out
    m = sp.csr_matrix((np.asarray(m[h.nonzero()]).ravel(), h.indices, h.indptr), shape=h.shape)  # h's pattern
    return h, m


@pytest.mark.usefixtures("precision")
@pytest.mark.parametrize("form", ["none", "pairs", "bots"])
def test_block_solves_and_columns_equal_dense_ones(form, monkeypatch):
    """The blocks' own solves and columns of ``H_b^-1`` (:meth:`Blocks._columns`: columns that
    start in different blocks, carried down and up the chain; the long pairs' ``Q`` is made of
    them) and solves of one and of many right-hand sides (the two ways of applying ``S_K^-1``),
    with no long pairs, a few (``U``'s columns the pairs') or many among a few bots (the bots'
    columns), equal dense ones; so do the variances and covariances, model and robust."""
    monkeypatch.setattr(blocks, "MIN_BLOCK", 8)
    n = 90
    rng = np.random.default_rng(5)
    extra = {"none": [], "pairs": [(2, 60), (10, 85), (30, 88)],
             "bots": [(int(x), int(y)) for x, y in zip(rng.choice([1, 3, 40], 30), rng.choice([50, 70, 89], 30))]}[form]
    h, m = _banded_field(n, extra, 6)
    order = np.arange(n)[::-1].copy()  # the layout's order: the places are not the bots' indices
    pattern = sp.csr_matrix((np.ones(h.nnz), h.indices, h.indptr), shape=h.shape)
    starts = blocks.partition(order, pattern, None if form == "none" else 8)
    dense_h, dense_m = h.toarray(), m.toarray()
    c = np.linalg.inv(dense_h)
    for robust in (False, True):
        b = blocks.Blocks(h, m if robust else None, order, starts)
        assert b.nb > 4 and (b.long > 0) == (form != "none")
        if form == "none":
            places = np.array([0, 1, 9, 30, 31, 50, n - 1])
            assert np.unique(b.block[places]).size > 3
            got = b._columns(places)  # noqa: SLF001
            assert np.allclose(got, c[order][:, order[places]], rtol=0, atol=tol(1e-12) * np.abs(c).max())
        else:
            assert b.q.shape[1] == (len(extra) if form == "pairs" else 6)
        for shape in (n, (n, 3), (n, 2 * blocks.FEW_COLUMNS)):  # a few columns and many: S_K^-1 either way
            rhs = rng.standard_normal(shape)
            # (single precision: refined once in double, so far below SINGLE; unrefined, about 1e-5)
            assert np.allclose(b.solve(rhs), c @ rhs, rtol=0, atol=(1e-10 if b.dtype == np.float64 else 1e-8)
                               * np.abs(c @ rhs).max())
        x = c @ dense_m @ c if robust else c
        assert np.allclose(b.variances(), np.diag(x), rtol=tol(1e-10))
        i, j = rng.integers(0, n, 40), rng.integers(0, n, 40)
        assert np.allclose(b.covariances(i, j), x[i, j], rtol=0, atol=tol(1e-9) * np.abs(x).max())


@pytest.mark.usefixtures("precision")
def test_newtons_last_step_is_taken_by_the_intervals_block_factors(monkeypatch):
    """A fit that wants intervals computes them at Newton's last iterate (the one reached by a
    step below SETTLE_STEP) and lets their block factors take the last step: one conjugate-gradient
    solve fewer than the ratings alone need, the intervals computed once, and the same ratings
    (to 1e-6 Elo) and intervals (to 1e-9) as a fit that computes them after Newton, at the maximum."""
    monkeypatch.setattr(blocks, "MIN_BLOCK", 8)
    units = FIELDS["ladder"]()
    calls = {"cg": 0, "intervals": 0}
    solve, init = information.Solver.solve, information.Intervals.__init__

    def counted_solve(self, *a, **k):
        calls["cg"] += 1
        return solve(self, *a, **k)

    def counted_init(self, *a, **k):
        calls["intervals"] += 1
        init(self, *a, **k)

    monkeypatch.setattr(information.Solver, "solve", counted_solve)
    monkeypatch.setattr(information.Intervals, "__init__", counted_init)

    def fit(intervals: str):
        calls.update(cg=0, intervals=0)
        return fit_totals(_totals(units), "robust", intervals=intervals), dict(calls)

    alone, alone_calls = fit("none")
    settled, settled_calls = fit("blocks")
    assert alone_calls["cg"] >= 2 and alone_calls["intervals"] == 0
    assert settled_calls == {"cg": alone_calls["cg"] - 1, "intervals": 1}
    monkeypatch.setattr(information, "SETTLE_STEP", 0.0)  # never settled: the intervals after Newton
    after, after_calls = fit("blocks")
    assert after_calls == {"cg": alone_calls["cg"], "intervals": 1}
    for x, y, z in zip(alone.ratings, settled.ratings, after.ratings):
        assert x.name == y.name == z.name
        assert y.elo == pytest.approx(x.elo, abs=1e-6) and z.elo == pytest.approx(x.elo, abs=1e-6)
        assert y.ci95 == pytest.approx(z.ci95, rel=tol(1e-9))
    assert settled.neighbour_sd() == pytest.approx(after.neighbour_sd(), rel=tol(1e-9))


@pytest.mark.usefixtures("precision")
@pytest.mark.parametrize("form", ["bots", "pairs"])
def test_far_columns_of_the_long_pairs_go_through_their_low_rank_exactly(form, monkeypatch):
    """Many long pairs along a chain of many blocks, among few bots (U's columns the bots') or
    between distinct bots (the pairs'): the bots' columns of C_b and C_b M_b C_b (columns.at: the
    columns of far bots carried through their low rank) equal the band's dense inverse and
    sandwich, and so does Q = C_b U; Z (Blocks._half) takes the far columns of most blocks through
    that low rank; the variances and covariances, model and robust, still equal dense ones."""
    monkeypatch.setattr(blocks, "MIN_BLOCK", 8)
    monkeypatch.setattr(blocks, "SMALL_BASIS", 4)
    n = 400
    rng = np.random.default_rng(8)
    if form == "bots":
        some = rng.choice(n, 60, replace=False)
        extra = [(int(x), int(y)) for x, y in rng.choice(some, (150, 2)) if x != y]
    else:
        extra = [(int(x), int(y)) for x, y in rng.choice(n, (60, 2), replace=False)]
    h, m = _banded_field(n, extra, 9)
    order = np.arange(n)
    pattern = sp.csr_matrix((np.ones(h.nnz), h.indices, h.indptr), shape=h.shape)
    starts = blocks.partition(order, pattern, 8)
    c = np.linalg.inv(h.toarray())
    rows, cols = h.nonzero()
    for robust in (False, True):
        b = blocks.Blocks(h, m if robust else None, order, starts)
        assert b.nb > 2 * columns.NEAR_BLOCKS + 3 and b.q.shape[1] > 40
        assert (b._sub is None) == (form == "bots")  # noqa: SLF001 - the form of U
        apart = np.abs(b.block[rows] - b.block[cols]) > 1  # the long pairs: the band's inverse and sandwich
        band_h, band_m = h.toarray(), m.toarray()
        for band in (band_h, band_m):
            weight = band[rows[apart], cols[apart]].copy()
            band[rows[apart], cols[apart]] = 0.0
            np.add.at(band, (rows[apart], rows[apart]), weight)  # (each pair twice: once from each end)
        ends = np.unique(rows[apart])
        cb = np.linalg.inv(band_h)
        assert np.allclose(b._cols, cb[:, ends], rtol=0, atol=tol(1e-9) * np.abs(cb).max())  # noqa: SLF001
        if form == "bots":
            assert np.allclose(b.q, cb[:, ends], rtol=0, atol=tol(1e-9) * np.abs(cb).max())
        else:  # Q = C_b U = (the ends' columns) sub, U's columns the pairs' e_a - e_b: two entries each
            sub = b._sub.toarray()  # noqa: SLF001
            assert sorted(set(np.abs(sub).sum(axis=0).tolist())) == [2.0]
            assert np.allclose(b.q, b._cols.astype(float) @ sub, rtol=0, atol=tol(1e-12) * np.abs(cb).max())  # noqa: SLF001
        assert b.q.flags.c_contiguous  # (an F-ordered Q made every row gather strided: 0.3 s more a refit)
        if robust:
            xb = cb @ band_m @ cb
            assert np.allclose(b.y, xb[:, ends], rtol=0, atol=tol(1e-9) * np.abs(xb).max())
        far = sum(len(x) for x in b._bases)  # noqa: SLF001
        assert far > b.nb  # far columns on both sides of most blocks
        x = c @ m.toarray() @ c if robust else c
        assert np.allclose(b.variances(), np.diag(x), rtol=tol(1e-9))
        i, j = rng.integers(0, n, 200), rng.integers(0, n, 200)
        assert np.allclose(b.covariances(i, j), x[i, j], rtol=0, atol=tol(1e-7) * np.abs(x).max())  # RANK_TOL (walks)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_dense_times_sparse_product_is_exact_and_by_row(dtype):
    """``columns.times_sparse`` (the long pairs' ``Q = cols @ sub``): the dense product, whatever the
    number of entries of a column (none, one, two, three), C-ordered, in the dense side's
    precision."""
    rng = np.random.default_rng(3)
    dense = rng.standard_normal((50, 12)).astype(dtype)
    sparse = sp.csc_matrix((rng.standard_normal(7), ([0, 5, 11, 2, 2, 7, 9], [1, 1, 2, 3, 4, 4, 4])), shape=(12, 6))
    got = columns.times_sparse(dense, sparse)
    assert got.dtype == dtype and got.flags.c_contiguous and got.shape == (50, 6)
    want = dense.astype(float) @ sparse.toarray()
    assert np.allclose(got, want, rtol=0, atol=1e-5 if dtype == np.float32 else 1e-13)
    assert not got[:, [0, 5]].any()  # columns without entries


@pytest.mark.usefixtures("precision")
def test_the_blocks_refuse_a_precision_they_have_no_rank_cut_for():
    h, m = _banded_field(30, [], 3)
    pattern = sp.csr_matrix((np.ones(h.nnz), h.indices, h.indptr), shape=h.shape)
    order = np.arange(30)
    starts = blocks.partition(order, pattern, None)
    with pytest.raises(ValueError, match="float32 or float64, not float16"):
        blocks.Blocks(h, m, order, starts, np.float16)
    assert blocks.Blocks(h, m, order, starts).dtype == blocks.PRECISION  # (the fixture's, then the default)
