"""Rotation, *écarté simple* (ecarte.md §E9.2): bots register in order; the two at the head of
the queue play a match, then both go to the back of the queue; the next two play.

One table: one match at a time, ``games`` matches in all. The winner goes to the back first,
then the loser (the casino's order is not written down; this choice is ours). With an even
number of bots the same pairs recur, as at the casino. Seats alternate by match; each match
has its own seed.
"""

from __future__ import annotations

from collections import deque

from arena.schedule.formats.base import Auction, Pairing, Step, derive_seed


class Rotation:
    """The rotation as a :class:`~arena.schedule.formats.Format`. Raises ``ValueError`` with fewer
    than two bots."""

    name = "rotation"

    def __init__(self, bots: list[str], games: int, seed: int) -> None:
        if len(bots) < 2:
            raise ValueError("a rotation needs at least two bots")
        self.queue = deque(bots)
        self.games = games
        self.seed = seed
        self.played = 0
        self.current: Pairing | None = None

    def ready(self, busy: set[str]) -> list[Step]:
        """The next match, if the table is free."""
        if self.current is not None or self.played >= self.games:
            return []
        a, b = self.queue[0], self.queue[1]
        i = self.played
        bot0, bot1 = (a, b) if i % 2 == 0 else (b, a)
        self.current = Pairing(index=i, bot0=bot0, bot1=bot1, seed=derive_seed(self.seed, "rotation", i))
        return [self.current]

    def record(self, pairing: Pairing, winner: str | None) -> None:
        """Both players go to the back of the queue, the winner first."""
        if pairing != self.current:
            raise ValueError(f"unexpected result for {pairing}")
        a, b = self.queue.popleft(), self.queue.popleft()
        first, second = (b, a) if winner == b else (a, b)
        self.queue.extend((first, second))
        self.played += 1
        self.current = None

    def record_auction(self, auction: Auction, bids: dict[str, int]) -> str:
        raise ValueError("a rotation has no auctions")

    @property
    def done(self) -> bool:
        return self.played >= self.games and self.current is None
