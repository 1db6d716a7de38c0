"""The search sample bot (sample_bots/search_bot.py): its exact solver on hand-built positions,
its bookkeeping of what the opponent's plays prove, and the bot as a real process against a fake
TCP server, answering every kind of decision legally within the time limit.

The bot is imported from its file (it is a stand-alone script, not part of the arena package).
"""

from __future__ import annotations

import contextlib
import importlib.util
import itertools
import json
import os
import random
import socket
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest

BOTS_DIR = Path(__file__).resolve().parent.parent / "sample_bots"
TIMEOUT = 60.0  # seconds for any single wait: it bounds a hang, a loaded machine is slow
MATCH_ID = "t1-m0001"
TOKEN = "s3cret-token"
RANKS = "789TAJQK"  # Écarté order, low to high


def _load():
    spec = importlib.util.spec_from_file_location("search_bot_under_test", BOTS_DIR / "search_bot.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


sb = _load()


def mask(*cards: str) -> int:
    return sb.to_mask(cards)


def names(m: int) -> set[str]:
    return {sb.card_name(i) for i in sb.bits(m)}


# --------------------------------------------------------------------------- a naive reference


def ref_follows(hand: list[str], lead: str, trump: str) -> list[str]:
    """§E5 spelled out: follow and beat if able, else follow; void: trump; else anything."""
    same = [c for c in hand if c[1] == lead[1]]
    if same:
        return [c for c in same if RANKS.index(c[0]) > RANKS.index(lead[0])] or same
    return [c for c in hand if c[1] == trump] or list(hand)


def ref_follower_wins(lead: str, card: str, trump: str) -> bool:
    if card[1] == lead[1]:
        return RANKS.index(card[0]) > RANKS.index(lead[0])
    return card[1] == trump


def ref_tricks(leader: list[str], follower: list[str], trump: str) -> int:
    """Plain minimax, no memo, no cut-off: the most tricks the player on lead can take."""
    if not leader:
        return 0
    n = len(leader)
    best = 0
    for a in leader:
        worst = n
        for b in ref_follows(follower, a, trump):
            rest_l = [c for c in leader if c != a]
            rest_f = [c for c in follower if c != b]
            if ref_follower_wins(a, b, trump):
                v = n - 1 - ref_tricks(rest_f, rest_l, trump)
            else:
                v = 1 + ref_tricks(rest_l, rest_f, trump)
            worst = min(worst, v)
        best = max(best, worst)
    return best


def solve(leader: list[str], follower: list[str], trump: str) -> int:
    return sb.Solver().lead_tricks(sb.to_mask(leader), sb.to_mask(follower), "cdhs".index(trump))


# --------------------------------------------------------------------------- the solver


def test_card_order_and_encoding():
    assert sb.card_name(sb.card_index("Kh")) == "Kh"
    # K Q J A T 9 8 7: the ace ranks between the jack and the ten
    assert names(sb.HIGHER[sb.card_index("Ts")]) == {"As", "Js", "Qs", "Ks"}
    assert names(sb.HIGHER[sb.card_index("As")]) == {"Js", "Qs", "Ks"}
    assert sb.HIGHER[sb.card_index("Kd")] == 0


def test_top_trumps_take_every_trick():
    # the five best trumps (hearts) against anything: the vole, whoever leads
    top = ["Kh", "Qh", "Jh", "Ah", "Th"]
    rest = [c for c in (r + s for s in "cdhs" for r in RANKS) if c not in top]
    rng = random.Random(3)
    for _ in range(20):
        other = rng.sample(rest, 5)
        assert solve(top, other, "h") == 5
        assert solve(other, top, "h") == 0


def test_obligations_follow_beat_trump():
    trump = sb.SUITS.index("h")
    hand = mask("7s", "Qs", "Ks", "8h", "Jc")
    # must beat the card led when able
    assert names(sb.follow_choices(sb.card_index("Js"), hand, trump)) == {"Qs", "Ks"}
    # follow suit with any card when none beats
    assert names(sb.follow_choices(sb.card_index("Kc"), hand, trump)) == {"Jc"}
    # void in the suit led: must trump
    assert names(sb.follow_choices(sb.card_index("Ad"), hand, trump)) == {"8h"}
    # trump led: overtrump if able, else any trump
    assert names(sb.follow_choices(sb.card_index("7h"), hand, trump)) == {"8h"}
    assert names(sb.follow_choices(sb.card_index("9h"), hand, trump)) == {"8h"}
    # void and no trumps: anything
    no_trumps = mask("7s", "Qs", "Jc")
    assert names(sb.follow_choices(sb.card_index("Ad"), no_trumps, trump)) == {"7s", "Qs", "Jc"}
    # who wins
    assert sb.follower_wins(sb.card_index("As"), sb.card_index("Js"), trump)  # J above A
    assert not sb.follower_wins(sb.card_index("As"), sb.card_index("Ts"), trump)
    assert sb.follower_wins(sb.card_index("Ks"), sb.card_index("7h"), trump)  # a trump
    assert not sb.follower_wins(sb.card_index("Ks"), sb.card_index("Kc"), trump)  # off-suit


def test_known_endgames():
    # trumps spades. Kh led: the Qh cannot beat it and must follow, then the 8s must overtake the
    # 7s; 7s led: the 8s overtakes, then the Kh takes the Qh. One trick each either way.
    assert solve(["Kh", "7s"], ["Qh", "8s"], "s") == 1
    # 7s led: the 9s must overtake and the follower's Tc later beats the 8c; Kd led: the Jd must
    # follow, but the 7s then loses to the 9s. One trick of three for the leader whatever he does.
    assert solve(["7s", "Kd", "8c"], ["9s", "Jd", "Tc"], "s") == 1
    # hearts only, clubs trumps: Kh led takes a heart and the 7h then loses to the heart left;
    # 7h led must be overtaken, and the Kh wins the return. One trick each.
    assert solve(["Kh", "7h"], ["Qh", "8h"], "c") == 1
    # the follower, void in the suit led, must ruff with his lone trump; the leader's Kd then
    # takes the last trick: two tricks of three
    assert solve(["Kc", "Qc", "Kd"], ["7h", "Ac", "Td"], "h") == 2
    # the leader has nothing: the follower ruffs everything
    assert solve(["7c", "8c", "9c"], ["7d", "8d", "9d"], "d") == 0
    # the last trick: the card led wins unless beaten in suit or trumped
    assert solve(["Ac"], ["Tc"], "h") == 1
    assert solve(["Ac"], ["7h"], "h") == 0
    assert solve(["Ac"], ["Kd"], "h") == 1


def test_solver_matches_naive_minimax():
    pack = [r + s for s in "cdhs" for r in RANKS]
    rng = random.Random(7)
    for n in (1, 2, 3, 4, 5):
        for _ in range(40 if n < 5 else 25):
            cards = rng.sample(pack, 2 * n)
            trump = rng.choice("cdhs")
            a, b = cards[:n], cards[n:]
            assert solve(a, b, trump) == ref_tricks(a, b, trump), (a, b, trump)


def test_root_values_match_naive_minimax():
    pack = [r + s for s in "cdhs" for r in RANKS]
    rng = random.Random(11)
    solver = sb.Solver()
    for _ in range(15):
        cards = rng.sample(pack, 10)
        trump = rng.choice("cdhs")
        t = "cdhs".index(trump)
        me, opp = cards[:5], cards[5:]
        values = solver.lead_values(sb.to_mask(me), sb.to_mask(opp), t)
        for a in me:
            rest = [c for c in me if c != a]
            expected = min(
                (5 - 1 - ref_tricks([c for c in opp if c != b], rest, trump))
                if ref_follower_wins(a, b, trump)
                else 1 + ref_tricks(rest, [c for c in opp if c != b], trump)
                for b in ref_follows(opp, a, trump)
            )
            assert values[sb.card_index(a)] == expected
        # following the opponent's lead
        lead, opp_rest = opp[0], opp[1:]
        legal = [sb.card_index(c) for c in ref_follows(me, lead, trump)]
        values = solver.follow_values(sb.card_index(lead), sb.to_mask(me), sb.to_mask(opp_rest), t, legal)
        for b in ref_follows(me, lead, trump):
            rest = [c for c in me if c != b]
            if ref_follower_wins(lead, b, trump):
                expected = 1 + ref_tricks(rest, opp_rest, trump)
            else:
                expected = 4 - ref_tricks(opp_rest, rest, trump)
            assert values[sb.card_index(b)] == expected


def test_solver_solves_each_position_once():
    """What makes the solver fast enough to run hundreds of times per decision, checked without
    a clock (CI is a busy machine): every position is memoised, so an endgame of five tricks
    costs a few hundred positions (naive minimax visits up to 5!^2 lines) and solving the same
    deals again costs no new position and gives the same answers."""
    pack = list(range(32))
    rng = random.Random(5)
    solver = sb.Solver()
    deals = []
    for _ in range(200):
        cards = rng.sample(pack, 10)
        deals.append((sum(1 << c for c in cards[:5]), sum(1 << c for c in cards[5:]), rng.randrange(4)))
    first = [solver.lead_tricks(*d) for d in deals]
    positions = sum(len(m) for m in solver.memos)
    assert 200 <= positions <= 200 * 350, positions
    assert [solver.lead_tricks(*d) for d in deals] == first
    assert sum(len(m) for m in solver.memos) == positions


class TickingClock:
    """Stands in for the search bot's ``time`` module: ``monotonic()`` advances ``step`` seconds
    at every call, so a search's length is a count of clock reads, the same on any machine."""

    def __init__(self, step: float = 0.001) -> None:
        self.now = 1000.0
        self.step = step

    def monotonic(self) -> float:
        self.now += self.step
        return self.now


@pytest.fixture
def ticking_clock(monkeypatch):
    clock = TickingClock()
    monkeypatch.setattr(sb, "time", clock)
    return clock


# --------------------------------------------------------------------------- scoring


def test_payoff_tables_follow_e6():
    pay = sb.Payoff(5, 5)
    plain = pay.table(None)
    assert plain == sorted(plain)  # more tricks never hurt
    assert plain[3] == plain[4] == pay.value(1, 0)
    assert plain[5] == pay.value(2, 0)  # the vole
    assert plain[0] == pay.value(0, 2) and plain[1] == plain[2] == pay.value(0, 1)
    # I played without proposing (or refused): losing the deal costs 2, never more
    mine = pay.table("me")
    assert mine[1] == mine[2] == mine[0] == pay.value(0, 2)
    assert mine[3:] == plain[3:]
    # the opponent is exposed: winning the deal is worth 2 (not added to the vole)
    theirs = pay.table("opp")
    assert theirs[3] == theirs[4] == theirs[5] == pay.value(2, 0)
    # king points count, and a point beyond the target is worth nothing more
    assert pay.table(None, 1, 0)[3] == pay.value(2, 0)
    near = sb.Payoff(1, 5)
    assert near.value(1, 0) == pytest.approx(near.value(2, 0) - 0.002)
    assert sb.win_probability(0, 3) == 1.0 and sb.win_probability(3, 0) == 0.0
    assert sb.win_probability(2, 4) > 0.5 > sb.win_probability(4, 2)


# --------------------------------------------------------------------------- tracking


def deal_start_event(dealer=1, trump="h", turn_up="9h"):
    return {
        "kind": "deal_start",
        "deal": 1,
        "manche": 1,
        "dealer": dealer,
        "elder": 1 - dealer,
        "turn_up": turn_up,
        "trump": trump,
        "stock": 21,
    }


def test_tracker_infers_voids_and_missing_cards():
    tr = sb.DealTracker()
    me, opp = 0, 1
    for ev in [
        deal_start_event(dealer=1),
        {"kind": "hand", "seat": 0, "cards": ["Qs", "7s", "Kc", "8h", "Td"]},
        {"kind": "call", "seat": 0, "call": "play"},
        {"kind": "play", "seat": 0, "card": "Qs", "trick": 1},
        {"kind": "play", "seat": 1, "card": "8s", "trick": 1},  # followed low: no Ks
        {"kind": "trick", "trick": 1, "leader": 0, "cards": ["Qs", "8s"], "winner": 0},
        {"kind": "play", "seat": 0, "card": "Kc", "trick": 2},
        {"kind": "play", "seat": 1, "card": "7d", "trick": 2},  # no clubs, no trumps (hearts)
        {"kind": "trick", "trick": 2, "leader": 0, "cards": ["Kc", "7d"], "winner": 0},
    ]:
        tr.note(ev, me)
    assert names(tr.no_cards[opp]) >= {"Ks"} | {r + "c" for r in RANKS} | {r + "h" for r in RANKS}
    assert not names(tr.no_cards[opp]) & {"Js", "As", "7s", "Kd", "Qd"}
    assert tr.no_cards[me] == 0  # the leader proves nothing
    assert tr.penalty_seat() == 0  # elder played without proposing
    assert names(tr.played) == {"Qs", "8s", "Kc", "7d"}


def test_tracker_penalty_and_reset():
    tr = sb.DealTracker()
    tr.note(deal_start_event(dealer=1), 0)
    tr.note({"kind": "call", "seat": 0, "call": "propose"}, 0)
    tr.note({"kind": "call", "seat": 1, "call": "refuse"}, 0)
    assert tr.penalty_seat() == 1
    tr.note(deal_start_event(dealer=0), 1)
    assert tr.penalty_seat() is None and tr.played == 0
    tr.note({"kind": "call", "seat": 1, "call": "propose"}, 1)
    tr.note({"kind": "call", "seat": 0, "call": "accept"}, 1)
    exchange = {
        "kind": "exchange",
        "seat": 1,
        "count": 2,
        "stock": 19,
        "discarded": ["7c", "8c"],
        "drawn": ["Ks", "Kd"],
    }
    tr.note(exchange, 1)
    tr.note({"kind": "call", "seat": 1, "call": "play"}, 1)
    assert tr.penalty_seat() is None  # a later "play" carries no penalty
    assert names(tr.my_discards) == {"7c", "8c"}


def view(hand, *, seat=0, dealer=1, trick=(), stock=21, proposals=0, tricks=(0, 0), trump="h", turn_up="9h"):
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
        "turn_up": turn_up,
        "trump": trump,
        "stock": stock,
        "hand": list(hand),
        "tricks": list(tricks),
        "trick": [{"seat": 1 - seat, "card": c} for c in trick],
        "proposals": proposals,
    }


def test_sampling_respects_what_is_known():
    tr = sb.DealTracker()
    me = 0
    for ev in [
        deal_start_event(dealer=1),
        {"kind": "hand", "seat": 0, "cards": ["7s", "Js", "Kc", "8h", "Td"]},
        {"kind": "call", "seat": 0, "call": "play"},
        {"kind": "play", "seat": 0, "card": "Kc", "trick": 1},
        {"kind": "king", "seat": 1, "card": "Kh", "announced": True},
        {"kind": "play", "seat": 1, "card": "7d", "trick": 1},  # void in clubs, and holds Kh
        {"kind": "trick", "trick": 1, "leader": 0, "cards": ["Kc", "7d"], "winner": 0},
    ]:
        tr.note(ev, me)
    ctx = sb.Context(view(["7s", "Js", "8h", "Td"], tricks=(1, 0), stock=21), tr, me)
    assert ctx.opp_n == 4
    rng = random.Random(1)
    pools = ctx.pools()
    for _ in range(200):
        opp = names(ctx.sample_opp(rng, pools))
        assert len(opp) == 4 and "Kh" in opp
        assert not opp & {"7s", "Js", "8h", "Td", "9h", "Kc", "7d"}  # mine, turn-up, played
        assert not any(c[1] == "c" for c in opp)
    assert ctx.penalty == "me"


# --------------------------------------------------------------------------- decisions in-process


def decide(bot, decision, legal, state, events=(), time_ms=2000):
    for ev in events:
        bot.note_event(MATCH_ID, ev)
    return bot.decide(MATCH_ID, decision, legal, state, time_ms)


def fresh_bot(seat=0):
    bot = sb.SearchBot("42")
    bot.start_match(MATCH_ID, seat)
    return bot


def test_play_takes_the_last_tricks_it_can():
    bot = fresh_bot()
    events = [
        deal_start_event(dealer=1),
        {"kind": "hand", "seat": 0, "cards": ["Kh", "Qh", "7c", "8d", "9s"]},
        {"kind": "call", "seat": 0, "call": "play"},
    ]
    # leading with the two top trumps and three tricks needed: draw trumps first
    action = decide(bot, "play", ["7c", "8d", "Kh", "Qh", "9s"], view(["7c", "8d", "Kh", "Qh", "9s"]), events)
    assert action in ("Kh", "Qh")


def test_play_follows_with_the_cheapest_winner_at_the_end():
    bot = fresh_bot(seat=1)
    events = [deal_start_event(dealer=1), {"kind": "hand", "seat": 1, "cards": ["Ks", "Qs", "7h", "8c", "9c"]}]
    for ev in events:
        bot.note_event(MATCH_ID, ev)
    # two cards left each; Js led; Qs and Ks both win; the Ks is the master of the last trick
    # only if the opponent keeps nothing higher: the solver must see that both win this trick
    st = view(["Qs", "Ks"], seat=1, dealer=1, trick=["Js"], tricks=(2, 1), stock=17, proposals=1)
    assert bot.decide(MATCH_ID, "play", ["Qs", "Ks"], st, 2000) in ("Qs", "Ks")


def test_discard_keeps_trumps_and_kings():
    bot = fresh_bot()
    hand = ["Kh", "Qh", "Ks", "7c", "8d"]
    events = [deal_start_event(dealer=1), {"kind": "hand", "seat": 0, "cards": hand}]
    legal = [list(c) for k in range(1, 6) for c in itertools.combinations(hand, k)]
    action = decide(bot, "discard", legal, view(hand, proposals=1), events)
    assert not {"Kh", "Qh"} & set(action)
    assert set(action) <= {"7c", "8d", "Ks"} and action


def test_talk_decisions_on_clear_hands():
    bot = fresh_bot()
    events = [deal_start_event(dealer=1), {"kind": "hand", "seat": 0, "cards": ["Kh", "Qh", "Jh", "Ks", "Kc"]}]
    assert decide(bot, "propose", ["propose", "play"], view(["Kh", "Qh", "Jh", "Ks", "Kc"]), events) == "play"
    bot = fresh_bot()
    events = [deal_start_event(dealer=1), {"kind": "hand", "seat": 0, "cards": ["7c", "8c", "9d", "7s", "8s"]}]
    assert decide(bot, "propose", ["propose", "play"], view(["7c", "8c", "9d", "7s", "8s"]), events) == "propose"
    bot = fresh_bot(seat=1)
    hand = ["7c", "8c", "9d", "7s", "Td"]
    events = [
        deal_start_event(dealer=1),
        {"kind": "hand", "seat": 1, "cards": hand},
        {"kind": "call", "seat": 0, "call": "propose"},
    ]
    assert decide(bot, "respond", ["accept", "refuse"], view(hand, seat=1), events) == "accept"
    assert decide(bot, "king", ["announce", "decline"], view(hand, seat=1)) == "announce"


def test_falls_back_to_the_first_legal_action():
    bot = fresh_bot()
    assert bot.decide(MATCH_ID, "play", ["7c", "8d"], {"hand": "nonsense"}, 2000) == "7c"
    assert bot.decide(MATCH_ID, "mystery", ["x", "y"], {}, 2000) == "x"
    assert bot.decide(MATCH_ID, "discard", [["7c"]], {}, 2000) == ["7c"]


def test_deterministic_for_a_seed(ticking_clock):
    """Same seed, same decisions: on the ticking clock each run samples as many hands (on a real
    clock the count depends on the machine's load, hence the search's result)."""
    hand = ["Jh", "7h", "Ks", "8c", "9d"]
    runs = []
    for _ in range(2):
        bot = sb.SearchBot("7")
        bot.start_match(MATCH_ID, 0)
        events = [deal_start_event(dealer=1), {"kind": "hand", "seat": 0, "cards": hand}]
        runs.append(
            [
                decide(bot, "propose", ["propose", "play"], view(hand), events),
                decide(bot, "play", list(hand), view(hand, stock=21)),
            ]
        )
    assert runs[0] == runs[1]


@pytest.mark.parametrize("time_ms, budget_s", [(150, 0.02), (1000, 0.4), (2000, 0.8)])
def test_the_search_stops_at_its_budget(ticking_clock, time_ms, budget_s):
    """Each decision searches for about 40% of ``time_ms`` (at least 20 ms, leaving 100 ms spare),
    then answers: on the ticking clock (1 ms a read) it stops within two reads of its budget,
    or sooner once it has its full count of samples."""
    hand = ["Jh", "7h", "Ks", "8c", "9d"]
    bot = fresh_bot()
    events = [deal_start_event(dealer=1), {"kind": "hand", "seat": 0, "cards": hand}]
    for decision, legal, st in (("propose", ["propose", "play"], view(hand)),
                                ("play", list(hand), view(hand, stock=21))):
        action = decide(bot, decision, legal, st, events, time_ms=time_ms)
        events = ()
        assert action in legal
        count, _, longest = bot.timing[decision]
        samples = {"propose": sb.SearchBot.TALK_SAMPLES, "play": sb.SearchBot.PLAY_SAMPLES}[decision]
        assert count == 1 and longest <= budget_s + 0.0025, (decision, longest)
        searched = min(budget_s, (samples - sb.SearchBot.MIN_SAMPLES) * 0.001)
        assert longest >= searched - 0.0025, (decision, longest)  # it did search


# --------------------------------------------------------------------------- as a real process


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

    def send(self, *msgs: dict) -> None:
        assert self.conn is not None
        self.conn.sendall(b"".join(json.dumps(m).encode() + b"\n" for m in msgs))

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


def bot_command() -> list[str]:
    manifest = tomllib.loads((BOTS_DIR / "search.toml").read_text(encoding="utf-8"))
    assert set(manifest) == {"name", "language", "command", "description"}
    assert manifest["name"] == "search"
    return [sys.executable if part == "{python}" else part for part in manifest["command"]]


@contextlib.contextmanager
def bot_session(tmp_path: Path):
    server = FakeServer()
    env = dict(os.environ)
    env.update(
        ARENA_HOST="127.0.0.1",
        ARENA_PORT=str(server.port),
        ARENA_NAME="search",
        ARENA_TOKEN=TOKEN,
        ARENA_BOT_SEED="123",
    )
    env.pop("ARENA_TRANSPORT", None)
    stderr = open(tmp_path / "search.stderr", "w+b")  # noqa: SIM115 - closed in finally
    proc = None
    try:
        proc = subprocess.Popen(
            bot_command(), cwd=BOTS_DIR, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=stderr
        )
        server.accept()
        hello = server.recv()
        assert hello == {"type": "hello", "name": "search", "token": TOKEN, "protocol": 1, "role": "bot",
                         "legal": "compact"}
        server.send({"type": "welcome", "name": "search", "server": "fake", "protocol": 1})
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
            print(f"--- search stderr ---\n{output}")


_ids = itertools.count(1)
_seq = itertools.count(1)


def request(decision: str, legal: list, st: dict, time_ms: int = 2000) -> dict:
    return {
        "type": "request",
        "id": next(_ids),
        "match_id": MATCH_ID,
        "decision": decision,
        "legal": legal,
        "state": st,
        "time_ms": time_ms,
        "bank_ms": 0,
    }


def ev(**event) -> dict:
    return {"type": "event", "match_id": MATCH_ID, "seq": next(_seq), "event": event}


def subsets(hand, smallest: int, largest: int) -> list[list[str]]:
    return [list(c) for k in range(smallest, largest + 1) for c in itertools.combinations(hand, k)]


def ask(server: FakeServer, req: dict, *events: dict):
    """Send the events and the request in one write; check the answer is legal. (That it comes in
    time is checked without a clock by test_the_search_stops_at_its_budget: over a real process on
    a loaded machine it would be a race.)"""
    server.send(*events, req)
    answer = server.recv()
    assert answer["type"] == "action" and answer["id"] == req["id"]
    action = answer["action"]
    if req["decision"] == "discard":
        assert isinstance(action, list) and len(set(action)) == len(action)
        assert sorted(action) in [sorted(opt) for opt in req["legal"]]
    else:
        assert action in req["legal"]
    return action


def match_start(seat: int) -> dict:
    return {
        "type": "match_start",
        "match_id": MATCH_ID,
        "game": "ecarte",
        "seat": seat,
        "opponent": "fake",
        "rules": {"deal_pattern": "3-2", "target": 5, "manches": 1},
        "time": {"move_ms": 2000, "bank_ms": 0, "grace_ms": 50},
        "on_timeout": "forfeit",
        "max_strikes": 3,
        "max_illegal": 0,
    }


def test_protocol_session_every_decision(tmp_path):
    """One deal as the dealer (respond, discard, king, play) and one as elder (propose, discard
    with a small stock, play), with consistent events, then goodbye."""
    with bot_session(tmp_path) as (server, proc):
        server.send(match_start(seat=0))
        # deal 1: seat 0 deals, seat 1 (the fake opponent) is elder and proposes
        hand = ["Jd", "Kd", "7h", "Qh", "As"]
        st = view(hand, seat=0, dealer=0, trump="d", turn_up="Qd")
        events = [
            ev(kind="deal_start", deal=1, manche=1, dealer=0, elder=1, turn_up="Qd", trump="d", stock=21),
            ev(kind="hand", seat=0, cards=hand),
            ev(kind="call", seat=1, call="propose"),
        ]
        ask(server, request("respond", ["accept", "refuse"], st), *events)
        events = [
            ev(kind="call", seat=0, call="accept"),
            ev(kind="exchange", seat=1, count=2, stock=19, discarded=None, drawn=None),
        ]
        st = view(hand, seat=0, dealer=0, trump="d", turn_up="Qd", stock=19, proposals=1)
        discard = ask(server, request("discard", subsets(hand, 0, 5), st), *events)
        # whatever it threw, continue the deal with a fixed hand holding the king of trumps
        kept = [c for c in hand if c not in discard]
        drawn = [c for c in ["7c", "Qs", "8s", "9s", "Tc"] if c not in kept][: len(discard)]
        new_hand = kept + drawn
        events = [
            ev(kind="exchange", seat=0, count=len(discard), stock=19 - len(discard), discarded=discard, drawn=drawn),
            ev(kind="call", seat=1, call="play"),
            ev(kind="play", seat=1, card="Jc", trick=1),
        ]
        st = view(new_hand, seat=0, dealer=0, trump="d", turn_up="Qd", stock=19 - len(discard), proposals=1)
        st["trick"] = [{"seat": 1, "card": "Jc"}]
        if "Kd" in new_hand:
            assert ask(server, request("king", ["announce", "decline"], st), *events) == "announce"
            events = [ev(kind="king", seat=0, card="Kd", announced=True)]
        legal = [c for c in new_hand if c[1] == "c" and RANKS.index(c[0]) > RANKS.index("J")]
        legal = legal or [c for c in new_hand if c[1] == "c"] or [c for c in new_hand if c[1] == "d"] or new_hand
        ask(server, request("play", legal, st), *events)

        # deal 2: seat 0 is elder; a small stock left after two exchanges
        hand = ["7d", "Ad", "9h", "Kh", "Ks"]
        events = [
            ev(kind="deal_start", deal=2, manche=1, dealer=1, elder=0, turn_up="Qs", trump="s", stock=21),
            ev(kind="hand", seat=0, cards=hand),
        ]
        st = view(hand, seat=0, dealer=1, trump="s", turn_up="Qs")
        ask(server, request("propose", ["propose", "play"], st), *events)
        st = view(hand, seat=0, dealer=1, trump="s", turn_up="Qs", stock=2, proposals=3)
        ask(server, request("discard", subsets(hand, 1, 2), st), ev(kind="call", seat=1, call="accept"))
        st = view(hand, seat=0, dealer=1, trump="s", turn_up="Qs", stock=0, proposals=3)
        ask(server, request("play", list(hand), st))
        # following a spade lead: must win with the king
        st = view(["Ks", "9h", "Kh", "7d"], seat=0, dealer=1, trump="s", turn_up="Qs", stock=0, proposals=3)
        st["trick"] = [{"seat": 1, "card": "Js"}]
        st["tricks"] = [0, 1]
        assert ask(server, request("play", ["Ks"], st)) == "Ks"
        # a short clock is honoured too
        st = view(hand, seat=0, dealer=1, trump="s", turn_up="Qs", stock=5, proposals=2)
        ask(server, request("propose", ["propose", "play"], st, time_ms=150))
        ask(server, request("discard", subsets(hand, 1, 5), st, time_ms=150))
        ask(server, request("play", list(hand), view(hand, trump="s", turn_up="Qs", stock=0), time_ms=150))

        # junk, unknown messages and an inconsistent request must not kill the bot
        server.conn.sendall(b"this is not json\n[1, 2]\n{}\n\n")
        server.send({"type": "some_future_message", "x": 1})
        ask(server, request("play", ["Qs", "Ks"], view(["Qs", "Ks", "7c"], trick=["Js"], trump="h")))
        server.send(
            {
                "type": "match_end",
                "match_id": MATCH_ID,
                "winner": 0,
                "you": "win",
                "reason": "target",
                "scores": [5, 3],
                "manches": [1, 0],
                "detail": "",
            }
        )
        server.send({"type": "goodbye", "reason": "tournament over"})
        assert proc.wait(timeout=TIMEOUT) == 0


def test_exits_cleanly_on_eof(tmp_path):
    with bot_session(tmp_path) as (server, proc):
        server.send(match_start(seat=1))
        hand = ["Kh", "7h", "Qs", "8c", "Ad"]
        ask(server, request("respond", ["accept", "refuse"], view(hand, seat=1)))
        assert server.conn is not None
        server.conn.close()
        server.conn = None
        assert proc.wait(timeout=TIMEOUT) == 0


def test_stdio_transport(tmp_path):
    env = dict(os.environ, ARENA_TRANSPORT="stdio", ARENA_NAME="search", ARENA_TOKEN=TOKEN, ARENA_BOT_SEED="1")
    hand = ["Kh", "7h", "Qs", "8c", "Ad"]
    req = request("propose", ["propose", "play"], view(hand))
    lines = [match_start(seat=0), req, {"type": "goodbye", "reason": "done"}]
    data = b"".join(json.dumps(m).encode() + b"\n" for m in lines)
    out = subprocess.run(bot_command(), cwd=BOTS_DIR, env=env, input=data, capture_output=True, timeout=TIMEOUT)
    assert out.returncode == 0
    sent = [json.loads(line) for line in out.stdout.decode().splitlines() if line.strip()]
    assert sent[0]["type"] == "hello" and sent[0]["name"] == "search"
    assert sent[1] == {"type": "action", "id": req["id"], "action": sent[1]["action"]}
    assert sent[1]["action"] in ("propose", "play")
