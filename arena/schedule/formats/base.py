"""The vocabulary of the tournament formats (:mod:`arena.schedule.formats`): the steps a format
hands out (:class:`Pairing`, :class:`Auction`), the :class:`Format` protocol the runners drive,
:class:`StaticFormat` for schedules known in advance, and :func:`derive_seed`."""

from __future__ import annotations

import random
from typing import Protocol

import msgspec


def derive_seed(seed: int, *parts: object) -> int:
    """A 63-bit seed derived from ``seed`` and ``parts`` (stable across runs and platforms:
    ``random.Random`` seeds a string through SHA-512)."""
    return random.Random(":".join(map(str, (seed, *parts)))).getrandbits(63)


class Pairing(msgspec.Struct, frozen=True):
    """One match to play: ``bot0`` in seat 0, ``bot1`` in seat 1, its deal ``seed``, its
    position ``index`` in the tournament, and ``pair`` (the duplicate pair it belongs to, or
    ``None``)."""

    index: int
    bot0: str
    bot1: str
    seed: int
    pair: str | None = None


class Auction(msgspec.Struct, frozen=True):
    """A chouette auction (ecarte.md §E9.3): every bot of ``bidders`` is asked for a bid of
    chips from its bankroll; ``index`` is the auction's position in the tournament."""

    index: int
    bidders: tuple[str, ...]


Step = Pairing | Auction


class Format(Protocol):
    """What the tournament runner needs of a format."""

    name: str

    def ready(self, busy: set[str]) -> list[Step]:
        """Steps that can start now, none involving a bot in ``busy``. An empty list with
        :attr:`done` False means: wait for a running step to finish."""
        ...

    def record(self, pairing: Pairing, winner: str | None) -> None:
        """The result of a match handed out by :meth:`ready` (``None``: draw or aborted)."""
        ...

    def record_auction(self, auction: Auction, bids: dict[str, int]) -> str:
        """The bids of an auction; returns the bot that takes the seat."""
        ...

    @property
    def done(self) -> bool:
        """True when every step has been handed out and recorded."""
        ...


class StaticFormat:
    """A format whose whole schedule is known in advance (round-robin, gauntlet)."""

    name = "static"

    def __init__(self, schedule: list[Pairing]) -> None:
        self.schedule = schedule
        self._next = 0
        self._open: set[int] = set()
        self._recorded = 0

    def ready(self, busy: set[str]) -> list[Step]:
        """Every scheduled match not yet handed out whose bots are free (in schedule order)."""
        out: list[Step] = []
        taken = set(busy)
        for p in self.schedule[self._next :]:
            if p.index in self._open or p.bot0 in taken or p.bot1 in taken:
                continue
            out.append(p)
            taken.update((p.bot0, p.bot1))
        for p in out:
            self._open.add(p.index)
        while self._next < len(self.schedule) and self.schedule[self._next].index in self._open:
            self._next += 1
        return out

    def record(self, pairing: Pairing, winner: str | None) -> None:
        self._recorded += 1

    def record_auction(self, auction: Auction, bids: dict[str, int]) -> str:
        raise ValueError(f"{self.name} has no auctions")

    @property
    def done(self) -> bool:
        return self._recorded >= len(self.schedule)
