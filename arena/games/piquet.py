"""Piquet: one match as a pure state machine, per ``../shared/rules/piquet.md``.

Decision kinds (``PiquetMatch.decision``) and their legal actions:

======== ================== ===========================================================
kind     who                legal actions
======== ================== ===========================================================
discard  elder (§P4.1)      every subset of the hand of size 1..m, m = min(5, talon)
                            (8 with 36 cards)
look     elder (§P4.1)      ``"look"``, ``"pass"``: asked only when he took fewer than his
                            maximum; ``look`` shows him (alone) the cards he left
discard  younger (§P4.2)    every subset of the hand of size 0..len(talon)
expose   younger (§P4.3)    ``"expose"``, ``"keep"``: asked only if cards remain in the talon
play     §P6.1              the cards of the suit led if he holds any, else any card
======== ================== ===========================================================

Everything else is automatic: carte blanche (§P3) is scored and shown before its holder's
discard; the declarations (§P5) are settled after the exchange in the order point, sequences,
sets; points in play (§P6.2) as cards are played; the cards or capot (§P6.3) at the end;
repique and pique (§P7) as the reckoning reaches 30.

Interpretations where the ruling is silent, written down here so they can be checked:

* carte blanche counts toward pique and repique (it is first in the reckoning, §P7.1);
* the point compares totals only (§P5.1 "the higher total wins"), the count of cards in the
  suit is announced but does not decide;
* an extra deal pair after a rubicon tie keeps the alternation of dealers (§P8.2).

Randomness: packs are shuffled for the draw for first dealer until the two cards differ in
rank (§P2.1, lower deals); then one shuffled pack per deal, all from the ``random.Random`` given.
Deal ``k`` of a seed is the same pack with the same dealer whatever the players do.

``Rules.deals`` > 0 (the duplicate-deals format, not a rule of the game): the match is exactly
that many deals, the deal alternating (§P2.1); no rubicon or cent end, the higher total wins
(margin: the difference), equal totals draw.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from operator import itemgetter
from typing import Any, ClassVar, Literal

from arena.cards import RANKS_32, RANKS_36, Card, make_pack, shuffled
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
    CardPlayed,
    CarteBlanche,
    Choose,
    DealEnd,
    DealerDraw,
    DealStart,
    DeckOrder,
    Declaration,
    DeclarationResult,
    HandDealt,
    LookedAt,
    MatchScore,
    PiquetView,
    Rules,
    Score,
    TalonExposed,
    TrickCard,
    TrickWon,
)

RANK_ORDER = "6789TJQKA"
"""piquet.md §P1, low to high: (6) 7 8 9 T J Q K A."""
RANK = {r: i for i, r in enumerate(RANK_ORDER)}
VALUE = {"A": 11, "K": 10, "Q": 10, "J": 10, "T": 10, "9": 9, "8": 8, "7": 7, "6": 6}
"""§P1: card values for the point."""
HONOURS = frozenset("AKQJT")
"""§P6.2: the cards that score when led or when winning a trick as second player."""
FACES = frozenset("KQJ")
"""§P3: carte blanche is a hand without any of these."""
SEQUENCE_NAMES = {3: "tierce", 4: "quart", 5: "quint", 6: "sixième", 7: "septième", 8: "huitième", 9: "neuvième"}
SEQUENCE_POINTS = {3: 3, 4: 4, 5: 15, 6: 16, 7: 17, 8: 18, 9: 19}
"""§P5.2: tierce 3, quart 4, quint 15, then 16, 17, 18, 19."""
RANK_NAMES = {"A": "ace", "K": "king", "Q": "queen", "J": "jack", "T": "ten", "9": "nine", "8": "eight",
              "7": "seven", "6": "six"}
SET_RANKS = "TJQKA"
"""§P5.3: only A K Q J T form quatorzes and trios."""
DEALS_RUBICON = 6
_SUIT_INDEX = {s: i for i, s in enumerate("cdhs")}
_SET_INDEX = [RANK[r] for r in SET_RANKS]
_CARD_BIT = {r + s: 1 << (9 * _SUIT_INDEX[s] + RANK[r]) for r in RANK_ORDER for s in "cdhs"}
"""Per card a bit of a 36-bit hand mask: 9 rank bits (:data:`RANK_ORDER`) per suit, ``"cdhs"``
from the low end. What the declarations read: a hand is the sum of its cards' bits."""


def _suit_point(mask: int) -> tuple[int, int]:
    """Cards and point value (§P1) of one suit's 9-bit rank mask."""
    ranks = [r for r in range(len(RANK_ORDER)) if mask >> r & 1]
    return len(ranks), sum(VALUE[RANK_ORDER[r]] for r in ranks)


def _sets_table(quatorzes: int, trios: int) -> tuple[tuple[int, int], ...]:
    """§P5.3 from the rank masks of the ranks held four and three times: ``(count, rank
    index)`` of A K Q J T only, best first (any quatorze above any trio, then by rank)."""
    out = [(4, r) for r in _SET_INDEX if quatorzes >> r & 1] + [(3, r) for r in _SET_INDEX if trios >> r & 1]
    return tuple(sorted(out, reverse=True))


_POINT_KEY = [n << 8 | t for n, t in map(_suit_point, range(1 << len(RANK_ORDER)))]
"""Per 9-bit rank mask, its cards and point value as one comparable int: ``cards << 8 | value``
(§P5.1 compares the number of cards, then the total)."""
_SET_MASK = sum(1 << r for r in _SET_INDEX)
_SET_SUBMASKS = [m << _SET_INDEX[0] for m in range(1 << len(_SET_INDEX))]
_SETS = {(q, t): _sets_table(q, t) for q in _SET_SUBMASKS for t in _SET_SUBMASKS if not q & t}
"""§P5.3 sets (:func:`_sets_table`) per pair of disjoint masks of A K Q J T ranks held four
and three times."""


def combinations_of(hand: list[Card]) -> tuple[tuple[int, int, str], list[tuple[int, int, str]], list[tuple[int, int]]]:
    """The declarations of ``hand`` (§P5): its point, §P5.1 ``(total, length, suit)`` of the
    longest suit (of two equally long, the higher total; ``(0, 0, "")`` for an empty hand); its
    sequences, §P5.2 every maximal run of 3+ consecutive ranks in one suit as ``(length, top
    rank index, suit)``, best first; its sets, §P5.3 every quatorze (4) or trio (3) of A K Q J T
    as ``(count, rank index)``, best first (any quatorze above any trio, then by rank). They are
    settled every deal, so this is table lookups on the hand's bit mask :data:`_CARD_BIT`: a
    suit's cards and value, its runs, the sets from the ranks held three or four times."""
    mask = sum(map(_CARD_BIT.__getitem__, hand))
    m0, m1, m2, m3 = mask & 511, mask >> 9 & 511, mask >> 18 & 511, mask >> 27
    keys = (_POINT_KEY[m0], _POINT_KEY[m1], _POINT_KEY[m2], _POINT_KEY[m3])
    top = max(keys)  # the longest suit, then the higher total; of equals, the first in c d h s
    best = (top & 255, top >> 8, "cdhs"[keys.index(top)]) if top else (0, 0, "")
    seqs = [*_RUNS_IN[0][m0], *_RUNS_IN[1][m1], *_RUNS_IN[2][m2], *_RUNS_IN[3][m3]]
    if len(seqs) > 1:
        seqs.sort(reverse=True)
    quatorzes = m0 & m1 & m2 & m3 & _SET_MASK
    trios = (m0 & m1 & (m2 | m3) | m2 & m3 & (m0 | m1)) & _SET_MASK & ~quatorzes
    return best, seqs, list(_SETS[quatorzes, trios])


def point_score(total: int) -> int:
    """§P5.1: the total rounded to the nearest ten, halves up, divided by ten (45 -> 5)."""
    return (total + 5) // 10


def _runs(mask: int) -> tuple[tuple[int, int], ...]:
    """The maximal runs of 3+ set bits of a 9-bit rank mask as ``(length, top bit)``."""
    out = []
    run = 0
    for bit in range(len(RANK_ORDER) + 1):
        if bit < len(RANK_ORDER) and mask >> bit & 1:
            run += 1
            continue
        if run >= 3:
            out.append((run, bit - 1))
        run = 0
    return tuple(out)


_RUNS_IN = [[tuple((length, top, suit) for length, top in _runs(m)) for m in range(1 << len(RANK_ORDER))]
             for suit in "cdhs"]
"""Per suit index, every 9-bit rank mask's runs (:func:`_runs`) as ``(length, top, suit)``,
computed once: the declarations are settled every deal, and a table lookup per suit is the
cheapest way to find the sequences."""


def sequence_name(seq: tuple[int, int, str]) -> str:
    """"quint to the king" for ``(5, RANK['K'], suit)``."""
    return f"{SEQUENCE_NAMES[seq[0]]} to the {RANK_NAMES[RANK_ORDER[seq[1]]]}"


def set_name(s: tuple[int, int]) -> str:
    """"quatorze of aces" / "trio of kings"."""
    rank = RANK_NAMES[RANK_ORDER[s[1]]]
    plural = "sixes" if rank == "six" else rank + "s"
    return f"{'quatorze' if s[0] == 4 else 'trio'} of {plural}"


_SEQUENCE_NAME = {(n, top, suit): sequence_name((n, top, suit)) for n in SEQUENCE_NAMES
                  for top in range(n - 1, len(RANK_ORDER)) for suit in "cdhs"}
_SEQUENCE_SCORE = {seq: SEQUENCE_POINTS[seq[0]] for seq in _SEQUENCE_NAME}
_SET_NAME = {(n, r): set_name((n, r)) for n in (3, 4) for r in _SET_INDEX}
_SET_SCORE = {s: 14 if s[0] == 4 else 3 for s in _SET_NAME}
"""Every sequence's and set's name and points (§P5.2-§P5.3), looked up when settling them."""


def _follow(hand: list[Card], suit: str) -> list[Card]:
    """:func:`legal_follows` for a hand sorted by suit (as the engine keeps hands), as a new
    list: its cards of ``suit`` are one run of it, found in the hand's text, where a suit letter
    (never a rank) marks card ``i`` at ``2i + 1``."""
    joined = "".join(hand)
    i = joined.find(suit)
    return hand[i >> 1:(joined.rfind(suit) >> 1) + 1] if i >= 0 else hand[:]


def legal_follows(hand: list[Card], lead: Card) -> list[Card]:
    """§P6.1: the cards of the suit led if any, otherwise the whole hand."""
    same = [c for c in hand if c[1] == lead[1]]
    return same or list(hand)


def validate_rules(rules: Rules) -> None:
    """Raise ``ValueError`` if ``rules`` is not a Piquet rule set (§P1, §P2.2, §P8)."""
    if rules.pack not in (32, 36):
        raise ValueError("pack must be 32 or 36 (piquet.md §P1)")
    if rules.packets not in (2, 3):
        raise ValueError("packets must be 2 or 3 (piquet.md §P2.2)")
    if rules.scoring not in ("rubicon", "cent"):
        raise ValueError("scoring must be rubicon or cent (piquet.md §P8.1)")
    if rules.deals < 0:
        raise ValueError("deals must be 0 (the scoring's own match) or a positive number of deals")


class PiquetMatch:
    """One Piquet match between seats 0 and 1 (piquet.md §P1-§P8).

    Same interface as :class:`arena.games.ecarte.EcarteMatch`. ``scores`` are match totals
    (points); ``winner`` is None for a draw (§P8.2) and ``margin`` the rubicon score (§P8.4).
    Raises :class:`IllegalAction` / :class:`WrongDecision` for a bad action, state unchanged.
    """

    game: ClassVar[str] = "piquet"

    def __init__(self, rules: Rules, rng: random.Random, packs: Any = ()) -> None:
        validate_rules(rules)
        self.rules = rules
        self.rng = rng
        self._packs = [list(p) for p in packs]  # prepared packs first (base.take_pack), then rng
        self.pack = make_pack(RANKS_36 if rules.pack == 36 else RANKS_32)
        self.elder_max = 8 if rules.pack == 36 else 5
        self.totals = [0, 0]
        self.deal_no = 0
        self.deals_to_play = rules.deals or (DEALS_RUBICON if rules.scoring == "rubicon" else 0)
        self.dealer = 0
        self.over = False
        self.winner: int | None = None
        self.margin = 0
        self.to_act: int | None = None
        self.decision: str | None = None
        self._started = False
        self._legal: list[Any] | None = None
        self._reset_deal()

    def _reset_deal(self) -> None:
        self.hands: list[list[Card]] = [[], []]
        self.talon: list[Card] = []
        self.discards: list[list[Card]] = [[], []]
        self.seen: list[list[Card]] = [[], []]
        self.exposed: list[Card] = []
        self.exchanged = [0, 0]
        self.deal_points = [0, 0]
        self.bonus_taken = False  # one of pique / repique per deal (§P7.3)
        self.tricks = [0, 0]
        self.trick_no = 0
        self._lead: tuple[int, Card] | None = None  # (seat, card) that led the current trick
        self.elder = 1 - self.dealer
        self.phase = "deal"

    # ------------------------------------------------------------------ interface

    @property
    def trick(self) -> list[TrickCard]:
        """The cards on the table in the current trick, in play order (the lead, if any)."""
        lead = self._lead
        return [TrickCard(seat=lead[0], card=lead[1])] if lead else []

    @property
    def scores(self) -> list[int]:
        """Match totals per seat (points)."""
        return list(self.totals)

    @property
    def manches(self) -> list[int]:
        """Piquet has no manches: always ``[0, 0]``."""
        return [0, 0]

    @property
    def end_reason(self) -> str:
        """Why the match ended once played out: ``draw`` (§P8.2), ``rubicon`` or ``cent``; with
        ``Rules.deals``, ``deals``."""
        if self.rules.deals:
            return "deals"
        return "draw" if self.winner is None else self.rules.scoring

    def _shuffle(self, cards: Any) -> list[Card]:
        """The next pack: a prepared one if any is left, else shuffled with ``self.rng``."""
        return take_pack(self._packs, cards) or shuffled(cards, self.rng)

    def start(self) -> list[Seen]:
        """Draw for first dealer (§P2.1: the lower card deals) and deal the first hand."""
        if self._started:
            raise RuntimeError("match already started")
        self._started = True
        out: list[Seen] = []
        while True:
            pack = self._shuffle(self.pack)
            c0, c1 = pack[0], pack[1]
            if RANK[c0[0]] == RANK[c1[0]]:
                out.append((DealerDraw(cards=[c0, c1]), BOTH))
                continue
            self.dealer = 0 if RANK[c0[0]] < RANK[c1[0]] else 1
            out.append((DealerDraw(cards=[c0, c1], dealer=self.dealer), BOTH))
            break
        self._new_deal(out)
        return out

    def legal_actions(self) -> list[Any]:
        """The complete list of legal actions for the pending decision (cached until the
        next :meth:`apply`; do not mutate)."""
        legal = self._legal
        if legal is None:
            seat = self.to_act
            if self.decision == "play" and seat is not None:  # the most frequent decision: §P6.1, inlined
                hand = self.hands[seat]
                lead = self._lead
                legal = _follow(hand, lead[1][1]) if lead else hand[:]
            else:
                legal = self._compute_legal()
            self._legal = legal
        return legal

    def _compute_legal(self) -> list[Any]:
        """The legal actions of a decision other than ``play`` (:meth:`legal_actions` has it)."""
        kind = self.decision
        if kind == "discard":
            return expand_choice(self._discard_choice())
        if kind == "look":
            return ["look", "pass"]
        if kind == "expose":
            return ["expose", "keep"]
        raise RuntimeError("no decision is pending")

    def choice(self) -> Choose | None:
        """A discard as a choice of cards of the hand (None for any other decision): elder
        1 to min(5, talon) cards, 8 with 36 cards (§P4.1); younger 0 to what the talon holds
        (§P4.2). :meth:`legal_actions` expands it; :meth:`apply` checks an answer against it."""
        return self._discard_choice() if self.decision == "discard" else None

    def _discard_choice(self) -> Choose:
        """:meth:`choice` while a discard is pending."""
        seat = self.to_act
        assert seat is not None  # a decision is pending: someone is to act
        if seat == self.elder:
            lo, hi = 1, min(self.elder_max, len(self.talon))
        else:
            lo, hi = 0, len(self.talon)
        return Choose(from_=list(self.hands[seat]), min=lo, max=hi)

    def apply(self, action: Any) -> list[Seen]:
        """Apply the action of ``to_act``; see the class docstring for errors."""
        kind = self.decision
        if kind == "play":  # the most frequent decision: _play forgets the legal plays itself
            return self._play(action)
        if kind == "discard":
            out = self._discard(action)
        elif kind == "look":
            out = self._look(action)
        elif kind == "expose":
            out = self._expose(action)
        else:
            raise IllegalAction("the match is over: no decision is pending")
        self._legal = None
        return out

    def view(self, seat: int) -> PiquetView:
        """What ``seat`` may know now."""
        return PiquetView(
            seat=seat,
            dealer=self.dealer,
            elder=self.elder,
            deal=self.deal_no,
            deals=self.deals_to_play,
            scoring=self.rules.scoring,
            # PiquetView documents ``scores`` as the totals *before* this deal's points (which
            # are ``deal_scores``); ``totals`` already include them, so take them out (fix: the
            # view used to count this deal's points twice for a bot adding the two).
            scores=[t - d for t, d in zip(self.totals, self.deal_points)],
            deal_scores=list(self.deal_points),
            hand=list(self.hands[seat]),
            talon=len(self.talon),
            discards=list(self.discards[seat]),
            seen=list(self.seen[seat]),
            exposed=list(self.exposed),
            exchanged=list(self.exchanged),
            tricks=list(self.tricks),
            trick=self.trick,
        )

    def peek_view(self, seat: int) -> PiquetView:
        """:meth:`view` without its copies: the same fields, sharing the engine's lists. For
        encoding at once (the match core's request), never to keep or change."""
        return PiquetView(seat, self.dealer, self.elder, self.deal_no, self.deals_to_play, self.rules.scoring,
                          [t - d for t, d in zip(self.totals, self.deal_points)], self.deal_points, self.hands[seat],
                          len(self.talon), self.discards[seat], self.seen[seat], self.exposed, self.exchanged,
                          self.tricks, self.trick)

    def auto_action(self) -> Any:
        """The first legal action (``on_timeout = auto``, ecarte.md §E8.1 via piquet.md §P9);
        for a discard, without building the list."""
        choose = self.choice()
        return first_choice(choose) if choose is not None else self.legal_actions()[0]

    # ------------------------------------------------------------------ scoring helpers

    def _score(self, seat: int, points: int, reason: str, out: list[Seen], detail: str | None = None) -> None:
        """Add points to the deal and check repique / pique (§P7)."""
        deal_points = self.deal_points
        deal_points[seat] += points
        totals = self.totals
        totals[seat] += points
        out.append((Score(seat, points, reason, totals[:], detail), BOTH))
        if deal_points[seat] < 30 or deal_points[1 - seat] or self.bonus_taken:
            return
        if reason in ("carte_blanche", "point", "sequence", "set"):
            self.bonus_taken = True
            self._score(seat, 60, "repique", out)  # §P7.2
        elif reason in ("lead", "trick", "last_trick") and seat == self.elder:
            self.bonus_taken = True
            self._score(seat, 30, "pique", out)  # §P7.3

    def _shown(self) -> list[int]:
        return list(self.totals)

    # ------------------------------------------------------------------ the deal

    def _new_deal(self, out: list[Seen]) -> None:
        """§P2: twelve cards each in packets, elder first; the rest is the talon."""
        self.deal_no += 1
        self._reset_deal()
        dealer, elder = self.dealer, self.elder
        pack = self._shuffle(self.pack)
        size = self.rules.packets
        hands: list[list[Card]] = [[], []]
        hands[elder] = sorted(_DEALT_TO_ELDER[size](pack), key=_HAND_ORDER)
        hands[dealer] = sorted(_DEALT_TO_DEALER[size](pack), key=_HAND_ORDER)
        self.hands = hands
        self.talon = pack[24:]
        out.append((DeckOrder(cards=pack), NOBODY))
        out.append((DealStart(deal=self.deal_no, manche=1, dealer=dealer, elder=elder, turn_up=None, trump=None,
                              stock=len(self.talon)), BOTH))
        out.append((HandDealt(seat=0, cards=list(hands[0])), ONLY[0]))
        out.append((HandDealt(seat=1, cards=list(hands[1])), ONLY[1]))
        self._blanche = [_FACE_CARDS.isdisjoint(hands[0]), _FACE_CARDS.isdisjoint(hands[1])]
        self._carte_blanche(elder, out)
        self.to_act, self.decision, self.phase = elder, "discard", "exchange"

    def _carte_blanche(self, seat: int, out: list[Seen]) -> None:
        """§P3: declared (shown, 10 points) before the holder's discard."""
        if self._blanche[seat]:
            out.append((CarteBlanche(seat=seat, cards=list(self.hands[seat])), BOTH))
            self._score(seat, 10, "carte_blanche", out)

    def _discard(self, action: Any) -> list[Seen]:
        """§P4.1-§P4.2: discard face down, draw as many from the top of the talon."""
        seat = self.to_act
        assert seat is not None  # a decision is pending: someone is to act
        hand = self.hands[seat]
        is_elder = seat == self.elder
        size_rule, who = ("piquet.md §P4.1", "elder") if is_elder else ("piquet.md §P4.2", "younger")
        cards = check_choice(action, self._discard_choice(), "piquet.md §P4", size_rule, who)
        n = len(cards)
        out = exchange(seat, hand, cards, self.talon, self.discards[seat], _HAND_ORDER)
        self.exchanged[seat] = n
        left = len(self.talon)
        if is_elder:
            if n < min(self.elder_max, left + n):
                self.decision = "look"  # §P4.1: he may look at the cards he left
            else:
                self._younger_turn(out)
        elif left > 0:
            self.decision = "expose"  # §P4.3
        else:
            self._declare(out)
        return out

    def _look(self, action: Any) -> list[Seen]:
        if not isinstance(action, str) or action not in ("look", "pass"):
            raise WrongDecision(f"decision 'look' takes \"look\" or \"pass\"; got {quote(action)}")
        seat = self.to_act
        assert seat is not None  # a decision is pending: someone is to act
        out: list[Seen] = []
        if action == "look":
            left = self.talon[: self.elder_max - self.exchanged[seat]]
            self.seen[seat] = list(left)
            out.append((LookedAt(seat=seat, cards=list(left)), ONLY[seat]))
        self._younger_turn(out)
        return out

    def _younger_turn(self, out: list[Seen]) -> None:
        younger = self.dealer
        self._carte_blanche(younger, out)
        self.to_act, self.decision = younger, "discard"

    def _expose(self, action: Any) -> list[Seen]:
        if not isinstance(action, str) or action not in ("expose", "keep"):
            raise WrongDecision(f"decision 'expose' takes \"expose\" or \"keep\"; got {quote(action)}")
        seat = self.to_act
        assert seat is not None  # a decision is pending: someone is to act
        out: list[Seen] = []
        if action == "expose":
            self.exposed = list(self.talon)
            out.append((TalonExposed(seat=seat, cards=list(self.talon)), BOTH))
        self._declare(out)
        return out

    # ------------------------------------------------------------------ declarations (§P5)

    def _declare(self, out: list[Seen]) -> None:
        e, y = self.elder, self.dealer
        he, hy = self.hands[e], self.hands[y]
        # point (§P5.1)
        (pe, se, te), (py, sy, ty) = combinations_of(he), combinations_of(hy)
        name_e = f"point of {pe[1]}, {pe[0]}" if pe[1] else None
        name_y = f"point of {py[1]}, {py[0]}" if py[1] else None
        if pe[0] > py[0]:
            out.append((Declaration(category="point", elder=name_e, younger=None, result="good", winner=e), BOTH))
            self._score(e, point_score(pe[0]), "point", out, name_e)
        elif py[0] > pe[0]:
            out.append((Declaration(category="point", elder=name_e, younger=name_y, result="not_good", winner=y),
                        BOTH))
            self._score(y, point_score(py[0]), "point", out, name_y)
        else:
            out.append((Declaration(category="point", elder=name_e, younger=name_y, result="equal", winner=None),
                        BOTH))
        # sequences (§P5.2)
        self._settle("sequence", se, sy, _LENGTH_AND_TOP, _SEQUENCE_NAME.__getitem__, _SEQUENCE_SCORE.__getitem__,
                     out)
        # sets (§P5.3)
        self._settle("set", te, ty, tuple, _SET_NAME.__getitem__, _SET_SCORE.__getitem__, out)
        self.phase = "play"
        self.trick_no = 1
        self.to_act, self.decision = e, "play"

    def _settle(self, category: Literal["sequence", "set"], mine_e: Sequence[tuple[Any, ...]],
                mine_y: Sequence[tuple[Any, ...]], key: Callable[[tuple[Any, ...]], Any],
                name: Callable[[Any], str], points: Callable[[Any], int], out: list[Seen]) -> None:
        """Compare the best combination of a category; the winner scores all of his (§P5.2-3)."""
        e, y = self.elder, self.dealer
        best_e = key(mine_e[0]) if mine_e else None
        best_y = key(mine_y[0]) if mine_y else None
        ne = name(mine_e[0]) if mine_e else None
        ny = name(mine_y[0]) if mine_y else None
        if best_e is None and best_y is None:
            out.append((Declaration(category=category, elder=None, younger=None, result="none", winner=None), BOTH))
            return
        result: DeclarationResult
        if best_y is None or (best_e is not None and best_e > best_y):
            winner, result, shown_y = e, "good", None
        elif best_e is None or best_y > best_e:
            winner, result, shown_y = y, "not_good", ny
        else:  # an exact tie cancels the category for both (§P5.2)
            out.append((Declaration(category=category, elder=ne, younger=ny, result="equal", winner=None), BOTH))
            return
        out.append((Declaration(category=category, elder=ne, younger=shown_y, result=result, winner=winner), BOTH))
        for combo in mine_e if winner == e else mine_y:
            self._score(winner, points(combo), category, out, name(combo))

    # ------------------------------------------------------------------ play (§P6)

    def _play(self, card: Any) -> list[Seen]:
        """§P6: play ``card`` (checked against :meth:`legal_actions`), score the points in play
        (§P6.2) and, on the second card, the trick."""
        seat = self.to_act
        assert seat is not None  # a decision is pending: someone is to act
        legal = self._legal
        if legal is None:
            legal = self.legal_actions()
        if card not in legal:
            self._refuse_play(card)
        self._legal = None
        self.hands[seat].remove(card)
        trick_no = self.trick_no
        out: list[Seen] = [(CardPlayed(seat, card, trick_no), BOTH)]
        lead = self._lead
        if lead is None:
            self._lead = (seat, card)
            if card in _HONOUR_CARDS:
                self._score(seat, 1, "lead", out)  # §P6.2
            self.to_act = follower = 1 - seat
            self._legal = _follow(self.hands[follower], card[1])  # what legal_actions will be asked
            return out
        leader, lead_card = lead
        self._lead = None
        won = seat if (lead_card, card) in _BEATS else leader
        self.tricks[won] += 1
        out.append((TrickWon(trick_no, leader, [lead_card, card], won), BOTH))
        if won == seat and card in _HONOUR_CARDS:
            self._score(won, 1, "trick", out)  # §P6.2: won as second player with A K Q J T
        if trick_no == 12:
            self._score(won, 1, "last_trick", out)  # §P6.2
            self._end_deal(out)
        else:
            self.trick_no = trick_no + 1
            self.to_act = won
            self._legal = self.hands[won][:]  # §P6.1: he leads any card
        return out

    def _refuse_play(self, card: Any) -> None:
        """Raise the error for a ``card`` that is not a legal play (§P6.1): not a card, not in
        the hand, or not following suit."""
        seat = self.to_act
        assert seat is not None  # a decision is pending: someone is to act
        hand = self.hands[seat]
        if not isinstance(card, str) or len(card) != 2:
            raise WrongDecision(f"decision 'play' takes one card like \"Ks\"; got {quote(card)}")
        if card not in hand:
            raise IllegalAction(f"{quote(card)} is not in the hand {quote(hand)}", "piquet.md §P6.1")
        assert self._lead is not None  # a leader may play any card of his hand
        lead = self._lead[1]
        same = [c for c in hand if c[1] == lead[1]]
        raise IllegalAction(f"{quote(card)} does not follow suit: {quote(lead)} was led and the hand holds "
                            f"{quote(same)}", "piquet.md §P6.1")

    def _end_deal(self, out: list[Seen]) -> None:
        """§P6.3 the cards or capot, then the match (§P8)."""
        t = self.tricks
        if t[0] == 12 or t[1] == 12:
            self._score(0 if t[0] == 12 else 1, 40, "capot", out)
        elif t[0] != t[1]:
            self._score(0 if t[0] > t[1] else 1, 10, "cards", out)
        self.to_act = self.decision = None
        out.append((DealEnd(deal=self.deal_no, tricks=list(t), points=list(self.deal_points),
                            scores=list(self.totals)), BOTH))
        if self._match_over():
            self._finish(out)
            return
        self.dealer = 1 - self.dealer  # §P2.1: the deal alternates
        self._new_deal(out)

    def _match_over(self) -> bool:
        a, b = self.totals
        if self.rules.deals:  # a fixed number of deals (Rules.deals), whatever the totals
            return self.deal_no >= self.rules.deals
        if self.rules.scoring == "cent":  # §P8.3
            return (a >= 100 or b >= 100) and a != b
        if self.deal_no < self.deals_to_play:
            return False
        if a != b:
            return True
        if self.deals_to_play == DEALS_RUBICON:  # §P8.2: a tie after six: each deals once more
            self.deals_to_play += 2
            return False
        return True  # still tied after the extra deals: a draw

    def _finish(self, out: list[Seen]) -> None:
        a, b = self.totals
        self.over = True
        if a == b:
            self.winner, self.margin, rubicon = None, 0, False
        else:
            w = 0 if a > b else 1
            hi, lo = max(a, b), min(a, b)
            rubicon = self.rules.scoring == "rubicon" and lo < 100 and not self.rules.deals
            self.winner = w
            if self.rules.scoring == "rubicon" and not self.rules.deals:
                self.margin = 100 + (hi + lo if rubicon else hi - lo)  # §P8.2
            else:
                self.margin = hi - lo
        out.append((MatchScore(totals=[a, b], winner=self.winner, margin=self.margin, rubicon=rubicon), BOTH))


_HAND_ORDER = {c: 16 * _SUIT_INDEX[c[1]] + RANK[c[0]] for c in make_pack(RANKS_36)}.__getitem__
"""Hand order (a sort key): by suit (``c d h s``), then by Piquet rank low to high."""
_HONOUR_CARDS = frozenset(c for c in make_pack(RANKS_36) if c[0] in HONOURS)
"""§P6.2: the cards that score a point when led or winning a trick as second player."""
_BEATS = frozenset((lead, c) for lead in make_pack(RANKS_36) for c in make_pack(RANKS_36)
                   if c[1] == lead[1] and RANK[c[0]] > RANK[lead[0]])
"""§P6.1: ``(card led, card played second)`` pairs where the second card wins the trick (a
higher card of the suit led; there are no trumps)."""
_FACE_CARDS = frozenset(c for c in make_pack(RANKS_36) if c[0] in FACES)
"""§P3: the cards whose absence makes a carte blanche."""


def _dealt(size: int, first: bool) -> Any:
    """The positions in the shuffled pack of the twelve cards dealt to elder (``first``) or to
    the dealer, in packets of ``size`` (§P2.2), as an ``itemgetter`` of the pack."""
    picks = [i for i in range(24) if (i // size) % 2 == (0 if first else 1)]
    return itemgetter(*picks)


_LENGTH_AND_TOP = itemgetter(0, 1)
"""What two sequences are compared by (§P5.2): length, then top card; the suit does not count."""

_DEALT_TO_ELDER = {size: _dealt(size, True) for size in (2, 3)}
_DEALT_TO_DEALER = {size: _dealt(size, False) for size in (2, 3)}
