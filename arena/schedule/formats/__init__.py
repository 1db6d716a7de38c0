"""Tournament formats: who plays whom next, in which seats, with which seed.

A format is a pure state machine. The tournament runner asks it for the steps it can start
now (:meth:`Format.ready`), plays them, and reports each outcome back (:meth:`Format.record`
for a match, :meth:`Format.record_auction` for a chouette auction). Static formats
(round-robin, gauntlet) hand out their whole schedule at once; the casino formats (rotation,
chouette) decide the next match from the last result, one table at a time. Because a format
depends only on its bots, its seed and the results fed to it, a tournament resumed after a
crash rebuilds the same state by replaying the stored results in order.

Seeds: every match seed is :func:`derive_seed` of the tournament seed and the match's
position; in a *duplicate pair* (ecarte.md §E8.2) both matches share one seed with the seats
swapped, so each bot plays the cards the other had.
"""

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


def make_format(name: str, bots: list[str], games: int, seed: int, duplicate: bool = True,
                hero: str | None = None) -> Format:
    """Build a format by name: ``round-robin``, ``gauntlet`` (``hero`` against all others),
    ``rotation``, ``chouette`` or ``duplicate-deals`` (a round-robin of duplicate pairs of
    fixed-length matches, rated deal by deal: :mod:`arena.schedule.formats.duplicate_deals`). ``games``
    is matches per pair for round-robin, gauntlet and duplicate-deals, and matches in all for
    rotation and chouette. Raises ``ValueError`` for a bad name or arguments."""
    from arena.schedule.formats.chouette import Chouette
    from arena.schedule.formats.gauntlet import Gauntlet
    from arena.schedule.formats.rotation import Rotation
    from arena.schedule.formats.round_robin import RoundRobin

    if len(set(bots)) != len(bots):
        raise ValueError("bot names must be unique")
    if games < 1:
        raise ValueError("games must be at least 1")
    if name == "round-robin":
        return RoundRobin(bots, games, seed, duplicate)
    if name == "gauntlet":
        return Gauntlet(bots, games, seed, duplicate, hero or (bots[0] if bots else ""))
    if name == "rotation":
        return Rotation(bots, games, seed)
    if name == "chouette":
        return Chouette(bots, games, seed)
    if name == "duplicate-deals":
        from arena.schedule.formats.duplicate_deals import DuplicateDeals

        return DuplicateDeals(bots, games, seed)
    raise ValueError(f"unknown format {name!r} (known: {', '.join(FORMATS)})")


FORMATS = ("round-robin", "gauntlet", "rotation", "chouette", "duplicate-deals")


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
