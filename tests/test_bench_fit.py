"""The fit bench's synthetic season (arena/tools/bench_fit.py --synthetic) sums the very history
that make bench-season seeds."""

from __future__ import annotations

import numpy as np
import pytest

from arena.stats.rating import LadderTotals
from arena.store.season_seed import SeasonSpec, ladder_unit_rows, make_season
from arena.tools import bench_fit
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


@pytest.mark.parametrize("among", ["1", "-3"])
def test_among_refuses_fewer_than_two_bots_in_one_line(among, capsys):
    with pytest.raises(SystemExit) as exit_:
        bench_fit.main(["--synthetic", "--among", among])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert f"--among takes 0 (rating neighbours) or a number of bots of at least 2, not {among}" in err
