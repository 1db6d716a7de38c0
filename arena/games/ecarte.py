"""Écarté: one match (partie) as a pure state machine, per ``../shared/rules/ecarte.md``.

Decision kinds (``EcarteMatch.decision``) and their legal actions:

======== ====================== =========================================================
kind     who                    legal actions
======== ====================== =========================================================
propose  elder (§E4.1)          ``"propose"``, ``"play"`` (play without proposing)
respond  dealer (§E4.2)         ``"accept"``, ``"refuse"``
discard  elder, then dealer     lists of cards: every subset of the hand of size 1..k for
         (§E4.3, §E4.4)         elder, 0..k for the dealer, k = min(5, stock)
king     holder of the trump    ``"announce"``, ``"decline"``: offered just before his first
         king (§E3.2)           card of the deal
play     §E5                    the cards the obligations allow, in hand order
======== ====================== =========================================================

The dealer's discard is skipped when elder's exchange emptied the stock (his only legal action
would be to discard nothing). Every other decision is asked even when only one action is legal.

Randomness (all from the ``random.Random`` given): with ``target = "turn-up"`` a pack is
shuffled and its top card sets the target (§E7.1); then packs are shuffled for the draw for
first dealer until the two cards differ in rank (§E2.1); then one shuffled pack per deal.
Whatever the players do, deal ``k`` of a seed is therefore the same pack with the same dealer:
the two matches of a duplicate pair deal the same cards, deal by deal.

``Rules.deals`` > 0 (the duplicate-deals format, not a rule of the game): the match is exactly
that many deals, the dealer alternating every deal (§E2.2); points accumulate with no target
(the king and vole still score as in §E3, §E6), the higher total wins, equal totals draw.
"""

from __future__ import annotations

import random
from typing import Any, ClassVar, TypeVar

from arena.cards import PACK_32, Card, shuffled
from arena.games.base import (
    BOTH,
    NOBODY,
    ONLY,
    IllegalAction,
    Seen,
    WrongDecision,
    check_choice,
    exchange,
    expand_choice,
    first_choice,
    quote,
    take_pack,
)
from protocol.messages import (
    Call,
    CallWord,
    CardPlayed,
    Choose,
    DealEnd,
    DealerDraw,
    DealStart,
    DeckOrder,
    EcarteView,
    HandDealt,
    KingAnnounced,
    MancheEnd,
    Rules,
    Score,
    TargetSet,
    TrickCard,
    TrickWon,
)

W = TypeVar("W", bound=str)  # one of the words a decision takes

_PROPOSE: tuple[CallWord, CallWord] = ("propose", "play")
"""The words of a ``propose`` decision (§E4.1)."""
_RESPOND: tuple[CallWord, CallWord] = ("accept", "refuse")
"""The words of a ``respond`` decision (§E4.2)."""

RANK_ORDER = "789TAJQK"
"""ecarte.md §E1, low to high: 7 8 9 T A J Q K (the ace ranks between the ten and the jack)."""
RANK = {r: i for i, r in enumerate(RANK_ORDER)}

DEAL_PATTERNS: dict[str, tuple[int, ...]] = {"3-2": (3, 2), "2-3": (2, 3), "2-2-1": (2, 2, 1)}
"""ecarte.md §E2.4: packet sizes, each dealt to elder then to the dealer."""

TURN_UP_TARGET = {"A": 11, "K": 10, "Q": 10, "J": 10, "T": 10, "9": 9, "8": 8, "7": 7}
"""ecarte.md §E7.1: the target set by the turned card (A = 11, K Q J = 10, others their number)."""


def card_sort_key(card: Card) -> tuple[str, int]:
    """Hand order: by suit (c d h s), then by Écarté rank low to high."""
    return card[1], RANK[card[0]]


_HAND_ORDER = {c: i for i, c in enumerate(sorted(PACK_32, key=card_sort_key))}.__getitem__
"""``card_sort_key`` as one precomputed integer per card (hands are sorted on every draw)."""


def trick_winner(lead: Card, follow: Card, trump: str) -> int:
    """Return 0 if the ``lead`` card wins the trick, 1 if ``follow`` does (ecarte.md §E5).

    The higher card of the suit led wins, unless a trump was played to a plain-suit lead.
    """
    if follow[1] == lead[1]:
        return 1 if RANK[follow[0]] > RANK[lead[0]] else 0
    return 1 if follow[1] == trump else 0


def legal_follows(hand: list[Card], lead: Card, trump: str) -> list[Card]:
    """The cards the second player may play to ``lead`` (ecarte.md §E5.1-§E5.3).

    Follow suit and win if able; if void in the suit led, trump if able; otherwise anything.
    """
    suit = lead[1]
    same = [c for c in hand if c[1] == suit]
    if same:
        lead_rank = RANK[lead[0]]
        higher = [c for c in same if RANK[c[0]] > lead_rank]
        return higher or same
    trumps = [c for c in hand if c[1] == trump]
    return trumps or list(hand)


def validate_rules(rules: Rules) -> None:
    """Raise ``ValueError`` if ``rules`` is not an Écarté rule set (§E2.4, §E7)."""
    if rules.deal_pattern not in DEAL_PATTERNS:
        raise ValueError(f"deal_pattern must be one of {', '.join(DEAL_PATTERNS)}")
    if rules.target not in (5, 7, "turn-up"):
        raise ValueError("target must be 5, 7 or 'turn-up' (ecarte.md §E7.1)")
    if rules.manches not in (1, 3):
        raise ValueError("manches must be 1 (partie sèche) or 3 (partie liée) (§E7.2)")
    if rules.deals < 0:
        raise ValueError("deals must be 0 (play to the target) or a positive number of deals")
    if rules.deals and (rules.manches != 1 or rules.target == "turn-up"):
        raise ValueError("a match of a fixed number of deals has no target and one manche: "
                         "use manches 1 and a number target (it is ignored)")


class EcarteMatch:
    """One Écarté match between seats 0 and 1 (ecarte.md §E2-§E7).

    ``rules`` sets the options (deal pattern, target, manches); ``rng`` is the only source of
    randomness. Call :meth:`start` once, then :meth:`apply` the action of ``to_act`` for each
    ``decision`` until ``over``. Scores are points in the current manche (§E6), ``manches`` the
    manches won (§E7.2). Raises :class:`IllegalAction` (code ``illegal_action``) or
    :class:`WrongDecision` (code ``wrong_decision``) for a bad action; the state is unchanged.
    """

    game: ClassVar[str] = "ecarte"

    def __init__(self, rules: Rules, rng: random.Random, packs: Any = ()) -> None:
        validate_rules(rules)
        self.rules = rules
        self.rng = rng
        self._packs = [list(p) for p in packs]  # prepared packs first (base.take_pack), then rng
        self.packets = DEAL_PATTERNS[rules.deal_pattern]
        self.target: int = rules.target if isinstance(rules.target, int) else 0
        self.fixed_deals = rules.deals
        """``Rules.deals``: when > 0 the match is that many deals, scored without a target."""
        if self.fixed_deals:
            self.target = 0  # shown in views as "no target"
        self.manches_to_win = 2 if rules.manches == 3 else 1
        self._scores = [0, 0]
        self._manches = [0, 0]
        self.manche_no = 0
        self.deal_no = 0
        self.dealer = 0
        self.over = False
        self.winner: int | None = None
        self.to_act: int | None = None
        self.decision: str | None = None
        self._started = False
        # deal state
        self.hands: list[list[Card]] = [[], []]
        self.stock: list[Card] = []
        self.discards: list[list[Card]] = [[], []]
        self.turn_up: Card = ""
        self.trump = ""
        self.elder = 1
        self.proposals = 0
        self.first_call = True
        self.refuser: int | None = None  # who declined the first exchange (§E6.2)
        self.king_offered = [False, False]
        self.tricks = [0, 0]
        self.trick_no = 0
        self.trick: list[TrickCard] = []
        self.leader = 0
        self.deal_points = [0, 0]
        self._legal: list[Any] | None = None  # legal_actions() of the pending decision
        self._choice: Choose | None = None  # choice() of the pending discard

    # ------------------------------------------------------------------ public interface

    @property
    def scores(self) -> list[int]:
        """Points per seat in the current manche (the last one when the match is over)."""
        return list(self._scores)

    @property
    def manches(self) -> list[int]:
        """Manches won per seat (§E7.2)."""
        return list(self._manches)

    @property
    def end_reason(self) -> str:
        """Why a match played out ends: a player reached the target (§E7.3); with
        ``Rules.deals``, ``deals``."""
        return "deals" if self.fixed_deals else "target"

    margin: ClassVar[int] = 0

    def _shuffle(self, cards: Any) -> list[Card]:
        """The next pack: a prepared one if any is left, else shuffled with ``self.rng``."""
        return take_pack(self._packs, cards) or shuffled(cards, self.rng)

    def start(self) -> list[Seen]:
        """Set the target (§E7.1), draw for first dealer (§E2.1) and deal the first hand."""
        if self._started:
            raise RuntimeError("match already started")
        self._started = True
        out: list[Seen] = []
        if self.rules.target == "turn-up":
            card = self._shuffle(PACK_32)[0]
            self.target = TURN_UP_TARGET[card[0]]
            out.append((TargetSet(card=card, target=self.target), BOTH))
        while True:
            pack = self._shuffle(PACK_32)
            c0, c1 = pack[0], pack[1]
            if RANK[c0[0]] == RANK[c1[0]]:
                out.append((DealerDraw(cards=[c0, c1]), BOTH))
                continue
            dealer = 0 if RANK[c0[0]] > RANK[c1[0]] else 1
            out.append((DealerDraw(cards=[c0, c1], dealer=dealer), BOTH))
            break
        self.dealer = dealer
        self._new_manche(out)
        return out

    def legal_actions(self) -> list[Any]:
        """The complete list of legal actions for the pending decision (see module doc).

        The list is cached until the next :meth:`apply`; callers must not mutate it.
        """
        if self._legal is None:
            self._legal = self._compute_legal()
        return self._legal

    def _compute_legal(self) -> list[Any]:
        kind = self.decision
        if kind == "play":
            seat = self.to_act
            assert seat is not None  # a decision is pending: someone is to act
            hand = self.hands[seat]
            if self.trick:
                return legal_follows(hand, self.trick[0].card, self.trump)
            return list(hand)
        if kind == "propose":
            return ["propose", "play"]
        if kind == "respond":
            return ["accept", "refuse"]
        if kind == "king":
            return ["announce", "decline"]
        if kind == "discard":
            return expand_choice(self._discard_choice())
        raise RuntimeError("no decision is pending")

    def choice(self) -> Choose | None:
        """A discard as a choice of cards of the hand (None for any other decision): elder 1 to
        min(5, stock) cards (§E4.3), the dealer 0 to min(5, stock) (§E4.4).
        :meth:`legal_actions` expands it; :meth:`apply` checks an answer against it.

        Cached until the next :meth:`apply`, as :meth:`legal_actions`; callers must not mutate it."""
        if self.decision != "discard":
            return None
        choose = self._choice
        if choose is None:
            choose = self._choice = self._discard_choice()
        return choose

    def _discard_choice(self) -> Choose:
        """:meth:`choice` while a discard is pending."""
        seat = self.to_act
        assert seat is not None  # a decision is pending: someone is to act
        hand = self.hands[seat]
        least = 1 if seat == self.elder else 0
        return Choose(from_=list(hand), min=least, max=min(5, len(self.stock), len(hand)))

    def apply(self, action: Any) -> list[Seen]:
        """Apply the action of ``to_act`` and return the events it causes.

        Raises :class:`WrongDecision` if the action has the wrong shape for ``decision`` and
        :class:`IllegalAction` if the rules forbid it; in both cases nothing changes.
        """
        kind = self.decision
        if kind == "play":
            out = self._play(action)
        elif kind == "propose":
            out = self._propose(action)
        elif kind == "respond":
            out = self._respond(action)
        elif kind == "discard":
            out = self._discard(action)
        elif kind == "king":
            out = self._king(action)
        else:
            raise IllegalAction("the match is over: no decision is pending")
        self._legal = self._choice = None
        return out

    def view(self, seat: int) -> EcarteView:
        """What ``seat`` may know now: its own hand, the turn-up, the table, scores (§E4.5)."""
        return EcarteView(
            seat=seat,
            dealer=self.dealer,
            elder=self.elder,
            deal=self.deal_no,
            manche=self.manche_no,
            target=self.target,
            scores=list(self._scores),
            manches=list(self._manches),
            turn_up=self.turn_up,
            trump=self.trump,
            stock=len(self.stock),
            hand=list(self.hands[seat]),
            tricks=list(self.tricks),
            # copies: the TrickCard structs are mutable, and a view handed to a bot or a
            # spectator feed must not alias the engine's state (was ``list(self.trick)``)
            trick=[TrickCard(seat=tc.seat, card=tc.card) for tc in self.trick],
            proposals=self.proposals,
        )

    def peek_view(self, seat: int) -> EcarteView:
        """:meth:`view` without its copies: the same fields, sharing the engine's lists and
        trick cards. For encoding at once (the match core's request), never to keep or change."""
        return EcarteView(seat, self.dealer, self.elder, self.deal_no, self.manche_no, self.target, self._scores,
                          self._manches, self.turn_up, self.trump, len(self.stock), self.hands[seat], self.tricks,
                          self.trick, self.proposals)

    def auto_action(self) -> Any:
        """The action the referee plays for a bot under ``on_timeout = auto`` (§E8.1): the first
        legal action (for a discard, without building the list)."""
        choose = self.choice()
        return first_choice(choose) if choose is not None else self.legal_actions()[0]

    # ------------------------------------------------------------------ flow

    def _new_manche(self, out: list[Seen]) -> None:
        self.manche_no += 1
        self._scores = [0, 0]
        self._new_deal(out)

    def _new_deal(self, out: list[Seen]) -> None:
        """Deal five cards each in the fixed packets, turn up the 11th (§E2.4, §E3.1)."""
        self.deal_no += 1
        dealer = self.dealer
        elder = 1 - dealer
        self.elder = elder
        pack = self._shuffle(PACK_32)
        hands: list[list[Card]] = [[], []]
        pos = 0
        for size in self.packets:
            for seat in (elder, dealer):
                hands[seat].extend(pack[pos : pos + size])
                pos += size
        hands[0].sort(key=_HAND_ORDER)
        hands[1].sort(key=_HAND_ORDER)
        self.hands = hands
        self.turn_up = pack[10]
        self.trump = self.turn_up[1]
        self.stock = pack[11:]
        self.discards = [[], []]
        self.proposals = 0
        self.first_call = True
        self.refuser = None
        self.king_offered = [False, False]
        self.tricks = [0, 0]
        self.trick_no = 0
        self.trick = []
        self.leader = elder
        self.deal_points = [0, 0]
        out.append((DeckOrder(cards=pack), NOBODY))
        out.append(
            (
                DealStart(
                    deal=self.deal_no,
                    manche=self.manche_no,
                    dealer=dealer,
                    elder=elder,
                    turn_up=self.turn_up,
                    trump=self.trump,
                    stock=len(self.stock),
                ),
                BOTH,
            )
        )
        out.append((HandDealt(seat=0, cards=list(hands[0])), ONLY[0]))
        out.append((HandDealt(seat=1, cards=list(hands[1])), ONLY[1]))
        if self.turn_up[0] == "K":  # §E3.1
            if self._score(dealer, 1, "king_turn_up", out):
                return
        self.to_act, self.decision = elder, "propose"

    def _score(self, seat: int, points: int, reason: str, out: list[Seen]) -> bool:
        """Add points; if the target is reached end the manche at once (§E3.3, §E7.3).

        Returns True if the manche ended (then the next deal, or the match end, is set up).
        """
        self._scores[seat] += points
        self.deal_points[seat] += points
        out.append((Score(seat=seat, points=points, reason=reason, scores=list(self._scores)), BOTH))
        if self.fixed_deals or self._scores[seat] < self.target:
            return False
        if reason in ("king", "king_turn_up"):
            out.append(
                (
                    DealEnd(
                        deal=self.deal_no,
                        tricks=list(self.tricks),
                        points=list(self.deal_points),
                        scores=list(self._scores),
                        ended="king_point",
                    ),
                    BOTH,
                )
            )
        self._end_manche(seat, out)
        return True

    def _end_manche(self, winner: int, out: list[Seen]) -> None:
        self._manches[winner] += 1
        out.append(
            (
                MancheEnd(
                    manche=self.manche_no,
                    winner=winner,
                    scores=list(self._scores),
                    manches=list(self._manches),
                ),
                BOTH,
            )
        )
        if self._manches[winner] >= self.manches_to_win:
            self.over = True
            self.winner = winner
            self.to_act = self.decision = None
            return
        self.dealer = 1 - winner  # §E2.2: the loser of a manche deals first in the next
        self._new_manche(out)

    def _start_play(self) -> None:
        self.trick_no = 1
        self.leader = self.elder
        self._next_player(self.elder)

    def _next_player(self, seat: int) -> None:
        """Ask ``seat`` to play, offering the king announcement first if due (§E3.2)."""
        self.to_act = seat
        if not self.king_offered[seat]:
            self.king_offered[seat] = True
            if "K" + self.trump in self.hands[seat]:
                self.decision = "king"
                return
        self.decision = "play"

    # ------------------------------------------------------------------ decisions

    def _word(self, action: Any, words: tuple[W, W]) -> W:
        if not isinstance(action, str) or action not in words:
            raise WrongDecision(
                f"decision '{self.decision}' takes one of {', '.join(quote(w) for w in words)}; "
                f"got {quote(action)}"
            )
        return action

    def _propose(self, action: Any) -> list[Seen]:
        """§E4.1: elder proposes or plays without proposing."""
        call: CallWord = action if type(action) is str and action in _PROPOSE else self._word(action, _PROPOSE)
        seat = self.to_act
        assert seat is not None  # a decision is pending: someone is to act
        out: list[Seen] = [(Call(seat, call), BOTH)]
        if call == "play":
            if self.first_call:
                self.refuser = seat  # §E6.2: played without proposing on the first decision
            self.first_call = False
            self._start_play()
        else:
            self.to_act, self.decision = self.dealer, "respond"
        return out

    def _respond(self, action: Any) -> list[Seen]:
        """§E4.2: the dealer accepts or refuses the proposal."""
        call: CallWord = action if type(action) is str and action in _RESPOND else self._word(action, _RESPOND)
        seat = self.to_act
        assert seat is not None  # a decision is pending: someone is to act
        out: list[Seen] = [(Call(seat, call), BOTH)]
        first = self.first_call
        self.first_call = False
        if call == "refuse":
            if first:
                self.refuser = seat  # §E6.2: refused the first proposal
            self._start_play()
        else:
            self.proposals += 1
            self.to_act, self.decision = self.elder, "discard"
        return out

    def _discard(self, action: Any) -> list[Seen]:
        """§E4.3-§E4.5: discard face down and draw as many from the top of the stock."""
        seat = self.to_act
        assert seat is not None  # a decision is pending: someone is to act
        hand = self.hands[seat]
        who = "elder" if seat == self.elder else "the dealer"
        choose = self._choice or self._discard_choice()
        cards = check_choice(action, choose, "ecarte.md §E4.3", "ecarte.md §E4.3", who)
        out = exchange(seat, hand, cards, self.stock, self.discards[seat], _HAND_ORDER)
        left = len(self.stock)
        if seat == self.elder:
            if left > 0:
                self.to_act, self.decision = self.dealer, "discard"
            else:
                self._start_play()  # dealer's discard skipped: nothing left to draw
        elif left > 0:
            self.to_act, self.decision = self.elder, "propose"  # §E4.6
        else:
            self._start_play()
        return out

    def _king(self, action: Any) -> list[Seen]:
        """§E3.2: announce the king of trumps (1 point) or decline (no point, not public)."""
        call = self._word(action, ("announce", "decline"))
        seat = self.to_act
        assert seat is not None  # a decision is pending: someone is to act
        king = "K" + self.trump
        self.decision = "play"
        if call == "decline":
            return [(KingAnnounced(seat=seat, card=king, announced=False), ONLY[seat])]
        out: list[Seen] = [(KingAnnounced(seat=seat, card=king), BOTH)]
        self._score(seat, 1, "king", out)
        return out

    def _play(self, card: Any) -> list[Seen]:
        """§E5: play a card; the second card completes the trick."""
        seat = self.to_act
        assert seat is not None  # a decision is pending: someone is to act
        hand = self.hands[seat]
        legal = self._legal if self._legal is not None else self._compute_legal()
        if card not in legal:
            if not isinstance(card, str) or len(card) != 2:
                raise WrongDecision(f"decision 'play' takes one card like \"Ks\"; got {quote(card)}")
            if card not in hand:
                raise IllegalAction(f"{quote(card)} is not in the hand {quote(hand)}", "ecarte.md §E5")
            lead = self.trick[0].card
            raise IllegalAction(self._why_illegal(hand, lead, card), self._rule(hand, lead))
        hand.remove(card)
        out: list[Seen] = [(CardPlayed(seat, card, self.trick_no), BOTH)]
        self.trick.append(TrickCard(seat, card))
        if len(self.trick) == 1:
            self._next_player(1 - seat)
            return out
        lead_tc, follow_tc = self.trick
        won = follow_tc.seat if trick_winner(lead_tc.card, follow_tc.card, self.trump) else lead_tc.seat
        self.tricks[won] += 1
        out.append(
            (
                TrickWon(
                    trick=self.trick_no,
                    leader=lead_tc.seat,
                    cards=[lead_tc.card, follow_tc.card],
                    winner=won,
                ),
                BOTH,
            )
        )
        self.trick = []
        if self.trick_no == 5:
            self._end_deal(out)
        else:
            self.trick_no += 1
            self.leader = won
            self._next_player(won)
        return out

    def _why_illegal(self, hand: list[Card], lead: Card, card: Card) -> str:
        same = [c for c in hand if c[1] == lead[1]]
        if same and card[1] != lead[1]:
            return f"{quote(card)} does not follow suit: {quote(lead)} was led and the hand holds {quote(same)}"
        if same:
            higher = [c for c in same if RANK[c[0]] > RANK[lead[0]]]
            return f"{quote(card)} does not win {quote(lead)}: a higher card of the suit must be played {quote(higher)}"
        trumps = [c for c in hand if c[1] == self.trump]
        return f"{quote(card)} is not a trump: void in {quote(lead[1])}, the hand must trump {quote(trumps)}"

    def _rule(self, hand: list[Card], lead: Card) -> str:
        return "ecarte.md §E5.1" if any(c[1] == lead[1] for c in hand) else "ecarte.md §E5.2"

    def _end_deal(self, out: list[Seen]) -> None:
        """§E6: score the deal, then deal again or end the manche."""
        taker = 0 if self.tricks[0] >= 3 else 1
        refuser = self.refuser
        if refuser is not None and self.tricks[refuser] < 3:
            points, reason = 2, "refusal"  # §E6.2, replaces §E6.1
        elif self.tricks[taker] == 5:
            points, reason = 2, "vole"
        else:
            points, reason = 1, "tricks"
        self.to_act = self.decision = None
        self._scores[taker] += points
        self.deal_points[taker] += points
        out.append((Score(seat=taker, points=points, reason=reason, scores=list(self._scores)), BOTH))
        out.append(
            (
                DealEnd(
                    deal=self.deal_no,
                    tricks=list(self.tricks),
                    points=list(self.deal_points),
                    scores=list(self._scores),
                ),
                BOTH,
            )
        )
        if self.fixed_deals:
            if self.deal_no >= self.fixed_deals:  # Rules.deals: the last deal ends the match
                a, b = self._scores
                self.over = True
                self.winner = None if a == b else 0 if a > b else 1
                return
        elif self._scores[taker] >= self.target:
            self._end_manche(taker, out)
            return
        self.dealer = 1 - self.dealer  # §E2.2
        self._new_deal(out)
