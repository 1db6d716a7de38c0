"""Plain progress lines when stdout is not a terminal (arena/schedule/progress.py), cutechess-cli style."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from arena.schedule.progress import PlainProgress

ROOT = Path(__file__).resolve().parent.parent


def test_a_score_line_every_n_matches_and_the_running_elo() -> None:
    lines: list[str] = []
    now = [0.0]
    p = PlainProgress(every=4, every_s=1e9, elo_every=8, out=lines.append, clock=lambda: now[0])
    p.start(8)
    for i in range(8):  # b wins the first three, then a wins, then a draw...
        now[0] += 1.5
        p.result("b", "a", [0, 0, 0, 1, None, 1, 1, 0][i])
        if i == 2:
            assert lines == []  # nothing before the 4th match
    score = [line for line in lines if "Score of" in line]
    assert score == ["[4/8 6.0s] Score of a vs b: 1 - 3 - 0  [0.250] 4",
                     "[8/8 12.0s] Score of a vs b: 3 - 4 - 1  [0.438] 8"]
    elo = [line for line in lines if "Elo:" in line]
    assert len(elo) == 1 and elo[0].startswith("[8/8 12.0s] Elo: b ")
    b_elo = int(elo[0].split("Elo: b ")[1].split()[0])
    assert b_elo > 1500  # b scored 4.5 of 8


def test_a_line_after_every_s_seconds_even_between_counts() -> None:
    lines: list[str] = []
    now = [0.0]
    p = PlainProgress(every=100, every_s=30, elo_every=1000, out=lines.append, clock=lambda: now[0])
    p.start(0)
    p.result("x", "y", 0)
    assert lines == []
    now[0] = 31
    p.result("x", "y", 1)
    assert lines == ["[2 31.0s] Score of x vs y: 1 - 1 - 0  [0.500] 2"]


def test_a_piped_tournament_prints_plain_lines(tmp_path: Path) -> None:
    """Through the real command with stdout a pipe: score lines and an Elo line, no bar."""
    bots = ROOT / "sample_bots"
    out = subprocess.run(
        [sys.executable, "-m", "arena.cli", "tournament", "--bots", str(bots / "random.toml"),
         str(bots / "greedy.toml"), "--games", "4", "--progress-every", "2", "--elo-every", "4", "--db", "p.db",
         "--move-ms", "1000"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert "tournament t1: 4 matches to play" in lines
    assert sum("Score of greedy vs random:" in line for line in lines) == 2
    assert any(line.startswith("[4/4 ") and "Elo: " in line for line in lines)
    assert not any(line.startswith("t1 round-robin") for line in lines)  # no progress bar in the log


def test_the_running_elo_keeps_counts_not_matches_and_equals_the_fit_over_every_match() -> None:
    """The running Elo is fitted from counts of distinct results (at most three per pair of seats),
    so its input does not grow with the matches; the ratings are those of a fit over every match."""
    from arena.stats.rating import fit

    lines: list[str] = []
    p = PlainProgress(every=10**6, every_s=1e9, elo_every=300, out=lines.append, clock=lambda: 0.0)
    winners = [0, 1, None, 0, 0, 1]
    games = []
    for i in range(300):
        bot0, bot1 = ("a", "b") if i % 3 else ("b", "c")
        w = winners[i % len(winners)]
        p.result(bot0, bot1, w)
        games.append((bot0, bot1, 0.5 if w is None else 1.0 - w))
    assert len(p.units) <= 6
    want = ", ".join(f"{r.name} {r.elo:.0f} ±{r.ci95:.0f}" for r in fit(games).ratings)
    elo = [line for line in lines if "Elo:" in line]
    assert len(elo) == 1 and want in elo[0]
