"""Nothing an anonymous client does can stop the server (arena/net/server.py): a global connection
cap, the bots' reserve, the spectator cap and idle timeout, launched bots attached in-process,
and a flood of idle spectators over real sockets while a match is played."""

from __future__ import annotations

import resource

import pytest
import trio

from arena.match.log import MatchLog, read_log
from arena.match.referee import MatchConfig, Referee
from arena.net.server import ArenaServer, ServerConfig, raise_fd_limit
from arena.net.spectate import SpectatorHub
from tests.conftest import Client, connect_bot, memory_client


async def start(store, nursery, **kw) -> ArenaServer:
    # the silent connections are held for the whole test, however slow the machine: no handshake time-out
    srv = ArenaServer(store, ServerConfig(**{"handshake_timeout_s": 600, **kw}), hub=SpectatorHub())
    await nursery.start(srv.serve)
    return srv


async def spectator(port: int, name: str = "viewer", source: str | None = None) -> tuple[Client, dict]:
    stream = await trio.open_tcp_stream("127.0.0.1", port, local_address=source)
    client = Client(stream)
    await client.send({"type": "hello", "name": name, "token": "", "protocol": 1, "role": "spectator"})
    return client, await client.recv(timeout=20)


async def settle(srv: ArenaServer, opened: int) -> None:
    """Wait until the server has accounted for ``opened`` silent connections."""
    with trio.fail_after(60):  # bounds a hang only
        while srv.open_connections + srv.reserved < opened:
            await trio.sleep(0.01)


def test_raise_fd_limit_reaches_the_hard_limit():
    soft = raise_fd_limit()
    now, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    assert soft == now and (now == hard or hard == resource.RLIM_INFINITY)


async def test_the_global_cap_refuses_with_server_full(store, nursery):
    srv = await start(store, nursery, max_connections=4, bot_reserve=0)
    held = [await Client.connect(srv.port) for _ in range(4)]
    await settle(srv, 4)
    extra = await Client.connect(srv.port)
    msg = await extra.recv()
    assert msg["code"] == "server_full" and msg["fatal"] and await extra.recv() is None
    assert srv.refused["server_full"] == 1
    await held[0].aclose()
    with trio.fail_after(60):
        while srv.open_connections > 3:
            await trio.sleep(0.01)
    bot = await connect_bot(srv, "carol")  # a slot freed up
    for c in held[1:] + [bot]:
        await c.aclose()


async def test_the_reserve_lets_a_bot_in_past_the_per_address_cap_but_no_spectator(store, nursery):
    """64 connections from one address used to lock every launched bot out: past the caps,
    ``bot_reserve`` connections may still become authenticated bots, and only bots."""
    srv = await start(store, nursery, max_conns_per_addr=3, bot_reserve=2)
    held = [await Client.connect(srv.port) for _ in range(3)]
    await settle(srv, 3)
    _, refused = await spectator(srv.port)
    assert refused["code"] == "server_full"
    bot = await connect_bot(srv, "alice")  # in the reserve
    assert srv.reserved == 1 and "alice" in srv.bots
    squatters = [await Client.connect(srv.port)]  # fills the reserve (silent)
    await settle(srv, 5)
    extra = await Client.connect(srv.port)
    assert (await extra.recv())["code"] == "too_many_connections"
    for c in held + squatters + [bot]:
        await c.aclose()


async def test_a_launched_bot_attaches_in_process_whatever_the_caps(store, nursery):
    srv = await start(store, nursery, max_connections=2, bot_reserve=0)
    held = [await Client.connect(srv.port) for _ in range(2)]
    await settle(srv, 2)
    token = store.add_bot("launched")
    client = Client(await srv.attach_local())
    welcome = await client.hello("launched", token)
    assert welcome["type"] == "welcome" and srv.bots["launched"].peer == "local"
    other = Client(await srv.attach_local())  # the in-process stream is for bots only
    await other.send({"type": "hello", "name": "x", "token": "", "protocol": 1, "role": "spectator"})
    assert (await other.recv())["code"] == "unsupported_role"
    for c in held + [client]:
        await c.aclose()


async def test_spectators_are_capped(store, nursery):
    srv = await start(store, nursery, max_spectators=2)
    a, wa = await spectator(srv.port, "a")
    b, wb = await spectator(srv.port, "b")
    c, wc = await spectator(srv.port, "c")
    assert (wa["type"], wb["type"], wc["code"]) == ("welcome", "welcome", "server_full")
    await a.aclose()
    with trio.fail_after(60):
        while srv.spectators > 1:
            await trio.sleep(0.01)
    d, wd = await spectator(srv.port, "d")
    assert wd["type"] == "welcome"
    for x in (b, d):
        await x.aclose()


async def test_an_idle_spectator_is_dropped_but_one_that_talks_or_is_fed_is_kept(store, nursery, autojump_clock):
    """Idle: nothing sent and nothing received for spectator_idle_s. A spectator sending empty
    lines is kept, and so is one that only listens to a feed that keeps coming. In virtual time
    over memory streams: the keep-alives come every 0.5 s of a 1 s allowance, whatever the load."""
    srv = ArenaServer(store, ServerConfig(handshake_timeout_s=5, spectator_idle_s=1.0), hub=SpectatorHub())
    clients = {}
    for name in ("silent", "chatty", "listener"):
        clients[name] = memory_client(srv, nursery)
        await clients[name].send({"type": "hello", "name": name, "token": "", "protocol": 1, "role": "spectator"})
        assert (await clients[name].recv())["type"] == "welcome"
    silent, chatty, listener = clients["silent"], clients["chatty"], clients["listener"]
    feed = next(s for s in srv.hub.subscribers if s.name == "listener")
    start = trio.current_time()
    async with trio.open_nursery() as keepalive:

        async def ping() -> None:
            while True:
                await trio.sleep(0.5)
                await chatty.send_raw(b"\n")
                feed.push(b'{"type":"goodbye","reason":"not really"}\n')

        keepalive.start_soon(ping)
        msg = await silent.recv(timeout=10)
        assert msg["code"] == "idle_timeout" and msg["fatal"] and await silent.recv() is None
        assert trio.current_time() - start == pytest.approx(1.0)  # dropped at its allowance, not before
        await trio.sleep(5)  # ten more keep-alives: the other two stay
        keepalive.cancel_scope.cancel()
    await chatty.send({"type": "list"})
    assert (await chatty.recv_type("matches"))["type"] == "matches"  # still served
    assert (await listener.recv())["type"] == "goodbye"
    assert srv.refused["idle_timeout"] == 1 and srv.spectators == 2
    await chatty.aclose()
    await listener.aclose()


@pytest.mark.slow  # a flood of 1,000 real connections: a load study (make test-slow)
async def test_a_thousand_idle_spectators_neither_exhaust_fds_nor_stop_a_match(store, nursery, tmp_path):
    """Idle spectator connections from 16 loopback addresses, far beyond the caps (lowered
    for the test): the server holds at most its cap, refuses the rest with a specific code,
    and two launched bots still attach, play a whole match and get its log written."""
    soft = raise_fd_limit()
    n = min(1000, soft - 400)  # the test process holds both ends of every accepted connection
    caps = {"max_connections": 120, "max_spectators": 80, "bot_reserve": 4, "max_conns_per_addr": 64}
    srv = await start(store, nursery, spectator_idle_s=600, **caps)
    answers: list[str] = []
    clients: list[Client] = []

    async def one(i: int) -> None:
        try:
            c, msg = await spectator(srv.port, f"idle{i}", source=f"127.0.0.{2 + i % 16}")
        except OSError:
            answers.append("connect_failed")
            return
        clients.append(c)
        answers.append(msg["type"] if msg and msg["type"] == "welcome" else (msg or {}).get("code", "closed"))

    async with trio.open_nursery() as flood:
        for i in range(n):
            flood.start_soon(one, i)
    assert len(answers) == n
    assert answers.count("welcome") == caps["max_spectators"]
    assert set(answers) <= {"welcome", "server_full", "too_many_connections"}
    assert srv.open_connections <= caps["max_connections"] and srv.reserved <= caps["bot_reserve"]
    assert sum(srv.refused.values()) == n - caps["max_spectators"]

    tokens = {name: store.add_bot(name) for name in ("north", "south")}
    bots = {}
    for name, token in tokens.items():
        bots[name] = Client(await srv.attach_local())
        assert (await bots[name].hello(name, token))["type"] == "welcome"
    log_path = tmp_path / "logs" / "m1.jsonl"
    async with trio.open_nursery() as play:
        for c in bots.values():
            play.start_soon(c.play)
        with MatchLog(log_path) as log:
            result = await Referee("m1", 5, MatchConfig(), (srv.bots["north"], srv.bots["south"]), log).run()
    assert result.reason == "target"
    assert read_log(log_path)[-1]["type"] == "result"
    for c in clients + list(bots.values()):
        await c.aclose()


async def test_the_web_feed_shares_the_spectator_cap_and_status_shows_the_caps(tmp_path):
    import httpx

    from arena.schedule.contest import Contest, ContestConfig

    cfg = ContestConfig(db=str(tmp_path / "arena.db"), logs=str(tmp_path / "logs"), http_port=0, seed=1,
                        server=ServerConfig(port=0, max_spectators=1))
    contest = Contest(cfg)
    async with trio.open_nursery() as nursery:
        _, http_port = await nursery.start(contest.run)
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{http_port}", timeout=10) as http:
            async with http.stream("GET", "/api/events") as first:
                assert first.status_code == 200
                second = await http.get("/api/events")
                assert second.status_code == 503 and second.json()["error"] == "server_full"
                status = (await http.get("/api/status")).json()
        contest.stop()
    assert status["storage"] == {"paused": False, "reason": "", "waiting_writes": 0}
    assert status["connections"]["web_viewers"] == 1 and status["connections"]["refused"] == {"server_full": 1}
