"""Each bot's games, wins, losses and draws kept on its ladder row by each result (issue 21): the
leaderboard reads its page's rows only, and shows what the sums over ``ladder_units`` showed
before, on SQLite and PostgreSQL; revision 0003 fills the counters of an existing history."""

from __future__ import annotations

import random
from types import SimpleNamespace
from typing import Any

import sqlalchemy as sa

from arena.store import pages
from arena.store.engine import connect
from arena.store.sqlite import Store
from arena.store.upgrade import upgrade

GAME = "ecarte"
BOTS = ["ann", "bob", "cat", "dan"]

# the page's statements before revision 0003: games and points summed over each bot's units
AS_A = sa.text("SELECT a, SUM(games*n), SUM(points*n) FROM ladder_units WHERE game=:game GROUP BY a")
AS_B = sa.text("SELECT b, SUM(games*n), SUM((games-points)*n) FROM ladder_units WHERE game=:game GROUP BY b")
ROWS = sa.text("SELECT bot, games, wins, losses, draws FROM ladder WHERE game=:game")


def _result(winner: int | None, aborted: bool = False) -> Any:
    return SimpleNamespace(winner=None if aborted else winner, reason="aborted" if aborted else "target",
                           scores=(5, 3), manches=(0, 0), detail="", faulty=None, decisions=10, deals=3,
                           duration_ms=5, margin=2)


def _play(store: Store, rng: random.Random, n_pairs: int) -> None:
    """A tournament of ``n_pairs`` duplicate pairs (seats swapped) and as many lone matches, a bot
    against itself among them, recorded in a shuffled order: wins, draws and aborts."""
    pairings, i = [], 0
    for k in range(n_pairs):
        a, b = rng.sample(BOTS, 2)
        for b0, b1 in ((a, b), (b, a)):
            pairings.append(SimpleNamespace(index=i, bot0=b0, bot1=b1, seed=i, pair=f"p{k}"))
            i += 1
        b0, b1 = rng.choice(BOTS), rng.choice(BOTS)  # may be the same bot
        pairings.append(SimpleNamespace(index=i, bot0=b0, bot1=b1, seed=i, pair=None))
        i += 1
    tid = store.create_tournament(GAME, "ladder", 1, {}, BOTS, pairings)
    keys = [m.match_key for m in store.pending_matches(tid)]
    rng.shuffle(keys)
    for key in keys:
        roll = rng.random()
        store.record_result(key, _result(None if roll < 0.2 else int(roll < 0.6), aborted=roll > 0.9), None)


def _truth(store: Store) -> dict[str, tuple[int, float]]:
    """``{bot: (games, points)}`` as the page summed them before, over ``ladder_units``."""
    out: dict[str, tuple[int, float]] = {}
    for statement in (AS_A, AS_B):
        for bot, games, points in store.run(statement, {"game": GAME}):
            had = out.get(bot, (0, 0.0))
            out[bot] = (had[0] + int(games), had[1] + float(points))
    return out


def _outcomes(store: Store) -> dict[str, tuple[int, int, int]]:
    """``{bot: (wins, losses, draws)}`` by brute force over the finished matches."""
    out: dict[str, list[int]] = {}
    for b0, b1, w in store.run(sa.text("SELECT bot0, bot1, winner_seat FROM matches WHERE status='done'")):
        for seat, bot in ((0, b0), (1, b1)):
            c = out.setdefault(bot, [0, 0, 0])
            c[0 if w == seat else 2 if w is None else 1] += 1
    return {bot: tuple(c) for bot, c in out.items()}


def _ladder(store: Store) -> dict[str, tuple[int, int, int, int]]:
    return {r[0]: tuple(r[1:]) for r in store.run(ROWS, {"game": GAME})}


def test_each_result_keeps_the_points_the_units_sum_to(db_target: str) -> None:
    store = Store(db_target)
    try:
        for seed in range(3):
            _play(store, random.Random(seed), 12)
            truth, outcomes, ladder = _truth(store), _outcomes(store), _ladder(store)
            assert any(c[2] for c in outcomes.values()) and any(c[0] for c in outcomes.values())
            assert store.run(sa.text("SELECT COUNT(*) FROM matches WHERE status='aborted'")).scalar_one() > 0
            assert set(ladder) == set(truth) == set(outcomes)
            for bot, (games, wins, losses, draws) in ladder.items():
                assert (wins, losses, draws) == outcomes[bot]
                assert (games, wins + draws / 2) == truth[bot] and games == wins + losses + draws
            page = pages.leaderboard_page(store, GAME)
            assert {r["bot"]: (r["games"], r["points"]) for r in page["rows"]} == truth
            assert {r["bot"]: (r["wins"], r["losses"], r["draws"]) for r in page["rows"]} == outcomes
            found = pages.leaderboard_page(store, GAME, q="A")["rows"]  # a search reads the same rows
            assert [(r["bot"], r["games"], r["points"]) for r in found] == [("ann", *truth["ann"])]
    finally:
        store.close()


def test_revision_0003_fills_the_counters_of_an_existing_history(db_target: str) -> None:
    store = Store(db_target)
    try:
        _play(store, random.Random(7), 15)
        before = _ladder(store)
    finally:
        store.close()
    assert any(wins for _, wins, _, _ in before.values())
    conn = connect(db_target)  # the database as revision 0002 left it: no counters
    try:
        with conn.transaction():
            for column in ("wins", "losses", "draws"):
                conn.run(sa.text(f"ALTER TABLE ladder DROP COLUMN {column}"))
            conn.run(sa.text("UPDATE alembic_version SET version_num='0002'"))
    finally:
        conn.close()
    assert "schema revision 0002 upgraded to revision" in upgrade(db_target)  # 0003 and after
    store = Store(db_target)
    try:
        assert _ladder(store) == before
    finally:
        store.close()
