"""One test (at least) per numbered rule of ``../shared/rules/ecarte.md`` §E1-§E7.

Positions are hand-made by stacking the pack (see ``tests/ecarte_positions.py``). Unless a test
says otherwise seat 0 deals first, so seat 1 is elder of the first deal (``D``/``E`` below), the
turn-up is ``7s`` (spades are trumps) and the king of trumps ``Ks`` is left in the stock.
"""

from __future__ import annotations

import random
import re
from typing import Any

import msgspec
import pytest

from arena.cards import PACK_32
from arena.games.base import BOTH, NOBODY, ONLY, IllegalAction, WrongDecision
from arena.games.ecarte import EcarteMatch, trick_winner
from protocol.messages import (
    Call,
    CardPlayed,
    DealEnd,
    DealerDraw,
    DealStart,
    DeckOrder,
    Exchange,
    HandDealt,
    KingAnnounced,
    MancheEnd,
    Rules,
    Score,
    TargetSet,
    TrickWon,
)

try:
    from ecarte_positions import (
        deal_pack,
        draw_for,
        events_of,
        finish_deal,
        new_match,
        pack_with_top,
        run,
        seen_of,
        snapshot,
        stack,
    )
except ImportError:  # tests/ imported as a package
    from tests.ecarte_positions import (
        deal_pack,
        draw_for,
        events_of,
        finish_deal,
        new_match,
        pack_with_top,
        run,
        seen_of,
        snapshot,
        stack,
    )

D, E = 0, 1  # first dealer and first elder (draw_for(0))

TRUMPS = ["As", "Js", "Qs", "Ts", "9s"]  # spades without the king (turn-up 7s)
HIGH_HEARTS = ["Th", "Ah", "Jh", "Qh", "Kh"]
LOW_HEARTS = ["7h", "8h", "9h"]
PLAIN = deal_pack("7h 8h 9h Th Ah", "7c 8c 9c Tc Ac", "7s", "Jd Qd Kd")  # a quiet deal: no king in hand


def forced(winner: str, k: int) -> list[str]:
    """A deal (turn-up 7s) in which ``winner`` (``"elder"``/``"dealer"``) takes exactly ``k``
    tricks (2 <= k <= 5) whatever either side plays: the winner holds ``k`` trumps and low hearts,
    the other holds the five highest hearts and no trump, so a trick goes to the winner exactly
    when he plays a trump (§E5)."""
    strong = TRUMPS[:k] + LOW_HEARTS[: 5 - k]
    if winner == "elder":
        return deal_pack(strong, HIGH_HEARTS, "7s")
    return deal_pack(HIGH_HEARTS, strong, "7s")


def assert_illegal(m: EcarteMatch, action: Any, rule: str, wrong: bool = False) -> None:
    """``action`` raises IllegalAction naming ``rule`` (WrongDecision if ``wrong``), and the
    match is unchanged afterwards."""
    before = snapshot(m)
    with pytest.raises(IllegalAction) as info:
        m.apply(action)
    assert isinstance(info.value, WrongDecision) == wrong, info.value
    if rule:
        assert info.value.rule == rule, info.value
    assert snapshot(m) == before


def decisions_until_deal_end(m: EcarteMatch, king: str = "decline") -> list[tuple[int, str]]:
    """Finish the deal with first legal cards, returning the (seat, decision) pairs asked."""
    deal = m.deal_no
    asked: list[tuple[int, str]] = []
    while not m.over and m.deal_no == deal:
        asked.append((m.to_act, m.decision))
        m.apply(king if m.decision == "king" else m.legal_actions()[0])
    return asked


def score_events(seen: list) -> list[Score]:
    return events_of(seen, Score)


# =========================================================================== §E1 cards


def test_E1_rank_order_K_Q_J_A_T_9_8_7():
    order = "KQJAT987"  # high to low
    for suit, trump in (("h", "s"), ("s", "s")):
        for i, hi in enumerate(order):
            for lo in order[i + 1 :]:
                assert trick_winner(hi + suit, lo + suit, trump) == 0, (hi, lo)
                assert trick_winner(lo + suit, hi + suit, trump) == 1, (lo, hi)


def test_E1_ace_between_jack_and_ten_in_play(monkeypatch):
    # elder leads Ah: of Jh and Th only Jh beats it, so only Jh is legal (§E5.1) and it wins.
    m, _ = new_match(monkeypatch, deal_pack("Ah 7c 8c 9c Tc", "Jh Th Kd Qd Jd", "7s"))
    run(m, "play", "Ah")
    assert m.to_act == D and m.legal_actions() == ["Jh"]
    seen = run(m, "Jh")
    assert events_of(seen, TrickWon) == [TrickWon(trick=1, leader=E, cards=["Ah", "Jh"], winner=D)]


def test_E1_trump_suit_beats_every_other_suit(monkeypatch):
    for plain in "cdh":
        for rank in "KQJAT987":
            assert trick_winner(rank + plain, "8s", "s") == 1
            assert trick_winner("8s", rank + plain, "s") == 0
    # in play: the eight of trumps takes the king of hearts
    m, _ = new_match(monkeypatch, deal_pack("Kh 7c 8c 9c Tc", "8s Jc Kd Qd Jd", "7s"))
    seen = run(m, "play", "Kh", "8s")
    assert events_of(seen, TrickWon)[0].winner == D


def test_E1_card_text_rank_then_suit(monkeypatch):
    pattern = re.compile(r"^[KQJAT987][cdhs]$")
    assert len(PACK_32) == 32 and len(set(PACK_32)) == 32
    assert all(pattern.match(c) for c in PACK_32)
    m = EcarteMatch(Rules(), random.Random(7))
    seen = m.start()
    rng = random.Random(1)
    while not m.over:
        seen += m.apply(rng.choice(m.legal_actions()))
    for ev, _ in seen:
        for c in msgspec.to_builtins(ev).values():
            cards = c if isinstance(c, list) else [c]
            for x in cards:
                if isinstance(x, str) and len(x) == 2:
                    assert pattern.match(x), (ev, x)


# =========================================================================== §E2 the deal


@pytest.mark.parametrize(
    ("c0", "c1", "dealer"),
    [
        ("Kc", "Qd", 0),
        ("Qs", "Kc", 1),
        ("Jh", "As", 0),  # the ace ranks below the jack (§E1)
        ("Ac", "Td", 0),  # ... and above the ten
        ("7c", "8d", 1),
        ("Ah", "Jd", 1),
    ],
)
def test_E2_1_higher_card_deals_first_and_equal_ranks_redraw(monkeypatch, c0, c1, dealer):
    tie1 = pack_with_top("Kc", "Kd")
    tie2 = pack_with_top("7h", "7s")
    st = stack(monkeypatch, tie1, tie2, pack_with_top(c0, c1), list(PACK_32))
    m = EcarteMatch(Rules(), random.Random(0))
    seen = m.start()
    draws = seen_of(seen, DealerDraw)
    assert draws == [
        (DealerDraw(cards=["Kc", "Kd"], dealer=None), BOTH),
        (DealerDraw(cards=["7h", "7s"], dealer=None), BOTH),
        (DealerDraw(cards=[c0, c1], dealer=dealer), BOTH),
    ]
    assert st.calls == 4  # three draws (a new pack each), then the first deal
    start = events_of(seen, DealStart)[0]
    assert (start.dealer, start.elder) == (dealer, 1 - dealer)
    assert (m.dealer, m.elder) == (dealer, 1 - dealer)


def test_E2_1_draw_comes_from_the_match_seed():
    def draws(seed: int) -> list[DealerDraw]:
        return events_of(EcarteMatch(Rules(), random.Random(seed)).start(), DealerDraw)

    assert draws(42) == draws(42)
    firsts = {draws(s)[-1].dealer for s in range(30)}
    assert firsts == {0, 1}
    for s in range(30):
        ds = draws(s)
        assert all(d.dealer is None and d.cards[0][0] == d.cards[1][0] for d in ds[:-1])
        assert ds[-1].cards[0][0] != ds[-1].cards[1][0]


def test_E2_2_deal_alternates(monkeypatch):
    # exact: two stacked deals
    pack = forced("elder", 3)
    m, seen = new_match(monkeypatch, pack, pack, dealer=1)
    assert events_of(seen, DealStart)[0].dealer == 1
    run(m, "play")
    seen = finish_deal(m)
    starts = events_of(seen, DealStart)
    assert [(s.deal, s.dealer, s.elder) for s in starts] == [(2, 0, 1)]
    assert (m.dealer, m.elder, m.to_act, m.decision) == (0, 1, 1, "propose")
    # seeded random matches: inside a manche the dealer alternates every deal
    for seed in range(40):
        m = EcarteMatch(Rules(target=7), random.Random(seed))
        seen = m.start()
        rng = random.Random(seed)
        while not m.over:
            seen += m.apply(rng.choice(m.legal_actions()))
        starts = events_of(seen, DealStart)
        assert len(starts) >= 3
        for a, b in zip(starts, starts[1:]):
            assert b.deal == a.deal + 1 and b.manche == a.manche
            assert b.dealer == 1 - a.dealer and b.elder == a.dealer


def test_E2_2_liee_loser_of_manche_deals_first():
    not_plain_alternation = 0
    for seed in range(60):
        m = EcarteMatch(Rules(manches=3), random.Random(seed))
        seen = m.start()
        rng = random.Random(1000 + seed)
        while not m.over:
            seen += m.apply(rng.choice(m.legal_actions()))
        evs = events_of(seen)
        last_dealer = None
        for i, ev in enumerate(evs):
            if isinstance(ev, DealStart):
                last_dealer = ev.dealer
            if isinstance(ev, MancheEnd) and i < len(evs) - 1:
                nxt = next(e for e in evs[i:] if isinstance(e, DealStart))
                assert nxt.manche == ev.manche + 1 and nxt.deal > 1
                assert nxt.dealer == 1 - ev.winner, (seed, ev, nxt)
                if nxt.dealer == last_dealer:
                    not_plain_alternation += 1
    assert not_plain_alternation > 0  # the rule was seen to differ from plain alternation


def test_E2_2_liee_loser_deals_first_exact(monkeypatch):
    # seat 0 dealt the last deal of manche 1 and lost it: seat 0 deals again (§E2.2).
    m = at_four_all(monkeypatch, forced("elder", 5), PLAIN, rules=Rules(manches=3))
    run(m, "play")
    seen = finish_deal(m)
    assert events_of(seen, MancheEnd) == [MancheEnd(manche=1, winner=1, scores=[4, 6], manches=[0, 1])]
    start = events_of(seen, DealStart)[0]
    assert (start.manche, start.deal, start.dealer, start.elder) == (2, 5, 0, 1)
    assert m.scores == [0, 0] and m.manches == [0, 1] and not m.over


@pytest.mark.parametrize("dealer", [0, 1])
def test_E2_3_elder_speaks_and_leads_first(monkeypatch, dealer):
    m, seen = new_match(monkeypatch, deal_pack("7h 8h 9h Th Ah", "7c 8c 9c Tc Ac", "7s"), dealer=dealer)
    elder = 1 - dealer
    assert events_of(seen, DealStart)[0].elder == elder
    assert m.view(0).elder == elder and m.view(1).dealer == dealer
    assert (m.to_act, m.decision) == (elder, "propose")
    seen = run(m, "play")
    assert seen == [(Call(seat=elder, call="play"), BOTH)]
    assert (m.to_act, m.decision) == (elder, "play")
    assert m.legal_actions() == ["7h", "8h", "9h", "Th", "Ah"]  # any card may be led
    seen = run(m, "Th")
    assert seen == [(CardPlayed(seat=elder, card="Th", trick=1), BOTH)]
    assert (m.to_act, m.decision) == (dealer, "play")


PATTERN_HANDS = {
    # positions 0-9 of PACK_32: 7c 8c 9c Tc Jc Qc Kc Ac 7d 8d; the 11th card is 9d
    "3-2": ("7c 8c 9c Kc Ac", "Tc Jc Qc 7d 8d"),  # elder 0-2, 6-7; dealer 3-5, 8-9
    "2-3": ("7c 8c Jc Qc Kc", "9c Tc Ac 7d 8d"),  # elder 0-1, 4-6; dealer 2-3, 7-9
    "2-2-1": ("7c 8c Jc Qc 7d", "9c Tc Kc Ac 8d"),  # elder 0-1, 4-5, 8; dealer 2-3, 6-7, 9
}


@pytest.mark.parametrize("pattern", list(PATTERN_HANDS))
def test_E2_4_deal_patterns_3_2_2_3_2_2_1(monkeypatch, pattern):
    pack = list(PACK_32)
    m, seen = new_match(monkeypatch, pack, pack, rules=Rules(deal_pattern=pattern))
    elder_cards, dealer_cards = (set(h.split()) for h in PATTERN_HANDS[pattern])
    # elder is served first; each hand is sent to its owner only
    hands = seen_of(seen, HandDealt)
    assert [(h.seat, set(h.cards), by) for h, by in hands] == [
        (0, dealer_cards, ONLY[0]),
        (1, elder_cards, ONLY[1]),
    ]
    assert set(m.view(E).hand) == elder_cards and set(m.view(D).hand) == dealer_cards
    # the packets are fixed for the whole match: same positions when the deal passes
    run(m, "play")
    seen = finish_deal(m)
    assert events_of(seen, DealStart)[0].dealer == 1
    hands = {h.seat: set(h.cards) for h in events_of(seen, HandDealt)}
    assert hands == {0: elder_cards, 1: dealer_cards}


def test_E2_4_turn_up_is_trump_and_stock_is_21(monkeypatch):
    pack = deal_pack("7h 8h 9h Th Ah", "7c 8c 9c Tc Ac", "Jd")
    m, seen = new_match(monkeypatch, pack)
    assert seen_of(seen, DeckOrder) == [(DeckOrder(cards=pack), NOBODY)]
    assert seen_of(seen, DealStart) == [
        (
            DealStart(deal=1, manche=1, dealer=0, elder=1, turn_up="Jd", trump="d", stock=21),
            BOTH,
        )
    ]
    v = m.view(0)
    assert (v.turn_up, v.trump, v.stock) == ("Jd", "d", 21)
    assert m.stock == pack[11:]
    # the trump suit is the turn-up's: a seven of diamonds takes the king of hearts
    assert trick_winner("Kh", "7d", m.trump) == 1
    # drawing the whole stock never yields the turn-up
    drawn = draw_whole_stock(m)
    assert drawn == pack[11:] and "Jd" not in m.hands[0] + m.hands[1]
    assert m.turn_up == "Jd" and m.view(1).turn_up == "Jd"


def draw_whole_stock(m: EcarteMatch) -> list[str]:
    """Exchange until the stock is empty (5+5, 5+5, 1); return the cards drawn, in order."""
    drawn: list[str] = []
    plan = [("elder", 5), ("dealer", 5), ("elder", 5), ("dealer", 5), ("elder", 1)]
    for who, n in plan:
        if who == "elder":
            run(m, "propose", "accept")
        seat = m.elder if who == "elder" else m.dealer
        assert (m.to_act, m.decision) == (seat, "discard")
        seen = run(m, list(m.hands[seat][:n]))
        mine = [ev for ev, by in seen if isinstance(ev, Exchange) and by == ONLY[seat]]
        drawn += mine[0].drawn
    assert m.stock == []
    return drawn


# =========================================================================== §E3 king points


@pytest.mark.parametrize("dealer", [0, 1])
def test_E3_1_turn_up_king_scores_dealer(monkeypatch, dealer):
    pack = deal_pack("7h 8h 9h Th Ah", "7c 8c 9c Tc Ac", "Kh")
    m, seen = new_match(monkeypatch, pack, dealer=dealer)
    pts = [0, 0]
    pts[dealer] = 1
    assert seen[-1] == (Score(seat=dealer, points=1, reason="king_turn_up", scores=pts), BOTH)
    assert isinstance(seen[-2][0], HandDealt)  # scored as the cards are dealt, before any call
    assert m.scores == pts and (m.to_act, m.decision) == (1 - dealer, "propose")
    # nobody can hold the king of trumps: no announcement is offered in this deal
    run(m, "play")
    asked = decisions_until_deal_end(m)
    assert all(d == "play" for _, d in asked)


def test_E3_1_no_point_when_turn_up_is_not_a_king(monkeypatch):
    for card in ["Qd", "Ad", "7d"]:
        m, seen = new_match(monkeypatch, deal_pack("7h 8h 9h Th Ah", "7c 8c 9c Tc Ac", card))
        assert score_events(seen) == [] and m.scores == [0, 0]


def test_E3_2_king_announcement_offered_before_first_card_elder(monkeypatch):
    m, _ = new_match(monkeypatch, deal_pack("Ks 7h 8h 9h Th", "Ah Jh Qh Kh 7c", "7s"))
    assert m.decision == "propose"  # not offered at the call
    run(m, "play")
    assert (m.to_act, m.decision) == (E, "king")
    assert m.legal_actions() == ["announce", "decline"]
    seen = run(m, "announce")
    assert seen == [
        (KingAnnounced(seat=E, card="Ks", announced=True), BOTH),  # public
        (Score(seat=E, points=1, reason="king", scores=[0, 1]), BOTH),
    ]
    assert (m.to_act, m.decision) == (E, "play") and m.scores == [0, 1]
    asked = decisions_until_deal_end(m)
    assert "king" not in [d for _, d in asked]  # offered once only


def test_E3_2_king_announcement_offered_before_first_card_dealer(monkeypatch):
    m, _ = new_match(monkeypatch, deal_pack("7h 8h 9h Th Ah", "Ks 7c 8c 9c Tc", "7s"))
    run(m, "play")
    assert (m.to_act, m.decision) == (E, "play")  # elder holds no king
    run(m, "7h")
    assert (m.to_act, m.decision) == (D, "king")  # just before the dealer's first card
    seen = run(m, "announce")
    assert seen == [
        (KingAnnounced(seat=D, card="Ks"), BOTH),
        (Score(seat=D, points=1, reason="king", scores=[1, 0]), BOTH),
    ]
    assert (m.to_act, m.decision) == (D, "play") and m.legal_actions() == ["Ks"]


@pytest.mark.parametrize("drawer", ["elder", "dealer"])
def test_E3_2_drawn_king_counts(monkeypatch, drawer):
    elder, dealer = "7h 8h 9h Th Ah", "7c 8c 9c Tc Ac"
    top = "Ks Jd" if drawer == "elder" else "Jd Ks"
    m, _ = new_match(monkeypatch, deal_pack(elder, dealer, "7s", top))
    run(m, "propose", "accept", ["7h"], ["7c"])
    holder = E if drawer == "elder" else D
    assert "Ks" in m.hands[holder]
    run(m, "play")
    if holder == D:
        run(m, m.legal_actions()[0])
    assert (m.to_act, m.decision) == (holder, "king")
    seen = run(m, "announce")
    assert score_events(seen) == [
        Score(seat=holder, points=1, reason="king", scores=[int(holder == 0), int(holder == 1)])
    ]


def test_E3_2_discarded_king_is_not_offered(monkeypatch):
    m, _ = new_match(monkeypatch, deal_pack("Ks 7h 8h 9h Th", "Ah Jh Qh Kh 7c", "7s"))
    run(m, "propose", "accept", ["Ks"], [], "play")
    asked = decisions_until_deal_end(m)
    assert "king" not in [d for _, d in asked]


@pytest.mark.parametrize("holder", [D, E])
def test_E3_2_declining_gives_no_point_and_is_seen_only_by_the_decliner(monkeypatch, holder):
    hands = ["Ks 7c 8c 9c Tc", "7h 8h 9h Th Ah"]  # [dealer, elder]
    if holder == E:
        hands.reverse()
    m, _ = new_match(monkeypatch, deal_pack(hands[1], hands[0], "7s"))
    run(m, "play")
    if holder == D:
        run(m, m.legal_actions()[0])
    assert (m.to_act, m.decision) == (holder, "king")
    seen = run(m, "decline")
    assert seen == [(KingAnnounced(seat=holder, card="Ks", announced=False), ONLY[holder])]
    assert m.scores == [0, 0] and (m.to_act, m.decision) == (holder, "play")
    seen = finish_deal(m, king="announce")  # never offered again
    assert not events_of(seen, KingAnnounced)
    assert all(s.reason != "king" for s in score_events(seen))


def at_four_all(monkeypatch, *later: list[str], rules: Rules | None = None) -> EcarteMatch:
    """Play three hand-made deals (target 5) to reach 4-4; deal 4 (``later[0]``: seat 0 deals,
    seat 1 is elder) has just been dealt; ``later[1:]`` are the packs of the deals after it."""
    deal1 = deal_pack("Kh Qh Jh Ah Th", "7c 8c 9c Tc Ac", "9h")  # dealer 1: seat 0 king+vole
    deal2 = deal_pack("Qs Js As Ts 9s", "7c 8c 9c Tc Ac", "Ks")  # dealer 0: +1, seat 1 vole
    deal3 = deal_pack("7c 8c 9c Tc Ac", "Kh Qh Jh Ah Th", "9h")  # dealer 1 refuses, vole
    m, seen = new_match(monkeypatch, deal1, deal2, deal3, *later, dealer=1, rules=rules)
    run(m, "play", "announce")
    seen = finish_deal(m)
    assert events_of(seen, DealEnd)[0] == DealEnd(deal=1, tricks=[5, 0], points=[3, 0], scores=[3, 0])
    assert score_events(seen)[-1] == Score(seat=0, points=1, reason="king_turn_up", scores=[4, 0])
    run(m, "play")
    seen = finish_deal(m)
    assert events_of(seen, DealEnd)[0] == DealEnd(deal=2, tricks=[0, 5], points=[1, 2], scores=[4, 2])
    run(m, "propose", "refuse")
    seen = finish_deal(m, king="decline")
    assert events_of(seen, DealEnd)[0] == DealEnd(deal=3, tricks=[0, 5], points=[0, 2], scores=[4, 4])
    assert m.scores == [4, 4] and m.deal_no == 4 and (m.dealer, m.elder) == (0, 1)
    return m


def test_E3_3_king_point_reaching_target_wins_at_once_turn_up(monkeypatch):
    deal4 = deal_pack("7c 8c 9c Tc Ac", "7h 8h 9h Th Ah", "Kd")
    deal1 = deal_pack("Kh Qh Jh Ah Th", "7c 8c 9c Tc Ac", "9h")
    deal2 = deal_pack("Qs Js As Ts 9s", "7c 8c 9c Tc Ac", "Ks")
    deal3 = deal_pack("7c 8c 9c Tc Ac", "Kh Qh Jh Ah Th", "9h")
    m, _ = new_match(monkeypatch, deal1, deal2, deal3, deal4, dealer=1)
    run(m, "play", "announce")
    finish_deal(m)
    run(m, "play")
    finish_deal(m)
    run(m, "propose", "refuse")
    seen = finish_deal(m)  # deal 3 ends, deal 4 is dealt with the king turned up
    assert m.over and m.winner == 0 and m.to_act is None and m.decision is None
    i = next(i for i, (ev, _) in enumerate(seen) if isinstance(ev, DealStart))
    assert seen[i][0].deal == 4 and seen[i][0].turn_up == "Kd"
    assert [ev for ev, _ in seen[i + 1 :] if not isinstance(ev, HandDealt)] == [
        Score(seat=0, points=1, reason="king_turn_up", scores=[5, 4]),
        DealEnd(deal=4, tricks=[0, 0], points=[1, 0], scores=[5, 4], ended="king_point"),
        MancheEnd(manche=1, winner=0, scores=[5, 4], manches=[1, 0]),
    ]
    assert m.scores == [5, 4] and m.manches == [1, 0]


def test_E3_3_king_point_reaching_target_wins_at_once_announced_by_dealer(monkeypatch):
    m = at_four_all(monkeypatch, deal_pack("7c 8c 9c Tc Ac", "Kd 7h 8h 9h Th", "7d"))
    run(m, "play", "7c")
    assert (m.to_act, m.decision) == (0, "king")
    seen = run(m, "announce")
    assert seen == [
        (KingAnnounced(seat=0, card="Kd"), BOTH),
        (Score(seat=0, points=1, reason="king", scores=[5, 4]), BOTH),
        (DealEnd(deal=4, tricks=[0, 0], points=[1, 0], scores=[5, 4], ended="king_point"), BOTH),
        (MancheEnd(manche=1, winner=0, scores=[5, 4], manches=[1, 0]), BOTH),
    ]
    assert m.over and m.winner == 0 and m.to_act is None and m.decision is None
    with pytest.raises(IllegalAction):
        m.apply("Kd")  # the deal is not finished


def test_E3_3_king_point_reaching_target_wins_at_once_announced_by_elder(monkeypatch):
    m = at_four_all(monkeypatch, deal_pack("Kd 7h 8h 9h Th", "7c 8c 9c Tc Ac", "7d"))
    seen = run(m, "play", "announce")
    assert events_of(seen)[-3:] == [
        Score(seat=1, points=1, reason="king", scores=[4, 5]),
        DealEnd(deal=4, tricks=[0, 0], points=[0, 1], scores=[4, 5], ended="king_point"),
        MancheEnd(manche=1, winner=1, scores=[4, 5], manches=[0, 1]),
    ]
    assert m.over and m.winner == 1


# =========================================================================== §E4 exchanges


def test_E4_1_elder_proposes_or_plays(monkeypatch):
    m, _ = new_match(monkeypatch, PLAIN)
    assert (m.to_act, m.decision, m.legal_actions()) == (E, "propose", ["propose", "play"])
    assert run(m, "propose") == [(Call(seat=E, call="propose"), BOTH)]
    assert (m.to_act, m.decision) == (D, "respond")
    m, _ = new_match(monkeypatch, PLAIN)
    assert run(m, "play") == [(Call(seat=E, call="play"), BOTH)]
    assert (m.to_act, m.decision) == (E, "play") and m.stock == PLAIN[11:]


def test_E4_2_dealer_refuses_or_accepts(monkeypatch):
    m, _ = new_match(monkeypatch, PLAIN)
    run(m, "propose")
    assert (m.to_act, m.decision, m.legal_actions()) == (D, "respond", ["accept", "refuse"])
    assert run(m, "refuse") == [(Call(seat=D, call="refuse"), BOTH)]
    assert (m.to_act, m.decision, m.view(0).proposals) == (E, "play", 0)  # play starts
    m, _ = new_match(monkeypatch, PLAIN)
    run(m, "propose")
    assert run(m, "accept") == [(Call(seat=D, call="accept"), BOTH)]
    assert (m.to_act, m.decision, m.view(1).proposals) == (E, "discard", 1)


def test_E4_3_elder_discards_1_to_5_and_draws_from_the_top(monkeypatch):
    m, _ = new_match(monkeypatch, PLAIN)
    run(m, "propose", "accept")
    legal = m.legal_actions()
    assert len(legal) == 31 and all(1 <= len(a) <= 5 for a in legal)  # 2**5 - 1 subsets
    assert sorted(sorted(a) for a in legal) == sorted(
        sorted(a) for a in ([c for i, c in enumerate(m.hands[E]) if mask >> i & 1] for mask in range(1, 32))
    )
    assert_illegal(m, [], "ecarte.md §E4.3")  # at least one card
    seen = run(m, ["Th", "7h"])
    assert seen == [
        (Exchange(seat=E, count=2, stock=19, discarded=["Th", "7h"], drawn=["Jd", "Qd"]), ONLY[E]),
        (Exchange(seat=E, count=2, stock=19), ONLY[D]),
    ]
    assert sorted(m.hands[E]) == sorted(["8h", "9h", "Ah", "Jd", "Qd"])
    assert m.stock == PLAIN[13:] and m.discards[E] == ["Th", "7h"]
    assert (m.to_act, m.decision) == (D, "discard")


def test_E4_3_elder_may_not_discard_more_than_the_stock(monkeypatch):
    m, _ = new_match(monkeypatch, PLAIN)
    for n_e, n_d in ((5, 5), (5, 5)):
        run(m, "propose", "accept", list(m.hands[E][:n_e]), list(m.hands[D][:n_d]))
    assert len(m.stock) == 1
    run(m, "propose", "accept")
    assert (m.to_act, m.decision) == (E, "discard")
    assert sorted(m.legal_actions()) == sorted([c] for c in m.hands[E])
    assert_illegal(m, list(m.hands[E][:2]), "ecarte.md §E4.3")
    assert_illegal(m, list(m.hands[E]), "ecarte.md §E4.3")


def test_E4_4_dealer_discards_0_to_5(monkeypatch):
    m, _ = new_match(monkeypatch, PLAIN)
    run(m, "propose", "accept", ["7h"])
    assert (m.to_act, m.decision) == (D, "discard")
    legal = m.legal_actions()
    assert len(legal) == 32 and [] in legal and all(0 <= len(a) <= 5 for a in legal)
    seen = run(m, [])
    assert seen == [
        (Exchange(seat=D, count=0, stock=20, discarded=[], drawn=[]), ONLY[D]),
        (Exchange(seat=D, count=0, stock=20), ONLY[E]),
    ]
    assert m.stock == PLAIN[12:]
    run(m, "propose", "accept", ["8h"])
    seen = run(m, ["7c", "8c", "9c"])
    assert events_of(seen, Exchange)[0].drawn == PLAIN[13:16]
    assert m.stock == PLAIN[16:] and m.discards == [["7c", "8c", "9c"], ["7h", "8h"]]


def test_E4_4_dealer_may_not_discard_more_than_the_stock(monkeypatch):
    m, _ = new_match(monkeypatch, PLAIN)
    run(m, "propose", "accept", list(m.hands[E]), list(m.hands[D]))  # 11 left
    run(m, "propose", "accept", list(m.hands[E]), list(m.hands[D][:4]))  # 2 left
    run(m, "propose", "accept", [m.hands[E][0]])  # 1 left
    assert len(m.stock) == 1 and (m.to_act, m.decision) == (D, "discard")
    assert sorted(m.legal_actions()) == sorted([[]] + [[c] for c in m.hands[D]])
    assert_illegal(m, list(m.hands[D][:2]), "ecarte.md §E4.3")


def test_E4_4_dealer_discard_skipped_when_stock_empty(monkeypatch):
    m, _ = new_match(monkeypatch, PLAIN)
    run(m, "propose", "accept", list(m.hands[E]), list(m.hands[D]))  # 11 left
    run(m, "propose", "accept", list(m.hands[E]), list(m.hands[D]))  # 1 left
    run(m, "propose", "accept")
    seen = run(m, [m.hands[E][0]])
    assert [ev.seat for ev in events_of(seen, Exchange)] == [E, E]
    assert m.stock == [] and (m.to_act, m.decision) == (E, "play")  # play starts at once


def test_E4_5_discards_out_of_the_deal_and_seen_only_by_their_owner(monkeypatch):
    m, _ = new_match(monkeypatch, PLAIN)
    run(m, "propose", "accept")
    seen = run(m, ["Ah", "Th"]) + run(m, ["Ac"])
    mine = {by: ev for ev, by in seen if isinstance(ev, Exchange) and ev.seat == E}
    assert mine[ONLY[E]].discarded == ["Ah", "Th"] and mine[ONLY[E]].drawn == ["Jd", "Qd"]
    theirs = mine[ONLY[D]]
    assert (theirs.count, theirs.stock, theirs.discarded, theirs.drawn) == (2, 19, None, None)
    wire = msgspec.json.decode(msgspec.json.encode(theirs))
    assert {k: v for k, v in wire.items() if v is not None} == {
        "kind": "exchange",
        "seat": E,
        "count": 2,
        "stock": 19,
    }
    dealer_ex = {by: ev for ev, by in seen if isinstance(ev, Exchange) and ev.seat == D}
    assert dealer_ex[ONLY[D]].discarded == ["Ac"] and dealer_ex[ONLY[D]].drawn == ["Kd"]
    assert dealer_ex[ONLY[E]].discarded is None and dealer_ex[ONLY[E]].drawn is None
    assert m.discards == [["Ac"], ["Ah", "Th"]]
    for seat in (0, 1):
        text = msgspec.json.encode(m.view(seat)).decode()
        assert not any(c in text for c in ("Ah", "Th", "Ac"))
    # out for good: they never come back in this deal
    run(m, "play")
    seen = finish_deal(m)
    played = [ev.card for ev in events_of(seen, CardPlayed)]
    assert not {"Ah", "Th", "Ac"} & set(played)


def test_E4_6_proposals_repeat_while_stock_not_empty(monkeypatch):
    m, _ = new_match(monkeypatch, PLAIN)
    run(m, "propose", "accept", ["7h"], ["7c"])
    assert len(m.stock) == 19 and (m.to_act, m.decision) == (E, "propose")  # E4.1 again
    run(m, "propose")
    assert (m.to_act, m.decision) == (D, "respond")
    run(m, "accept", ["8h"], [])
    assert m.view(0).proposals == 2 and (m.to_act, m.decision) == (E, "propose")
    run(m, "propose", "refuse")  # the dealer may refuse again
    assert (m.to_act, m.decision) == (E, "play")


def test_E4_6_play_starts_when_the_stock_is_empty_short_stock(monkeypatch):
    m, _ = new_match(monkeypatch, PLAIN)
    run(m, "propose", "accept", list(m.hands[E][:4]), list(m.hands[D][:5]))  # 12 left
    run(m, "propose", "accept", list(m.hands[E][:5]), list(m.hands[D][:5]))  # 2 left
    run(m, "propose", "accept")
    assert max(len(a) for a in m.legal_actions()) == 2  # the short stock limits elder
    run(m, list(m.hands[E][:1]))
    assert (m.to_act, m.decision) == (D, "discard")
    assert max(len(a) for a in m.legal_actions()) == 1  # and the dealer
    run(m, list(m.hands[D][:1]))
    assert m.stock == [] and m.to_act == E
    assert m.decision == ("king" if "Ks" in m.hands[E] else "play")  # play starts
    assert len(m.hands[0]) == len(m.hands[1]) == 5


# =========================================================================== §E5 play


def follow(monkeypatch, elder: str, dealer: str, lead: str, turn_up: str = "7s") -> EcarteMatch:
    """Elder plays without proposing and leads ``lead``; the dealer is to follow."""
    m, _ = new_match(monkeypatch, deal_pack(elder, dealer, turn_up))
    run(m, "play")
    if m.decision == "king":
        run(m, "decline")
    run(m, lead)
    if m.decision == "king":
        run(m, "decline")
    assert (m.to_act, m.decision) == (D, "play")
    return m


@pytest.mark.parametrize(
    ("elder", "dealer", "lead", "legal"),
    [
        ("9h 7c 8c 9c Tc", "7h Th Jh 8s 9d", "9h", ["Th", "Jh"]),  # win the trick if able
        ("9h 7c 8c 9c Tc", "7h 8h 8s 9s Qd", "9h", ["7h", "8h"]),  # follow, may not trump
        ("Ah 7c 8c 9c Tc", "Kh 7h 8s 9s Qd", "Ah", ["Kh"]),  # K over A
        ("9s 7c 8c 9c Tc", "8s Ts Kh Qh Jh", "9s", ["Ts"]),  # trump lead included
        ("Qs 7c 8c 9c Tc", "8s Ts Kh Qh Jh", "Qs", ["8s", "Ts"]),  # cannot win: any of the suit
    ],
)
def test_E5_1_follow_and_win_if_able(monkeypatch, elder, dealer, lead, legal):
    m = follow(monkeypatch, elder, dealer, lead)
    assert m.legal_actions() == legal


@pytest.mark.parametrize(
    ("dealer", "legal"),
    [("8s Ts 7c 8c 9c", ["8s", "Ts"]), ("Ks 7c 8c 9c Tc", ["Ks"])],
)
def test_E5_2_trump_if_void(monkeypatch, dealer, legal):
    m = follow(monkeypatch, "9h 7d 8d 9d Td", dealer, "9h")
    assert m.legal_actions() == legal
    seen = run(m, legal[0])
    assert events_of(seen, TrickWon)[0].winner == D


@pytest.mark.parametrize(
    ("elder", "dealer", "lead"),
    [
        ("9h 7d 8d 9d Td", "7c 8c 9c Jd Qd", "9h"),  # void in hearts and in trumps
        ("9s 7d 8d 9d Td", "7h 8h 9c Jd Qd", "9s"),  # trump led, void in trumps
    ],
)
def test_E5_3_any_card_otherwise(monkeypatch, elder, dealer, lead):
    m = follow(monkeypatch, elder, dealer, lead)
    assert sorted(m.legal_actions()) == sorted(dealer.split())
    seen = run(m, m.legal_actions()[-1])
    assert events_of(seen, TrickWon)[0].winner == E  # a discard never wins


@pytest.mark.parametrize(
    ("elder", "dealer", "lead", "reply", "winner"),
    [
        ("9h 7d 8d 9d Td", "Jh 7c 8c 9c Tc", "9h", "Jh", D),  # higher card of the suit led
        ("Jh 7d 8d 9d Td", "7h 7c 8c 9c Tc", "Jh", "7h", E),  # lower card of the suit led
        ("7h 7d 8d 9d Td", "Kc Ac Qc Jc Tc", "7h", "Kc", E),  # a higher plain card off suit
        ("Kh 7d 8d 9d Td", "8s 7c 8c 9c Tc", "Kh", "8s", D),  # trump on a plain lead
        ("8s 7d 8d 9d Td", "Kh 7c 8c 9c Tc", "8s", "Kh", E),  # plain card on a trump lead
        ("8s 7d 8d 9d Td", "9s 7c 8c 9c Tc", "8s", "9s", D),  # higher trump on a trump lead
    ],
)
def test_E5_trick_winner_and_winner_leads_next(monkeypatch, elder, dealer, lead, reply, winner):
    m = follow(monkeypatch, elder, dealer, lead)
    seen = run(m, reply)
    assert seen == [
        (CardPlayed(seat=D, card=reply, trick=1), BOTH),
        (TrickWon(trick=1, leader=E, cards=[lead, reply], winner=winner), BOTH),
    ]
    assert (m.to_act, m.decision) == (winner, "play")
    assert m.view(0).trick == [] and m.view(0).tricks == [int(winner == 0), int(winner == 1)]
    assert sorted(m.legal_actions()) == sorted(m.hands[winner])  # the leader plays anything


def test_E5_five_tricks_then_the_deal_ends(monkeypatch):
    m, _ = new_match(monkeypatch, forced("elder", 3))
    run(m, "play")
    seen = finish_deal(m)
    tricks = events_of(seen, TrickWon)
    assert [t.trick for t in tricks] == [1, 2, 3, 4, 5]
    assert [t.leader for t in tricks[1:]] == [t.winner for t in tricks[:-1]]
    plays = events_of(seen, CardPlayed)
    assert len(plays) == 10 and all(p.trick == (i // 2) + 1 for i, p in enumerate(plays))
    assert events_of(seen, DealEnd)[0].tricks == [2, 3]


# =========================================================================== §E6 scoring


@pytest.mark.parametrize("k", [3, 4, 5])
@pytest.mark.parametrize("winner", ["elder", "dealer"])
def test_E6_1_three_or_four_tricks_score_one_vole_two(monkeypatch, winner, k):
    m, _ = new_match(monkeypatch, forced(winner, k))
    # elder plays and wins / dealer refuses and wins: the refuser won, so no penalty (§E6.2)
    if winner == "elder":
        run(m, "play")
    else:
        run(m, "propose", "refuse")
    seen = finish_deal(m)
    seat = E if winner == "elder" else D
    tricks = [0, 0]
    tricks[seat], tricks[1 - seat] = k, 5 - k
    pts = [0, 0]
    pts[seat] = 2 if k == 5 else 1
    reason = "vole" if k == 5 else "tricks"
    assert seen_of(seen, Score) == [(Score(seat=seat, points=pts[seat], reason=reason, scores=pts), BOTH)]
    assert events_of(seen, DealEnd) == [DealEnd(deal=1, tricks=tricks, points=pts, scores=pts)]
    assert m.scores == pts and m.deal_no == 2


@pytest.mark.parametrize("k", [3, 4, 5])
def test_E6_2_refusal_penalty_elder_played_without_proposing_and_lost(monkeypatch, k):
    m, _ = new_match(monkeypatch, forced("dealer", k))
    run(m, "play")
    seen = finish_deal(m)
    # the dealer scores 2, never 1 and never 2 + 2 for a vole
    assert score_events(seen) == [Score(seat=D, points=2, reason="refusal", scores=[2, 0])]
    assert events_of(seen, DealEnd)[0].points == [2, 0]


@pytest.mark.parametrize("k", [3, 4, 5])
def test_E6_2_refusal_penalty_dealer_refused_first_proposal_and_lost(monkeypatch, k):
    m, _ = new_match(monkeypatch, forced("elder", k))
    run(m, "propose", "refuse")
    seen = finish_deal(m)
    assert score_events(seen) == [Score(seat=E, points=2, reason="refusal", scores=[0, 2])]
    assert events_of(seen, DealEnd)[0].points == [0, 2]


def test_E6_2_refusal_penalty_not_for_a_later_refusal(monkeypatch):
    # elder 7h 8h + 3 trumps; he swaps 8h for Ts: 4 trumps. Then the dealer refuses.
    pack = deal_pack(["7h", "8h"] + TRUMPS[:3], HIGH_HEARTS, "7s", ["Ts"])
    m, _ = new_match(monkeypatch, pack)
    run(m, "propose", "accept", ["8h"], [], "propose", "refuse")
    seen = finish_deal(m)
    assert score_events(seen) == [Score(seat=E, points=1, reason="tricks", scores=[0, 1])]
    assert events_of(seen, DealEnd)[0].tricks == [1, 4]


def test_E6_2_refusal_penalty_not_for_playing_after_an_exchange(monkeypatch):
    # the dealer holds 3 trumps and 7h 8h; elder swaps Th for 9h and then plays and loses
    pack = deal_pack(HIGH_HEARTS, ["7h", "8h"] + TRUMPS[:3], "7s", ["9h"])
    m, _ = new_match(monkeypatch, pack)
    run(m, "propose", "accept", ["Th"], [], "play")
    seen = finish_deal(m)
    assert score_events(seen) == [Score(seat=D, points=1, reason="tricks", scores=[1, 0])]
    assert events_of(seen, DealEnd)[0].tricks == [3, 2]


def test_E6_2_refusal_penalty_not_added_to_a_king_turn_up_beyond_three(monkeypatch):
    pack = deal_pack(HIGH_HEARTS, TRUMPS, "Ks")  # the dealer: king turned up, then a vole
    m, seen = new_match(monkeypatch, pack)
    assert m.scores == [1, 0]
    run(m, "play")
    seen = finish_deal(m)
    assert score_events(seen) == [Score(seat=D, points=2, reason="refusal", scores=[3, 0])]
    assert events_of(seen, DealEnd)[0] == DealEnd(deal=1, tricks=[5, 0], points=[3, 0], scores=[3, 0])


@pytest.mark.parametrize("who", ["elder", "dealer"])
def test_E6_3_at_most_three_points(monkeypatch, who):
    strong, weak = "Ks Qs Js As Ts", "7h 8h 9h Th Ah"
    if who == "elder":
        m, _ = new_match(monkeypatch, deal_pack(strong, weak, "7s"))
        run(m, "play", "announce")  # king 1 + vole 2
        seat = E
    else:
        m, _ = new_match(monkeypatch, deal_pack(weak, strong, "7s"))
        run(m, "play", "7h", "announce")  # king 1 + refusal 2 (the vole adds nothing)
        seat = D
    seen = finish_deal(m)
    pts = [0, 0]
    pts[seat] = 3
    assert m.scores == pts
    deal_end = events_of(seen, DealEnd)[0]
    assert deal_end.points == pts and deal_end.tricks[seat] == 5


# =========================================================================== §E7 match


def play_random(m: EcarteMatch, seed: int) -> list:
    seen = m.start()
    rng = random.Random(seed)
    while not m.over:
        seen += m.apply(rng.choice(m.legal_actions()))
    return seen


@pytest.mark.parametrize("target", [5, 7])
def test_E7_1_targets_5_7(target):
    for seed in range(10):
        m = EcarteMatch(Rules(target=target), random.Random(seed))
        seen = play_random(m, seed)
        assert m.view(0).target == target and m.target == target
        assert not events_of(seen, TargetSet)
        w = m.winner
        assert m.scores[w] >= target > m.scores[1 - w]
    assert EcarteMatch(Rules(), random.Random(0)).target == 5  # the default


@pytest.mark.parametrize(
    ("card", "target"),
    [("Ah", 11), ("Kc", 10), ("Qd", 10), ("Js", 10), ("Th", 10), ("9c", 9), ("8d", 8), ("7s", 7)],
)
def test_E7_1_targets_5_7_turn_up(monkeypatch, card, target):
    pre = [pack_with_top(card), draw_for(0)]
    m, seen = new_match(monkeypatch, PLAIN, pre=pre, rules=Rules(target="turn-up"))
    assert seen[0] == (TargetSet(card=card, target=target), BOTH)  # before the draw and deal
    assert isinstance(seen[1][0], DealerDraw)
    assert m.target == target and m.view(1).target == target


def test_E7_1_turn_up_target_from_the_seed():
    for seed in range(20):
        m = EcarteMatch(Rules(target="turn-up"), random.Random(seed))
        seen = play_random(m, seed)
        ts = events_of(seen, TargetSet)
        assert len(ts) == 1 and ts[0].target in (7, 8, 9, 10, 11)
        assert max(m.scores) >= ts[0].target > min(m.scores)


@pytest.mark.parametrize(
    "rules",
    [Rules(target=6), Rules(target="turnup"), Rules(deal_pattern="3-3"), Rules(manches=2)],
)
def test_E7_rule_options_are_validated(rules):
    with pytest.raises(ValueError):
        EcarteMatch(rules, random.Random(0))


def test_E7_2_partie_liee_best_of_three():
    counts = set()
    for seed in range(40):
        m = EcarteMatch(Rules(manches=3), random.Random(seed))
        seen = play_random(m, seed)
        ends = events_of(seen, MancheEnd)
        counts.add(len(ends))
        assert len(ends) in (2, 3)
        assert [e.manche for e in ends] == list(range(1, len(ends) + 1))
        wins = [0, 0]
        for e in ends:
            assert not wins[0] == 2 and not wins[1] == 2  # nothing after two manches
            wins[e.winner] += 1
            assert e.manches == wins
            assert e.scores[e.winner] >= 5 > e.scores[1 - e.winner]
        assert max(wins) == 2 and m.manches == wins and m.winner == wins.index(2)
        # each manche starts from 0-0
        evs = events_of(seen)
        for i, ev in enumerate(evs):
            if isinstance(ev, MancheEnd) and i + 1 < len(evs):
                rest = evs[i + 1 :]
                first_score = next((e for e in rest if isinstance(e, Score)), None)
                if first_score is not None:
                    assert sum(first_score.scores) == first_score.points
    assert counts == {2, 3}
    m = EcarteMatch(Rules(), random.Random(3))
    seen = play_random(m, 3)
    assert len(events_of(seen, MancheEnd)) == 1 and sum(m.manches) == 1  # partie sèche


def test_E7_3_target_ends_manche_at_once(monkeypatch):
    m = at_four_all(monkeypatch, forced("elder", 5))
    run(m, "play")
    seen = finish_deal(m)
    assert events_of(seen)[-3:] == [
        Score(seat=1, points=2, reason="vole", scores=[4, 6]),  # may pass the target
        DealEnd(deal=4, tricks=[0, 5], points=[0, 2], scores=[4, 6]),
        MancheEnd(manche=1, winner=1, scores=[4, 6], manches=[0, 1]),
    ]
    assert m.over and m.winner == 1 and m.scores == [4, 6] and m.deal_no == 4
    assert m.to_act is None and m.decision is None


def test_E7_3_no_manche_end_before_the_target():
    for seed in range(20):
        m = EcarteMatch(Rules(target=7, manches=3), random.Random(seed))
        evs = events_of(play_random(m, seed))
        for i, ev in enumerate(evs):
            if isinstance(ev, Score):
                reached = ev.scores[ev.seat] >= 7
                nxt = evs[i + 1 : i + 3]
                ends = [e for e in nxt if isinstance(e, MancheEnd)]
                assert bool(ends) == reached
                if reached:
                    assert isinstance(nxt[0], DealEnd)


# =========================================================================== illegal actions


def test_illegal_card_not_in_hand(monkeypatch):
    m, _ = new_match(monkeypatch, PLAIN)
    run(m, "play")
    assert_illegal(m, "7c", "ecarte.md §E5")  # the dealer's card
    assert_illegal(m, "Jd", "ecarte.md §E5")  # a stock card
    assert_illegal(m, "7s", "ecarte.md §E5")  # the turn-up
    run(m, "7h")
    assert_illegal(m, "7h", "ecarte.md §E5")  # already played


def test_illegal_revoke(monkeypatch):
    m = follow(monkeypatch, "9h 7c 8c 9c Tc", "7h 8h 8s 9s Qd", "9h")
    assert_illegal(m, "8s", "ecarte.md §E5.1")  # trumping while holding hearts
    assert_illegal(m, "Qd", "ecarte.md §E5.1")


def test_illegal_not_winning_when_able(monkeypatch):
    m = follow(monkeypatch, "9h 7c 8c 9c Tc", "7h Jh 8s 9s Qd", "9h")
    assert_illegal(m, "7h", "ecarte.md §E5.1")
    m = follow(monkeypatch, "9s 7c 8c 9c Tc", "8s Ts Kh Qh Jh", "9s")
    assert_illegal(m, "8s", "ecarte.md §E5.1")  # trump lead included


def test_illegal_not_trumping_when_void(monkeypatch):
    m = follow(monkeypatch, "9h 7d 8d 9d Td", "8s Ts 7c 8c 9c", "9h")
    assert_illegal(m, "7c", "ecarte.md §E5.2")


@pytest.mark.parametrize(
    ("setup", "bad"),
    [
        ((), "Kh"),
        ((), ["7h"]),
        ((), "accept"),
        ((), None),
        (("propose",), "propose"),
        (("propose",), "play"),
        (("propose",), 1),
        (("propose", "accept"), "7h"),
        (("propose", "accept"), "propose"),
        (("propose", "accept"), [7]),
        (("play",), "propose"),
        (("play",), ["7h"]),
        (("play",), None),
        (("play",), 7),
        (("play",), "announce"),
    ],
)
def test_illegal_wrong_decision_shape(monkeypatch, setup, bad):
    m, _ = new_match(monkeypatch, PLAIN)
    run(m, *setup)
    assert_illegal(m, bad, "", wrong=True)


def test_illegal_wrong_decision_shape_king(monkeypatch):
    m, _ = new_match(monkeypatch, deal_pack("Ks 7h 8h 9h Th", "Ah Jh Qh Kh 7c", "7s"))
    run(m, "play")
    assert m.decision == "king"
    for bad in ("Ks", "play", ["Ks"], True):
        assert_illegal(m, bad, "", wrong=True)


def test_illegal_discards(monkeypatch):
    m, _ = new_match(monkeypatch, PLAIN)
    run(m, "propose", "accept")
    assert_illegal(m, ["7h", "7h"], "ecarte.md §E4.3")  # a card twice
    assert_illegal(m, ["7c"], "ecarte.md §E4.3")  # not in hand
    assert_illegal(m, [], "ecarte.md §E4.3")  # elder discards at least one
    assert_illegal(m, ["7h", "8h", "9h", "Th", "Ah", "7h"], "ecarte.md §E4.3")


def test_illegal_discarding_more_than_the_stock(monkeypatch):
    m, _ = new_match(monkeypatch, PLAIN)
    run(m, "propose", "accept", list(m.hands[E]), list(m.hands[D]))
    run(m, "propose", "accept", list(m.hands[E][:4]), list(m.hands[D]))  # 2 left
    run(m, "propose", "accept")
    assert_illegal(m, list(m.hands[E][:3]), "ecarte.md §E4.3")
    run(m, list(m.hands[E][:1]))
    assert_illegal(m, list(m.hands[D][:2]), "ecarte.md §E4.3")


def test_illegal_action_after_the_match_is_over(monkeypatch):
    m = at_four_all(monkeypatch, forced("elder", 5))
    run(m, "play")
    finish_deal(m)
    assert m.over
    before = (m.scores, m.manches, m.winner, msgspec.json.encode(m.view(0)))
    for action in ("play", "7h", ["7h"]):
        with pytest.raises(IllegalAction):
            m.apply(action)
    assert (m.scores, m.manches, m.winner, msgspec.json.encode(m.view(0))) == before


def test_illegal_error_codes():
    assert IllegalAction.code == "illegal_action" and WrongDecision.code == "wrong_decision"
    assert issubclass(WrongDecision, IllegalAction)


# =========================================================================== views


def test_view_shows_own_hand_the_table_and_the_scores(monkeypatch):
    m, _ = new_match(monkeypatch, deal_pack("9h 7d 8d 9d Td", "Jh 7c 8c 9c Tc", "7s"))
    run(m, "propose", "accept", ["7d"], [])
    run(m, "play")
    run(m, m.legal_actions()[0])
    lead = m.trick[0].card
    for seat in (0, 1):
        v = m.view(seat)
        assert v.seat == seat and sorted(v.hand) == sorted(m.hands[seat])
        assert (v.dealer, v.elder, v.deal, v.manche, v.target) == (D, E, 1, 1, 5)
        assert (v.turn_up, v.trump, v.stock, v.proposals) == ("7s", "s", 20, 1)
        assert [(tc.seat, tc.card) for tc in v.trick] == [(E, lead)]
        assert v.scores == [0, 0] and v.manches == [0, 0] and v.tricks == [0, 0]
        hidden = set(m.hands[1 - seat]) | set(m.stock) | set(m.discards[1 - seat])
        assert not hidden & set(re.findall(r'"([KQJAT987][cdhs])"', msgspec.json.encode(v).decode()))


def test_view_is_a_copy(monkeypatch):
    # engine fix: view() used to hand out the engine's own (mutable) TrickCard structs
    m, _ = new_match(monkeypatch, PLAIN)
    run(m, "play", "7h")
    before = snapshot(m)
    v = m.view(0)
    v.hand.clear()
    v.scores[0] = 99
    v.trick[0].card = "Ks"
    v.trick.clear()
    assert snapshot(m) == before and m.trick[0].card == "7h"


def test_start_only_once():
    m = EcarteMatch(Rules(), random.Random(0))
    m.start()
    with pytest.raises(RuntimeError):
        m.start()
