"""Hidden information is sacred: no message to a seat names a card it could not see.

Checked two ways: over thousands of seeded engine matches (events routed by ``seen_by`` plus
the view in every request, exactly what the referee sends), and on the real TCP streams of
matches refereed by the server.
"""

from __future__ import annotations

import random

import msgspec
import pytest
import trio
from hypothesis import given, settings
from hypothesis import strategies as st

from arena.games.ecarte import EcarteMatch
from arena.match.log import MatchLog
from arena.match.referee import MatchConfig, Referee
from protocol.messages import Rules
from tests.conftest import connect_bot, examples
from tests.hidden import SeatKnowledge

RULES = st.builds(
    Rules,
    deal_pattern=st.sampled_from(["3-2", "2-3", "2-2-1"]),
    target=st.sampled_from([5, 7, "turn-up"]),
    manches=st.sampled_from([1, 3]),
)


def _check_match(seed: int, rules: Rules) -> int:
    engine = EcarteMatch(rules, random.Random(seed))
    policy = random.Random(seed ^ 0x5EED)
    seats = [SeatKnowledge(0), SeatKnowledge(1)]
    messages = 0

    def route(events):
        nonlocal messages
        for ev, seen_by in events:
            wire = msgspec.to_builtins(ev)
            for s in seen_by:
                seats[s].event(wire)
                messages += 1

    route(engine.start())
    while not engine.over:
        s = engine.to_act
        legal = engine.legal_actions()
        seats[s].message({"type": "request", "legal": msgspec.to_builtins(legal),
                          "state": msgspec.to_builtins(engine.view(s))})
        route(engine.apply(legal[int(policy.random() * len(legal))]))
    return messages


@settings(max_examples=examples(2000), deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**63 - 1), rules=RULES)
def test_no_seat_is_ever_told_a_card_it_cannot_see(seed, rules):
    assert _check_match(seed, rules) > 0


def test_the_checker_catches_a_leak():
    """The checker itself must fail when a seat is shown the other seat's hand."""
    k = SeatKnowledge(0)
    k.event({"kind": "deal_start", "turn_up": "9h"})
    k.event({"kind": "hand", "seat": 0, "cards": ["Ks", "Qs", "7h", "8c", "Ad"]})
    with pytest.raises(AssertionError):
        k.event({"kind": "hand", "seat": 1, "cards": ["Jc", "7s", "8s", "9s", "Ts"]})
    with pytest.raises(AssertionError):
        k.state({"hand": ["Ks", "Jc"], "turn_up": "9h"})
    with pytest.raises(AssertionError):
        k.event({"kind": "exchange", "seat": 1, "count": 1, "stock": 19, "discarded": ["Jc"], "drawn": ["7d"]})
    with pytest.raises(AssertionError):
        k.event({"kind": "deck", "cards": ["7c"]})


async def test_tcp_streams_reveal_nothing_hidden(server):
    a = await connect_bot(server, "alice")
    b = await connect_bot(server, "bob")
    policy = random.Random(3)

    def pick(req):
        return req["legal"][int(policy.random() * len(req["legal"]))]

    for seed in range(8):
        a.received.clear()
        b.received.clear()
        async with trio.open_nursery() as n:
            n.start_soon(a.play, pick)
            n.start_soon(b.play, pick)
            ref = Referee(f"m{seed}", seed, MatchConfig(), (server.bots["alice"], server.bots["bob"]),
                          MatchLog(None))
            await ref.run()
        for seat, client in ((0, a), (1, b)):
            k = SeatKnowledge(seat)
            for msg in client.received:
                k.message(msg)
            assert any(m["type"] == "request" for m in client.received)


def _log_lines(seed: int, rules: Rules) -> list[dict]:
    """The log lines the referee would write for a random-policy match."""
    from arena.match.log import LogAction, LogEvent

    engine = EcarteMatch(rules, random.Random(seed))
    policy = random.Random(seed + 1)
    lines: list[dict] = [{"type": "match", "seed": seed, "game": "ecarte"}]
    seq = 0

    def add(events):
        nonlocal seq
        for ev, seen_by in events:
            seq += 1
            lines.append(msgspec.to_builtins(LogEvent(seq, list(seen_by), seen_by != (0, 1), ev)))

    add(engine.start())
    while not engine.over:
        s, d = engine.to_act, engine.decision
        legal = engine.legal_actions()
        action = legal[int(policy.random() * len(legal))]
        lines.append(msgspec.to_builtins(LogAction(s, d, action)))
        add(engine.apply(action))
    lines.append({"type": "result", "scores": engine.scores})
    return lines


@settings(max_examples=examples(500), deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**63 - 1), rules=RULES)
def test_the_public_view_of_a_log_knows_no_more_than_either_seat(seed, rules):
    from arena.match.views import public_view

    public = public_view(_log_lines(seed, rules))
    assert "seed" not in public[0]
    assert not any(line["type"] == "action" for line in public)
    for seat in (0, 1, -1):  # -1: an outsider who holds no hand at all
        k = SeatKnowledge(seat)
        for line in public:
            if line["type"] == "event":
                k.event(line["event"])
