"""Formats: pairing logic of round-robin, gauntlet, rotation and chouette, the duplicate seat
swap, and the chouette's auction and reigns (ecarte.md §E8.2, §E9.2, §E9.3)."""

from __future__ import annotations

from collections import Counter

import pytest

from arena.schedule.formats import Auction, Pairing, make_format
from arena.schedule.formats.chouette import BANKROLL, legal_bids
from arena.schedule.formats.round_robin import schedule

BOTS = ["a", "b", "c", "d"]


def drain(fmt, winner_of):
    """Play a format to the end, one step at a time; return the steps in order."""
    steps = []
    while not fmt.done:
        ready = fmt.ready(set())
        assert ready, "a format that is not done must hand out a step when nothing runs"
        for step in ready:
            steps.append(step)
            if isinstance(step, Auction):
                fmt.record_auction(step, winner_of(step))
            else:
                fmt.record(step, winner_of(step))
    return steps


def test_E8_2_round_robin_duplicate_pairs_share_a_seed_with_seats_swapped():
    plan = schedule(BOTS, 4, seed=1)
    assert len(plan) == 6 * 4
    by_pair: dict[str, list[Pairing]] = {}
    for p in plan:
        assert p.pair is not None
        by_pair.setdefault(p.pair, []).append(p)
    assert len(by_pair) == 6 * 2
    for pair in by_pair.values():
        x, y = pair
        assert x.seed == y.seed and (x.bot0, x.bot1) == (y.bot1, y.bot0)
    assert len({p.seed for p in plan}) == 12  # one seed per duplicate pair
    assert plan == schedule(BOTS, 4, seed=1) and plan != schedule(BOTS, 4, seed=2)


def test_round_robin_without_duplicates_and_an_odd_last_game():
    plain = schedule(BOTS, 3, seed=1, duplicate=False)
    assert len({p.seed for p in plain}) == len(plain) and all(p.pair is None for p in plain)
    odd = schedule(BOTS, 3, seed=1)
    assert sum(p.pair is None for p in odd) == 6  # the third game of each pair is unpaired
    for x, y in [("a", "b"), ("c", "d")]:
        games = [p for p in odd if {p.bot0, p.bot1} == {x, y}]
        assert [p.bot0 for p in games] in ([x, y, x], [y, x, y])


def test_static_formats_never_seat_a_bot_twice_at_once():
    fmt = make_format("round-robin", BOTS, 2, 1)
    first = fmt.ready(set())
    assert len(first) == 2  # four bots: two disjoint matches at once
    names = [n for p in first for n in (p.bot0, p.bot1)]
    assert len(set(names)) == 4
    assert fmt.ready({"a", "b", "c", "d"}) == []
    fmt.record(first[0], first[0].bot0)
    nxt = fmt.ready({first[1].bot0, first[1].bot1})
    assert nxt and all({p.bot0, p.bot1} == {first[0].bot0, first[0].bot1} or
                       not ({p.bot0, p.bot1} & {first[1].bot0, first[1].bot1}) for p in nxt)


def test_gauntlet_pits_the_hero_against_every_other_bot_only():
    steps = drain(make_format("gauntlet", BOTS, 4, 3, hero="c"), lambda p: p.bot0)
    assert len(steps) == 3 * 4
    assert all("c" in (p.bot0, p.bot1) for p in steps)
    assert Counter(p.bot0 if p.bot1 == "c" else p.bot1 for p in steps) == {"a": 4, "b": 4, "d": 4}
    with pytest.raises(ValueError):
        make_format("gauntlet", BOTS, 2, 1, hero="zz")


def test_E9_2_rotation_head_two_play_then_go_to_the_back():
    fmt = make_format("rotation", ["a", "b", "c"], 6, 1)
    steps = drain(fmt, lambda p: sorted((p.bot0, p.bot1))[0])  # alphabetical winner
    pairs = [frozenset((p.bot0, p.bot1)) for p in steps]
    # queue a b c: a-b play (a wins) -> c a b; c-a (a wins) -> b a c; b-a -> c a b ...
    assert pairs[:4] == [frozenset("ab"), frozenset("ac"), frozenset("ab"), frozenset("ac")]
    assert [p.index for p in steps] == list(range(6))
    assert all(p.pair is None for p in steps)


def test_E9_3_chouette_challengers_auction_and_reigns():
    fmt = make_format("chouette", BOTS, 7, 5)
    bids = {"a": 10, "b": 30, "c": 30, "d": 0}  # b and c tie: b is nearer the head of the queue

    def outcome(step):
        if isinstance(step, Auction):
            return {k: v for k, v in bids.items() if k in step.bidders}
        return "b" if "b" in (step.bot0, step.bot1) and fmt.reigns[-1].losses == 0 and step.index < 3 else (
            step.bot1 if step.bot0 == fmt.chouetteur else step.bot0)

    steps = drain(fmt, outcome)
    assert isinstance(steps[0], Auction) and steps[0].bidders == ("a", "b", "c", "d")
    first = fmt.reigns[0]
    assert first.chouetteur == "b" and first.price == 30
    assert fmt.bankrolls["b"] <= BANKROLL - 30
    assert sum(fmt.bankrolls.values()) + fmt.house == BANKROLL * 4  # chips are never created
    # every reign ended by two losses except possibly the last; matches add up
    assert sum(r.matches for r in fmt.reigns) == 7
    assert all(r.losses == 2 for r in fmt.reigns[:-1])
    auctions = [s for s in steps if isinstance(s, Auction)]
    assert len(auctions) == len(fmt.reigns)


def test_E9_3_chouette_beaten_challenger_is_replaced_and_winner_stays():
    fmt = make_format("chouette", ["a", "b", "c"], 4, 1)
    auction = fmt.ready(set())[0]
    assert fmt.record_auction(auction, {"a": 50}) == "a"
    m1 = fmt.ready(set())[0]
    assert {m1.bot0, m1.bot1} == {"a", "b"}
    fmt.record(m1, "a")  # b beaten: c comes next
    m2 = fmt.ready(set())[0]
    assert {m2.bot0, m2.bot1} == {"a", "c"}
    fmt.record(m2, "c")  # c wins and stays
    m3 = fmt.ready(set())[0]
    assert {m3.bot0, m3.bot1} == {"a", "c"}
    fmt.record(m3, "c")  # second loss: the seat is auctioned among the waiting bots
    nxt = fmt.ready(set())[0]
    assert isinstance(nxt, Auction) and nxt.bidders == ("c", "b", "a")
    assert fmt.reigns[0].beaten == 1 and fmt.reigns[0].losses == 2


def test_E9_3_illegal_or_missing_bids_count_as_zero():
    fmt = make_format("chouette", ["a", "b"], 1, 1)
    auction = fmt.ready(set())[0]
    assert fmt.record_auction(auction, {"a": 7, "b": 10**9}) == "a"  # both illegal: tie at 0 -> head
    assert fmt.house == 0
    assert legal_bids(25) == [0, 10, 20] and legal_bids(10**6)[-1] == 500


def test_make_format_rejects_bad_arguments():
    with pytest.raises(ValueError):
        make_format("swiss", BOTS, 2, 1)
    with pytest.raises(ValueError):
        make_format("round-robin", ["a", "a"], 2, 1)
    with pytest.raises(ValueError):
        make_format("rotation", ["a"], 2, 1)
