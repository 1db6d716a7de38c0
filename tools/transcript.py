"""Capture a real protocol transcript: one match over loopback TCP, every line one seat sees.

Usage::

    python tools/transcript.py                 # Écarté: search a seed, play one match, print seat 0
    python tools/transcript.py --seed 17 --seat 1 --all
    python tools/transcript.py --game piquet --all --abridge 12

The arena server (:class:`arena.net.server.ArenaServer`) listens on 127.0.0.1 with an in-memory
store where two bots are registered. Two small trio clients connect, say ``hello``, and answer
every ``request`` with a fixed policy. In Écarté:

* ``propose``: propose while no exchange has happened in this deal, then play;
* ``respond``: accept while no exchange has happened in this deal, then refuse;
* ``discard``: the two weakest cards (plain cards before trumps, low before high), or as many
  as allowed, written in the reverse of the order ``legal`` lists them (any order is valid);
* ``king``: announce;
* ``play``: the first legal card.

In Piquet (``--game piquet``):

* ``discard``: every card below the ten (9, 8, 7, and 6 in a 36-card pack), as many as allowed,
  lowest rank first; if that is fewer than the minimum (elder must discard one), the lowest
  cards of the hand. The cards are written lowest rank first, not in the order ``legal`` lists
  them (any order is valid);
* ``look``: look;
* ``expose``: expose;
* ``play``: the first legal card.

One match is refereed as a tournament would (:class:`arena.match.referee.Referee`, default
:class:`arena.match.referee.MatchConfig` for the game), then each bot is sent ``goodbye`` as at the
end of a tournament. Each printed line is ``C: `` (sent by the client) or ``S: `` (received from
the server) followed by the exact JSON line. With ``--abridge K``, a ``request`` whose ``legal``
list holds more than K + 1 entries is printed with only its first K entries and its last one
(:func:`abridge`; a Piquet ``discard`` request lists up to thousands of discards): everything
else on that line is unchanged.

Without ``--seed``, seeds from 1 up are replayed on the rules engine alone (same policy, no
network) until the first deal shows what the documentation wants to show (see
:func:`ecarte_deal_one_has_everything` and :func:`piquet_deal_one_has_everything`); that seed
is then played for real.

docs/protocol.md's annotated transcripts are this program's output (the test
``tests/test_protocol_schema.py`` replays them and compares).
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

from arena.games import GAMES  # noqa: E402
from arena.games.ecarte import RANK  # noqa: E402
from arena.games.piquet import RANK as PIQUET_RANK  # noqa: E402
from arena.match.log import MatchLog  # noqa: E402
from arena.match.referee import MatchConfig, Referee  # noqa: E402
from arena.net.server import ArenaServer, ServerConfig  # noqa: E402
from arena.store.sqlite import Store  # noqa: E402
from protocol.framing import LineReader  # noqa: E402
from protocol.messages import (  # noqa: E402
    Call,
    Declaration,
    Exchange,
    Goodbye,
    KingAnnounced,
    LookedAt,
    Score,
    TalonExposed,
)

NAMES = ("alice", "bob")
TOKENS = ("alice-secret-token", "bob-secret-token")
MATCH_ID = "t1-m0001"
GOODBYE_REASON = "tournament over"  # what arena.schedule.tournament sends at the end
CLIENT_MAX_LINE = 1 << 20
"""The clients accept server lines up to 1 MiB (a Piquet discard request can exceed 64 KiB)."""


def config_for(game: str = "ecarte") -> MatchConfig:
    """The default match settings of ``game`` (what a tournament uses unless told otherwise)."""
    return MatchConfig(game=game)


# --------------------------------------------------------------------------- the policy


def choose(decision: str, legal: list[Any], state: dict[str, Any]) -> Any:
    """The scripted bots' answer to a request (see the module docstring)."""
    if state.get("game") == "piquet":
        return choose_piquet(decision, legal, state)
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


def choose_piquet(decision: str, legal: list[Any], state: dict[str, Any]) -> Any:
    """The Piquet policy (see the module docstring)."""
    if decision == "look":
        return "look"
    if decision == "expose":
        return "expose"
    if decision == "discard":
        sizes = {len(a) for a in legal}
        lowest = sorted(state["hand"], key=lambda c: (PIQUET_RANK[c[0]], c[1]))
        low = [c for c in lowest if PIQUET_RANK[c[0]] < PIQUET_RANK["T"]]
        n = min(max(len(low), min(sizes)), max(sizes))
        chosen = lowest[:n]
        if {len(o) for o in legal if set(o) == set(chosen)}:
            return chosen
        return legal[0]  # pragma: no cover - every subset of the right sizes is in legal
    return legal[0]


# --------------------------------------------------------------------------- seed search


def _first_deal(seed: int, config: MatchConfig) -> tuple[list[Any], list[tuple[int, str]], Any]:
    """Replay ``seed``'s first deal on the engine alone with :func:`choose`: its events, the
    decisions asked as ``(seat, kind)``, and the engine (None if the match ended in deal 1)."""
    match = GAMES[config.game](config.rules, random.Random(seed))
    events = [e for e, _ in match.start()]
    asked: list[tuple[int, str]] = []
    while not match.over and match.deal_no == 1:
        s = match.to_act
        asked.append((s, match.decision))
        state = msgspec.to_builtins(match.view(s))
        events += [e for e, _ in match.apply(choose(match.decision, match.legal_actions(), state))]
    return events, asked, (match if match.deal_no == 2 else None)


def ecarte_deal_one_has_everything(seed: int, seat: int, config: MatchConfig) -> bool:
    """True if ``seed``'s first Écarté deal has an accepted proposal, both discards, and a king
    announced by ``seat``."""
    events, _, match = _first_deal(seed, config)
    if match is None:
        return False
    accepted = any(isinstance(e, Call) and e.call == "accept" for e in events)
    discards = {e.seat for e in events if isinstance(e, Exchange) and e.discarded is not None}
    king = any(isinstance(e, KingAnnounced) and e.announced and e.seat == seat for e in events)
    return accepted and discards == {0, 1} and king


def piquet_deal_one_has_everything(seed: int, seat: int, config: MatchConfig) -> bool:
    """True if in ``seed``'s first Piquet deal ``seat`` is elder and looks at the talon,
    younger exposes the rest of it, ``seat`` wins the point, the sequences and the sets are won
    by different seats, one seat scores two combinations of one category, a trick is won as
    second player with an honour, and the cards (more tricks) score."""
    events, asked, match = _first_deal(seed, config)
    if match is None or (seat, "look") not in asked or (1 - seat, "expose") not in asked:
        return False
    looked = any(isinstance(e, LookedAt) for e in events)
    exposed = any(isinstance(e, TalonExposed) for e in events)
    won = {d.category: d.winner for d in events if isinstance(d, Declaration) and d.winner is not None}
    scores = [e for e in events if isinstance(e, Score)]
    combos = [(e.seat, e.reason) for e in scores if e.reason in ("sequence", "set")]
    return (
        looked
        and exposed
        and won.get("point") == seat
        and {won.get("sequence"), won.get("set")} == {0, 1}
        and len(set(combos)) < len(combos)
        and {"trick", "cards"} <= {e.reason for e in scores}
    )


def deal_one_has_everything(seed: int, seat: int, config: MatchConfig) -> bool:
    """The seed-search criterion of ``config.game`` (see the two functions above)."""
    if config.game == "piquet":
        return piquet_deal_one_has_everything(seed, seat, config)
    return ecarte_deal_one_has_everything(seed, seat, config)


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
    reader = LineReader(stream, CLIENT_MAX_LINE)

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


def abridge(line: str, keep: int = 12) -> str:
    """``line`` (one JSON line, no prefix) with the ``legal`` list of a ``request`` cut to its
    first ``keep`` entries and its last one, if it holds more than ``keep + 1``; any other line
    unchanged. The result is still one valid ``request`` (compact JSON, fields in order)."""
    if keep <= 0 or '"type":"request"' not in line:
        return line
    msg = msgspec.json.decode(line)
    legal = msg.get("legal")
    if msg.get("type") != "request" or not isinstance(legal, list) or len(legal) <= keep + 1:
        return line
    msg["legal"] = legal[:keep] + legal[-1:]
    return msgspec.json.encode(msg).decode()


def until_first_deal_end(lines: list[str]) -> list[str]:
    """The lines up to and including the first ``deal_end`` event."""
    for i, line in enumerate(lines):
        if line.startswith("S: ") and msgspec.json.decode(line[3:]).get("event", {}).get("kind") == "deal_end":
            return lines[: i + 1]
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--game", choices=sorted(GAMES), default="ecarte", help="the game (default ecarte)")
    parser.add_argument("--seed", type=int, help="match seed (default: search one)")
    parser.add_argument("--seat", type=int, choices=(0, 1), default=0, help="seat to print (default 0)")
    parser.add_argument("--all", action="store_true", help="print the whole match, not only deal 1")
    parser.add_argument("--abridge", type=int, default=0, metavar="K",
                        help="cut legal lists longer than K + 1 to their first K entries and the last (0: never)")
    args = parser.parse_args(argv)
    config = config_for(args.game)
    seed = args.seed if args.seed is not None else find_seed(args.seat, config)
    print(f"# {args.game}: seed {seed}, seat {args.seat}, default MatchConfig", file=sys.stderr)
    lines = trio.run(capture, seed, config)[args.seat]
    for line in lines if args.all else until_first_deal_end(lines):
        print(line[:3] + abridge(line[3:], args.abridge))
    return 0


if __name__ == "__main__":
    sys.exit(main())
