"""A real tournament: the sample bots (Python and JavaScript) as separate processes over TCP,
every match in SQLite, every match log on disk, and the same seed reproducing every log
byte for byte."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import trio

from arena.errors import Unavailable, find_user_error
from arena.schedule.launcher import load_manifest
from arena.schedule.tournament import TournamentConfig, run_tournament
from arena.store.sqlite import Store
from tests.conftest import TRUST_ARGS, TRUST_BOTS

ROOT = Path(__file__).resolve().parent.parent
try:
    from c_bot import ensure_c_bot
except ImportError:  # tests/ imported as a package
    from tests.c_bot import ensure_c_bot
HAVE_C_BOT = ensure_c_bot() is not None
# search: own tests; the C bot (built by make, or here) when gcc is there
BOTS = sorted(p for p in (ROOT / "sample_bots").glob("*.toml")
              if p.stem != "search" and (HAVE_C_BOT or p.stem != "c_bot"))
HAVE_NODE = shutil.which("node") is not None


def _manifests():
    ms = [load_manifest(p) for p in BOTS]
    return [m for m in ms if HAVE_NODE or m.language != "javascript"]


async def _tournament(tmp: Path, games: int = 2, seed: int = 11):
    store = Store(tmp / "arena.db")
    cfg = TournamentConfig(games=games, seed=seed, logs_dir=str(tmp / "logs"), trust_bots=TRUST_BOTS)
    report = await run_tournament(store, _manifests(), cfg)
    return store, report


async def test_tournament_of_sample_bots_records_every_match(tmp_path):
    from tests.test_resume import bot_processes

    shutil.copytree(ROOT / "sample_bots", tmp_path / "bots")
    manifests = [load_manifest(tmp_path / "bots" / p.name) for p in BOTS]
    manifests = [m for m in manifests if HAVE_NODE or m.language != "javascript"]
    store = Store(tmp_path / "arena.db")
    report = await run_tournament(store, manifests, TournamentConfig(games=2, seed=11, logs_dir=str(tmp_path / "logs"),
                                                                       trust_bots=TRUST_BOTS))
    n = len(_manifests())
    assert report.matches == n * (n - 1) // 2 * 2
    rows = store.matches(report.tournament_id)
    assert len(rows) == report.matches
    assert all(r["status"] == "done" and r["reason"] == "target" for r in rows), [r["detail"] for r in rows]
    assert all(Path(r["log_path"]).is_file() for r in rows)
    assert all(r["duration_ms"] >= 0 and r["decisions"] > 0 for r in rows)
    assert sum(r.games for r in report.ratings) == 2 * report.matches
    assert abs(sum(r.elo for r in report.ratings) / len(report.ratings) - 1500) < 1e-6
    bot_logs = list((tmp_path / "logs" / f"t{report.tournament_id}" / "bots").glob("*.log"))
    assert len(bot_logs) == 2 * n  # two copies of each bot (duplicate pairs), named by ids
    expected = [f"b{store.bot_id(m.name)}-c{c}.log" for m in manifests for c in (0, 1)]
    assert sorted(p.name for p in bot_logs) == sorted(expected)
    # no bot process outlives the tournament
    assert bot_processes(str(tmp_path / "bots")) == []


async def test_same_seed_reproduces_every_log_byte_for_byte(tmp_path):
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    s1, r1 = await _tournament(tmp_path / "one", games=1, seed=99)
    s2, r2 = await _tournament(tmp_path / "two", games=1, seed=99)
    logs1 = sorted((tmp_path / "one" / "logs").rglob("*.jsonl*"))
    logs2 = sorted((tmp_path / "two" / "logs").rglob("*.jsonl*"))
    assert len(logs1) == len(logs2) == r1.matches
    for a, b in zip(logs1, logs2):
        assert a.read_bytes() == b.read_bytes(), a.name
    s3, r3 = await _tournament(tmp_path / "three", games=1, seed=100)
    logs3 = sorted((tmp_path / "three" / "logs").rglob("*.jsonl*"))
    assert any(a.read_bytes() != c.read_bytes() for a, c in zip(logs1, logs3))


async def test_a_bot_that_cannot_start_stops_the_tournament_before_any_match_is_scored(tmp_path):
    broken = tmp_path / "broken.toml"
    (tmp_path / "broken.py").write_text("import sys\nprint('no luck', file=sys.stderr)\nsys.exit(3)\n")
    broken.write_text('name = "broken"\ncommand = ["{python}", "broken.py"]\n')
    ms = [load_manifest(BOTS[0]), load_manifest(broken), *[load_manifest(p) for p in BOTS[1:2]]]
    ms = [m for m in ms if HAVE_NODE or m.language != "javascript"]
    store = Store(tmp_path / "arena.db")
    cfg = TournamentConfig(games=2, seed=3, logs_dir=str(tmp_path / "logs"), connect_timeout_s=20,
                           trust_bots=TRUST_BOTS, manifests=[str(BOTS[0]), str(broken), str(BOTS[1])])
    with pytest.raises(BaseException) as caught, trio.fail_after(60):
        await run_tournament(store, ms, cfg)
    error = find_user_error(caught.value)
    assert isinstance(error, Unavailable) and error.status == 3
    said = str(error)
    assert f"bot broken ({broken}) did not start" in said and "exited with status 3" in said and "no luck" in said
    assert store.db.execute("SELECT COUNT(*) FROM matches WHERE status<>'pending'").fetchone()[0] == 0


def test_cli_tournament_prints_the_elo_table(tmp_path):
    bots = [str(p) for p in BOTS if HAVE_NODE or not p.name.endswith(("highcard.toml", "cautious.toml"))]
    out = subprocess.run(
        [sys.executable, "-m", "arena.cli", "tournament", *TRUST_ARGS, "--bots", *bots, "--games", "2", "--seed", "5",
         "--db", str(tmp_path / "a.db"), "--logs", str(tmp_path / "logs"), "--quiet"],
        capture_output=True, text=True, timeout=120, cwd=ROOT,
    )
    assert out.returncode == 0, out.stderr
    for word in ("rank", "bot", "Elo", "games", "wins", "losses", "score %", "greedy", "random"):
        assert word in out.stdout
    store = Store(tmp_path / "a.db")
    assert len(store.matches(1)) == len(bots) * (len(bots) - 1)
