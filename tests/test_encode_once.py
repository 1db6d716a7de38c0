"""An event encoded once (protocol.framing.encode_event) gives the same bytes everywhere it goes:
the match log, the spectators' ``spectate`` lines and the bots' ``event`` lines."""

from __future__ import annotations

import random

import msgspec
import trio

from arena.games import GAMES
from arena.match.log import MatchLog, read_bytes, verify_chain
from arena.net.spectate import SpectatorHub, Subscriber
from protocol.framing import encode, encode_event
from protocol.messages import EventMsg, Rules, Spectate, TimeControl


def events_of_a_deal() -> list:
    engine = GAMES["ecarte"](Rules(), random.Random(5))
    seen = list(engine.start())
    while not engine.over and len(seen) < 400:
        seen.extend(engine.apply(engine.legal_actions()[0]))
    return seen


def test_the_wire_and_the_log_get_the_same_bytes_from_an_encoded_event(tmp_path) -> None:
    events = events_of_a_deal()
    kinds = {type(e).__name__ for e, _ in events}
    assert {"HandDealt", "CardPlayed", "TrickWon"} <= kinds
    for seq, (event, _) in enumerate(events, start=1):
        raw = encode_event(event)
        wire = encode(EventMsg(match_id="m", seq=seq, event=event))
        assert encode(EventMsg(match_id="m", seq=seq, event=raw)) == wire
        assert msgspec.json.decode(raw) == msgspec.to_builtins(event)
    paths = []
    for name, once in (("struct", False), ("raw", True)):
        path = tmp_path / f"{name}.jsonl"
        with MatchLog(path) as log:
            for event, seen_by in events:
                log.event(encode_event(event) if once else event, seen_by)
        paths.append(path)
    assert read_bytes(paths[0]) == read_bytes(paths[1])
    verify_chain(read_bytes(paths[1]))


def test_spectators_get_the_same_line_from_an_encoded_event() -> None:
    lines: dict[bool, list[bytes]] = {}
    for once in (False, True):
        hub = SpectatorHub()
        sub = Subscriber("fan")
        hub.add(sub)
        hub.match_started("m", "ecarte", ["a", "b"], Rules(), TimeControl())
        hub.subscribe(sub, "m")
        for event, seen_by in events_of_a_deal():
            hub.event("m", event, tuple(seen_by), raw=encode_event(event) if once else None)
        got = []
        while True:
            try:
                got.append(sub.receive_channel.receive_nowait())
            except trio.WouldBlock:
                break
        lines[once] = got
    assert len(lines[True]) > 10 and lines[True] == lines[False]
    spectates = [msgspec.json.decode(line[:-1], type=Spectate) for line in lines[True] if b'"spectate"' in line]
    assert spectates and all(s.match_id == "m" for s in spectates)
