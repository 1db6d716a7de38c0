"""A duplicate twin gives a memorising bot nothing (issue 9, item 2).

tests/bots/memoriser.py stores every hand it is dealt, in memory and in every file it can
write, and when it recognises a pack in a second half it plays knowing the opponent's hand;
every guess it makes is checked here against the match logs. With the arena's defaults (each
bot sandboxed, as two copies: copy 0 plays first halves, copy 1 second halves,
:mod:`arena.schedule.copies`) no guess is ever right, and its second-half score equals its first-half
score within noise. As one process (``copies=1``) its guesses are right and it wins far more
second halves: the test can fail. The study is seeded, so its numbers are the same on every
run; ``python tests/test_twins.py PAIRS`` (``make twins``) runs a larger one, adding the
``--trust-bots`` case."""

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

import arena.schedule.contest  # noqa: E402
import arena.schedule.fleet  # noqa: E402
from arena.match.log import read_log  # noqa: E402
from arena.match.referee import MatchConfig  # noqa: E402
from arena.net.server import ServerConfig  # noqa: E402
from arena.schedule.contest import Contest, ContestConfig  # noqa: E402
from arena.schedule.launcher import load_manifest, sandbox_available  # noqa: E402
from arena.schedule.tournament import TournamentConfig, run_tournament  # noqa: E402
from arena.store.sqlite import Store  # noqa: E402
from protocol.messages import Rules  # noqa: E402
from tests.conftest import TRUST_BOTS, needs_bwrap, remote_random_bot  # noqa: E402

MEMORISER = ROOT / "tests" / "bots" / "memoriser.py"


class Study(msgspec.Struct):
    """The memoriser's results against greedy over ``pairs`` duplicate pairs: matches won in
    first halves and in second halves, its mean point margin per match in each, how many hands
    it guessed for its opponent and how many of those were the opponent's real hand (checked
    against the match logs), and per pair the difference (second half won) - (first half won)."""

    pairs: int
    first_wins: int
    second_wins: int
    first_margin: float
    second_margin: float
    guesses: int
    correct: int
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
                f"{self.correct} deals played knowing the opponent's hand ({self.guesses} guesses)")


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
    guesses = [line.split()[1:] for p in logs.glob("*.log") for line in p.read_text().splitlines()
               if line.startswith("GUESS ")]
    seat = {r["match_key"]: (r["bot0"], r["bot1"]).index("memoriser") for r in rows}
    correct = sum(sorted(cards.split(",")) == opponent_hand(tmp / "logs" / f"t{report.tournament_id}",
                                                             match_id, int(deal), 1 - seat[match_id])
                  for match_id, deal, cards in guesses)
    return Study(pairs, wins[0], wins[1], margins[0] / pairs, margins[1] / pairs, len(guesses), correct, diffs)


def opponent_hand(logs: Path, match_id: str, deal: int, seat: int) -> list[str]:
    """The hand dealt to ``seat`` at deal ``deal`` of ``match_id``, from its match log."""
    current = 0
    for line in read_log(logs / f"{match_id}.jsonl.gz"):
        event = line.get("event") or {}
        if event.get("kind") == "deal_start":
            current = event["deal"]
        elif event.get("kind") == "hand" and current == deal and event["seat"] == seat:
            return sorted(event["cards"])
    raise AssertionError(f"no hand of seat {seat} at deal {deal} in {match_id}")


PAIRS = 30
QUICK_PAIRS = 12
"""make test plays 12 pairs: enough for the memoriser to meet every pack twice and be caught if
it ever guessed right; the 30-pair study and its control run in make test-slow."""


@needs_bwrap
@pytest.mark.parametrize("pairs", [pytest.param(QUICK_PAIRS, id="quick"),
                                   pytest.param(PAIRS, id="full", marks=pytest.mark.slow)])
async def test_a_memorising_bot_gains_nothing_from_duplicate_twins(tmp_path, pairs):
    """Sandboxed as two copies (the default) no guess of the bot is ever its opponent's hand
    (checked against the logs), and its second-half score equals its first-half score within
    noise (three standard errors of the paired difference: a false alarm once in 370)."""
    s = await study(tmp_path, pairs)
    print(s.summary())
    assert s.correct == 0
    assert abs(s.gain) <= 1.5 * s.noise, s.summary()


@pytest.mark.slow
@needs_bwrap
async def test_as_one_process_the_same_bot_wins_its_twins(tmp_path):
    """The control (the arena before the fix): one process plays both halves of every pair,
    recognises the packs and wins more second halves (by more than two standard errors)."""
    s = await study(tmp_path, PAIRS, copies=1)
    print(s.summary())
    assert s.correct > PAIRS
    assert s.gain > s.noise and s.second_margin > s.first_margin + 1, s.summary()


async def contest_units(tmp_path: Path, monkeypatch, duplicate_remote: bool) -> list[tuple]:
    """Run a contest of two submitted bots and one remote bot for 12 matches; return each
    match as (bot0, bot1, seed, pair key, copies) in order."""
    played: list[tuple] = []
    real = arena.schedule.fleet.Fleet.play

    async def spy(fleet, row, *args, copies=(0, 0), **kw):
        played.append((row.bot0, row.bot1, row.seed, kw.get("pair"), copies))
        return await real(fleet, row, *args, copies=copies, **kw)

    monkeypatch.setattr(arena.schedule.fleet.Fleet, "play", spy)
    store = Store(tmp_path / "arena.db")
    store.submit_bot("greedy", str(ROOT / "sample_bots" / "greedy.toml"))
    store.submit_bot("random", str(ROOT / "sample_bots" / "random.toml"))
    token = store.add_bot("remote")
    cfg = ContestConfig(db=str(tmp_path / "arena.db"), logs=str(tmp_path / "logs"), http_port=0, seed=3,
                        server=ServerConfig(port=0), max_matches=12, trust_bots=TRUST_BOTS,
                        duplicate_remote=duplicate_remote)
    contest = Contest(cfg, store)
    async with trio.open_nursery() as nursery:
        port, _ = await nursery.start(contest.run)
        remote = remote_random_bot(port, "remote", token)
        try:
            with trio.fail_after(60):
                while store.db.execute("SELECT COUNT(*) FROM matches WHERE status='done'").fetchone()[0] < 12:
                    await trio.sleep(0.1)
        finally:
            remote.terminate()
            contest.stop()
    return played


async def test_contest_plays_launched_twins_by_two_copies_and_remote_bots_unpaired(tmp_path, monkeypatch):
    played = await contest_units(tmp_path, monkeypatch, duplicate_remote=False)
    local = [m for m in played if "remote" not in m[:2]]
    remote = [m for m in played if "remote" in m[:2]]
    assert local and remote
    for m in local:  # launched bots: duplicate pairs, first half by copies 0, second by copies 1
        twins = [o for o in local if o[3] == m[3]]
        assert m[3] is not None and len(twins) <= 2
        if len(twins) == 2:
            assert twins[0][2] == twins[1][2] and twins[0][:2] == twins[1][1::-1]
            assert (twins[0][4], twins[1][4]) == ((0, 0), (1, 1))
    for m in remote:  # a remote bot: no pair, independent seeds, copy 0 of the launched bot
        assert m[3] is None and m[4] == (0, 0)
    seeds = [m[2] for m in remote]
    assert len(set(seeds)) == len(seeds)


async def test_contest_pairs_remote_bots_when_the_organiser_trusts_them(tmp_path, monkeypatch):
    played = await contest_units(tmp_path, monkeypatch, duplicate_remote=True)
    remote = [m for m in played if "remote" in m[:2]]
    assert remote and all(m[3] is not None for m in remote)
    first = {}
    for m in remote:
        if m[3] in first:
            other = first[m[3]]
            assert other[2] == m[2]
            launched = 0 if m[0] != "remote" else 1
            assert m[4][launched] == 1 and m[4][1 - launched] == 0  # the remote bot has one copy
        else:
            first[m[3]] = m


if __name__ == "__main__":  # the heavier study: python tests/test_twins.py [PAIRS]
    import tempfile

    n = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    for label, kw in (("sandboxed, two copies (default)", {}), ("one process (before the fix)", {"copies": 1}),
                      ("--trust-bots, two copies sharing a directory", {"trust": True})):
        if "trust" not in kw and not sandbox_available():
            continue
        with tempfile.TemporaryDirectory() as d:
            print(f"{label}: {trio.run(lambda: study(Path(d), n, **kw)).summary()}")  # noqa: B023
