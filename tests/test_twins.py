"""A duplicate twin gives a memorising bot nothing (issue 9, item 2).

tests/bots/memoriser.py stores every hand it is dealt, in memory and in every file it can
write, and when it recognises a pack in a second half it plays knowing the opponent's hand. With
the arena's defaults (each bot sandboxed, as two copies: copy 0 plays first halves, copy 1
second halves, :mod:`arena.copies`) it never recognises a pack, and its second-half score
equals its first-half score within noise. As one process (``copies=1``) it recognises every
pack and wins far more second halves: the test can fail. The study is seeded, so its numbers
are the same on every run; ``python tests/test_twins.py PAIRS`` runs a larger one.
"""

from __future__ import annotations

import math
import shutil
import sys
from pathlib import Path

import msgspec
import pytest
import trio

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from arena.launcher import load_manifest, sandbox_available  # noqa: E402
from arena.referee import MatchConfig  # noqa: E402
from arena.store import Store  # noqa: E402
from arena.tournament import TournamentConfig, run_tournament  # noqa: E402
from protocol.messages import Rules  # noqa: E402

MEMORISER = ROOT / "tests" / "bots" / "memoriser.py"
needs_bwrap = pytest.mark.skipif(not sandbox_available(), reason="bwrap (Debian bubblewrap) is not installed")


class Study(msgspec.Struct):
    """The memoriser's results against greedy over ``pairs`` duplicate pairs: matches won in
    first halves and in second halves, its mean point margin per match in each, how many deals
    it recognised (played knowing the opponent's hand), and per pair the difference (second
    half won) - (first half won)."""

    pairs: int
    first_wins: int
    second_wins: int
    first_margin: float
    second_margin: float
    recognised: int
    diffs: list[int]

    @property
    def gain(self) -> float:
        """Second-half minus first-half win rate."""
        return (self.second_wins - self.first_wins) / self.pairs

    @property
    def noise(self) -> float:
        """Two standard errors of ``gain``, from the spread of the per-pair differences (the two
        halves share their packs, so they are not independent)."""
        mean = sum(self.diffs) / self.pairs
        var = sum((d - mean) ** 2 for d in self.diffs) / (self.pairs - 1)
        return 2 * math.sqrt(var / self.pairs)

    def summary(self) -> str:
        return (f"{self.pairs} pairs: first halves won {self.first_wins} ({100 * self.first_wins / self.pairs:.0f}%), "
                f"second halves won {self.second_wins} ({100 * self.second_wins / self.pairs:.0f}%), "
                f"gain {100 * self.gain:+.0f} points of % (noise, 2 s.e.: {100 * self.noise:.0f}), "
                f"mean margin {self.first_margin:+.2f} / {self.second_margin:+.2f} points, "
                f"{self.recognised} deals recognised")


async def study(tmp: Path, pairs: int, copies: int = 0, trust: bool = False, seed: int = 9) -> Study:
    """Play ``pairs`` duplicate pairs memoriser v greedy (gauntlet, target 5) and measure."""
    bot_dir = tmp / "memoriser"
    bot_dir.mkdir(parents=True)
    shutil.copy(MEMORISER, bot_dir / "memoriser.py")
    (bot_dir / "memoriser.toml").write_text('name = "memoriser"\ncommand = ["{python}", "memoriser.py"]\n')
    manifests = [load_manifest(bot_dir / "memoriser.toml"), load_manifest(ROOT / "sample_bots" / "greedy.toml")]
    store = Store(tmp / "arena.db")
    cfg = TournamentConfig(format="gauntlet", hero="memoriser", games=2 * pairs, seed=seed, concurrency=1,
                           logs_dir=str(tmp / "logs"), trust_bots=trust, copies=copies,
                           match=MatchConfig(rules=Rules(target=5)))
    report = await run_tournament(store, manifests, cfg)
    rows = store.matches(report.tournament_id)
    first: dict[str, int] = {}
    wins, margins, diffs = [0, 0], [0, 0], []
    for r in rows:
        assert r["status"] == "done" and r["pair_key"], r
        half = 1 if r["pair_key"] in first else 0
        me = (r["bot0"], r["bot1"]).index("memoriser")
        won = int(r["winner"] == "memoriser")
        wins[half] += won
        margins[half] += (r["score0"] - r["score1"]) * (1 if me == 0 else -1)
        if half == 0:
            first[r["pair_key"]] = won
        else:
            diffs.append(won - first[r["pair_key"]])
    logs = tmp / "logs" / f"t{report.tournament_id}" / "bots"
    recognised = sum(p.read_text().count("KNEW ") for p in logs.glob("*.log"))
    return Study(pairs, wins[0], wins[1], margins[0] / pairs, margins[1] / pairs, recognised, diffs)


PAIRS = 40


@needs_bwrap
async def test_a_memorising_bot_gains_nothing_from_duplicate_twins(tmp_path):
    s = await study(tmp_path, PAIRS)
    print(s.summary())
    assert s.recognised == 0  # it never met a pack twice in one process
    assert abs(s.gain) <= s.noise, s.summary()


@needs_bwrap
async def test_as_one_process_the_same_bot_wins_its_twins(tmp_path):
    """The control (the arena before the fix): one process plays both halves of every pair."""
    s = await study(tmp_path, PAIRS, copies=1)
    print(s.summary())
    assert s.recognised > 0
    assert s.gain > s.noise, s.summary()


async def test_unsandboxed_copies_share_a_file_and_the_bot_wins_its_twins(tmp_path):
    """What ``--trust-bots`` gives up: two copies, but one writable directory between them."""
    s = await study(tmp_path, PAIRS, trust=True)
    print(s.summary())
    assert s.recognised > 0 and s.gain > s.noise, s.summary()


if __name__ == "__main__":  # the heavier study: python tests/test_twins.py [PAIRS]
    import tempfile

    n = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    for label, kw in (("sandboxed, two copies (default)", {}), ("one process (before the fix)", {"copies": 1}),
                      ("--trust-bots, two copies sharing a directory", {"trust": True})):
        if "trust" not in kw and not sandbox_available():
            continue
        with tempfile.TemporaryDirectory() as d:
            print(f"{label}: {trio.run(lambda: study(Path(d), n, **kw)).summary()}")  # noqa: B023
