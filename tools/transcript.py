"""Capture a real protocol transcript: one match over loopback TCP, every line one seat sees.

Usage::

    python tools/transcript.py                 # search a seed, play one match, print seat 0
    python tools/transcript.py --seed 17 --seat 1 --all

The arena server (:class:`arena.server.ArenaServer`) listens on 127.0.0.1 with an in-memory
store where two bots are registered. Two small trio clients connect, say ``hello``, and answer
every ``request`` with a fixed policy:

* ``propose``: propose while no exchange has happened in this deal, then play;
* ``respond``: accept while no exchange has happened in this deal, then refuse;
* ``discard``: the two weakest cards (plain cards before trumps, low before high), or as many
  as allowed, written in the reverse of the order ``legal`` lists them (any order is valid);
* ``king``: announce;
* ``play``: the first legal card.

One match is refereed as a tournament would (:class:`arena.referee.Referee`, default
:class:`arena.referee.MatchConfig`), then each bot is sent ``goodbye`` as at the end of a
tournament. Each printed line is ``C: `` (sent by the client) or ``S: `` (received from the
server) followed by the exact JSON line.

Without ``--seed``, seeds from 1 up are replayed on the rules engine alone (same policy, no
network) until the first deal has an accepted proposal, both discards, and a king of trumps
announced by the printed seat; that seed is then played for real.

docs/protocol.md's annotated transcript is this program's output for seat 0 (the test
``tests/test_protocol_schema.py`` replays it and compares).
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path
from typing import Any

import msgspec
import trio

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from arena.games.ecarte import RANK, EcarteMatch  # noqa: E402
from arena.matchlog import MatchLog  # noqa: E402
from arena.referee import MatchConfig, Referee  # noqa: E402
from arena.server import ArenaServer, ServerConfig  # noqa: E402
from arena.store import Store  # noqa: E402
from protocol.framing import LineReader  # noqa: E402
from protocol.messages import Call, Exchange, Goodbye, KingAnnounced  # noqa: E402

NAMES = ("alice", "bob")
TOKENS = ("alice-secret-token", "bob-secret-token")
MATCH_ID = "t1-m0001"
GOODBYE_REASON = "tournament over"  # what arena.tournament sends at the end


# --------------------------------------------------------------------------- the policy


def choose(decision: str, legal: list[Any], state: dict[str, Any]) -> Any:
    """The scripted bots' answer to a request (see the module docstring)."""
    if decision == "propose":
        return "propose" if state.get("proposals", 0) == 0 else "play"
    if decision == "respond":
        return "accept" if state.get("proposals", 0) == 0 else "refuse"
    if decision == "king":
        return "announce"
    if decision == "discard":
        trump = state["trump"]
        weakest = sorted(state["hand"], key=lambda c: (c[1] == trump, RANK[c[0]]))
        sizes = sorted({len(a) for a in legal})
        n = 2 if 2 in sizes else sizes[-1]
        chosen = set(weakest[:n])
        for option in legal:
            if set(option) == chosen:
                return list(reversed(option))
        return legal[0]  # pragma: no cover - every subset of the hand is in legal
    return legal[0]


# --------------------------------------------------------------------------- seed search


def deal_one_has_everything(seed: int, seat: int, config: MatchConfig) -> bool:
    """Replay ``seed``'s first deal on the engine alone with :func:`choose`; True if it has an
    accepted proposal, both discards, and a king announced by ``seat``."""
    match = EcarteMatch(config.rules, random.Random(seed))
    events = [e for e, _ in match.start()]
    while not match.over and match.deal_no == 1:
        s = match.to_act
        state = msgspec.to_builtins(match.view(s))
        events += [e for e, _ in match.apply(choose(match.decision, match.legal_actions(), state))]
    if match.deal_no != 2:
        return False
    accepted = any(isinstance(e, Call) and e.call == "accept" for e in events)
    discards = {e.seat for e in events if isinstance(e, Exchange) and e.discarded is not None}
    king = any(isinstance(e, KingAnnounced) and e.announced and e.seat == seat for e in events)
    return accepted and discards == {0, 1} and king


def find_seed(seat: int, config: MatchConfig, start: int = 1, limit: int = 100_000) -> int:
    """The first seed from ``start`` whose first deal has everything (see above)."""
    for seed in range(start, start + limit):
        if deal_one_has_everything(seed, seat, config):
            return seed
    raise LookupError(f"no suitable seed in {start}..{start + limit - 1}")


# --------------------------------------------------------------------------- the real run


async def _client(port: int, name: str, token: str, lines: list[str]) -> None:
    """Connect, say hello, answer requests with :func:`choose`; record every line both ways."""
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    reader = LineReader(stream)

    async def send(obj: dict[str, Any]) -> None:
        data = msgspec.json.encode(obj)
        lines.append("C: " + data.decode())
        await stream.send_all(data + b"\n")

    async with stream:
        await send({"type": "hello", "name": name, "token": token, "protocol": 1, "role": "bot"})
        while True:
            raw = await reader.read_line()
            if raw is None:
                return
            lines.append("S: " + raw.decode())
            msg = msgspec.json.decode(raw)
            if msg["type"] == "request":
                action = choose(msg["decision"], msg["legal"], msg["state"])
                await send({"type": "action", "id": msg["id"], "action": action})
            elif msg["type"] == "goodbye":
                return


async def capture(seed: int, config: MatchConfig | None = None) -> tuple[list[str], list[str]]:
    """Play match ``MATCH_ID`` with ``seed`` over loopback TCP; return the lines of seat 0 and
    of seat 1 (``"C: ..."`` sent, ``"S: ..."`` received), from hello to goodbye."""
    config = config or MatchConfig()
    store = Store(":memory:")
    for name, token in zip(NAMES, TOKENS, strict=True):
        store.add_bot(name, token)
    server = ArenaServer(store, ServerConfig(host="127.0.0.1"))
    lines: tuple[list[str], list[str]] = ([], [])
    try:
        with trio.fail_after(60):
            async with trio.open_nursery() as nursery:
                port = await nursery.start(server.serve)
                async with trio.open_nursery() as clients:
                    # one after the other, so that the two handshakes never interleave
                    for i in (0, 1):
                        clients.start_soon(_client, port, NAMES[i], TOKENS[i], lines[i])
                        conn = await server.wait_for(NAMES[i], 10)
                        if conn is None:
                            raise RuntimeError(f"{NAMES[i]} did not connect")
                    conns = (server.bots[NAMES[0]], server.bots[NAMES[1]])
                    await Referee(MATCH_ID, seed, config, conns, MatchLog(None)).run()
                    for conn in conns:
                        await conn.send(Goodbye(reason=GOODBYE_REASON))
                        await conn.aclose(GOODBYE_REASON)
                nursery.cancel_scope.cancel()
    finally:
        store.close()
    return lines


def until_first_deal_end(lines: list[str]) -> list[str]:
    """The lines up to and including the first ``deal_end`` event."""
    for i, line in enumerate(lines):
        if line.startswith("S: ") and msgspec.json.decode(line[3:]).get("event", {}).get("kind") == "deal_end":
            return lines[: i + 1]
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, help="match seed (default: search one)")
    parser.add_argument("--seat", type=int, choices=(0, 1), default=0, help="seat to print (default 0)")
    parser.add_argument("--all", action="store_true", help="print the whole match, not only deal 1")
    args = parser.parse_args(argv)
    config = MatchConfig()
    seed = args.seed if args.seed is not None else find_seed(args.seat, config)
    print(f"# seed {seed}, seat {args.seat}, default MatchConfig", file=sys.stderr)
    lines = trio.run(capture, seed, config)[args.seat]
    for line in lines if args.all else until_first_deal_end(lines):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
