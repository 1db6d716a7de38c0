"""``arena watch``: the spectator's terminal view.

* :class:`arena.tools.watch.WatchState` on scripted feeds (Écarté and Piquet): what is shown, who is
  to act and for how long, the switch to the next match, and above all that no card appears
  before the feed has made it public;
* one run against a real contest: ``main(..., once=True)`` in a subprocess prints a finished
  match, and a spectator's whole feed replayed through the state never shows a hidden card;
* docs/grafana-dashboard.json parses and queries only metrics that exist.
"""

from __future__ import annotations

import io
import json
import re
import sys
from functools import partial
from pathlib import Path
from typing import Any

import msgspec
import trio
from rich.console import Console

from arena.metrics import METRICS
from arena.net.server import ServerConfig
from arena.schedule.contest import Contest, ContestConfig
from arena.store.sqlite import Store
from arena.tools.watch import WatchState
from tests.conftest import TRUST_BOTS

ROOT = Path(__file__).resolve().parent.parent
SYMBOL = {"♣": "c", "♦": "d", "♥": "h", "♠": "s"}
CARD_RE = re.compile(r"([6789TJQKA])([♣♦♥♠])")


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def text(state: WatchState, match_id: str | None = None) -> str:
    console = Console(width=130, record=True, file=io.StringIO())
    console.print(state.render(match_id))
    return console.export_text()


def cards_shown(rendered: str) -> set[str]:
    """The cards in a rendered view, in protocol notation (``K♠`` -> ``Ks``)."""
    return {rank + SYMBOL[suit] for rank, suit in CARD_RE.findall(rendered)}


def row(rendered: str, name: str) -> str:
    """The players-table row of ``name``."""
    return next(line for line in rendered.splitlines() if re.search(rf"\d  {name} \((dealer|elder)\)", line))


def watch(mid: str, bots: list[str], game: str = "ecarte", pair: str | None = None, **rules: Any) -> dict:
    return {"type": "watch",
            "match": {"match_id": mid, "game": game, "bots": bots, "scores": [0, 0], "deal": 0, "pair": pair},
            "rules": {"deal_pattern": "3-2", "target": 5, "manches": 1, "pack": 32, "packets": 2,
                      "scoring": "rubicon", **rules},
            "time": {"move_ms": 1500, "bank_ms": 3000, "grace_ms": 50}}


def spectate(mid: str, seq: int, **event: Any) -> dict:
    return {"type": "spectate", "match_id": mid, "seq": seq, "event": event}


# One Écarté deal of match m1 (alice seat 0 deals, bob elder), as the feed gives it.
HANDS = {0: ["7c", "Jd", "Kd", "Qh", "As"], 1: ["Jc", "9d", "Td", "Th", "Ks"]}
ECARTE_DEAL = [
    spectate("m1", 1, kind="dealer_draw", cards=["Js", "7d"], dealer=0),
    spectate("m1", 2, kind="deal_start", deal=1, manche=1, dealer=0, elder=1, turn_up="Qd", trump="d", stock=21),
    spectate("m1", 3, kind="call", seat=1, call="propose"),
    spectate("m1", 4, kind="call", seat=0, call="refuse"),
    spectate("m1", 5, kind="play", seat=1, card="Jc", trick=1),
    spectate("m1", 6, kind="king", seat=0, card="Kd", announced=True),
    spectate("m1", 7, kind="score", seat=0, points=1, reason="king", scores=[1, 0], detail=None),
    spectate("m1", 8, kind="play", seat=0, card="7c", trick=1),
    spectate("m1", 9, kind="trick", trick=1, leader=1, cards=["Jc", "7c"], winner=1),
    spectate("m1", 10, kind="play", seat=1, card="9d", trick=2),
    spectate("m1", 11, kind="play", seat=0, card="Jd", trick=2),
    spectate("m1", 12, kind="trick", trick=2, leader=1, cards=["9d", "Jd"], winner=0),
    spectate("m1", 13, kind="play", seat=0, card="Kd", trick=3),
    spectate("m1", 14, kind="play", seat=1, card="Td", trick=3),
    spectate("m1", 15, kind="trick", trick=3, leader=0, cards=["Kd", "Td"], winner=0),
    spectate("m1", 16, kind="play", seat=0, card="Qh", trick=4),
    spectate("m1", 17, kind="play", seat=1, card="Th", trick=4),
    spectate("m1", 18, kind="trick", trick=4, leader=0, cards=["Qh", "Th"], winner=0),
    spectate("m1", 19, kind="play", seat=0, card="As", trick=5),
    spectate("m1", 20, kind="play", seat=1, card="Ks", trick=5),
    spectate("m1", 21, kind="trick", trick=5, leader=0, cards=["As", "Ks"], winner=1),
    spectate("m1", 22, kind="score", seat=0, points=1, reason="tricks", scores=[2, 0], detail=None),
    spectate("m1", 23, kind="deal_end", deal=1, tricks=[3, 2], points=[2, 0], scores=[2, 0], ended="played"),
]
ECARTE_REVEAL = {"type": "reveal", "match_id": "m1", "deal": 1,
                 "events": [{"kind": "hand", "seat": 0, "cards": HANDS[0]},
                            {"kind": "hand", "seat": 1, "cards": HANDS[1]}],
                 "seen_by": [[0], [1]]}


def test_ecarte_deal_shows_only_what_the_feed_made_public():
    clock = Clock()
    st = WatchState(clock=clock)
    st.apply({"type": "matches", "matches": []})
    st.apply(watch("m1", ["alice", "bob"]))
    assert st.current == "m1"
    out = text(st)
    assert "alice" in out and "bob" in out and "waiting" not in out
    assert "1500 ms per decision, bank 3000 ms" in out

    public: set[str] = set()
    for msg in ECARTE_DEAL:
        st.apply(msg)
        ev = msg["event"]
        public |= {ev.get("card"), ev.get("turn_up"), *(ev.get("cards") or [])} - {None}
        shown = cards_shown(text(st))
        assert shown <= public, msg
        if ev["kind"] == "deal_start":
            out = text(st)
            assert "turn-up Q♦" in out and "diamonds" in out
            clock.now += 1.5  # bob (elder) speaks first: his clock runs
            assert "▶ 1.5 s" in row(text(st), "bob") and "▶" not in row(text(st), "alice")
        if ev["kind"] == "king":  # announced, not yet played: alice holds it
            assert "holds K♦" in row(text(st), "alice")
        if msg["seq"] == 10:
            out = text(st)
            assert "trick 2: bob 9♦" in out and "▶" in row(out, "alice")

    out = text(st)
    assert "deal over: tricks 3–2, points 2–0" in out
    assert re.search(r"alice \(dealer\)\s+2\s+3", out) and re.search(r"bob \(elder\)\s+0\s+2", out)
    assert len([line for line in out.splitlines() if line.strip("│ ").startswith("#")]) == 10  # the last 10 events
    assert "#23 end of deal 1" in out and "#13 " not in out

    st.apply(ECARTE_REVEAL)  # only now may the hands appear, in full
    out = text(st)
    assert "cards this deal (revealed)" in out
    assert "dealt 7♣ J♦ K♦ Q♥ A♠" in out and "dealt J♣ 9♦ T♦ T♥ K♠" in out

    st.apply({"type": "watch_end", "match_id": "m1", "winner": 0, "reason": "target", "scores": [5, 0]})
    out = text(st)
    assert st.ended == ["m1"]
    assert "OVER: alice wins (target), 5–0" in out and "alice (dealer) ★" in out
    assert "▶" not in out


def test_hidden_exchanges_make_the_player_to_act_unknown_and_a_declined_king_is_revealed_later():
    clock = Clock()
    st = WatchState(follow="m1", clock=clock)
    st.apply(watch("m1", ["alice", "bob"], target="turn-up", manches=3))
    st.apply(spectate("m1", 1, kind="target", card="Js", target=10))
    st.apply(spectate("m1", 2, kind="dealer_draw", cards=["Ks", "Kh"], dealer=None))
    st.apply(spectate("m1", 3, kind="dealer_draw", cards=["9s", "8d"], dealer=0))
    st.apply(spectate("m1", 4, kind="deal_start", deal=1, manche=1, dealer=0, elder=1, turn_up="8h", trump="h",
                      stock=21))
    st.apply(spectate("m1", 5, kind="call", seat=1, call="propose"))
    assert "▶" in row(text(st), "alice")  # the dealer answers
    st.apply(spectate("m1", 6, kind="call", seat=0, call="accept"))
    out = text(st)
    assert "▶" not in out and "?" in row(out, "alice")  # the exchanges are not in the feed
    assert "target 10, best of 3 manches" in out and "manches" in out
    assert "draw for dealer: alice K♠, bob K♥; tie, again" in out
    st.apply(spectate("m1", 7, kind="call", seat=1, call="play"))
    assert "▶" in row(text(st), "bob")
    st.apply(spectate("m1", 8, kind="play", seat=1, card="7s", trick=1))
    st.apply(spectate("m1", 9, kind="play", seat=0, card="Kh", trick=1))  # the king, played without announcing
    st.apply(spectate("m1", 10, kind="trick", trick=1, leader=1, cards=["7s", "Kh"], winner=0))
    assert "Q♠" not in text(st)
    st.apply(spectate("m1", 11, kind="deal_end", deal=1, tricks=[1, 0], points=[0, 0], scores=[0, 0],
                      ended="played"))
    st.apply(spectate("m1", 12, kind="deal_start", deal=2, manche=1, dealer=1, elder=0, turn_up="9c", trump="c",
                      stock=21))
    # deal 1's hidden part arrives after deal 2 began: it is shown as the last revealed deal
    st.apply({"type": "reveal", "match_id": "m1", "deal": 1, "seen_by": [[], [0], [1], [1], [0], [0]],
              "events": [{"kind": "deck", "cards": ["Qs"] * 32},
                         {"kind": "hand", "seat": 0, "cards": ["Kh", "7d", "8d", "9d", "Td"]},
                         {"kind": "hand", "seat": 1, "cards": ["7s", "8s", "9s", "Ts", "Js"]},
                         {"kind": "exchange", "seat": 1, "count": 1, "stock": 20, "discarded": ["Js"],
                          "drawn": ["Qs"]},
                         {"kind": "exchange", "seat": 1, "count": 1, "stock": 20, "discarded": None, "drawn": None},
                         {"kind": "king", "seat": 0, "card": "Kh", "announced": False}]})
    out = text(st)
    assert "deal 1, revealed: alice 7♦ 8♦ 9♦ T♦ K♥" in out and "bob 7♠ 8♠ 9♠ T♠ Q♠" in out
    assert "deal 1 revealed: alice held" in out
    assert "▶" in row(out, "alice")  # deal 2: alice is elder
    st.apply(spectate("m1", 13, kind="manche_end", manche=1, winner=0, scores=[5, 2], manches=[1, 0]))
    assert re.search(r"alice \(elder\)\s+5\s+1", text(st))
    st.apply(spectate("m1", 14, kind="deal_start", deal=3, manche=2, dealer=1, elder=0, turn_up="Ts", trump="s",
                      stock=21))
    out = text(st)
    assert re.search(r"alice \(elder\)\s+0\s+1", out) and "deal 3 (manche 2)" in out  # a new manche from 0


PIQUET = [
    watch("p1", ["carol", "dave"], game="piquet"),
    spectate("p1", 1, kind="dealer_draw", cards=["Jc", "7s"], dealer=1),
    spectate("p1", 2, kind="deal_start", deal=1, manche=1, dealer=1, elder=0, turn_up=None, trump=None, stock=8),
    spectate("p1", 3, kind="carte_blanche", seat=1, cards=["7c", "8c", "9c", "Tc", "Ac", "7d", "8d", "9d", "Td",
                                                           "Ad", "7h", "8h"]),
    spectate("p1", 4, kind="score", seat=1, points=10, reason="carte_blanche", scores=[0, 10], detail=None),
    spectate("p1", 5, kind="talon_exposed", seat=1, cards=["Ks"]),
    spectate("p1", 6, kind="declaration", category="point", elder="point of 4, 41", younger="point of 6, 56",
             result="not_good", winner=1),
    spectate("p1", 7, kind="score", seat=1, points=6, reason="point", scores=[0, 16], detail="point of 6, 56"),
    spectate("p1", 8, kind="declaration", category="sequence", elder="tierce to the queen", younger=None,
             result="good", winner=0),
    spectate("p1", 9, kind="score", seat=0, points=3, reason="sequence", scores=[3, 16],
             detail="tierce to the queen"),
    spectate("p1", 10, kind="declaration", category="set", elder=None, younger=None, result="none", winner=None),
    spectate("p1", 11, kind="play", seat=0, card="Ah", trick=1),
    spectate("p1", 12, kind="score", seat=0, points=1, reason="lead", scores=[4, 16], detail=None),
]


def test_piquet_declarations_scores_and_the_final_reckoning():
    clock = Clock()
    st = WatchState(clock=clock)
    for msg in PIQUET[:3]:
        st.apply(msg)
    assert "?" in row(text(st), "carol")  # Piquet opens with hidden discards
    for msg in PIQUET[3:]:
        st.apply(msg)
    out = text(st)
    assert "Piquet" in out and "rubicon" in out and "deal 1 of 6" in out
    assert "point: carol point of 4, 41 v dave point of 6, 56 → not good: dave scores" in out
    assert "sequence: carol tierce to the queen v dave not shown → good for carol" in out
    assert "set: none declared" in out
    assert "dave showed carte blanche" in out and "talon turned up by dave: K♠" in out
    assert "carol scores 1 point for a lead (4–16)" in out
    assert re.search(r"carol \(elder\)\s+4\s+0\s+", out) and re.search(r"dave \(dealer\)\s+16", out)
    assert "▶" in row(out, "dave")  # to follow carol's lead
    assert "▯" * 11 in row(out, "carol")  # 12 cards, one played
    st.apply(spectate("p1", 13, kind="match_score", totals=[74, 142], winner=1, margin=316, rubicon=True))
    st.apply({"type": "watch_end", "match_id": "p1", "winner": 1, "reason": "rubicon", "scores": [74, 142]})
    out = text(st)
    assert "final reckoning: 74–142, dave wins by 316 (rubicon)" in out
    assert "OVER: dave wins (rubicon), 74–142" in out


def test_following_every_match_switches_to_the_next_in_play():
    st = WatchState(clock=Clock())
    st.apply({"type": "matches", "matches": [
        {"match_id": "gone", "game": "ecarte", "bots": ["x", "y"], "scores": [0, 0], "deal": 1, "pair": None}]})
    assert st.current is None  # listed, but over before we subscribed: no watch, never shown
    assert "waiting for a match to start" in text(st)
    st.apply(watch("a", ["alice", "bob"], pair="alice|bob|0"))
    st.apply(watch("b", ["carol", "dave"]))
    st.apply(spectate("b", 1, kind="deal_start", deal=1, manche=1, dealer=0, elder=1, turn_up="7c", trump="c",
                      stock=21))
    out = text(st)
    assert st.current == "a" and "a · Écarté · alice v bob · duplicate pair" in out
    assert "also in play: b carol 0–0 dave" in out
    assert "hidden cards: shown once this match and its duplicate twin are both over" in out
    st.apply({"type": "watch_end", "match_id": "a", "winner": 1, "reason": "forfeit_timeout", "scores": [1, 0]})
    assert st.current == "b" and st.ended == ["a"]
    assert "OVER: bob wins (forfeit_timeout)" in text(st, "a")
    assert "carol" in text(st) and "also in play" not in text(st)
    # the twin's reveal of the first match comes late: it still lands on that match
    st.apply({"type": "reveal", "match_id": "a", "deal": 0, "events": [
        {"kind": "hand", "seat": 0, "cards": ["7s"]}], "seen_by": [[0]]})
    assert "deal 0 revealed: alice held 7♠" in text(st, "a")
    st.apply({"type": "watch_end", "match_id": "b", "winner": 0, "reason": "target", "scores": [5, 0]})
    st.apply(watch("c", ["erin", "frank"]))
    assert st.current == "c"
    st.apply({"type": "error", "code": "too_slow", "message": "read faster", "id": None, "fatal": True})
    assert "server error too_slow" in text(st)


def test_betting_window_is_announced_until_the_match_starts():
    clock = Clock()
    st = WatchState(clock=clock)
    st.apply({"type": "betting", "match_id": "m9", "bots": ["alice", "bob"], "closes_ms": 5000})
    assert "betting open on m9: alice v bob (closes in 5 s)" in text(st)
    clock.now += 6
    assert "betting open" not in text(st)
    clock.now -= 6
    st.apply(watch("m9", ["alice", "bob"]))
    assert "betting open" not in text(st)


def test_a_followed_match_stays_on_screen():
    st = WatchState(follow="b", clock=Clock())
    st.apply(watch("a", ["alice", "bob"]))
    assert "waiting for match b" in text(st)
    st.apply(watch("b", ["carol", "dave"]))
    st.apply({"type": "watch_end", "match_id": "b", "winner": None, "reason": "aborted", "scores": [0, 0]})
    st.apply(watch("c", ["erin", "frank"]))
    assert st.current == "b" and "OVER: no winner (aborted)" in text(st)


# --------------------------------------------------------------------------- against a contest


async def spectator_feed(port: int, until_ended: int = 1, timeout: float = 25) -> list[dict]:
    """Every message a raw spectator subscribed to "*" receives until ``until_ended``
    ``watch_end`` of matches it saw start."""
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    await stream.send_all(b'{"type":"hello","name":"test-fan","role":"spectator"}\n'
                          b'{"type":"subscribe","match_id":"*"}\n')
    feed: list[dict] = []
    buf = b""
    started: set[str] = set()
    ended = 0
    with trio.fail_after(timeout):
        while ended < until_ended:
            data = await stream.receive_some(65536)
            assert data, "the server closed the spectator connection"
            buf += data
            *lines, buf = buf.split(b"\n")
            for line in lines:
                msg = msgspec.json.decode(line)
                feed.append(msg)
                if msg["type"] == "watch":
                    started.add(msg["match"]["match_id"])
                elif msg["type"] == "watch_end" and msg["match_id"] in started:
                    ended += 1
    await stream.aclose()
    return feed


def public_cards(msg: dict) -> set[str]:
    """Cards a feed message makes public (a reveal makes its deal's hidden cards public)."""
    events = msg.get("events") or ([msg["event"]] if "event" in msg else [])
    out: set[str] = set()
    for ev in events:
        for key in ("card", "turn_up"):
            if isinstance(ev.get(key), str):
                out.add(ev[key])
        for key in ("cards", "discarded", "drawn"):
            out.update(ev.get(key) or [])
    return out


async def test_watch_once_against_a_running_contest(tmp_path):
    store = Store(tmp_path / "arena.db")
    store.submit_bot("greedy", str(ROOT / "sample_bots" / "greedy.toml"))
    store.submit_bot("random", str(ROOT / "sample_bots" / "random.toml"))
    cfg = ContestConfig(db=str(tmp_path / "arena.db"), logs=str(tmp_path / "logs"), http_port=0,
                        server=ServerConfig(port=0), seed=11, duplicate=False, trust_bots=TRUST_BOTS)
    contest = Contest(cfg, store)
    code = ("import sys; from arena.tools.watch import main; "
            "sys.exit(main('127.0.0.1', int(sys.argv[1]), None, once=True, name='ci-watcher'))")
    async with trio.open_nursery() as nursery:
        port, _http = await nursery.start(contest.run)
        results: dict[str, Any] = {}

        async def run_watcher() -> None:
            results["proc"] = await trio.run_process([sys.executable, "-c", code, str(port)], cwd=ROOT,
                                                     capture_stdout=True, capture_stderr=True, check=False)

        async def run_raw() -> None:
            results["feed"] = await spectator_feed(port, until_ended=2)

        try:
            with trio.fail_after(30):
                async with trio.open_nursery() as inner:
                    inner.start_soon(run_watcher)
                    inner.start_soon(run_raw)
        finally:
            contest.stop()
    proc = results["proc"]
    out = proc.stdout.decode()
    assert proc.returncode == 0, proc.stderr.decode()
    assert "greedy" in out and "random" in out
    assert re.search(r"OVER: (greedy|random) wins \((target|forfeit_\w+)\)", out), out
    assert "last events" in out and "match over:" in out
    assert "dealt " in out  # no duplicate pairs here: the last deal's hands were revealed before the end

    # the same kind of feed, replayed message by message: never a card before it was public
    st = WatchState(clock=Clock())
    public: dict[str, set[str]] = {}
    checked = 0
    for msg in results["feed"]:
        st.apply(msg)
        mid = msg.get("match_id") or (msg.get("match") or {}).get("match_id")
        if mid:
            public.setdefault(mid, set()).update(public_cards(msg))
        if st.current in public:
            shown = cards_shown(text(st))
            assert shown <= public[st.current], (msg, shown - public[st.current])
            checked += 1
    assert checked > 20 and st.ended


# --------------------------------------------------------------------------- the Grafana dashboard


def exported_names() -> set[str]:
    """Every series name the arena's registry can expose (counters as ``_total``, histograms as
    ``_bucket``/``_sum``/``_count``)."""
    names: set[str] = set()
    for fam in METRICS.registry.collect():
        names.add(fam.name)
        if fam.type == "counter":
            names |= {fam.name + "_total", fam.name + "_created"}
        elif fam.type == "histogram":
            names |= {fam.name + s for s in ("_bucket", "_sum", "_count", "_created")}
    return names


def test_grafana_dashboard_parses_and_queries_only_arena_metrics():
    dash = json.loads((ROOT / "docs" / "grafana-dashboard.json").read_text())
    assert dash["schemaVersion"] >= 36 and dash["title"]
    variables = dash["templating"]["list"]
    assert any(v["type"] == "datasource" and v["query"] == "prometheus" for v in variables)
    exprs = [t["expr"] for p in dash["panels"] for t in p.get("targets", [])]
    assert len(exprs) >= 10
    queried = {name for e in exprs for name in re.findall(r"\barena_[a-z_]+", e)}
    unknown = queried - exported_names()
    assert not unknown, f"the dashboard queries metrics the arena does not export: {unknown}"
    families = {f.name for f in METRICS.registry.collect()}
    covered = {n for n in families if any(q == n or q.startswith(n + "_") for q in queried)}
    assert covered == families, f"metrics without a panel: {families - covered}"
    for p in dash["panels"]:
        if p.get("targets"):
            assert p["datasource"]["uid"] == "${datasource}"
    assert any("histogram_quantile(0.99" in e and "by (le)" in e for e in exprs)
    assert not any("decision_latency" in e and "bot" in e for e in exprs)  # one series for all bots


async def test_a_watcher_that_falls_behind_skips_to_the_live_state_in_one_line():
    """The server drops a slow spectator (``too_slow``), or closes without a goodbye: the
    watcher says so in one line, connects again and goes on; no traceback, exit 0 at the
    server's goodbye. A scripted server on loopback plays the three connections."""
    from arena.tools.watch import _watch

    sessions: list[int] = []

    async def serve(stream: trio.SocketStream) -> None:
        sessions.append(len(sessions))
        n = sessions[-1]
        buf = b""
        async with stream:
            async def line() -> dict:
                nonlocal buf
                while b"\n" not in buf:
                    buf += await stream.receive_some(4096)
                raw, buf = buf.split(b"\n", 1)
                return json.loads(raw)

            async def send(obj: dict) -> None:
                await stream.send_all(json.dumps(obj).encode() + b"\n")

            assert (await line())["role"] == "spectator"
            await send({"type": "welcome", "name": "w", "server": "test"})
            assert (await line())["type"] == "list"
            await send({"type": "matches", "matches": []})
            assert (await line())["type"] == "subscribe"
            if n == 0:
                await send({"type": "error", "code": "too_slow", "message": "the feed overflowed: read faster",
                            "id": None, "fatal": True})
            elif n == 1:
                pass  # closed without a word
            else:
                await send({"type": "goodbye", "reason": "server shutting down"})

    out = io.StringIO()
    console = Console(file=out, width=100)
    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(partial(trio.serve_tcp, serve, 0, host="127.0.0.1"))
        port = listeners[0].socket.getsockname()[1]
        status = await _watch("127.0.0.1", port, None, False, "w", console)
        nursery.cancel_scope.cancel()
    text = out.getvalue()
    assert status == 0 and sessions == [0, 1, 2], text
    assert text.count("fell behind the live feed") == 2 and "Traceback" not in text
    assert "read faster" in text and "without a goodbye" in text and "goodbye (server shutting down)" in text
