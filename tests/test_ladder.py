"""The persistent ladder (arena/stats/ladder.py): the maximum-likelihood fit over all results,
refitted after each one. Seeded simulations pin its targets against the incremental Elo it
replaced (arena/stats/studies.py): a newcomer places fast, the order of results does not matter,
the error shrinks as games grow; and the store keeps the ladder with its intervals."""

from __future__ import annotations

import random
import statistics

from sqlalchemy import text

from arena.match.referee import MatchResult
from arena.schedule.fitter import fit_ladder
from arena.schedule.formats import Pairing
from arena.stats.ladder import ladder_units, refit
from arena.stats.studies import Fitted, Incremental, error_curve, order_dependence, placement_games
from arena.store.sqlite import Store
from arena.store.upgrade import upgrade
from tests.legacy_db import as_legacy


def test_a_newcomer_200_above_the_field_places_within_50_elo_in_10_games_median():
    fit = [placement_games(Fitted, s, cap=60) for s in range(31)]
    k20 = [placement_games(Incremental, s, cap=60) for s in range(31)]
    assert statistics.median(fit) <= 10
    assert statistics.median(k20) > 10  # what the ladder was: K = 20 needs dozens of games


def test_the_same_results_in_another_order_give_the_same_ratings():
    sd, changed = order_dependence(Fitted, 3, games=300, orders=4)
    assert sd < 1e-6 and changed == 0
    sd_k, _ = order_dependence(Incremental, 3, games=300, orders=4)
    assert sd_k > 5  # incremental Elo moves with the order


def test_error_shrinks_as_games_grow():
    curves = [error_curve(Fitted, s) for s in range(3)]
    mean = [statistics.fmean(c[i] for c in curves) for i in range(3)]
    assert mean[0] > mean[1] > mean[2]
    k20 = [error_curve(Incremental, s)[-1] for s in range(3)]
    assert mean[2] < statistics.fmean(k20)  # K = 20 stalls at the size of its steps


def test_units_pair_the_two_halves_of_a_duplicate_pair_within_a_tournament():
    rows = [
        (1, "a", "b", 0, "a|b|0"),   # a wins seat 0
        (1, "c", "a", 1, None),      # unpaired: a wins
        (1, "b", "a", 0, "a|b|0"),   # b wins its half: the pair is 1-1
        (2, "a", "b", None, "a|b|0"),  # another tournament, same key: not the same pair
    ]
    assert ladder_units(rows) == [("a", "b", 1.0, 2), ("c", "a", 0.0, 1), ("a", "b", 0.5, 1)]


def _record_all(results, order_seed, target=":memory:"):
    store = Store(target)
    order = list(range(len(results)))
    random.Random(order_seed).shuffle(order)
    tid = store.create_tournament("ecarte", "test", 1, {}, ["a", "b", "c", "d"],
                                  [Pairing(index=i, bot0=a, bot1=b, seed=i, pair=None)
                                   for i, (a, b, _) in enumerate(results)])
    for i in order:
        a, b, w = results[i]
        key = f"t{tid}-m{i + 1:04d}"
        store.record_result(key, MatchResult(match_id=key, winner=w, reason="target", scores=[0, 0], manches=[0, 0]),
                            None)
    fit_ladder(store, "ecarte")
    return store.ladder_intervals("ecarte")


def test_the_ladder_fit_does_not_depend_on_the_order_of_results(db_target):
    true = {"a": 150.0, "b": 50.0, "c": 0.0, "d": -200.0}
    rng = random.Random(7)
    results = []
    for _ in range(60):
        a, b = rng.sample(sorted(true), 2)
        p = 1 / (1 + 10 ** ((true[b] - true[a]) / 400))
        results.append((a, b, 0 if rng.random() < p else 1))
    one, two = _record_all(results, 1), _record_all(results, 2, db_target)  # and on each backend
    assert [r[0] for r in one] == [r[0] for r in two]
    for x, y in zip(one, two):
        assert abs(x[1] - y[1]) < 1e-6 and abs(x[2] - y[2]) < 1e-6 and x[3] == y[3]
    # what the store holds is the fit over all the results, intervals included
    fitted = refit([(a, b, 1.0 - w, 1) for a, b, w in results])
    assert [(r.name, round(r.elo, 6), round(r.ci95, 6), r.games) for r in fitted.ratings] == \
        [(n, round(e, 6), round(c, 6), g) for n, e, c, g in one]
    assert all(10 < r[2] < 1000 for r in one) and sum(r[3] for r in one) == 2 * len(results)


def test_rating_pairing_pairs_the_bots_closest_on_the_fitted_ladder(tmp_path, db_target):
    import trio

    from arena.schedule.contest import Contest, ContestConfig

    store = Store(db_target)
    results = [("a", "b", 0)] * 6 + [("b", "c", 0), ("c", "b", 0)] * 3 + [("c", "d", 0)] * 6
    tid = store.create_tournament("ecarte", "test", 1, {}, ["a", "b", "c", "d"],
                                  [Pairing(index=i, bot0=x, bot1=y, seed=i) for i, (x, y, _) in enumerate(results)])
    for i, (_, _, w) in enumerate(results):
        key = f"t{tid}-m{i + 1:04d}"
        store.record_result(key, MatchResult(match_id=key, winner=w, reason="target", scores=[0, 0], manches=[0, 0]),
                            None)
    fit_ladder(store, "ecarte")
    elo = {bot: e for bot, e, _ in store.ladder("ecarte")}
    assert elo["a"] > elo["b"] and elo["c"] > elo["d"] and abs(elo["b"] - elo["c"]) < 100

    class Conn:
        closed = trio.Event()

    contest = Contest(ContestConfig(pairing="rating", db=str(tmp_path / "x.db")), store=store)
    contest.server.bots = {n: Conn() for n in "abcd"}
    contest.pairing.elo = elo  # what the contest's fitter hands it after each fit
    assert contest.next_pair() == ("b", "c")


def test_bots_list_shows_each_ladder_interval(tmp_path, db_target):
    import subprocess
    import sys

    db = db_target
    store = Store(db)
    for name in ("a", "b"):
        store.add_bot(name)
    tid = store.create_tournament("ecarte", "test", 1, {}, ["a", "b"],
                                  [Pairing(index=i, bot0="a", bot1="b", seed=i) for i in range(6)])
    for i in range(6):
        key = f"t{tid}-m{i + 1:04d}"
        result = MatchResult(match_id=key, winner=1 if i % 3 == 0 else 0, reason="target", scores=[0, 0],
                             manches=[0, 0])
        store.record_result(key, result, None)
    fit_ladder(store, "ecarte")
    ci = {bot: c for bot, _, c, _ in store.ladder_intervals("ecarte")}
    out = subprocess.run([sys.executable, "-m", "arena.cli", "bots", "list", "--db", str(db)],
                         capture_output=True, text=True, check=True).stdout
    assert "±95%" in out
    for bot in ("a", "b"):
        row = next(line for line in out.splitlines() if f" {bot} " in line)
        assert f" {ci[bot]:.0f} " in row


def paired_plan(rng: random.Random, pairs: int, lone: tuple[str, str]) -> list[Pairing]:
    """``pairs`` duplicate pairs of random bots among a-d (the same pair keys in every
    tournament made with the same draws), then one unpaired match ``lone``."""
    plan = []
    for k in range(pairs):
        a, b = rng.sample("abcd", 2)
        plan += [Pairing(index=len(plan), bot0=a, bot1=b, seed=k, pair=f"{a}|{b}|{k}"),
                 Pairing(index=len(plan) + 1, bot0=b, bot1=a, seed=k, pair=f"{a}|{b}|{k}")]
    return plan + [Pairing(index=len(plan), bot0=lone[0], bot1=lone[1], seed=99)]


def test_the_stores_sql_units_are_those_of_ladder_units(db_target):
    """The store counts the ladder's units in SQL; they must be what ladder_units makes of the
    same rows: pairs (in two tournaments with the same keys), lone halves, unpaired matches."""
    from collections import Counter

    store = Store(db_target)
    rng = random.Random(3)
    rows = []
    for t in range(2):
        plan = paired_plan(rng, 12, ("a", "c"))
        tid = store.create_tournament("ecarte", "test", t, {}, list("abcd"), plan)
        for p in plan:
            if rng.random() < 0.15:
                continue  # left pending: its twin, if done, is a lone half
            key = f"t{tid}-m{p.index + 1:04d}"
            w = rng.choice((0, 1, None))
            store.record_result(key, MatchResult(match_id=key, winner=w, reason="target", scores=[0, 0],
                                                 manches=[0, 0]), None)
            rows.append((tid, p.bot0, p.bot1, w, p.pair))
    assert store.ladder_unit_counts("ecarte") == dict(Counter(ladder_units(rows)))
    assert any(g == 2 for _, _, _, g in store.ladder_unit_counts("ecarte"))


def test_the_units_kept_by_each_result_are_those_counted_over_every_match(db_target):
    """``ladder_units`` is kept up to date by each result, in any order (workers commit the
    second half of a pair before the first): it must always equal the recount over every
    finished match, and a database migrated from schema 5 gets it filled from its matches."""
    store = Store(db_target)
    rng = random.Random(11)
    for t in range(2):
        plan = paired_plan(rng, 10, ("b", "d"))
        tid = store.create_tournament("ecarte", "test", t, {}, list("abcd"), plan)
        order = list(plan)
        rng.shuffle(order)
        for p in order:
            if rng.random() < 0.15:
                continue  # left pending
            key = f"t{tid}-m{p.index + 1:04d}"
            reason = "aborted" if rng.random() < 0.1 else "target"
            store.record_result(key, MatchResult(match_id=key, winner=rng.choice((0, 1, None)), reason=reason,
                                                 scores=[0, 0], manches=[0, 0]), None)
            assert store.ladder_units("ecarte") == store.ladder_unit_counts("ecarte")
    kept = store.ladder_units("ecarte")
    assert any(g == 2 for _, _, _, g in kept) and any(g == 1 for _, _, _, g in kept)
    store.run(text("DROP TABLE ladder_units"))  # as a database of schema 5 was
    as_legacy(store, 5)
    store.close()
    upgrade(db_target)
    store = Store(db_target)
    assert store.ladder_units("ecarte") == kept
    store.close()


def test_refit_takes_the_stores_unit_counts_and_a_warm_start():
    """What the background fitter does: the unit counts the store keeps (a mapping), started
    from the previous ratings; the same fit as a cold one, ratings best first, and the
    separation of neighbours at hand (issue 21)."""
    from arena.stats.synthetic import perturb, synthetic_field

    field = synthetic_field(120, 20, 12, "neighbours", seed=21)
    cold = refit(field.units, field.names)
    assert [r.elo for r in cold.ratings] == sorted((r.elo for r in cold.ratings), reverse=True)
    more = perturb(field, seed=4, results=3)
    warm = refit(more, field.names, start={r.name: r.elo for r in cold.ratings})
    again = refit(more, field.names)
    for x, y in zip(warm.ratings, again.ratings):
        assert x.name == y.name and abs(x.elo - y.elo) < 1e-6 and abs(x.ci95 - y.ci95) < 1e-6
    sds = warm.neighbour_sd()
    assert len(sds) == 119 and all(s > 0 for s in sds)
    assert sds[0] == warm.sd_diff(warm.ratings[0].name, warm.ratings[1].name)
