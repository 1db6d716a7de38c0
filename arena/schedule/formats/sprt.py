"""The SPRT's format (``arena sprt``): duplicate pairs between two bots until the sequential test
(:class:`arena.stats.sprt.SPRT`) decides. The statistics are in :mod:`arena.stats.sprt`; which
match comes next is here, beside the other formats."""

from __future__ import annotations

from arena.schedule.formats.base import Pairing, derive_seed
from arena.stats.sprt import SPRT


class SprtFormat:
    """A format (see :mod:`arena.schedule.formats`) that plays duplicate pairs between ``bot`` and ``vs``
    until the :class:`SPRT` accepts H0 or H1, or ``max_pairs`` pairs were played.

    Each pair is two matches on one seed with the seats swapped (ecarte.md §E8.2), played one
    after the other (the same two bots cannot be in two matches at once). ``on_pair(sprt)`` is
    called after each completed pair, e.g. to print :meth:`SPRT.summary`.
    """

    name = "sprt"

    def __init__(self, bot: str, vs: str, seed: int, sprt: SPRT, max_pairs: int = 10_000, on_pair=None) -> None:
        self.bot, self.vs, self.seed = bot, vs, seed
        self.sprt = sprt
        self.max_pairs = max_pairs
        self.on_pair = on_pair
        self.index = 0
        self.current = None
        self._first: float | None = None  # bot's points in the pair's first match

    def ready(self, busy: set[str]) -> list:
        """The next match of the current pair, if the table is free and the test goes on."""
        if self.current is not None or self.done:
            return []
        k, second = divmod(self.index, 2)
        bot0, bot1 = (self.vs, self.bot) if second else (self.bot, self.vs)
        self.current = Pairing(index=self.index, bot0=bot0, bot1=bot1,
                               seed=derive_seed(self.seed, "sprt", k), pair=f"{self.bot}|{self.vs}|{k}")
        return [self.current]

    def record(self, pairing, winner: str | None) -> None:
        """Count the match; after the second of a pair, feed the pair's points to the test."""
        points = 1.0 if winner == self.bot else 0.0 if winner == self.vs else 0.5
        self.current = None
        self.index += 1
        if self.index % 2:
            self._first = points
            return
        self.sprt.add(self._first + points)
        if self.on_pair:
            self.on_pair(self.sprt)

    def record_auction(self, auction, bids) -> str:
        raise ValueError("an SPRT has no auctions")

    @property
    def done(self) -> bool:
        return self.current is None and self.index % 2 == 0 and (
            self.sprt.status() != "continue" or self.sprt.pairs >= self.max_pairs
        )
