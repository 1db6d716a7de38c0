"""The TCP server's handshake: hello, authentication, refusals with specific error codes."""

from __future__ import annotations

import trio

from tests.conftest import Client, connect_bot


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


async def test_no_hello_times_out(server):
    client = await Client.connect(server.port)
    msg = await client.recv(timeout=3)  # handshake_timeout_s is 1 s in the fixture
    assert msg["code"] == "handshake_timeout"
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
