"""A stored set of match logs made before the MatchRunner (issue 23), and the scripted bots that
made them: each case names a game, its options, a seed and each seat's script (answers chosen
from the request alone, so the same seed and the same script give the same answers, also
illegal ones, time-outs, hang-ups and garbage). ``tests/test_golden_logs.py`` replays the stored
logs and plays every case again through today's driver, comparing the parsed lines.

Regenerate (only when a change of behaviour is intended, and say so in the commit):
``PYTHONPATH=. python -m tests.golden``. Cases are played over memory streams on trio's
MockClock, so no time-out depends on the machine.

Scripts: a comma-separated list of ``kind@n`` (at the seat's ``n``-th request, from 1) over a
default of ``seeded`` (a legal action drawn from the request id):

* ``illegal@n`` answers ``"zz"`` (no legal action has that shape), ``late@n`` answers after
  the deadline has passed, ``silent@n`` never answers, ``hangup@n`` closes the stream,
  ``garbage@n`` sends a line that is no message, ``wrongid@n`` answers another request id,
  ``after@n`` answers and at once sends a line that is no message (a fault held while the
  other seat is asked); ``first`` as the default plays the first legal action.
"""

from __future__ import annotations

import json
import random
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import msgspec
import trio
import trio.testing

from arena.match.core import MatchConfig
from protocol.framing import LineReader
from protocol.messages import Rules, TimeControl

DATA = Path(__file__).parent / "data" / "golden"
CASES_FILE = DATA / "cases.json"
NAMES = ("alice", "bob")


class Case(msgspec.Struct):
    """One stored match: its log is ``DATA / f"{name}.jsonl.gz"``; ``absent``: seats not
    connected when it was due."""

    name: str
    seed: int
    config: MatchConfig
    scripts: tuple[str, str] = ("seeded", "seeded")
    absent: list[int] = msgspec.field(default_factory=list)

    @property
    def log_path(self) -> Path:
        return DATA / f"{self.name}.jsonl.gz"


def _cases() -> list[Case]:
    e, p = "ecarte", "piquet"
    auto = {"on_timeout": "auto", "max_strikes": 2}
    specs: list[tuple[str, int, dict[str, Any], tuple[str, str], list[int]]] = [
        ("ecarte-seeded", 11, {}, ("seeded", "seeded"), []),
        ("ecarte-first-bank", 12, {"time": TimeControl(move_ms=500, bank_ms=1000)}, ("first", "seeded"), []),
        ("ecarte-three-manches", 13, {"rules": Rules(target="turn-up", manches=3)}, ("seeded", "first"), []),
        ("ecarte-fixed-deals", 14, {"rules": Rules(deals=4, deal_pattern="2-3")}, ("seeded", "seeded"), []),
        ("ecarte-illegal-forfeit", 15, {}, ("illegal@4", "seeded"), []),
        ("ecarte-illegal-allowance", 16, {"max_illegal": 2}, ("illegal@3,illegal@5,illegal@8", "seeded"), []),
        ("ecarte-timeout-forfeit", 17, {}, ("seeded", "silent@3"), []),
        ("ecarte-timeout-auto", 18, auto, ("seeded", "silent@2,late@4,silent@6,silent@9"), []),
        ("ecarte-hangup", 19, {}, ("seeded", "hangup@5"), []),
        ("ecarte-garbage", 20, {}, ("garbage@2", "seeded"), []),
        ("ecarte-wrong-id", 21, {}, ("seeded", "wrongid@3"), []),
        ("ecarte-held-fault", 22, {}, ("after@2", "seeded"), []),
        ("ecarte-absent-one", 23, {}, ("seeded", "seeded"), [1]),
        ("ecarte-absent-both", 24, {}, ("seeded", "seeded"), [0, 1]),
        ("piquet-seeded", 31, {}, ("seeded", "seeded"), []),
        ("piquet-cent-36", 32, {"rules": Rules(scoring="cent", pack=36, packets=3)}, ("first", "seeded"), []),
        ("piquet-fixed-deals", 33, {"rules": Rules(deals=2)}, ("seeded", "first"), []),
        ("piquet-illegal-allowance", 34, {"max_illegal": 1}, ("seeded", "illegal@2,illegal@6"), []),
        ("piquet-timeout-auto", 35, auto, ("silent@1,late@3,silent@7", "seeded"), []),
        ("piquet-hangup", 36, {}, ("hangup@9", "seeded"), []),
        ("piquet-absent-one", 37, {}, ("seeded", "seeded"), [0]),
    ]
    return [Case(name, seed, MatchConfig(game=p if name.startswith("piquet") else e, **options), scripts, absent)
            for name, seed, options, scripts, absent in specs]


CASES = _cases()


def load_cases() -> list[Case]:
    """The cases as stored beside the logs."""
    return msgspec.json.decode(CASES_FILE.read_bytes(), type=list[Case])


# ----------------------------------------------------------------------------- the scripted bots


def parse_script(script: str) -> tuple[str, dict[int, str]]:
    """``(default kind, {request number: kind})`` of a script (see the module docstring)."""
    default, at = "seeded", {}
    for part in script.split(","):
        if "@" in part:
            kind, n = part.split("@")
            at[int(n)] = kind
        else:
            default = part
    return default, at


class ScriptedBot:
    """The far end of one seat's stream, playing ``script``; ``received``: every message."""

    def __init__(self, stream: trio.abc.Stream, script: str, name: str) -> None:
        self.stream = stream
        self.reader = LineReader(stream, max_line=1 << 24)
        self.default, self.at = parse_script(script)
        self.name = name
        self.received: list[dict[str, Any]] = []

    async def _send(self, obj: dict[str, Any] | bytes) -> None:
        data = obj if isinstance(obj, bytes) else json.dumps(obj).encode() + b"\n"
        try:
            await self.stream.send_all(data)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass

    def choose(self, req: dict[str, Any], kind: str) -> Any:
        legal = req["legal"]
        if kind == "first":
            return legal[0]
        return legal[random.Random(f"{self.name}:{req['id']}:{req['decision']}").randrange(len(legal))]

    async def play(self) -> None:
        n = 0
        while True:
            try:
                line = await self.reader.read_line()
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                return
            if line is None:
                return
            msg = json.loads(line)
            self.received.append(msg)
            if msg["type"] == "match_end":
                return
            if msg["type"] != "request":
                continue
            n += 1
            kind = self.at.get(n, self.default)
            rid = msg["id"]
            if kind == "silent":
                continue
            if kind == "hangup":
                await self.stream.aclose()
                return
            if kind == "garbage":
                await self._send(b"this is not json\n")
                continue
            if kind == "late":
                await trio.sleep((msg["time_ms"] + msg["bank_ms"] + 5_000) / 1000)
            action: Any = "zz" if kind == "illegal" else self.choose(msg, self.default)
            await self._send({"type": "action", "id": rid + 1000 if kind == "wrongid" else rid, "action": action})
            if kind == "after":
                await self._send(b"{oops\n")


Play = Callable[[Case, Path, tuple[trio.abc.Stream | None, trio.abc.Stream | None]], Awaitable[Any]]


async def play_case(case: Case, log_path: Path, play: Play) -> Any:
    """Play ``case`` with its scripted bots over memory streams, the referee's side handed to
    ``play(case, log_path, streams)`` (None for an absent seat); returns what ``play`` returns.
    Must run on a MockClock with autojump."""
    ours: list[trio.abc.Stream | None] = []
    bots = []
    for seat in (0, 1):
        if seat in case.absent:
            ours.append(None)
            continue
        a, b = trio.testing.memory_stream_pair()
        ours.append(a)
        bots.append(ScriptedBot(b, case.scripts[seat], NAMES[seat]))
    out: list[Any] = []
    async with trio.open_nursery() as nursery:
        for bot in bots:
            nursery.start_soon(bot.play)
        out.append(await play(case, log_path, (ours[0], ours[1])))
        await trio.sleep(30)  # the bots read match_end (virtual time)
        nursery.cancel_scope.cancel()
    return out[0]


# ----------------------------------------------------------------------------- comparing logs

KINDS = ("match", "event", "action", "incident", "result")


def comparable(lines: list[dict[str, Any]], like: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """The lines of a parsed log that a change of driver must not change: the kinds above,
    without the hash; with ``like`` (the stored log's lines), only the fields the stored line
    has (fields added to the format since are left out: the stored logs stay comparable)."""
    kept = [{k: v for k, v in line.items() if k != "hash"} for line in lines if line.get("type") in KINDS]
    for line in kept:
        if line.get("type") == "result" and line.get("reason") == "forfeit_illegal":
            # the one deliberate change since these logs were made: the result (sent to both bots,
            # shown to the public) no longer quotes the refused answer's message, which names the
            # faulty seat's hand; only "<bot>: <code>" of it is compared
            line["detail"] = ": ".join(str(line.get("detail", "")).split(": ")[:2])
    if like is None:
        return kept
    out = []
    for i, line in enumerate(kept):
        ref = like[i] if i < len(like) else line
        out.append({k: line.get(k) for k in ref if k != "hash"})
    return out


# ----------------------------------------------------------------------------- regenerating


async def _play_before(case: Case, log_path: Path, streams: Any) -> Any:  # pragma: no cover - generator only
    """The driver of the code these logs were made with (before the MatchRunner)."""
    from arena.match.core import result_line, unplayed
    from arena.match.log import MatchLog, write_unplayed
    from arena.match.referee import Referee
    from arena.match.seat import Connection

    if case.absent:
        result, incidents = unplayed(case.name, NAMES, case.absent)
        write_unplayed(log_path, {"match_id": case.name, "game": case.config.game, "seed": case.seed,
                                  "bots": list(NAMES), "config": msgspec.to_builtins(case.config)},
                       incidents, {k: v for k, v in result_line(result).items() if k != "type"})
        return result
    conns = tuple(Connection(s, LineReader(s), NAMES[i], send_timeout_s=10.0) for i, s in enumerate(streams))
    async with trio.open_nursery() as nursery:
        for conn in conns:
            nursery.start_soon(conn.run_reader)
        with MatchLog(log_path) as log:
            result = await Referee(case.name, case.seed, case.config, conns, log).run()
        nursery.cancel_scope.cancel()
    return result


def regenerate() -> None:  # pragma: no cover - run by hand
    DATA.mkdir(parents=True, exist_ok=True)
    for case in CASES:
        trio.run(play_case, case, case.log_path, _play_before, clock=trio.testing.MockClock(autojump_threshold=0))
    CASES_FILE.write_bytes(msgspec.json.format(msgspec.json.encode(CASES)) + b"\n")
    for case in CASES:
        from arena.match.log import read_log

        last = read_log(case.log_path)[-1]
        print(f"{case.name}: {last['reason']} winner={last['winner']} decisions={last['decisions']}")


if __name__ == "__main__":
    regenerate()
