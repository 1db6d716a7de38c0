"""Gallery wagers (ecarte.md §E9.1): spectators stake on a seat, the sides are balanced, 5% levy.

Pure bookkeeping: no I/O, no clock, no randomness. **Every amount is an ``int`` number of euro
cents** (``1234`` is 12.34 EUR); nothing here ever holds a float.

The rule, as the casinos practised it (``ecarte-casinos-fr.txt``) and as §E9.1 states it:

* Before a match starts, spectators stake on either player (seat 0 or seat 1). The minimum
  stake is :data:`MIN_STAKE` (10 cents); there is no maximum.
* At the close of betting the two sides must be equal: the excess on the heavier side is handed
  back to that side's **last-registered** bettors, newest first, until the sides are equal. A bet
  that is only partly handed back keeps the rest in play (even if the rest is under the minimum:
  the minimum applies to placing a bet, not to what the balancing leaves of it).
* Bettors on the loser lose their stake. Bettors on the winner receive twice their stake less a
  5% levy on their winnings: ``payout = 2 * stake - stake * 5 // 100`` (:func:`levy_on`), where
  ``stake`` is the part of the bet left in play after balancing. The levy goes to the house.
* A forfeited or aborted match returns every stake still in play.

Decisions taken here (the rule is silent on them):

* **Void results.** A match is void - every stake still in play goes back to its bettor, no levy -
  when it has no winner (``winner is None``: an abort or a Piquet draw) or when its reason is in
  :data:`VOID_REASONS` (``aborted``, ``draw``, ``forfeit_timeout``, ``forfeit_disconnect``,
  ``forfeit_protocol``, ``forfeit_illegal``) or starts with ``forfeit_``, *even if a winner seat
  is given* (the referee names the non-faulty seat as winner of a forfeit; the gallery did not
  bet on a forfeit). Any other reason with a winner (``target``, ``rubicon``, ``cent``, ...) is a
  match played out, and pays. See :func:`is_void`.
* **One side empty.** If nobody bet on one seat, the excess is the whole other side, so the
  balancing returns all of it at the close: there is nothing to win against.
* **Both seats, same bettor.** Allowed: each bet is separate, keeps its own place in the
  registration order and is balanced and settled on its own (a hedge simply costs the levy).
* **Registration order** is the order of successful :meth:`Book.place` calls on that book
  (``Bet.seq`` = 0, 1, 2, ...); a rejected bet takes no place.
* **Stakes are held at once**: :meth:`Book.place` takes the stake out of the bettor's balance
  (the stake is then *held* by the book), so a bettor can never stake money twice.
* **Accounts.** :meth:`Ledger.deposit` is the only way money enters (tracked in
  :attr:`Ledger.total_deposited`); there is no withdrawal yet. An unknown name has balance 0.

Conservation, checked by :meth:`Ledger.check` and the tests: at every moment
``sum(balances) + held stakes + house == total_deposited``; no balance is ever negative; the
house balance is exactly the sum of the levies of the settled books.

Using it (what the server and the store need)::

    ledger = Ledger()
    ledger.deposit("alice", 500)
    book = ledger.open_book("t1/m7")        # one book per match, keyed by any string
    bet = book.place("alice", 0, 120)       # -> Bet (seq, bettor, seat, stake, ...) or WagerError
    refunds = book.close()                  # the match starts: -> [Refund], newest first
    settlement = book.settle(result.winner, result.reason)   # -> Settlement (every Bet's outcome)

Errors are :class:`WagerError` subclasses carrying a stable ``code`` (``betting_closed``,
``below_minimum``, ``insufficient_funds``, ``bad_seat``, ``bad_amount``, ``bad_bettor``,
``already_settled``, ``duplicate_book``, ``unknown_book``, ``corrupt_state``), suitable for a
protocol ``error`` message. A method that raises has changed nothing.

Persistence: :class:`Bet`, :class:`Refund`, :class:`Settlement`, :class:`BookRecord` and
:class:`LedgerRecord` are ``msgspec.Struct`` types. :meth:`Ledger.snapshot` gives the whole state
as one :class:`LedgerRecord` (``msgspec.json.encode`` it), :meth:`Ledger.restore` rebuilds a ledger
from one and checks it; :meth:`Book.record` gives one book alone, and after every operation the
things that changed are the accounts named in the returned records, :attr:`Ledger.house` and that
book.
"""

from __future__ import annotations

from typing import Literal

import msgspec

MIN_STAKE = 10
"""The smallest stake, in cents (§E9.1: 10 euro cents)."""

MAX_DEPOSIT = 100_000_000
"""The largest single deposit, in cents (1,000,000.00 EUR)."""

MAX_BALANCE = 10**12
"""The largest balance a deposit may bring an account to, in cents (10,000,000,000.00 EUR): every
sum of the ledger stays far inside SQLite's 64-bit integers."""

LEVY_PERCENT = 5
"""The house's levy on a winning bet's winnings, in percent, rounded down to the cent."""

FORFEIT_REASONS = frozenset({"forfeit_timeout", "forfeit_disconnect", "forfeit_protocol", "forfeit_illegal"})
VOID_REASONS = FORFEIT_REASONS | {"aborted", "draw"}
"""Match-end reasons that return every stake (see :func:`is_void`)."""

BetStatus = Literal["held", "returned", "won", "lost"]
BookState = Literal["open", "closed", "settled"]


# ---------------------------------------------------------------------------------------------
# Errors


class WagerError(Exception):
    """A refused wager operation; ``code`` names the failure (stable, for protocol errors)."""

    code = "wager_error"

    def __init__(self, detail: str) -> None:
        super().__init__(f"{self.code}: {detail}")
        self.detail = detail


class BettingClosed(WagerError):
    """The book is closed (the match has started) or settled."""

    code = "betting_closed"


class BelowMinimum(WagerError):
    """An integer stake under :data:`MIN_STAKE` cents (zero and negatives included)."""

    code = "below_minimum"


class InsufficientFunds(WagerError):
    """The bettor's balance is smaller than the stake (an unknown bettor has 0)."""

    code = "insufficient_funds"


class BadSeat(WagerError):
    """A seat (or a winner seat) that is not the int 0 or 1."""

    code = "bad_seat"


class BadAmount(WagerError):
    """An amount that is not an ``int`` of cents (a float, a string, a bool), or a deposit
    outside 1..:data:`MAX_DEPOSIT` (or that would bring a balance past :data:`MAX_BALANCE`)."""

    code = "bad_amount"


class BadBettor(WagerError):
    """A bettor name that is not a non-empty string."""

    code = "bad_bettor"


class AlreadySettled(WagerError):
    """The book was settled already: a book is settled only once."""

    code = "already_settled"


class DuplicateBook(WagerError):
    """A book is already open under this match id."""

    code = "duplicate_book"


class UnknownBook(WagerError):
    """No book under this match id."""

    code = "unknown_book"


class CorruptState(WagerError):
    """A restored (or checked) state breaks an invariant: money created or lost, a negative
    balance, bets out of order or inconsistent with their book's state."""

    code = "corrupt_state"


# ---------------------------------------------------------------------------------------------
# Records (msgspec Structs: what is displayed and persisted)


class Bet(msgspec.Struct, frozen=True, kw_only=True):
    """One bet and, once known, its outcome. All amounts in cents.

    ``seq`` is its place in the book's registration order (0 = first). ``stake`` is what was
    placed and taken from the bettor's balance. ``matched`` is the part left in play after the
    balancing at the close (0 while the book is open, and for a bet returned in full).
    ``returned`` is everything handed back without a win: the balancing refund at the close plus,
    for a void match, the stake in play. ``payout`` is what a winning bet is credited at the
    settlement (``2 * matched - levy``), ``levy`` the house's share. ``status``:

    * ``held`` - the book holds ``stake - returned`` of it (book open, or closed and not settled);
    * ``returned`` - returned in full (at the close, or because the match was void);
    * ``won`` / ``lost`` - settled.

    What the bettor got back in all: ``returned + payout``; net gain: ``returned + payout - stake``.
    """

    seq: int
    bettor: str
    seat: int
    stake: int
    matched: int = 0
    returned: int = 0
    payout: int = 0
    levy: int = 0
    status: BetStatus = "held"

    @property
    def held(self) -> int:
        """Cents of this bet the book still holds."""
        return self.stake - self.returned if self.status == "held" else 0


class Refund(msgspec.Struct, frozen=True, kw_only=True):
    """Cents handed back to a bettor by the balancing at the close."""

    seq: int
    bettor: str
    seat: int
    cents: int


class Settlement(msgspec.Struct, frozen=True, kw_only=True):
    """The settlement of one book: ``void`` if every stake went back (see :func:`is_void`);
    ``levy`` the house's total take; ``refunds`` the balancing refunds when the settlement had to
    close the book first (else empty); ``bets`` every bet, in registration order, with its
    outcome."""

    match_id: str
    winner: int | None
    reason: str
    void: bool
    levy: int
    refunds: list[Refund]
    bets: list[Bet]


class BookRecord(msgspec.Struct, kw_only=True):
    """One book as persisted: its state, its bets in registration order, and once settled the
    result it was settled with."""

    match_id: str
    state: BookState = "open"
    bets: list[Bet] = msgspec.field(default_factory=list)
    winner: int | None = None
    reason: str = ""
    void: bool = False


class LedgerRecord(msgspec.Struct, kw_only=True):
    """A whole ledger as persisted (see :meth:`Ledger.snapshot` and :meth:`Ledger.restore`)."""

    accounts: dict[str, int] = msgspec.field(default_factory=dict)
    house: int = 0
    total_deposited: int = 0
    books: list[BookRecord] = msgspec.field(default_factory=list)


# ---------------------------------------------------------------------------------------------
# Rules as functions


def levy_on(stake: int) -> int:
    """The house's levy on a winning stake of ``stake`` cents: 5% of the winnings (which equal the
    stake), rounded down to the cent. ``levy_on(30) == 1``, ``levy_on(10) == 0``."""
    return stake * LEVY_PERCENT // 100


def payout_on(stake: int) -> int:
    """What a winning stake of ``stake`` cents is paid: ``2 * stake - levy_on(stake)``."""
    return 2 * stake - levy_on(stake)


def is_void(winner: int | None, reason: str) -> bool:
    """Whether a match result returns every stake: no winner, or a forfeit / abort / draw reason
    (one of :data:`VOID_REASONS` or any ``forfeit_*``), whatever the winner seat says."""
    return winner is None or reason in VOID_REASONS or reason.startswith("forfeit_")


def _is_int(x: object) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _check_seat(seat: object, what: str = "seat") -> int:
    if not _is_int(seat) or seat not in (0, 1):
        raise BadSeat(f"{what} must be 0 or 1, not {seat!r}")
    return seat  # type: ignore[return-value]


def _check_name(name: object) -> str:
    if not isinstance(name, str) or not name:
        raise BadBettor(f"a bettor is a non-empty name, not {name!r}")
    return name


# ---------------------------------------------------------------------------------------------
# Ledger and books


class Ledger:
    """Spectators' accounts (name -> balance in cents), the house's balance, and the books.

    Money enters only by :meth:`deposit`; it then moves between the accounts, the books (held
    stakes) and the house, and is never created or lost (:meth:`check`).
    """

    def __init__(self) -> None:
        self._accounts: dict[str, int] = {}
        self._house = 0
        self._total_deposited = 0
        self._books: dict[str, Book] = {}

    # -- accounts ----------------------------------------------------------------------------

    @property
    def accounts(self) -> dict[str, int]:
        """A copy of the accounts: spectator name -> balance in cents."""
        return dict(self._accounts)

    @property
    def house(self) -> int:
        """The house's balance in cents: the sum of the levies taken."""
        return self._house

    @property
    def total_deposited(self) -> int:
        """All the cents ever deposited: the total of money in the system."""
        return self._total_deposited

    def balance(self, name: str) -> int:
        """``name``'s balance in cents (0 for an unknown name); stakes held are not included."""
        return self._accounts.get(name, 0)

    def deposit(self, name: str, cents: int) -> int:
        """Credit ``cents`` (an int from 1 to :data:`MAX_DEPOSIT`) to ``name``, creating the
        account; returns the new balance. Raises :class:`BadBettor`, or :class:`BadAmount` (also
        when the balance would pass :data:`MAX_BALANCE`)."""
        _check_name(name)
        if not _is_int(cents) or not 0 < cents <= MAX_DEPOSIT:
            raise BadAmount(f"a deposit is a whole number of cents from 1 to {MAX_DEPOSIT}, not {cents!r}")
        if self._accounts.get(name, 0) + cents > MAX_BALANCE:
            raise BadAmount(f"a balance may not exceed {MAX_BALANCE} cents")
        self._accounts[name] = self._accounts.get(name, 0) + cents
        self._total_deposited += cents
        return self._accounts[name]

    # -- books -------------------------------------------------------------------------------

    def open_book(self, match_id: str) -> Book:
        """Open the book of match ``match_id`` (any string key; :class:`DuplicateBook` if taken)."""
        if match_id in self._books:
            raise DuplicateBook(f"a book for match {match_id!r} exists already")
        book = Book(self, match_id)
        self._books[match_id] = book
        return book

    def book(self, match_id: str) -> Book:
        """The book of ``match_id`` (:class:`UnknownBook` if none)."""
        try:
            return self._books[match_id]
        except KeyError:
            raise UnknownBook(f"no book for match {match_id!r}") from None

    @property
    def books(self) -> list[Book]:
        """Every book kept, in the order they were opened."""
        return list(self._books.values())

    def forget(self, match_id: str) -> None:
        """Drop a *settled* book (once persisted) so a long-running ledger stays small. The house
        keeps its levies, so afterwards pass their total to :meth:`restore` as ``settled_levies``.
        :class:`UnknownBook` if there is no such book, :class:`CorruptState` if it is not settled
        (it still holds stakes)."""
        book = self.book(match_id)
        if book.state != "settled":
            raise CorruptState(f"book {match_id!r} is {book.state}: only a settled book can be dropped")
        del self._books[match_id]

    @property
    def held(self) -> int:
        """Cents held by all the books (stakes placed and not yet returned or settled)."""
        return sum(b.held for b in self._books.values())

    # -- invariants and persistence ----------------------------------------------------------

    def check(self) -> None:
        """Raise :class:`CorruptState` unless no balance is negative and
        ``sum(balances) + held + house == total_deposited``."""
        neg = {n: c for n, c in self._accounts.items() if c < 0}
        if neg or self._house < 0:
            raise CorruptState(f"negative balances: {neg or {'house': self._house}}")
        total = sum(self._accounts.values()) + self.held + self._house
        if total != self._total_deposited:
            raise CorruptState(
                f"money created or lost: balances {sum(self._accounts.values())} + held {self.held} + house "
                f"{self._house} = {total} != {self._total_deposited} deposited"
            )

    def snapshot(self) -> LedgerRecord:
        """The whole state as a :class:`LedgerRecord` (independent of this ledger)."""
        return LedgerRecord(
            accounts=dict(self._accounts),
            house=self._house,
            total_deposited=self._total_deposited,
            books=[b.record() for b in self._books.values()],
        )

    @classmethod
    def restore(cls, record: LedgerRecord, *, settled_levies: int | None = None) -> Ledger:
        """Rebuild a ledger from :meth:`snapshot`'s record, checking every book and
        :meth:`check`; :class:`CorruptState` if anything is inconsistent. ``settled_levies``
        (optional) is the levy total of books no longer in the record (dropped with
        :meth:`forget`); when given, the house must equal it plus the levies of the record's
        settled books."""
        ledger = cls()
        for name, cents in record.accounts.items():
            if not isinstance(name, str) or not name or not _is_int(cents):
                raise CorruptState(f"bad account {name!r}: {cents!r}")
            ledger._accounts[name] = cents
        if not _is_int(record.house) or not _is_int(record.total_deposited):
            raise CorruptState("house and total_deposited must be ints of cents")
        ledger._house = record.house
        ledger._total_deposited = record.total_deposited
        for rec in record.books:
            if rec.match_id in ledger._books:
                raise CorruptState(f"two books for match {rec.match_id!r}")
            ledger._books[rec.match_id] = Book._from_record(ledger, rec)
        ledger.check()
        if settled_levies is not None:
            levies = settled_levies + sum(bet.levy for b in ledger._books.values() for bet in b._bets)
            if levies != ledger._house:
                raise CorruptState(f"house {ledger._house} != levies {levies}")
        return ledger

    # -- money movements (for Book only) -------------------------------------------------------

    def _debit(self, name: str, cents: int) -> None:
        have = self._accounts.get(name, 0)
        if have < cents:
            raise InsufficientFunds(f"{name!r} has {have} cents, the stake is {cents}")
        self._accounts[name] = have - cents

    def _credit(self, name: str, cents: int) -> None:
        self._accounts[name] = self._accounts.get(name, 0) + cents


class Book:
    """The wagers on one match: ``open`` (taking bets) -> ``closed`` (balanced, match under way)
    -> ``settled`` (paid out). Made by :meth:`Ledger.open_book`."""

    def __init__(self, ledger: Ledger, match_id: str) -> None:
        self._ledger = ledger
        self.match_id = match_id
        self._state: BookState = "open"
        self._bets: list[Bet] = []
        self._winner: int | None = None
        self._reason = ""
        self._void = False

    # -- reading -----------------------------------------------------------------------------

    @property
    def state(self) -> BookState:
        return self._state

    @property
    def bets(self) -> list[Bet]:
        """Every bet in registration order, with its current state/outcome (immutable Structs)."""
        return list(self._bets)

    def totals(self) -> tuple[int, int]:
        """Cents in play on seat 0 and seat 1: the stakes while open, the matched (equal) stakes
        once closed, (0, 0) once settled."""
        t = [0, 0]
        for bet in self._bets:
            t[bet.seat] += bet.held
        return t[0], t[1]

    @property
    def held(self) -> int:
        """Cents this book holds."""
        return sum(bet.held for bet in self._bets)

    @property
    def winner(self) -> int | None:
        """The winner seat it was settled with (None before, or for no winner)."""
        return self._winner

    @property
    def reason(self) -> str:
        """The match-end reason it was settled with ('' before)."""
        return self._reason

    @property
    def void(self) -> bool:
        """Whether it was settled as void (every stake returned)."""
        return self._void

    def record(self) -> BookRecord:
        """This book as a :class:`BookRecord` (for persistence or display)."""
        return BookRecord(
            match_id=self.match_id,
            state=self._state,
            bets=list(self._bets),
            winner=self._winner,
            reason=self._reason,
            void=self._void,
        )

    # -- operations --------------------------------------------------------------------------

    def place(self, bettor: str, seat: int, cents: int) -> Bet:
        """Stake ``cents`` of ``bettor``'s balance on ``seat`` (0 or 1); returns the new :class:`Bet`.

        Checked in this order, nothing changes on failure: :class:`BettingClosed` (book not open),
        :class:`BadSeat`, :class:`BadAmount` (not an int), :class:`BelowMinimum` (under
        :data:`MIN_STAKE`), :class:`BadBettor`, :class:`InsufficientFunds`. The stake leaves the
        balance at once and is held by the book.
        """
        if self._state != "open":
            raise BettingClosed(f"betting on match {self.match_id!r} is closed ({self._state})")
        _check_seat(seat)
        if not _is_int(cents):
            raise BadAmount(f"a stake is an int of cents, not {cents!r}")
        if cents < MIN_STAKE:
            raise BelowMinimum(f"the minimum stake is {MIN_STAKE} cents, not {cents}")
        _check_name(bettor)
        self._ledger._debit(bettor, cents)
        bet = Bet(seq=len(self._bets), bettor=bettor, seat=seat, stake=cents)
        self._bets.append(bet)
        return bet

    def close(self) -> list[Refund]:
        """Close betting and balance the sides: the heavier side's excess goes back to its
        last-registered bettors, newest first, until the sides are equal (a bet partly returned
        keeps the rest in play; with one side empty, the other is returned in full). Returns the
        refunds made, newest first. :class:`BettingClosed` if not open."""
        if self._state != "open":
            raise BettingClosed(f"the book of match {self.match_id!r} is {self._state} already")
        t0, t1 = self.totals()
        heavy = 0 if t0 > t1 else 1
        excess = abs(t0 - t1)
        refunds: list[Refund] = []
        bets = self._bets
        for i in range(len(bets) - 1, -1, -1):
            if excess == 0:
                break
            bet = bets[i]
            if bet.seat != heavy:
                continue
            back = min(excess, bet.stake)
            excess -= back
            self._ledger._credit(bet.bettor, back)
            bets[i] = msgspec.structs.replace(bet, returned=back, status="returned" if back == bet.stake else "held")
            refunds.append(Refund(seq=bet.seq, bettor=bet.bettor, seat=bet.seat, cents=back))
        for i, bet in enumerate(bets):
            if bet.status == "held":
                bets[i] = msgspec.structs.replace(bet, matched=bet.stake - bet.returned)
        self._state = "closed"
        return refunds

    def settle(self, winner: int | None, reason: str) -> Settlement:
        """Pay out the match's result (closing the book first if it is open).

        ``winner`` is the winning seat or None; ``reason`` the match-end reason (e.g.
        ``MatchResult.reason``). If :func:`is_void`, every stake in play goes back; otherwise the
        winner's bettors get :func:`payout_on` their matched stake, the loser's get nothing, and
        the house takes the levies. :class:`AlreadySettled` the second time; :class:`BadSeat` for a
        winner other than 0, 1 or None (nothing changes then).
        """
        if self._state == "settled":
            raise AlreadySettled(f"the book of match {self.match_id!r} is settled already")
        if winner is not None:
            _check_seat(winner, "the winner")
        if not isinstance(reason, str):
            raise WagerError(f"a reason is a string, not {reason!r}")
        refunds = self.close() if self._state == "open" else []
        void = is_void(winner, reason)
        ledger = self._ledger
        total_levy = 0
        for i, bet in enumerate(self._bets):
            if bet.status != "held":
                continue
            m = bet.matched
            if void:
                ledger._credit(bet.bettor, m)
                self._bets[i] = msgspec.structs.replace(bet, returned=bet.returned + m, status="returned")
            elif bet.seat == winner:
                levy = levy_on(m)
                ledger._credit(bet.bettor, 2 * m - levy)
                ledger._house += levy
                total_levy += levy
                self._bets[i] = msgspec.structs.replace(bet, payout=2 * m - levy, levy=levy, status="won")
            else:
                self._bets[i] = msgspec.structs.replace(bet, status="lost")
        self._state = "settled"
        self._winner = winner
        self._reason = reason
        self._void = void
        return Settlement(
            match_id=self.match_id,
            winner=winner,
            reason=reason,
            void=void,
            levy=total_levy,
            refunds=refunds,
            bets=list(self._bets),
        )

    # -- restoring ---------------------------------------------------------------------------

    @classmethod
    def _from_record(cls, ledger: Ledger, rec: BookRecord) -> Book:
        book = cls(ledger, rec.match_id)
        where = f"book {rec.match_id!r}"
        for i, bet in enumerate(rec.bets):
            _validate_bet(bet, i, rec.state, where)
        if rec.state == "closed":
            matched = [0, 0]
            for bet in rec.bets:
                matched[bet.seat] += bet.held
            if matched[0] != matched[1]:
                raise CorruptState(f"{where}: closed with unequal sides {matched}")
        if rec.state != "settled" and (rec.winner is not None or rec.reason or rec.void):
            raise CorruptState(f"{where}: a result on an unsettled book")
        if rec.state == "settled":
            if rec.winner is not None and rec.winner not in (0, 1):
                raise CorruptState(f"{where}: winner {rec.winner!r}")
            if rec.void != is_void(rec.winner, rec.reason):
                raise CorruptState(f"{where}: void={rec.void} disagrees with {rec.winner!r}/{rec.reason!r}")
            for bet in rec.bets:
                if bet.status == "won" and (rec.void or bet.seat != rec.winner):
                    raise CorruptState(f"{where}: bet {bet.seq} won on seat {bet.seat}")
                if bet.status == "lost" and (rec.void or bet.seat == rec.winner):
                    raise CorruptState(f"{where}: bet {bet.seq} lost on seat {bet.seat}")
                if bet.status == "returned" and bet.matched and not rec.void:
                    raise CorruptState(f"{where}: bet {bet.seq} returned after play on a result that pays")
        book._state = rec.state
        book._bets = list(rec.bets)
        book._winner = rec.winner
        book._reason = rec.reason
        book._void = rec.void
        return book


def _validate_bet(bet: Bet, i: int, state: BookState, where: str) -> None:
    """A persisted bet agrees with the rules and its book's state (else :class:`CorruptState`)."""
    ints = (bet.seq, bet.seat, bet.stake, bet.matched, bet.returned, bet.payout, bet.levy)
    if not all(_is_int(x) for x in ints) or bet.seq != i or bet.seat not in (0, 1) or bet.stake < MIN_STAKE:
        raise CorruptState(f"{where}: bet {i} malformed: {bet!r}")
    if not bet.bettor or min(bet.matched, bet.returned, bet.payout, bet.levy) < 0:
        raise CorruptState(f"{where}: bet {i} malformed: {bet!r}")
    kept = bet.matched + bet.returned == bet.stake  # closed or settled after play: no cent unaccounted
    unpaid = bet.payout == bet.levy == 0
    if state == "open":
        ok = bet.status == "held" and bet.matched == bet.returned == 0 and unpaid
    elif state == "closed":
        ok = bet.status in ("held", "returned") and kept and unpaid and (bet.status == "held") == (bet.matched > 0)
    elif bet.status == "returned":
        ok = bet.returned == bet.stake and unpaid
    elif bet.status == "lost":
        ok = bet.matched > 0 and kept and unpaid
    else:
        ok = (
            bet.status == "won"
            and bet.matched > 0
            and kept
            and bet.levy == levy_on(bet.matched)
            and bet.payout == payout_on(bet.matched)
        )
    if not ok:
        raise CorruptState(f"{where} ({state}): bet {i} inconsistent: {bet!r}")
