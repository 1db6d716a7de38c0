"""Property tests: thousands of seeded random Écarté matches checked against
``../shared/rules/ecarte.md`` after every action.

Each example draws a match seed, a rule set and a policy seed, then plays the match to the end
with a seeded random policy (a uniformly random legal action). :class:`Referee` is an
independent re-statement of the rules: it follows the events and the engine's state and fails
on the first disagreement.
"""

from __future__ import annotations

import copy
import pickle
import random
import re
from collections import Counter
from collections.abc import Callable
from math import comb
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from arena.cards import PACK_32
from arena.games.base import BOTH, NOBODY, ONLY, IllegalAction, Seen, WrongDecision
from arena.games.ecarte import EcarteMatch
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
from tests.conftest import examples

try:
    from ecarte_positions import deal_positions
except ImportError:  # tests/ imported as a package
    from tests.ecarte_positions import deal_positions

SEEDS = st.integers(min_value=0, max_value=2**64 - 1)
RULES = st.builds(
    Rules,
    deal_pattern=st.sampled_from(["3-2", "2-3", "2-2-1"]),
    target=st.sampled_from([5, 7, "turn-up"]),
    manches=st.sampled_from([1, 3]),
)


def fast(n: int) -> settings:
    return settings(
        max_examples=examples(n),
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow],
    )


# --------------------------------------------------------------------------- the rules again

ORDER = "KQJAT987"  # §E1, high to low
TURN_UP_TARGET = {"A": 11, "K": 10, "Q": 10, "J": 10, "T": 10, "9": 9, "8": 8, "7": 7}  # §E7.1
POINTS = {"king_turn_up": 1, "king": 1, "tricks": 1, "vole": 2, "refusal": 2}  # §E3, §E6


def higher(a: str, b: str) -> bool:
    return ORDER.index(a[0]) < ORDER.index(b[0])


def legal_plays(hand: list[str], lead: str | None, trump: str) -> set[str]:
    """§E5.1-§E5.3: what the player may play (anything when leading)."""
    if lead is None:
        return set(hand)
    suit = [c for c in hand if c[1] == lead[1]]
    if suit:
        return {c for c in suit if higher(c, lead)} or set(suit)
    return {c for c in hand if c[1] == trump} or set(hand)


def wins(lead: str, follow: str, trump: str) -> bool:
    """§E5: does ``follow`` take ``lead``?"""
    if follow[1] == lead[1]:
        return higher(follow, lead)
    return follow[1] == trump


CARD_RE = re.compile(rb'"([KQJAT987][cdhs])"')
SORTED_PACK = sorted(PACK_32)


def cards_in(obj: Any) -> set[str]:
    """Every card (a JSON string value like ``"Ks"``) anywhere in ``obj`` once encoded."""
    return {c.decode() for c in CARD_RE.findall(msgspec.json.encode(obj))}


class Referee:
    """Follows one match's events and state; asserts the rules after every action."""

    def __init__(self, m: EcarteMatch) -> None:
        self.m = m
        self.rules: Rules = m.rules
        self.target = m.rules.target if isinstance(m.rules.target, int) else None
        self.needed = 2 if m.rules.manches == 3 else 1
        self.totals = [0, 0]
        self.manches = [0, 0]
        self.last_start: DealStart | None = None
        self.last_manche_winner: int | None = None
        self.deck: list[str] = []
        self.reached: int | None = None  # seat that reached the target, manche not yet ended
        self.deal_ended = False
        self.events: list[Any] = []
        self.n_deals = 0

    # ------------------------------------------------------------------ events

    def new_deal(self, ev: DealStart) -> None:
        self.played: list[str] = []
        self.calls: list[Call] = []
        self.deal_points = [0, 0]
        self.tricks = [0, 0]
        self.trick_no = 1
        self.king_answered = [False, False]
        self.has_played = [False, False]
        self.stock_left = ev.stock
        self.scores_in_deal: list[Score] = []
        self.exchanges = 0
        self.deal_ended = False
        self.n_deals += 1

    def feed(self, seen: list[Seen]) -> None:
        for ev, by in seen:
            self.events.append(ev)
            getattr(self, "on_" + type(ev).__name__)(ev, by)
            if isinstance(ev, Call):
                self.flow = ("call", ev.call)
            elif isinstance(ev, Exchange) and ev.discarded is not None:
                self.flow = ("exchange", ev.seat)
            elif isinstance(ev, (KingAnnounced, CardPlayed)):
                self.flow = (type(ev).__name__, ev.seat)
            elif isinstance(ev, TrickWon):
                self.flow = ("TrickWon", ev.winner)
            elif isinstance(ev, DealStart):
                self.flow = ("deal", None)

    def expected_turn(self) -> tuple[int, str]:
        """Who must decide what next (§E2.3, §E3.2, §E4, §E5), from the last event."""
        start = self.last_start
        elder, dealer = start.elder, start.dealer
        what, x = self.flow
        if what == "deal":
            return elder, "propose"  # §E4.1
        if what == "call":
            if x == "propose":
                return dealer, "respond"  # §E4.2
            if x == "accept":
                return elder, "discard"  # §E4.3
            return self.to_play(elder)  # refused, or played without proposing
        if what == "exchange":
            if self.stock_left == 0:
                return self.to_play(elder)  # §E4.6 (the dealer's discard skipped)
            return (dealer, "discard") if x == elder else (elder, "propose")  # §E4.4, §E4.6
        if what == "KingAnnounced":
            return x, "play"
        if what == "CardPlayed":
            return self.to_play(1 - x)
        return self.to_play(x)  # the trick's winner leads (§E5)

    def to_play(self, seat: int) -> tuple[int, str]:
        """§E3.2: the king announcement comes just before the holder's first card."""
        king = "K" + self.last_start.trump
        if king in self.m.hands[seat] and not self.has_played[seat] and not self.king_answered[seat]:
            return seat, "king"
        return seat, "play"

    def on_TargetSet(self, ev: TargetSet, by: tuple) -> None:
        assert by == BOTH and self.rules.target == "turn-up" and not self.events[:-1]
        assert ev.target == TURN_UP_TARGET[ev.card[0]]
        self.target = ev.target

    def on_DealerDraw(self, ev: DealerDraw, by: tuple) -> None:
        assert by == BOTH and self.last_start is None
        a, b = ev.cards
        if a[0] == b[0]:
            assert ev.dealer is None
        else:
            assert ev.dealer == (0 if higher(a, b) else 1)

    def on_DeckOrder(self, ev: DeckOrder, by: tuple) -> None:
        assert by == NOBODY and sorted(ev.cards) == sorted(PACK_32)
        self.deck = list(ev.cards)

    def on_DealStart(self, ev: DealStart, by: tuple) -> None:
        assert by == BOTH and self.deck
        assert self.target is not None
        assert ev.elder == 1 - ev.dealer and ev.stock == 21
        assert ev.turn_up == self.deck[10] and ev.trump == ev.turn_up[1]  # §E2.4
        prev = self.last_start
        if prev is None:
            draws = [e for e in self.events if isinstance(e, DealerDraw)]
            assert ev.dealer == draws[-1].dealer and (ev.deal, ev.manche) == (1, 1)  # §E2.1
        else:
            assert self.deal_ended and ev.deal == prev.deal + 1
            if ev.manche == prev.manche:
                assert ev.dealer == 1 - prev.dealer  # §E2.2
            else:
                assert ev.manche == prev.manche + 1
                assert ev.dealer == 1 - self.last_manche_winner  # §E2.2, partie liée
                assert self.totals == [0, 0]
        self.last_start = ev
        self.new_deal(ev)

    def on_HandDealt(self, ev: HandDealt, by: tuple) -> None:
        assert by == ONLY[ev.seat]
        start = self.last_start
        epos, dpos = deal_positions(self.rules.deal_pattern)
        pos = epos if ev.seat == start.elder else dpos
        assert sorted(ev.cards) == sorted(self.deck[p] for p in pos)  # §E2.4

    def on_Call(self, ev: Call, by: tuple) -> None:
        assert by == BOTH
        start = self.last_start
        want = ("propose", "play") if ev.seat == start.elder else ("accept", "refuse")
        assert ev.call in want and self.stock_left > 0 and not any(self.has_played)
        self.calls.append(ev)

    def on_Exchange(self, ev: Exchange, by: tuple) -> None:
        start = self.last_start
        owner = ev.discarded is not None
        assert by == (ONLY[ev.seat] if owner else ONLY[1 - ev.seat])  # §E4.5
        if owner:
            assert len(ev.discarded) == len(ev.drawn) == ev.count
            self.stock_left -= ev.count
            assert ev.stock == self.stock_left >= 0
            least = 1 if ev.seat == start.elder else 0  # §E4.3, §E4.4
            assert least <= ev.count <= 5
            self.exchanges += 1
        else:
            assert ev.drawn is None and ev.stock == self.stock_left

    def on_KingAnnounced(self, ev: KingAnnounced, by: tuple) -> None:
        start = self.last_start
        assert ev.card == "K" + start.trump and not self.has_played[ev.seat]
        assert by == (BOTH if ev.announced else ONLY[ev.seat])  # §E3.2
        assert not self.king_answered[ev.seat]  # offered once
        self.king_answered[ev.seat] = True

    def on_Score(self, ev: Score, by: tuple) -> None:
        assert by == BOTH and self.reached is None
        assert POINTS[ev.reason] == ev.points and ev.points in (1, 2)
        start = self.last_start
        if ev.reason == "king_turn_up":  # §E3.1
            assert ev.seat == start.dealer and start.turn_up[0] == "K"
            assert not self.calls and not self.scores_in_deal
        elif ev.reason == "king":  # §E3.2
            prev = self.events[-2]
            assert isinstance(prev, KingAnnounced) and prev.announced and prev.seat == ev.seat
        else:
            assert sum(self.tricks) == 5
        self.totals[ev.seat] += ev.points
        self.deal_points[ev.seat] += ev.points
        assert ev.scores == self.totals
        assert self.deal_points[ev.seat] <= 3  # §E6.3
        self.scores_in_deal.append(ev)
        if self.totals[ev.seat] >= self.target:  # §E3.3, §E7.3
            self.reached = ev.seat

    def on_CardPlayed(self, ev: CardPlayed, by: tuple) -> None:
        assert by == BOTH and ev.trick == self.trick_no and self.reached is None
        self.played.append(ev.card)
        self.has_played[ev.seat] = True

    def on_TrickWon(self, ev: TrickWon, by: tuple) -> None:
        assert by == BOTH and ev.trick == self.trick_no
        assert ev.cards == self.played[-2:] and len(self.played) == 2 * ev.trick
        lead, follow = ev.cards
        assert ev.winner == ((1 - ev.leader) if wins(lead, follow, self.last_start.trump) else ev.leader)
        self.tricks[ev.winner] += 1
        self.trick_no += 1
        self.last_winner = ev.winner  # §E5: leads the next trick

    def on_DealEnd(self, ev: DealEnd, by: tuple) -> None:
        start = self.last_start
        assert by == BOTH and ev.deal == start.deal and not self.deal_ended
        assert ev.tricks == self.tricks and ev.points == self.deal_points
        assert ev.scores == self.totals and max(ev.points) <= 3
        if ev.ended == "king_point":  # §E3.3: the deal stops at once
            assert self.reached is not None and sum(ev.tricks) < 5
            assert self.scores_in_deal[-1].reason in ("king", "king_turn_up")
        else:
            assert ev.ended == "played" and sum(ev.tricks) == 5
            # §E6.2: who made the first decision a refusal?
            refuser = None
            if self.calls[0].call == "play":
                refuser = start.elder
            elif self.calls[1].call == "refuse":
                refuser = start.dealer
            taker = 0 if ev.tricks[0] >= 3 else 1
            if refuser is not None and ev.tricks[refuser] < 3:
                want = (taker, 2, "refusal")
            elif ev.tricks[taker] == 5:
                want = (taker, 2, "vole")  # §E6.1
            else:
                want = (taker, 1, "tricks")
            last = self.scores_in_deal[-1]
            assert (last.seat, last.points, last.reason) == want
            assert [s.reason for s in self.scores_in_deal[:-1]] in ([], ["king"], ["king_turn_up"])
        self.deal_ended = True

    def on_MancheEnd(self, ev: MancheEnd, by: tuple) -> None:
        assert by == BOTH and isinstance(self.events[-2], DealEnd)
        assert self.reached == ev.winner  # ends exactly when the target is reached
        assert ev.scores == self.totals and ev.manche == self.last_start.manche
        assert self.totals[ev.winner] >= self.target > self.totals[1 - ev.winner]
        self.manches[ev.winner] += 1
        assert ev.manches == self.manches and max(self.manches) <= self.needed
        self.last_manche_winner = ev.winner
        self.reached = None
        self.totals = [0, 0]

    # ------------------------------------------------------------------ state

    def check_state(self) -> None:
        m = self.m
        assert self.reached is None  # a reached target always ends the manche at once
        assert m.manches == self.manches
        if m.over:
            assert max(self.manches) == self.needed and m.winner == self.manches.index(self.needed)
            assert m.to_act is None and m.decision is None
            assert m.scores[m.winner] >= self.target > m.scores[1 - m.winner]
        else:
            assert max(self.manches) < self.needed and m.winner is None
            assert m.scores == self.totals
        self.check_conservation()
        self.check_views()
        if not m.over:
            assert (m.to_act, m.decision) == self.expected_turn(), self.flow
            self.check_legal()

    def check_conservation(self) -> None:
        """Every card exactly once: hands, stock, discards, cards played this deal (completed
        tricks and the current one), the turn-up."""
        m = self.m
        where = m.hands[0] + m.hands[1] + m.stock + m.discards[0] + m.discards[1]
        where += self.played + [m.turn_up]
        if sorted(where) != SORTED_PACK:
            raise AssertionError(
                f"cards lost or doubled: {Counter(where) - Counter(PACK_32)}, {Counter(PACK_32) - Counter(where)}"
            )
        assert [tc.card for tc in m.trick] == self.played[len(self.played) - len(m.trick) :]
        assert len(m.trick) == len(self.played) % 2
        assert len(m.stock) == self.stock_left and m.turn_up == self.last_start.turn_up
        for seat in (0, 1):
            on_table = sum(1 for tc in m.trick if tc.seat == seat)
            assert len(m.hands[seat]) == 5 - sum(self.tricks) - on_table

    def check_views(self) -> None:
        m = self.m
        for seat in (0, 1):
            v = m.view(seat)
            assert v.seat == seat and sorted(v.hand) == sorted(m.hands[seat])
            assert (v.dealer, v.elder, v.turn_up, v.stock) == (
                self.last_start.dealer,
                self.last_start.elder,
                self.last_start.turn_up,
                len(m.stock),
            )
            assert v.tricks == self.tricks and v.target == self.target
            assert [tc.card for tc in v.trick] == [tc.card for tc in m.trick]
            # (the whole encoded view is scanned for hidden cards in the test below)

    def check_legal(self) -> None:
        m = self.m
        seat, kind = m.to_act, m.decision
        legal = m.legal_actions()
        assert seat in (0, 1) and legal, (seat, kind, legal)
        start = self.last_start
        hand = m.hands[seat]
        if kind == "propose":
            assert seat == start.elder and legal == ["propose", "play"] and m.stock
        elif kind == "respond":
            assert seat == start.dealer and legal == ["accept", "refuse"]
        elif kind == "king":
            assert legal == ["announce", "decline"]
            assert "K" + start.trump in hand and not self.has_played[seat]
            assert not self.king_answered[seat]
        elif kind == "discard":
            least = 1 if seat == start.elder else 0
            most = min(5, len(m.stock))
            assert most >= 1
            assert len(legal) == sum(comb(len(hand), k) for k in range(least, most + 1))
            sets = {frozenset(a) for a in legal}
            assert len(sets) == len(legal) and all(s <= set(hand) for s in sets)
        else:
            assert kind == "play"
            if not self.has_played[seat] and "K" + start.trump in hand:
                assert self.king_answered[seat]  # §E3.2: offered before the first card
            lead = m.trick[0].card if m.trick else None
            assert len(set(legal)) == len(legal)
            assert set(legal) == legal_plays(hand, lead, start.trump)
            if lead is None:
                assert seat == (start.elder if self.trick_no == 1 else self.last_winner)


# --------------------------------------------------------------------------- drivers


def play(
    seed: int,
    rules: Rules,
    policy_seed: int,
    on_step: Callable[[EcarteMatch, list[Seen], Any], None] | None = None,
) -> tuple[EcarteMatch, list[Seen], list[Any]]:
    """Play a whole match with a seeded random policy; return it, its events and actions."""
    m = EcarteMatch(rules, random.Random(seed))
    seen = m.start()
    all_seen = list(seen)
    actions: list[Any] = []
    if on_step:
        on_step(m, seen, None)
    policy = random.Random(policy_seed)
    while not m.over:
        action = copy.deepcopy(policy.choice(m.legal_actions()))
        seen = m.apply(action)
        actions.append(action)
        all_seen += seen
        if on_step:
            on_step(m, seen, action)
        assert len(actions) < 20_000
    return m, all_seen, actions


def refereed(seed: int, rules: Rules, policy_seed: int) -> Referee:
    ref: Referee | None = None

    def step(m: EcarteMatch, seen: list[Seen], action: Any) -> None:
        nonlocal ref
        if ref is None:
            ref = Referee(m)
        ref.feed(seen)
        ref.check_state()

    play(seed, rules, policy_seed, step)
    assert ref is not None
    return ref


# --------------------------------------------------------------------------- properties


@fast(1000)
@given(seed=SEEDS, rules=RULES, policy_seed=SEEDS)
def test_random_matches_follow_the_rules(seed, rules, policy_seed):
    """Conservation of the 32 cards, legal lists, scores (§E3, §E6), dealer rotation (§E2),
    match end exactly at the target (§E7) and views, after every action."""
    ref = refereed(seed, rules, policy_seed)
    assert ref.m.over and ref.n_deals >= 1


@fast(300)
@given(seed=SEEDS, rules=RULES, policy_seed=SEEDS)
def test_determinism_same_seed_same_actions_same_events(seed, rules, policy_seed):
    m1, seen1, actions = play(seed, rules, policy_seed)
    m2 = EcarteMatch(rules, random.Random(seed))
    seen2 = m2.start()
    for a in actions:
        seen2 += m2.apply(a)
    enc = msgspec.json.encode
    assert [(enc(e), by) for e, by in seen1] == [(enc(e), by) for e, by in seen2]
    assert (m1.winner, m1.scores, m1.manches) == (m2.winner, m2.scores, m2.manches)
    # and a different seed deals differently
    m3 = EcarteMatch(rules, random.Random(seed + 1))
    decks = [e.cards for e, _ in m3.start() if isinstance(e, DeckOrder)]
    assert decks != [e.cards for e, _ in seen1 if isinstance(e, DeckOrder)][:1]


@fast(250)
@given(seed=SEEDS, rules=RULES, policy_seed=SEEDS)
def test_every_legal_action_applies(seed, rules, policy_seed):
    """At some decisions, apply each legal action to a copy: none raises."""
    probe = random.Random(policy_seed ^ 0x5EED)

    def step(m: EcarteMatch, seen: list[Seen], action: Any) -> None:
        if m.over or probe.random() > 0.25:
            return
        legal = m.legal_actions()
        sample = legal if len(legal) <= 6 else probe.sample(legal, 6)
        for a in sample:
            c = clone(m)
            c.apply(copy.deepcopy(a))
            assert c.over or c.legal_actions()

    play(seed, rules, policy_seed, step)


WORDS = ["propose", "play", "accept", "refuse", "announce", "decline"]


def snapshot(m: EcarteMatch) -> bytes:
    """The whole state of ``m`` (attributes, random generator, views, legal list) as bytes:
    cheaper than ``ecarte_positions.snapshot`` and as strict."""
    legal = m.legal_actions() if m.decision is not None else None
    state = {k: v for k, v in vars(m).items() if k != "_legal"}
    return pickle.dumps((state, legal, m.view(0), m.view(1)), protocol=5)


def clone(m: EcarteMatch) -> EcarteMatch:
    return pickle.loads(pickle.dumps(m, protocol=5))


def illegal_candidates(m: EcarteMatch, rng: random.Random) -> list[Any]:
    """Actions of every shape that are not in the legal list."""
    legal = m.legal_actions()
    seat = m.to_act
    hand = m.hands[seat]
    cands: list[Any] = [w for w in WORDS if w not in legal]
    cands += [c for c in rng.sample(PACK_32, 6) if c not in legal]
    cands += [c for c in hand if c not in legal]
    cands += [None, 5, "", "Xx", {"card": hand[0]} if hand else {}]
    lists = [[], list(hand), [hand[0], hand[0]] if hand else ["7c", "7c"], [rng.choice(PACK_32)]]
    lists.append(rng.sample(hand, min(len(hand), len(m.stock) + 1)) if hand else [])
    legal_sets = {frozenset(a) for a in legal if isinstance(a, list)}
    for ls in lists:
        if m.decision != "discard" or (frozenset(ls) not in legal_sets or len(set(ls)) != len(ls)):
            cands.append(ls)
    return cands


@fast(300)
@given(seed=SEEDS, rules=RULES, policy_seed=SEEDS)
def test_illegal_actions_raise_and_change_nothing(seed, rules, policy_seed):
    probe = random.Random(policy_seed ^ 0xBAD)

    def step(m: EcarteMatch, seen: list[Seen], action: Any) -> None:
        if m.over:
            with pytest.raises(IllegalAction):
                m.apply("play")
            return
        short = m.decision == "discard" and len(m.stock) < 5
        if probe.random() > 0.15 and not short:
            return
        cands = illegal_candidates(m, probe)
        tries = probe.sample(cands, min(3, len(cands)))
        if short:  # always try one card more than the stock holds (§E4.3)
            tries.append(m.hands[m.to_act][: len(m.stock) + 1])
        for bad in tries:
            before = snapshot(m)
            with pytest.raises(IllegalAction) as info:
                m.apply(bad)
            assert snapshot(m) == before, bad
            err = info.value
            if m.decision == "play" and isinstance(bad, str) and bad in PACK_32:
                assert not isinstance(err, WrongDecision)
                hand = m.hands[m.to_act]
                if bad not in hand:
                    assert err.rule == "ecarte.md §E5"
                else:
                    lead = m.trick[0].card
                    has_suit = any(c[1] == lead[1] for c in hand)
                    assert err.rule == ("ecarte.md §E5.1" if has_suit else "ecarte.md §E5.2")
            elif m.decision == "discard" and isinstance(bad, list) and all(isinstance(c, str) for c in bad):
                assert not isinstance(err, WrongDecision) and err.rule == "ecarte.md §E4.3"
            elif m.decision in ("propose", "respond", "king"):
                assert isinstance(err, WrongDecision)

    play(seed, rules, policy_seed, step)


@fast(500)
@given(seed=SEEDS, rules=RULES, policy_seed=SEEDS)
def test_views_and_events_never_show_hidden_cards(seed, rules, policy_seed):
    """A seat's view never holds a card of the opponent's hand, the stock or the opponent's
    discards; the events a seat may see show the opponent's cards only once played or (the
    king of trumps) announced."""

    def step(m: EcarteMatch, seen: list[Seen], action: Any) -> None:
        for ev, by in seen:
            for seat in by:
                if isinstance(ev, HandDealt):
                    assert ev.seat == seat
                elif isinstance(ev, Exchange) and ev.seat != seat:
                    assert ev.discarded is None and ev.drawn is None
                elif isinstance(ev, KingAnnounced) and ev.seat != seat:
                    assert ev.announced
                else:
                    assert not isinstance(ev, DeckOrder)
        for seat in (0, 1):
            v = m.view(seat)
            hidden = set(m.hands[1 - seat]) | set(m.stock) | set(m.discards[1 - seat])
            assert not cards_in(v) & hidden
            assert set(v.hand) == set(m.hands[seat])

    play(seed, rules, policy_seed, step)
