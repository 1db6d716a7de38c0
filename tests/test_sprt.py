"""The GSPRT over duplicate pairs: a hand-checked LLR, edge cases of the constrained maximum
likelihood, monotonicity, and simulated runs whose error rates match alpha and beta."""

from __future__ import annotations

import math
import random

import pytest

from arena.stats.sprt import SPRT, elo_from_score, expected_score, llr, mle_distribution, profile_loglik


def test_llr_is_zero_without_data():
    t = SPRT(0, 50)
    assert t.llr() == 0.0 and t.status() == "continue" and t.pairs == 0
    assert llr({0.0: 0, 0.5: 0, 1.0: 0}, 0.5, 0.6) == 0.0
    assert t.elo_estimate()[1] == math.inf
    assert t.summary().startswith("pairs 0  W-D-L 0-0-0")


def test_bounds_are_walds():
    lower, upper = SPRT(0, 10, alpha=0.05, beta=0.05).bounds
    assert lower == pytest.approx(-math.log(19)) and upper == pytest.approx(math.log(19))
    lower, upper = SPRT(0, 10, alpha=0.05, beta=0.1).bounds
    assert lower == pytest.approx(math.log(0.1 / 0.95)) and upper == pytest.approx(math.log(0.9 / 0.05))


def test_hand_computed_llr_three_outcomes():
    # Counts of per-match score fractions x = 0, 1/2, 1: n = (1, 2, 1), N = 4, f = (1/4, 1/2, 1/4).
    # H0: s0 = 1/2 equals the empirical mean, so lambda0 = 0 and p0 = f = (1/4, 1/2, 1/4).
    # H1: s1 = 0.6, d = x - s1 = (-0.6, -0.1, 0.4); lambda solves
    #   0.25(-0.6)/(1-0.6L) + 0.5(-0.1)/(1-0.1L) + 0.25(0.4)/(1+0.4L) = 0.
    # Multiplying out the denominators: 0.024 L^2 - 0.105 L - 0.1 = 0, so
    #   L = (0.105 - sqrt(0.020625)) / 0.048 = (4.2 - sqrt(33)) / 1.92 = -0.8044597...
    # (the other root, 5.18, makes 1 - 0.6 L negative). Then p1_k = f_k / (1 + L d_k):
    #   p1 = (0.25/1.4826758, 0.5/1.0804460, 0.25/0.6782161) = (0.1686141, 0.4627719, 0.3686141),
    # which sums to 1 and has mean 0.4627719/2 + 0.3686141 = 0.6.
    # LLR = 1 ln(0.1686141/0.25) + 2 ln(0.4627719/0.5) + 1 ln(0.3686141/0.25)
    #     = -0.3938245 + 2(-0.0773791) + 0.3883757 = -0.1603070.
    lam = (4.2 - math.sqrt(33)) / 1.92
    assert lam == pytest.approx(-0.8044597, abs=1e-7)
    counts = {0.0: 1, 0.5: 2, 1.0: 1}
    p1 = mle_distribution(counts, 0.6)
    assert p1 is not None
    assert [p1[x] for x in (0.0, 0.5, 1.0)] == pytest.approx([0.1686141, 0.4627719, 0.3686141], abs=1e-7)
    assert llr(counts, 0.5, 0.6) == pytest.approx(-0.1603070, abs=1e-6)


def test_two_outcomes_reduce_to_the_bernoulli_sprt():
    # With only x = 0 and x = 1, the distribution with mean s is Bernoulli(s):
    # LLR = n1 ln(s1/s0) + n0 ln((1-s1)/(1-s0)) = 5 ln 1.5 + 3 ln(2/3) = 2 ln 1.5.
    assert llr({0.0: 3, 1.0: 5}, 0.4, 0.6) == pytest.approx(2 * math.log(1.5))


def test_edge_cases_of_the_constrained_fit():
    # all observations equal to s: the empirical distribution itself
    assert mle_distribution({0.5: 4}, 0.5) == {0.5: 1.0}
    # s outside (or on the edge of) the observed range: no distribution, log-likelihood -inf
    assert mle_distribution({0.5: 3, 1.0: 1}, 0.4) is None
    assert mle_distribution({0.5: 3, 1.0: 1}, 0.5) is None
    assert profile_loglik({1.0: 3}, 0.6) == -math.inf
    assert llr({0.5: 3, 1.0: 1}, 0.4, 0.6) == math.inf
    assert llr({0.0: 3, 0.5: 1}, 0.4, 0.6) == -math.inf
    # outcomes with a zero count get probability zero and change nothing
    a = llr({0.0: 2, 0.5: 5, 1.0: 3}, 0.5, 0.55)
    b = llr({0.0: 2, 0.25: 0, 0.5: 5, 0.75: 0, 1.0: 3}, 0.5, 0.55)
    assert a == pytest.approx(b, abs=1e-12)
    # extreme but feasible s still solves (lambda close to its bracket end)
    p = mle_distribution({0.0: 1, 1.0: 1000}, 0.001)
    assert p is not None and sum(p.values()) == pytest.approx(1.0) and p[1.0] == pytest.approx(0.001)
    # the SPRT's regularisation keeps everything finite, even with one outcome only
    t = SPRT(0, 50, outcomes=(0, 1, 2))
    t.add(2, n=5)
    assert 0 < t.llr() < math.inf
    t = SPRT(0, 50, outcomes=(0, 1, 2))
    t.add(0, n=5)
    assert -math.inf < t.llr() < 0
    t = SPRT(0, 50, outcomes=(0, 1, 2))
    t.add(1, n=5)  # mean exactly 1/2 = s0: evidence for H0
    assert -math.inf < t.llr() < 0


def test_regularisation_only_touches_unseen_outcomes():
    t = SPRT(-10, 30)
    for score, n in ((0, 7), (0.5, 3), (1, 20), (1.5, 4), (2, 11)):
        t.add(score, n)
    raw = llr({0.0: 7, 0.25: 3, 0.5: 20, 0.75: 4, 1.0: 11}, expected_score(-10), expected_score(30))
    assert t.llr() == pytest.approx(raw, abs=1e-12)


def test_more_wins_give_a_higher_llr():
    values = []
    for wins in range(0, 21):
        t = SPRT(0, 50, outcomes=(0, 1, 2))
        t.add(2, wins)
        t.add(1, 30)
        t.add(0, 20 - wins)
        values.append(t.llr())
    assert all(b > a for a, b in zip(values, values[1:]))
    # and adding a won pair never lowers it
    t = SPRT(0, 50)
    t.add(1, 10)
    t.add(0, 3)
    before = t.llr()
    t.add(2)
    assert t.llr() > before


def test_draws_and_invalid_scores():
    t = SPRT(0, 50)
    for s in (0.5, 1.5, 1, 1, 2, 0):
        t.add(s)
    assert t.counts == {0.0: 1, 0.5: 1, 1.0: 2, 1.5: 1, 2.0: 1}
    with pytest.raises(ValueError):
        t.add(0.7)
    with pytest.raises(ValueError):
        t.add(3)
    trinomial = SPRT(0, 50, outcomes=(0, 1, 2))
    with pytest.raises(ValueError):
        trinomial.add(0.5)
    with pytest.raises(ValueError):
        SPRT(50, 0)


def test_elo_conversions_and_estimate():
    for elo in (-300, -35, 0, 12.5, 400):
        assert elo_from_score(expected_score(elo)) == pytest.approx(elo)
    assert expected_score(0) == 0.5 and elo_from_score(1.0) == math.inf
    # 4 pairs: scores 2, 1, 1, 0 -> fractions 1, 1/2, 1/2, 0: mean 1/2, sample variance
    # (1/4 + 0 + 0 + 1/4) / 3 = 1/6, standard error sqrt(1/24); slope at 1/2 is 1600/ln 10.
    t = SPRT(0, 50)
    for s in (2, 1, 1, 0):
        t.add(s)
    elo, ci = t.elo_estimate()
    assert elo == pytest.approx(0.0, abs=1e-9)
    assert ci == pytest.approx(1.96 * 1600 / math.log(10) * math.sqrt(1 / 24))
    assert "elo 0 ± " in t.summary() and "W-D-L 1-2-1" in t.summary() and "[0:1 1:2 2:1]" in t.summary()
    t.add(2, 4)
    assert "LLR" in t.summary() and "[-2.94, 2.94]" in t.summary()


def _pair(rng: random.Random, theta: float, luck: float) -> int:
    """A's score over a duplicate pair: natural-log strength advantage ``theta``; the deal gives
    the seat holding the good cards an extra ``luck`` (sign random per deal, flipped by the
    seat swap), so the two matches of a pair are negatively correlated when ``luck`` > 0."""
    u = luck if rng.random() < 0.5 else -luck
    score = 0
    for sign in (1, -1):
        score += rng.random() < 1.0 / (1.0 + math.exp(-(theta + sign * u)))
    return score


def _run(rng: random.Random, true_elo: float, luck: float = 0.0, cap: int = 4000) -> tuple[str, int]:
    theta = true_elo * math.log(10) / 400
    t = SPRT(0, 60, alpha=0.05, beta=0.05, outcomes=(0, 1, 2))
    for n in range(1, cap + 1):
        t.add(_pair(rng, theta, luck))
        status = t.status()
        if status != "continue":
            return status, n
    return "continue", cap


RUNS = 200


@pytest.mark.parametrize(
    "true_elo, luck, expect, max_wrong",
    [
        (0, 0.0, "H0", 0.05 + 0.04),  # true = elo0: false H1 rate about alpha
        (60, 0.0, "H1", 0.05 + 0.04),  # true = elo1: false H0 rate about beta
        (100, 0.0, "H1", 0.02),  # clearly better: H1 nearly always
        (-30, 0.0, "H0", 0.02),  # clearly not better: H0 nearly always
        (0, 2.0, "H0", 0.05 + 0.04),  # strongly correlated duplicate pairs at elo0
    ],
)
def test_simulated_error_rates(true_elo, luck, expect, max_wrong):
    rng = random.Random(20260 + true_elo * 7 + int(luck))
    runs = [_run(rng, true_elo, luck) for _ in range(RUNS)]
    wrong = sum(status != expect for status, _ in runs) / RUNS
    assert wrong <= max_wrong, wrong
    assert all(status != "continue" for status, _ in runs)  # every run stopped
    mean_pairs = sum(n for _, n in runs) / RUNS
    assert mean_pairs < 250, mean_pairs


def test_duplicate_pairs_with_shared_luck_decide_sooner():
    # Same expected score (1/2 at theta = 0), but the seat swap cancels most of the deal luck:
    # the pair score varies less, so the test needs fewer pairs to accept H0.
    rng = random.Random(3)
    plain = sum(_run(rng, 0, 0.0)[1] for _ in range(100))
    dup = sum(_run(rng, 0, 2.0)[1] for _ in range(100))
    assert dup < 0.75 * plain, (dup, plain)


def test_overshoot_correction_moves_the_bounds_inward_by_the_ladder_height_estimate():
    """fishtest's correction: each new LLR record adds a ladder height ``h``; the upper bound
    comes down by sum(h^2) / (2 sum h), the lower one up likewise (arena/stats/sprt.py)."""
    t = SPRT(0, 60, outcomes=(0, 1, 2))
    plain = SPRT(0, 60, outcomes=(0, 1, 2), overshoot=False)
    path = [0.0]
    for score in (2, 2, 0, 1, 2, 0, 0, 0, 2, 1, 0):
        t.add(score)
        plain.add(score)
        path.append(t.llr())
    up = [b - a for a, b in zip([max(path[:i]) for i in range(1, len(path))], path[1:]) if b - a > 0]
    down = [b - a for a, b in zip([min(path[:i]) for i in range(1, len(path))], path[1:]) if b - a < 0]
    lower, upper = t.bounds
    assert t.stop_bounds == pytest.approx((lower + sum(d * d for d in down) / (2 * -sum(down)),
                                           upper - sum(h * h for h in up) / (2 * sum(up))))
    assert lower < t.stop_bounds[0] and t.stop_bounds[1] < upper
    assert plain.stop_bounds == plain.bounds and plain.llr() == t.llr()
    assert "stop at" in t.summary() and "stop at" not in plain.summary()


@pytest.mark.parametrize("true_elo, wrong", [(0, "H1"), (60, "H0")])
def test_overshoot_correction_keeps_the_error_rates_with_fewer_pairs(true_elo, wrong):
    """On the same LLR paths (arena/stats/studies.py), the corrected test stops no later than Wald's
    and needs fewer pairs on average, its error rate still about the nominal 5%."""
    from arena.stats.studies import sprt_runs, sprt_summary

    runs = sprt_runs(true_elo, 100, seed=11 + true_elo)
    err_c, pairs_c, err_w, pairs_w = sprt_summary(runs, wrong)
    assert all(c <= w for _, c, _, w in runs)
    assert pairs_c < 0.97 * pairs_w, (pairs_c, pairs_w)
    assert err_c <= 0.05 + 0.04 and err_w <= err_c
