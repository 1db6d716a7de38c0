"""The compact legal form end to end: a real server on loopback TCP, two bots, one Piquet match.

alice says ``"legal": "compact"`` at hello, bob says nothing (protocol 1's full lists). Each gets
its own form of every discard request and nothing else changes (docs/protocol.md §8.13); every
line alice receives is short; an answer outside the description is refused by the rules
(piquet.md §P4.1) with an error that quotes the cards as JSON, and asked again.
"""

from __future__ import annotations

import random
from typing import Any

import msgspec
import trio

from arena.match.core import long_line_note
from arena.match.limits import LIMITS
from arena.match.log import MatchLog
from arena.match.referee import MatchConfig, Referee
from arena.net.server import ArenaServer, ServerConfig
from arena.store.sqlite import Store
from protocol.framing import LineReader
from protocol.messages import Rules

NAMES = ("alice", "bob")


async def bot(port: int, name: str, token: str, compact: bool, seen: list[dict[str, Any]],
              sizes: list[int]) -> None:
    """Answer every request at random from what it offers; the first compact discard is first
    answered with one card too many (an illegal answer) to see the referee refuse it."""
    rng = random.Random(name)
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    reader = LineReader(stream, 1 << 20)
    hello: dict[str, Any] = {"type": "hello", "name": name, "token": token}
    if compact:
        hello["legal"] = "compact"
    tried_illegal = False
    async with stream:
        await stream.send_all(msgspec.json.encode(hello) + b"\n")
        while (raw := await reader.read_line()) is not None:
            sizes.append(len(raw) + 1)
            msg = msgspec.json.decode(raw)
            seen.append(msg)
            if msg["type"] != "request":
                continue
            legal = msg["legal"]
            if isinstance(legal, dict):
                c = legal["choose"]
                if not tried_illegal:
                    tried_illegal = True
                    action: Any = c["from"][: c["max"] + 1]
                else:
                    action = rng.sample(c["from"], rng.randint(c["min"], c["max"]))
            else:
                action = rng.choice(legal)
            await stream.send_all(msgspec.json.encode({"type": "action", "id": msg["id"], "action": action}) + b"\n")


async def test_each_bot_gets_the_form_it_asked_for() -> None:
    store = Store(":memory:")
    tokens = [store.add_bot(name) for name in NAMES]
    server = ArenaServer(store, ServerConfig(host="127.0.0.1", port=0))
    seen: tuple[list[dict[str, Any]], list[dict[str, Any]]] = ([], [])
    sizes: tuple[list[int], list[int]] = ([], [])
    config = MatchConfig(game="piquet", rules=Rules(pack=36), max_illegal=1)
    try:
        with trio.fail_after(60):
            async with trio.open_nursery() as nursery:
                port = await nursery.start(server.serve)
                for i in (0, 1):
                    nursery.start_soon(bot, port, NAMES[i], tokens[i], i == 0, seen[i], sizes[i])
                    assert await server.wait_for(NAMES[i], 10) is not None
                conns = (server.bots[NAMES[0]], server.bots[NAMES[1]])
                result = await Referee("t1-m0001", 11, config, conns, MatchLog(None)).run()
                for conn in conns:
                    await conn.aclose("over")
                nursery.cancel_scope.cancel()
    finally:
        store.close()
    assert result.reason in ("rubicon", "draw"), result.detail
    discards = [[m for m in s if m["type"] == "request" and m["decision"] == "discard"] for s in seen]
    assert discards[0] and discards[1]
    assert all(isinstance(m["legal"], dict) for m in discards[0])
    assert all(isinstance(m["legal"], list) and len(m["legal"]) > 100 for m in discards[1])
    others = [m for m in seen[0] if m["type"] == "request" and m["decision"] != "discard"]
    assert others and all(isinstance(m["legal"], list) for m in others)  # only discards change
    assert max(sizes[0]) < 2048 < max(sizes[1])
    errors = [m for m in seen[0] if m["type"] == "error"]
    assert len(errors) == 1 and errors[0]["code"] == "illegal_action" and not errors[0]["fatal"]
    assert "piquet.md §P4" in errors[0]["message"] and "'" not in errors[0]["message"]
    refused = next(m for m in discards[0] if m["id"] == errors[0]["id"])
    # the decision is asked again (a new request id, the same description)
    assert sum(1 for m in discards[0] if m["legal"] == refused["legal"]) == 2


def test_a_timeout_names_the_size_of_a_long_request_line() -> None:
    """docs/protocol.md §6.2 ``error``: a timeout on a request line over 16 KiB says its size
    (a bot whose read buffer is too small never sees the request)."""
    assert long_line_note(LIMITS.long_line_bytes - 1) == ""
    note = long_line_note(96_164)
    assert "the request line was 96,164 bytes long" in note and "compact" in note
