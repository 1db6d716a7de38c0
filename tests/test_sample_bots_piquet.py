"""The sample bots (sample_bots/*.toml) playing Piquet against a scripted fake server.

Same harness as ``test_sample_bots.py``: each bot runs as a real subprocess launched from its
manifest and talks to a plain TCP listener in the test. Requests are built by hand (piquet.md
decision kinds: discard, look, expose, play) or taken from the real engine
(``arena.games.piquet.PiquetMatch``) driven to the wanted decision, so their shapes are the ones
the referee sends.
"""

from __future__ import annotations

import itertools
import random
from typing import Any

import msgspec
import pytest

from arena.games.piquet import PiquetMatch
from protocol.messages import Rules
from tests.test_sample_bots import (
    ALL_BOTS,
    MATCH_ID,
    NODE,
    TIMEOUT,
    FakeServer,
    ask,
    bot_session,
    check_answer,
    event,
    request,
    subsets,
)


def match_start(seat: int = 0, pack: int = 32) -> dict:
    return {
        "type": "match_start",
        "match_id": MATCH_ID,
        "game": "piquet",
        "seat": seat,
        "opponent": "fake",
        "rules": {"deal_pattern": "3-2", "target": 5, "manches": 1, "pack": pack, "packets": 2, "scoring": "rubicon"},
        "time": {"move_ms": 2000, "bank_ms": 0, "grace_ms": 50},
        "on_timeout": "forfeit",
        "max_strikes": 3,
        "max_illegal": 0,
    }


def match_end(scores: list[int] | None = None) -> dict:
    return {
        "type": "match_end",
        "match_id": MATCH_ID,
        "winner": 0,
        "you": "win",
        "reason": "rubicon",
        "scores": scores or [150, 40],
        "manches": [0, 0],
    }


def deal_start(seq: int, deal: int, dealer: int, talon: int = 8) -> dict:
    return event(
        seq,
        kind="deal_start",
        deal=deal,
        manche=1,
        dealer=dealer,
        elder=1 - dealer,
        turn_up=None,
        trump=None,
        stock=talon,
    )


def pq_state(
    hand, *, seat=0, dealer=1, talon=8, trick=(), exchanged=(0, 0), seen=(), exposed=(), discards=(), tricks=(0, 0)
) -> dict:
    """A Piquet ``state`` (protocol PiquetView) as the server sends it."""
    return {
        "game": "piquet",
        "seat": seat,
        "dealer": dealer,
        "elder": 1 - dealer,
        "deal": 1,
        "deals": 6,
        "scoring": "rubicon",
        "scores": [0, 0],
        "deal_scores": [0, 0],
        "hand": list(hand),
        "talon": talon,
        "discards": list(discards),
        "seen": list(seen),
        "exposed": list(exposed),
        "exchanged": list(exchanged),
        "tricks": list(tricks),
        "trick": [{"seat": 1 - seat, "card": c} for c in trick],
    }


# Elder (seat 0, dealer 1) holds a quint to the ace in hearts and low odd cards.
QUINT = ["7c", "8c", "Ac", "9d", "Kd", "Th", "Jh", "Qh", "Kh", "Ah", "7s", "Ts"]
# Younger after elder took five: three cards left in the talon.
YOUNG = ["7c", "9c", "Jc", "8d", "Td", "Qd", "7h", "9h", "Kh", "8s", "Ts", "As"]
# Strong hands: quatorzes of aces and kings, a quint in hearts; HIGH holds nothing below the ten.
STRONG = ["Ac", "Kc", "Ad", "Kd", "Th", "Jh", "Qh", "Kh", "Ah", "9s", "Ks", "As"]
HIGH = ["Ac", "Kc", "Qc", "Ad", "Kd", "Th", "Jh", "Qh", "Kh", "Ah", "Ks", "As"]


def scripted_requests() -> list[dict]:
    """One request of every Piquet decision kind, in the order of a deal."""
    hand = ["7c", "Qc", "Ad", "Kd", "8h", "Th", "Jh", "Qh", "Kh", "Ah", "Js", "Qs"]
    return [
        # elder: any 1..5 of twelve cards (1585 subsets)
        request("discard", subsets(QUINT, 1, 5), pq_state(QUINT)),
        # elder who took fewer than five may look at the cards he left
        request("look", ["look", "pass"], pq_state(QUINT, talon=5, exchanged=[3, 0])),
        # younger: 0..3 cards, the empty discard included (299 subsets)
        request("discard", subsets(YOUNG, 0, 3), pq_state(YOUNG, seat=1, talon=3, exchanged=[5, 0])),
        # younger with nothing worth throwing
        request("discard", subsets(HIGH, 0, 3), pq_state(HIGH, seat=1, talon=3, exchanged=[5, 0])),
        # younger: turn the rest of the talon up, or not
        request("expose", ["expose", "keep"], pq_state(YOUNG, seat=1, talon=2, exchanged=[5, 1])),
        # the 36-card pack: elder takes up to 8 of 12 (3796 subsets)
        request("discard", subsets(QUINT, 1, 8), pq_state(QUINT, talon=12)),
        # younger, 36 cards, elder took one: 0..11 of 12 (4095 subsets)
        request("discard", subsets(YOUNG, 0, 11), pq_state(YOUNG, seat=1, talon=11, exchanged=[1, 0])),
        # leading: any card
        request("play", list(hand), pq_state(hand, talon=3, exchanged=[5, 0])),
        # following a heart: hearts only
        request(
            "play",
            ["8h", "Th", "Jh", "Qh", "Kh", "Ah"],
            pq_state(hand, seat=1, dealer=1, talon=3, exchanged=[5, 0], trick=["9h"]),
        ),
        # following a club when none can win
        request("play", ["7c", "8c"], pq_state(["7c", "8c", "Kd"], seat=1, trick=["Ac"], tricks=[5, 4])),
        # void in the suit led: any card
        request(
            "play", ["7c", "Qc", "Ad", "Kd"], pq_state(["7c", "Qc", "Ad", "Kd"], seat=1, trick=["As"], tricks=[4, 4])
        ),
    ]


def play_script(server: FakeServer) -> list[Any]:
    """A whole scripted Piquet session on a welcomed bot; return the actions it chose."""
    server.send(match_start())
    server.send(
        deal_start(seq=1, deal=1, dealer=1),
        event(2, kind="hand", seat=0, cards=QUINT),
        event(3, kind="carte_blanche_of_the_future", payload=None),
    )
    actions = [ask(server, req) for req in scripted_requests()]
    # the Piquet events a bot may see, then a request: nothing of it must confuse the bot
    server.send(
        event(
            4,
            kind="exchange",
            seat=0,
            count=5,
            stock=3,
            discarded=["7c", "8c", "9d", "7s", "Ts"],
            drawn=["8h", "Qs", "Js", "Qc", "Jd"],
        ),
        event(5, kind="look", seat=0, cards=["9s"]),
        event(6, kind="exchange", seat=1, count=2, stock=1, discarded=None, drawn=None),
        event(7, kind="talon_exposed", seat=1, cards=["7d"]),
        event(
            8,
            kind="carte_blanche",
            seat=1,
            cards=["7c", "8c", "9c", "Tc", "7d", "8d", "9d", "Td", "7h", "8h", "9h", "Th"],
        ),
        event(9, kind="declaration", category="point", elder="point of 6, 61", younger=None, result="good", winner=0),
        event(10, kind="score", seat=0, points=6, reason="point", scores=[6, 10], detail="point of 6, 61"),
        event(
            11,
            kind="declaration",
            category="sequence",
            elder="sixième to the ace",
            younger=None,
            result="good",
            winner=0,
        ),
        event(12, kind="declaration", category="set", elder=None, younger=None, result="none", winner=None),
        event(13, kind="play", seat=0, card="Ah", trick=1),
        event(14, kind="score", seat=0, points=1, reason="lead", scores=[7, 10], detail=None),
        event(15, kind="play", seat=1, card="7d", trick=1),
        event(16, kind="trick", trick=1, leader=0, cards=["Ah", "7d"], winner=0),
        event(17, kind="deal_end", deal=1, tricks=[7, 5], points=[40, 12], scores=[40, 12], ended="played"),
        event(18, kind="match_score", totals=[150, 40], winner=0, margin=290, rubicon=True),
    )
    hand = ["Kh", "Qh", "7c"]
    actions.append(ask(server, request("play", list(hand), pq_state(hand, tricks=[1, 0]))))
    server.send(match_end())
    return actions


# --------------------------------------------------------------------------- tests


@pytest.mark.parametrize("name", ALL_BOTS)
def test_bot_piquet_session(name, tmp_path):
    with bot_session(name, tmp_path) as (server, proc):
        actions = play_script(server)
        server.send({"type": "goodbye", "reason": "tournament over"})
        assert proc.wait(timeout=TIMEOUT) == 0
    if name != "random":  # the others always look, never expose
        assert (actions[1], actions[4]) == ("look", "keep")


def engine_events(out, seat: int, seq) -> list[dict]:
    """The events of ``out`` (engine ``Seen`` pairs) that ``seat`` may see, as event messages."""
    return [event(next(seq), **msgspec.to_builtins(ev)) for ev, seen in out if seat in seen]


def play_engine_match(server: FakeServer, seed: int, pack: int, seat: int = 0) -> dict[str, int]:
    """A whole Piquet match from the real engine: the bot plays ``seat``, a seeded random player
    the other. Every answer must be legal; return how many requests of each kind were sent."""
    rng = random.Random(seed)
    match = PiquetMatch(Rules(pack=pack), random.Random(seed))
    seq = itertools.count(1)
    server.send(match_start(seat=seat, pack=pack))
    pending = engine_events(match.start(), seat, seq)
    asked: dict[str, int] = {}
    while not match.over:
        legal = msgspec.to_builtins(match.legal_actions())
        if match.to_act != seat:
            action = rng.choice(legal)
        else:
            req = request(match.decision, legal, msgspec.to_builtins(match.view(seat)))
            server.send(*pending, req)
            pending = []
            action = check_answer(server.recv(), req)
            asked[match.decision] = asked.get(match.decision, 0) + 1
        pending += engine_events(match.apply(action), seat, seq)
    server.send(*pending, match_end(match.scores))
    return asked


@pytest.mark.parametrize("name", ALL_BOTS)
def test_bot_plays_whole_engine_matches(name, tmp_path):
    with bot_session(name, tmp_path) as (server, proc):
        asked: dict[str, int] = {}
        for seed, pack, seat in ((5, 32, 0), (6, 32, 1), (7, 36, 0)):
            for kind, n in play_engine_match(server, seed, pack, seat).items():
                asked[kind] = asked.get(kind, 0) + n
        assert asked["discard"] >= 6 and asked["play"] >= 6 * 12
        server.send({"type": "goodbye", "reason": "done"})
        assert proc.wait(timeout=TIMEOUT) == 0


def discard(hand, smallest, largest, **kw) -> dict:
    return request("discard", subsets(hand, smallest, largest), pq_state(hand, **kw))


def test_greedy_piquet_decisions(tmp_path):
    with bot_session("greedy", tmp_path) as (server, proc):
        server.send(match_start())
        server.send(deal_start(seq=1, deal=1, dealer=1))

        # elder keeps the quint to the ace, throws the low singletons and low cards of short suits
        thrown = ask(server, discard(QUINT, 1, 5))
        assert sorted(thrown) == sorted(["7c", "8c", "9d", "7s", "Ts"])
        # the same hand with only two cards allowed: the two weakest, the singleton 9d and the
        # 7s of a doubleton (the 7c is in a three-card suit, next to the 8c)
        assert sorted(ask(server, discard(QUINT, 1, 2, talon=2))) == ["7s", "9d"]
        # a weak elder takes his maximum
        weak = ["7c", "9c", "Jc", "8d", "Td", "Qd", "7h", "9h", "Kh", "8s", "Ts", "As"]
        assert len(ask(server, discard(weak, 1, 5))) == 5
        # a strong elder draws fewer: quatorze of aces, sixième to the ace, only the 7c goes
        strong = ["Ac", "Ad", "Ah", "As", "Kh", "Qh", "Jh", "Th", "9h", "Ks", "Kd", "7c"]
        assert ask(server, discard(strong, 1, 5)) == ["7c"]
        # elder must throw at least one card even when everything is worth keeping
        assert len(ask(server, discard(STRONG, 1, 5))) == 1

        # younger throws the low cards of short suits, keeps the rest
        thrown = ask(server, discard(YOUNG, 0, 3, seat=1, talon=3, exchanged=[5, 0]))
        assert sorted(thrown) == ["7c", "7h", "9c"]
        # younger with nothing worth throwing takes nothing; with one weak card, that card
        assert ask(server, discard(HIGH, 0, 3, seat=1, talon=3, exchanged=[5, 0])) == []
        assert ask(server, discard(STRONG, 0, 3, seat=1, talon=3, exchanged=[5, 0])) == ["9s"]

        assert ask(server, request("look", ["look", "pass"], pq_state(QUINT, talon=5, exchanged=[3, 0]))) == "look"
        expose = request("expose", ["expose", "keep"], pq_state(YOUNG, seat=1, talon=2, exchanged=[5, 1]))
        assert ask(server, expose) == "keep"

        def play(hand, legal=None, **kw):
            return ask(server, request("play", list(legal or hand), pq_state(hand, talon=0, **kw)))

        hand = ["7c", "Qc", "9d", "Jh", "Qh", "Kh", "Ah", "8s", "Js", "Qs", "Ks", "As"]
        # leading: the ace of the longest suit holding a sure winner (five spades, four hearts)
        assert play(hand) == "As"
        # no sure winner: the honour on top of the longest suit, else its lowest card
        assert play(["7c", "Qc", "9d", "Jd", "Qd", "Kd", "8s"]) == "Kd"
        assert play(["7c", "Qc", "7d", "8d", "9d", "8s"]) == "7d"
        # following: the lowest card of the suit that wins the trick
        legal = ["8s", "Js", "Qs", "Ks", "As"]
        assert play(hand, legal, seat=1, trick=["9s"]) == "Js"
        # following when it cannot win: the lowest card of the suit
        assert play(["7s", "9s", "Ks", "Ad"], ["7s", "9s", "Ks"], seat=1, trick=["As"]) == "7s"
        # void: the lowest card, not a sure winner
        assert play(["Ac", "8c", "7d", "Kd", "Qd"], seat=1, trick=["Th"]) == "7d"

        # card tracking: once the Ah and the Kh are out, the Qh is a sure winner to lead
        server.send(
            event(2, kind="play", seat=1, card="Ah", trick=1),
            event(3, kind="play", seat=0, card="Kh", trick=1),
            event(4, kind="trick", trick=1, leader=1, cards=["Ah", "Kh"], winner=1),
        )
        assert play(["7c", "8c", "9c", "Qh", "8d"]) == "Qh"
        # the opponent showed a void in clubs: any club is a sure winner, clubs being longest
        server.send(
            event(5, kind="play", seat=0, card="Tc", trick=2),
            event(6, kind="play", seat=1, card="7s", trick=2),
            event(7, kind="trick", trick=2, leader=0, cards=["Tc", "7s"], winner=0),
        )
        assert play(["7c", "8c", "9c", "Jd", "8d"]) == "9c"
        # a new deal forgets all that
        server.send(deal_start(seq=8, deal=2, dealer=0))
        assert play(["7c", "8c", "9c", "Qh", "8d"]) == "7c"

        server.send({"type": "goodbye", "reason": "done"})
        assert proc.wait(timeout=TIMEOUT) == 0


def test_js_bots_piquet_strategies(tmp_path):
    if NODE is None:
        pytest.skip("node not on PATH")
    hand = ["7c", "Qc", "9d", "Jh", "Qh", "Kh", "Ah", "8s", "Js", "Qs", "Ks", "As"]
    with bot_session("highcard", tmp_path) as (server, proc):
        server.send(match_start())
        # its five lowest cards as elder, its three lowest as younger
        assert sorted(ask(server, discard(QUINT, 1, 5))) == sorted(["7c", "7s", "8c", "9d", "Th"])
        assert sorted(ask(server, discard(YOUNG, 0, 3, seat=1, talon=3))) == ["7c", "7h", "8d"]
        assert ask(server, request("look", ["look", "pass"], pq_state(QUINT, talon=5))) == "look"
        assert ask(server, request("expose", ["expose", "keep"], pq_state(YOUNG, seat=1))) == "keep"
        # the highest card: in Piquet the ace ranks above the king
        assert ask(server, request("play", list(hand), pq_state(hand))) == "As"
        legal = ["8s", "Js", "Qs", "Ks", "As"]
        assert ask(server, request("play", legal, pq_state(hand, seat=1, trick=["9s"]))) == "As"
        server.send({"type": "goodbye", "reason": "done"})
        assert proc.wait(timeout=TIMEOUT) == 0
    with bot_session("cautious", tmp_path) as (server, proc):
        server.send(match_start())
        # its cards below the ten, at most five as elder
        assert sorted(ask(server, discard(QUINT, 1, 5))) == sorted(["7c", "7s", "8c", "9d"])
        assert sorted(ask(server, discard(YOUNG, 0, 3, seat=1, talon=3))) == ["7c", "7h", "8d"]
        assert ask(server, discard(STRONG, 0, 3, seat=1, talon=3)) == ["9s"]
        # none as younger when it holds no low card, but at least one as elder: the lowest
        assert ask(server, discard(HIGH, 0, 3, seat=1, talon=3)) == []
        assert ask(server, discard(HIGH, 1, 5)) == ["Th"]
        assert ask(server, request("look", ["look", "pass"], pq_state(QUINT, talon=5))) == "look"
        assert ask(server, request("expose", ["expose", "keep"], pq_state(YOUNG, seat=1))) == "keep"
        # leading: its lowest card; following: the lowest that wins, else the lowest
        assert ask(server, request("play", list(hand), pq_state(hand))) == "7c"
        legal = ["8s", "Js", "Qs", "Ks", "As"]
        assert ask(server, request("play", legal, pq_state(hand, seat=1, trick=["9s"]))) == "Js"
        assert ask(server, request("play", legal, pq_state(hand, seat=1, trick=["Ts"]))) == "Js"
        assert ask(server, request("play", ["7c", "Qc"], pq_state(hand, seat=1, trick=["Ac"]))) == "7c"
        server.send({"type": "goodbye", "reason": "done"})
        assert proc.wait(timeout=TIMEOUT) == 0
