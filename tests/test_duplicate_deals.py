"""The duplicate-deals format: matches of a fixed number of deals (Rules.deals) in both engines,
twin deals that are the same cards deal by deal whatever the players do, the twin-deal score
(luck cancels, faults count), and ``arena tournament --format duplicate-deals`` over TCP."""

from __future__ import annotations

import gzip
import random
import subprocess
import sys
from pathlib import Path

import pytest

from arena.games import GAMES, validate_rules
from arena.match.log import ChainError, read_bytes
from arena.schedule.formats import make_format
from arena.stats.deal_pairs import deal_points, fit_twin_deals, twin_score
from arena.store.sqlite import Store
from protocol.messages import DealStart, DeckOrder, Rules

ROOT = Path(__file__).resolve().parent.parent


def _self_play(game: str, rules: Rules, seed: int, actions_seed: int):
    engine = GAMES[game](rules, random.Random(seed))
    events = [e for e, _ in engine.start()]
    rng = random.Random(actions_seed)
    while not engine.over:
        events += [e for e, _ in engine.apply(rng.choice(engine.legal_actions()))]
    return engine, events


@pytest.mark.parametrize("game", sorted(GAMES))
def test_a_match_of_fixed_deals_plays_exactly_that_many_and_the_higher_total_wins(game):
    for seed in range(6):
        engine, events = _self_play(game, Rules(deals=3), seed, seed + 100)
        assert engine.deal_no == 3 and engine.end_reason == "deals"
        a, b = engine.scores
        assert engine.winner == (None if a == b else 0 if a > b else 1)
        ends = [e for e in events if type(e).__name__ == "DealEnd"]
        assert [sum(e.points[s] for e in ends) for s in (0, 1)] == engine.scores  # nothing scored outside deals
    plain, _ = _self_play(game, Rules(), 1, 2)
    assert plain.end_reason != "deals"  # the default match is unchanged


@pytest.mark.parametrize("game", sorted(GAMES))
def test_twin_deals_are_the_same_cards_and_dealer_whatever_the_players_do(game):
    packs = []
    for actions_seed in (1, 2):
        _, events = _self_play(game, Rules(deals=6), 42, actions_seed)
        packs.append([(e.cards, d.dealer) for e, d in zip(
            [e for e in events if isinstance(e, DeckOrder)], [e for e in events if isinstance(e, DealStart)])])
    assert len(packs[0]) == 6 and packs[0] == packs[1]


def test_fixed_deals_rules_are_checked():
    with pytest.raises(ValueError, match="fixed number of deals"):
        validate_rules("ecarte", Rules(deals=4, manches=3))
    with pytest.raises(ValueError, match="deals must be"):
        validate_rules("piquet", Rules(deals=-1))
    with pytest.raises(ValueError, match="must be even"):
        make_format("duplicate-deals", ["a", "b"], 3, 1)


def test_twin_score_cancels_the_luck_of_the_cards():
    # deal 1: seat 0 holds the better cards in both halves; a and b each make 2 with them: a draw.
    # deal 2: a makes 2 points with the hand that b only made 1 with: a wins that twin pair.
    # deal 3: b makes the vole (2) where a made 1: b wins it.
    first = ("a", "b", [[2, 0], [2, 0], [1, 0]], "a", True)   # a in seat 0
    second = ("b", "a", [[2, 0], [1, 0], [2, 0]], "b", True)  # b in seat 0, the same deals
    assert twin_score("a", "b", first, second, 3) == (1.5, 1, 1, 1)
    assert twin_score("b", "a", first, second, 3) == (1.5, 1, 1, 1)
    # the same play with the seats swapped: every twin pair drawn, whatever the cards
    mirror = ("b", "a", [[2, 0], [2, 0], [1, 0]], "b", True)
    assert twin_score("a", "b", first, mirror, 3) == (1.5, 0, 0, 3)


def test_twin_pairs_missing_from_a_forfeited_half_go_to_its_winner():
    first = ("a", "b", [[1, 0], [0, 1], [1, 0]], "a", True)
    forfeited = ("b", "a", [[1, 0]], "a", False)  # b forfeits after one deal
    score, w, lo, d = twin_score("a", "b", first, forfeited, 3)
    assert (w, lo, d) == (2, 0, 1) and score == 2.5
    with pytest.raises(ValueError):
        twin_score("a", "c", first, forfeited, 3)


def test_cli_duplicate_deals_runs_over_tcp_to_a_table(tmp_path):
    bots = [str(ROOT / "sample_bots" / f) for f in ("random.toml", "greedy.toml")]
    out = subprocess.run(
        [sys.executable, "-m", "arena.cli", "tournament", "--format", "duplicate-deals", "--deals", "4",
         "--bots", *bots, "--games", "4", "--seed", "9", "--db", str(tmp_path / "a.db"),
         "--logs", str(tmp_path / "logs"), "--quiet"],
        capture_output=True, text=True, timeout=120, cwd=ROOT,
    )
    assert out.returncode == 0, out.stderr
    assert "duplicate deals" in out.stdout and "greedy" in out.stdout and "random" in out.stdout
    store = Store(tmp_path / "a.db")
    rows = store.matches(1)
    assert len(rows) == 4 and all(r["reason"] == "deals" and r["deals"] == 4 for r in rows)
    assert {r["pair_key"] for r in rows} == {"random|greedy|0", "random|greedy|1"}
    # each pair: one seed, the seats swapped; the deal-by-deal points are in the logs
    for key in ("random|greedy|0", "random|greedy|1"):
        a, b = [r for r in rows if r["pair_key"] == key]
        assert a["seed"] == b["seed"] and (a["bot0"], a["bot1"]) == (b["bot1"], b["bot0"])
        assert len(deal_points(a["log_path"], a["log_hash"])) == 4
    fitted = fit_twin_deals(rows, 4)
    assert sum(r.games for r in fitted.ratings) == 2 * 2 * 4  # two pairs of four twin deals, two bots
    # the workers committed each log with its result, and the front, which had the files, deleted those
    # copies; a front without the files (the workers on other hosts, their copies not taken yet) fits the
    # same ratings from the database, and a log found nowhere is an error
    assert store.db.execute("SELECT COUNT(*) FROM match_logs").fetchone()[0] == 0
    files = {r["log_path"]: Path(r["log_path"]).read_bytes() for r in rows}
    for r in rows:
        store.put_match_log(r["match_key"], files[r["log_path"]])
        Path(r["log_path"]).unlink()
    from_db = fit_twin_deals(rows, 4, read=lambda m: store.match_log_bytes(m["match_key"], m["log_path"]))
    assert [(r.name, r.elo, r.games, r.wins) for r in from_db.ratings] == \
        [(r.name, r.elo, r.games, r.wins) for r in fitted.ratings]
    with pytest.raises(FileNotFoundError, match="neither at"):
        fit_twin_deals(rows, 4, read=lambda m: None)
    for path, data in files.items():
        Path(path).write_bytes(data)
    # a log changed after the fact is refused, not scored
    tampered = read_bytes(rows[0]["log_path"]).replace(b'"points":[', b'"points": [')
    assert tampered != read_bytes(rows[0]["log_path"])
    Path(rows[0]["log_path"]).write_bytes(gzip.compress(tampered))
    with pytest.raises(ChainError):
        fit_twin_deals(rows, 4)


def test_cli_odd_games_is_one_clear_line(tmp_path):
    bots = [str(ROOT / "sample_bots" / f) for f in ("random.toml", "greedy.toml")]
    out = subprocess.run(
        [sys.executable, "-m", "arena.cli", "tournament", "--format", "duplicate-deals", "--bots", *bots,
         "--games", "3", "--db", str(tmp_path / "a.db"), "--quiet"],
        capture_output=True, text=True, timeout=60, cwd=ROOT,
    )
    assert out.returncode == 2 and "must be even" in out.stderr and "Traceback" not in out.stdout + out.stderr
