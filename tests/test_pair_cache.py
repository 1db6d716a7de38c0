"""The contest's pair counts in memory (arena/schedule/formats/ladder.py, PairCounts): read once
when a bot connects, counted by the contest's own results, reloaded when a bot reconnects, so a
pairing decision runs no SQL at all (issue 21). No timing: statements and counts."""

from __future__ import annotations

import random

import trio

from arena.match.referee import MatchResult
from arena.schedule.contest import Contest, ContestConfig
from arena.schedule.formats import Pairing
from arena.schedule.formats.ladder import PairCounts
from arena.store.sqlite import Store
from tests.test_season import _history, _scans, _statements


class Conn:
    """A connected bot as the contest sees it: a fresh object on each connection."""

    def __init__(self) -> None:
        self.closed = trio.Event()


def _contest(tmp_path, store: Store, bots: list[str], **kw) -> Contest:
    contest = Contest(ContestConfig(db=str(tmp_path / "x.db"), **kw), store=store)
    contest.server.bots = {n: Conn() for n in bots}
    return contest


def _result(key: str, winner: int | None, reason: str = "target") -> MatchResult:
    return MatchResult(match_id=key, winner=winner, reason=reason, scores=[0, 0], manches=[0, 0])


def test_a_decision_runs_no_statement_once_the_bots_are_loaded(tmp_path):
    store = Store(tmp_path / "x.db")
    _, bots = _history(store, 60, 400)
    contest = _contest(tmp_path, store, bots)
    loads = _statements(store, contest.next_pair)  # the first decision after 60 bots connected
    assert len(loads) == 60 and contest.pairs.loads == 60
    assert all("FROM pair_counts" in s and "matches" not in s for s in loads) and _scans(store, loads) == []
    for _ in range(3):
        pair = None

        def decide() -> None:
            nonlocal pair
            pair = contest.next_pair()

        assert _statements(store, decide) == [] and pair is not None
        contest.busy.update(pair)  # it plays: the next decision pairs two others
    assert contest.pairs.loads == 60


def test_the_counts_in_memory_stay_those_of_the_store_after_the_contests_results(tmp_path, db_target):
    store = Store(db_target)  # on each backend
    _, bots = _history(store, 12, 150)
    contest = _contest(tmp_path, store, bots[:9])  # three bots of the history are not connected
    contest.next_pair()
    rng = random.Random(3)
    plan = [tuple(rng.sample(bots, 2)) for _ in range(120)]
    tid = store.create_tournament("ecarte", "ladder", 1, {}, [], [])
    for i, (a, b) in enumerate(plan):
        row = store.add_match(tid, "ecarte", Pairing(index=i, bot0=a, bot1=b, seed=i))
        reason = "aborted" if i % 7 == 0 else "target"  # aborted ones are no meeting, in memory as in the store
        contest._record(a, b, row.match_key, _result(row.match_key, None if reason == "aborted" else i % 2, reason),
                        None)
    for bot in bots[:9]:
        assert contest.pairs.rows[bot] == store.opponents("ecarte", bot)
    assert set(contest.pairs.rows) == set(bots[:9])
    assert sum(contest.pairs.counts(bots[0], bots[1:]).values()) == sum(store.opponents("ecarte", bots[0]).values())


def test_a_reconnect_reloads_and_a_departure_forgets(tmp_path):
    store = Store(tmp_path / "x.db")
    _, bots = _history(store, 20, 100)
    contest = _contest(tmp_path, store, bots)
    contest.next_pair()
    a, b = bots[0], bots[1]
    # a result recorded by another process (a tournament on the same store) is not in memory...
    tid = store.create_tournament("ecarte", "test", 1, {}, [a, b], [Pairing(index=0, bot0=a, bot1=b, seed=0)])
    store.record_result(f"t{tid}-m0001", _result(f"t{tid}-m0001", 0), None)
    assert contest.pairs.rows[a] != store.opponents("ecarte", a)
    # ...until the bot connects again: a new connection is read afresh, and only that one
    contest.server.bots[a] = Conn()
    loads = _statements(store, contest.next_pair)
    assert len(loads) == 1 and contest.pairs.rows[a] == store.opponents("ecarte", a)
    # a bot that is gone is forgotten; it is read again when it comes back
    del contest.server.bots[b]
    contest.next_pair()
    assert b not in contest.pairs.rows
    contest.server.bots[b] = Conn()
    assert len(_statements(store, contest.next_pair)) == 1 and contest.pairs.rows[b] == store.opponents("ecarte", b)


def test_a_bot_reconnecting_during_its_unit_is_reloaded_once_the_unit_has_ended():
    stored = {"a": {"b": 1}, "b": {"a": 1}}
    pairs = PairCounts(lambda bot: stored[bot])
    first = {"a": object(), "b": object()}
    pairs.sync(first)
    again = {"a": object(), "b": first["b"]}  # a reconnected while it plays b
    pairs.sync(again, busy={"a", "b"})
    assert pairs.loads == 2  # not read while its unit is in play: the unit's results are still coming
    stored["a"], stored["b"] = {"b": 2}, {"a": 2}
    pairs.add("a", "b")  # the unit's result, committed by the contest
    assert pairs.rows == {"a": {"b": 2}, "b": {"a": 2}}
    pairs.sync(again)  # the unit is over: a's new connection is read
    assert pairs.loads == 3 and pairs.rows["a"] == {"b": 2}
    pairs.sync(again)
    assert pairs.loads == 3


async def test_a_contest_with_remote_bots_keeps_its_counts_equal_to_the_stores(tmp_path):
    from arena.net.server import ServerConfig
    from tests.conftest import remote_random_bot

    store = Store(tmp_path / "arena.db")
    tokens = {name: store.add_bot(name) for name in ("r1", "r2", "r3")}
    contest = Contest(ContestConfig(db=str(tmp_path / "arena.db"), logs=str(tmp_path / "logs"), http_port=0,
                                    server=ServerConfig(port=0), seed=7, max_matches=12), store)
    async with trio.open_nursery() as nursery:
        port, _ = await nursery.start(contest.run)
        procs = [remote_random_bot(port, name, token) for name, token in tokens.items()]
        try:
            with trio.fail_after(60):
                while store.db.execute("SELECT COUNT(*) FROM matches WHERE status<>'pending'").fetchone()[0] < 12:
                    await trio.sleep(0.1)
                while contest.running:
                    await trio.sleep(0.05)
            rows = {bot: dict(row) for bot, row in contest.pairs.rows.items()}
        finally:
            for p in procs:
                p.terminate()
            contest.stop()
    assert set(rows) == {"r1", "r2", "r3"}
    assert {bot: store.opponents("ecarte", bot) for bot in rows} == rows
    assert sum(sum(r.values()) for r in rows.values()) == 2 * store.ladder_state("ecarte")["results"] > 0
