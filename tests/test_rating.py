"""Ratings: the maximum-likelihood fit recovers known strengths within its intervals, does not
depend on the order of results, anchors the mean, and the incremental Elo step is zero-sum."""

from __future__ import annotations

import random

from arena.rating import ANCHOR, elo_update, expected_score, fit_ratings

TRUE = {"a": 1700.0, "b": 1550.0, "c": 1450.0, "d": 1300.0}


def _results(n: int, seed: int):
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        x, y = rng.sample(sorted(TRUE), 2)
        out.append((x, y, 1.0 if rng.random() < expected_score(TRUE[x] - TRUE[y]) else 0.0))
    return out


def test_fit_recovers_known_ratings_within_intervals():
    fitted = {r.name: r for r in fit_ratings(_results(6000, 1))}
    true_mean = sum(TRUE.values()) / len(TRUE)
    for name, elo in TRUE.items():
        r = fitted[name]
        assert abs(r.elo - (elo - true_mean + ANCHOR)) < r.ci95, (name, r)
        assert 5 < r.ci95 < 60
    assert [r.name for r in fit_ratings(_results(6000, 1))] == ["a", "b", "c", "d"]


def test_fit_is_invariant_to_the_order_of_results():
    res = _results(500, 2)
    one = fit_ratings(res)
    shuffled = res[:]
    random.Random(5).shuffle(shuffled)
    two = fit_ratings(shuffled)
    for x, y in zip(one, two):
        assert x.name == y.name and abs(x.elo - y.elo) < 1e-6 and abs(x.ci95 - y.ci95) < 1e-6


def test_mean_is_anchored_and_tallies_are_counted():
    res = [("a", "b", 1.0), ("a", "b", 1.0), ("b", "a", 0.5), ("c", "a", 0.0)]
    r = {x.name: x for x in fit_ratings(res)}
    assert abs(sum(x.elo for x in r.values()) / 3 - ANCHOR) < 1e-9
    assert (r["a"].wins, r["a"].losses, r["a"].draws, r["a"].games) == (3, 0, 1, 4)
    assert r["a"].elo > r["b"].elo and r["a"].elo > r["c"].elo


def test_a_perfect_record_stays_finite():
    r = fit_ratings([("a", "b", 1.0)] * 50)
    assert all(abs(x.elo) < 5000 for x in r) and r[0].name == "a"


def test_incremental_elo_is_zero_sum_and_moves_toward_the_result():
    a, b = elo_update(1500, 1500, 1.0, k=20)
    assert (a, b) == (1510.0, 1490.0)
    a2, b2 = elo_update(1600, 1400, 0.0)
    assert a2 < 1600 and b2 > 1400 and abs((a2 + b2) - 3000) < 1e-9
