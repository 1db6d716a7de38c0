"""Gallery wagers (ecarte.md §E9.1): hand-computed balancing and payouts, every refused bet, void
results, persistence; and a hypothesis state machine over many books in any interleaving that
checks money is never created or lost, balances never go negative, the house gains exactly the 5%
levies, the sides are equal after every close, and nothing stays held once every book is settled.
All amounts are integer cents."""

from __future__ import annotations

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from arena.wagers.ledger import (
    MIN_STAKE,
    VOID_REASONS,
    AlreadySettled,
    BadAmount,
    BadBettor,
    BadSeat,
    BelowMinimum,
    Bet,
    BettingClosed,
    CorruptState,
    DuplicateBook,
    InsufficientFunds,
    Ledger,
    LedgerRecord,
    Refund,
    UnknownBook,
    WagerError,
    is_void,
    levy_on,
    payout_on,
)
from tests.conftest import examples

FORFEITS = ["forfeit_timeout", "forfeit_disconnect", "forfeit_protocol", "forfeit_illegal"]


def funded(**balances: int) -> Ledger:
    ledger = Ledger()
    for name, cents in balances.items():
        ledger.deposit(name, cents)
    return ledger


def conserved(ledger: Ledger) -> bool:
    """The invariant, computed here rather than trusted to Ledger.check."""
    accounts = ledger.accounts
    held = sum(bet.stake - bet.returned for b in ledger.books for bet in b.bets if bet.status == "held")
    return all(c >= 0 for c in accounts.values()) and sum(accounts.values()) + held + ledger.house == (
        ledger.total_deposited
    )


# --- hand-computed examples -------------------------------------------------------------------


def test_E9_1_balancing_returns_the_newest_bets_first_with_one_partial_refund():
    ledger = funded(alice=1000, bob=1000, carol=1000, dave=1000)
    book = ledger.open_book("m1")
    book.place("alice", 0, 100)  # seq 0
    book.place("bob", 0, 50)  # seq 1
    book.place("dave", 1, 120)  # seq 2
    book.place("carol", 0, 80)  # seq 3
    assert book.totals() == (230, 120)
    assert ledger.balance("alice") == 900 and ledger.held == 350

    # excess 110 on seat 0: carol (newest) gets all 80 back, then bob 30 of his 50, alice nothing
    refunds = book.close()
    assert refunds == [
        Refund(seq=3, bettor="carol", seat=0, cents=80),
        Refund(seq=1, bettor="bob", seat=0, cents=30),
    ]
    assert book.totals() == (120, 120)
    assert [(b.bettor, b.matched, b.returned, b.status) for b in book.bets] == [
        ("alice", 100, 0, "held"),
        ("bob", 20, 30, "held"),
        ("dave", 120, 0, "held"),
        ("carol", 0, 80, "returned"),
    ]
    assert ledger.balance("carol") == 1000 and ledger.balance("bob") == 980

    s = book.settle(0, "target")
    assert not s.void and s.refunds == [] and s.levy == 5 + 1
    # alice: 2*100 - 5 = 195; bob: 2*20 - 1 = 39 (levy on what stayed in play); dave loses 120
    assert [(b.bettor, b.payout, b.levy, b.status) for b in s.bets] == [
        ("alice", 195, 5, "won"),
        ("bob", 39, 1, "won"),
        ("dave", 0, 0, "lost"),
        ("carol", 0, 0, "returned"),
    ]
    assert ledger.accounts == {"alice": 1095, "bob": 1019, "carol": 1000, "dave": 880}
    assert ledger.house == 6 and ledger.held == 0
    assert sum(ledger.accounts.values()) + ledger.house == ledger.total_deposited == 4000
    ledger.check()


@pytest.mark.parametrize(("stake", "levy", "payout"), [(30, 1, 59), (10, 0, 20), (1000, 50, 1950), (19, 0, 38),
                                                      (20, 1, 39), (39, 1, 77), (40, 2, 78)])
def test_E9_1_payout_is_twice_the_stake_less_five_percent_rounded_down(stake, levy, payout):
    assert levy_on(stake) == levy and payout_on(stake) == payout
    ledger = funded(w=stake, l=stake)
    book = ledger.open_book("m")
    book.place("w", 1, stake)
    book.place("l", 0, stake)
    assert book.close() == []
    s = book.settle(1, "target")
    assert s.bets[0] == Bet(seq=0, bettor="w", seat=1, stake=stake, matched=stake, payout=payout, levy=levy,
                            status="won")
    assert s.bets[1].status == "lost" and s.bets[1].payout == 0
    assert ledger.balance("w") == payout and ledger.balance("l") == 0 and ledger.house == levy == s.levy


def test_E9_1_the_loser_loses_the_stake_and_only_the_stake():
    ledger = funded(a=500, b=500)
    book = ledger.open_book("m")
    book.place("a", 0, 200)
    book.place("b", 1, 300)  # 100 of it is returned at the close
    s = book.settle(0, "target")  # settling an open book closes it first
    assert s.refunds == [Refund(seq=1, bettor="b", seat=1, cents=100)]
    assert ledger.balance("b") == 300 and ledger.balance("a") == 300 + payout_on(200) == 690
    assert s.bets[1].status == "lost" and s.bets[1].returned == 100 and s.bets[1].matched == 200


@pytest.mark.parametrize(("winner", "reason"), [(0, r) for r in FORFEITS] + [(1, r) for r in FORFEITS]
                         + [(None, "aborted"), (0, "aborted"), (None, "draw"), (None, "target")])
def test_E9_1_forfeit_abort_and_draw_return_every_stake(winner, reason):
    ledger = funded(a=500, b=500, c=500)
    book = ledger.open_book("m")
    book.place("a", 0, 120)
    book.place("b", 1, 50)
    book.place("c", 0, 40)
    book.close()  # c gets 40 back, a 70 of 120
    s = book.settle(winner, reason)
    assert s.void and s.levy == 0 and is_void(winner, reason)
    assert all(b.status == "returned" and b.returned == b.stake and b.payout == 0 for b in s.bets)
    assert ledger.accounts == {"a": 500, "b": 500, "c": 500} and ledger.house == 0 and ledger.held == 0


def test_void_reasons_are_forfeits_aborts_and_draws():
    assert VOID_REASONS == {*FORFEITS, "aborted", "draw"}
    assert is_void(1, "forfeit_some_new_kind")
    for reason in ("target", "rubicon", "cent"):
        assert not is_void(0, reason) and is_void(None, reason)


def test_a_side_without_bets_is_returned_in_full_at_the_close():
    ledger = funded(a=100, b=100)
    book = ledger.open_book("m")
    book.place("a", 1, 30)
    book.place("b", 1, 45)
    assert book.close() == [Refund(seq=1, bettor="b", seat=1, cents=45), Refund(seq=0, bettor="a", seat=1, cents=30)]
    assert book.totals() == (0, 0) and ledger.held == 0
    s = book.settle(1, "target")
    assert s.levy == 0 and [b.status for b in s.bets] == ["returned", "returned"]
    assert ledger.accounts == {"a": 100, "b": 100}
    empty = ledger.open_book("nobody")
    assert empty.close() == [] and empty.settle(0, "target").bets == []


def test_the_same_bettor_may_back_both_seats_and_pays_the_levy_for_it():
    ledger = funded(h=1000)
    book = ledger.open_book("m")
    book.place("h", 0, 400)
    book.place("h", 1, 400)
    s = book.settle(1, "target")
    assert [b.status for b in s.bets] == ["lost", "won"]
    assert ledger.balance("h") == 200 + payout_on(400) == 980 and ledger.house == 20


@pytest.mark.parametrize(
    ("bettor", "seat", "cents", "error", "code"),
    [
        ("a", 2, 50, BadSeat, "bad_seat"),
        ("a", -1, 50, BadSeat, "bad_seat"),
        ("a", None, 50, BadSeat, "bad_seat"),
        ("a", True, 50, BadSeat, "bad_seat"),
        ("a", "0", 50, BadSeat, "bad_seat"),
        ("a", 0, 10.0, BadAmount, "bad_amount"),
        ("a", 0, "50", BadAmount, "bad_amount"),
        ("a", 0, None, BadAmount, "bad_amount"),
        ("a", 0, True, BadAmount, "bad_amount"),
        ("a", 0, 9, BelowMinimum, "below_minimum"),
        ("a", 0, 0, BelowMinimum, "below_minimum"),
        ("a", 0, -50, BelowMinimum, "below_minimum"),
        ("a", 0, 61, InsufficientFunds, "insufficient_funds"),  # one cent more than the 60 left
        ("a", 1, 10**12, InsufficientFunds, "insufficient_funds"),
        ("stranger", 0, 10, InsufficientFunds, "insufficient_funds"),
        ("", 0, 10, BadBettor, "bad_bettor"),
        (None, 0, 10, BadBettor, "bad_bettor"),
    ],
)
def test_every_invalid_bet_is_refused_with_its_code_and_changes_nothing(bettor, seat, cents, error, code):
    ledger = funded(a=100)
    book = ledger.open_book("m")
    book.place("a", 0, 40)
    with pytest.raises(error) as exc:
        book.place(bettor, seat, cents)
    assert isinstance(exc.value, WagerError) and exc.value.code == code and code in str(exc.value)
    assert ledger.balance("a") == 60 and len(book.bets) == 1 and ledger.accounts == {"a": 60}
    book.place("a", 0, 60)  # the whole balance, to the cent: fine
    assert book.bets[-1].seq == 1 and ledger.balance("a") == 0


def test_betting_closes_at_the_close_and_a_book_settles_once():
    ledger = funded(a=100, b=100)
    book = ledger.open_book("m")
    book.place("a", 0, MIN_STAKE)
    book.place("b", 1, MIN_STAKE)
    book.close()
    with pytest.raises(BettingClosed) as exc:
        book.place("a", 0, 20)
    assert exc.value.code == "betting_closed"
    with pytest.raises(BettingClosed):
        book.close()
    with pytest.raises(BadSeat):
        book.settle(2, "target")
    assert book.state == "closed"  # the refused settlement changed nothing
    book.settle(0, "target")
    with pytest.raises(AlreadySettled) as exc2:
        book.settle(1, "target")
    assert exc2.value.code == "already_settled"
    with pytest.raises(BettingClosed):
        book.place("a", 0, 20)
    assert book.state == "settled" and book.winner == 0 and book.reason == "target" and not book.void
    assert ledger.accounts == {"a": 100 + MIN_STAKE, "b": 100 - MIN_STAKE}


def test_deposits_books_and_lookups():
    ledger = Ledger()
    assert ledger.balance("nobody") == 0 and ledger.total_deposited == 0
    assert ledger.deposit("a", 250) == 250 and ledger.deposit("a", 50) == 300
    for bad in (0, -5, 1.5, True, "10"):
        with pytest.raises(BadAmount):
            ledger.deposit("a", bad)
    with pytest.raises(BadBettor):
        ledger.deposit("", 10)
    assert ledger.total_deposited == 300
    book = ledger.open_book("x")
    assert ledger.book("x") is book
    with pytest.raises(DuplicateBook):
        ledger.open_book("x")
    with pytest.raises(UnknownBook):
        ledger.book("y")
    with pytest.raises(CorruptState):
        ledger.forget("x")  # still open
    book.place("a", 0, 30)
    book.settle(None, "aborted")
    ledger.forget("x")
    assert ledger.books == [] and ledger.balance("a") == 300


def test_snapshot_round_trips_through_json_and_tampering_is_detected():
    ledger = funded(a=1000, b=1000, c=1000)
    settled = ledger.open_book("t1/m1")
    settled.place("a", 0, 300)
    settled.place("b", 1, 200)
    settled.settle(1, "target")
    closed = ledger.open_book("t1/m2")
    closed.place("c", 0, 70)
    closed.place("a", 1, 50)
    closed.close()
    ledger.open_book("t1/m3").place("b", 0, 10)

    data = msgspec.json.encode(ledger.snapshot())
    again = Ledger.restore(msgspec.json.decode(data, type=LedgerRecord))
    assert msgspec.json.encode(again.snapshot()) == data
    assert again.accounts == ledger.accounts and again.house == ledger.house == 10 and again.held == 50 + 50 + 10
    # the restored ledger carries on: the closed book pays, the open one takes bets
    again.book("t1/m2").settle(0, "target")
    again.book("t1/m3").place("c", 1, 15)
    again.check()

    rec = msgspec.json.decode(data, type=LedgerRecord)
    rec.accounts["a"] += 1  # a cent from nowhere
    with pytest.raises(CorruptState):
        Ledger.restore(rec)
    rec = msgspec.json.decode(data, type=LedgerRecord)
    rec.books[0].bets[1] = msgspec.structs.replace(rec.books[0].bets[1], payout=401)
    rec.accounts["b"] -= 1  # the cent taken from b's balance: still conserved, but not the rule
    with pytest.raises(CorruptState):
        Ledger.restore(rec)
    rec = msgspec.json.decode(data, type=LedgerRecord)
    rec.house += 1
    rec.total_deposited += 1  # conserved, yet the house holds more than its levies
    Ledger.restore(rec)
    with pytest.raises(CorruptState):
        Ledger.restore(rec, settled_levies=0)
    with pytest.raises(msgspec.ValidationError):
        msgspec.json.decode(data.replace(b'"held"', b'"pending"'), type=LedgerRecord)


# --- properties -------------------------------------------------------------------------------


def check_balanced_close(before: list[Bet], after: list[Bet], refunds: list[Refund]) -> None:
    """The close made the sides equal by returning the heavier side's newest bets first."""
    side = [sum(b.stake for b in before if b.seat == s) for s in (0, 1)]
    matched = [sum(b.matched for b in after if b.seat == s) for s in (0, 1)]
    assert matched[0] == matched[1] == min(side)
    assert sum(r.cents for r in refunds) == abs(side[0] - side[1])
    assert [r.seq for r in refunds] == sorted((r.seq for r in refunds), reverse=True)
    heavy = 0 if side[0] > side[1] else 1
    assert all(r.seat == heavy and r.cents > 0 for r in refunds)
    back = {r.seq: r.cents for r in refunds}
    oldest = min(back, default=len(before))
    for b in after:
        assert b.matched + b.returned == b.stake and b.returned == back.get(b.seq, 0)
        if b.seat == heavy and b.seq > oldest:
            assert b.returned == b.stake and b.status == "returned"  # newer than a refunded bet: all back
        if b.seq == oldest:
            assert 0 < b.returned <= b.stake  # the only bet that may be partly returned
        assert b.status == ("held" if b.matched else "returned")


@settings(max_examples=examples(150), deadline=None)
@given(st.lists(st.tuples(st.integers(0, 1), st.integers(MIN_STAKE, 500)), max_size=12))
def test_E9_1_after_the_close_the_sides_are_equal(bets):
    ledger = funded(p=10**6)
    book = ledger.open_book("m")
    for seat, cents in bets:
        book.place("p", seat, cents)
    before = book.bets
    refunds = book.close()
    check_balanced_close(before, book.bets, refunds)
    assert book.totals()[0] == book.totals()[1]
    assert conserved(ledger)


NAMES = ["ann", "bob", "cy", "dee"]
REASONS = ["target", "rubicon", "cent", "draw", "aborted", *FORFEITS]


def expected_error(state: str, bettor: object, seat: object, cents: object, balance: int) -> str | None:
    """The place() check order, restated independently."""
    if state != "open":
        return "betting_closed"
    if type(seat) is not int or seat not in (0, 1):
        return "bad_seat"
    if type(cents) is not int:
        return "bad_amount"
    if cents < MIN_STAKE:
        return "below_minimum"
    if not isinstance(bettor, str) or not bettor:
        return "bad_bettor"
    if balance < cents:
        return "insufficient_funds"
    return None


class WagerMachine(RuleBasedStateMachine):
    """Deposits, bets (valid or not), closes, settlements, snapshots and forgets across several books
    in any interleaving, against a model of only the money deposited and the levies owed."""

    def __init__(self) -> None:
        super().__init__()
        self.ledger = Ledger()
        self.deposited = 0
        self.levies = 0  # levies of every settlement, computed here from the matched stakes
        self.forgotten_levies = 0
        self.ids: list[str] = []
        self.opened = 0

    def pick(self, i: int):
        return self.ledger.book(self.ids[i % len(self.ids)])

    @initialize(bankrolls=st.lists(st.integers(0, 2000), min_size=len(NAMES), max_size=len(NAMES)))
    def bankrolls(self, bankrolls):
        for name, cents in zip(NAMES, bankrolls):
            if cents:
                self.deposit(name, cents)
        self.open_book()

    @rule(
        name=st.sampled_from([*NAMES, ""]),
        cents=st.one_of(st.integers(1, 2000), st.sampled_from([0, -20, 2.5, True])),
    )
    def deposit(self, name, cents):
        if name and type(cents) is int and cents > 0:
            before = self.ledger.balance(name)
            assert self.ledger.deposit(name, cents) == before + cents
            self.deposited += cents
        else:
            with pytest.raises((BadAmount, BadBettor)):
                self.ledger.deposit(name, cents)

    @rule()
    def open_book(self):
        match_id = f"m{self.opened}"
        self.opened += 1
        self.ledger.open_book(match_id)
        self.ids.append(match_id)

    @precondition(lambda self: self.ids)
    @rule(
        i=st.integers(0, 30),
        bettor=st.sampled_from([*NAMES, "stranger", ""]),
        seat=st.sampled_from([0, 1, 0, 1, -1, 2, None, True, False]),
        cents=st.one_of(
            st.integers(MIN_STAKE, 400),
            st.integers(-5, 2000),
            st.integers(0, MIN_STAKE),
            st.sampled_from([12.0, None, True]),
        ),
    )
    def place(self, i, bettor, seat, cents):
        self.do_place(i, bettor, seat, cents)

    @precondition(lambda self: self.ids)
    @rule(
        i=st.integers(0, 30),
        bets=st.lists(st.tuples(st.sampled_from(NAMES), st.integers(0, 1), st.integers(MIN_STAKE, 300)), max_size=6),
    )
    def place_several(self, i, bets):
        for bettor, seat, cents in bets:
            self.do_place(i, bettor, seat, cents)

    @precondition(lambda self: self.ids)
    @rule(i=st.integers(0, 30), bettor=st.sampled_from(NAMES), seat=st.integers(0, 1), extra=st.sampled_from([0, 1]))
    def place_all_or_one_cent_more(self, i, bettor, seat, extra):
        self.do_place(i, bettor, seat, max(self.ledger.balance(bettor), MIN_STAKE) + extra)

    def do_place(self, i, bettor, seat, cents):
        book = self.pick(i)
        balance = self.ledger.balance(bettor)
        code = expected_error(book.state, bettor, seat, cents, balance)
        n = len(book.bets)
        if code is None:
            bet = book.place(bettor, seat, cents)
            assert bet == Bet(seq=n, bettor=bettor, seat=seat, stake=cents) and book.bets[-1] == bet
            assert self.ledger.balance(bettor) == balance - cents
        else:
            with pytest.raises(WagerError) as exc:
                book.place(bettor, seat, cents)
            assert exc.value.code == code
            assert len(book.bets) == n and self.ledger.balance(bettor) == balance

    @precondition(lambda self: self.ids)
    @rule(i=st.integers(0, 30))
    def close(self, i):
        book = self.pick(i)
        if book.state != "open":
            with pytest.raises(BettingClosed):
                book.close()
            return
        before = book.bets
        refunds = book.close()
        check_balanced_close(before, book.bets, refunds)
        assert book.state == "closed" and book.totals()[0] == book.totals()[1]

    @precondition(lambda self: self.ids)
    @rule(i=st.integers(0, 30), winner=st.sampled_from([0, 1, None]), reason=st.sampled_from(REASONS))
    def settle(self, i, winner, reason):
        book = self.pick(i)
        if book.state == "settled":
            with pytest.raises(AlreadySettled):
                book.settle(winner, reason)
            return
        self.do_settle(book, winner, reason)

    def do_settle(self, book, winner, reason):
        was_open = book.state == "open"
        before = book.bets
        house, balances = self.ledger.house, self.ledger.accounts
        s = book.settle(winner, reason)
        if was_open:  # closed first: the bets as the close left them must be balanced newest-first
            as_closed = [
                msgspec.structs.replace(b, returned=b.stake - b.matched, payout=0, levy=0,
                                        status="held" if b.matched else "returned")
                for b in s.bets
            ]
            check_balanced_close(before, as_closed, s.refunds)
        else:
            assert s.refunds == []
        void = winner is None or reason in ("draw", "aborted") or reason.startswith("forfeit_")
        assert s.void == void and book.state == "settled" and book.held == 0
        levy = 0
        gained: dict[str, int] = {}
        for b in s.bets:
            assert b.held == 0
            if void:
                assert b.status == "returned" and b.returned == b.stake and b.payout == b.levy == 0
            elif b.matched == 0:
                assert b.status == "returned"
            elif b.seat == winner:
                assert b.status == "won" and b.payout == 2 * b.matched - b.matched * 5 // 100
                assert b.levy == b.matched * 5 // 100
            else:
                assert b.status == "lost" and b.payout == b.levy == 0
            levy += b.levy
            was = before[b.seq]
            gained[b.bettor] = gained.get(b.bettor, 0) + b.payout + b.returned - was.returned
        assert s.levy == levy and self.ledger.house == house + levy
        self.levies += levy
        after = self.ledger.accounts
        assert {n: after[n] - balances.get(n, 0) for n in gained} == gained

    @precondition(lambda self: self.ids)
    @rule(i=st.integers(0, 30))
    def forget(self, i):
        book = self.pick(i)
        if book.state != "settled":
            with pytest.raises(CorruptState):
                self.ledger.forget(book.match_id)
            return
        self.forgotten_levies += sum(b.levy for b in book.bets)
        self.ledger.forget(book.match_id)
        self.ids.remove(book.match_id)

    @rule()
    def snapshot_and_restore(self):
        data = msgspec.json.encode(self.ledger.snapshot())
        self.ledger = Ledger.restore(msgspec.json.decode(data, type=LedgerRecord), settled_levies=self.forgotten_levies)
        assert msgspec.json.encode(self.ledger.snapshot()) == data

    @invariant()
    def money_is_never_created_or_lost(self):
        assert self.ledger.total_deposited == self.deposited
        assert conserved(self.ledger)
        assert all(c >= 0 for c in self.ledger.accounts.values())
        assert self.ledger.house == self.levies  # the house gains the levies and nothing else
        self.ledger.check()

    def teardown(self):
        for n, book in enumerate(self.ledger.books):
            if book.state != "settled":
                self.do_settle(book, [0, 1, None][n % 3], "target")
        assert self.ledger.held == 0
        assert all(bet.held == 0 and bet.status != "held" for b in self.ledger.books for bet in b.bets)
        assert sum(self.ledger.accounts.values()) + self.ledger.house == self.deposited
        self.money_is_never_created_or_lost()


WagerMachine.TestCase.settings = settings(max_examples=examples(120), stateful_step_count=40, deadline=None)
TestWagerMachine = WagerMachine.TestCase
