"""The store (tokens hashed, results never counted twice) and the clock (move time, bank, grace)."""

from __future__ import annotations

import pytest

from arena.match.clock import Clock
from arena.match.referee import MatchConfig, MatchResult
from arena.store.sqlite import Store
from protocol.messages import TimeControl


def test_tokens_are_stored_only_as_salted_hashes(any_store):
    store = any_store
    token = store.add_bot("alice")
    assert store.check_token("alice", token)
    assert not store.check_token("alice", token + "x")
    assert not store.check_token("bob", token)
    raw = store.db.execute("SELECT * FROM bots").fetchall()
    assert token.encode() not in repr(raw).encode()
    token2 = store.add_bot("carol")
    salts = [bytes(r[0]) for r in store.db.execute("SELECT salt FROM bots")]
    assert len(set(salts)) == 2 and token2 != token


def test_a_result_is_recorded_once(db_target):
    store = Store(db_target)
    tid = store.create_tournament("ecarte", "test", 1, MatchConfig(), ["a", "b"], [("a", "b", 42)])
    row = store.pending_matches(tid)[0]
    res = MatchResult(match_id=row.match_key, winner=1, reason="target", scores=[3, 5], manches=[0, 1])
    store.record_result(row.match_key, res, None)
    with pytest.raises(LookupError):
        store.record_result(row.match_key, res, None)
    assert store.pending_matches(tid) == []
    assert store.results(tid) == [("a", "b", 0.0)]
    done = store.matches(tid)[0]
    assert (done["winner"], done["score0"], done["score1"], done["seed"]) == ("b", 3, 5, 42)
    store.close()
    assert Store(db_target).results(tid) == [("a", "b", 0.0)]  # committed: another connection sees it


def test_clock_move_time_bank_and_grace():
    c = Clock(TimeControl(move_ms=100, bank_ms=50, grace_ms=10))
    assert (c.time_ms, c.bank_ms, c.deadline_ms) == (100, 50, 160)
    assert c.charge(90) and c.bank_ms == 50
    assert c.charge(130) and c.bank_ms == 20  # 30 ms over came off the bank
    assert c.charge(125) and c.bank_ms == 0  # 5 ms beyond the bank: within grace
    assert not c.charge(111)  # bank empty, beyond grace: timeout
    with pytest.raises(ValueError):
        Clock(TimeControl(move_ms=0))
