"""The sample bots (sample_bots/*.toml) against a scripted fake server.

Each bot runs as a real subprocess, launched from its manifest, and talks to a plain TCP
listener in the test. Every wait has a timeout and every process is killed in a ``finally``.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest

BOTS_DIR = Path(__file__).resolve().parent.parent / "sample_bots"
NODE = shutil.which("node")
TIMEOUT = 60.0  # seconds for any single wait: it bounds a hang, a loaded machine is slow
MATCH_ID = "t1-m0001"
TOKEN = "s3cret-token"

PY_BOTS = ["random", "greedy"]
JS_BOTS = ["highcard", "cautious"]
try:
    from c_bot import ensure_c_bot
except ImportError:  # tests/ imported as a package
    from tests.c_bot import ensure_c_bot
HAVE_C_BOT = ensure_c_bot() is not None
ALL_BOTS = [
    *PY_BOTS,
    pytest.param("c_bot", marks=pytest.mark.skipif(not HAVE_C_BOT, reason="gcc not on PATH")),
    *(
        pytest.param(name, marks=pytest.mark.skipif(NODE is None, reason="node not on PATH"))
        for name in JS_BOTS
    ),
]


# --------------------------------------------------------------------------- fake server


class FakeServer:
    """A one-connection line-JSON server driven by the test."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.settimeout(TIMEOUT)
        self.port = self.listener.getsockname()[1]
        self.conn: socket.socket | None = None
        self.buf = b""

    def accept(self) -> None:
        self.conn, _ = self.listener.accept()

    def send_raw(self, data: bytes) -> None:
        assert self.conn is not None
        self.conn.sendall(data)

    def send(self, *msgs: dict) -> None:
        """Send the messages in a single write."""
        self.send_raw(b"".join(json.dumps(m).encode() + b"\n" for m in msgs))

    def recv(self) -> dict:
        assert self.conn is not None
        deadline = time.monotonic() + TIMEOUT
        while b"\n" not in self.buf:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError("no line from the bot")
            self.conn.settimeout(remaining)
            data = self.conn.recv(65536)
            if not data:
                raise EOFError("the bot closed the connection")
            self.buf += data
        line, self.buf = self.buf.split(b"\n", 1)
        msg = json.loads(line.decode("utf-8"))
        assert isinstance(msg, dict)
        return msg

    def close(self) -> None:
        for sock in (self.conn, self.listener):
            if sock is not None:
                sock.close()


def bot_command(name: str) -> list[str]:
    manifest = tomllib.loads((BOTS_DIR / f"{name}.toml").read_text(encoding="utf-8"))
    assert set(manifest) == {"name", "language", "command", "description"}
    assert manifest["name"] == name
    subst = {"{python}": sys.executable, "{node}": NODE or "node"}
    return [subst.get(part, part) for part in manifest["command"]]


@contextlib.contextmanager
def bot_session(name: str, tmp_path: Path, seed: str = "0"):
    """Start the bot, accept its connection, check its hello, welcome it; yield (server, proc)."""
    server = FakeServer()
    env = dict(os.environ)
    env.update(
        ARENA_HOST="127.0.0.1",
        ARENA_PORT=str(server.port),
        ARENA_NAME=name,
        ARENA_TOKEN=TOKEN,
        ARENA_BOT_SEED=seed,
    )
    stderr = open(tmp_path / f"{name}.stderr", "w+b")  # noqa: SIM115 - closed in finally
    proc = None
    try:
        proc = subprocess.Popen(
            bot_command(name),
            cwd=BOTS_DIR,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )
        server.accept()
        hello = server.recv()
        expected = {"type": "hello", "name": name, "token": TOKEN, "protocol": 1, "role": "bot", "legal": "compact"}
        assert hello == expected
        server.send({"type": "welcome", "name": name, "server": "fake", "protocol": 1})
        yield server, proc
    finally:
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait(timeout=TIMEOUT)
        server.close()
        stderr.seek(0)
        output = stderr.read().decode("utf-8", "replace")
        stderr.close()
        if output:
            print(f"--- {name} stderr ---\n{output}")


# --------------------------------------------------------------------------- messages


def match_start(seat: int = 0) -> dict:
    return {
        "type": "match_start",
        "match_id": MATCH_ID,
        "game": "ecarte",
        "seat": seat,
        "opponent": "fake",
        "rules": {"deal_pattern": "3-2", "target": 5, "manches": 1},
        "time": {"move_ms": 2000, "bank_ms": 0, "grace_ms": 50},
    }


def event(seq: int, **ev) -> dict:
    return {"type": "event", "match_id": MATCH_ID, "seq": seq, "event": ev}


def deal_start(seq: int, deal: int, dealer: int) -> dict:
    return event(
        seq,
        kind="deal_start",
        deal=deal,
        manche=1,
        dealer=dealer,
        elder=1 - dealer,
        turn_up="9h",
        trump="h",
        stock=21,
    )


def state(hand, *, trump="h", seat=0, dealer=1, trick=(), stock=21, proposals=0) -> dict:
    return {
        "game": "ecarte",
        "seat": seat,
        "dealer": dealer,
        "elder": 1 - dealer,
        "deal": 1,
        "manche": 1,
        "target": 5,
        "scores": [0, 0],
        "manches": [0, 0],
        "turn_up": "9" + trump,
        "trump": trump,
        "stock": stock,
        "hand": list(hand),
        "tricks": [0, 0],
        "trick": [{"seat": 1 - seat, "card": c} for c in trick],
        "proposals": proposals,
    }


_ids = itertools.count(1)


def request(decision: str, legal: list, st: dict) -> dict:
    return {
        "type": "request",
        "id": next(_ids),
        "match_id": MATCH_ID,
        "decision": decision,
        "legal": legal,
        "state": st,
        "time_ms": 2000,
        "bank_ms": 0,
    }


def subsets(hand, smallest: int, largest: int) -> list[list[str]]:
    return [list(c) for k in range(smallest, largest + 1) for c in itertools.combinations(hand, k)]


def compact(hand, smallest: int, largest: int) -> dict:
    return {"choose": {"from": list(hand), "min": smallest, "max": largest}}


def check_answer(answer: dict, req: dict):
    """The answer is an action for ``req`` and one of its legal actions; return the action."""
    assert answer["type"] == "action"
    assert answer["id"] == req["id"]
    action = answer["action"]
    if req["decision"] == "discard" and isinstance(req["legal"], dict):  # the compact form
        choose = req["legal"]["choose"]
        assert isinstance(action, list) and len(set(action)) == len(action)
        assert set(action) <= set(choose["from"]) and choose["min"] <= len(action) <= choose["max"]
    elif req["decision"] == "discard":
        assert isinstance(action, list) and len(set(action)) == len(action)
        assert sorted(action) in [sorted(opt) for opt in req["legal"]]
    else:
        assert action in req["legal"]
    return action


def ask(server: FakeServer, req: dict):
    server.send(req)
    return check_answer(server.recv(), req)


HAND = ["Kh", "7h", "Qs", "8c", "Ad"]  # trump: hearts


def scripted_requests() -> list[dict]:
    """One request of every decision kind, with the shapes the server sends."""
    return [
        request("propose", ["propose", "play"], state(HAND, seat=0, dealer=1)),
        request("respond", ["accept", "refuse"], state(HAND, seat=1, dealer=1)),
        request("discard", subsets(HAND, 1, 5), state(HAND, seat=0, dealer=1, proposals=1)),
        request("discard", subsets(HAND, 0, 5), state(HAND, seat=1, dealer=1, proposals=1)),
        request("discard", subsets(HAND, 0, 2), state(HAND, seat=1, dealer=1, stock=2)),
        # the compact form the bots ask for at hello (docs/protocol.md §8.13)
        request("discard", compact(HAND, 1, 5), state(HAND, seat=0, dealer=1, proposals=1)),
        request("discard", compact(HAND, 0, 2), state(HAND, seat=1, dealer=1, stock=2)),
        request("king", ["announce", "decline"], state(HAND, seat=0, dealer=1, stock=0)),
        request("play", list(HAND), state(HAND, seat=0, dealer=1, stock=0)),
        # following a spade lead: must win with a higher spade
        request("play", ["Qs", "Ks"], state(["Kh", "7h", "Qs", "Ks", "8c"], seat=1, trick=["Js"])),
        # void in the suit led: must trump
        request("play", ["Kh", "7h"], state(["Kh", "7h", "Qs", "8c", "Ad"], seat=1, trick=["Tc"])),
    ]


def play_script(server: FakeServer) -> list:
    """Run a whole scripted session on a welcomed bot; return the actions it chose."""
    actions = []
    server.send(match_start())
    server.send(
        deal_start(seq=1, deal=1, dealer=1),
        event(2, kind="hand", seat=0, cards=HAND),
        event(3, kind="mystery_future_kind", payload=[1, 2, 3]),
    )
    for req in scripted_requests():
        actions.append(ask(server, req))

    # one request split over two writes, the cut falling inside a multi-byte UTF-8 character
    req = request("propose", ["propose", "play"], state(HAND))
    req["note"] = "écarté"  # an unknown field, to be ignored
    data = json.dumps(req, ensure_ascii=False).encode("utf-8") + b"\n"
    cut = data.index("é".encode()) + 1
    server.send_raw(data[:cut])
    time.sleep(0.1)
    server.send_raw(data[cut:])
    actions.append(check_answer(server.recv(), req))

    # two requests in one write: two answers, in order
    first = request("respond", ["accept", "refuse"], state(HAND, seat=1))
    second = request("king", ["announce", "decline"], state(HAND))
    server.send(first, second)
    actions.append(check_answer(server.recv(), first))
    actions.append(check_answer(server.recv(), second))

    # junk and unknown messages must not kill the bot
    server.send_raw(b"this is not json\n[1, 2]\n{}\n\n")
    server.send({"type": "some_future_message", "x": 1})
    server.send(
        {
            "type": "error",
            "code": "unknown_id",
            "message": "no such request",
            "id": 999,
            "fatal": False,
        }
    )
    actions.append(ask(server, request("play", ["Qs", "Ks"], state(HAND, trick=["Js"]))))

    server.send(
        {
            "type": "match_end",
            "match_id": MATCH_ID,
            "winner": 0,
            "you": "win",
            "reason": "target",
            "scores": [5, 3],
            "manches": [0, 0],
        }
    )
    return actions


# --------------------------------------------------------------------------- tests


@pytest.mark.parametrize("name", ALL_BOTS)
def test_bot_protocol_session(name, tmp_path):
    with bot_session(name, tmp_path) as (server, proc):
        play_script(server)
        server.send({"type": "goodbye", "reason": "tournament over"})
        assert proc.wait(timeout=TIMEOUT) == 0


@pytest.mark.parametrize("name", ALL_BOTS)
def test_bot_exits_cleanly_on_eof(name, tmp_path):
    with bot_session(name, tmp_path) as (server, proc):
        server.send(match_start())
        ask(server, request("propose", ["propose", "play"], state(HAND)))
        assert server.conn is not None
        server.conn.close()
        server.conn = None
        assert proc.wait(timeout=TIMEOUT) == 0


def test_random_bot_is_reproducible(tmp_path):
    runs = []
    for _ in range(2):
        with bot_session("random", tmp_path, seed="42") as (server, proc):
            runs.append(play_script(server))
            server.send({"type": "goodbye", "reason": "done"})
            assert proc.wait(timeout=TIMEOUT) == 0
    # discards may come back in any order; compare them as sets
    norm = [[sorted(a) if isinstance(a, list) else a for a in run] for run in runs]
    assert norm[0] == norm[1]


def discard_case(hand, smallest, largest, expected, **kw):
    """A greedy case: discard from ``hand``, any legal size from ``smallest`` to ``largest``."""
    return ("discard", subsets(hand, smallest, largest), state(hand, **kw), expected)


# Hand-built positions for greedy: (decision, legal, state, expected action).
# Trumps are hearts, the turn-up is the 9h. Card order in a suit: K Q J A T 9 8 7.
GREEDY_CASES = [
    # elder with three high trumps plays without proposing
    ("propose", ["propose", "play"], state(["Kh", "Qh", "Jh", "7c", "8d"]), "play"),
    # two trumps with a high one and a side king: still strong enough
    ("propose", ["propose", "play"], state(["Qh", "7h", "Ks", "8c", "9d"]), "play"),
    # no trumps, no kings: propose
    ("propose", ["propose", "play"], state(["7c", "8d", "9s", "Tc", "Ad"]), "propose"),
    # dealer: refuse on a strong hand, accept on a weak one
    ("respond", ["accept", "refuse"], state(["Kh", "Ah", "8h", "7c", "8d"], seat=1), "refuse"),
    ("respond", ["accept", "refuse"], state(["7h", "9c", "8d", "Ts", "Ac"], seat=1), "accept"),
    # discard: keep trumps and kings
    discard_case(["Kh", "7h", "Ks", "8c", "9d"], 1, 5, ["8c", "9d"], proposals=1),
    # ... keep a queen when only a couple of cards go, but not when many do
    discard_case(["Kh", "7h", "Qs", "8c", "9d"], 1, 5, ["8c", "9d"], proposals=1),
    discard_case(["Kh", "Qs", "8c", "9d", "Tc"], 1, 5, ["Qs", "8c", "9d", "Tc"], proposals=1),
    # elder keeping everything must still throw one card: the weakest
    discard_case(["Kh", "Qh", "Jh", "Ks", "7h"], 1, 5, ["Ks"], proposals=1),
    # the stock holds only two cards: the two weakest of the intended discards
    discard_case(["Kh", "7c", "8d", "Js", "Tc"], 1, 2, ["7c", "8d"], stock=2, proposals=1),
    # dealer with nothing to throw discards nothing
    discard_case(["Kh", "Qh", "Jh", "Ks", "Kc"], 0, 5, [], seat=1, proposals=1),
    ("king", ["announce", "decline"], state(["Kh", "7c", "8d", "9s", "Tc"], stock=0), "announce"),
    # following: the lowest card that wins (the ace ranks below the jack)
    ("play", ["Ts", "Ks", "Js"], state(["Ts", "Ks", "Js", "7h", "8c"], seat=1, trick=["9s"]), "Ts"),
    ("play", ["Js", "As"], state(["Js", "As", "7h", "8c", "9d"], seat=1, trick=["Ts"]), "As"),
    # following: nothing wins, throw the lowest
    ("play", ["Qc", "7c"], state(["Qc", "7c", "Kh", "8s", "9d"], seat=1, trick=["Kc"]), "7c"),
    # void: the lowest trump wins it
    ("play", ["Jh", "7h"], state(["Jh", "7h", "8s", "9d", "Ts"], seat=1, trick=["Kc"]), "7h"),
    # leading with the top trumps: lead the highest trump
    ("play", ["Qh", "Kh", "7c", "8d", "Ks"], state(["Qh", "Kh", "7c", "8d", "Ks"]), "Kh"),
    # two trumps but not the master: lead the side king
    ("play", ["Jh", "7h", "Ks", "8c", "9d"], state(["Jh", "7h", "Ks", "8c", "9d"]), "Ks"),
    # no kings: the highest card of the longest side suit
    ("play", ["7h", "8c", "Tc", "Qd", "9s"], state(["7h", "8c", "Tc", "Qd", "9s"]), "Tc"),
]


def test_greedy_decisions(tmp_path):
    with bot_session("greedy", tmp_path) as (server, proc):
        server.send(match_start())
        server.send(deal_start(seq=1, deal=1, dealer=1))
        for decision, legal, st, expected in GREEDY_CASES:
            action = ask(server, request(decision, legal, st))
            if decision == "discard":
                assert sorted(action) == sorted(expected), (st["hand"], action)
            else:
                assert action == expected, (decision, st["hand"], st["trick"], action)

        # card tracking: once Kh and Qh have been played, the Jh is the master trump
        hand = ["Jh", "7h", "8c", "9d", "Ts"]
        server.send(
            event(2, kind="play", seat=1, card="Kh", trick=1),
            event(3, kind="play", seat=0, card="Qh", trick=1),
        )
        assert ask(server, request("play", list(hand), state(hand))) == "Jh"
        # a new deal forgets them: with no master trump, lead the best side card
        server.send(deal_start(seq=4, deal=2, dealer=0))
        assert ask(server, request("play", list(hand), state(hand))) == "Ts"

        server.send({"type": "goodbye", "reason": "done"})
        assert proc.wait(timeout=TIMEOUT) == 0


def test_js_bots_strategies(tmp_path):
    if NODE is None:
        pytest.skip("node not on PATH")
    hand = ["Kh", "7h", "Qs", "8c", "Ad"]
    respond = ["accept", "refuse"]
    with bot_session("highcard", tmp_path) as (server, proc):
        server.send(match_start())
        assert ask(server, request("propose", ["propose", "play"], state(hand))) == "play"
        assert ask(server, request("respond", respond, state(hand, seat=1))) == "refuse"
        assert ask(server, request("king", ["announce", "decline"], state(hand))) == "announce"
        assert ask(server, request("discard", subsets(hand, 0, 5), state(hand, seat=1))) == ["8c"]
        assert ask(server, request("play", list(hand), state(hand))) == "Kh"
        assert ask(server, request("play", ["Qs", "Ad"], state(hand))) == "Qs"
        weak = ["Kh", "Qs", "8c", "9c", "Ad"]  # one trump: exchange
        assert ask(server, request("propose", ["propose", "play"], state(weak))) == "propose"
        assert ask(server, request("respond", respond, state(weak, seat=1))) == "accept"
        server.send({"type": "goodbye", "reason": "done"})
        assert proc.wait(timeout=TIMEOUT) == 0
    with bot_session("cautious", tmp_path) as (server, proc):
        server.send(match_start())
        assert ask(server, request("propose", ["propose", "play"], state(hand))) == "propose"
        assert ask(server, request("respond", respond, state(hand, seat=1))) == "accept"
        assert ask(server, request("king", ["announce", "decline"], state(hand))) == "announce"
        discard = ask(server, request("discard", subsets(hand, 1, 5), state(hand)))
        assert sorted(discard) == ["8c", "Ad", "Qs"]
        keep_all = ["Kh", "7h", "Ks", "Kc", "Jh"]
        assert ask(server, request("discard", subsets(keep_all, 1, 5), state(keep_all))) == ["Ks"]
        assert ask(server, request("play", list(hand), state(hand))) == "8c"
        legal = ["Qs", "Ks"]
        assert ask(server, request("play", legal, state(hand, seat=1, trick=["Js"]))) == "Qs"
        server.send({"type": "goodbye", "reason": "done"})
        assert proc.wait(timeout=TIMEOUT) == 0
