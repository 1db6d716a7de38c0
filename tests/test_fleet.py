"""The one fleet of bots (issue 23): the shutdown sequence written once (goodbye, close, stop each
process with the fleet's graces, kill what is left), relaunch-once, hello waits and the store
sink, with stand-ins for the server, connections and processes (no process is started; every
time-out runs on trio's MockClock)."""

from __future__ import annotations

import msgspec
import pytest
import trio

from arena.match.core import MatchResult
from arena.match.limits import FLEET, FleetLimits
from arena.match.runner import LogRef
from arena.schedule.fleet import Fleet, StoreSink
from arena.store.health import StorageHealth
from arena.store.sqlite import MatchRow


class Conn:
    def __init__(self, name: str, reads: bool = True) -> None:
        self.name = name
        self.reads = reads
        self.sent: list = []
        self.closed_with: str | None = None
        self.closed = trio.Event()

    async def send(self, msg) -> None:
        if not self.reads:
            await trio.sleep_forever()
        self.sent.append(msg)

    async def aclose(self, reason: str) -> None:
        self.closed_with = reason
        self.closed.set()


class Proc:
    class manifest:  # noqa: N801 - stands in for a Manifest
        name = "alice"

    def __init__(self, running: bool = True, hangs: bool = False) -> None:
        self.running = running
        self.hangs = hangs
        self.stops: list[tuple[float, float, float]] = []
        self.killed = 0

    async def stop(self, grace_s: float, exit_grace_s: float, reap_s: float) -> None:
        self.stops.append((grace_s, exit_grace_s, reap_s))
        if self.hangs:
            await trio.sleep_forever()
        self.running = False

    def stop_now(self) -> None:
        self.killed += 1


class Server:
    def __init__(self) -> None:
        self.bots: dict[str, Conn] = {}
        self.copies: dict[tuple[str, int], Conn] = {}

    def connection(self, name: str, copy: int = 0):
        return self.bots.get(name) if copy == 0 else self.copies.get((name, copy))

    async def wait_for(self, name: str, timeout_s: float, copy: int = 0):
        with trio.move_on_after(timeout_s):
            while self.connection(name, copy) is None:
                await trio.sleep(0.01)
            return self.connection(name, copy)
        return None


async def test_the_shutdown_says_goodbye_closes_and_stops_every_copy_within_its_limits(autojump_clock):
    server = Server()
    server.bots["alice"] = Conn("alice")
    server.copies[("alice", 1)] = Conn("alice", reads=False)  # does not read: the goodbye gives up
    limits = FleetLimits(goodbye_ms=300, stop_ms=2_000, exit_grace_ms=100, term_grace_ms=200, reap_ms=400)
    fleet = Fleet(server, limits)
    fleet.procs.update({("alice", 0): Proc(), ("alice", 1): Proc(hangs=True), ("bob", 0): Proc()})
    t0 = trio.current_time()
    await fleet.stop_all("tournament over")
    assert trio.current_time() - t0 == pytest.approx(0.3 + 2.0)  # one goodbye timed out, then stop_ms
    assert [m.reason for m in server.bots["alice"].sent] == ["tournament over"]
    assert {c.closed_with for c in (server.bots["alice"], server.copies[("alice", 1)])} == {"tournament over"}
    procs = list(fleet.procs.values())
    assert procs[0].stops == [(0.2, 0.1, 0.4)] and procs[1].stops == [(0.2, 0.1, 0.4)]
    assert procs[2].stops == []  # the hung one used up stop_ms: killed with the rest
    assert all(p.killed == 1 for p in procs)


async def test_a_dead_copy_is_relaunched_once_and_waited_for(autojump_clock):
    server = Server()
    fleet = Fleet(server, msgspec.structs.replace(FLEET, connect_ms=500))
    fleet.procs[("alice", 0)] = Proc(running=False)
    starts = []

    async def start(copy: int) -> None:
        starts.append(copy)
        fleet.procs[("alice", copy)] = Proc(running=False)  # dies again at once, never connects

    t0 = trio.current_time()
    await fleet.relaunch_dead("alice", [0], start)
    assert starts == [0] and trio.current_time() - t0 == pytest.approx(0.5)
    await fleet.relaunch_dead("alice", [0], start)
    assert starts == [0]  # once per fleet: the match is then lost by forfeit


async def test_wait_for_hello_gives_up_when_the_process_exits_or_time_runs_out(autojump_clock):
    server = Server()
    fleet = Fleet(server, msgspec.structs.replace(FLEET, connect_ms=1_000, hello_poll_ms=100))
    t0 = trio.current_time()
    assert await fleet.wait_for_hello(Proc(running=False), 0) is None
    assert trio.current_time() - t0 == pytest.approx(0.1)  # the first look after a poll
    t0 = trio.current_time()
    assert await fleet.wait_for_hello(Proc(), 0) is None
    assert trio.current_time() - t0 == pytest.approx(1.0)
    server.bots["alice"] = conn = Conn("alice")
    assert await fleet.wait_for_hello(Proc(), 0, timeout_ms=10) is conn


ROW = MatchRow(id=1, tournament_id=1, idx=0, match_key="t1-m0001", game="ecarte", bot0="a", bot1="b", seed=3,
               status="pending")
RESULT = MatchResult(match_id="t1-m0001", winner=0, reason="target", scores=[5, 2], manches=[0, 0])


async def test_the_store_sink_retries_under_health_and_a_cancel_commits_once(autojump_clock):
    calls: list[tuple] = []
    told: list = []

    def flaky(*args) -> None:
        calls.append(args)
        if len(calls) < 3:
            raise OSError("disk full")

    health = StorageHealth(retry_s=1.0)
    sink = StoreSink(ROW, flaky, health, on_result=lambda row, r: told.append((row.match_key, r.reason)))
    await sink.record(RESULT, LogRef("logs/t1-m0001.jsonl.gz", "ab" * 32))
    assert len(calls) == 3 and calls[-1] == ("t1-m0001", RESULT, "logs/t1-m0001.jsonl.gz", "ab" * 32)
    assert told == [("t1-m0001", "target")]
    calls.clear()
    sink.record_now(RESULT, None)  # fails once: left pending, nothing told, nothing raised
    assert calls == [("t1-m0001", RESULT, None, None)] and told == [("t1-m0001", "target")]
    with pytest.raises(OSError):
        await StoreSink(ROW, lambda *a: flaky(*a) if len(calls) < 2 else None).record(RESULT, None)
