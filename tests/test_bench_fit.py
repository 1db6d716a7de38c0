"""The fit bench's synthetic season (arena/tools/bench_fit.py --synthetic) sums the very history
that make bench-season seeds."""

from __future__ import annotations

import numpy as np

from arena.stats.rating import LadderTotals
from arena.store.season_seed import SeasonSpec, ladder_unit_rows, make_season
from arena.tools.bench_fit import season_totals


def test_synthetic_totals_equal_the_seeded_ladder_units():
    spec = SeasonSpec(bots=60, matches=4_000, seed=11, window=5.0)
    got, ranked = season_totals(spec)
    season = make_season(spec, now=0.0)
    rows = list(ladder_unit_rows(season))
    names = spec.names()
    index = {x: k for k, x in enumerate(names)}
    want = LadderTotals()
    want.add_units(names, np.array([index[r[1]] for r in rows]), np.array([index[r[2]] for r in rows]),
                   np.array([r[3] for r in rows]), np.array([float(r[4]) for r in rows]),
                   np.array([float(r[5]) for r in rows]))
    used = want.stats[5] > 0  # the store's lone first halves are units of count 0: no pair of their own
    assert got.names == want.names
    assert np.array_equal(got.keys, want.keys[used])
    assert np.array_equal(got.stats, want.stats[:, used])
    assert ranked == [names[k] for k in np.argsort(season.strength, kind="stable")[::-1]]
