"""The chouette (ecarte.md §E9.3): one bot, the *chouetteur*, holds the table against
challengers taken from the queue in order. A challenger who loses goes to the back of the
queue and the next one comes; a challenger who wins stays. When the chouetteur has lost twice
in his reign, the seat is auctioned.

Auctions: every waiting bot bids chips from its bankroll (a ``bid`` decision; a bot that does
not answer, or answers wrongly, bids 0); the highest bid takes the seat, ties going to the bot
nearest the head of the queue, and the winner pays the bid to the house (the chouette's levy).
The first chouetteur is auctioned the same way. When a reign ends the old chouetteur goes to
the back of the queue; a challenger seated at that moment keeps his place at its head.

One table: one match at a time, ``games`` matches in all. Seats alternate by match. Bankrolls
start at :data:`BANKROLL` chips; chips only ever move from a bidder to the house, so the sum of
bankrolls plus the house is constant.
"""

from __future__ import annotations

from collections import deque

import msgspec

from arena.schedule.formats.base import Auction, Pairing, Step, derive_seed

BANKROLL = 1000
"""Chips each bot starts with."""
BID_STEP = 10
MAX_BID = 500
"""Bids are multiples of :data:`BID_STEP` from 0 to min(bankroll, :data:`MAX_BID`)."""
LOSSES_PER_REIGN = 2


def legal_bids(bankroll: int) -> list[int]:
    """The bids a bot with ``bankroll`` chips may make (the ``legal`` list of a ``bid``)."""
    return list(range(0, min(bankroll, MAX_BID) + 1, BID_STEP))


class Reign(msgspec.Struct):
    """One chouetteur's time at the table: the price paid, matches played, challengers
    beaten, and losses."""

    chouetteur: str
    price: int
    matches: int = 0
    beaten: int = 0
    losses: int = 0


class Chouette:
    """The chouette as a :class:`~arena.schedule.formats.Format`. Raises ``ValueError`` with fewer
    than two bots."""

    name = "chouette"

    def __init__(self, bots: list[str], games: int, seed: int) -> None:
        if len(bots) < 2:
            raise ValueError("a chouette needs at least two bots")
        self.queue: deque[str] = deque(bots)
        self.games = games
        self.seed = seed
        self.bankrolls = {b: BANKROLL for b in bots}
        self.house = 0
        self.chouetteur: str | None = None
        self.challenger: str | None = None
        self.reigns: list[Reign] = []
        self.played = 0
        self.auctions = 0
        self.current: Step | None = None

    def ready(self, busy: set[str]) -> list[Step]:
        """The next auction or match, if the table is free."""
        if self.current is not None or self.played >= self.games:
            return []
        if self.chouetteur is None:
            self.current = Auction(index=self.auctions, bidders=tuple(self.queue))
            return [self.current]
        if self.challenger is None:
            self.challenger = self.queue.popleft()
        i = self.played
        a, b = self.chouetteur, self.challenger
        bot0, bot1 = (a, b) if i % 2 == 0 else (b, a)
        self.current = Pairing(index=i, bot0=bot0, bot1=bot1, seed=derive_seed(self.seed, "chouette", i))
        return [self.current]

    def record_auction(self, auction: Auction, bids: dict[str, int]) -> str:
        """Seat the highest bidder (ties: queue order), who pays the house. Bids outside
        :func:`legal_bids` count as 0."""
        if auction != self.current:
            raise ValueError(f"unexpected auction result for {auction}")
        clean = {b: (bids.get(b, 0) if bids.get(b, 0) in legal_bids(self.bankrolls[b]) else 0)
                 for b in auction.bidders}
        winner = max(auction.bidders, key=lambda b: (clean[b], -auction.bidders.index(b)))
        price = clean[winner]
        self.bankrolls[winner] -= price
        self.house += price
        self.queue.remove(winner)
        self.chouetteur = winner
        self.reigns.append(Reign(chouetteur=winner, price=price))
        self.auctions += 1
        self.current = None
        return winner

    def record(self, pairing: Pairing, winner: str | None) -> None:
        """Apply a match result: a beaten challenger is replaced; a chouetteur beaten twice
        loses the seat (auctioned next)."""
        if pairing != self.current:
            raise ValueError(f"unexpected result for {pairing}")
        reign = self.reigns[-1]
        reign.matches += 1
        self.played += 1
        self.current = None
        if winner == self.chouetteur:
            reign.beaten += 1
            self.queue.append(self.challenger)
            self.challenger = None
        elif winner == self.challenger:
            reign.losses += 1
            if reign.losses >= LOSSES_PER_REIGN:
                self.queue.appendleft(self.challenger)
                self.queue.append(self.chouetteur)
                self.chouetteur = self.challenger = None

    @property
    def done(self) -> bool:
        return self.played >= self.games and self.current is None
