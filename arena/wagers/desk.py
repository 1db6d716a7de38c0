"""The contest's gallery wagers kept in the database: :class:`BettingDesk` (ecarte.md §E9.1).

The pure bookkeeping is :mod:`arena.wagers.ledger`; the desk saves it after every change, in the
same transaction as the settled bets' history rows, and tells the betting spectators connected of
each bet's outcome.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Protocol

import msgspec

from arena.store.health import STORAGE_ERRORS
from arena.store.sqlite import Store
from arena.wagers.ledger import Ledger, LedgerRecord, Settlement
from protocol.messages import BetPlaced, BetSettled, Betting


class Gallery(Protocol):
    """Where the desk announces a match's book to every spectator (the contest's
    :class:`arena.net.spectate.SpectatorHub`; the desk sits below the network layer, so it names
    only what it calls)."""

    def announce(self, msg: msgspec.Struct) -> None:
        """Send ``msg`` to every spectator connected."""
        ...


class Feed(Protocol):
    """One betting spectator's feed (an :class:`arena.net.spectate.Subscriber`, registered in
    :attr:`BettingDesk.subscribers` by the server while the spectator is connected)."""

    def push(self, msg: msgspec.Struct | bytes) -> None:
        """Queue ``msg`` for the spectator without waiting."""
        ...


class BettingDesk:
    """The contest's gallery wagers (ecarte.md §E9.1): the pure :class:`arena.wagers.ledger.Ledger`,
    saved to the database after every change (a checked snapshot, plus the settled bets as
    history rows in the same transaction), and the feeds of the betting spectators connected,
    who are told of each bet's outcome. Amounts in cents.

    Every change is one transaction that first re-reads the ledger under the database's write
    lock, so a deposit made by ``arena spectators add`` while the server runs is never
    overwritten, and a crash at any point leaves the last committed state. After a crash,
    :meth:`recover` settles the books the dead server left open."""

    def __init__(self, store: Store, hub: Gallery) -> None:
        self.store = store
        self.hub = hub
        self._unsaved: list[tuple] = []  # settled bets whose save failed: saved with the next one
        self._dirty = False  # a save failed: the ledger in memory is newer than the database's
        self._load()
        self.subscribers: dict[str, Feed] = {}

    def _load(self) -> None:
        """Read the ledger from the database (:class:`arena.wagers.ledger.CorruptState` if it is
        inconsistent)."""
        loaded = self.store.load_ledger()
        if loaded is None:
            self.ledger, self.settled_levies = Ledger(), 0
        else:
            record = msgspec.json.decode(loaded[0], type=LedgerRecord)
            self.ledger, self.settled_levies = Ledger.restore(record, settled_levies=loaded[1]), loaded[1]

    @contextmanager
    def _change(self) -> Iterator[list[tuple]]:
        """One change as one transaction: re-read the ledger, let the caller change it, save it
        with the settled-bet rows the caller appended to the yielded list. On an exception
        nothing is written (and the next change re-reads the database). After a failed save
        (a storage fault) the ledger in memory is the truth: it is not re-read but saved whole,
        with the settled rows kept from that failure, at the next change or retry."""
        settled: list[tuple] = []
        with self.store.transaction():
            if not self._dirty:
                self._load()
            yield settled
            self.save(settled)

    def save(self, settled: list[tuple] = ()) -> None:
        """Persist the ledger (and settled bets). A storage error propagates, and the settled
        rows are kept for the next save (the snapshot is whole each time, so nothing is lost)."""
        rows = self._unsaved + list(settled)
        try:
            self.store.save_ledger(msgspec.json.encode(self.ledger.snapshot()), self.settled_levies, rows)
        except STORAGE_ERRORS:
            self._unsaved, self._dirty = rows, True
            raise
        self._unsaved, self._dirty = [], False

    def deposit(self, name: str, cents: int) -> int:
        """Credit a spectator's bankroll (the only way money enters); returns the balance."""
        with self._change():
            balance = self.ledger.deposit(name, cents)
        return balance

    def open(self, match_id: str, bots: list[str], closes_ms: int) -> None:
        """Open the book of a match and tell every spectator."""
        with self._change():
            self.ledger.open_book(match_id)
        self.hub.announce(Betting(match_id=match_id, bots=bots, closes_ms=closes_ms))

    def place(self, bettor: str, match_id: str, seat: int, cents: int) -> BetPlaced:
        """Take a stake; raises :class:`arena.wagers.ledger.WagerError` (with its ``code``)."""
        with self._change():
            self.ledger.book(match_id).place(bettor, seat, cents)
        return BetPlaced(match_id=match_id, seat=seat, cents=cents, balance=self.ledger.balance(bettor))

    def close(self, match_id: str) -> None:
        """Close betting: the heavier side is refunded newest first."""
        with self._change():
            self.ledger.book(match_id).close()

    def _settle(self, match_id: str, winner: int | None, reason: str) -> tuple[Settlement, list[tuple]]:
        """Settle and drop one book (inside :meth:`_change`); its bets as history rows."""
        result = self.ledger.book(match_id).settle(winner, reason)
        self.settled_levies += result.levy
        self.ledger.forget(match_id)
        rows = [(match_id, b.seq, b.bettor, b.seat, b.stake, b.matched, b.returned, b.payout, b.levy, b.status,
                 reason) for b in result.bets]
        return result, rows

    def settle(self, match_id: str, winner: int | None, reason: str) -> None:
        """Pay out (or return everything for a forfeit, abort or draw) and tell the bettors."""
        with self._change() as settled:
            if match_id not in {b.match_id for b in self.ledger.books}:
                return
            result, rows = self._settle(match_id, winner, reason)
            settled += rows
        for b in result.bets:
            sub = self.subscribers.get(b.bettor)
            if sub is not None:
                sub.push(BetSettled(match_id=match_id, seat=b.seat, stake=b.stake, returned=b.returned,
                                    payout=b.payout, status=b.status, balance=self.ledger.balance(b.bettor)))

    def recover(self) -> list[str]:
        """Settle every book that a server which died (SIGKILL, power cut) left open or closed,
        by the result its match has in the database: a match recorded ``done`` is paid as it
        would have been (the server died between the result's commit and the settlement's);
        any other (``aborted``, ``pending``, unknown) is void, every stake returned (ecarte.md
        §E9.1: an aborted match returns every stake). Run it in the same
        :meth:`arena.store.sqlite.Store.transaction` as
        :meth:`arena.store.sqlite.Store.abort_unfinished_ladder` so that a match's ``aborted`` status
        and its returned stakes are one commit. Returns the match ids settled."""
        with self._change() as settled:
            books = [b.match_id for b in self.ledger.books if b.state != "settled"]
            outcomes = self.store.match_outcomes(books)
            for match_id in books:
                status, winner, reason = outcomes.get(match_id, ("aborted", None, "aborted"))
                if status != "done" or reason is None:
                    winner, reason = None, "aborted"
                settled += self._settle(match_id, winner, reason)[1]
        return books
