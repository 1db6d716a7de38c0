"""The TCP server's handshake: hello, authentication, refusals with specific error codes."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from arena.net.server import ArenaServer, ServerConfig
from tests.conftest import Client, connect_bot, memory_bot, memory_client


async def test_hello_with_right_token_is_welcomed(server):
    client = await connect_bot(server, "alice")
    assert "alice" in server.bots
    await client.aclose()


async def test_wrong_token_is_refused_with_auth_failed_and_closed(server):
    server.store.add_bot("alice")
    client = await Client.connect(server.port)
    msg = await client.hello("alice", "not-the-token")
    assert msg["type"] == "error" and msg["code"] == "auth_failed" and msg["fatal"] is True
    assert await client.recv() is None  # connection closed
    assert "alice" not in server.bots


async def test_unknown_name_is_refused_with_auth_failed(server):
    client = await Client.connect(server.port)
    msg = await client.hello("nobody", "x")
    assert msg["code"] == "auth_failed"


async def test_second_connection_with_same_name_is_refused(server):
    first = await connect_bot(server, "alice")
    token = server.store.add_bot("alice")  # re-issue a token: the name stays taken
    second = await Client.connect(server.port)
    msg = await second.hello("alice", token)
    assert msg["code"] == "name_in_use"
    assert server.bots["alice"] is not None and not server.bots["alice"].closed.is_set()
    await first.aclose()


async def test_no_hello_times_out(store, nursery, autojump_clock):
    """In virtual time over a memory stream: silent until the handshake time-out, then refused."""
    srv = ArenaServer(store, ServerConfig(handshake_timeout_s=1.0))
    client = memory_client(srv, nursery)
    start = trio.current_time()
    msg = await client.recv(timeout=3)
    assert msg["code"] == "handshake_timeout" and msg["fatal"]
    assert trio.current_time() - start == pytest.approx(1.0)  # not before the time-out, and at it
    assert await client.recv() is None


async def test_first_line_must_be_hello(server):
    client = await Client.connect(server.port)
    await client.send({"type": "action", "id": 1, "action": "play"})
    msg = await client.recv()
    assert msg["code"] == "expected_hello"


async def test_bad_version_is_refused(server):
    server.store.add_bot("alice")
    client = await Client.connect(server.port)
    await client.send({"type": "hello", "name": "alice", "token": "x", "protocol": 99})
    msg = await client.recv()
    assert msg["code"] == "bad_version"


async def test_garbage_first_line_gets_its_code(server):
    client = await Client.connect(server.port)
    await client.send_raw(b"\xff\xfe not utf-8\n")
    msg = await client.recv()
    assert msg["code"] == "bad_utf8"


async def test_overlong_hello_is_rejected_without_buffering_it(server):
    client = await Client.connect(server.port)
    chunk = b"x" * 65536
    sent = 0
    with trio.move_on_after(3):
        try:
            for _ in range(200):  # up to ~13 MB, no newline; the server must cut us off early
                await client.send_raw(chunk)
                sent += len(chunk)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
    msg = await client.recv()
    assert msg is None or msg["code"] == "line_too_long"
    assert sent < 200 * len(chunk) or msg["code"] == "line_too_long"


async def test_a_bad_client_never_stops_the_server(server):
    for payload in (b"[]\n", b"{}\n", b'{"type":"nope"}\n', b"\n\n\n"):
        c = await Client.connect(server.port)
        await c.send_raw(payload)
        await c.aclose()
    good = await connect_bot(server, "bob")
    assert "bob" in server.bots
    await good.aclose()


async def test_connections_per_address_are_capped(store, nursery, autojump_clock):
    srv = ArenaServer(store, ServerConfig(max_conns_per_addr=3, bot_reserve=0, handshake_timeout_s=5))
    held = [memory_client(srv, nursery) for _ in range(3)]
    await trio.testing.wait_all_tasks_blocked()  # the server has counted them
    assert srv.open_connections == 3
    elsewhere = memory_client(srv, nursery, addr="127.0.0.9")  # another address has its own count
    extra = memory_client(srv, nursery)
    msg = await extra.recv()
    assert msg["code"] == "too_many_connections" and msg["fatal"]
    await held[0].aclose()
    await trio.testing.wait_all_tasks_blocked()
    assert srv.open_connections == 3  # held[1:], and the other address's
    again = await memory_bot(srv, nursery, "carol")  # a slot freed up
    assert "carol" in srv.bots
    for c in held[1:] + [again, elsewhere]:
        await c.aclose()


async def test_a_bot_cannot_answer_another_seats_request(store, nursery, tmp_path, autojump_clock):
    """Request ids belong to a connection: whatever id alice sends, it is matched against her
    own pending request only. Answering while bob is to act is charged to alice
    (``not_your_turn``) and never applied to bob's decision."""
    from arena.match.log import MatchLog, read_log
    from arena.match.referee import MatchConfig, Referee

    server = ArenaServer(store, ServerConfig())
    a = await memory_bot(server, nursery, "alice")
    b = await memory_bot(server, nursery, "bob")
    bob_ids = []

    async def bob():
        while True:
            msg = await b.recv(10)
            if msg is None or msg["type"] == "match_end":
                return
            if msg["type"] == "request":
                bob_ids.append(msg["id"])
                await trio.sleep(0.1)  # virtual time: alice tries to answer for him first
                await b.send({"type": "action", "id": msg["id"], "action": msg["legal"][-1]})

    async def alice():
        while True:
            msg = await a.recv(10)
            if msg is None or msg["type"] == "match_end":
                return
            if msg["type"] == "request":
                await a.send({"type": "action", "id": msg["id"], "action": msg["legal"][0]})
            elif msg["type"] == "event" and bob_ids and msg["event"]["kind"] in ("play", "call"):
                # bob is (or will soon be) to act: alice answers with bob's latest id
                await a.send({"type": "action", "id": bob_ids[-1], "action": "play"})
                return await a.recv_type("match_end")

    path = tmp_path / "m.jsonl"
    async with trio.open_nursery() as n:
        n.start_soon(alice)
        n.start_soon(bob)
        with MatchLog(path) as log:
            res = await Referee("m", 2, MatchConfig(), (server.bots["alice"], server.bots["bob"]), log).run()
    codes = [m["code"] for m in a.received if m["type"] == "error"]
    assert codes and codes[0] in ("not_your_turn", "unknown_request", "duplicate_answer")
    assert res.reason == "forfeit_protocol" and res.faulty == 0 and res.winner == 1
    bob_actions = [line for line in read_log(path) if line["type"] == "action" and line["seat"] == 1]
    assert all(line["action"] != "play" or line["decision"] == "propose" for line in bob_actions)


def test_cli_bots_add_prints_a_token_once_and_stores_only_its_hash(tmp_path):
    import sqlite3
    import subprocess
    import sys

    db = tmp_path / "a.db"
    out = subprocess.run([sys.executable, "-m", "arena.cli", "bots", "add", "zed", "--db", str(db)],
                         capture_output=True, text=True, check=True)
    token = out.stdout.strip().splitlines()[-1]
    assert len(token) >= 24
    from arena.store.sqlite import Store

    assert Store(db).check_token("zed", token)
    raw = sqlite3.connect(db).execute("SELECT * FROM bots").fetchall()
    assert token not in repr(raw)
    listed = subprocess.run([sys.executable, "-m", "arena.cli", "bots", "list", "--db", str(db)],
                            capture_output=True, text=True, check=True)
    assert "zed" in listed.stdout and "remote" in listed.stdout and token not in listed.stdout
