"""``arena sprt``: duplicate pairs between two bots, played until the GSPRT stops."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from arena.schedule.formats.sprt import SprtFormat
from arena.stats.sprt import SPRT
from tests.conftest import TRUST_ARGS

ROOT = Path(__file__).resolve().parent.parent


def test_sprt_format_plays_duplicate_pairs_and_stops_on_a_decision():
    summaries = []
    fmt = SprtFormat("a", "b", 1, SPRT(0, 50), on_pair=lambda t: summaries.append(t.summary()))
    played = []
    while not fmt.done:
        (m,) = fmt.ready(set())
        assert fmt.ready(set()) == []  # one match at a time
        played.append(m)
        fmt.record(m, "a")  # a wins everything
    assert fmt.sprt.status() == "H1"
    assert len(played) % 2 == 0 and len(summaries) == len(played) // 2
    for first, second in zip(played[::2], played[1::2]):
        assert first.seed == second.seed and first.pair == second.pair
        assert (first.bot0, first.bot1) == (second.bot1, second.bot0)
    assert len({m.seed for m in played}) == len(played) // 2


def test_sprt_accepts_h0_for_equal_bots_and_respects_max_pairs():
    fmt = SprtFormat("a", "b", 1, SPRT(0, 100))
    n = 0
    while not fmt.done:
        (m,) = fmt.ready(set())
        fmt.record(m, m.bot0)  # the seat decides: every pair splits 1-1
        n += 1
    assert fmt.sprt.status() == "H0"
    capped = SprtFormat("a", "b", 1, SPRT(0, 5), max_pairs=3)
    while not capped.done:
        (m,) = capped.ready(set())
        capped.record(m, m.bot0)
    assert capped.sprt.pairs == 3 and capped.sprt.status() == "continue"


def test_cli_sprt_greedy_beats_random(tmp_path):
    out = subprocess.run(
        [sys.executable, "-m", "arena.cli", "sprt", *TRUST_ARGS, "--bot", "sample_bots/greedy.toml",
         "--vs", "sample_bots/random.toml", "--elo0", "0", "--elo1", "100",
         "--db", str(tmp_path / "a.db"), "--logs", str(tmp_path / "logs")],
        capture_output=True, text=True, timeout=180, cwd=ROOT,
    )
    assert out.returncode == 0, out.stderr
    lines = [line for line in out.stdout.splitlines() if line.startswith("pairs ")]
    assert lines and "LLR" in lines[-1]
    assert "H1 accepted: greedy" in out.stdout
