"""The scripted Écarté deals: stacked packs (handed to the engine, ``packs=``), the plans of
the opponent, and how it steers the stock toward the exchange situations."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from arena.cards import PACK_32


def deal_pack(elder: str, dealer: str, turn_up: str, stock: str = "") -> list[str]:
    """A 32-card pack dealt 3-2 (ecarte.md §E2.4): elder gets pack positions 0-2 and 6-7, the
    dealer 3-5 and 8-9, the 11th card is the turn-up, then ``stock`` from the top; the cards not
    named follow in pack order."""
    e, d, top = elder.split(), dealer.split(), stock.split()
    pack = e[:3] + d[:3] + e[3:] + d[3:] + [turn_up] + top
    pack += [c for c in PACK_32 if c not in pack]
    if len(pack) != 32 or sorted(pack) != sorted(PACK_32):
        raise ValueError(f"not a pack: {pack}")
    return pack


def draw_pack(dealer: int) -> list[str]:
    """A pack for the draw for first dealer (§E2.1) that makes ``dealer`` deal first."""
    top = ["Kc", "7d"] if dealer == 0 else ["7d", "Kc"]
    return top + [c for c in PACK_32 if c not in top]


@dataclass(frozen=True)
class DealPlan:
    """The first deal of a scripted match: the hands, the bot's role, and the opponent's moves.

    ``propose``/``respond``: the opponent's call (``adaptive``: exchange while the bot still has
    exchange situations to meet). ``leads``: cards the opponent leads, first one in its hand.
    ``goals``: the situation tags the deal aims at."""

    name: str
    bot_role: str
    elder: str
    dealer: str
    turn_up: str
    stock: str = ""
    propose: str = "play"
    respond: str = "refuse"
    leads: tuple[str, ...] = ()
    goals: tuple[str, ...] = ()

    def pack(self) -> list[str]:
        return deal_pack(self.elder, self.dealer, self.turn_up, self.stock)


WEAK_STOCK = "9d Td Ad Jd Qd 7s 8s 9s Ts As Js Qs Tc Ac Jc Qc 8h 9h Kc Kd Ks"
"""Trumps are hearts: 16 weak plain cards on top, the two low trumps and the kings last, so a
bot that exchanges keeps a weak hand and goes on exchanging."""

KING_ELDER = DealPlan(
    "king-elder", "elder", elder="Ks 7h 8h 7c 8c", dealer="Ac Tc 9d Td Ad", turn_up="9s",
    respond="refuse", goals=("propose", "king_elder", "lead"),
)  # fmt: skip
FOLLOW = DealPlan(
    "follow", "dealer", elder="Kd Jc Ah Th 9h", dealer="8c Qc 7d 9d Ks", turn_up="8s",
    propose="play", leads=("Kd", "Jc"), goals=("king_dealer", "follow_low", "follow_win", "lead"),
)  # fmt: skip
TRUMP = DealPlan(
    "trump", "dealer", elder="Kh As Js Qs Ks", dealer="7s 8c 9c 7d 8d", turn_up="9s",
    propose="play", leads=("Kh", "Js", "Qs", "Ks", "As"), goals=("trump", "lead", "any"),
)  # fmt: skip
DEALER_X = DealPlan(
    "dealer-exchange", "dealer", elder="Kh Qh Jh Ah Th", dealer="7c 8c 9c 7d 8d", turn_up="7h",
    stock=WEAK_STOCK, propose="adaptive", goals=("respond", "discard_dealer", "short", "skip"),
)  # fmt: skip
ELDER_X = DealPlan(
    "elder-exchange", "elder", elder="7c 8c 9c 7d 8d", dealer="Kh Qh Jh Ah Th", turn_up="7h",
    stock=WEAK_STOCK, respond="adaptive", goals=("propose", "discard_elder", "short"),
)  # fmt: skip


@cache
def _reach(stock: int, xmin: int, goal: str, depth: int) -> bool:
    if stock <= 0 or depth == 0:
        return False
    for x in range(xmin, min(5, stock) + 1):
        rest = stock - x
        if _hit(rest, x, goal):
            return True
        after_bot = rest - min(5, rest)  # assume the bot takes as many as it may
        if rest > 0 and after_bot > 0 and _reach(after_bot, xmin, goal, depth - 1):
            return True
    return False


def _hit(rest: int, x: int, goal: str) -> bool:
    if goal == "short":
        return 1 <= rest <= 4  # the bot discards next with fewer than 5 cards in the stock
    return rest == 0 and x >= 1  # "skip": elder (the opponent) empties the stock


def opponent_discard_count(stock: int, xmin: int, goal: str | None, fast: bool = False) -> int:
    """How many cards the scripted opponent discards to steer the stock toward ``goal``:
    ``short`` (the bot's next discard sees fewer than 5 cards) or ``skip`` (the opponent, elder,
    empties the stock so the bot's discard as dealer is skipped).

    Gentle (default): as few cards as still reach the goal, so the bot keeps drawing the weak
    cards on top of the stock (a bot that exchanges on weak hands goes on exchanging). ``fast``:
    the fewest rounds, for a bot that exchanges at random."""
    top = min(5, stock)
    if goal is None:
        return xmin
    for x in range(xmin, top + 1):
        if _hit(stock - x, x, goal):
            return x
    if fast and goal == "skip" and stock - top <= 6:
        return max(xmin, min(top, stock - 6))  # leave 6: nearly any discard of the bot leaves 1..5
    order = range(top, xmin - 1, -1) if fast else range(xmin, top + 1)
    for x in order:
        rest = stock - x
        after_bot = rest - min(5, rest)
        if rest > 0 and after_bot > 0 and _reach(after_bot, xmin, goal, 6):
            return x
    return top
