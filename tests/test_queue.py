"""The match queue's policy (arena.store.queue): claim order, leases, expiry, commit once.

Plain function calls on a real store, SQLite then PostgreSQL (the ``db_target`` fixture), with
an injected clock: no sockets, no sleeping."""

from __future__ import annotations

import pytest

from arena.match.referee import MatchConfig, MatchResult
from arena.schedule.formats import Pairing
from arena.store.queue import LeaseLost, MatchQueue
from arena.store.sqlite import Store


class FakeClock:
    """Seconds, moved by hand."""

    def __init__(self) -> None:
        self.t = 1_000_000.0

    def __call__(self) -> float:
        return self.t


def result(key: str, winner: int | None = 0) -> MatchResult:
    return MatchResult(match_id=key, winner=winner, reason="target", scores=[5, 2], manches=[1, 0])


@pytest.fixture
def setup(db_target):
    store = Store(db_target)
    schedule = [Pairing(index=0, bot0="a", bot1="b", seed=11, pair="p0"),
                Pairing(index=1, bot0="b", bot1="a", seed=11, pair="p0"),
                Pairing(index=2, bot0="a", bot1="c", seed=12)]
    tid = store.create_tournament("ecarte", "round-robin", 1, MatchConfig(), ["a", "b", "c"], schedule)
    clock = FakeClock()
    queue = MatchQueue(store, clock=clock, lease_s=10)
    assert queue.enqueue(tid) == 3
    return store, queue, clock, tid


def test_claims_follow_schedule_order_and_pair_halves(setup):
    store, queue, clock, tid = setup
    assert queue.enqueue(tid) == 0  # idempotent
    claims = [queue.claim("w1"), queue.claim("w2"), queue.claim("w1")]
    assert [c.row.idx for c in claims] == [0, 1, 2]
    assert [c.half for c in claims] == [0, 1, 0]  # the twin with the later position is the second half
    assert [c.row.seed for c in claims] == [11, 11, 12]
    assert queue.claim("w3") is None  # everything leased, nothing expired
    assert queue.counts(tid) == {"leased": 3}


def test_an_expired_lease_makes_the_match_claimable_again_with_its_seed(setup):
    store, queue, clock, tid = setup
    first = queue.claim("w1")
    clock.t += 9.9
    assert queue.claim("w2").row.idx == 1  # w1's lease still holds: w2 gets the next one
    clock.t += 0.2  # w1's lease (10 s) is now over
    again = queue.claim("w2")
    assert again.row.match_key == first.row.match_key and again.row.seed == first.row.seed
    assert again.attempt == 2 and again.token != first.token
    with pytest.raises(LeaseLost):  # w1 comes back too late: its result is not counted
        queue.commit(first, result(first.row.match_key), None, None)
    queue.commit(again, result(again.row.match_key), None, "h")
    row = store.match_by_index(tid, 0)
    assert row["status"] == "done" and row["log_hash"] == "h"


def test_renewal_keeps_a_lease_alive_and_fails_once_it_is_lost(setup):
    store, queue, clock, tid = setup
    claim = queue.claim("w1")
    for _ in range(5):  # renewed every 8 s: 40 s of play, never expired
        clock.t += 8
        assert queue.renew(claim)
    assert queue.claim("w2").row.idx == 1
    clock.t += 10.001
    assert not queue.renew(claim)  # expired: renewal refused even before anyone took it over
    with pytest.raises(LeaseLost):
        queue.commit(claim, result(claim.row.match_key), None, None)
    assert store.match_by_index(tid, 0)["status"] == "pending"


def test_a_result_is_committed_once_and_a_done_match_is_never_claimed(setup):
    store, queue, clock, tid = setup
    claim = queue.claim("w1")
    calls = []
    queue.commit(claim, result(claim.row.match_key), "x.jsonl.gz", "h", before=lambda: calls.append(1))
    assert calls == [1]
    with pytest.raises(LeaseLost):  # the same commit again: refused, nothing counted twice
        queue.commit(claim, result(claim.row.match_key, winner=1), None, None)
    assert store.match_by_index(tid, 0)["winner_seat"] == 0
    clock.t += 1000
    assert [queue.claim("w2").row.idx, queue.claim("w2").row.idx] == [1, 2]
    assert queue.claim("w2") is None
    assert queue.state(claim.row.match_key)[0] == "done"


def test_a_commit_whose_write_fails_leaves_the_lease_and_the_match_pending(setup):
    store, queue, clock, tid = setup
    claim = queue.claim("w1")

    def boom() -> None:
        raise OSError("disk full")

    with pytest.raises(OSError):
        queue.commit(claim, result(claim.row.match_key), None, None, before=boom)
    assert store.match_by_index(tid, 0)["status"] == "pending"
    assert queue.state(claim.row.match_key)[:2] == ("leased", "w1")
    queue.commit(claim, result(claim.row.match_key), None, None)  # retried within the lease: counted once
    assert store.match_by_index(tid, 0)["status"] == "done"


def test_release_frees_a_dead_workers_leases_at_once(setup):
    store, queue, clock, tid = setup
    a, b = queue.claim("dead"), queue.claim("alive")
    assert queue.release("dead") == 1
    again = queue.claim("alive")
    assert again.row.match_key == a.row.match_key  # first in schedule order again, without waiting
    with pytest.raises(LeaseLost):
        queue.commit(a, result(a.row.match_key), None, None)
    assert queue.state(b.row.match_key)[1] == "alive"


def test_claims_can_be_limited_to_one_tournament(setup):
    store, queue, clock, tid = setup
    other = store.create_tournament("ecarte", "round-robin", 2, MatchConfig(), ["a", "b"], [("a", "b", 5)])
    queue.enqueue(other)
    assert queue.claim("w", tournament_id=other).row.tournament_id == other
    assert queue.claim("w", tournament_id=other) is None
    assert queue.claim("w").row.tournament_id == tid  # oldest tournament first when not limited


def test_live_events_are_read_in_order_after_a_mark(setup):
    store, queue, clock, tid = setup
    assert queue.last_event_id() == 0
    queue.push_events([("t1-m0001", b'{"n":1}'), ("t1-m0001", b'{"n":2}')])
    mark = queue.last_event_id()
    queue.push_events([("t1-m0002", b'{"n":3}')])
    assert [body for _, _, body in queue.events_after(0)] == [b'{"n":1}', b'{"n":2}', b'{"n":3}']
    assert [(k, body) for _, k, body in queue.events_after(mark)] == [("t1-m0002", b'{"n":3}')]
    clock.t += 60
    assert queue.prune_events(queue.now_ms()) == 3 and queue.events_after(0) == []


def test_a_cancelled_match_is_neither_claimed_nor_committed(setup):
    store, queue, clock, tid = setup
    claim = queue.claim("w1")
    queue.cancel(claim.row.match_key)
    with pytest.raises(LeaseLost):
        queue.commit(claim, result(claim.row.match_key), None, None)
    clock.t += 100
    assert [queue.claim("w2").row.idx, queue.claim("w2").row.idx] == [1, 2]
    assert queue.leased_workers() == ["w2"]


def test_a_match_the_front_recorded_meanwhile_is_a_lost_lease_not_a_crash(setup):
    store, queue, clock, tid = setup
    claim = queue.claim("w1")
    store.record_result(claim.row.match_key, result(claim.row.match_key, winner=None), None)  # the front aborts it
    with pytest.raises(LeaseLost):
        queue.commit(claim, result(claim.row.match_key), None, None)
    assert store.match_by_index(tid, 0)["winner_seat"] is None


def test_a_match_recorded_outside_the_queue_is_never_claimed(setup):
    store, queue, clock, tid = setup
    store.record_result(f"t{tid}-m0001", result(f"t{tid}-m0001"), None)  # played in one process (--workers 0)
    assert queue.claim("w").row.idx == 1


def test_upcoming_names_the_bots_and_halves_of_the_next_queued_matches(setup):
    """What a worker launches ahead: the queued matches in schedule order, leased ones left out."""
    store, queue, clock, tid = setup
    assert queue.upcoming(tid, 2) == [("a", "b", 0), ("b", "a", 1)]
    queue.claim("w1")
    assert queue.upcoming(tid, 5) == [("b", "a", 1), ("a", "c", 0)]
    assert queue.upcoming(tid + 1, 5) == []
