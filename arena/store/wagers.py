"""The wager ledger's rows: its snapshot and the bets of settled books (:mod:`arena.wagers` keeps the books).

A mixin of :class:`arena.store.sqlite.Store` (``self.run``, ``self._tx()``, ``self.dialect``).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import insert, select

from arena.store.schema import wager_bets, wager_ledger
from arena.store.upserts import replace

LEDGER = select(wager_ledger.c.snapshot, wager_ledger.c.settled_levies).where(wager_ledger.c.id == 1)
SAVE_LEDGER = replace(wager_ledger, ("id",), ("snapshot", "settled_levies"))
INSERT_BETS = insert(wager_bets)
BET_COLUMNS = tuple(c.name for c in wager_bets.columns)
"""The columns of a settled bet, in the order of :meth:`Wagers.save_ledger`'s rows."""


class Wagers:
    """The wager ledger of :class:`arena.store.sqlite.Store` (a mixin)."""

    dialect: str
    run: Any
    _tx: Any

    def load_ledger(self) -> tuple[bytes, int] | None:
        """The stored wager ledger: ``(snapshot JSON, levies of settled books dropped from it)``."""
        row = self.run(LEDGER).first()
        return (row[0].encode(), row[1]) if row else None

    def save_ledger(self, snapshot: bytes, settled_levies: int, settled: list[tuple] = ()) -> None:
        """Store the ledger snapshot and, in the same transaction, the bets of books just settled
        (rows ``(match_key, seq, bettor, seat, stake, matched, returned, payout, levy, status,
        reason)``)."""
        with self._tx():
            self.run(SAVE_LEDGER[self.dialect], {"id": 1, "snapshot": snapshot.decode(),
                                                 "settled_levies": settled_levies})
            if settled:
                self.run(INSERT_BETS, [dict(zip(BET_COLUMNS, row)) for row in settled])
