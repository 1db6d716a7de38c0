"""One test (at least) per numbered rule of ``../shared/rules/piquet.md`` §P1-§P9.

Positions are hand-made by stacking the pack (see ``tests/piquet_positions.py``). Unless a test
says otherwise seat 0 deals first, so in the first deal seat 1 is **elder** (``E``) and seat 0
is **younger** (``Y``, the dealer). Every expected score below is worked out by hand in the
comments, never taken from the engine.

Most positions are given as the hands *after* the exchange: elder's final twelve (one of them,
``drawn``, is the top card of the talon, which he takes in exchange for ``discard``), and
younger's twelve (he takes nothing and leaves the talon face down).
"""

from __future__ import annotations

import copy
import random
import re
from typing import Any

import msgspec
import pytest

from arena.games.base import BOTH, NOBODY, ONLY, IllegalAction, WrongDecision
from arena.games.piquet import PiquetMatch
from protocol.messages import (
    CardPlayed,
    CarteBlanche,
    DealEnd,
    DealerDraw,
    DealStart,
    DeckOrder,
    Declaration,
    Exchange,
    HandDealt,
    LookedAt,
    MatchScore,
    Rules,
    Score,
    TalonExposed,
    TrickWon,
)

try:
    from piquet_positions import (
        PACK_32,
        PACK_36,
        deal_pack,
        draw_for,
        events_of,
        exchange,
        finish_deal,
        new_match,
        pack_with_top,
        play_cards,
        run,
        seen_of,
        snapshot,
        split,
    )
except ImportError:  # tests/ imported as a package
    from tests.piquet_positions import (
        PACK_32,
        PACK_36,
        deal_pack,
        draw_for,
        events_of,
        exchange,
        finish_deal,
        new_match,
        pack_with_top,
        play_cards,
        run,
        seen_of,
        snapshot,
        split,
    )

Y, E = 0, 1  # younger (first dealer) and elder of the first deal (draw_for(0))
R36 = Rules(pack=36)


# --------------------------------------------------------------------------- helpers


def upto_deal_end(seen: list) -> list:
    """``seen`` up to its first DealEnd (what follows belongs to the next deal)."""
    for i, (ev, _) in enumerate(seen):
        if isinstance(ev, DealEnd):
            return seen[: i + 1]
    return seen


def scores(seen: list) -> list[tuple[int, int, str]]:
    """The Score events of ``seen`` (up to the end of its deal) as (seat, points, reason)."""
    return [(s.seat, s.points, s.reason) for s in events_of(upto_deal_end(seen), Score)]


def decl(seen: list, category: str) -> Declaration:
    (d,) = [d for d in events_of(seen, Declaration) if d.category == category]
    return d


def elder_twelve(final: str, drawn: str, discard: str) -> list[str]:
    """Elder's dealt hand: his final hand with ``discard`` instead of ``drawn``."""
    cards = split(final)
    assert drawn in cards and discard not in cards
    return [c for c in cards if c != drawn] + [discard]


def position_pack(elder: str, drawn: str, discard: str, younger: str, rules: Rules | None = None) -> list[str]:
    rules = rules or Rules()
    return deal_pack(elder_twelve(elder, drawn, discard), younger, [drawn], rules.packets, rules.pack)


def after_exchange(
    monkeypatch: Any,
    elder: str,
    drawn: str,
    discard: str,
    younger: str,
    rules: Rules | None = None,
    more: tuple = (),
) -> tuple[PiquetMatch, list]:
    """Deal the position, let elder exchange ``discard`` for ``drawn`` (and not look), younger
    take nothing (and keep the talon down). Returns the match at its first card, with every
    event since the start."""
    rules = rules or Rules()
    pack = position_pack(elder, drawn, discard, younger, rules)
    m, seen = new_match(monkeypatch, pack, *more, rules=rules)
    seen += exchange(m, [discard], [])
    assert sorted(m.hands[E]) == sorted(split(elder)) and sorted(m.hands[Y]) == sorted(split(younger))
    assert (m.to_act, m.decision) == (E, "play")
    return m, seen


def assert_illegal(m: PiquetMatch, action: Any, rule: str | None, wrong: bool = False) -> None:
    """``action`` raises IllegalAction naming ``rule`` (WrongDecision if ``wrong``) and leaves
    the match unchanged."""
    before = snapshot(m)
    with pytest.raises(IllegalAction) as info:
        m.apply(action)
    assert isinstance(info.value, WrongDecision) == wrong, info.value
    if rule is not None:
        assert info.value.rule == rule, info.value
    assert snapshot(m) == before


CARD = re.compile(r"\b[6789TJQKA][cdhs]\b")


# =========================================================================== §P1 cards

ORDER = "AKQJT987"  # §P1, high to low (32 cards)
OTHER_SUITS = "7c 8c 9c Tc Jc Qc Kc Ac 7d 8d 9d".split()


def one_heart_each(elder_heart: str, younger_heart: str | None) -> tuple[str, str, str, str]:
    """Elder holds one heart (plus clubs and low diamonds), younger at most one heart (plus
    high diamonds and spades); the other hearts lie in the talon under the Ks that elder draws
    for his 7c."""
    elder = [elder_heart] + [c for c in OTHER_SUITS if c != "7c"] + ["Ks"]
    younger = "Td Jd Qd Kd Ad 7s 8s 9s Ts Js Qs".split()
    younger.append(younger_heart or "As")
    return " ".join(elder), "Ks", "7c", " ".join(younger)


@pytest.mark.parametrize("hi,lo", [(a, b) for i, a in enumerate(ORDER) for b in ORDER[i + 1 :]])
def test_P1_rank_order_A_K_Q_J_T_9_8_7(monkeypatch, hi, lo):
    # elder leads his only heart, younger must follow with his only heart: the higher wins
    for led, followed, winner in ((lo + "h", hi + "h", Y), (hi + "h", lo + "h", E)):
        m, _ = after_exchange(monkeypatch, *one_heart_each(led, followed))
        run(m, led)
        assert m.legal_actions() == [followed]  # §P6.1: follow suit
        seen = run(m, followed)
        assert events_of(seen, TrickWon)[0].winner == winner, (led, followed)


def test_P1_no_trumps_another_suit_never_wins(monkeypatch):
    m, _ = after_exchange(monkeypatch, *one_heart_each("7h", None))  # younger holds no heart
    run(m, "7h")
    assert sorted(m.legal_actions()) == sorted(m.hands[Y])  # void: any card
    for card in m.hands[Y]:  # not even an ace of another suit takes the seven of hearts
        c = copy.deepcopy(m)
        seen = c.apply(card)
        assert events_of(seen, TrickWon)[0].winner == E, card


def test_P1_card_values_for_the_point(monkeypatch):
    # elder's longest suit is clubs A Q T 8 7: 11 + 10 + 10 + 8 + 7 = 46 (A 11, Q T 10, others
    # their number); K Q J count 10 each: younger's hearts K Q J = 30. 46 -> 5 points.
    m, seen = after_exchange(
        monkeypatch,
        elder="Ac Qc Tc 8c 7c 7d 8d 9d 7s 8s 9s 9h",
        drawn="9h",
        discard="Td",
        younger="Kh Qh Jh Kc Jc 9c Kd Qd Jd Ts Js Qs",
    )
    d = decl(seen, "point")
    assert (d.elder, d.result, d.winner) == ("point of 5, 46", "good", E)
    assert (E, 5, "point") in scores(seen)


def test_P1_36_card_pack_adds_the_sixes_below_the_sevens(monkeypatch):
    pack = list(PACK_36)
    m, seen = new_match(monkeypatch, pack, rules=R36)
    assert events_of(seen, DeckOrder)[0].cards == pack and len(pack) == 36
    assert {c for c in pack if c[0] == "6"} == {"6c", "6d", "6h", "6s"}
    assert len(m.talon) == 12  # §P2.2: 36 - 24
    # a seven takes a six of its suit
    m, _ = after_exchange(
        monkeypatch,
        elder="6h 7c 8c 9c Tc Jc Qc Kc Ac 6d 7d 8d",
        drawn="8d",
        discard="9d",
        younger="7h Td Jd Qd Kd Ad 6s 7s 8s 9s Ts Js",
        rules=R36,
    )
    seen = play_cards(m, "6h 7h")
    assert events_of(seen, TrickWon)[0].winner == Y


# =========================================================================== §P2 deal


@pytest.mark.parametrize(
    "draw,dealer",
    [(("9c", "Kd"), 0), (("Kd", "9c"), 1), (("Ac", "Kc"), 1), (("7h", "8s"), 0), (("Ts", "Jd"), 0)],
)
def test_P2_1_lower_card_deals_first(monkeypatch, draw, dealer):
    # seat 0 draws the first card, seat 1 the second; the lower (A high ... 7 low) deals
    m, seen = new_match(monkeypatch, list(PACK_32), pre=[pack_with_top(*draw)])
    assert seen_of(seen, DealerDraw) == [(DealerDraw(cards=list(draw), dealer=dealer), BOTH)]
    assert events_of(seen, DealStart)[0] == DealStart(
        deal=1, manche=1, dealer=dealer, elder=1 - dealer, turn_up=None, trump=None, stock=8
    )
    assert (m.dealer, m.elder, m.to_act, m.decision) == (dealer, 1 - dealer, 1 - dealer, "discard")


@pytest.mark.parametrize("size", [32, 36])
def test_P2_1_equal_ranks_draw_again(monkeypatch, size):
    rules = Rules(pack=size)
    first = ("6c", "6d") if size == 36 else ("9c", "9d")
    pre = [pack_with_top(*first, size=size), pack_with_top("Qh", "Jh", size=size), pack_with_top("7s", "8s", size=size)]
    m, seen = new_match(monkeypatch, list(PACK_36 if size == 36 else PACK_32), rules=rules, pre=pre)
    # 9 = 9: no dealer, a new pack; Q > J: seat 1 (the jack) deals. The third pack is the deal.
    assert events_of(seen, DealerDraw) == [
        DealerDraw(cards=list(first), dealer=None),
        DealerDraw(cards=["Qh", "Jh"], dealer=1),
    ]
    assert events_of(seen, DeckOrder)[0].cards[:2] == ["7s", "8s"]
    assert (m.dealer, m.elder) == (1, 0)


def play_out(m: PiquetMatch) -> list:
    """Finish the match with the first legal action everywhere."""
    seen: list = []
    while not m.over:
        seen += m.apply(m.auto_action())
    return seen


def test_P2_1_deal_alternates_and_elder_is_the_non_dealer(monkeypatch):
    for seed in range(12):
        m = PiquetMatch(Rules(), random.Random(seed))
        seen = m.start() + play_out(m)
        starts = events_of(seen, DealStart)
        first = events_of(seen, DealerDraw)[-1].dealer
        assert len(starts) in (6, 8)  # §P8.2
        for i, s in enumerate(starts):
            assert s.deal == i + 1 and s.dealer == (first if i % 2 == 0 else 1 - first)
            assert s.elder == 1 - s.dealer


PACKET_HANDS = {
    # PACK_32 in its fixed order: 7c 8c 9c Tc Jc Qc Kc Ac | 7d ... Ad | 7h ... Ah | 7s ... As
    # packets of 2: elder 0-1, 4-5, 8-9, 12-13, 16-17, 20-21; dealer 2-3, 6-7, ..., 22-23
    2: ("7c 8c Jc Qc 7d 8d Jd Qd 7h 8h Jh Qh", "9c Tc Kc Ac 9d Td Kd Ad 9h Th Kh Ah"),
    # packets of 3: elder 0-2, 6-8, 12-14, 18-20; dealer 3-5, 9-11, 15-17, 21-23
    3: ("7c 8c 9c Kc Ac 7d Jd Qd Kd 9h Th Jh", "Tc Jc Qc 8d 9d Td Ad 7h 8h Qh Kh Ah"),
}


@pytest.mark.parametrize("packets", [2, 3])
def test_P2_2_twelve_each_in_packets_of_2_or_3_rest_is_the_talon(monkeypatch, packets):
    pack = list(PACK_32)
    m, seen = new_match(monkeypatch, pack, pack, rules=Rules(packets=packets))
    elder, dealer = (sorted(split(h)) for h in PACKET_HANDS[packets])
    assert seen_of(seen, DeckOrder) == [(DeckOrder(cards=pack), NOBODY)]  # the log only
    hands = seen_of(seen, HandDealt)
    assert [(h.seat, sorted(h.cards), by) for h, by in hands] == [(Y, dealer, ONLY[Y]), (E, elder, ONLY[E])]
    assert m.talon == split("7s 8s 9s Ts Js Qs Ks As")  # the last 8 cards, top first
    assert events_of(seen, DealStart)[0].stock == 8 and m.view(Y).talon == 8
    # the packets are fixed for the match: the same positions in the second deal (seat 0 elder)
    exchange(m, m.hands[E][:5], [])
    seen = finish_deal(m)
    hands = {h.seat: sorted(h.cards) for h in events_of(seen, HandDealt)}
    assert hands == {Y: elder, E: dealer}


def test_P2_2_36_cards_packets_of_3_talon_of_12(monkeypatch):
    pack = list(PACK_36)  # 6c 7c ... Ac | 6d ... Ad | 6h ... Ah | 6s ... As
    m, seen = new_match(monkeypatch, pack, rules=Rules(pack=36, packets=3))
    hands = {h.seat: sorted(h.cards) for h in events_of(seen, HandDealt)}
    assert hands[E] == sorted(split("6c 7c 8c Qc Kc Ac 9d Td Jd 6h 7h 8h"))  # 0-2, 6-8, 12-14, 18-20
    assert hands[Y] == sorted(split("9c Tc Jc 6d 7d 8d Qd Kd Ad 9h Th Jh"))  # 3-5, 9-11, 15-17, 21-23
    assert m.talon == split("Qh Kh Ah 6s 7s 8s 9s Ts Js Qs Ks As")
    assert events_of(seen, DealStart)[0].stock == 12


def test_P2_2_rule_options_are_checked():
    for bad in (Rules(packets=4), Rules(packets=1), Rules(pack=52), Rules(scoring="partie")):  # type: ignore[arg-type]
        with pytest.raises(ValueError):
            PiquetMatch(bad, random.Random(0))


# =========================================================================== §P3 carte blanche

# Elder holds no K, Q or J. Worked example: after the exchange (8d out, 9h in) elder has
#   clubs A T 9 8 7, diamonds A T 9, hearts A T 9, spades A.
# Younger holds the twelve court cards K Q J of every suit.
#   carte blanche: 10 (first, before elder's discard)                      -> elder 10
#   point: elder's clubs 11+10+9+8+7 = 45 -> 5; younger's best is K Q J = 30 -> elder 15
#   sequences: elder's quart to the ten (T 9 8 7 of clubs) beats younger's tierces to the
#     king (longer)                                                         -> elder 19
#   sets: elder's quatorze of aces beats younger's quatorze of kings        -> elder 33
#     33 >= 30 from carte blanche and combinations, younger has nothing: repique +60 -> 93
#     then elder's trio of tens (Tc Td Th) also scores 3                     -> 96
# Without the carte blanche elder would have 5 + 4 + 14 + 3 = 26 < 30: no repique.
CB_ELDER = dict(
    elder="Ac Tc 9c 8c 7c Ad Td 9d Ah Th 9h As",
    drawn="9h",
    discard="8d",
    younger="Kc Qc Jc Kd Qd Jd Kh Qh Jh Ks Qs Js",
)


def test_P3_carte_blanche_elder_shown_scores_10_and_counts_first(monkeypatch):
    pack = position_pack(**CB_ELDER)
    m, seen = new_match(monkeypatch, pack)
    dealt = sorted(elder_twelve(CB_ELDER["elder"], "9h", "8d"))
    # declared at once, before his discard, shown to both players
    cb = seen_of(seen, CarteBlanche)
    assert [(ev.seat, sorted(ev.cards), by) for ev, by in cb] == [(E, dealt, BOTH)]
    assert scores(seen) == [(E, 10, "carte_blanche")]
    assert events_of(seen, Score)[0].scores == [0, 10]
    assert (m.to_act, m.decision) == (E, "discard")
    seen = exchange(m, ["8d"], [])
    assert scores(seen) == [(E, 5, "point"), (E, 4, "sequence"), (E, 14, "set"), (E, 60, "repique"), (E, 3, "set")]
    assert m.deal_points == [0, 96] and m.scores == [0, 96]
    assert events_of(seen, CarteBlanche) == []  # younger has court cards
    # the repique is the one bonus of the deal (§P7.3): no pique whatever elder scores in play
    assert "pique" not in [r for _, _, r in scores(finish_deal(m))]


# Younger holds no K, Q or J. Elder's combinations:
#   point hearts A K Q J T 9 = 11+10+10+10+10+9 = 60 -> 6 (younger's best: A T 9 8 7 = 45)
#   sequences: sixième to the ace 16 (younger's best: quart to the ten)
#   sets: quatorze of kings 14 + trio of queens 3 (younger's best: trio of aces)
#   6 + 16 + 17 = 39 >= 30, but younger's carte blanche (10) counts first: no repique.
CB_YOUNGER = dict(
    elder="Ah Kh Qh Jh Th 9h Kc Kd Ks Qc Qd Js",
    drawn="Js",
    discard="Qs",
    younger="Ac Tc 9c 8c 7c Ad Td 9d 8d 7d As Ts",
)


def test_P3_carte_blanche_younger_before_his_discard_counts_first(monkeypatch):
    m, seen = new_match(monkeypatch, position_pack(**CB_YOUNGER))
    assert events_of(seen, CarteBlanche) == [] and scores(seen) == []
    seen = run(m, ["Qs"])
    assert events_of(seen, CarteBlanche) == [] and m.decision == "look"
    seen = run(m, "pass")  # elder's exchange is over: younger declares, then discards
    cb = seen_of(seen, CarteBlanche)
    assert [(ev.seat, sorted(ev.cards), by) for ev, by in cb] == [(Y, sorted(split(CB_YOUNGER["younger"])), BOTH)]
    assert scores(seen) == [(Y, 10, "carte_blanche")]
    assert (m.to_act, m.decision) == (Y, "discard")
    seen = run(m, [], "keep")
    assert scores(seen) == [(E, 6, "point"), (E, 16, "sequence"), (E, 14, "set"), (E, 3, "set")]
    assert m.deal_points == [10, 39]


def test_P3_a_single_court_card_spoils_carte_blanche(monkeypatch):
    for court in ("Jc", "Qc", "Kc"):
        elder = "Ac Tc 9c 8c 7c Ad Td 9d 8d Ah Th " + court
        pack = deal_pack(elder, "Kd Qd Jd Kh Qh Jh Ks Qs Js 9h 8h 7h")
        m, seen = new_match(monkeypatch, pack)
        assert events_of(seen, CarteBlanche) == [] and scores(seen) == []


# =========================================================================== §P4 exchange

# A quiet deal: the fixed pack order, packets of 2 (see PACKET_HANDS); talon 7s ... As
QUIET = list(PACK_32)
TALON = split("7s 8s 9s Ts Js Qs Ks As")


def test_P4_1_elder_discards_1_to_5(monkeypatch):
    m, _ = new_match(monkeypatch, QUIET)
    legal = m.legal_actions()
    assert (m.to_act, m.decision) == (E, "discard")
    # every subset of his twelve of size 1..5: 12 + 66 + 220 + 495 + 792
    assert len(legal) == 1585 and {len(a) for a in legal} == {1, 2, 3, 4, 5}
    assert len({frozenset(a) for a in legal}) == 1585
    assert_illegal(m, [], "piquet.md §P4.1")
    assert_illegal(m, m.hands[E][:6], "piquet.md §P4.1")


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5])
def test_P4_1_elder_draws_as_many_from_the_top(monkeypatch, n):
    m, _ = new_match(monkeypatch, QUIET)
    out = m.hands[E][:n]
    seen = run(m, out)
    mine = (Exchange(seat=E, count=n, stock=8 - n, discarded=out, drawn=TALON[:n]), ONLY[E])
    theirs = (Exchange(seat=E, count=n, stock=8 - n), ONLY[Y])  # count only (§P4.3)
    assert seen_of(seen, Exchange) == [mine, theirs]
    assert set(m.hands[E]) == (set(split(PACKET_HANDS[2][0])) - set(out)) | set(TALON[:n])
    assert m.talon == TALON[n:] and m.view(E).discards == out and m.view(Y).discards == []
    assert m.view(Y).exchanged == [0, n]


def test_P4_1_look_only_when_fewer_than_five_and_only_elder_sees(monkeypatch):
    # took 5: no look decision, younger's turn at once
    m, _ = new_match(monkeypatch, QUIET)
    run(m, m.hands[E][:5])
    assert (m.to_act, m.decision) == (Y, "discard")
    # took 2: he may look at the 3 cards he left among his five (talon positions 3-5)
    m, _ = new_match(monkeypatch, QUIET)
    run(m, m.hands[E][:2])
    assert (m.to_act, m.decision) == (E, "look") and m.legal_actions() == ["look", "pass"]
    seen = run(m, "look")
    assert seen_of(seen, LookedAt) == [(LookedAt(seat=E, cards=TALON[2:5]), ONLY[E])]
    assert m.view(E).seen == TALON[2:5] and m.view(Y).seen == []
    assert (m.to_act, m.decision) == (Y, "discard")
    # or he passes: nothing is shown
    m, _ = new_match(monkeypatch, QUIET)
    run(m, m.hands[E][:4])
    seen = run(m, "pass")
    assert events_of(seen, LookedAt) == [] and m.view(E).seen == []


def test_P4_1_36_cards_elder_takes_up_to_8(monkeypatch):
    m, _ = new_match(monkeypatch, list(PACK_36), rules=R36)
    legal = m.legal_actions()
    # 12 + 66 + 220 + 495 + 792 + 924 + 792 + 495 subsets of size 1..8
    assert len(legal) == 3796 and max(len(a) for a in legal) == 8
    assert_illegal(m, m.hands[E][:9], "piquet.md §P4.1")
    talon = list(m.talon)
    run(m, m.hands[E][:8])
    assert (m.to_act, m.decision) == (Y, "discard") and len(m.talon) == 4  # no look after 8
    m, _ = new_match(monkeypatch, list(PACK_36), rules=R36)
    run(m, m.hands[E][:6], "look")
    assert m.view(E).seen == talon[6:8] and m.view(Y).seen == []  # the 2 he left among 8
    assert {len(a) for a in m.legal_actions()} == set(range(7))  # younger: 0..6 of the 6 left


def test_P4_2_younger_may_take_none_up_to_all_that_remain(monkeypatch):
    m, _ = new_match(monkeypatch, QUIET)
    run(m, m.hands[E][:5])
    legal = m.legal_actions()
    # 3 cards remain: subsets of size 0..3 = 1 + 12 + 66 + 220
    assert len(legal) == 299 and [] in legal and max(len(a) for a in legal) == 3
    assert_illegal(m, m.hands[Y][:4], "piquet.md §P4.2")
    seen = run(m, [])
    assert seen_of(seen, Exchange) == [
        (Exchange(seat=Y, count=0, stock=3, discarded=[], drawn=[]), ONLY[Y]),
        (Exchange(seat=Y, count=0, stock=3), ONLY[E]),
    ]
    assert (m.to_act, m.decision) == (Y, "expose")
    # after elder took 1, younger may take all 7
    m, _ = new_match(monkeypatch, QUIET)
    run(m, m.hands[E][:1], "pass")
    legal = m.legal_actions()
    assert max(len(a) for a in legal) == 7
    seen = run(m, m.hands[Y][:7])
    assert events_of(seen, Exchange)[0].drawn == TALON[1:]
    assert (m.to_act, m.decision) == (E, "play")  # nothing left: no expose decision (§P4.3)


def test_P4_3_expose_only_when_cards_remain_and_then_both_see(monkeypatch):
    m, _ = new_match(monkeypatch, QUIET)
    run(m, m.hands[E][:5], m.hands[Y][:3])  # 5 + 3 = 8: the talon is empty
    assert (m.to_act, m.decision) == (E, "play")
    m, _ = new_match(monkeypatch, QUIET)
    run(m, m.hands[E][:3], "pass", m.hands[Y][:2])
    assert (m.to_act, m.decision) == (Y, "expose") and m.legal_actions() == ["expose", "keep"]
    seen = run(m, "expose")
    assert seen_of(seen, TalonExposed) == [(TalonExposed(seat=Y, cards=TALON[5:]), BOTH)]
    assert m.view(E).exposed == TALON[5:] == m.view(Y).exposed
    m, _ = new_match(monkeypatch, QUIET)
    run(m, m.hands[E][:3], "pass", m.hands[Y][:2])
    seen = run(m, "keep")
    assert events_of(seen, TalonExposed) == [] and m.view(E).exposed == m.view(Y).exposed == []


def test_P4_3_discards_are_seen_by_their_owner_only(monkeypatch):
    m, seen = new_match(monkeypatch, QUIET)
    seen = [(ev, by) for ev, by in seen if not isinstance(ev, DealerDraw)]  # public, before the deal
    e_out, y_out = m.hands[E][:4], m.hands[Y][:3]
    seen += run(m, e_out, "pass", y_out, "keep")
    for seat, hidden in ((Y, e_out), (E, y_out)):
        told = [ev for ev, by in seen if seat in by]
        assert not set(CARD.findall(msgspec.json.encode(told).decode())) & set(hidden)
        assert not set(hidden) & set(CARD.findall(msgspec.json.encode(m.view(seat)).decode()))
    assert m.view(E).discards == e_out and m.view(Y).discards == y_out


# =========================================================================== §P5 combinations

# Point positions: elder's longest suit is the hearts listed; his other cards are low clubs,
# diamonds and spades, at most three of a suit. Younger holds three cards of every suit, so his
# point is at most A K Q = 31 (or a 4-card suit worth 37 when elder has six hearts).
POINT_CASES = [
    # hearts, total worked by hand, score
    ("Ah Kh 9h 8h 7h", "11+10+9+8+7 = 45", 45, 5),
    ("Ah Kh Qh Th 8h", "11+10+10+10+8 = 49", 49, 5),
    ("Kh Qh Jh Th 7h", "10+10+10+10+7 = 47", 47, 5),
    ("Jh Th 9h 8h 7h", "10+10+9+8+7 = 44", 44, 4),
    ("Ah Kh Qh 9h", "11+10+10+9 = 40", 40, 4),
    ("Ah Kh Qh Jh", "11+10+10+10 = 41", 41, 4),
    ("Qh Jh Th 9h 8h 7h", "10+10+10+9+8+7 = 54", 54, 5),
    ("Ah Qh Jh 9h 8h 7h", "11+10+10+9+8+7 = 55", 55, 6),
]


def point_position(hearts: str) -> dict[str, str]:
    h = split(hearts)
    fillers = split("8c 9c 7d 8d 9d 7s 8s")[: 11 - len(h)]  # plus 9s drawn for 7c
    rest_hearts = [c for c in split("Ah Kh Qh Jh Th 9h 8h 7h") if c not in h]
    younger = rest_hearts[:3] + split("Tc Jc Qc Td Jd Qd Ts Js Qs")
    if len(younger) < 12:  # elder holds six hearts: younger gets 7s (spades 7 T J Q = 37)
        younger.append("7s")
    return dict(elder=" ".join(h + fillers + ["9s"]), drawn="9s", discard="7c", younger=" ".join(younger))


@pytest.mark.parametrize("hearts,arithmetic,total,points", POINT_CASES)
def test_P5_1_point_rounded_to_nearest_ten_halves_up(monkeypatch, hearts, arithmetic, total, points):
    # 40-44 score 4, 45-49 score 5, 54 scores 5 and 55 scores 6
    m, seen = after_exchange(monkeypatch, **point_position(hearts))
    n = len(split(hearts))
    name = f"point of {n}, {total}"
    assert decl(seen, "point") == Declaration(category="point", elder=name, younger=None, result="good", winner=E)
    (pt,) = [s for s in events_of(seen, Score) if s.reason == "point"]
    assert (pt.seat, pt.points, pt.detail) == (E, points, name)


def test_P5_1_point_rounded_45_to_49_scores_5(monkeypatch):
    for hearts, total in (("Ah Kh 9h 8h 7h", 45), ("Ah Kh Qh Th 8h", 49)):
        _, seen = after_exchange(monkeypatch, **point_position(hearts))
        assert (E, 5, "point") in scores(seen) and decl(seen, "point").elder == f"point of 5, {total}"


def test_P5_1_point_40_to_44_scores_4(monkeypatch):
    for hearts, total in (("Ah Kh Qh 9h", 40), ("Jh Th 9h 8h 7h", 44)):
        _, seen = after_exchange(monkeypatch, **point_position(hearts))
        assert (E, 4, "point") in scores(seen) and decl(seen, "point").elder.endswith(f", {total}")


def test_P5_1_of_two_equally_long_suits_the_higher_total(monkeypatch):
    # hearts J T 9 8 7 = 44 and clubs A K Q J T = 51, both five long: the point is 51 -> 5
    # (younger: A K Q of hearts = 31 at best)
    _, seen = after_exchange(
        monkeypatch,
        elder="Jh Th 9h 8h 7h Ac Kc Qc Jc Tc 7s 8d",
        drawn="8d",
        discard="7d",
        younger="Ah Kh Qh 9c 8c 7c 9d Td Jd 8s 9s Ts",
    )
    assert decl(seen, "point").elder == "point of 5, 51"
    assert [s for s in scores(seen) if s[2] == "point"] == [(E, 5, "point")]


# Ties: elder hearts A K Q J (41) + clubs 7 8 9 + diamonds 7 8 9 + spades 8 9;
#       younger clubs A K Q J (41) + hearts T 9 8 + diamonds Q J T + spades T J.
#   point: 41 against 41 -> equal, nobody scores
#   sequences: both best are quarts to the ace -> an exact tie cancels ALL sequences: elder's
#     tierces to the nine (clubs, diamonds) and younger's tierces to the ten (hearts) and to the
#     queen (diamonds) score nothing either
#   sets: elder's three nines never count; younger's trio of jacks and trio of tens: 3 + 3
TIES = dict(
    elder="Ah Kh Qh Jh 7c 8c 9c 7d 8d 9d 8s 9s",
    drawn="9s",
    discard="7s",
    younger="Ac Kc Qc Jc Th 9h 8h Td Jd Qd Ts Js",
)


def test_P5_1_tie_on_point_equal_totals_nobody_scores(monkeypatch):
    _, seen = after_exchange(monkeypatch, **TIES)
    assert decl(seen, "point") == Declaration(
        category="point", elder="point of 4, 41", younger="point of 4, 41", result="equal", winner=None
    )
    assert "point" not in [r for _, _, r in scores(seen)]


def test_P5_1_36_cards_point_is_the_longest_suit_and_compares_totals_only(monkeypatch):
    # Interpretation written in the engine's docstring (the ruling says "the higher total wins"):
    # elder's point is his LONGEST suit, hearts 6 7 8 9 T = 40 (his clubs A K Q J = 41 are
    # shorter); younger's longest is diamonds A K Q J = 41. 41 > 40: younger scores 4.
    _, seen = after_exchange(
        monkeypatch,
        elder="6h 7h 8h 9h Th Ac Kc Qc Jc 6d 6s 8s",
        drawn="8s",
        discard="7s",
        younger="Ad Kd Qd Jd Jh Qh Kh Tc 9c 8c Ts Js",
        rules=R36,
    )
    assert decl(seen, "point") == Declaration(
        category="point", elder="point of 5, 40", younger="point of 4, 41", result="not_good", winner=Y
    )
    assert [s for s in scores(seen) if s[2] == "point"] == [(Y, 4, "point")]


def sequence_position(length: int) -> dict[str, str]:
    """Elder: the ``length`` top hearts and fillers of ranks 7 9 J K (never three in a row);
    younger: ranks 8 T Q A of clubs, diamonds and spades (no sequence)."""
    hearts = split("Ah Kh Qh Jh Th 9h 8h 7h")[:length]
    fillers = [r + s for s in "cds" for r in "79JK"]
    younger = [r + s for s in "cds" for r in "8TQA"]
    elder = hearts + fillers[1 : 12 - length] + [fillers[12 - length]]  # 7c out, one filler in
    drawn = elder[-1]
    return dict(elder=" ".join(elder), drawn=drawn, discard="7c", younger=" ".join(younger))


SEQUENCES = [(3, "tierce", 3), (4, "quart", 4), (5, "quint", 15), (6, "sixième", 16), (7, "septième", 17),
             (8, "huitième", 18)]


@pytest.mark.parametrize("length,name,points", SEQUENCES)
def test_P5_2_sequence_values_tierce_3_quart_4_quint_15_and_up(monkeypatch, length, name, points):
    _, seen = after_exchange(monkeypatch, **sequence_position(length))
    label = f"{name} to the ace"
    assert decl(seen, "sequence") == Declaration(category="sequence", elder=label, younger=None, result="good",
                                                 winner=E)
    got = [(s.seat, s.points, s.detail) for s in events_of(seen, Score) if s.reason == "sequence"]
    assert got == [(E, points, label)]


def test_P5_2_neuvieme_19_with_36_cards(monkeypatch):
    # elder: all nine hearts 6 ... A: point 6+7+8+9+10+10+10+10+11 = 81 -> 8, neuvième 19;
    # his four sixes never form a set. Younger: clubs 8 ... A (septième, point 68), 7 8 9 of
    # diamonds, 7 8 of spades. 8 + 19 = 27 < 30: no repique.
    _, seen = after_exchange(
        monkeypatch,
        elder="6h 7h 8h 9h Th Jh Qh Kh Ah 6c 6d 6s",
        drawn="6s",
        discard="7c",
        younger="8c 9c Tc Jc Qc Kc Ac 7d 8d 9d 7s 8s",
        rules=R36,
    )
    assert decl(seen, "point").elder == "point of 9, 81"
    assert decl(seen, "sequence").elder == "neuvième to the ace"
    assert decl(seen, "set").result == "none"
    assert scores(seen) == [(E, 8, "point"), (E, 19, "sequence")]


def test_P5_2_the_longest_sequence_wins(monkeypatch):
    # elder: quart to the ace (hearts); younger: quint to the jack (diamonds J T 9 8 7).
    # point: younger's diamonds 10+10+9+8+7 = 44 (5 cards) against elder's best 4-card suit
    #   A K Q J = 41 -> younger 4
    # sequences: the quint is longer -> younger 15 (his only sequence)
    # sets: elder's trio of aces (Ah Ac As) beats younger's trio of tens (Td Th Tc) -> elder 3
    _, seen = after_exchange(
        monkeypatch,
        elder="Ah Kh Qh Jh 9c Jc Kc Ac 8s Ts Qs As",
        drawn="Ac",
        discard="7c",
        younger="Jd Td 9d 8d 7d Th 8h 8c Tc Qc 7s 9s",
    )
    assert decl(seen, "sequence") == Declaration(
        category="sequence", elder="quart to the ace", younger="quint to the jack", result="not_good", winner=Y
    )
    assert scores(seen) == [(Y, 4, "point"), (Y, 15, "sequence"), (E, 3, "set")]


def test_P5_2_equal_length_the_higher_top_card_wins(monkeypatch):
    # elder: tierce to the queen (Q J T of hearts); younger: tierce to the jack (J T 9 of clubs)
    # point: elder's spades 8 T Q A = 39 and younger's diamonds 8 T Q A = 39: equal
    # sequences: same length, the queen is higher -> elder 3
    # sets: nobody holds three of a rank of A K Q J T
    _, seen = after_exchange(
        monkeypatch,
        elder="Qh Jh Th 7d 9d Jd Kd 8s Ts Qs As Kc",
        drawn="Kc",
        discard="7c",
        younger="Jc Tc 9c Ah Kh 8d Td Qd Ad 7s 9s Js",
    )
    assert decl(seen, "point").result == "equal"
    assert decl(seen, "sequence") == Declaration(
        category="sequence", elder="tierce to the queen", younger=None, result="good", winner=E
    )
    assert decl(seen, "set").result == "none"
    assert scores(seen) == [(E, 3, "sequence")]


def test_P5_2_tie_on_sequences_cancels_all_sequences_for_both(monkeypatch):
    _, seen = after_exchange(monkeypatch, **TIES)  # worked out above TIES
    assert decl(seen, "sequence") == Declaration(
        category="sequence", elder="quart to the ace", younger="quart to the ace", result="equal", winner=None
    )
    # nothing for the point or for any sequence; younger's two trios only
    assert scores(seen) == [(Y, 3, "set"), (Y, 3, "set")]


def test_P5_2_winner_scores_every_sequence_even_below_the_opponents_best(monkeypatch):
    # the French source's example: elder holds a quint (hearts A-T) and a tierce (clubs 9 8 7),
    # younger a quart (diamonds K Q J T). Elder's quint is good: he scores 15 AND his tierce 3,
    # though younger's quart is better than that tierce.
    # point: elder hearts 51 (5 cards) -> 5; younger's best is diamonds K Q J T = 40
    # sets: younger's trios of queens (Qd Qs Qc) and tens (Td Ts Tc): 3 + 3 (elder has none)
    # elder 5 + 15 + 3 = 23 < 30: no repique
    _, seen = after_exchange(
        monkeypatch,
        elder="Ah Kh Qh Jh Th 9c 8c 7c 7s 9s Js Ks",
        drawn="Ks",
        discard="8d",
        younger="Kd Qd Jd Td 8s Ts Qs As Tc Qc Ac 9h",
    )
    assert decl(seen, "sequence") == Declaration(
        category="sequence", elder="quint to the ace", younger=None, result="good", winner=E
    )
    got = [(s.seat, s.points, s.reason, s.detail) for s in events_of(seen, Score)]
    assert got == [
        (E, 5, "point", "point of 5, 51"),
        (E, 15, "sequence", "quint to the ace"),
        (E, 3, "sequence", "tierce to the nine"),
        (Y, 3, "set", "trio of queens"),
        (Y, 3, "set", "trio of tens"),
    ]


def test_P5_3_quatorze_beats_any_trio_and_the_winner_scores_every_set(monkeypatch):
    # elder: trio of aces and trio of queens (and three eights, which never count);
    # younger: quatorze of tens and trio of kings.
    # point: elder's 3-card suits A Q 8 = 29 (spades 9 J K = 29); younger's best 8 T Q = 28
    #   -> elder: 29 rounds to 30 -> 3
    # sequences: none for either
    # sets: the quatorze of tens beats the trio of aces -> younger 14 + his trio of kings 3;
    #   elder's trio of queens scores nothing
    _, seen = after_exchange(
        monkeypatch,
        elder="Ah 8h Qh Ac 8c Qc Ad 8d Qd 9s Js Ks",
        drawn="Ks",
        discard="7s",
        younger="Th Kh 7h Tc Kc 7c Td Kd 7d Ts 8s Qs",
    )
    assert decl(seen, "set") == Declaration(
        category="set", elder="trio of aces", younger="quatorze of tens", result="not_good", winner=Y
    )
    assert decl(seen, "sequence").result == "none"
    assert scores(seen) == [(E, 3, "point"), (Y, 14, "set"), (Y, 3, "set")]


def test_P5_3_sets_of_the_same_size_the_higher_rank_wins(monkeypatch):
    # elder: trio of kings; younger: trios of queens and of jacks. Kings are higher: elder 3,
    # younger nothing for either trio.
    # point: elder's spades T Q A = 31 against younger's Q J 8 = 28 -> elder 3
    _, seen = after_exchange(
        monkeypatch,
        elder="Kh 9h 7h Kc 9c 7c Kd 9d 7d Ts As Qs",
        drawn="Qs",
        discard="8s",
        younger="Qh Jh 8h Qc Jc 8c Qd Jd 8d 7s 9s Ks",
    )
    assert decl(seen, "set") == Declaration(category="set", elder="trio of kings", younger=None, result="good",
                                            winner=E)
    assert scores(seen) == [(E, 3, "point"), (E, 3, "set")]


def test_P5_3_sevens_eights_and_nines_never_count(monkeypatch):
    # elder: four nines and four eights; younger: four sevens. No set for anyone.
    # point: elder's hearts A 9 8 = 28 against younger's 3-card suits (27 each) -> elder 3
    _, seen = after_exchange(
        monkeypatch,
        elder="9h 8h Ah 9c 8c Kc 9d 8d Qd 9s 8s As",
        drawn="As",
        discard="Jd",
        younger="7h Th Qh 7c Jc Qc 7d Td Kd 7s Js Ks",
    )
    assert decl(seen, "set") == Declaration(category="set", elder=None, younger=None, result="none", winner=None)
    assert scores(seen) == [(E, 3, "point")]
    _, seen = after_exchange(monkeypatch, **TIES)  # three nines in elder's hand: no trio either
    assert decl(seen, "set").elder is None


def test_P5_3_36_cards_sixes_never_form_sets(monkeypatch):
    # elder: four sixes and four sevens; younger: four eights; nobody has a set.
    # point: younger's diamonds 8 J A = 29 against elder's hearts 6 7 A = 24 -> younger 3
    _, seen = after_exchange(
        monkeypatch,
        elder="6h 7h Ah 6c 7c Kc 6d 7d Qd 6s 7s Ts",
        drawn="Ts",
        discard="Js",
        younger="8h Th Qh 8c Tc Qc 8d Jd Ad 8s Ks As",
        rules=R36,
    )
    assert decl(seen, "set").result == "none" and decl(seen, "sequence").result == "none"
    assert scores(seen) == [(Y, 3, "point")]


# Template A: elder takes every trick whatever is played.
#   elder: hearts A K Q J T 9, clubs A K Q J, Ad, As (the As drawn for the Kd)
#   younger: 8h 7h, clubs T 9 8 7, diamonds Q J T 9, 8s 7s (all lower than elder's cards)
#   point: hearts 11+10+10+10+10+9 = 60 -> 6 (younger's best diamonds Q J T 9 = 39)    -> 6
#   sequences: sixième to the ace 16 + quart to the ace 4 (younger: quarts to the queen
#     and to the ten)                                                                   -> 26
#   sets: quatorze of aces 14 (younger: two tens)                                       -> 40
#     elder has 30 or more from combinations and younger nothing: repique +60         -> 100
#   play: elder leads all twelve cards and 11 of them are A K Q J T (not the 9h)       -> 111
#     last trick +1                                                                     -> 112
#     capot +40 (not the cards' 10)                                                     -> 152
#   younger: 0.  No pique: the repique is the one bonus of the deal.
TEMPLATES: dict[str, dict[str, Any]] = {
    "A": dict(
        elder="Ah Kh Qh Jh Th 9h Ac Kc Qc Jc Ad As",
        drawn="As",
        discard="Kd",
        younger="8h 7h Tc 9c 8c 7c Qd Jd Td 9d 8s 7s",
        lead=(),
        points=(152, 0),
    ),
    # Template B: younger takes every trick; elder leads Jh first (1).
    #   younger: A K Q of every suit; elder: J T 9 of diamonds, hearts, spades, J T 8 of clubs
    #   point: younger's A K Q = 31 -> 3 against elder's J T 9 = 29                      -> 3
    #   sequences: four tierces to the ace beat elder's tierces to the jack: 4 x 3       -> 15
    #   sets: quatorzes of aces, kings, queens beat elder's quatorzes of jacks and tens:
    #     aces 14 -> 29, kings 14 -> 43: repique +60 -> 103, queens 14                   -> 117
    #   play: wins trick 1 as second with an honour 1, leads 11 honours 11, last trick 1,
    #     capot 40                                                                        -> 170
    #   elder: 1 for leading the jack of hearts.
    "B": dict(
        elder="8c Jc Tc Jd Td 9d Jh Th 9h Js Ts 9s",
        drawn="8c",
        discard="9c",
        younger="Ac Kc Qc Ad Kd Qd Ah Kh Qh As Ks Qs",
        lead=("Jh",),
        points=(1, 170),
    ),
    # Template M: elder's capot, younger's combinations.
    #   younger: all eight spades (+ 7h 8h 7c 8c): point 11+10+10+10+10+9+8+7 = 75 -> 8 and
    #     huitième 18 (elder has a sixième and a quint)                                  -> 26
    #   elder: trio of aces 3; leads 11 honours (not the 9h) 11; last trick 1; capot 40  -> 55
    #   no repique or pique for elder: younger scored first.
    "M": dict(
        elder="Ah Kh Qh Jh Th 9h Ac Kc Qc Jc Tc Ad",
        drawn="Ad",
        discard="9c",
        younger="As Ks Qs Js Ts 9s 8s 7s 7h 8h 7c 8c",
        lead=(),
        points=(55, 26),
    ),
    # Template R: younger's repique, elder's capot.
    #   younger: eight spades and hearts T 9 8 7: point 75 -> 8; huitième 18 -> 26;
    #     quart to the ten 4 -> 30: repique +60                                          -> 90
    #   elder: trios of aces, kings, queens 9; leads twelve honours 12; last trick 1;
    #     capot 40                                                                        -> 62
    "R": dict(
        elder="Ah Kh Qh Jh Ac Kc Qc Tc Ad Kd Qd Jd",
        drawn="Jd",
        discard="Jc",
        younger="As Ks Qs Js Ts 9s 8s 7s Th 9h 8h 7h",
        lead=(),
        points=(62, 90),
    ),
    # Template R': as R but elder draws the 9c instead of the Jd: one honour fewer to lead.
    #   elder: 9 + 11 + 1 + 40 = 61; younger 90.
    "R'": dict(
        elder="Ah Kh Qh Jh Ac Kc Qc Tc 9c Ad Kd Qd",
        drawn="9c",
        discard="Jc",
        younger="As Ks Qs Js Ts 9s 8s 7s Th 9h 8h 7h",
        lead=(),
        points=(61, 90),
    ),
}


def template_pack(name: str) -> list[str]:
    t = TEMPLATES[name]
    return position_pack(t["elder"], t["drawn"], t["discard"], t["younger"])


def play_template(m: PiquetMatch, name: str) -> list:
    """Play one deal of template ``name`` from its first decision to its end."""
    t = TEMPLATES[name]
    elder = m.elder
    assert sorted(m.hands[elder]) == sorted(elder_twelve(t["elder"], t["drawn"], t["discard"]))
    seen = exchange(m, [t["discard"]], [])
    seen += play_cards(m, t["lead"])
    seen += finish_deal(m)
    end = events_of(seen, DealEnd)[0]
    pts = [0, 0]
    pts[elder], pts[1 - elder] = t["points"]
    assert end.points == pts, (name, end)
    return seen


def test_P5_4_declarations_are_automatic_in_order_and_reveal_no_card(monkeypatch):
    m, seen = after_exchange(monkeypatch, **{k: TEMPLATES["A"][k] for k in ("elder", "drawn", "discard", "younger")})
    decls = seen_of(seen, Declaration)
    assert [(d.category, by) for d, by in decls] == [("point", BOTH), ("sequence", BOTH), ("set", BOTH)]
    assert [d for d, _ in decls] == [
        Declaration(category="point", elder="point of 6, 60", younger=None, result="good", winner=E),
        Declaration(category="sequence", elder="sixième to the ace", younger=None, result="good", winner=E),
        Declaration(category="set", elder="quatorze of aces", younger=None, result="good", winner=E),
    ]
    got = [(s.points, s.reason, s.detail) for s in events_of(seen, Score)]
    assert got == [
        (6, "point", "point of 6, 60"),
        (16, "sequence", "sixième to the ace"),
        (4, "sequence", "quart to the ace"),
        (14, "set", "quatorze of aces"),
        (60, "repique", None),
    ]
    # nothing else about the hands: no card in any declaration or score
    told = [ev for ev, _ in seen if isinstance(ev, (Declaration, Score))]
    assert CARD.findall(msgspec.json.encode(told).decode()) == []
    # and they come after the exchange, before the first card
    kinds = [type(ev).__name__ for ev, _ in seen]
    assert kinds.index("Declaration") > max(i for i, k in enumerate(kinds) if k == "Exchange")
    assert "CardPlayed" not in kinds


# =========================================================================== §P6 play

# The play position (no combination but the point):
#   elder:   hearts A 9 7 | clubs K 9 7 | diamonds A T 8 | spades Q T 8  (drew 8s for Qh)
#   younger: hearts K T 8 | clubs A T 8 | diamonds K 9 7 | spades A J 9
#   point: younger's spades A J 9 = 30 beats elder's diamonds A T 8 = 29 -> younger 3
#   no sequence, no set; elder can never pique (younger scored first).
PLAY = dict(
    elder="Ah 9h 7h Kc 9c 7c Ad Td 8d Qs Ts 8s",
    drawn="8s",
    discard="Qh",
    younger="Kh Th 8h Ac Tc 8c Kd 9d 7d As Js 9s",
)


def test_P6_1_elder_leads_follow_suit_no_obligation_to_win(monkeypatch):
    m, seen = after_exchange(monkeypatch, **PLAY)
    assert decl(seen, "point") == Declaration(
        category="point", elder="point of 3, 29", younger="point of 3, 30", result="not_good", winner=Y
    )
    assert scores(seen) == [(Y, 3, "point")]
    assert (m.to_act, m.decision) == (E, "play") and sorted(m.legal_actions()) == sorted(m.hands[E])
    run(m, "Ah")
    assert m.legal_actions() == ["8h", "Th", "Kh"]  # his hearts, low ones too
    seen = run(m, "8h")  # no need to win (and he could not)
    assert events_of(seen, TrickWon) == [TrickWon(trick=1, leader=E, cards=["Ah", "8h"], winner=E)]
    assert m.to_act == E  # the winner leads
    run(m, "9c")
    seen = run(m, "Tc")  # the higher card of the suit led wins
    assert events_of(seen, TrickWon)[0].winner == Y and m.to_act == Y
    assert sorted(m.legal_actions()) == sorted(m.hands[Y])  # the leader may lead anything


# Play 1 (younger takes the cards), trick by trick, leader first:
#   1 E Ah (lead +1 E) 8h            -> E
#   2 E 9c          Tc (+1 Y, won as second with a ten) -> Y
#   3 Y Kd (+1 Y)   Ad (+1 E)        -> E
#   4 E 8d          9d (won with a nine: nothing)       -> Y
#   5 Y 7d          Td (+1 E)        -> E
#   6 E Qs (+1 E)   As (+1 Y)        -> Y
#   7 Y Js (+1 Y)   8s               -> Y
#   8 Y 9s          Ts (+1 E)        -> E
#   9 E 7h          Th (+1 Y)        -> Y
#  10 Y Kh (+1 Y)   9h               -> Y
#  11 Y 8c          Kc (+1 E)        -> E
#  12 E 7c          Ac (+1 Y, and +1 Y for the last trick) -> Y
# tricks: E 1 3 5 8 11 = 5, Y 7: younger takes the cards, 10.
# elder 6; younger 3 (point) + 8 (play) + 10 (cards) = 21.
PLAY_1 = "Ah 8h 9c Tc Kd Ad 8d 9d 7d Td Qs As Js 8s 9s Ts 7h Th Kh 9h 8c Kc 7c Ac"
PLAY_1_SCORES = [
    [(E, 1, "lead")], [(Y, 1, "trick")], [(Y, 1, "lead"), (E, 1, "trick")], [], [(E, 1, "trick")],
    [(E, 1, "lead"), (Y, 1, "trick")], [(Y, 1, "lead")], [(E, 1, "trick")], [(Y, 1, "trick")],
    [(Y, 1, "lead")], [(E, 1, "trick")], [(Y, 1, "trick"), (Y, 1, "last_trick"), (Y, 10, "cards")],
]

# Play 2 (six tricks each):
#   1 E Ah (+1 E) 8h -> E;  2 E 9c 8c -> E;  3 E 8d 7d -> E;  4 E Td (+1 E) Kd (+1 Y) -> Y
#   5 Y 9d Ad (+1 E) -> E;  6 E Qs (+1 E) 9s -> E;  7 E Ts (+1 E) Js (+1 Y) -> Y
#   8 Y As (+1 Y) 8s;  9 Y Kh (+1 Y) 7h;  10 Y Th (+1 Y) 9h;  11 Y Ac (+1 Y) 7c  -> Y
#  12 Y Tc (+1 Y) Kc (+1 E, +1 E last trick) -> E
# tricks: E 1 2 3 5 6 12 = 6, Y 4 7 8 9 10 11 = 6: nobody scores for the cards.
# elder 7; younger 3 + 7 = 10.
PLAY_2 = "Ah 8h 9c 8c 8d 7d Td Kd 9d Ad Qs 9s Ts Js As 8s Kh 7h Th 9h Ac 7c Tc Kc"


def test_P6_2_lead_and_win_as_second_with_A_K_Q_J_T_and_last_trick(monkeypatch):
    m, _ = after_exchange(monkeypatch, **PLAY)
    cards = split(PLAY_1)
    for i in range(12):
        seen = play_cards(m, cards[2 * i : 2 * i + 2])
        assert scores(seen) == PLAY_1_SCORES[i], i + 1
    end = events_of(seen, DealEnd)[0]
    assert end == DealEnd(deal=1, tricks=[7, 5], points=[21, 6], scores=[21, 6])


def test_P6_3_more_tricks_score_10_for_the_cards(monkeypatch):
    m, _ = after_exchange(monkeypatch, **PLAY)
    seen = play_cards(m, PLAY_1)
    assert scores(seen)[-1] == (Y, 10, "cards")
    assert [r for _, _, r in scores(seen)].count("cards") == 1


def test_P6_3_six_tricks_each_score_nothing(monkeypatch):
    m, _ = after_exchange(monkeypatch, **PLAY)
    seen = play_cards(m, PLAY_2)
    reasons = [r for _, _, r in scores(seen)]
    assert "cards" not in reasons and "capot" not in reasons
    assert scores(seen)[-2:] == [(E, 1, "trick"), (E, 1, "last_trick")]
    assert events_of(seen, DealEnd)[0] == DealEnd(deal=1, tricks=[6, 6], points=[10, 7], scores=[10, 7])


def test_P6_3_capot_scores_40_instead_of_10(monkeypatch):
    m, seen = new_match(monkeypatch, template_pack("A"))
    seen += play_template(m, "A")  # worked out above TEMPLATES: elder 152
    assert scores(seen)[-2:] == [(E, 1, "last_trick"), (E, 40, "capot")]
    assert "cards" not in [r for _, _, r in scores(seen)]
    assert events_of(seen, DealEnd)[0].tricks == [0, 12]


# =========================================================================== §P7 reckoning

STAGE = {"carte_blanche": 0, "point": 1, "sequence": 2, "set": 3, "lead": 4, "trick": 4, "last_trick": 4,
         "cards": 5, "capot": 5}


def test_P7_1_reckoning_order_carte_blanche_point_sequences_sets_play_cards(monkeypatch):
    for pos in (CB_ELDER, CB_YOUNGER):
        m, seen = new_match(monkeypatch, position_pack(**pos))
        seen += exchange(m, [pos["discard"]], []) + finish_deal(m)
        reasons = [r for _, _, r in scores(seen) if r not in ("pique", "repique")]
        stages = [STAGE[r] for r in reasons]
        assert stages == sorted(stages) and stages[0] == 0 and stages[-1] >= 4, reasons
    # younger's carte blanche is declared after elder's exchange yet counts before the point
    assert scores(seen)[:2] == [(Y, 10, "carte_blanche"), (E, 6, "point")]


def test_P7_2_repique_by_younger(monkeypatch):
    # Template B, worked out above TEMPLATES: younger reaches 43 with his second quatorze,
    # elder has nothing: repique +60 then the quatorze of queens.
    m, seen = new_match(monkeypatch, template_pack("B"))
    seen += exchange(m, ["9c"], [])
    assert scores(seen) == [(Y, 3, "point")] + [(Y, 3, "sequence")] * 4 + [
        (Y, 14, "set"), (Y, 14, "set"), (Y, 60, "repique"), (Y, 14, "set")
    ]
    assert events_of(seen, Score)[-2].scores == [103, 0] and m.scores == [117, 0]
    seen = play_cards(m, "Jh") + finish_deal(m)
    assert scores(seen)[0] == (E, 1, "lead")  # elder leads the jack of hearts
    assert events_of(seen, DealEnd)[0] == DealEnd(deal=1, tricks=[12, 0], points=[170, 1], scores=[170, 1])


def test_P7_2_repique_by_elder(monkeypatch):
    # Template A: 6 + 16 + 4 + 14 = 40, younger nothing: +60 right after the quatorze.
    m, seen = new_match(monkeypatch, template_pack("A"))
    seen += exchange(m, ["Kd"], [])
    assert scores(seen)[-2:] == [(E, 14, "set"), (E, 60, "repique")] and m.scores == [0, 100]


def test_P7_2_no_repique_once_the_opponent_scored_earlier_in_the_order(monkeypatch):
    # Template M: younger's point (8) comes first; elder's later points never make a repique,
    # and none of younger's (8 + 18 = 26 < 30) either.
    m, seen = new_match(monkeypatch, template_pack("M"))
    seen += play_template(m, "M")
    reasons = [r for _, _, r in scores(seen)]
    assert "repique" not in reasons and "pique" not in reasons
    # younger's carte blanche counts first and spoils elder's 39 (see CB_YOUNGER)
    m, seen = new_match(monkeypatch, position_pack(**CB_YOUNGER))
    seen += exchange(m, ["Qs"], [])
    assert m.deal_points == [10, 39] and "repique" not in [r for _, _, r in scores(seen)]


# Pique position:
#   elder:   clubs A K Q J T 9 8 (septième), 7h, 7d Ad, 7s 9s (drew the 9s for the Td)
#   younger: 7c, 9d 8d Kd, 8s Ks As, hearts Q J T 9 8 (a quint to the queen)
#   point: elder's clubs 11+10+10+10+10+9+8 = 68 -> 7 (younger's hearts 47)             -> 7
#   sequences: septième to the ace 17 beats the quint                                   -> 24
#   sets: none (two aces, two kings at most)
#   play: 1 E Ac (+1 = 25) 7c;  2 E Kc (26) 8d;  3 E Qc (27) 9d;  4 E Jc (28) 8s;
#         5 E Tc (29) 8h;  6 E Ad (30: younger still has nothing -> pique +30 = 60) Kd;
#         7 E 9c Qh;  8 E 8c Jh;  9 E 7h 9h -> Y;  10 Y Th (+1 Y) 7d;  11 Y Ks (+1) 7s;
#        12 Y As (+1, and +1 for the last trick) 9s.
#   tricks E 8, Y 4: elder takes the cards 10. Elder 24 + 6 + 30 + 10 = 70, younger 4.
PIQUE = dict(
    elder="Ac Kc Qc Jc Tc 9c 8c 7h 7d Ad 7s 9s",
    drawn="9s",
    discard="Td",
    younger="7c 9d 8d Kd 8s Ks As Qh Jh Th 9h 8h",
)
PIQUE_PLAY = "Ac 7c Kc 8d Qc 9d Jc 8s Tc 8h Ad Kd 9c Qh 8c Jh 7h 9h Th 7d Ks 7s As 9s"


def test_P7_3_pique_by_elder(monkeypatch):
    m, seen = after_exchange(monkeypatch, **PIQUE)
    assert scores(seen) == [(E, 7, "point"), (E, 17, "sequence")]
    cards = split(PIQUE_PLAY)
    seen = play_cards(m, cards[:10])
    assert scores(seen) == [(E, 1, "lead")] * 5 and m.deal_points == [0, 29]
    seen = play_cards(m, cards[10:12])
    assert scores(seen) == [(E, 1, "lead"), (E, 30, "pique")]
    seen = play_cards(m, cards[12:])
    assert scores(seen) == [(Y, 1, "lead"), (Y, 1, "lead"), (Y, 1, "lead"), (Y, 1, "last_trick"), (E, 10, "cards")]
    assert events_of(seen, DealEnd)[0] == DealEnd(deal=1, tricks=[4, 8], points=[4, 70], scores=[4, 70])


def test_P7_3_younger_never_piques(monkeypatch):
    # The pique position with the hands swapped: younger holds the septième (7 + 17 = 24),
    # elder (who drew the 9d for the Td) scores nothing in the combinations.
    #   1 E 8d (nothing) Ad (+1 Y as second: 25);  2 Y Ac (26) 7c;  3 Y Kc (27) 8h;
    #   4 Y Qc (28) 9h;  5 Y Jc (29) 8s;  6 Y Tc (30!) Qh: elder has nothing, but only elder
    #   piques (§P7.3): no bonus.  7 Y 9c 9d;  8 Y 8c Kd;  9 Y 7h Th (+1 E);  10 E Jh (+1 E) 7d;
    #  11 E Ks (+1) 7s;  12 E As (+1, +1 last trick) 9s.
    #   tricks Y 8, E 4: younger takes the cards. Younger 24 + 6 + 10 = 40, elder 5.
    m, seen = after_exchange(
        monkeypatch, elder=PIQUE["younger"], drawn="9d", discard="Td", younger=PIQUE["elder"]
    )
    assert scores(seen) == [(Y, 7, "point"), (Y, 17, "sequence")]
    seen = play_cards(m, "8d Ad Ac 7c Kc 8h Qc 9h Jc 8s Tc Qh")
    assert m.deal_points == [30, 0]
    seen += play_cards(m, "9c 9d 8c Kd 7h Th Jh 7d Ks 7s As 9s")
    assert "pique" not in [r for _, _, r in scores(seen)]
    assert events_of(seen, DealEnd)[0] == DealEnd(deal=1, tricks=[8, 4], points=[40, 5], scores=[40, 5])


# No-pique positions: younger never scores, elder reaches 30 only with the cards or the capot.
# Cards position:
#   elder:   clubs A K Q J T 9 8 (septième, point 68), 7h, 7d 8d, 7s 9s (9s drawn for Td)
#   younger: 7c, 9d, 8s, hearts Q J T 9 8, Kd Ad, Ks As (quint to the queen, point 47)
#   combinations: elder 7 + 17 = 24; younger nothing (no set anywhere)
#   play: 1 E 7h 8h -> Y (won with an eight: nothing);  2 Y 9h, elder discards Ac -> Y;
#         3 Y 9d 7d -> Y;  4 Y 8s 9s -> E (a nine: nothing);  5 E 8c 7c;  6 E 9c (Kd);
#         7 E Kc +1 (Ad);  8 E Qc +1 (Ks);  9 E Jc +1 (As);  10 E 8d (Th);  11 E 7s (Jh);
#        12 E Tc +1 (Qh) and +1 for the last trick: 24 + 5 = 29
#   tricks E 9, Y 3: the cards +10 = 39 for elder, who passes 30 only with the cards: no pique
#   (with a pique it would have been 69).
NO_PIQUE_CARDS = dict(
    elder="Ac Kc Qc Jc Tc 9c 8c 7h 7d 8d 7s 9s",
    drawn="9s",
    discard="Td",
    younger="7c 9d 8s 8h 9h Th Jh Qh Kd Ad Ks As",
)
NO_PIQUE_PLAY = "7h 8h 9h Ac 9d 7d 8s 9s 8c 7c 9c Kd Kc Ad Qc Ks Jc As 8d Th 7s Jh Tc Qh"

# Capot position (template-like): both hold eight cards of a suit, elder clubs, younger spades.
#   point 75 against 75: equal; huitième against huitième: equal (cancelled)
#   sets: elder's trios of aces (Ac Ah Ad) and kings (Kc Kh Kd) 3 + 3                    -> 6
#   play: elder leads everything and takes every trick (younger has no club and lower red
#     cards): 9 honours led (T J Q K A of clubs, Ah Kh Ad Kd) -> 15, last trick -> 16
#   capot +40 -> 56, no pique although 56 >= 30 (it would be 86).
NO_PIQUE_CAPOT = dict(
    elder="7c 8c 9c Tc Jc Qc Kc Ac Ah Kh Ad Kd",
    drawn="Kd",
    discard="Qh",
    younger="7s 8s 9s Ts Js Qs Ks As 7h 8h 7d 8d",
)


def test_P7_3_the_cards_never_count_toward_pique(monkeypatch):
    m, seen = after_exchange(monkeypatch, **NO_PIQUE_CARDS)
    assert scores(seen) == [(E, 7, "point"), (E, 17, "sequence")]
    seen = play_cards(m, NO_PIQUE_PLAY)
    assert scores(seen) == [(E, 1, "lead")] * 4 + [(E, 1, "last_trick"), (E, 10, "cards")]
    assert events_of(seen, DealEnd)[0] == DealEnd(deal=1, tricks=[3, 9], points=[0, 39], scores=[0, 39])


def test_P7_3_the_capot_never_counts_toward_pique(monkeypatch):
    m, seen = after_exchange(monkeypatch, **NO_PIQUE_CAPOT)
    assert decl(seen, "point").result == "equal" and decl(seen, "sequence").result == "equal"
    assert scores(seen) == [(E, 3, "set"), (E, 3, "set")]
    seen = finish_deal(m)  # any play: elder takes all twelve tricks
    assert scores(seen)[-2:] == [(E, 1, "last_trick"), (E, 40, "capot")]
    assert "pique" not in [r for _, _, r in scores(seen)]
    assert events_of(seen, DealEnd)[0] == DealEnd(deal=1, tricks=[0, 12], points=[0, 56], scores=[0, 56])


def test_P7_3_at_most_one_of_pique_and_repique(monkeypatch):
    # Template A: repique at 40, then elder scores 11 + 1 + 40 more in play while younger has
    # nothing; no pique on top (152, not 182).
    m, seen = new_match(monkeypatch, template_pack("A"))
    seen += play_template(m, "A")
    reasons = [r for _, _, r in scores(seen)]
    assert reasons.count("repique") == 1 and "pique" not in reasons
    # and the pique position: one pique, not a second one at 60
    m, seen = after_exchange(monkeypatch, **PIQUE)
    seen += play_cards(m, PIQUE_PLAY)
    assert [r for _, _, r in scores(seen)].count("pique") == 1


# =========================================================================== §P8 match


def play_templates(monkeypatch, names: list[str], rules: Rules | None = None) -> tuple[PiquetMatch, list]:
    """A match (seat 0 deals first) whose deals are the templates ``names`` in order."""
    m, seen = new_match(monkeypatch, *[template_pack(n) for n in names], rules=rules)
    for name in names:
        if m.over:
            break
        seen += play_template(m, name)
    return m, seen


def totals_after_each_deal(seen: list) -> list[list[int]]:
    return [e.scores for e in events_of(seen, DealEnd)]


def test_P8_1_scoring_default_is_rubicon():
    assert Rules().scoring == "rubicon"
    m = PiquetMatch(Rules(), random.Random(1))
    m.start()
    assert m.view(0).deals == 6 and m.view(0).scoring == "rubicon"


def test_P8_2_rubicon_loser_under_100_scores_100_plus_the_sum(monkeypatch):
    # deals 1 3 5: seat 1 elder, template M: seat 1 +55, seat 0 +26
    # deals 2 4 6: seat 0 elder, template B: seat 0 +1,  seat 1 +170
    # seat 0: 3 x 26 + 3 x 1 = 81; seat 1: 3 x 55 + 3 x 170 = 675
    # the loser (81) is under 100: the winner scores 100 + (675 + 81) = 856
    m, seen = play_templates(monkeypatch, ["M", "B"] * 3)
    assert totals_after_each_deal(seen) == [[26, 55], [27, 225], [53, 280], [54, 450], [80, 505], [81, 675]]
    assert events_of(seen, MatchScore) == [MatchScore(totals=[81, 675], winner=1, margin=856, rubicon=True)]
    assert m.over and m.winner == 1 and m.margin == 856 and m.end_reason == "rubicon"
    assert [s.dealer for s in events_of(seen, DealStart)] == [0, 1, 0, 1, 0, 1]


def test_P8_2_rubicon_loser_over_100_scores_100_plus_the_difference(monkeypatch):
    # deals 1 3 5: seat 1 elder, template R: seat 0 +90, seat 1 +62
    # deals 2 4 6: seat 0 elder, template M: seat 0 +55, seat 1 +26
    # seat 0: 3 x 90 + 3 x 55 = 435; seat 1: 3 x 62 + 3 x 26 = 264
    # the loser (264) crossed the Rubicon: 100 + (435 - 264) = 271
    m, seen = play_templates(monkeypatch, ["R", "M"] * 3)
    assert totals_after_each_deal(seen)[-1] == [435, 264]
    assert events_of(seen, MatchScore) == [MatchScore(totals=[435, 264], winner=0, margin=271, rubicon=False)]
    assert m.winner == 0 and m.margin == 271


def test_P8_2_rubicon_tie_two_more_deals_then_a_winner(monkeypatch):
    # six deals of template R: each seat is elder three times (62) and younger three times (90):
    # 456 all. Each deals once more (seat 0 then seat 1):
    #   deal 7 R  (seat 1 elder): seat 0 +90 = 546, seat 1 +62 = 518 - not over, deal 8 follows
    #   deal 8 R' (seat 0 elder): seat 0 +61 = 607, seat 1 +90 = 608
    # seat 1 wins; the loser is over 100: 100 + (608 - 607) = 101
    m, seen = play_templates(monkeypatch, ["R"] * 7 + ["R'"])
    assert totals_after_each_deal(seen)[5:] == [[456, 456], [546, 518], [607, 608]]
    assert [s.dealer for s in events_of(seen, DealStart)] == [0, 1, 0, 1, 0, 1, 0, 1]
    assert events_of(seen, MatchScore) == [MatchScore(totals=[607, 608], winner=1, margin=101, rubicon=False)]


def test_P8_2_rubicon_tie_after_the_extra_deals_is_a_draw(monkeypatch):
    # eight deals of template R: 4 x 90 + 4 x 62 = 608 each
    m, seen = play_templates(monkeypatch, ["R"] * 8)
    assert totals_after_each_deal(seen)[-1] == [608, 608] and len(events_of(seen, DealEnd)) == 8
    assert events_of(seen, MatchScore) == [MatchScore(totals=[608, 608], winner=None, margin=0, rubicon=False)]
    assert m.over and m.winner is None and m.end_reason == "draw" and m.to_act is None


CENT = Rules(scoring="cent")


def test_P8_3_cent_first_to_100_at_the_end_of_a_deal(monkeypatch):
    m, seen = new_match(monkeypatch, template_pack("A"), rules=CENT)
    seen += exchange(m, ["Kd"], [])
    assert m.scores == [0, 100] and not m.over and m.decision == "play"  # 100 mid-deal: play on
    assert m.view(0).deals == 0
    seen += finish_deal(m)
    ms = events_of(seen, MatchScore)
    assert [(x.totals, x.winner, x.rubicon) for x in ms] == [([0, 152], 1, False)]
    assert m.over and m.winner == 1 and m.end_reason == "cent" and len(events_of(seen, DealEnd)) == 1


def test_P8_3_cent_both_past_100_the_higher_wins(monkeypatch):
    # deal 1 R  (seat 1 elder): [90, 62], nobody at 100: another deal
    # deal 2 R' (seat 0 elder): seat 0 +61 = 151, seat 1 +90 = 152: both past 100, seat 1 higher
    m, seen = play_templates(monkeypatch, ["R", "R'"], rules=CENT)
    assert totals_after_each_deal(seen) == [[90, 62], [151, 152]]
    assert events_of(seen, MatchScore)[0].winner == 1 and m.winner == 1


def test_P8_3_cent_equal_past_100_another_deal(monkeypatch):
    # R, R: [90, 62] then [152, 152]: equal, another deal; deal 3 R (seat 1 elder) [242, 214]
    m, seen = play_templates(monkeypatch, ["R", "R", "R"], rules=CENT)
    assert totals_after_each_deal(seen) == [[90, 62], [152, 152], [242, 214]]
    assert events_of(seen, MatchScore)[0].totals == [242, 214] and m.winner == 0


def test_P8_4_result_and_margin_for_rating(monkeypatch):
    m, _ = play_templates(monkeypatch, ["M", "B"] * 3)
    assert (m.winner, m.margin, m.end_reason, m.scores) == (1, 856, "rubicon", [81, 675])
    m, _ = play_templates(monkeypatch, ["R"] * 8)
    assert (m.winner, m.margin, m.end_reason) == (None, 0, "draw")


def test_P8_view_scores_are_totals_before_this_deal(monkeypatch):
    # PiquetView: "scores: match totals per seat before this deal's points; deal_scores: this
    # deal's points so far" (protocol/messages.py)
    m, seen = new_match(monkeypatch, template_pack("A"), template_pack("R"))
    seen += exchange(m, ["Kd"], [])
    for seat in (0, 1):
        v = m.view(seat)
        assert (v.scores, v.deal_scores) == ([0, 0], [0, 100])
    finish_deal(m)  # deal 2 begins
    v = m.view(0)
    assert (v.deal, v.scores, v.deal_scores) == (2, [0, 152], [0, 0])


# =========================================================================== §P9 arena


def test_P9_auto_action_is_the_first_legal_action_at_every_decision(monkeypatch):
    m, _ = new_match(monkeypatch, QUIET, QUIET)
    kinds = set()
    run(m, m.hands[E][:2])  # so that the look and expose decisions are asked
    while not m.over and m.deal_no == 1:
        kinds.add(m.decision)
        a = m.auto_action()
        assert a == m.legal_actions()[0]
        m.apply(a)
    assert kinds == {"look", "discard", "expose", "play"}


def test_P9_same_seed_same_deals_for_duplicate_matches():
    a, b = PiquetMatch(Rules(), random.Random(42)), PiquetMatch(Rules(), random.Random(42))
    ea, eb = a.start(), b.start()
    enc = msgspec.json.encode
    assert [(enc(e), by) for e, by in ea] == [(enc(e), by) for e, by in eb]


# =========================================================================== illegal actions


def test_illegal_not_following_suit_and_card_not_in_hand(monkeypatch):
    m, _ = after_exchange(monkeypatch, **PLAY)
    assert_illegal(m, "Qh", "piquet.md §P6.1")  # discarded, no longer in hand
    assert_illegal(m, "Kh", "piquet.md §P6.1")  # younger's card
    assert_illegal(m, "6h", "piquet.md §P6.1")  # not in the 32-card pack
    run(m, "Ah")
    for card in ("Ac", "Kd", "As", "Js"):  # younger holds hearts: must follow
        assert_illegal(m, card, "piquet.md §P6.1")
        with pytest.raises(IllegalAction, match="does not follow suit"):
            m.apply(card)
    assert_illegal(m, "Ah", "piquet.md §P6.1")  # already on the table


def test_illegal_discards(monkeypatch):
    m, _ = new_match(monkeypatch, QUIET)
    hand = list(m.hands[E])
    assert_illegal(m, [], "piquet.md §P4.1")  # too few: elder must take one
    assert_illegal(m, hand[:6], "piquet.md §P4.1")  # too many
    assert_illegal(m, [hand[0], hand[0]], "piquet.md §P4")  # a card twice
    assert_illegal(m, [m.hands[Y][0]], "piquet.md §P4")  # not in his hand
    assert_illegal(m, ["As"], "piquet.md §P4")  # in the talon
    run(m, hand[:5])
    assert_illegal(m, m.hands[Y][:4], "piquet.md §P4.2")  # 3 remain
    assert_illegal(m, [hand[0]], "piquet.md §P4")  # elder's discard


def test_illegal_wrong_decision_shape(monkeypatch):
    m, _ = new_match(monkeypatch, QUIET)
    for bad in ("7c", "look", None, 3, [1, 2], {"cards": []}):
        assert_illegal(m, bad, None, wrong=True)  # a discard is a list of cards
    run(m, m.hands[E][:2])
    for bad in (["look"], "expose", "keep", None, "7c"):
        assert_illegal(m, bad, None, wrong=True)
    run(m, "pass", m.hands[Y][:1])
    for bad in ("look", "pass", [], None, True):
        assert_illegal(m, bad, None, wrong=True)
    run(m, "keep")
    for bad in ([m.hands[E][0]], "look", None, "", "Ace"):
        assert_illegal(m, bad, None, wrong=True)


def test_illegal_after_the_match_is_over(monkeypatch):
    m, _ = new_match(monkeypatch, template_pack("A"), rules=CENT)
    play_template(m, "A")
    assert m.over and m.decision is None and m.to_act is None
    for bad in ("Ah", [], "look"):
        with pytest.raises(IllegalAction):
            m.apply(bad)


def test_start_twice_raises(monkeypatch):
    m, _ = new_match(monkeypatch, QUIET)
    with pytest.raises(RuntimeError):
        m.start()


def test_hand_dealt_and_deck_are_hidden(monkeypatch):
    m, seen = new_match(monkeypatch, template_pack("A"))
    assert [by for ev, by in seen if isinstance(ev, HandDealt)] == [ONLY[0], ONLY[1]]
    assert [by for ev, by in seen if isinstance(ev, DeckOrder)] == [NOBODY]
    assert draw_for(0)[:2] == ["7d", "Kc"] and events_of(seen, DealerDraw)[0].dealer == 0
    seen = exchange(m, ["Kd"], [])
    assert all(by == BOTH for ev, by in seen if isinstance(ev, (Declaration, Score, CardPlayed)))
