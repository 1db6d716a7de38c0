"""Property tests: thousands of seeded random Piquet matches checked against
``../shared/rules/piquet.md`` after every action.

Each example draws a match seed, a rule set (pack 32/36, packets 2/3, rubicon/cent) and a policy
seed, then plays the match to the end with a seeded random policy that picks a legal action by
index. :class:`Referee` is an independent re-statement of the rules (dealing, exchange,
declarations, play, reckoning with pique/repique, match end): it follows the events and the
engine's state and fails on the first disagreement. :class:`SeatKnowledge` replays what each
seat is told and fails if a seat is ever shown a card it could not know.
"""

from __future__ import annotations

import copy
import pickle
import random
import re
from collections import Counter
from collections.abc import Callable
from contextlib import nullcontext
from math import comb
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import arena.games.piquet as piquet_mod
from arena.cards import RANKS_32, RANKS_36, make_pack
from arena.cards import shuffled as real_shuffled
from arena.games.base import BOTH, NOBODY, ONLY, IllegalAction, Seen, WrongDecision
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
from tests.conftest import examples

try:
    from piquet_positions import deal_positions
except ImportError:  # tests/ imported as a package
    from tests.piquet_positions import deal_positions

SEEDS = st.integers(min_value=0, max_value=2**64 - 1)
RULES = st.builds(
    Rules,
    pack=st.sampled_from([32, 36]),
    packets=st.sampled_from([2, 3]),
    scoring=st.sampled_from(["rubicon", "cent"]),
)


def fast(n: int) -> settings:
    return settings(max_examples=examples(n), deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow])


# --------------------------------------------------------------------------- the rules again

ORDER = "6789TJQKA"  # §P1, low to high (no 6 in the 32-card pack)
VALUE = {"A": 11, "K": 10, "Q": 10, "J": 10, "T": 10, "9": 9, "8": 8, "7": 7, "6": 6}  # §P1
HONOURS = set("AKQJT")  # §P6.2, and the ranks that form sets (§P5.3)
COURT = set("KQJ")  # §P3
SEQ_POINTS = {3: 3, 4: 4, 5: 15, 6: 16, 7: 17, 8: 18, 9: 19}  # §P5.2
SEQ_NAME = {3: "tierce", 4: "quart", 5: "quint", 6: "sixième", 7: "septième", 8: "huitième", 9: "neuvième"}
WORD = {"A": "ace", "K": "king", "Q": "queen", "J": "jack", "T": "ten", "9": "nine", "8": "eight", "7": "seven",
        "6": "six"}
ALLOWED = {  # §P3-§P7: every (reason, points) a Score may carry; a point is 21 (6 7 8) to 81 (nine cards)
    "carte_blanche": {10}, "point": set(range(2, 9)), "sequence": set(SEQ_POINTS.values()), "set": {3, 14},
    "lead": {1}, "trick": {1}, "last_trick": {1}, "cards": {10}, "capot": {40}, "pique": {30}, "repique": {60},
}
COMBO_REASONS = {"carte_blanche", "point", "sequence", "set"}
PLAY_REASONS = {"lead", "trick", "last_trick"}


def rank(card: str) -> int:
    return ORDER.index(card[0])


def point(hand: list[str]) -> tuple[int, int]:
    """§P5.1: (total, length) of the longest suit; of two equally long, the higher total."""
    best = (0, 0)
    for s in "cdhs":
        cards = [c for c in hand if c[1] == s]
        best = max(best, (len(cards), sum(VALUE[c[0]] for c in cards)))
    return best[1], best[0]


def sequences(hand: list[str]) -> list[tuple[int, int]]:
    """§P5.2: (length, top rank) of every run of 3+ consecutive cards of a suit, best first."""
    out = []
    for s in "cdhs":
        held = [rank(c) for c in hand if c[1] == s]
        run_len = 0
        for r in range(len(ORDER) + 1):
            if r < len(ORDER) and r in held:
                run_len += 1
            else:
                if run_len >= 3:
                    out.append((run_len, r - 1))
                run_len = 0
    return sorted(out, reverse=True)


def sets(hand: list[str]) -> list[tuple[int, int]]:
    """§P5.3: (4 or 3, rank) for quatorzes and trios of A K Q J T, best first."""
    counts = Counter(c[0] for c in hand)
    return sorted(((min(n, 4), ORDER.index(r)) for r, n in counts.items() if r in HONOURS and n >= 3), reverse=True)


def seq_name(s: tuple[int, int]) -> str:
    return f"{SEQ_NAME[s[0]]} to the {WORD[ORDER[s[1]]]}"


def set_name(s: tuple[int, int]) -> str:
    return f"{'quatorze' if s[0] == 4 else 'trio'} of {WORD[ORDER[s[1]]]}s"


def legal_plays(hand: list[str], lead: str | None) -> set[str]:
    """§P6.1: follow suit if able, otherwise anything (anything to lead)."""
    if lead is None:
        return set(hand)
    return {c for c in hand if c[1] == lead[1]} or set(hand)


CARD_RE = re.compile(rb'"([6789TJQKA][cdhs])"')


def cards_in(obj: Any) -> set[str]:
    """Every card (a JSON string value like ``"Ks"``) anywhere in ``obj`` once encoded."""
    return {c.decode() for c in CARD_RE.findall(msgspec.json.encode(obj))}


# --------------------------------------------------------------------------- hidden information


class SeatKnowledge:
    """The cards one seat may know (a Piquet variant of ``tests/hidden.py``): the draw for
    dealer, its own hand and draws, a carte blanche shown (§P3), the talon cards it looked at
    (§P4.1, its own look only), the talon turned up (§P4.3), cards played. Declarations and
    scores reveal no card (§P5.4). Discards are known to their owner only (§P4.3)."""

    def __init__(self, seat: int) -> None:
        self.seat = seat
        self.known: set[str] = set()

    def _leak(self, what: str, obj: Any, cards: set[str]) -> None:
        raise AssertionError(f"seat {self.seat} was told {sorted(cards)} it cannot know, in {what}: {obj}")

    def event(self, ev: dict[str, Any], cards: set[str]) -> None:
        """Check one event (as sent on the wire, holding ``cards``) routed to this seat, then
        learn from it."""
        kind, me = ev["kind"], self.seat
        if kind == "deck":
            self._leak("the deck order", ev, cards)
        elif kind == "deal_start":
            self.known = set()  # a new pack
        elif kind in ("dealer_draw", "carte_blanche", "talon_exposed", "play", "trick"):
            self.known |= cards  # public
        elif kind in ("hand", "look"):  # its hand, or the talon cards it looked at
            if ev["seat"] != me:
                self._leak(f"the other seat's {kind}", ev, cards)
            self.known |= cards
        elif kind == "exchange" and (ev["discarded"] is not None or ev["drawn"] is not None):
            if ev["seat"] != me:
                self._leak("another seat's exchange", ev, cards)
            self.known |= set(ev["drawn"])
        elif kind in ("declaration", "score") and cards:
            self._leak(f"a {kind} (reveals no card)", ev, cards)
        unknown = cards - self.known
        if unknown:
            self._leak(f"event {kind}", ev, unknown)

    def view(self, view: Any) -> None:
        unknown = cards_in(view) - self.known
        if unknown:
            self._leak("its view", view, unknown)


# --------------------------------------------------------------------------- referee


class Referee:
    """Follows one match's events and state; asserts the rules after every action."""

    def __init__(self, m: PiquetMatch) -> None:
        self.m = m
        self.rules: Rules = m.rules
        self.size = m.rules.pack
        self.pack = make_pack(RANKS_36 if self.size == 36 else RANKS_32)
        self.most = 8 if self.size == 36 else 5  # §P4.1
        self.totals = [0, 0]
        self.deal = 0
        self.deals = 6 if self.rules.scoring == "rubicon" else 0
        self.first_dealer: int | None = None
        self.dealer: int | None = None
        self.over = False
        self.know = [SeatKnowledge(0), SeatKnowledge(1)]
        self.phase = "draw"  # the draw for first dealer (§P2.1)
        self.expected: list[tuple[int, int, str, str | None]] = []
        self.cb_pending: set[int] = set()
        self.match_end_expected = False
        self.n_events = 0
        self.stats: Counter[str] = Counter()

    # ------------------------------------------------------------------ per deal

    def new_deal(self, ev: DealStart) -> None:
        self.deal += 1
        assert ev.deal == self.deal and ev.manche == 1 and ev.turn_up is None and ev.trump is None
        if self.deal == 1:
            assert self.first_dealer is not None and ev.dealer == self.first_dealer  # §P2.1
        else:
            assert ev.dealer == 1 - self.dealer  # §P2.1: the deal alternates
        self.dealer, self.elder = ev.dealer, 1 - ev.dealer
        assert ev.elder == self.elder
        assert ev.stock == self.size - 24  # §P2.2
        self.hands: list[list[str]] = [[], []]
        self.talon: list[str] = []
        self.discards: list[list[str]] = [[], []]
        self.seen_cards: list[list[str]] = [[], []]
        self.exposed: list[str] = []
        self.exchanged = [0, 0]
        self.pts = [0, 0]
        self.bonus = False
        self.expected: list[tuple[int, int, str, str | None]] = []
        self.cb_pending: set[int] = set()
        self.dealt = 0  # HandDealt events seen (seat 0 then seat 1)
        self.tricks = [0, 0]
        self.trick_no = 1
        self.trick: list[tuple[int, str]] = []
        self.played: list[str] = []
        self.leader = self.elder
        self.declared: list[str] = []

    def score(self, seat: int, points: int, reason: str, detail: str | None = None) -> None:
        """Expect a Score event, then apply §P7.2-§P7.3 (repique, pique) to it."""
        self.expected.append((seat, points, reason, detail))
        self.pts[seat] += points
        if self.bonus or self.pts[seat] < 30 or self.pts[1 - seat] != 0:
            return
        if reason in COMBO_REASONS:  # 30 from carte blanche and combinations alone
            self.bonus = True
            self.score(seat, 60, "repique")
        elif reason in PLAY_REASONS and seat == self.elder:  # never cards or capot
            self.bonus = True
            self.score(seat, 30, "pique")

    def blanche(self, seat: int) -> bool:
        return not any(c[0] in COURT for c in self.hands[seat])

    # ------------------------------------------------------------------ events

    def feed(self, seen: list[Seen], answered: tuple[str, Any] | None = None) -> None:
        """Check the events of one action (``answered``: the decision kind and the action)."""
        self.answer = answered
        self.look_shown = False
        if answered and answered[0] in ("look", "expose"):
            assert self.phase == answered[0]
            self.phase = answered[0] + "_answered"
        for ev, by in seen:
            self.n_events += 1
            assert not self.over, "event after the match score"
            if not isinstance(ev, Score):
                assert not self.expected, f"missing scores {self.expected} before {ev}"
            name = "on_" + type(ev).__name__
            getattr(self, name)(ev, by)
            if by:
                wire, cards = msgspec.to_builtins(ev), cards_in(ev)
                for seat in by:
                    self.know[seat].event(wire, cards)
        assert not self.expected, f"missing scores {self.expected}"
        if answered and answered[0] == "look":  # §P4.1: shown only if he chose to look
            assert self.look_shown == (answered[1] == "look")
        if self.phase == "look_answered":  # younger holds no carte blanche: his turn now
            self.to_younger()
        assert not self.cb_pending, "a carte blanche was not shown before its holder's discard"
        assert self.phase != "expose_answered", "no declarations after the expose decision"

    def on_DealerDraw(self, ev: DealerDraw, by: tuple) -> None:
        assert by == BOTH and self.deal == 0 and len(ev.cards) == 2 and set(ev.cards) <= set(self.pack)
        a, b = (rank(c) for c in ev.cards)
        if a == b:
            assert ev.dealer is None  # §P2.1: equal ranks draw again
        else:
            assert ev.dealer == (0 if a < b else 1)  # the lower card deals
            self.first_dealer = ev.dealer

    def on_DeckOrder(self, ev: DeckOrder, by: tuple) -> None:
        # the shuffled pack of the next deal, for the log only; it comes before DealStart
        assert by == NOBODY and self.phase in ("draw", "between")
        if self.deal:  # the match goes on only if it is not decided (§P8)
            assert self.phase == "between" and not self.match_end_expected
        else:
            assert self.first_dealer is not None
        assert sorted(ev.cards) == sorted(self.pack)
        self.deck = list(ev.cards)
        self.phase = "deck"

    def on_DealStart(self, ev: DealStart, by: tuple) -> None:
        assert by == BOTH and self.phase == "deck"
        self.new_deal(ev)
        epos, dpos = deal_positions(self.rules.packets)  # §P2.2: packets, elder first
        self.hands[self.elder] = sorted(self.deck[p] for p in epos)
        self.hands[self.dealer] = sorted(self.deck[p] for p in dpos)
        self.talon = self.deck[24:]
        self.phase = "hands"

    def on_HandDealt(self, ev: HandDealt, by: tuple) -> None:
        assert by == ONLY[ev.seat] and self.phase == "hands" and ev.seat == self.dealt
        assert sorted(ev.cards) == self.hands[ev.seat]
        self.dealt += 1
        if ev.seat == 1:
            self.phase = "elder_discard"
            if self.blanche(self.elder):
                self.cb_pending.add(self.elder)

    def on_CarteBlanche(self, ev: CarteBlanche, by: tuple) -> None:
        # §P3: shown to both, before the holder's discard, and only for a hand without K Q J
        if self.phase == "look_answered":  # elder's exchange is over: younger's turn
            self.to_younger()
        assert by == BOTH and ev.seat in self.cb_pending and self.blanche(ev.seat)
        assert sorted(ev.cards) == sorted(self.hands[ev.seat])
        want = "elder_discard" if ev.seat == self.elder else "younger_discard"
        assert self.phase == want, (self.phase, ev)
        self.cb_pending.discard(ev.seat)
        self.stats["carte_blanche"] += 1
        self.score(ev.seat, 10, "carte_blanche")

    def on_Exchange(self, ev: Exchange, by: tuple) -> None:
        seat = ev.seat
        elder = seat == self.elder
        assert self.phase == ("elder_discard" if elder else "younger_discard") and not self.cb_pending
        if by == ONLY[seat]:  # the owner's copy: what he threw and drew (§P4.1-§P4.2)
            n = ev.count
            lo, hi = (1, min(self.most, len(self.talon))) if elder else (0, len(self.talon))
            assert lo <= n <= hi and len(ev.discarded) == n == len(set(ev.discarded))
            assert set(ev.discarded) <= set(self.hands[seat])
            assert ev.drawn == self.talon[:n]  # from the top
            self.hands[seat] = sorted((set(self.hands[seat]) - set(ev.discarded)) | set(ev.drawn))
            self.discards[seat] = list(ev.discarded)
            del self.talon[:n]
            self.exchanged[seat] = n
            assert ev.stock == len(self.talon)
        else:  # the opponent learns the count only (§P4.3)
            assert by == ONLY[1 - seat] and ev.discarded is None and ev.drawn is None
            assert (ev.count, ev.stock) == (self.exchanged[seat], len(self.talon))
            if elder:
                if self.exchanged[seat] < self.most:
                    self.phase = "look"
                else:
                    self.to_younger()
            elif self.talon:
                self.phase = "expose"
            else:
                self.declare()

    def to_younger(self) -> None:
        self.phase = "younger_discard"
        if self.blanche(self.dealer):
            self.cb_pending.add(self.dealer)

    def on_LookedAt(self, ev: LookedAt, by: tuple) -> None:
        # §P4.1: the cards elder left among his maximum, to him alone
        assert self.phase == "look_answered" and self.answer == ("look", "look")
        assert by == ONLY[self.elder] and ev.seat == self.elder
        assert ev.cards == self.talon[: self.most - self.exchanged[self.elder]]
        self.seen_cards[self.elder] = list(ev.cards)
        self.look_shown = True
        self.stats["look"] += 1

    def on_TalonExposed(self, ev: TalonExposed, by: tuple) -> None:
        assert self.phase == "expose_answered" and self.answer == ("expose", "expose")
        assert by == BOTH and ev.seat == self.dealer and self.talon
        assert ev.cards == self.talon  # the rest of the talon, face up (§P4.3)
        self.exposed = list(ev.cards)
        self.stats["expose"] += 1

    def declare(self) -> None:
        """After the exchange (§P5): point, sequences, sets, elder first."""
        self.phase = "declare"

    def on_Declaration(self, ev: Declaration, by: tuple) -> None:
        assert by == BOTH
        if self.phase == "expose_answered":  # declarations follow the expose decision
            self.phase = "declare"
        assert self.phase == "declare", self.phase
        order = ["point", "sequence", "set"]
        assert ev.category == order[len(self.declared)]  # §P5.4: point, sequences, sets
        self.declared.append(ev.category)
        e, y = self.elder, self.dealer
        he, hy = self.hands[e], self.hands[y]
        if ev.category == "point":
            (te, le), (ty, ly) = point(he), point(hy)
            name_e, name_y = f"point of {le}, {te}", f"point of {ly}, {ty}"
            if te > ty:
                want = (name_e, None, "good", e)
            elif ty > te:
                want = (name_e, name_y, "not_good", y)
            else:
                want = (name_e, name_y, "equal", None)
            assert (ev.elder, ev.younger, ev.result, ev.winner) == want
            if ev.winner is not None:
                total = te if ev.winner == e else ty
                self.score(ev.winner, (total + 5) // 10, "point", want[0] if ev.winner == e else name_y)
            return
        if ev.category == "sequence":
            mine = {e: sequences(he), y: sequences(hy)}
            name = seq_name
            value: Callable[[tuple[int, int]], int] = lambda s: SEQ_POINTS[s[0]]  # noqa: E731
        else:
            mine = {e: sets(he), y: sets(hy)}
            name = set_name
            value = lambda s: 14 if s[0] == 4 else 3  # noqa: E731
        be = mine[e][0] if mine[e] else None
        by_ = mine[y][0] if mine[y] else None
        ne = name(be) if be else None
        ny = name(by_) if by_ else None
        if be is None and by_ is None:
            want = (None, None, "none", None)
        elif by_ is None or (be is not None and be > by_):
            want = (ne, None, "good", e)
        elif be is None or by_ > be:
            want = (ne, ny, "not_good", y)
        else:
            want = (ne, ny, "equal", None)  # §P5.2: an exact tie cancels all
            self.stats["equal_" + ev.category] += 1
        assert (ev.elder, ev.younger, ev.result, ev.winner) == want, (ev, want, he, hy)
        if ev.winner is not None:  # the winner scores his best and every other one (§P5.2-3)
            for combo in mine[ev.winner]:
                self.score(ev.winner, value(combo), ev.category, name(combo))
        if ev.category == "set":
            self.phase = "play"

    def on_Score(self, ev: Score, by: tuple) -> None:
        assert by == BOTH
        assert ev.points in ALLOWED[ev.reason], ev  # §P3-§P7
        assert self.expected, f"unexpected {ev}"
        want = self.expected.pop(0)
        got = (ev.seat, ev.points, ev.reason, ev.detail if ev.reason in ("point", "sequence", "set") else None)
        assert got == want, (got, want)
        self.totals[ev.seat] += ev.points
        assert ev.scores == self.totals
        self.stats[ev.reason] += 1

    def on_CardPlayed(self, ev: CardPlayed, by: tuple) -> None:
        assert by == BOTH and self.phase == "play" and ev.trick == self.trick_no
        lead = self.trick[0][1] if self.trick else None
        to_act = self.leader if lead is None else 1 - self.leader
        assert ev.seat == to_act
        assert ev.card in legal_plays(self.hands[ev.seat], lead)  # §P6.1
        self.hands[ev.seat].remove(ev.card)
        self.trick.append((ev.seat, ev.card))
        self.played.append(ev.card)
        if lead is None and ev.card[0] in HONOURS:
            self.score(ev.seat, 1, "lead")  # §P6.2

    def on_TrickWon(self, ev: TrickWon, by: tuple) -> None:
        assert by == BOTH and len(self.trick) == 2 and ev.trick == self.trick_no
        (ls, lc), (fs, fc) = self.trick
        assert ev.leader == ls and ev.cards == [lc, fc]
        won = fs if fc[1] == lc[1] and rank(fc) > rank(lc) else ls  # §P6.1, no trumps
        assert ev.winner == won
        self.tricks[won] += 1
        self.trick = []
        self.leader = won
        if won == fs and fc[0] in HONOURS:
            self.score(won, 1, "trick")  # §P6.2: won as second player with A K Q J T
        if self.trick_no == 12:
            self.score(won, 1, "last_trick")
            t = self.tricks
            if 12 in t:
                self.score(t.index(12), 40, "capot")  # §P6.3: instead of the cards
            elif t[0] != t[1]:
                self.score(0 if t[0] > t[1] else 1, 10, "cards")
            self.phase = "deal_end"
        self.trick_no += 1

    def on_DealEnd(self, ev: DealEnd, by: tuple) -> None:
        assert by == BOTH and self.phase == "deal_end" and ev.deal == self.deal and ev.ended == "played"
        assert ev.tricks == self.tricks and sum(ev.tricks) == 12
        assert ev.points == self.pts and ev.scores == self.totals  # deal points = sum of its scores
        assert all(not h for h in self.hands) and len(self.played) == 24
        self.phase = "between"
        self.match_end_expected = self.match_should_end()

    def match_should_end(self) -> bool:
        a, b = self.totals
        if self.rules.scoring == "cent":  # §P8.3
            return max(a, b) >= 100 and a != b
        if self.deal < self.deals:
            return False
        if a != b:
            return True
        if self.deals == 6:  # §P8.2: a tie after six deals: each deals once more
            self.deals = 8
            self.stats["rubicon_tie"] += 1
            return False
        return True  # still equal: a draw

    def on_MatchScore(self, ev: MatchScore, by: tuple) -> None:
        assert by == BOTH and self.phase == "between" and self.match_end_expected
        a, b = self.totals
        assert ev.totals == self.totals
        if a == b:
            assert (ev.winner, ev.margin, ev.rubicon) == (None, 0, False) and self.deal == 8
            self.stats["draw"] += 1
        else:
            w = 0 if a > b else 1
            hi, lo = max(a, b), min(a, b)
            assert ev.winner == w
            if self.rules.scoring == "rubicon":  # §P8.2: 100 + difference, or 100 + sum under 100
                assert ev.rubicon == (lo < 100)
                assert ev.margin == (100 + hi + lo if lo < 100 else 100 + hi - lo)
                self.stats["rubicon_under" if lo < 100 else "rubicon_over"] += 1
            else:
                assert ev.rubicon is False and hi >= 100
        self.over = True

    # ------------------------------------------------------------------ state

    def expected_turn(self) -> tuple[int | None, str | None]:
        if self.over:
            return None, None
        if self.phase == "between":
            raise AssertionError("a deal ended without a new deal or the match score")
        if self.phase == "elder_discard":
            return self.elder, "discard"
        if self.phase == "look":
            return self.elder, "look"
        if self.phase == "younger_discard":
            return self.dealer, "discard"
        if self.phase == "expose":
            return self.dealer, "expose"
        assert self.phase == "play", self.phase
        return (self.leader if not self.trick else 1 - self.leader), "play"

    def check_state(self) -> None:
        m = self.m
        assert (m.to_act, m.decision) == self.expected_turn(), (self.phase, m.to_act, m.decision)
        assert m.over == self.over and m.scores == self.totals
        if self.over:
            a, b = self.totals
            assert m.winner == (None if a == b else (0 if a > b else 1))
            return
        assert m.winner is None
        self.check_conservation()
        self.check_views()
        self.check_legal()

    def check_conservation(self) -> None:
        """Every card of the pack exactly once: hands, talon, discards, cards of this deal's
        completed tricks and of the current trick."""
        m = self.m
        where = m.hands[0] + m.hands[1] + m.talon + m.discards[0] + m.discards[1] + self.played
        if sorted(where) != sorted(self.pack):
            c = Counter(where)
            c.subtract(self.pack)
            raise AssertionError(f"cards lost or doubled: {+c} / {-c}")
        assert [t.card for t in m.trick] == [c for _, c in self.trick]
        assert [sorted(h) for h in m.hands] == [sorted(h) for h in self.hands]
        assert m.talon == self.talon and m.discards == self.discards

    def check_views(self) -> None:
        m = self.m
        for seat in (0, 1):
            v = m.view(seat)
            assert v.seat == seat and (v.dealer, v.elder, v.deal) == (self.dealer, self.elder, self.deal)
            assert (v.deals, v.scoring) == (self.deals, self.rules.scoring)
            assert sorted(v.hand) == sorted(self.hands[seat]) and v.talon == len(self.talon)
            assert v.discards == self.discards[seat] and v.seen == self.seen_cards[seat]
            assert v.exposed == self.exposed and v.exchanged == self.exchanged and v.tricks == self.tricks
            assert [(t.seat, t.card) for t in v.trick] == self.trick
            # scores: the totals before this deal; deal_scores: this deal's points so far
            assert v.deal_scores == self.pts
            assert [s + d for s, d in zip(v.scores, v.deal_scores)] == self.totals
            self.know[seat].view(v)

    def check_legal(self) -> None:
        m = self.m
        legal = m.legal_actions()
        assert legal, (m.to_act, m.decision)
        seat, kind = m.to_act, m.decision
        hand = m.hands[seat]
        if kind == "discard":
            lo, hi = (1, min(self.most, len(self.talon))) if seat == self.elder else (0, len(self.talon))
            assert len(legal) == sum(comb(len(hand), k) for k in range(lo, hi + 1))
            assert len(legal[0]) == lo and len(legal[-1]) == hi
            assert set(legal[-1]) <= set(hand) and len(set(legal[-1])) == hi
        elif kind == "look":
            assert legal == ["look", "pass"]
        elif kind == "expose":
            assert legal == ["expose", "keep"] and self.talon
        else:
            lead = self.trick[0][1] if self.trick else None
            assert len(set(legal)) == len(legal) and set(legal) == legal_plays(hand, lead)


# --------------------------------------------------------------------------- drivers


def pick(legal: list[Any], rng: random.Random, kind: str | None) -> Any:
    """A legal action by index: uniform, but discards favour small exchanges a third of the time
    (the list is ordered by size, so the first 13 entries discard 0 or 1 card)."""
    if kind == "discard" and rng.random() < 0.33:
        return copy.deepcopy(legal[rng.randrange(min(13, len(legal)))])
    return copy.deepcopy(legal[rng.randrange(len(legal))])


def blanche_shuffle(packets: int, which: int) -> Callable:
    """A ``shuffled`` that deals the elder's (``which`` 0) or the dealer's (1) positions
    twelve cards without K Q J: carte blanche in every deal (§P3)."""
    positions = deal_positions(packets)[which]

    def shuffle(cards: Any, rng: random.Random) -> list[str]:
        pack = real_shuffled(cards, rng)
        plain = [c for c in pack if c[0] not in COURT][:12]
        rest = iter([c for c in pack if c not in plain])
        mine = iter(plain)
        return [next(mine) if i in positions else next(rest) for i in range(len(pack))]

    return shuffle


def play(
    seed: int,
    rules: Rules,
    policy_seed: int,
    on_step: Callable[[PiquetMatch, list[Seen], tuple[str, Any] | None], None] | None = None,
) -> tuple[PiquetMatch, list[Seen], list[Any]]:
    """Play a whole match with a seeded random policy; return it, its events and actions."""
    m = PiquetMatch(rules, random.Random(seed))
    seen = m.start()
    all_seen = list(seen)
    actions: list[Any] = []
    if on_step:
        on_step(m, seen, None)
    policy = random.Random(policy_seed)
    while not m.over:
        kind = m.decision
        action = pick(m.legal_actions(), policy, kind)
        seen = m.apply(action)
        actions.append(action)
        all_seen += seen
        if on_step:
            on_step(m, seen, (kind, action))
        assert len(actions) < 5_000
    return m, all_seen, actions


def refereed(seed: int, rules: Rules, policy_seed: int) -> Referee:
    ref: Referee | None = None

    def step(m: PiquetMatch, seen: list[Seen], answered: tuple[str, Any] | None) -> None:
        nonlocal ref
        if ref is None:
            ref = Referee(m)
        ref.feed(seen, answered)
        ref.check_state()

    play(seed, rules, policy_seed, step)
    assert ref is not None and ref.over
    return ref


# --------------------------------------------------------------------------- properties

TOTALS: Counter[str] = Counter()


@fast(700)
@given(seed=SEEDS, rules=RULES, policy_seed=SEEDS, blanche=st.sampled_from([None, None, None, 0, 1]))
def test_random_matches_follow_the_rules(seed, rules, policy_seed, blanche):
    """After every action: conservation of the pack, the legal list, whose turn, the dealing
    (§P2), exchange (§P4), carte blanche (§P3), declarations (§P5), play (§P6), every score and
    bonus re-derived (§P7), deal and match totals and the match end (§P8), both views, and that
    no seat is told a card it cannot know. ``blanche`` deals one seat a carte blanche every
    deal (the pack is rearranged), which random packs almost never do."""
    ctx = pytest.MonkeyPatch.context() if blanche is not None else nullcontext()
    with ctx as mp:
        if mp is not None:
            mp.setattr(piquet_mod, "shuffled", blanche_shuffle(rules.packets, blanche))
        ref = refereed(seed, rules, policy_seed)
    assert ref.over and ref.deal >= 1
    TOTALS.update(ref.stats)
    TOTALS["matches"] += 1


def test_zz_the_random_matches_met_every_rule():
    """The property above saw every kind of event it checks (run after it, in file order).
    Pique (about 1 match in 100) and the rubicon tie (1 in 200) are too rare to insist on here;
    test_piquet_rules.py plays them exactly. Run in another process than that property (``make
    test`` spreads the tests over two), it plays the property's matches here first."""
    if TOTALS["matches"] < 100:
        test_random_matches_follow_the_rules()  # the @given test: its whole run of examples
    assert TOTALS["matches"] >= 100, TOTALS
    for what in ("carte_blanche", "look", "expose", "point", "sequence", "set", "lead", "trick", "last_trick",
                 "cards", "capot", "repique", "equal_sequence", "rubicon_under", "rubicon_over"):
        assert TOTALS[what] > 0, (what, TOTALS)


@fast(250)
@given(seed=SEEDS, rules=RULES, policy_seed=SEEDS)
def test_determinism_same_seed_same_actions_same_events(seed, rules, policy_seed):
    m1, seen1, actions = play(seed, rules, policy_seed)
    m2 = PiquetMatch(rules, random.Random(seed))
    seen2 = m2.start()
    for a in actions:
        seen2 += m2.apply(copy.deepcopy(a))
    enc = msgspec.json.encode
    assert [(enc(e), by) for e, by in seen1] == [(enc(e), by) for e, by in seen2]
    assert (m1.winner, m1.scores, m1.margin) == (m2.winner, m2.scores, m2.margin)
    m3 = PiquetMatch(rules, random.Random(seed + 1))  # another seed deals differently
    decks = [e.cards for e, _ in m3.start() if isinstance(e, DeckOrder)]
    assert decks != [e.cards for e, _ in seen1 if isinstance(e, DeckOrder)][:1]


def clone(m: PiquetMatch) -> PiquetMatch:
    """A deep copy of ``m`` without its cached legal list (thousands of discards)."""
    state = {k: v for k, v in vars(m).items() if k != "_legal"}
    c = PiquetMatch.__new__(PiquetMatch)
    vars(c).update(pickle.loads(pickle.dumps(state, protocol=5)))
    c._legal = None
    return c


@fast(120)
@given(seed=SEEDS, rules=RULES, policy_seed=SEEDS)
def test_every_legal_action_applies(seed, rules, policy_seed):
    """At some decisions, apply legal actions (the first, the last and random ones) to copies:
    none raises, and the copy then has a decision pending or is over."""
    probe = random.Random(policy_seed ^ 0x5EED)

    def step(m: PiquetMatch, seen: list[Seen], answered: tuple[str, Any] | None) -> None:
        if m.over or (m.decision == "play" and probe.random() > 0.1):
            return
        legal = m.legal_actions()
        sample = [legal[0], legal[-1], legal[probe.randrange(len(legal))]]
        for a in sample:
            c = clone(m)
            c.apply(copy.deepcopy(a))
            assert c.over or c.legal_actions()

    play(seed, rules, policy_seed, step)


WORDS = ["look", "pass", "expose", "keep"]


def snapshot(m: PiquetMatch) -> bytes:
    """The whole state of ``m`` (attributes, random generator, views) and the size of its legal
    list (a function of the state) as bytes."""
    legal = len(m.legal_actions()) if m.decision is not None else None
    state = {k: v for k, v in vars(m).items() if k != "_legal"}
    return pickle.dumps((state, legal, m.view(0), m.view(1)), protocol=5)


def illegal_candidates(m: PiquetMatch, rng: random.Random) -> list[Any]:
    """Actions of every shape that are not legal now."""
    legal = m.legal_actions()
    hand = m.hands[m.to_act]
    other = m.hands[1 - m.to_act]
    cands: list[Any] = [w for w in WORDS if w not in legal]
    cands += [c for c in other[:2]] + [None, 7, "", "Xx", {"card": hand[0]}]
    if m.decision == "play":
        cands += [c for c in hand if c not in legal][:3]
        cands.append([hand[0]])
    if m.decision == "discard":
        most = min(8 if m.rules.pack == 36 else 5, len(m.talon)) if m.to_act == m.elder else len(m.talon)
        cands += [hand[: most + 1], [hand[0], hand[0]], [other[0]], hand[0]]
        if m.to_act == m.elder:
            cands.append([])
    return cands


@fast(150)
@given(seed=SEEDS, rules=RULES, policy_seed=SEEDS)
def test_illegal_actions_raise_and_change_nothing(seed, rules, policy_seed):
    probe = random.Random(policy_seed ^ 0xBAD)

    def step(m: PiquetMatch, seen: list[Seen], answered: tuple[str, Any] | None) -> None:
        if m.over:
            with pytest.raises(IllegalAction):
                m.apply("pass")
            return
        if m.decision == "play" and probe.random() > 0.1:
            return
        cands = illegal_candidates(m, probe)
        for bad in probe.sample(cands, min(4, len(cands))):
            before = snapshot(m)
            with pytest.raises(IllegalAction) as info:
                m.apply(bad)
            assert snapshot(m) == before, bad
            err = info.value
            if m.decision == "play" and isinstance(bad, str) and len(bad) == 2:
                assert not isinstance(err, WrongDecision) and err.rule == "piquet.md §P6.1"
            elif m.decision == "discard" and isinstance(bad, list) and all(isinstance(c, str) for c in bad):
                assert not isinstance(err, WrongDecision) and err.rule.startswith("piquet.md §P4")
            elif m.decision in ("look", "expose"):
                assert isinstance(err, WrongDecision)

    play(seed, rules, policy_seed, step)
