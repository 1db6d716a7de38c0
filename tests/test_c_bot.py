"""The C sample bot (sample_bots/c_bot.c) plays real tournaments of both games over TCP, and
over stdin/stdout in the sandbox; it reads lines of any length."""

from __future__ import annotations

import itertools
import json
import subprocess
from pathlib import Path

import pytest

from arena.match.referee import MatchConfig
from arena.schedule.launcher import load_manifest, sandbox_available
from arena.schedule.tournament import TournamentConfig, run_tournament
from arena.store.sqlite import Store
from protocol.messages import Rules

try:
    from c_bot import ensure_c_bot
except ImportError:  # tests/ imported as a package
    from tests.c_bot import ensure_c_bot

ROOT = Path(__file__).resolve().parent.parent
BOTS = ROOT / "sample_bots"
pytestmark = pytest.mark.skipif(ensure_c_bot() is None, reason="gcc not on PATH")


@pytest.mark.parametrize("game, rules, reasons", [
    ("ecarte", Rules(), {"target"}),
    ("piquet", Rules(), {"rubicon", "draw"}),
    ("piquet", Rules(pack=36, packets=3, scoring="cent"), {"cent"}),
])
async def test_c_bot_plays_a_tournament_over_tcp(tmp_path, game, rules, reasons):
    bots = [load_manifest(BOTS / f"{n}.toml") for n in ("c_bot", "random")]
    store = Store(tmp_path / "a.db")
    cfg = TournamentConfig(games=2, seed=5, logs_dir=str(tmp_path / "logs"),
                           match=MatchConfig(game=game, rules=rules))
    report = await run_tournament(store, bots, cfg)
    rows = store.matches(report.tournament_id)
    assert len(rows) == 2 and all(r["reason"] in reasons for r in rows), [r["detail"] for r in rows]


@pytest.mark.skipif(not sandbox_available(), reason="bwrap (Debian bubblewrap) is not installed")
async def test_c_bot_plays_over_stdin_stdout_in_the_sandbox(tmp_path):
    bots = [load_manifest(BOTS / f"{n}.toml") for n in ("c_bot", "random")]
    store = Store(tmp_path / "a.db")
    cfg = TournamentConfig(games=2, seed=6, logs_dir=str(tmp_path / "logs"), sandbox=True,
                           match=MatchConfig(game="piquet"))
    report = await run_tournament(store, bots, cfg)
    rows = store.matches(report.tournament_id)
    assert len(rows) == 2 and all(r["reason"] in ("rubicon", "draw") for r in rows), [r["detail"] for r in rows]


def test_c_bot_answers_a_request_line_of_a_megabyte():
    """Over stdio, a full-form Piquet discard request padded with an unknown field to 1 MiB:
    one answer, a set from the list; then goodbye ends the bot with status 0."""
    hand = ["7c", "9c", "Tc", "Jc", "9d", "Qd", "Kd", "8h", "Th", "Ah", "Ts", "Js"]
    legal = [list(c) for k in range(0, 6) for c in itertools.combinations(hand, k)]
    state = {"game": "piquet", "seat": 0, "dealer": 0, "elder": 1, "hand": hand, "talon": 5}
    request = {"type": "request", "id": 7, "match_id": "m", "decision": "discard", "legal": legal,
               "state": state, "time_ms": 2000, "bank_ms": 0, "padding": "x" * (1 << 20)}
    lines = [json.dumps({"type": "welcome", "name": "c", "server": "s", "protocol": 1}), json.dumps(request),
             json.dumps({"type": "goodbye", "reason": "over"})]
    proc = subprocess.run([str(BOTS / "c_bot")], input="\n".join(lines).encode() + b"\n", capture_output=True,
                          timeout=20, env={"ARENA_TRANSPORT": "stdio", "ARENA_NAME": "c", "ARENA_TOKEN": "t"})
    assert proc.returncode == 0, proc.stderr
    out = [json.loads(line) for line in proc.stdout.decode().splitlines()]
    assert out[0] == {"type": "hello", "name": "c", "token": "t", "protocol": 1, "role": "bot", "legal": "compact"}
    assert out[1]["type"] == "action" and out[1]["id"] == 7 and out[1]["action"] in legal
    assert len(out) == 2
