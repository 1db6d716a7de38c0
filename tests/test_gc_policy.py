"""A server's garbage collection (arena/gc_policy.py) and the untracked protocol messages."""

from __future__ import annotations

import gc
import inspect

import msgspec
import pytest

from arena.gc_policy import GEN0_THRESHOLD, restore, tune_for_server
from arena.match.log import LogAction, LogEvent, LogIncident
from protocol import messages
from protocol.framing import decode_client, decode_server, encode
from protocol.messages import (
    ActionMsg,
    CardPlayed,
    EcarteView,
    EventMsg,
    Hello,
    MatchStart,
    Request,
    Rules,
    TimeControl,
    TrickCard,
)


def test_tune_for_server_freezes_start_up_and_raises_the_young_threshold() -> None:
    before = gc.get_threshold()
    kept = tune_for_server()
    try:
        assert kept == before
        assert gc.get_threshold() == (GEN0_THRESHOLD, before[1], before[2])
        assert gc.get_freeze_count() > 1000  # modules, functions, tables of start-up
    finally:
        restore(kept)
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0


def struct_classes() -> list[type]:
    return [cls for _, cls in inspect.getmembers(messages, inspect.isclass)
            if issubclass(cls, msgspec.Struct) and cls.__module__ == "protocol.messages"]


def test_every_protocol_struct_and_log_line_is_untracked() -> None:
    classes = struct_classes() + [LogEvent, LogAction, LogIncident]
    assert len(classes) > 40
    tracked = [cls.__name__ for cls in classes if cls.__struct_config__.gc]
    assert not tracked, f"tracked by the garbage collector: {tracked}"


def test_untracked_messages_still_round_trip() -> None:
    view = EcarteView(seat=0, dealer=1, elder=0, deal=2, manche=1, target=5, scores=[1, 3], manches=[0, 0],
                      turn_up="Js", trump="s", stock=12, hand=["Ks", "7h"], tricks=[1, 0],
                      trick=[TrickCard(seat=1, card="Qh")])
    sent = [
        Request(id=7, match_id="m1", decision="play", legal=["Ks", "7h"], state=view, time_ms=2000, bank_ms=0),
        EventMsg(match_id="m1", seq=3, event=CardPlayed(seat=1, card="Qh", trick=2)),
        MatchStart(match_id="m1", game="ecarte", seat=0, opponent="b", rules=Rules(), time=TimeControl(),
                   on_timeout="forfeit", max_strikes=3, max_illegal=0),
    ]
    for msg in sent:
        back = decode_server(encode(msg)[:-1])
        assert back == msg and not gc.is_tracked(back)
    hello = decode_client(b'{"type":"hello","name":"a","token":"t","protocol":1}')
    action = decode_client(b'{"type":"action","id":7,"action":["7h","8c"]}')
    assert isinstance(hello, Hello) and isinstance(action, ActionMsg) and action.action == ["7h", "8c"]
    assert not gc.is_tracked(hello) and not gc.is_tracked(action)


@pytest.mark.parametrize("line", [LogEvent(1, [0], True, CardPlayed(seat=0, card="Ks", trick=1)),
                                  LogAction(0, "discard", ["7h"]), LogIncident(1, "timeout", "late")])
def test_log_lines_encode_as_before(line: msgspec.Struct) -> None:
    raw = msgspec.json.encode(line)
    assert msgspec.json.decode(raw, type=type(line)) == line and not gc.is_tracked(line)
