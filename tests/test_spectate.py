"""Spectators over TCP: public events live, hidden cards only once they can no longer help a
bot (after the deal; for a duplicate pair, after the twin match), a slow spectator never slows a
match, and many spectators at once with the card-to-spectator latency measured."""

from __future__ import annotations

import time

import pytest
import trio
import trio.testing

from arena.match.referee import MatchConfig
from arena.net.server import ArenaServer, ServerConfig
from arena.net.spectate import SpectatorHub
from arena.schedule.formats import Pairing
from arena.schedule.tournament import play_match
from tests.conftest import Client, connect_bot, memory_bot, memory_client
from tests.hidden import SeatKnowledge


@pytest.fixture
async def live(store, nursery):
    hub = SpectatorHub()
    hub.nursery = nursery
    srv = ArenaServer(store, ServerConfig(handshake_timeout_s=30, max_conns_per_addr=512), hub=hub)
    await nursery.start(srv.serve)
    return srv, hub


async def spectator(port: int, name: str = "fan") -> Client:
    c = await Client.connect(port)
    await c.send({"type": "hello", "name": name, "role": "spectator"})
    welcome = await c.recv()
    assert welcome["type"] == "welcome"
    return c


async def run_matches(srv, store, tmp_path, hub, a, b, specs):
    """Play ``specs`` = [(seed, pair, seats swapped?)] one after the other."""
    tid = store.create_tournament("ecarte", "test", 1, MatchConfig(), ["alice", "bob"], [])
    results = []
    for i, (seed, pair, swapped) in enumerate(specs):
        bots = ("bob", "alice") if swapped else ("alice", "bob")
        row = store.add_match(tid, "ecarte", Pairing(index=i, bot0=bots[0], bot1=bots[1], seed=seed, pair=pair))
        async with trio.open_nursery() as n:
            n.start_soon(a.play)
            n.start_soon(b.play)
            results.append(await play_match(store, srv, row, MatchConfig(), tmp_path / "logs", hub=hub, pair=pair))
    return results


async def drain(c: Client, until_type: str, count: int = 1, timeout: float = 10) -> list[dict]:
    got, seen = [], 0
    while seen < count:
        msg = await c.recv(timeout)
        assert msg is not None
        got.append(msg)
        seen += msg["type"] == until_type
    return got


async def test_list_subscribe_and_the_live_feed_reveals_nothing_early(live, store, tmp_path):
    srv, hub = live
    fan = await spectator(srv.port)
    await fan.send({"type": "list"})
    assert (await fan.recv())["matches"] == []
    await fan.send({"type": "subscribe", "match_id": "*"})
    a, b = await connect_bot(srv, "alice"), await connect_bot(srv, "bob")
    (res,) = await run_matches(srv, store, tmp_path, hub, a, b, [(5, None, False)])
    feed = await drain(fan, "watch_end")
    assert feed[0]["type"] == "watch" and feed[0]["match"]["bots"] == ["alice", "bob"]
    assert feed[-1]["winner"] == res.winner and feed[-1]["reason"] == "target"
    outsider = SeatKnowledge(-1)
    ended_deals: set[int] = set()
    reveals = 0
    for msg in feed:
        if msg["type"] == "spectate":
            outsider.event(msg["event"])  # public events only: no card the table did not show
            if msg["event"]["kind"] == "deal_end":
                ended_deals.add(msg["event"]["deal"])
        elif msg["type"] == "reveal":
            reveals += 1
            assert msg["deal"] in ended_deals, "hidden cards revealed before their deal was over"
            assert {e["kind"] for e in msg["events"]} >= {"deck", "hand"}
    assert reveals >= 1


async def test_a_duplicate_pair_hides_the_first_matchs_cards_until_the_twin_is_over(live, store, tmp_path):
    srv, hub = live
    fan = await spectator(srv.port)
    await fan.send({"type": "subscribe", "match_id": "*"})
    a, b = await connect_bot(srv, "alice"), await connect_bot(srv, "bob")
    await run_matches(srv, store, tmp_path, hub, a, b, [(8, "p1", False), (8, "p1", True)])
    feed = await drain(fan, "watch_end", 2)
    ended = {m["match_id"] for m in feed if m["type"] == "watch_end"}
    with trio.fail_after(60):  # the reveals of both matches, once the twin is over (bounds a hang only)
        while {m["match_id"] for m in feed if m["type"] == "reveal"} < ended:
            feed.append(await fan.recv())
    ends = [i for i, m in enumerate(feed) if m["type"] == "watch_end"]
    reveals = [i for i, m in enumerate(feed) if m["type"] == "reveal"]
    first_id = feed[0]["match"]["match_id"]
    assert len(ends) == 2 and reveals
    assert all(i > ends[1] for i in reveals), "a paired match's hidden cards came out before its twin was over"
    assert {feed[i]["match_id"] for i in reveals} == {first_id, feed[ends[1]]["match_id"]}


async def test_a_spectator_that_never_reads_does_not_slow_the_match(store, nursery, tmp_path, autojump_clock):
    """In virtual time, over memory streams, the sloth's stream has no buffer at all: the server's
    first write to it blocks for good. The bots answer at once, so two whole matches take no
    virtual time at all unless something waits for the sloth (a match would then sit until a
    deadline: a bot's clock, or the send time-out)."""
    hub = SpectatorHub()
    hub.nursery = nursery
    srv = ArenaServer(store, ServerConfig(), hub=hub)
    sloth = memory_client(srv, nursery, pair=trio.testing.lockstep_stream_pair)
    await sloth.send({"type": "hello", "name": "sloth", "role": "spectator"})
    assert (await sloth.recv())["type"] == "welcome"
    await sloth.send({"type": "subscribe", "match_id": "*"})  # and never reads again
    await trio.testing.wait_all_tasks_blocked()
    assert any(s.name == "sloth" and "*" in s.matches for s in hub.subscribers)
    a, b = await memory_bot(srv, nursery, "alice"), await memory_bot(srv, nursery, "bob")
    start = trio.current_time()
    results = await run_matches(srv, store, tmp_path, hub, a, b, [(s, None, s % 2 == 1) for s in range(2)])
    assert all(r.reason == "target" for r in results)
    assert trio.current_time() - start < 0.1, trio.current_time() - start


@pytest.mark.slow
async def test_many_spectators_latency_from_card_played_to_spectator(live, store, tmp_path):
    srv, hub = live
    n_fans = 200
    fans = [await spectator(srv.port, f"fan{i}") for i in range(n_fans)]
    for f in fans:
        await f.send({"type": "subscribe", "match_id": "*"})
    a, b = await connect_bot(srv, "alice"), await connect_bot(srv, "bob")
    sent_at: dict[str, float] = {}
    latencies: list[float] = []

    def policy(req):  # remember when each card is played (bot side clock)
        action = req["legal"][0]
        if req["decision"] == "play":
            sent_at[f"{req['state']['deal']}:{action}"] = time.perf_counter()
        return action

    async def fan_reader(f: Client):
        deal = 0
        while True:
            msg = await f.recv(20)
            if msg is None or msg["type"] == "watch_end":
                return
            if msg["type"] == "spectate":
                ev = msg["event"]
                now = time.perf_counter()
                if ev["kind"] == "deal_start":
                    deal = ev["deal"]
                elif ev["kind"] == "play" and f"{deal}:{ev['card']}" in sent_at:
                    latencies.append(now - sent_at[f"{deal}:{ev['card']}"])

    tid = store.create_tournament("ecarte", "test", 1, MatchConfig(), ["alice", "bob"], [])
    row = store.add_match(tid, "ecarte", Pairing(index=0, bot0="alice", bot1="bob", seed=3))
    async with trio.open_nursery() as n:
        for f in fans:
            n.start_soon(fan_reader, f)
        n.start_soon(a.play, policy)
        n.start_soon(b.play, policy)
        await play_match(store, srv, row, MatchConfig(), tmp_path / "logs", hub=hub)
    assert len(latencies) >= n_fans * 10
    latencies.sort()
    p50, p99 = latencies[len(latencies) // 2], latencies[int(len(latencies) * 0.99)]
    print(f"{n_fans} spectators: card played -> spectator latency p50 {p50 * 1000:.1f} ms, p99 {p99 * 1000:.1f} ms")
    assert not any(s.dropped for s in hub.subscribers)


async def test_unknown_match_and_bot_messages_get_errors(live, store, tmp_path):
    srv, hub = live
    fan = await spectator(srv.port)
    await fan.send({"type": "subscribe", "match_id": "nope"})
    assert (await fan.recv())["code"] == "unknown_match"
    await fan.send({"type": "action", "id": 1, "action": "play"})
    assert (await fan.recv())["code"] == "wrong_role"
    bot = await connect_bot(srv, "carl")
    await bot.send({"type": "list"})
    msg = await bot.recv()
    assert msg["code"] == "wrong_role" and msg["fatal"] is False
